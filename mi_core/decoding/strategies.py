"""Dependency-blind strategies, ranking or thresholding positions one at a time. "info" lists the ``(B,)``
keys each writes into ``ctx.info``."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mi_core.decoding.base import FixedCount, Strategy, gumbel_like, param, rand_rows, rank_pick, register


@register("sequential")
@dataclass
class Sequential(Strategy):
    """One position per pass: the lowest-entropy masked position."""

    def select(self, ctx) -> torch.Tensor:
        return rank_pick(-ctx.entropy, ctx.masked, ctx.masked.any(1).long())


@register("random")
@dataclass
class Random(FixedCount):
    """The IID baseline: random masked positions from the loop's seeded generator. info: ``count``."""

    def score(self, ctx) -> torch.Tensor:
        return rand_rows(ctx.masked.shape, ctx.generator, ctx.masked.device)


@register("topk")
@dataclass
class TopK(FixedCount):
    """Naive parallel: the lowest-entropy masked positions. info: ``count``."""

    def score(self, ctx) -> torch.Tensor:
        return -ctx.entropy


@dataclass
class Confidence(FixedCount):
    """Confidence ranking (Kim et al. 2025), plus Gumbel noise of scale ``gumbel``. info: ``count``."""

    gumbel: float = param(0.0, "nonnegative")

    def confidence(self, ctx) -> torch.Tensor:
        raise NotImplementedError

    def score(self, ctx) -> torch.Tensor:
        score = self.confidence(ctx)
        if self.gumbel > 0:
            score = score + self.gumbel * gumbel_like(score, ctx.generator)
        return score


@register("top_prob")
@dataclass
class TopProb(Confidence):
    """The ``k`` masked positions with the highest top probability per pass."""

    def confidence(self, ctx) -> torch.Tensor:
        return ctx.probs.max(-1).values


@register("top_margin")
@dataclass
class TopMargin(Confidence):
    """The ``k`` masked positions with the largest gap between their two most probable values."""

    def confidence(self, ctx) -> torch.Tensor:
        top2 = ctx.probs.topk(2, dim=-1).values
        return top2[..., 0] - top2[..., 1]


@register("eb")
@dataclass
class EntropyBounded(Strategy):
    """EB-Sampler (Ben-Hamu et al. 2025): the longest entropy-sorted prefix U with
    ``sum_U H - max_U H <= gamma``. info: ``entropy_sum``, ``budget_spent`` (that sum minus the largest H)."""

    gamma: float = param(0.1, "nonnegative")

    def select(self, ctx) -> torch.Tensor:
        order = ctx.entropy.masked_fill(~ctx.masked, float("inf")).argsort(dim=1, stable=True)
        h = ctx.entropy.gather(1, order)
        # sorted ascending, the largest H of a prefix is its last, so sum - max is the exclusive cumsum
        before = h.cumsum(1) - h
        keep = (before <= self.gamma) & ctx.masked.gather(1, order)
        chosen = torch.zeros_like(ctx.masked).scatter(1, order, keep)
        spent = (h * keep).sum(1)
        ctx.info["entropy_sum"] = spent
        ctx.info["budget_spent"] = spent - (h * keep).amax(1)
        return chosen


@register("threshold")
@dataclass
class Threshold(Strategy):
    """Fast-dLLM (Wu et al. 2025): every position with top probability >= ``tau``, at least the most confident
    one. info: ``above``."""

    tau: float = param(0.9, "unit")

    def select(self, ctx) -> torch.Tensor:
        top = ctx.probs.max(-1).values
        above = (top >= self.tau) & ctx.masked
        ctx.info["above"] = above.sum(1)
        best = rank_pick(top, ctx.masked, ctx.masked.any(1).long())
        return above | best


@register("mask_predict")
@dataclass
class MaskPredict(Strategy):
    """Mask-Predict (Ghazvininejad et al. 2019), T = ``steps`` passes: fill every masked position, then mask
    again the ``ceil(M (T - 1 - t) / T)`` least confident of the M non-given ones. info: ``remask``."""

    steps: int = param(10, "count")

    def select(self, ctx) -> torch.Tensor:
        return ctx.masked

    def remask(self, ctx, tokens: torch.Tensor, confidence: torch.Tensor) -> torch.Tensor:
        free = ~ctx.given
        left = self.steps - 1 - ctx.step
        counts = torch.div(free.sum(1) * left + self.steps - 1, self.steps, rounding_mode="floor")
        counts = counts * ctx.masked.any(1)  # a finished row re-masks nothing
        ctx.info["remask"] = counts
        return rank_pick(-confidence, free, counts)

    def pass_limit(self, n: int) -> int:
        return self.steps

