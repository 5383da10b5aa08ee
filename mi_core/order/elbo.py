"""The order ELBO: rollouts of the posterior's schedule, the Bernoulli KL, and the RLOO surrogate loss.

For a start state x_T (a puzzle: givens visible, blanks masked) with clean sequence x_0, a budget of T
steps and a schedule r_0..r_{T-1} drawn from Q_phi (forward step index t = 0 first; the issue's
``x_{t+1}`` is our ``x_t``, the state before step t):

    ELBO(x_0) = E_Q [ sum_t ( sum_{i in r_t} log p_theta(x0_i | x_t)  -  KL(Q(.|x_t, x_0) || P_psi(.|x_t)) ) ]

with teacher forcing (x_{t+1} writes x_0's tokens at r_t). The denoiser p_theta is frozen. Gradients:
psi from the KL term directly; phi from the KL term directly plus the score-function term
(R - b) grad log Q(r), with R the trajectory's return and b the leave-one-out mean of the other K - 1
returns of the same example (RLOO, unbiased since b does not depend on the sample it multiplies).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from mi_core.order.posterior import posterior_log_prob, posterior_logq, sample_posterior, split_logq
from mi_core.order.selector import posterior_features, selector_features


def bernoulli_kl(logq: torch.Tensor, logit_p: torch.Tensor, masked: torch.Tensor, last: bool) -> torch.Tensor:
    """``KL(Q || P)`` ``(B,)`` between independent Bernoullis over the masked positions.

    Per position: q log(q/p) + (1-q) log((1-q)/(1-p)), with log q from :func:`posterior_logq` and
    p = sigmoid(logit_p). Certain positions (q = 1) give -log p. The last step is forced for both
    distributions (everything is unmasked), so its KL is 0.
    """
    if last:
        return logq.new_zeros(logq.shape[0])
    sure, free, s, s1m = split_logq(logq, masked, last)
    logp, log1mp = F.logsigmoid(logit_p), F.logsigmoid(-logit_p)
    q = s.exp()
    kl_free = q * (s - logp) + (1 - q) * (s1m - log1mp)
    return (free * kl_free + sure * -logp).sum(1)


def rloo(returns: torch.Tensor) -> torch.Tensor:
    """Leave-one-out advantages ``(B, K)``: R_k minus the mean of the other K - 1 returns of the row.

    Raises:
        ValueError: fewer than 2 samples per row.
    """
    k = returns.shape[-1]
    if k < 2:
        raise ValueError(f"RLOO needs at least 2 samples per example, got {k}")
    return returns - (returns.sum(-1, keepdim=True) - returns) / (k - 1)


def score_function_surrogate(log_q: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
    """Scalar whose gradient is the RLOO estimate of grad E_Q[R]: mean of rloo(R) * log Q.

    Args:
        log_q: ``(B, K)`` log-probability of each sampled trajectory (differentiable in phi);
        returns: ``(B, K)`` their returns (treated as constants).
    """
    return (rloo(returns.detach()) * log_q).mean()


@dataclass
class Rollout:
    """K posterior trajectories per example, flattened example-major (rows b*K .. b*K+K-1 are example b).

    denoise ``(B*K,)`` sum of log p_theta(x0_i | x_t) over unmasked positions; kl ``(B*K,)`` sum over
    steps (differentiable in phi and psi); log_q ``(B*K,)`` log Q of the trajectory (differentiable in
    phi); steps_used ``(B*K,)`` steps that unmasked anything; n_masked ``(B*K,)`` masked at the start.
    """

    denoise: torch.Tensor
    kl: torch.Tensor
    log_q: torch.Tensor
    steps_used: torch.Tensor
    n_masked: torch.Tensor

    @property
    def elbo(self) -> torch.Tensor:
        return self.denoise - self.kl


@torch.no_grad()
def _denoiser(model, x: torch.Tensor, active: torch.Tensor, bf16: bool):
    """Frozen forward pass on the active rows: probs ``(B, N, V)`` float32, hidden ``(B, N, D)`` float32."""
    rows = active.nonzero()[:, 0]
    ctx = torch.autocast(x.device.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    with ctx:
        out = model(x[rows])
    probs = x.new_zeros((*x.shape, out.logits.shape[-1]), dtype=torch.float32)
    hidden = x.new_zeros((*x.shape, out.hidden.shape[-1]), dtype=torch.float32)
    probs[rows] = out.logits.float().softmax(-1)
    hidden[rows] = out.hidden.float()
    return probs, hidden


def rollout(model, start: torch.Tensor, target: torch.Tensor, posterior_net, selector_net, steps: int,
            tau: float, samples: int, generator: torch.Generator, bf16: bool = False) -> Rollout:
    """Sample ``samples`` schedules per example from Q_phi and score them (see the module docstring).

    Args:
        model: the frozen MDM; start: ``(B, N)`` token ids (``model.mask_id`` where masked);
        target: ``(B, N)`` value index of the clean token at every position; steps: the budget T.
    """
    x = start.repeat_interleave(samples, 0)
    target = target.repeat_interleave(samples, 0)
    truth = model.value_tokens[target]
    zeros = x.new_zeros(x.shape[0], dtype=torch.float32)
    denoise, kl, log_q = zeros.clone(), zeros.clone(), zeros.clone()
    used = torch.zeros_like(x[:, 0])
    n_masked = (x == model.mask_id).sum(1)
    for t in range(steps):
        masked = x == model.mask_id
        active = masked.any(1)
        if not active.any():
            break
        last = t == steps - 1
        probs, hidden = _denoiser(model, x, active, bf16)
        alpha = posterior_net(hidden, posterior_features(probs, masked, target, t, steps))
        logit_p = selector_net(hidden, selector_features(probs, masked, t, steps))
        logq = posterior_logq(alpha, masked, tau)
        r = sample_posterior(logq, masked, last, generator)
        log_q = log_q + posterior_log_prob(r, logq, masked, last)
        kl = kl + bernoulli_kl(logq, logit_p, masked, last)
        logp_true = probs.clamp_min(1e-12).log().gather(-1, target[..., None])[..., 0]
        denoise = denoise + (logp_true * r).sum(1)
        x = torch.where(r, truth, x)
        used += active.long()
    return Rollout(denoise, kl, log_q, used, n_masked)


def order_loss(ro: Rollout, samples: int) -> torch.Tensor:
    """The scalar minimised for one batch: -(ELBO) per masked position, with the RLOO score term for phi.

    grad_psi = grad KL (P is fit to Q); grad_phi = grad KL - RLOO(R) grad log Q, all divided by the
    example's masked count (a per-example constant, so the estimate stays unbiased).
    """
    scale = ro.n_masked.clamp_min(1).float()
    returns = (ro.elbo / scale).view(-1, samples)
    log_q = ro.log_q.view(-1, samples)
    return (ro.kl / scale).mean() - score_function_surrogate(log_q, returns)
