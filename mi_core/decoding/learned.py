"""Strategies from a selector P_psi trained by variational inference over generation orders (Fox et al.
2026; docs/learned_order.md, training in :mod:`mi_core.order`), within a budget of ``steps`` = T passes.

``learned`` modes: "threshold" (P >= ``threshold``) and "sample" (Bernoulli draws) always take the most
probable position and everything at step T - 1; "rank" takes the ``ceil(masked / steps left)`` most probable;
"paced" takes those above ``threshold`` but never fewer than "rank". ``learned_mi`` runs the MI-guided
acceptance of :mod:`mi_core.decoding.mi_guided` with the risk ``-log P_psi(i)`` in place of the entropy.
info: ``select_prob`` ``(B, N)``, ``count`` ``(B,)``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from mi_core.decoding.base import Strategy, param, rank_pick, register, uniform_count
from mi_core.decoding.mi_guided import MIGuided, loaded_for, mi_greedy, relative_mi
from mi_core.decoding.selector import check_order_net_fits, load_order_net, pick_positions, select_probabilities
from mi_core.domain import get_domain
from mi_core.mi.estimator import SHIPPED

MODES = ("sample", "threshold", "rank", "paced")


@register("learned")
@dataclass
class Learned(Strategy):
    """The learned generation order: a selector P_psi, trained by variational inference, gives each masked
    position a probability of being unmasked now; ``mode`` turns them into this pass's positions, within
    ``steps`` passes.

    ``net`` is set by code, or loaded from ``selector`` (a path)."""

    selector: str | None = None
    steps: int = param(10, "count")
    mode: str = "threshold"
    threshold: float = param(0.5, "unit")
    net: torch.nn.Module | None = field(default=None, repr=False, compare=False, metadata={"runtime": True})

    def __post_init__(self):
        super().__post_init__()
        if self.mode not in MODES:
            raise ValueError(f"mode must be 'sample', 'threshold', 'rank' or 'paced', got {self.mode!r}")

    def prepare(self, model, device) -> None:
        if self.net is not None and not loaded_for(self, "selector_loaded", model, device):
            self.net, self.selector = None, self.__dict__["selector_loaded"][2]  # read for another model: again
        if self.net is None:
            if self.selector is None:
                raise ValueError(f"strategy '{self.name}' has no selector: give selector=PATH (trained with "
                                 "`python -m mi_core train-order`), selector=shipped (the model's domain's) or set net")
            spec = self.selector
            if self.selector == SHIPPED:
                self.selector = shipped_selector(model)
            self.net = load_order_net(self.selector, device, role="selector")
            check_order_net_fits(self.net, model, self.selector)
            self.__dict__["selector_loaded"] = (weakref.ref(model), str(device), spec)
        else:
            check_order_net_fits(self.net, model)
        self.net.to(device)

    @torch.no_grad()
    def select(self, ctx) -> torch.Tensor:
        prob = select_probabilities(self.net, ctx.hidden, ctx.probs, ctx.masked, ctx.step, self.steps)
        if self.mode in ("rank", "paced"):
            counts = uniform_count(ctx.masked, self.steps - ctx.step)
            if self.mode == "paced":
                counts = torch.maximum(counts, ((prob >= self.threshold) & ctx.masked).sum(1))
            chosen = rank_pick(prob, ctx.masked, counts)
        else:
            chosen = pick_positions(prob, ctx.masked, ctx.step >= self.steps - 1, self.mode, self.threshold,
                                    ctx.generator)
        ctx.info["select_prob"] = prob
        ctx.info["count"] = chosen.sum(1)
        return chosen

    def pass_limit(self, n: int) -> int:
        return self.steps


def shipped_selector(model) -> str:
    """The order selector the domain of ``model`` (``load_model`` records it) ships or names by its variable."""
    domain = get_domain(model.domain) if isinstance(getattr(model, "domain", None), str) else None
    path = domain and domain.default_file("selector")
    if path is None:
        where = f"the {domain.label} domain ships none" if domain else "the model records no domain"
        raise ValueError(f"selector=shipped: {where}; give selector=PATH ({selector_source(domain)})")
    return str(Path(path).absolute())  # default_file names it from the working folder


def selector_source(domain) -> str:
    """Where an order selector for ``domain`` comes from: ``train-order``, unless it trains none for the domain."""
    if domain is not None and domain.order_task is None:
        return f"python -m mi_core train-order trains none for {domain.cli_name}"
    variable = f", and ${domain.selector_env} names it to the commands and the app" if domain and domain.selector_env else ""
    return f"python -m mi_core train-order makes one{variable}"


@register("learned_mi")
@dataclass
class LearnedMI(Strategy):
    """The selector's risk -log P(unmask) under the MI budget of ``mi``; selector fields as for ``learned``, MI
    fields as for ``mi``. info adds ``mi``, ``budget_spent``, ``mi_spent``."""

    selector: str | None = None
    steps: int = param(20, "count")
    gamma: float = param(1.0, "nonnegative")
    lam: float = param(0.5, "nonnegative")
    relative: bool = True
    estimator: str | None = None
    net: torch.nn.Module | None = field(default=None, repr=False, compare=False, metadata={"runtime": True})
    mi_fn: Callable | None = field(default=None, repr=False, compare=False, metadata={"runtime": True})

    def prepare(self, model, device) -> None:
        Learned.prepare(self, model, device)
        MIGuided.prepare(self, model, device)

    @torch.no_grad()
    def select(self, ctx) -> torch.Tensor:
        prob = select_probabilities(self.net, ctx.hidden, ctx.probs, ctx.masked, ctx.step, self.steps)
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

    pass_limit = Learned.pass_limit
