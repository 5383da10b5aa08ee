"""The ``learned`` strategy: a selector P_psi trained by variational inference over generation orders
(Fox et al. 2026; the derivation is in docs/learned_order.md, the training in :mod:`mi_core.order`).

At step t of a budget of ``steps`` = T, the selector turns the loop's forward pass (hidden states and
marginals) into a probability per masked position; the strategy takes those with probability >=
``threshold`` (mode "threshold") or a Bernoulli draw from the loop's seeded generator (mode "sample"),
always the most probable one, and every masked position at step T - 1. So a row takes at most T passes.
Mode "rank" uses the selector only to order positions: it takes the ``ceil(masked / steps left)`` most
probable ones, the same count per step as ``top_margin`` with ``steps=T``, so exactly T passes. (The
trained selector tends to finish early under threshold, which leaves budget unused: see BENCHMARKS.md.)
Mode "paced" lets the selector choose both: it takes the positions with probability >= ``threshold``
but never fewer than rank mode's ``ceil(masked / steps left)``, the most probable first, so confident
steps go wider and no step falls behind a uniform schedule (threshold 0.9 was chosen on a tuning
slice of the Kaggle graded set, docs/learned_order.md).

info: ``select_prob`` ``(B, N)`` the selector's probability at each masked position (0 elsewhere),
``count`` ``(B,)`` positions chosen.

``learned_mi`` joins the two halves of MI Lens: the selector says how safe each position is to unmask now,
the MI estimator says which positions depend on each other. It runs the MI-guided acceptance of
:mod:`mi_core.decoding.mi_guided` with the selector's risk ``-log P_psi(i)`` in place of the entropy:
positions are visited from the most to the least probable, and i is accepted while
``-log p_i + lam * sum_{j accepted} MI(i, j)`` (MI / min(H_i, H_j) with ``relative``) fits the remaining
budget ``gamma``; the most probable is always taken, and every masked position at step T - 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from mi_core.decoding.base import Strategy, check_count, check_nonnegative, rank_pick, uniform_count
from mi_core.decoding.mi_guided import MIGuided, mi_greedy, relative_mi
from mi_core.decoding.registry import register
from mi_core.decoding.selector import check_order_net_fits, load_order_net, pick_positions, select_probabilities

MODES = ("sample", "threshold", "rank", "paced")


@register("learned")
@dataclass
class Learned(Strategy):
    """Positions from a trained order selector. ``selector``: path of its weights (loaded by ``prepare``)
    or ``net``, a selector module set by code (wins when both are given)."""

    selector: str | None = None
    steps: int = 10
    mode: str = "threshold"
    threshold: float = 0.5
    net: torch.nn.Module | None = field(default=None, repr=False, compare=False, metadata={"runtime": True})

    def __post_init__(self):
        check_count("steps", self.steps)
        if self.mode not in MODES:
            raise ValueError(f"mode must be 'sample', 'threshold', 'rank' or 'paced', got {self.mode!r}")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)) \
                or not 0 < self.threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold!r}")

    def prepare(self, model, device) -> None:
        if self.net is None:
            if self.selector is None:
                raise ValueError(f"strategy '{self.name}' has no selector: give selector=PATH (trained with "
                                 "`python -m mi_core train-order`) or set net")
            self.net = load_order_net(self.selector, device, role="selector")
            check_order_net_fits(self.net, model, self.selector)
        else:
            check_order_net_fits(self.net, model)
        self.net.to(device)

    @torch.no_grad()
    def select(self, ctx) -> torch.Tensor:
        prob = selector_probabilities(self.net, ctx, self.steps)
        if self.mode == "rank":
            chosen = rank_pick(prob, ctx.masked, uniform_count(ctx.masked, self.steps - ctx.step))
        elif self.mode == "paced":
            floor = uniform_count(ctx.masked, self.steps - ctx.step)
            wide = ((prob >= self.threshold) & ctx.masked).sum(1)
            chosen = rank_pick(prob, ctx.masked, torch.maximum(floor, wide))
        else:
            chosen = pick_positions(prob, ctx.masked, ctx.step >= self.steps - 1, self.mode, self.threshold,
                                    ctx.generator)
        ctx.info["select_prob"] = prob
        ctx.info["count"] = chosen.sum(1)
        return chosen

    def pass_limit(self, n: int) -> int:
        return self.steps


@register("learned_mi")
@dataclass
class LearnedMI(Strategy):
    """The selector's risk -log P(unmask) with the MI budget of ``mi`` (see the module docstring).

    ``selector``/``net`` and ``steps`` as for ``learned``; ``gamma`` (budget: nats of risk plus weighted
    MI), ``lam`` and ``relative`` as for ``mi``; MI from ``estimator`` (path) or ``mi_fn`` (set by code).
    info: ``select_prob``, ``count``, ``mi`` (float64), ``budget_spent``, ``mi_spent`` (charged MI among
    the chosen).
    """

    selector: str | None = None
    steps: int = 20
    gamma: float = 1.0
    lam: float = 0.5
    relative: bool = True
    estimator: str | None = None
    net: torch.nn.Module | None = field(default=None, repr=False, compare=False, metadata={"runtime": True})
    mi_fn: Callable | None = field(default=None, repr=False, compare=False, metadata={"runtime": True})

    def __post_init__(self):
        check_count("steps", self.steps)
        check_nonnegative("gamma", self.gamma)
        check_nonnegative("lam", self.lam)

    def prepare(self, model, device) -> None:
        Learned.prepare(self, model, device)
        MIGuided.prepare(self, model, device)

    @torch.no_grad()
    def select(self, ctx) -> torch.Tensor:
        prob = selector_probabilities(self.net, ctx, self.steps)
        mi = MIGuided.mi_matrix(self, ctx).to(prob.device).double().clamp_min(0.0)
        charged = relative_mi(mi, ctx.entropy) if self.relative else mi
        if ctx.step >= self.steps - 1:  # the budget's last step: everything left
            chosen = ctx.masked.clone()
            spent = torch.zeros(len(prob), dtype=torch.float64, device=prob.device)
            mi_spent = (torch.triu(charged, diagonal=1) * (chosen[:, :, None] & chosen[:, None, :])).sum((1, 2))
        else:
            chosen, spent, mi_spent = mi_greedy(-prob.clamp_min(1e-12).log(), charged, ctx.masked, self.gamma,
                                                self.lam)
        ctx.info.update(select_prob=prob, count=chosen.sum(1), mi=mi, budget_spent=spent, mi_spent=mi_spent)
        return chosen

    def pass_limit(self, n: int) -> int:
        return self.steps


def selector_probabilities(net, ctx, steps: int) -> torch.Tensor:
    """``(B, N)`` the selector's P(unmask) at each masked position of the loop's state (0 elsewhere)."""
    return select_probabilities(net, ctx.hidden, ctx.probs, ctx.masked, ctx.step, steps)
