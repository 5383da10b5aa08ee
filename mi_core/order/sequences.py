"""``train-order`` for sequence domains: unconditional generation from all-mask windows of real sequences.

Each batch has one length L ~ U(``--lengths``), with x_0 a window of that length from a training sequence
(``--lengths`` unset: from the shortest training sequence to the longest, at most the model's length; a domain
gives its own default by redefining the field, ``lengths: str = redefault(WindowOptions, "lengths", "50-100")``).
Validation: the teacher-forced log-likelihood per position of held-out windows under the selector's own
schedule (:func:`mi_core.order.elbo.schedule_loglik`), against that under ``top_margin`` with ``steps=T``.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass

import numpy as np
import torch

from mi_core.options import option, parse_lengths
from mi_core.order.elbo import margin_choice, schedule_loglik, selector_choice
from mi_core.order.loop import OrderTask, OrderTrainConfig


def tokens_of(record) -> np.ndarray:
    return getattr(record, "tokens", record)


def val_lengths(lo: int, hi: int) -> tuple[int, ...]:
    """Four validation lengths evenly spread over ``lo..hi``: ``(50, 67, 83, 100)`` for 50-100."""
    return tuple(sorted({round(float(v)) for v in np.linspace(lo, hi, 4)}))


def window_draw(records: list, lo: int, hi: int, mask_id: int = 0):
    """``draw(rng, batch) -> (all-mask start (B, L), value indices (B, L))`` of random windows, L ~ U[lo, hi]."""
    if not 1 <= lo <= hi:
        raise ValueError(f"lengths must satisfy 1 <= lo <= hi, got {lo}-{hi}")
    seqs = [s for s in map(tokens_of, records) if len(s) >= lo and not (s == mask_id).any()]
    lens = np.array([len(s) for s in seqs])
    if not len(seqs) or lens.max() < hi:
        longest = max((len(s) for s in map(tokens_of, records)), default=0)
        raise ValueError(f"--lengths {lo}-{hi}: no training sequence has {hi} positions (the longest has {longest}); "
                         f"give --lengths LO-HI with HI at most {longest}")

    def draw(rng: np.random.Generator, batch: int):
        n = int(rng.integers(lo, hi + 1))
        pool = np.flatnonzero(lens >= n)
        rows = []
        for i in rng.choice(pool, size=batch, replace=len(pool) < batch):
            start = int(rng.integers(0, lens[i] - n + 1))
            rows.append(seqs[i][start:start + n])
        target = torch.from_numpy(np.stack(rows).astype(np.int64) - 1)
        return torch.full(target.shape, mask_id, dtype=torch.long), target

    return draw


def validation_windows(records: list, per_length: int, lengths: tuple[int, ...], mask_id: int = 0) -> list[torch.Tensor]:
    """The first ``per_length`` windows (value indices) of each length, from sequences with no unknown position."""
    groups = []
    for n in lengths:
        rows = [s[:n] for s in map(tokens_of, records) if len(s) >= n and not (s == mask_id).any()]
        if len(rows) < per_length:
            raise ValueError(f"only {len(rows)} validation sequences reach {n} positions, need {per_length}: give "
                             "shorter --lengths LO-HI or fewer --eval-per-length")
        groups.append(torch.from_numpy(np.stack(rows[:per_length]).astype(np.int64) - 1))
    return groups


def window_score(model, groups: list[torch.Tensor], bf16: bool):
    """``score(selector, T) -> (log-likelihood per residue, mean passes)`` of ``groups`` for
    :func:`~mi_core.order.loop.make_validator` (``selector`` None: ``top_margin``)."""

    def score(selector, steps):
        choose = margin_choice if selector is None else selector_choice(selector)
        total, passes, residues = 0.0, 0.0, 0
        for target in groups:
            start = torch.full(target.shape, model.mask_id, dtype=torch.long, device=model.device)
            ll, used = schedule_loglik(model, start, target.to(model.device), choose, steps, bf16)
            total, passes = total + float(ll.sum()), passes + float(used.sum())
            residues += target.numel()
        return total / residues, passes / sum(len(g) for g in groups)

    return score


def default_lengths(records: list, max_len: int) -> tuple[int, int]:
    """``(shortest, longest)`` of the training sequences, both at most ``max_len``."""
    lens = [len(tokens_of(r)) for r in records]
    if not lens:
        raise ValueError("no training sequences to draw windows from")
    hi = min(max(lens), max_len)
    return min(min(lens), hi), hi


@dataclass
class WindowOptions:
    lengths: str | None = option(None, "N or LO-HI: window lengths drawn per batch (unset: the training sequences' "
                                 "shortest to longest, at most the model's length)")
    eval_per_length: int = option(16, "validation windows per length (up to 4 lengths spread over --lengths)",
                                 range=(1, 10_000_000))


class SequenceOrderTask(OrderTask):
    """``Domain.order_task`` of a sequence domain: a subclass gives :meth:`splits`, ``load`` and
    ``save_denoiser``, and may give ``options`` (a :class:`WindowOptions` subclass: more flags, or another
    default ``--lengths``)."""

    options: type = WindowOptions

    @abstractmethod
    def splits(self, args) -> tuple[list, list, dict]:
        """``(train records, val records, info)``: the sequences windows are drawn from."""
        raise NotImplementedError

    def read_splits(self, args) -> tuple[list, list, dict]:
        """:meth:`splits` read once for ``args`` (:meth:`~mi_core.order.loop.OrderTask.once`)."""
        return self.once(args, lambda: self.splits(args))

    def positions(self, args, model) -> int:
        """The longest window: ``--lengths``' HI, else the longest training sequence (at most the model's length;
        :meth:`splits` read for it), not the model's ``max_len`` (256 by default), which would derive budgets of
        16 passes and more for windows of 16 positions."""
        if args.lengths is not None:
            return parse_lengths(args.lengths)[1]
        return default_lengths(self.read_splits(args)[0], model.max_len)[1]

    def data(self, args, cfg: OrderTrainConfig, model) -> tuple:
        given = None if args.lengths is None else parse_lengths(args.lengths)  # a bad value fails before the data load
        if given is not None and given[1] > model.max_len:
            raise ValueError(f"--lengths {args.lengths}: windows of {given[1]} positions, longer than the "
                             f"{model.max_len} the model takes; give --lengths LO-HI with HI at most {model.max_len}")
        train, val, info = self.read_splits(args)
        self._read = None
        lengths = given or default_lengths(train, model.max_len)
        draw = window_draw(train, *lengths, mask_id=model.mask_id)
        groups = validation_windows(val, args.eval_per_length, val_lengths(*lengths), mask_id=model.mask_id)
        header = (f"{len(train)} training sequences, {sum(len(g) for g in groups)} validation windows "
                  f"(lengths {val_lengths(*lengths)}) read")
        return draw, window_score(model, groups, cfg.bf16), header, {
            **info, "lengths": list(lengths), "eval_per_length": args.eval_per_length,
            "validation": "teacher-forced log-likelihood per position"}
