"""MI-guided parallel decoding (the paper's sampler): unmask positions that are each confident and nearly
independent of each other, spending an entropy-plus-MI budget.

Masked positions are visited by entropy, lowest first. With remaining budget B (``gamma`` at first) and
accepted set U, position i costs ``cost_i = H_i + lam * sum_{j in U} MI(i, j)`` and is accepted when
``cost_i <= B`` (then ``B -= cost_i``), else left for a later pass. The lowest-entropy position is always
accepted and charged, so every pass makes progress.

A position that does not fit does not end the scan: a later one with less MI to the accepted may still fit.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from mi_core.decoding.base import Strategy, param, register
from mi_core.mi.estimator import SHIPPED, check_model_match, check_trained_on, load_estimator, shipped_estimator_for
from mi_core.mi.probe import probe, probe_many


def relative_mi(mi: torch.Tensor, entropy: torch.Tensor, floor: float = 1e-6) -> torch.Tensor:
    """``MI(i, j) / min(H_i, H_j)`` clamped to [0, 1] (0 where either entropy is below ``floor``)."""
    h = entropy.double()
    h_min = torch.minimum(h[:, :, None], h[:, None, :])
    rel = (mi.double().clamp_min(0.0) / h_min.clamp_min(floor)).clamp(0.0, 1.0)
    return rel.masked_fill(h_min < floor, 0.0)


def scan_length(masked: torch.Tensor) -> int:
    """How many entropy ranks :func:`mi_greedy` visits: the most masked cells of a row on the CPU, else all
    ``N`` (no host read; ranks past a row's masked count change nothing)."""
    if masked.device.type == "cpu":
        return int(masked.sum(1).max()) if masked.numel() else 0
    return masked.shape[1]


def mi_greedy(entropy: torch.Tensor, mi: torch.Tensor, masked: torch.Tensor, gamma: float, lam: float):
    """The greedy MI-budget acceptance of the module docstring, one tensor step per entropy rank over the
    whole batch (no host sync off the CPU).

    Args:
        entropy: ``(B, N)`` nats; mi: ``(B, N, N)`` nats (negatives count as 0); masked: ``(B, N)`` bool.
    Returns:
        chosen ``(B, N)`` bool; budget_spent ``(B,)`` float64; mi_spent ``(B,)`` float64 (the MI among the chosen).
    """
    b, n = masked.shape
    order = entropy.masked_fill(~masked, float("inf")).argsort(dim=1, stable=True)  # (B, N) visiting order
    h = entropy.double().gather(1, order)  # (B, N) entropies in visiting order
    cand = masked.gather(1, order)  # (B, N) whether rank k is a candidate
    mi = mi.double().clamp_min(0.0)
    budget = torch.full((b,), float(gamma), dtype=torch.float64, device=entropy.device)
    chosen = torch.zeros(b, n, dtype=torch.float64, device=entropy.device)  # 1.0 where accepted so far
    mi_spent = torch.zeros_like(budget)
    for k in range(scan_length(masked)):
        i = order[:, k]  # (B,) the cell at rank k
        pair = (mi.gather(1, i[:, None, None].expand(b, 1, n))[:, 0] * chosen).sum(1)  # MI with the accepted
        cost = h[:, k] + lam * pair
        accept = cand[:, k] & ((cost <= budget) | (k == 0))
        chosen.scatter_(1, i[:, None], accept.double()[:, None])
        budget = budget - cost * accept
        mi_spent = mi_spent + pair * accept
    return chosen.bool(), gamma - budget, mi_spent


def estimator_mi_fn(estimator) -> Callable:
    """An ``mi_fn`` for :class:`MIGuided` from a neural estimator (:class:`mi_core.mi.estimator.MIEstimator`)."""

    def mi_fn(ctx) -> torch.Tensor:
        return estimator(ctx.hidden.float(), ctx.probs, ctx.entropy, ctx.masked)

    return mi_fn


def probe_mi_fn(eps: float) -> Callable:
    """An ``mi_fn`` from the (pruned) exact probe of each row's state, ``(B, N, N)``, its passes added to
    ``ctx.extra_passes``: the MI of a domain without an estimator (``Domain.exact_model``, ``probe_fallback``)."""

    def mi_fn(ctx) -> torch.Tensor:
        rows = [probe(ctx.model, row, eps=eps) for row in ctx.tokens]
        if ctx.extra_passes is not None:
            ctx.extra_passes += torch.tensor([int(r.passes) for r in rows], device=ctx.extra_passes.device)
        return torch.stack([r.mi for r in rows]).to(ctx.entropy.device)

    return mi_fn


def loaded_for(strategy, key: str, model, device) -> bool:
    """Whether what ``strategy`` read from a path or ``shipped`` (recorded under ``key`` as (model, device, spec)) was
    read for ``model`` on ``device``; True when it read nothing (an object set by code serves any model)."""
    loaded = strategy.__dict__.get(key)
    return loaded is None or (loaded[0]() is model and loaded[1] == str(device))


@dataclass
class MIBudget(Strategy):
    """Base of the MI-guided strategies: ``gamma`` (budget, nats), ``lam`` (weight of MI), ``relative``
    (charge ``MI / min(H_i, H_j)``). info: ``mi`` ``(B, N, N)``, ``budget_spent``, ``entropy_spent``,
    ``mi_spent``."""

    gamma: float = param(1.0, "nonnegative")
    lam: float = param(1.0, "nonnegative")
    relative: bool = False

    def mi_matrix(self, ctx) -> torch.Tensor:
        """``(B, N, N)`` MI between positions at this step."""
        raise NotImplementedError

    def select(self, ctx) -> torch.Tensor:
        mi = self.mi_matrix(ctx).to(ctx.entropy.device).double().clamp_min(0.0)
        charged = relative_mi(mi, ctx.entropy) if self.relative else mi
        chosen, spent, mi_spent = mi_greedy(ctx.entropy, charged, ctx.masked, self.gamma, self.lam)
        ctx.info.update(mi=mi, budget_spent=spent, mi_spent=mi_spent,
                        entropy_spent=(ctx.entropy.double() * chosen).sum(1))
        return chosen


@register("mi")
@dataclass
class MIGuided(MIBudget):
    """MI-guided decoding: masked positions by entropy, lowest first; position i is accepted if
    ``H_i + lam * sum of MI(i, j) over those already accepted`` fits the budget left (``gamma`` nats at first),
    else it waits for a later pass. The MI comes from the neural estimator in the same model pass.

    ``mi_fn(ctx) -> (B, N, N)`` is set by code, or loaded by ``prepare`` from ``estimator`` (a weights path, or
    ``shipped``)."""

    estimator: str | None = None
    mi_fn: Callable | None = field(default=None, repr=False, compare=False, metadata={"runtime": True})

    def prepare(self, model, device) -> None:
        if self.mi_fn is not None and not loaded_for(self, "estimator_loaded", model, device):
            self.mi_fn = None  # read from ``estimator`` for another model or device: read it again for this one
        if self.mi_fn is None and self.estimator is not None:
            path = shipped_estimator_for(model) if self.estimator == SHIPPED else self.estimator
            estimator = load_estimator(path, device)
            check_model_match(model, estimator, "the model", f"the estimator {path}")
            check_trained_on(model, path)
            self.mi_fn = estimator_mi_fn(estimator)
            self.__dict__["estimator_loaded"] = (weakref.ref(model), str(device), self.estimator)

    def mi_matrix(self, ctx) -> torch.Tensor:
        if self.mi_fn is None:
            raise ValueError(f"strategy '{self.name}' has no MI source: give estimator=PATH (a trained MI estimator) "
                             "or set mi_fn (e.g. mi_fn=estimator_mi_fn(estimator))")
        if not callable(self.mi_fn):
            raise ValueError(f"strategy '{self.name}': mi_fn must be callable as mi_fn(ctx), got {type(self.mi_fn).__name__}")
        mi = self.mi_fn(ctx)
        expected = (*ctx.masked.shape, ctx.masked.shape[1])
        if tuple(mi.shape) != expected:
            raise ValueError(f"strategy '{self.name}': mi_fn returned shape {tuple(mi.shape)}, expected {expected}")
        return mi


@register("mi_exact")
@dataclass
class MIExact(MIBudget):
    """MI-guided decoding with the exact probe's MI (an upper bound, for analysis), all rows in one
    :func:`probe_many`; its passes go to ``extra_passes`` and info's ``probe_passes``, not the decode passes."""

    eps: float = param(0.0, "fraction")
    max_batch: int = param(512, "count")

    def mi_matrix(self, ctx) -> torch.Tensor:
        active = ctx.masked.any(1)
        many = probe_many(ctx.model, ctx.tokens, eps=self.eps, max_batch=self.max_batch)
        mi = many.mi.to(ctx.entropy.device)  # finished rows: nothing masked, MI 0
        spent = many.passes.to(ctx.entropy.device) * active  # a finished row's base pass is not charged
        ctx.extra_passes += spent
        ctx.info["probe_passes"] = spent
        return mi
