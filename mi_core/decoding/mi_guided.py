"""MI-guided parallel decoding (the paper's sampler): unmask a set of positions that are each confident
and nearly independent of each other, spending an entropy-plus-MI budget.

Masked positions are visited in order of entropy, lowest first. With remaining budget B = ``gamma`` and
accepted set U (empty at first), position i costs

    cost_i = H_i + lam * sum_{j in U} MI(i, j)

and is accepted when cost_i <= B, after which B -= cost_i; otherwise it is deferred (left masked for a
later pass) and the scan goes on. The lowest-entropy position is always accepted, whatever its cost,
and its entropy is charged (so B may go negative, and then nothing else fits): every pass makes
progress. With ``lam = 0`` the rule is the entropy budget "the longest entropy-sorted prefix whose
entropies sum to <= gamma" (at least one).

``mi`` reads its MI from a pluggable ``mi_fn(ctx) -> (B, N, N)``, usually the neural estimator applied to
the features of the loop's own forward pass (:func:`estimator_mi_fn`): no extra model pass, so the
decode pass count is the whole cost of the model (the head's cost is not a model pass). ``mi_exact``
gets its MI from the exact perturbation probe, an upper bound for analysis: its probe passes are counted
apart, in ``ctx.extra_passes`` (the frame's ``extra_passes``) and ``info["probe_passes"]``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from mi_core.decoding.base import Strategy, check_count, check_nonnegative
from mi_core.decoding.registry import register
from mi_core.mi.estimator import SHIPPED, check_model_match, check_trained_on, load_estimator, shipped_estimator_for
from mi_core.mi.probe import probe_many


def relative_mi(mi: torch.Tensor, entropy: torch.Tensor, floor: float = 1e-6) -> torch.Tensor:
    """``MI(i, j) / min(H_i, H_j)`` clamped to [0, 1] (0 where either entropy is below ``floor``)."""
    h = entropy.double()
    h_min = torch.minimum(h[:, :, None], h[:, None, :])
    rel = (mi.double().clamp_min(0.0) / h_min.clamp_min(floor)).clamp(0.0, 1.0)
    return rel.masked_fill(h_min < floor, 0.0)


def scan_length(masked: torch.Tensor) -> int:
    """How many entropy ranks :func:`mi_greedy` visits: the most masked cells of any row on the CPU (a
    read that costs nothing there), every rank ``N`` elsewhere (so the device is never waited for; ranks
    past a row's masked count change nothing)."""
    if masked.device.type == "cpu":
        return int(masked.sum(1).max()) if masked.numel() else 0
    return masked.shape[1]


def mi_greedy(entropy: torch.Tensor, mi: torch.Tensor, masked: torch.Tensor, gamma: float, lam: float):
    """The greedy MI-budget acceptance of the module docstring, vectorised over the batch and sync-free.

    The rule is sequential along each row's entropy order, so it runs one tensor step per rank
    ``k = 0..`` :func:`scan_length` ``- 1`` over the whole batch; off the CPU nothing is read back to the
    host, so on CUDA the whole selection is queued without a synchronisation.

    Args:
        entropy: ``(B, N)`` nats; mi: ``(B, N, N)`` nats (negative values, e.g. estimator noise, count as 0);
        masked: ``(B, N)`` bool, the candidates; gamma: the budget; lam: the weight of MI.
    Returns:
        chosen ``(B, N)`` bool; budget_spent ``(B,)`` float64 (sum of accepted costs); mi_spent ``(B,)``
        float64, sum over accepted i of sum_{j accepted before i} MI(i, j) (the MI among the chosen).
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
    """An ``mi_fn`` for :class:`MIGuided` from a neural estimator called as
    ``estimator(hidden (B,N,D), probs (B,N,V), entropy (B,N), masked (B,N)) -> (B, N, N)``."""

    def mi_fn(ctx) -> torch.Tensor:
        return estimator(ctx.hidden.float(), ctx.probs, ctx.entropy, ctx.masked)

    return mi_fn


@dataclass
class MIBudget(Strategy):
    """Base of the MI-guided strategies: parameters ``gamma`` (budget, nats), ``lam`` (weight of MI) and
    ``relative`` (charge ``MI / min(H_i, H_j)`` instead of MI; see the module docstring).

    info: ``mi`` ``(B, N, N)`` the MI used (float64, negatives clamped to 0), ``budget_spent`` ``(B,)``,
    ``entropy_spent`` ``(B,)`` (sum of H over the chosen), ``mi_spent`` ``(B,)`` (MI among the chosen).
    """

    gamma: float = 1.0
    lam: float = 1.0
    relative: bool = False

    def __post_init__(self):
        check_nonnegative("gamma", self.gamma)
        check_nonnegative("lam", self.lam)

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
    """MI-guided decoding with MI from ``mi_fn(ctx) -> (B, N, N)`` (no extra model pass).

    The MI source is either ``estimator``, the path of a trained estimator's weights (loaded onto the
    model's device by ``prepare``, which the loop calls before the first step; settable from the command
    line), or ``mi_fn``, set by code: ``make_strategy("mi", ..., mi_fn=...)`` or afterwards
    (``strategy.mi_fn = estimator_mi_fn(estimator)``). ``mi_fn`` wins when both are given.
    """

    estimator: str | None = None
    mi_fn: Callable | None = field(default=None, repr=False, compare=False, metadata={"runtime": True})

    def prepare(self, model, device) -> None:
        if self.mi_fn is None and self.estimator is not None:
            path = shipped_estimator_for(model) if self.estimator == SHIPPED else self.estimator
            estimator = load_estimator(path, device)
            check_model_match(model, estimator, "the model", f"the estimator {path}")
            check_trained_on(model, path)
            self.mi_fn = estimator_mi_fn(estimator)

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
    """MI-guided decoding with the exact probe's symmetrised MI (an upper bound, for analysis).

    Each step probes every unfinished row, all rows in one :func:`probe_many` call (``eps``, ``max_batch``
    go to the probe; ``eps = 0`` is exact). The probe's passes (at most ``1 + masked * |V|`` per row, its
    own base pass included) are counted apart from the decode passes: info adds ``probe_passes`` ``(B,)``
    for this step (0 for finished rows).
    """

    eps: float = 0.0
    max_batch: int = 512

    def __post_init__(self):
        super().__post_init__()
        if isinstance(self.eps, bool) or not isinstance(self.eps, (int, float)) or not 0 <= self.eps < 1:
            raise ValueError(f"eps must be in [0, 1), got {self.eps!r}")
        check_count("max_batch", self.max_batch)

    def mi_matrix(self, ctx) -> torch.Tensor:
        active = ctx.masked.any(1)
        many = probe_many(ctx.model, ctx.tokens, eps=self.eps, max_batch=self.max_batch)
        mi = many.mi.to(ctx.entropy.device)  # finished rows: nothing masked, MI 0
        spent = many.passes.to(ctx.entropy.device) * active  # a finished row's base pass is not charged
        ctx.extra_passes += spent
        ctx.info["probe_passes"] = spent
        return mi
