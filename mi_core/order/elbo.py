"""The order ELBO: rollouts of the posterior's schedule, the Bernoulli KL, and the RLOO surrogate loss.

For a start state x_T with clean sequence x_0, a budget of T steps and a schedule r_0..r_{T-1} drawn from
Q_phi (step t = 0 first; ``x_t`` is the state before step t):

    ELBO(x_0) = E_Q [ sum_t ( sum_{i in r_t} log p_theta(x0_i | x_t)  -  KL(Q(.|x_t, x_0) || P_psi(.|x_t)) ) ]

with teacher forcing (x_{t+1} writes x_0's tokens at r_t) and p_theta frozen. psi gets the KL gradient;
phi the KL gradient plus (R - b) grad log Q(r), b the leave-one-out mean of the other K - 1 returns (RLOO).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from mi_core.decoding.base import rank_pick, uniform_count
from mi_core.decoding.selector import pick_positions, posterior_features, select_probabilities, selector_features
from mi_core.device import bf16_autocast
from mi_core.order.posterior import posterior_log_prob, posterior_logq, sample_posterior, split_logq


def bernoulli_kl(logq: torch.Tensor, logit_p: torch.Tensor, masked: torch.Tensor, last: bool) -> torch.Tensor:
    """``KL(Q || P)`` ``(B,)`` between independent Bernoullis over the masked positions, p = sigmoid(logit_p).

    Per position q log(q/p) + (1-q) log((1-q)/(1-p)); certain positions (q = 1) give -log p; the last step
    is forced for both, so its KL is 0.
    """
    if last:
        return logq.new_zeros(logq.shape[0])
    sure, free, s, s1m = split_logq(logq, masked, last)
    logp, log1mp = F.logsigmoid(logit_p), F.logsigmoid(-logit_p)
    q = s.exp()
    kl_free = q * (s - logp) + (1 - q) * (s1m - log1mp)
    return (free * kl_free + sure * -logp).sum(1)


def rloo(returns: torch.Tensor) -> torch.Tensor:
    """Leave-one-out advantages ``(B, K)``: R_k minus the mean of the other K - 1 returns of the row."""
    k = returns.shape[-1]
    if k < 2:
        raise ValueError(f"RLOO needs at least 2 samples per example, got {k}")
    return returns - (returns.sum(-1, keepdim=True) - returns) / (k - 1)


def score_function_surrogate(log_q: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
    """Scalar whose gradient is the RLOO estimate of grad E_Q[R]: mean of rloo(R) * log Q, both ``(B, K)``."""
    return (rloo(returns.detach()) * log_q).mean()


@dataclass
class Rollout:
    """K posterior trajectories per example, flattened example-major; every field is ``(B*K,)``.

    denoise: sum of log p_theta(x0_i | x_t) over unmasked positions; kl: sum over steps; log_q: log Q of
    the trajectory; denoise_grad: with ``finetune``, the denoising term differentiable in theta.
    """

    denoise: torch.Tensor
    kl: torch.Tensor
    log_q: torch.Tensor
    steps_used: torch.Tensor
    n_masked: torch.Tensor
    denoise_grad: torch.Tensor | None = None

    @property
    def elbo(self) -> torch.Tensor:
        return self.denoise - self.kl


def _denoiser(model, x: torch.Tensor, active: torch.Tensor, bf16: bool, grad: bool = False):
    """Forward pass on the active rows: probs ``(B, N, V)``, hidden ``(B, N, D)`` (float32, detached) and,
    with ``grad``, log-probs ``(B, N, V)`` that carry the gradient into the denoiser (else None)."""
    rows = active.nonzero()[:, 0]
    with bf16_autocast(x.device, bf16), torch.set_grad_enabled(grad):
        out = model(x[rows])
    logits = out.logits.float()
    probs = x.new_zeros((*x.shape, logits.shape[-1]), dtype=torch.float32)
    hidden = x.new_zeros((*x.shape, out.hidden.shape[-1]), dtype=torch.float32)
    probs[rows] = logits.detach().softmax(-1)
    hidden[rows] = out.hidden.detach().float()
    logp = torch.zeros_like(probs).index_put((rows,), logits.log_softmax(-1)) if grad else None
    return probs, hidden, logp


def rollout(model, start: torch.Tensor, target: torch.Tensor, posterior_net, selector_net, steps: int,
            tau: float, samples: int, generator: torch.Generator, bf16: bool = False,
            finetune: bool = False) -> Rollout:
    """Sample ``samples`` schedules per example from Q_phi and score them. ``start``: ``(B, N)`` token ids;
    ``target``: ``(B, N)`` value index of each clean token; ``finetune``: also the denoising term's gradient."""
    x = start.repeat_interleave(samples, 0)
    target = target.repeat_interleave(samples, 0)
    truth = model.value_tokens[target]
    zeros = x.new_zeros(x.shape[0], dtype=torch.float32)
    denoise, kl, log_q = zeros.clone(), zeros.clone(), zeros.clone()
    denoise_grad = zeros.clone() if finetune else None
    used = torch.zeros_like(x[:, 0])
    n_masked = (x == model.mask_id).sum(1)
    for t in range(steps):
        masked = x == model.mask_id
        active = masked.any(1)
        if not active.any():
            break
        last = t == steps - 1
        probs, hidden, logp = _denoiser(model, x, active, bf16, grad=finetune)
        alpha = posterior_net(hidden, posterior_features(probs, masked, target, t, steps))
        logit_p = selector_net(hidden, selector_features(probs, masked, t, steps))
        logq = posterior_logq(alpha, masked, tau)
        r = sample_posterior(logq, masked, last, generator)
        log_q = log_q + posterior_log_prob(r, logq, masked, last)
        kl = kl + bernoulli_kl(logq, logit_p, masked, last)
        logp_true = probs.clamp_min(1e-12).log().gather(-1, target[..., None])[..., 0]
        denoise = denoise + (logp_true * r).sum(1)
        if finetune:
            denoise_grad = denoise_grad + (logp.gather(-1, target[..., None])[..., 0] * r).sum(1)
        x = torch.where(r, truth, x)
        used += active.long()
    return Rollout(denoise, kl, log_q, used, n_masked, denoise_grad)


@torch.no_grad()
def schedule_loglik(model, start: torch.Tensor, target: torch.Tensor, choose, steps: int,
                    bf16: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Teacher-forced log-likelihood of x_0 under a deterministic schedule: ``(loglik (B,), passes (B,))``.

    The ELBO's denoising term with ``choose(probs, hidden, masked, step, steps) -> (B, N) bool`` in place of Q.
    """
    x = start.clone()
    truth = model.value_tokens[target]
    loglik = x.new_zeros(x.shape[0], dtype=torch.float32)
    used = torch.zeros_like(x[:, 0])
    for t in range(steps):
        masked = x == model.mask_id
        active = masked.any(1)
        if not active.any():
            break
        probs, hidden, _ = _denoiser(model, x, active, bf16)
        r = choose(probs, hidden, masked, t, steps) & masked
        loglik += (probs.clamp_min(1e-12).log().gather(-1, target[..., None])[..., 0] * r).sum(1)
        x = torch.where(r, truth, x)
        used += active.long()
    return loglik, used


def selector_choice(net):
    """A ``choose`` for :func:`schedule_loglik`: the ``learned`` strategy's rule (threshold mode, 0.5)."""

    def choose(probs, hidden, masked, step, steps):
        prob = select_probabilities(net, hidden, probs, masked, step, steps)
        return pick_positions(prob, masked, step >= steps - 1, "threshold", 0.5)

    return choose


def margin_choice(probs, hidden, masked, step, steps):
    """A ``choose`` for :func:`schedule_loglik`: ``top_margin`` with ``steps`` = T."""
    top2 = probs.topk(2, dim=-1).values
    return rank_pick(top2[..., 0] - top2[..., 1], masked, uniform_count(masked, steps - step))


def order_loss(ro: Rollout, samples: int, kl_weight: float = 1.0) -> torch.Tensor:
    """The scalar minimised for one batch: -(ELBO) per masked position, with the RLOO score term for phi.

    Divided by each example's masked count (a per-example constant, so unbiased); ``kl_weight`` = beta < 1
    optimises D - beta KL (a beta-ELBO); with ``ro.denoise_grad`` theta gets -grad D.
    """
    scale = ro.n_masked.clamp_min(1).float()
    returns = ((ro.denoise - kl_weight * ro.kl) / scale).view(-1, samples)
    log_q = ro.log_q.view(-1, samples)
    loss = kl_weight * (ro.kl / scale).mean() - score_function_surrogate(log_q, returns)
    if ro.denoise_grad is not None:  # joint training: theta maximises the denoising term on Q's states
        loss = loss - (ro.denoise_grad / scale).mean()
    return loss
