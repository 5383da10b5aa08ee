"""Generate protein sequences with any registered sampler and measure them against a reference set
(:class:`~mi_core.domains.protein.metrics.CompositionMetric`). Temperature defaults to 1.0: at 0 an all-mask
start is deterministic, so every sample of one length would be the same sequence."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch

from mi_core.bench.decode import Generation, RunName, decode_all
from mi_core.bench.report import frontier_text, markdown_table, update_section
from mi_core.bench.sweep import commands_text, n_text
from mi_core.domains.protein import MASK_ID, ProteinRecord, read_fasta, split_records
from mi_core.domains.protein.metrics import CompositionMetric
from mi_core.io import display_path
from mi_core.options import option, parse_lengths

REFERENCE_SPLITS = ("reference", "val", "train", "all")


def draw_lengths(n: int, lo: int, hi: int, seed: int = 0) -> list[int]:
    """``n`` lengths drawn uniformly from ``lo..hi`` inclusive by a generator seeded with ``seed``."""
    return np.random.default_rng(seed).integers(lo, hi + 1, size=n).tolist()


def metric_lengths(spec: str) -> tuple[int, int]:
    """``--lengths`` as ``(lo, hi)``; ValueError when no sequence could hold a dipeptide (``hi`` < 2), which the
    dipeptide JSD needs."""
    lo, hi = parse_lengths(spec)
    if hi < 2:
        raise ValueError(f"--lengths {spec}: sequences of one residue hold no dipeptide to compare; give lengths "
                         "of 2 or more")
    return lo, hi


def reference_set(path: str | Path, split: str = "reference", limit: int | None = None) -> list[ProteinRecord]:
    """The first ``limit`` records of one split (``"all"``: every record) of a FASTA read with the strict rule."""
    if split not in REFERENCE_SPLITS:
        raise ValueError(f"unknown reference split {split!r}; choose one of {', '.join(REFERENCE_SPLITS)}")
    records = read_fasta(path, strict=True)
    if split != "all":
        records = split_records(records)[split]
        if not records:
            raise ValueError(f"{path}: no sequence falls in the {split!r} split; use --reference-split all")
    return records[:limit] if limit else records


def as_templates(targets) -> list[np.ndarray]:
    """Lengths become all-mask templates; token arrays are kept as given (int64)."""
    out = []
    for t in targets:
        if isinstance(t, (int, np.integer)):
            if t < 1:
                raise ValueError(f"sequence length must be >= 1, got {t}")
            out.append(np.full(int(t), MASK_ID, dtype=np.int64))
            continue
        arr = np.asarray(t, dtype=np.int64)
        if arr.ndim != 1 or arr.size == 0 or arr.min() < 0 or arr.max() > 20:
            raise ValueError("a template must be a non-empty 1-D array of token ids 0..20 (0 = to generate)")
        out.append(arr)
    return out


def generate(model, targets, strategy, *, temperature: float = 1.0, seed: int = 0, batch_size: int = 64,
             device: torch.device | str = "cpu", bf16: bool = False, progress=None) -> Generation:
    """One sequence per target (a length: from all-mask; a token array ``(L,)`` with 0 where to generate),
    each batch with its own seed drawn from ``seed``."""
    return decode_all(model, as_templates(targets), strategy, temperature=temperature, seed=seed,
                      batch_size=batch_size, device=device, bf16=bf16, progress=progress, seeding="per batch")


@dataclass
class GenerationInput:
    samples: int = option(100, "how many sequences to generate", range=(1, 1_000_000))
    lengths: str = option("50-100", "N or LO-HI: lengths drawn uniformly (seeded) from this range")
    reference: Path = option(None, "FASTA file; read with the strict rule (non-standard letters skipped)",
                             required=True)
    reference_split: str = option("reference", "which seeded split of the FASTA is the reference (default: the "
                                  "held-out 'reference' split)", choices=REFERENCE_SPLITS)
    limit_reference: int | None = option(None, "use the first N reference sequences", range=(1, 10_000_000))
    model: str = option("auto", "auto (ESM-C when its weights are here, else the MDM), esmc, mdm or a weights path")


class GeneratedSequences:
    """``Domain.bench_inputs`` of proteins: all-mask sequences of seeded ``--lengths`` against a reference set."""

    temperature, batch_size, seeding, unit = 1.0, 64, "per batch", "seq"
    description = "Generate protein sequences from all-mask and measure them against a reference set."
    # budgets where the shipped protein MDM decodes in parallel (sweep of 2026-12-05, BENCHMARKS.md): eb gamma <= 2,
    # mi gamma <= 4 and threshold tau >= 0.5 unmasked one residue a pass, like sequential; its top probability at an
    # all-mask position is 0.094, so threshold goes from 1 pass at tau 0.09 to 23 at 0.1 and 48 at 0.11. Another
    # model (ESM-C) needs its own grid (--grid)
    sweep_grid = ["sequential", "topk:k=4,8,12", "top_margin:k=4,8,12", "eb:gamma=4,8,16,32",
                  "threshold:tau=0.09,0.1,0.11", "mask_predict", "mi:gamma=8,16,32;lam=1",
                  "mi:gamma=8,16,32;lam=1;relative=true", "random:steps=10"]

    @staticmethod
    def options(domain, sweep: bool = False) -> list:
        return [GenerationInput, *([RunName] if sweep else [])]

    def __init__(self, domain, args):
        lengths = draw_lengths(args.samples, *metric_lengths(args.lengths), args.seed)
        reference = reference_set(args.reference, args.reference_split, args.limit_reference)
        self.templates = as_templates(lengths)
        self.metric = partial(CompositionMetric, [r.tokens for r in reference], seed=args.seed)
        self.fields = {"lengths": args.lengths, "samples": args.samples, "reference": display_path(args.reference),
                       "reference_split": args.reference_split, "limit_reference": args.limit_reference}
        self.name = getattr(args, "name", None) or args.reference.stem
        self.source = f"--lengths {args.lengths}"

    @staticmethod
    def sweep_section(rows: list[dict], set_name: str, device, precision: str, cmd: str, markdown: Path) -> None:
        flat = [{**r, "identity": r["diversity"]["mean_identity"], "unique": r["diversity"]["unique_fraction"],
                 "ref_identity": r["diversity"].get("reference_mean_identity", float("nan")),
                 **{k: f"{r[k]:.4f}" for k in ("jsd_dipeptide", "jsd_aa", "jsd_dipeptide_floor", "jsd_aa_floor")},
                 "mean_passes": f"{r['mean_passes']:.1f}", "seconds": f"{r['seconds']:.0f}"} for r in rows]
        table = markdown_table(flat, [("sampler", "sampler"), ("params", "params"), ("n", "n"), ("mean_passes", "mean passes"),
                                      ("jsd_dipeptide", "JSD dipeptide (bits)"), ("jsd_aa", "JSD aa (bits)"),
                                      ("jsd_dipeptide_floor", "floor dipeptide"), ("jsd_aa_floor", "floor aa"),
                                      ("identity", "mean identity"), ("ref_identity", "ref. identity"),
                                      ("unique", "unique"), ("seconds", "seconds")])
        temps = ", ".join(sorted({str(r.get("temperature")) for r in rows}))
        update_section(f"sweep-protein-{set_name}",
                       f"### Protein sweep: {set_name} (n={n_text(rows)}, temperature {temps}, device {device.type}, {precision} forward passes)\n\n"
                       + commands_text(rows, cmd) + f"{table}\n\nIdentity: mean pairwise position-wise identity (unaligned, over the shorter length); "
                       "lower is more diverse; ref. identity is the reference set's own. Floor: the JSD between reference "
                       "sequences cut to the generated lengths and the rest of the reference (sampling noise alone).\n\n"
                       f"Frontier (dipeptide JSD vs passes): {frontier_text(rows, key='jsd_dipeptide', higher=False)}\n",
                       markdown)

