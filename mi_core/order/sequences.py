"""``train-order`` for sequence domains: unconditional generation from all-mask windows of real sequences.

The start state is a fully masked sequence of length L, with L drawn uniformly from ``--lengths``, and x_0
is a window of that length cut from a training sequence. Every row of a batch has the same length, so no
padding enters the selector's row-level features.

Validation has no "solved" to count. It uses the teacher-forced log-likelihood of held-out windows under
the selector's own schedule (:func:`mi_core.order.elbo.schedule_loglik`), in nats per position, against
the same quantity under ``top_margin`` with ``steps=T``. This is the denoising term of the ELBO with the
inference schedule in place of Q, so it is deterministic and cheap.

A domain's order task subclasses :class:`SequenceOrderTask` with its data (``options``, :meth:`splits`)
and its model (:meth:`load`, :meth:`save_denoiser`): the protein domain's FASTA windows, the tests' toy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mi_core.options import option, parse_lengths
from mi_core.order.elbo import margin_choice, schedule_loglik, selector_choice
from mi_core.order.loop import OrderTrainConfig, make_validator, run_logged


def tokens_of(record) -> np.ndarray:
    """The token array of a sequence or of a record that holds one (``.tokens``)."""
    return getattr(record, "tokens", record)


def val_lengths(lo: int, hi: int) -> tuple[int, ...]:
    """Four validation lengths evenly spread over ``lo..hi`` (fewer when the range is narrower):
    ``(50, 67, 83, 100)`` for the benchmarks' 50-100."""
    return tuple(sorted({round(float(v)) for v in np.linspace(lo, hi, 4)}))


def window_draw(records: list, lo: int, hi: int, mask_id: int = 0):
    """``draw(rng, batch)``: one length L ~ U[lo, hi] per batch, and ``batch`` random windows of length L
    from sequences at least that long: ``(all-mask start (B, L), value indices of the window (B, L))``.

    Raises:
        ValueError: no sequence reaches ``hi`` residues, or a bad range.
    """
    if not 1 <= lo <= hi:
        raise ValueError(f"lengths must satisfy 1 <= lo <= hi, got {lo}-{hi}")
    seqs = [s for s in map(tokens_of, records) if len(s) >= lo and not (s == mask_id).any()]
    lens = np.array([len(s) for s in seqs])
    if not len(seqs) or lens.max() < hi:
        raise ValueError(f"no training sequence has {hi} positions; lower the upper length")

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
    """``per_length`` first windows (value indices) of each of ``lengths``, one tensor per length, from
    validation sequences without unknown (masked) positions, in order."""
    groups = []
    for n in lengths:
        rows = [s[:n] for s in map(tokens_of, records) if len(s) >= n and not (s == mask_id).any()]
        if len(rows) < per_length:
            raise ValueError(f"only {len(rows)} validation sequences reach {n} residues, need {per_length}")
        groups.append(torch.from_numpy(np.stack(rows[:per_length]).astype(np.int64) - 1))
    return groups


def make_validate(model, groups: list[torch.Tensor], budgets: tuple[int, ...], bf16: bool, frozen: bool = True):
    """``validate(selector) -> dict``: per budget, the teacher-forced log-likelihood per residue of the
    validation windows under the selector's threshold schedule (``val_T``), its mean passes, and the same
    for ``top_margin`` (``margin_T``, computed once while the denoiser is ``frozen``). ``val_mean`` averages
    ``val_T`` over budgets (higher is better)."""

    def score(choose, steps):
        device = model.device
        total, passes, residues = 0.0, 0.0, 0
        for target in groups:
            start = torch.full(target.shape, model.mask_id, dtype=torch.long, device=device)
            ll, used = schedule_loglik(model, start, target.to(device), choose, steps, bf16)
            total, passes = total + float(ll.sum()), passes + float(used.sum())
            residues += target.numel()
        return total / residues, passes / sum(len(g) for g in groups)

    return make_validator(budgets, lambda selector, t: score(selector_choice(selector), t),
                          lambda t: score(margin_choice, t)[0], frozen)


@dataclass
class WindowOptions:
    lengths: str = option("50-100", "LO-HI: window lengths drawn per batch")
    eval_per_length: int = option(16, "validation windows per length (4 lengths)", range=(1, 10_000_000))


class SequenceOrderTask:
    """The start states and validation of ``train-order`` for a sequence domain (``Domain.order_task``)."""

    options: type = WindowOptions
    domain: str

    def splits(self, args) -> tuple[list, list, dict]:
        """``(training sequences, validation sequences, what the run records about them)``."""
        raise NotImplementedError

    def load(self, path: Path, device):
        raise NotImplementedError

    def save_denoiser(self, model, path, meta) -> None:
        raise NotImplementedError

    def run(self, args, cfg: OrderTrainConfig, model_path: Path, out: Path, log_path: Path, device) -> None:
        lengths = parse_lengths(args.lengths)
        model = self.load(model_path, device)
        t0 = time.time()
        train, val, info = self.splits(args)
        draw = window_draw(train, *lengths, mask_id=model.mask_id)
        groups = validation_windows(val, args.eval_per_length, val_lengths(*lengths), mask_id=model.mask_id)
        validate = make_validate(model, groups, cfg.budgets, cfg.bf16, frozen=not cfg.finetune)
        header = (f"{len(train)} training sequences, {sum(len(g) for g in groups)} validation windows "
                  f"(lengths {val_lengths(*lengths)}) read in {time.time() - t0:.0f}s; frozen denoiser {model_path}")
        run_logged(model, draw, cfg, validate, out, log_path, args.eval_every, header,
                   {"domain": self.domain, "denoiser": str(model_path), **info, "lengths": list(lengths),
                    "eval_per_length": args.eval_per_length, "validation": "teacher-forced log-likelihood per position"},
                   init=args.init, save_denoiser=self.save_denoiser)
