"""``bench antibody``: mask a chain's CDRs (``--region``), let a sampler fill them back (greedy by default, one
seed per chain) and score amino-acid recovery, the share of filled residues equal to the native ones, against the
model passes spent."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mi_core.bench.decode import RunName
from mi_core.bench.metrics import pass_stats
from mi_core.bench.report import markdown_table, update_section
from mi_core.bench.sweep import commands_text
from mi_core.domains.antibody.sequence import AntibodyChain, read_file, select_rows
from mi_core.domains.antibody.states import DEFAULT_CSV, EVAL_ROWS, rows_of
from mi_core.domains.protein import MASK_ID
from mi_core.io import display_path
from mi_core.options import option


def mean_se(values) -> tuple[float, float]:
    """Mean and standard error (0 for one value)."""
    x = np.asarray(values, dtype=float)
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else 0.0


class RecoveryMetric:
    """Recovery of the native tokens ``natives[i]`` of chain ``i`` (type ``chains[i]``): ``recovery`` (mean over
    chains) and its ``recovery_se``, ``recovery_pooled`` (over residues), per chain type, and pass statistics. Only
    filled residues with a known native count (an ``X`` in the native is filled but has nothing to recover)."""

    needs_solution = True
    score = "recovery"  # the headline column of a report (bench-order's table)

    def __init__(self, natives, chains=None, mask_id: int = MASK_ID):
        self.natives = [np.asarray(n) for n in natives]
        self.chains = list(chains) if chains is not None else [None] * len(self.natives)
        self.mask_id = mask_id
        self.rows: dict[int, tuple] = {}  # index -> (right, masked, passes, extra)

    def update(self, index: int, start: np.ndarray, final: np.ndarray, passes: int, extra: int = 0) -> None:
        masked = (np.asarray(start) == self.mask_id) & (self.natives[index] != self.mask_id)
        right = int(((np.asarray(final) == self.natives[index]) & masked).sum())
        self.rows[index] = (right, int(masked.sum()), int(passes), int(extra))

    def per_chain(self, idx: list[int] | None = None) -> list[float]:
        """Each chain's recovery (of ``idx``, default all in order): the share of its counted residues right."""
        return [r / max(1, m) for r, m, _, _ in (self.rows[i] for i in (sorted(self.rows) if idx is None else idx))]

    def _summary(self, idx: list[int]) -> dict:
        rows = [self.rows[i] for i in idx]
        rec, se = mean_se(self.per_chain(idx))
        passes, passes_se = mean_se([p for _, _, p, _ in rows])
        return {"n": len(rows), "recovery": rec, "recovery_se": se,
                "recovery_pooled": sum(r for r, *_ in rows) / max(1, sum(m for _, m, *_ in rows)),
                "mean_masked": float(np.mean([m for _, m, _, _ in rows])), "mean_passes_se": passes_se,
                "passes_per_residue": float(np.mean([p / max(1, m) for _, m, p, _ in rows])),
                **pass_stats([p for *_, p, _ in rows], [e for *_, e in rows])}

    def compute(self) -> dict:
        order = sorted(self.rows)
        out = self._summary(order)
        kinds = sorted({self.chains[i] for i in order if self.chains[i]})
        if kinds:
            out["by_chain"] = {k: self._summary([i for i in order if self.chains[i] == k]) for k in kinds}
        return out


def infill_chains(csv, rows: str, which: str = "both", limit: int | None = None,
                  option: str = "--rows") -> list[AntibodyChain]:
    """The chains of antibodies ``rows`` of ``csv`` (``which``: both, H or L), the first ``limit`` (None: all);
    ``option``: the option that gave ``rows``, named in the errors."""
    chains = select_rows(read_file(csv), rows, option)
    if which != "both":
        chains = [c for c in chains if c.chain == which]
    chains = chains[:limit]
    if not chains:
        raise ValueError(f"{csv}: no {which} chains in {option} {rows}")
    return chains


def region_templates(chains: list[AntibodyChain], region: str) -> list[np.ndarray]:
    """Each chain's tokens ``(L,)`` with ``region`` (cdr3, cdrs, ...) masked."""
    templates = [c.tokens.copy() for c in chains]
    for t, c in zip(templates, chains):
        t[c.positions(region)] = MASK_ID
    return templates


@dataclass
class InfillInput:
    csv: Path = option(DEFAULT_CSV, "CSV (name,vh,vl) or FASTA file of antibodies")
    rows: str = option(EVAL_ROWS, f"antibodies used, 1-based A-B or all (default: {EVAL_ROWS} of the shipped set, "
                       "held out from the shipped estimator's training; all of another --csv)")
    region: str = option("cdr3", "what to mask and fill", choices=("cdr3", "cdrs", "cdr1", "cdr2"))
    chains: str = option("both", "heavy (H), light (L) or both", choices=("both", "H", "L"))
    limit: int | None = option(None, "use the first N chains", range=(1, 10_000_000))


@dataclass
class InfillModel:
    model: str = option("auto", "auto (the installed AntiBERTy) or a folder with its weights")


class CDRInfill:
    """``Domain.bench_inputs`` of antibodies: every chain of ``--csv`` rows ``--rows`` with ``--region`` masked."""

    temperature, batch_size, seeding, unit = 0.0, 8, "per item", "chain"
    description = "Fill the CDRs of antibody chains back in and score amino-acid recovery against passes."

    @staticmethod
    def options(domain, sweep: bool = False) -> list:
        return [InfillInput, InfillModel, *([RunName] if sweep else [])]

    def __init__(self, domain, args):
        args.rows = rows_of(args)  # recorded as run
        chains = infill_chains(args.csv, args.rows, args.chains, args.limit)
        self.templates = region_templates(chains, args.region)
        self.natives, kinds = [c.tokens for c in chains], [c.chain for c in chains]
        self.metric = lambda: RecoveryMetric(self.natives, kinds)
        self.fields = {"csv": display_path(args.csv), "rows": args.rows, "region": args.region,
                       "chains": args.chains, "limit": args.limit, "chain_names": [c.name for c in chains]}
        self.name = getattr(args, "name", None) or f"{Path(args.csv).stem}_{args.region}"
        self.source = f"--csv {display_path(args.csv)}"

    @staticmethod
    def sweep_section(rows: list[dict], set_name: str, device, precision: str, cmd: str, markdown: Path) -> None:
        """The sweep's table of recovery (mean over chains, its standard error, pooled over residues) against
        passes."""
        flat = [{**r, "recovery": f"{r['recovery']:.3f} ± {r['recovery_se']:.3f}",
                 "pooled": f"{r['recovery_pooled']:.3f}", "mean_passes": f"{r['mean_passes']:.1f}",
                 "seconds": f"{r['seconds']:.0f}"} for r in rows]
        table = markdown_table(flat, [("sampler", "sampler"), ("params", "params"), ("n", "chains"),
                                      ("recovery", "recovery ± SE"), ("pooled", "pooled recovery"),
                                      ("mean_passes", "mean passes"), ("seconds", "seconds")])
        update_section(f"sweep-antibody-{set_name}", f"### Antibody sweep: {set_name} (device {device.type}, "
                       f"{precision} forward passes)\n\n{commands_text(rows, cmd)}{table}\n", markdown)
