"""The two small order networks over the frozen MDM's pass on x_t: the selector P_psi(r_t | x_t), from
x_0-free features (it runs at inference), and the posterior's score alpha_phi(x_t, x_0), which also sees the
clean sequence (:func:`posterior_features`). T enters only through row-level features, so one network serves
every budget."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from mi_core.decoding.base import rand_rows
from mi_core.domain import get_domain
from mi_core.models.base import ModelFileError, load_checked, save_model, trained_on_mismatch
from mi_core.models.loading import other_domain, unregistered_domain
from mi_core.options import option

N_SELECTOR_FEATURES = 10
N_POSTERIOR_FEATURES = N_SELECTOR_FEATURES + 2
LOGP_FEATURE = N_SELECTOR_FEATURES  # index of log p(x0_i | x_t) among the posterior's features


@dataclass(frozen=True)
class OrderNetConfig:
    """``role``: "selector" or "posterior"; ``skip``: a feature added to the output as is (-1: none), e.g. the
    posterior's log p(x0_i | x_t), so it starts from q_i = p(x0_i | x_t) / max_j p(x0_j | x_t)."""

    d_model: int = option(128, range=(1, 8192))
    n_features: int = N_SELECTOR_FEATURES
    width: int = option(64, range=(1, 8192))
    role: str = "selector"
    skip: int = -1

    def __post_init__(self):
        if min(self.d_model, self.n_features, self.width) < 1:
            raise ValueError("d_model, n_features and width must be positive")
        if not -1 <= self.skip < self.n_features:
            raise ValueError(f"skip must be -1 (none) or a feature index below {self.n_features}, got {self.skip}")
        if self.role not in ("selector", "posterior"):
            raise ValueError(f"role must be 'selector' or 'posterior', got {self.role!r}")


class PositionNet(nn.Module):
    """``(hidden (B,N,D), features (B,N,F)) -> (B, N)``: a logit (selector) or score (posterior) per position."""

    def __init__(self, cfg: OrderNetConfig):
        super().__init__()
        self.cfg = cfg
        self.norm = nn.LayerNorm(cfg.d_model)
        self.from_hidden = nn.Linear(cfg.d_model, cfg.width)
        self.from_features = nn.Linear(cfg.n_features, cfg.width)
        self.mlp = nn.Sequential(nn.GELU(), nn.Linear(cfg.width, cfg.width), nn.GELU(), nn.Linear(cfg.width, 1))
        nn.init.zeros_(self.mlp[-1].weight)  # start from the skip feature alone (or logit 0: p = 1/2)
        nn.init.zeros_(self.mlp[-1].bias)

    def forward(self, hidden: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        x = self.from_hidden(self.norm(hidden.float())) + self.from_features(features)
        out = self.mlp(x)[..., 0]
        return out + features[..., self.cfg.skip] if self.cfg.skip >= 0 else out


def selector_features(probs: torch.Tensor, masked: torch.Tensor, step: int, steps: int) -> torch.Tensor:
    """``(B, N, 10)`` x_0-free features from ``probs`` ``(B, N, V)`` at step ``step`` of ``steps``: entropy,
    top probability, margin, their gaps to the row's best, masked fraction, step / T, 1 / steps left and
    masked fraction / steps left."""
    probs = probs.float()
    entropy = -torch.special.xlogy(probs, probs).sum(-1)
    top2 = probs.topk(2, dim=-1).values
    top, margin = top2[..., 0], top2[..., 0] - top2[..., 1]
    m = masked.float()
    def best(x):
        return x.masked_fill(~masked, float("-inf")).amax(1, keepdim=True).clamp_min(-1e4)
    frac = m.mean(1, keepdim=True).expand_as(m)
    left = float(max(steps - step, 1))
    def row(v):
        return torch.full_like(m, v)
    cols = [entropy * m, top * m, margin * m, (best(-entropy) + entropy) * m, (best(top) - top) * m,
            (best(margin) - margin) * m, frac, row(step / steps), row(1.0 / left), frac / left]
    return torch.stack(cols, -1)


def posterior_features(probs: torch.Tensor, masked: torch.Tensor, target: torch.Tensor, step: int,
                       steps: int) -> torch.Tensor:
    """``(B, N, 12)``: :func:`selector_features` plus log p(x0_i | x_t) and [argmax == x0_i] (``target``: value
    indices ``(B, N)``)."""
    logp = probs.float().clamp_min(1e-12).log().gather(-1, target[..., None])[..., 0]
    right = (probs.argmax(-1) == target).float()
    m = masked.float()
    extra = torch.stack([logp.clamp_min(-20.0) * m, right * m], -1)
    return torch.cat([selector_features(probs, masked, step, steps), extra], -1)


def make_order_nets(d_model: int, width: int = 64) -> tuple[PositionNet, PositionNet]:
    """A fresh ``(posterior, selector)`` pair for an MDM with hidden size ``d_model``."""
    post = OrderNetConfig(d_model, N_POSTERIOR_FEATURES, width, "posterior", skip=LOGP_FEATURE)
    return PositionNet(post), PositionNet(OrderNetConfig(d_model, N_SELECTOR_FEATURES, width, "selector"))


@torch.no_grad()
def select_probabilities(net: PositionNet, hidden: torch.Tensor, probs: torch.Tensor, masked: torch.Tensor,
                         step: int, steps: int) -> torch.Tensor:
    """``(B, N)`` float32 P(unmask) at each masked position (0 elsewhere), whatever the caller's autocast."""
    with torch.autocast(masked.device.type, enabled=False):
        return torch.sigmoid(net(hidden.float(), selector_features(probs, masked, step, steps))) * masked


def pick_positions(prob: torch.Tensor, masked: torch.Tensor, last: bool, mode: str, threshold: float,
                   generator: torch.Generator | None = None) -> torch.Tensor:
    """``(B, N)`` bool positions to unmask: prob >= ``threshold`` or Bernoulli(prob) draws (``mode``), always
    the most probable, and every masked position at the ``last`` step."""
    if last:
        return masked.clone()
    if mode == "threshold":
        chosen = prob >= threshold
    elif mode == "sample":
        chosen = rand_rows(prob.shape, generator, prob.device) < prob
    else:
        raise ValueError(f"mode must be 'sample' or 'threshold', got {mode!r}")
    best = prob.masked_fill(~masked, -1.0).argmax(1)
    chosen[torch.arange(len(best), device=best.device), best] = True
    return chosen & masked


def save_order_net(net: PositionNet, path: str | Path, extra: dict | None = None) -> None:
    """Write the weights (safetensors) and the config plus ``extra`` (JSON)."""
    save_model(net, net.cfg, path, extra)


def load_order_net(path: str | Path, device: torch.device | str = "cpu", role: str = "selector") -> PositionNet:
    """Load a :class:`PositionNet` saved by :func:`save_order_net` (ModelFileError on a bad file)."""
    net = load_checked(OrderNetConfig, PositionNet, path, device, "an order network")[0]
    if net.cfg.role != role:
        raise ModelFileError(f"{path} holds an order {net.cfg.role}, expected a {role}")
    return net


MAKE_ONE = " (python -m mi_core train-order --model M makes one)"


def make_one(model) -> str:
    """Where a selector for ``model`` comes from: :data:`MAKE_ONE`, unless its domain has no order task."""
    try:
        domain = get_domain(getattr(model, "domain", None))
    except ValueError:
        return MAKE_ONE
    return MAKE_ONE if domain.order_task is not None else f" (train-order trains none for {domain.cli_name})"


def domain_problem(path: str | Path, model) -> str | None:
    """Why the selector at ``path`` serves another domain than ``model``'s, per the domain its JSON records: a
    registered one, or one no module registered here; None when they agree or either is not known."""
    try:
        ours = get_domain(getattr(model, "domain", None))
    except ValueError:
        return None
    trained, unknown = other_domain(path, ours), unregistered_domain(path, ours)
    if trained is None and unknown is None:
        return None
    told = (f"{trained.cli_name}" if trained is not None else
            f"the domain {unknown!r}, which no module registered here (is its module named in MI_LENS_DOMAINS?)")
    return (f"was trained on {told}, the model is one for {ours.cli_name} ({model.n_values} values): use a "
            f"selector trained for {ours.cli_name}")


def check_order_net_fits(net: PositionNet, model, path: str | Path | None = None, same_weights: bool = True) -> None:
    """Raise ModelFileError when the order net was trained on another hidden size, or (per the JSON beside
    ``path``) another domain or (``same_weights``) other weights, than ``model``."""
    d = int(model.hidden_size)
    name = f"the order selector {path}" if path else "the order selector"
    problem = None if path is None else domain_problem(path, model)
    if problem:  # named first: another domain's model often has another hidden size too
        raise ModelFileError(f"{name} {problem}")
    if net.cfg.d_model != d:
        raise ModelFileError(f"{name} reads hidden size {net.cfg.d_model}, the model gives {d}: "
                             f"use a selector trained on this model{make_one(model)}")
    if path is None:
        return
    problem = trained_on_mismatch(model, path) if same_weights else None
    if problem:
        raise ModelFileError(f"{name} {problem}: use a selector trained on this model{make_one(model)}")
