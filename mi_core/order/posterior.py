"""The order posterior Q_phi(r_t | x_t, x_0): independent Bernoullis over the still-masked positions.

Scores ``alpha`` (from a small network that sees the clean sequence, :mod:`mi_core.decoding.selector`) are
renormalised at every step so the best still-masked position is certain and higher scores come first:

    q_i = exp((alpha_i - max_{j masked} alpha_j) / tau)        for masked i           (Eq. Q)

so ``log q_i = s_i = (alpha_i - max) / tau <= 0`` exactly (no exp/log round trip), at least one position
is unmasked per step, and at the last step (``last``) every masked position has q = 1. Everything here
works on log-probabilities ``s`` so q -> 1 never produces log(0) or an infinite gradient.
"""

from __future__ import annotations

import torch

SURE = -1e-6  # log q above this counts as q = 1 (the best position, and ties with it)


def posterior_logq(alpha: torch.Tensor, masked: torch.Tensor, tau: float) -> torch.Tensor:
    """``log q`` ``(B, N)`` of Eq. Q: ``(alpha - max over masked) / tau`` at masked positions, 0 elsewhere.

    Args:
        alpha: ``(B, N)`` scores; masked: ``(B, N)`` bool; tau > 0 the temperature.
    """
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    top = alpha.masked_fill(~masked, float("-inf")).amax(1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))  # rows with nothing masked
    return torch.where(masked, (alpha - top) / tau, torch.zeros_like(alpha))


def sure_positions(logq: torch.Tensor, masked: torch.Tensor, last: bool) -> torch.Tensor:
    """``(B, N)`` bool: masked positions with q = 1 (the best, ties with it, or all of them at the last step)."""
    return masked if last else masked & (logq > SURE)


def log1mexp(s: torch.Tensor) -> torch.Tensor:
    """``log(1 - exp(s))`` for ``s < 0``, accurate near 0 and near -inf."""
    return torch.where(s > -0.6931, torch.log(-torch.expm1(s)), torch.log1p(-torch.exp(s)))


def split_logq(logq: torch.Tensor, masked: torch.Tensor, last: bool):
    """``(sure, free, log q, log(1 - q))``: the certain positions, the uncertain masked ones, and the two
    log-probabilities with the certain and unmasked entries replaced by a harmless -1 (so gradients stay
    finite there; callers mask those entries out)."""
    sure = sure_positions(logq, masked, last)
    free = masked & ~sure
    s = torch.where(free, logq, torch.full_like(logq, -1.0))
    return sure, free, s, log1mexp(s)


def sample_posterior(logq: torch.Tensor, masked: torch.Tensor, last: bool,
                     generator: torch.Generator) -> torch.Tensor:
    """``r_t`` ``(B, N)`` bool: each masked position independently with probability q (certain ones always)."""
    sure, free, s, _ = split_logq(logq, masked, last)
    u = torch.rand(logq.shape, generator=generator, device=logq.device)
    return sure | (free & (u < s.detach().exp()))


def posterior_log_prob(r: torch.Tensor, logq: torch.Tensor, masked: torch.Tensor, last: bool) -> torch.Tensor:
    """``log Q(r_t)`` ``(B,)``: sum over uncertain masked positions of r log q + (1 - r) log(1 - q).

    Certain positions contribute log 1 = 0 (they are always in ``r``); unmasked ones are not variables.
    """
    _, free, s, s1m = split_logq(logq, masked, last)
    rf = r.to(s.dtype)
    return (free * (rf * s + (1 - rf) * s1m)).sum(1)


def unmask_schedule(alpha: torch.Tensor, masked: torch.Tensor, tau: float, steps: int,
                    generator: torch.Generator) -> torch.Tensor:
    """Sample a whole schedule from fixed scores: ``(B, N)`` long, the step (0..steps-1) at which each
    initially masked position is unmasked, -1 where it was not masked. For tests and figures."""
    when = torch.full(masked.shape, -1, dtype=torch.long, device=masked.device)
    left = masked.clone()
    for t in range(steps):
        logq = posterior_logq(alpha, left, tau)
        r = sample_posterior(logq, left, t == steps - 1, generator)
        when[r] = t
        left &= ~r
    return when
