"""``train-order antibody``: the engine's in-filling order task (:mod:`mi_core.order.infill`) on the CDR in-filling
benchmark's start states (``bench antibody``: a chain with ``--region`` masked, its framework given), training on
the chains of ``--rows`` and validating on those of ``--tune-rows``; ``bench-order antibody`` scores the result on
held-out rows (71-100 by default)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mi_core.domains.antibody.infill import infill_chains, region_templates
from mi_core.domains.antibody.model import load, weights_folder
from mi_core.domains.antibody.sequence import AntibodyChain
from mi_core.domains.antibody.states import DEFAULT_CSV
from mi_core.domains.protein import MASK_ID
from mi_core.io import display_path
from mi_core.options import option
from mi_core.order.infill import InfillOrderTask

TRAIN_ROWS, TUNE_ROWS = "1-60", "61-70"  # both within the rows the shipped estimator trained on; 71-100 held out


@dataclass
class AntibodyOrderData:
    csv: Path = option(DEFAULT_CSV, "CSV (name,vh,vl) or FASTA file of antibodies")
    rows: str = option(TRAIN_ROWS, "antibodies trained on, 1-based A-B")
    tune_rows: str = option(TUNE_ROWS, "antibodies validated on (the best selector is kept by them), 1-based A-B; "
                            "they share no chain with --rows")
    region: str = option("cdr3", "what is masked and filled", choices=("cdr3", "cdrs", "cdr1", "cdr2"))
    chains: str = option("both", "heavy (H), light (L) or both", choices=("both", "H", "L"))


def weights_file(path: Path | str | None) -> Path:
    """AntiBERTy's ``pytorch_model.bin``: the installed one for None, ``auto`` or ``antiberty``, the one in a weights
    folder, else ``path`` itself (a folder without one too, so that loading names the folder the user gave); the file
    a selector's record hashes."""
    if path is None or str(path) in ("", "auto", "antiberty"):
        return weights_folder() / "pytorch_model.bin"
    path = Path(path)
    return path / "pytorch_model.bin" if (path / "pytorch_model.bin").is_file() else path


def known_chains(chains: list[AntibodyChain], given: str) -> list[AntibodyChain]:
    """``chains`` less those with an unknown residue (``X``), left out with a warning naming the first: training
    needs every masked residue's native, and an ``X`` is masked in the template too; ValueError when none is left."""
    known = [c for c in chains if not (c.tokens == MASK_ID).any()]
    if len(known) < len(chains):
        first = next(c for c in chains if (c.tokens == MASK_ID).any())
        where = int(np.flatnonzero(first.tokens == MASK_ID)[0]) + 1
        if not known:
            raise ValueError(f"{given}: every chain has an unknown residue (X), as {first.name!r} at {where}")
        print(f"warning: {given}: {len(chains) - len(known)} of {len(chains)} chains left out for an unknown residue "
              f"(X); the first: {first.name!r} at {where}", file=sys.stderr)
    return known


def check_apart(train: list[AntibodyChain], tune: list[AntibodyChain], rows: str, tune_rows: str) -> None:
    """ValueError when a validation chain is also trained on: the same antibody in both ranges, or the same
    sequence in another row (a light chain antibodies share)."""
    seen = {c.text(): c.name for c in train}
    shared = [c for c in tune if c.text() in seen]
    if not shared:
        return
    first = shared[0]
    if first.name == seen[first.text()]:
        raise ValueError(f"--rows {rows} and --tune-rows {tune_rows} share {len(shared)} chain(s), the first "
                         f"{first.name!r}: give rows apart")
    raise ValueError(f"--tune-rows {tune_rows} holds {len(shared)} chain(s) that --rows {rows} trains on under another "
                     f"name, the first {first.name!r} (as {seen[first.text()]!r}): pick ranges without them (or --chains H "
                     "or L)")


class AntibodyOrderTask(InfillOrderTask):
    """``train-order antibody``: see the module docstring. The denoiser is frozen (no ``--finetune``)."""

    options, domain = AntibodyOrderData, "antibody"
    budgets = (5, 10, 15, 20)  # docs/learned_order.md's runs give their own: 2,4,8 (CDR3), 4,8,16 (all CDRs)

    def load(self, path: Path, device):
        return load(path, device)[0]

    def save_denoiser(self, model, path: Path, meta: dict) -> None:
        raise ValueError("train-order antibody trains no denoiser: leave out --finetune")

    def run(self, args, cfg, model_path: Path, out: Path, log_path: Path, device) -> None:
        if cfg.finetune:  # refused before the data are read
            raise ValueError("train-order antibody trains the order nets over a frozen AntiBERTy: leave out --finetune")
        super().run(args, cfg, weights_file(model_path), out, log_path, device)

    def pairs(self, args) -> tuple:
        train = known_chains(infill_chains(args.csv, args.rows, args.chains), f"--rows {args.rows}")
        tune = known_chains(infill_chains(args.csv, args.tune_rows, args.chains, option="--tune-rows"),
                            f"--tune-rows {args.tune_rows}")
        check_apart(train, tune, args.rows, args.tune_rows)
        info = {"csv": display_path(args.csv), "rows": args.rows, "tune_rows": args.tune_rows,
                "region": args.region, "chains": args.chains}
        return ((region_templates(train, args.region), [c.tokens for c in train]),
                (region_templates(tune, args.region), [c.tokens for c in tune]), info)


ORDER_TASK = AntibodyOrderTask()
