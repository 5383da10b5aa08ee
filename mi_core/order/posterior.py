"""The order posterior Q_phi(r_t | x_t, x_0): independent Bernoullis over the still-masked positions.

    q_i = exp((alpha_i - max_{j masked} alpha_j) / tau)        for masked i           (Eq. Q)

so the best masked position is certain, at least one position is unmasked per step, and at the last step
every masked position has q = 1. Everything works on ``log q`` so q -> 1 never gives log(0).
"""

from __future__ import annotations

import torch

SURE = -1e-6  # log q above this counts as q = 1 (the best position, and ties with it)


def posterior_logq(alpha: torch.Tensor, masked: torch.Tensor, tau: float) -> torch.Tensor:
    """``log q`` ``(B, N)`` of Eq. Q at masked positions (``alpha``, ``masked``: ``(B, N)``), 0 elsewhere."""
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    top = alpha.masked_fill(~masked, float("-inf")).amax(1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))  # rows with nothing masked
    return torch.where(masked, (alpha - top) / tau, torch.zeros_like(alpha))


def log1mexp(s: torch.Tensor) -> torch.Tensor:
    """``log(1 - exp(s))`` for ``s < 0``, accurate near 0 and near -inf."""
    return torch.where(s > -0.6931, torch.log(-torch.expm1(s)), torch.log1p(-torch.exp(s)))


def split_logq(logq: torch.Tensor, masked: torch.Tensor, last: bool):
    """``(sure, free, log q, log(1 - q))``, with -1 at certain and unmasked entries so gradients stay finite."""
    sure = masked if last else masked & (logq > SURE)  # q = 1: the best, ties with it, or all at the last step
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
    """``log Q(r_t)`` ``(B,)``: sum over uncertain masked positions of r log q + (1 - r) log(1 - q)."""
    _, free, s, s1m = split_logq(logq, masked, last)
    rf = r.to(s.dtype)
    return (free * (rf * s + (1 - rf) * s1m)).sum(1)
