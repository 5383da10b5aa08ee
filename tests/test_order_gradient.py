"""The order ELBO's gradient estimator (``rollout`` + ``order_loss``) against the exact gradient.

On a problem small enough to enumerate every schedule (5 positions, one of them given, T <= 3 steps, a
hand-made context-dependent denoiser and linear order networks), the exact ELBO

    E_Q [ sum_t ( D_t - beta KL_t ) ]          (docs/learned_order.md, "The ELBO")

is written out here in float64, independently of :mod:`mi_core.order`, and differentiated by autograd. The
mean of the project's RLOO estimate over many schedules must match it within noise, for phi (score function
plus the KL's pathwise part) and psi (the KL's pathwise part), and a baseline that includes the sample itself
must not.
"""

import itertools
from types import SimpleNamespace

import pytest
import torch

import mi_core.order.elbo as elbo
from mi_core.decoding.selector import LOGP_FEATURE
from mi_core.order.elbo import order_loss, rollout

N, V, D, MASK = 5, 3, 4, 0
TARGET = torch.tensor([2, 0, 1, 2, 1])  # value indices of x_0
GIVEN = torch.tensor([False, False, True, False, False])


def _randn(g, *shape, scale=1.0):
    return scale * torch.randn(*shape, generator=g, dtype=torch.float64)


class ToyDenoiser:
    """Logits and hidden states that depend on every token of the state, so the order matters to D."""

    mask_id, value_tokens = MASK, torch.arange(1, V + 1)

    def __init__(self, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.bias, self.context = _randn(g, N, V), _randn(g, N, N, V + 1, V, scale=1.5)
        self.embed, self.pos, self.mix = _randn(g, V + 1, D), _randn(g, N, D), _randn(g, N, N, V + 1, D, scale=0.5)

    def __call__(self, x):
        onehot = torch.nn.functional.one_hot(x, V + 1).double()  # (B, N, V+1)
        logits = self.bias + torch.einsum("ijtv,bjt->biv", self.context, onehot)
        hidden = onehot @ self.embed + self.pos + torch.einsum("ijtd,bjt->bid", self.mix, onehot)
        return SimpleNamespace(logits=logits, hidden=hidden)


class Linear(torch.nn.Module):
    """``h_i . w + u_i + v * feature_i``: the posterior reads log p(x0_i | x_t), the selector the top probability."""

    def __init__(self, seed, v, feature):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.w, self.u = torch.nn.Parameter(_randn(g, D, scale=0.5)), torch.nn.Parameter(_randn(g, N, scale=0.5))
        self.v, self.feature = torch.nn.Parameter(torch.tensor(v, dtype=torch.float64)), feature

    def forward(self, hidden, features):  # as rollout calls it
        return self.of(hidden.double(), features[..., self.feature].double())

    def of(self, hidden, feature):
        return hidden @ self.w + self.u + self.v * feature


def exact_objective(model, post, sel, x, t, steps, tau, beta):
    """E_Q[sum_{s >= t} (D_s - beta KL_s)] from state ``x`` ``(N,)``, summed over every schedule (float64)."""
    masked = (x == MASK).nonzero()[:, 0]
    if len(masked) == 0:
        return torch.zeros((), dtype=torch.float64)
    out = model(x[None])
    probs, hidden = out.logits[0].softmax(-1), out.hidden[0]
    logp_true = probs.log()[torch.arange(N), TARGET]
    if t == steps - 1:  # the last step takes everything left, and both distributions are forced
        return logp_true[masked].sum()
    alpha = post.of(hidden, logp_true)[masked]
    q = ((alpha - alpha.max()) / tau).exp()  # Eq. Q: the best masked position has q = 1
    p = torch.sigmoid(sel.of(hidden, probs.max(-1).values)[masked])
    kl = torch.where(q < 1, q * (q / p).log() + (1 - q) * ((1 - q).clamp_min(1e-300) / (1 - p)).log(), -p.log())
    total = -beta * kl.sum()
    for bits in itertools.product([False, True], repeat=len(masked)):
        r = torch.tensor(bits)
        prob = torch.where(r, q, 1 - q).prod()  # Q(r_t): independent Bernoullis over the masked positions
        if prob.item() == 0.0:  # a set without the certain position
            continue
        nxt = x.clone()
        nxt[masked[r]] = ToyDenoiser.value_tokens[TARGET[masked[r]]]
        total = total + prob * (logp_true[masked[r]].sum() + exact_objective(model, post, sel, nxt, t + 1, steps,
                                                                             tau, beta))
    return total


def estimated_gradient(model, post, sel, start, steps, tau, beta, chunks=40, batch=500, samples=4):
    """Mean and standard error over ``chunks`` of the estimate of grad E_Q[...] from ``order_loss``."""
    params, m = [*post.parameters(), *sel.parameters()], int((start == MASK).sum())
    estimates = []
    for c in range(chunks):
        ro = rollout(model, start.expand(batch, N), TARGET.expand(batch, N), post, sel, steps, tau, samples,
                     torch.Generator().manual_seed(c))
        grads = torch.autograd.grad(order_loss(ro, samples, beta), params)
        estimates.append(-m * torch.cat([g.reshape(-1) for g in grads]))  # the loss is -objective / masked count
    est = torch.stack(estimates)
    return est.mean(0), est.std(0) / chunks**0.5


def setup():
    model = ToyDenoiser()
    post, sel = Linear(1, 0.7, LOGP_FEATURE), Linear(2, -0.8, 1)  # feature 1 of the selector: top probability
    start = torch.where(GIVEN, ToyDenoiser.value_tokens[TARGET], torch.full((N,), MASK))[None]
    return model, post, sel, start


def exact_gradient(model, post, sel, start, steps, tau, beta):
    value = exact_objective(model, post, sel, start[0], 0, steps, tau, beta)
    return torch.cat([g.reshape(-1) for g in torch.autograd.grad(value, [*post.parameters(), *sel.parameters()])])


def matches(mean, se, exact):
    """Within 4 standard errors where the estimate is random, to float32 rounding where it is not."""
    noisy = se > 1e-9
    return bool(((mean - exact).abs() <= torch.where(noisy, 4 * se, 1e-5 * (1 + exact.abs())) + 1e-6).all())


@pytest.mark.parametrize("steps, tau, beta", [(2, 1.5, 1.0), (3, 0.7, 1.0), (3, 0.7, 0.5)])
def test_rloo_estimate_of_the_whole_objective_is_unbiased(steps, tau, beta, monkeypatch):
    model, post, sel, start = setup()
    exact = exact_gradient(model, post, sel, start, steps, tau, beta)
    mean, se = estimated_gradient(model, post, sel, start, steps, tau, beta)
    n_phi = sum(p.numel() for p in post.parameters())
    assert exact[:n_phi].abs().max() > 1.0 and exact[n_phi:].abs().max() > 0.5  # both gradients are substantial
    assert matches(mean, se, exact), torch.stack([exact, mean, se], 1)
    given = [D + 2, n_phi + D + 2]  # u at the given position, in phi and in psi: never scored
    assert torch.equal(mean[given], torch.zeros(2, dtype=mean.dtype)) and torch.equal(exact[given], mean[given])
    # the check has power: a baseline that includes the sample itself shrinks the score term by (K-1)/K
    monkeypatch.setattr(elbo, "rloo", lambda returns: returns - returns.mean(-1, keepdim=True))
    assert not matches(*estimated_gradient(model, post, sel, start, steps, tau, beta), exact)


def test_the_kl_replaces_log_p_minus_log_q_with_the_same_value():
    """The per-step Rao-Blackwellisation of the docs: E_Q[log P(r_t) - log Q(r_t)] = -KL_t, at every step."""
    model, post, sel, start = setup()
    steps, tau = 3, 0.7

    def without_kl(x, t):  # E_Q[sum_s (D_s + log P(r_s) - log Q(r_s))], by enumeration
        masked = (x == MASK).nonzero()[:, 0]
        if len(masked) == 0:
            return torch.zeros((), dtype=torch.float64)
        out = model(x[None])
        probs, hidden = out.logits[0].softmax(-1), out.hidden[0]
        logp_true = probs.log()[torch.arange(N), TARGET]
        if t == steps - 1:
            return logp_true[masked].sum()
        alpha = post.of(hidden, logp_true)[masked]
        q = ((alpha - alpha.max()) / tau).exp()
        p = torch.sigmoid(sel.of(hidden, probs.max(-1).values)[masked])
        total = torch.zeros((), dtype=torch.float64)
        for bits in itertools.product([False, True], repeat=len(masked)):
            r = torch.tensor(bits)
            prob = torch.where(r, q, 1 - q).prod()
            if prob.item() == 0.0:
                continue
            nxt = x.clone()
            nxt[masked[r]] = ToyDenoiser.value_tokens[TARGET[masked[r]]]
            ratio = torch.where(r, p, 1 - p).prod().log() - prob.log()
            total = total + prob * (logp_true[masked[r]].sum() + ratio + without_kl(nxt, t + 1))
        return total

    params = [*post.parameters(), *sel.parameters()]
    a, b = exact_objective(model, post, sel, start[0], 0, steps, tau, 1.0), without_kl(start[0], 0)
    assert abs(a.item() - b.item()) < 1e-10
    ga, gb = (torch.cat([g.reshape(-1) for g in torch.autograd.grad(v, params)]) for v in (a, b))
    assert torch.allclose(ga, gb, atol=1e-10)
