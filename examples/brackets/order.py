"""``train-order brackets``: masked Dyck-2 words as start states, drawn as ``bench-order brackets`` reads them.

A batch is words of one even length L ~ U(``--lengths``) from the training nine tenths, each masked at a rate
t ~ U(0, 1) (:func:`~mi_core.domain.uniform_mask`, as the committed tuning and scored words were): the givens
break the all-mask state's symmetry, as a Sudoku puzzle's do. Validation decodes ``--eval-per-length`` masked
words of each even length from the held-out tenth (seed ``VAL_SEED`` + ``--seed``) with the selector and with
``top_margin`` at each T, and scores the fraction right (well-nested, givens kept: ``WellNestedMetric``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from brackets.words import MASK_ID, MAX_LEN, MIN_LEN, draw_word
from mi_core.decoding import decode_final, make_strategy
from mi_core.device import bf16_autocast
from mi_core.domain import uniform_mask
from mi_core.options import option, parse_lengths
from mi_core.order.loop import OrderTask, OrderTrainConfig

VAL_SEED = 20_000  # away from the seeds of tune_words.txt (1) and score_words.txt (2)


@dataclass
class WordStates:
    lengths: str = option(f"{MIN_LEN}-{MAX_LEN}", "N or LO-HI, even: word lengths drawn per batch (the lengths "
                          "bench-order decodes)")
    eval_per_length: int = option(40, "held-out validation states per even length", range=(1, 1_000_000))
    min_masked: int = option(1, "fewest masked positions of a state", range=(1, MAX_LEN))


def even_lengths(text: str, max_len: int, min_masked: int = 1) -> tuple[int, int]:
    """``(LO, HI)`` of ``--lengths``; ValueError unless both are even (a bracket word's length), HI at most
    ``max_len`` and LO at least ``min_masked``."""
    lo, hi = parse_lengths(text)
    odd = sorted({n for n in (lo, hi) if n % 2})
    if odd:
        raise ValueError(f"--lengths {text}: a bracket word has an even length, and {' and '.join(map(str, odd))} "
                         f"{'is' if len(odd) == 1 else 'are'} odd: give even N or LO-HI (e.g. {MIN_LEN}-{MAX_LEN}, "
                         "the lengths bench-order decodes)")
    if hi > max_len:
        raise ValueError(f"--lengths {text}: words of {hi} positions, longer than the {max_len} the model takes; "
                         f"give --lengths LO-HI with HI at most {max_len}")
    if lo < min_masked:
        raise ValueError(f"--lengths {text}: a word of {lo} cannot have --min-masked {min_masked} masked positions")
    return lo, hi


def state_draw(lo: int, hi: int, min_masked: int):
    """``draw(rng, batch) -> (start (B, L) token ids, word (B, L) value indices)``: masked training-split words of
    one even length L ~ U{lo, lo + 2, ..., hi} per batch."""

    def draw(rng: np.random.Generator, batch: int):
        n = 2 * int(rng.integers(lo // 2, hi // 2 + 1))
        words = np.stack([draw_word(rng, "train", (n, n)) for _ in range(batch)])
        starts = np.stack([uniform_mask(w, rng, min_masked, MASK_ID) for w in words])
        return torch.from_numpy(starts), torch.from_numpy(words - 1)

    return draw


def validation_states(lo: int, hi: int, per_length: int, min_masked: int, seed: int) -> list[torch.Tensor]:
    """``per_length`` masked held-out words of each even length ``lo..hi``, a ``(per_length, L)`` tensor each."""
    rng = np.random.default_rng(VAL_SEED + seed)
    return [torch.from_numpy(np.stack([uniform_mask(draw_word(rng, "heldout", (n, n)), rng, min_masked, MASK_ID)
                                       for _ in range(per_length)])) for n in range(lo, hi + 1, 2)]


def decode_score(model, groups: list[torch.Tensor], metric_cls, bf16: bool):
    """``score(selector, T) -> (fraction right, mean passes)`` of ``groups`` decoded by ``learned`` (threshold
    mode) with ``selector``, or ``top_margin`` where it is None, at ``steps=T``."""

    @torch.no_grad()
    def score(selector, steps: int) -> tuple[float, float]:
        strategy = (make_strategy("top_margin", steps=steps) if selector is None
                    else make_strategy("learned", steps=steps, net=selector))
        metric = metric_cls(None, mask_id=model.mask_id)
        for states in groups:
            with bf16_autocast(model.device, bf16):
                final = decode_final(model, states.to(model.device), strategy)
            for i, (start, end, passes) in enumerate(zip(states, final.tokens.cpu(), final.passes.tolist())):
                metric.update(i, start.numpy(), end.numpy(), passes)
        res = metric.compute()
        return res["accuracy"], res["mean_passes"]

    return score


class BracketsOrderTask(OrderTask):
    """``Domain.order_task`` of brackets: :func:`state_draw` to train on, :func:`decode_score` to validate.
    A subclass sets ``domain``, ``load``, ``save_denoiser`` and ``metric`` (the domain's metric class)."""

    options = WordStates
    metric: type
    budgets = (3, 5)  # a word has 8-16 positions, about 6 masked; examples/README.md's runs

    def positions(self, args, model) -> int:
        """The longest word of ``--lengths``."""
        return even_lengths(args.lengths, model.max_len, args.min_masked)[1]

    def data(self, args, cfg: OrderTrainConfig, model) -> tuple:
        lo, hi = even_lengths(args.lengths, model.max_len, args.min_masked)
        groups = validation_states(lo, hi, args.eval_per_length, args.min_masked, cfg.seed)
        header = (f"masked words of lengths {lo}-{hi} drawn from the training nine tenths; "
                  f"{sum(len(g) for g in groups)} held-out validation states (lengths {lo}-{hi}, even)")
        return state_draw(lo, hi, args.min_masked), decode_score(model, groups, self.metric, cfg.bf16), header, {
            "lengths": [lo, hi], "eval_per_length": args.eval_per_length, "min_masked": args.min_masked,
            "states": "words of the training nine tenths masked at t ~ U(0, 1)",
            "validation": "fraction of held-out masked words decoded well-nested with every given kept"}
