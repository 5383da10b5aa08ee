"""Protein side of ``train-order``: unconditional generation from all-mask windows of real sequences.

The start state is a fully masked sequence of length L, with L drawn uniformly from ``lengths`` (the
range the protein benchmarks generate, 50-100 by default), and x_0 is a window of that length cut from
a training-split sequence (``split_records``: the protein MDM's own training split). Every row of a batch
has the same length, so no padding enters the selector's row-level features.

Validation has no "solved" to count. It uses the teacher-forced log-likelihood of held-out val-split
windows under the selector's own schedule (:func:`mi_core.order.elbo.schedule_loglik`), in nats per
residue, against the same quantity under ``top_margin`` with ``steps=T``. This is the denoising term of
the ELBO with the inference schedule in place of Q, so it is deterministic and cheap. Generation
quality (JSD to the reference) is measured afterwards by ``bench-order protein``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mi_core.domains.protein import MASK_ID, ProteinRecord, read_fasta, split_records
from mi_core.domains.protein.mdm import load_protein_mdm, save_protein_mdm
from mi_core.options import option, parse_lengths
from mi_core.order.elbo import margin_choice, schedule_loglik, selector_choice
from mi_core.order.loop import OrderTrainConfig, make_validator, run_logged


def val_lengths(lo: int, hi: int) -> tuple[int, ...]:
    """Four validation lengths evenly spread over ``lo..hi`` (fewer when the range is narrower):
    ``(50, 67, 83, 100)`` for the benchmarks' 50-100."""
    return tuple(sorted({round(float(v)) for v in np.linspace(lo, hi, 4)}))


def window_draw(records: list[ProteinRecord], lo: int, hi: int):
    """``draw(rng, batch)``: one length L ~ U[lo, hi] per batch, and ``batch`` random windows of length L
    from sequences at least that long: ``(all-mask start (B, L), value indices of the window (B, L))``.

    Raises:
        ValueError: no sequence reaches ``hi`` residues, or a bad range.
    """
    if not 1 <= lo <= hi:
        raise ValueError(f"lengths must satisfy 1 <= lo <= hi, got {lo}-{hi}")
    seqs = [r.tokens for r in records if len(r.tokens) >= lo and not (r.tokens == MASK_ID).any()]
    lens = np.array([len(s) for s in seqs])
    if not len(seqs) or lens.max() < hi:
        raise ValueError(f"no training sequence has {hi} residues; lower the upper length")

    def draw(rng: np.random.Generator, batch: int):
        n = int(rng.integers(lo, hi + 1))
        pool = np.flatnonzero(lens >= n)
        rows = []
        for i in rng.choice(pool, size=batch, replace=len(pool) < batch):
            start = int(rng.integers(0, lens[i] - n + 1))
            rows.append(seqs[i][start:start + n])
        target = torch.from_numpy(np.stack(rows).astype(np.int64) - 1)
        return torch.full(target.shape, MASK_ID, dtype=torch.long), target

    return draw


def validation_windows(records: list[ProteinRecord], per_length: int, lengths: tuple[int, ...]) -> list[torch.Tensor]:
    """``per_length`` first windows (value indices) of each of ``lengths``, one tensor per length, from
    val-split sequences without X, in file order."""
    groups = []
    for n in lengths:
        rows = [r.tokens[:n] for r in records if len(r.tokens) >= n and not (r.tokens == MASK_ID).any()]
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
            start = torch.full(target.shape, MASK_ID, dtype=torch.long, device=device)
            ll, used = schedule_loglik(model, start, target.to(device), choose, steps, bf16)
            total, passes = total + float(ll.sum()), passes + float(used.sum())
            residues += target.numel()
        return total / residues, passes / sum(len(g) for g in groups)

    return make_validator(budgets, lambda selector, t: score(selector_choice(selector), t),
                          lambda t: score(margin_choice, t)[0], frozen)


@dataclass
class OrderData:
    """``train-order protein``: the windows it trains and validates on."""

    fasta: Path = option(Path("../shared/data/protein/cath-dataset-nonredundant-S40.fa"), "FASTA read with the "
                         "strict rule; training windows from its train split, validation from val")
    lengths: str = option("50-100", "LO-HI: window lengths drawn per batch")
    eval_per_length: int = option(16, "validation windows per length (4 lengths)", range=(1, 10_000_000))


options = OrderData


def run(args, cfg: OrderTrainConfig, model_path: Path, out: Path, log_path: Path, device) -> None:
    lengths = parse_lengths(args.lengths)
    model = load_protein_mdm(model_path, device)
    t0 = time.time()
    splits = split_records(read_fasta(args.fasta, strict=True))
    draw = window_draw(splits["train"], *lengths)
    groups = validation_windows(splits["val"], args.eval_per_length, val_lengths(*lengths))
    validate = make_validate(model, groups, cfg.budgets, cfg.bf16, frozen=not cfg.finetune)
    header = (f"{len(splits['train'])} training sequences, {sum(len(g) for g in groups)} validation windows "
              f"(lengths {val_lengths(*lengths)}) read in {time.time() - t0:.0f}s; frozen denoiser {model_path}")
    run_logged(model, draw, cfg, validate, out, log_path, args.eval_every, header,
               {"domain": "protein", "denoiser": str(model_path), "fasta": str(args.fasta), "lengths": list(lengths),
                "eval_per_length": args.eval_per_length, "validation": "teacher-forced log-likelihood per residue"},
               init=args.init, save_denoiser=save_protein_mdm)


__all__ = ["make_validate", "run", "val_lengths", "validation_windows", "window_draw"]
