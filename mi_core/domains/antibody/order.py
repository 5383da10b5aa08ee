"""``train-order antibody``: the engine's in-filling order task (:mod:`mi_core.order.infill`) on the CDR in-filling
benchmark's start states (``bench antibody``: a chain with ``--region`` masked, its framework given), training on
the chains of ``--rows`` and validating on those of ``--tune-rows``; ``bench-order antibody`` scores the result on
held-out rows (71-100 by default)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mi_core.domains.antibody.infill import infill_chains, region_templates
from mi_core.domains.antibody.model import load, weights_folder
from mi_core.domains.antibody.states import DEFAULT_CSV
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
    folder, else ``path`` itself; the file a selector's record hashes."""
    if path is None or str(path) in ("", "auto", "antiberty"):
        return weights_folder() / "pytorch_model.bin"
    path = Path(path)
    return path / "pytorch_model.bin" if path.is_dir() else path


class AntibodyOrderTask(InfillOrderTask):
    """``train-order antibody``: see the module docstring. The denoiser is frozen (no ``--finetune``)."""

    options, domain = AntibodyOrderData, "antibody"

    def load(self, path: Path, device):
        return load(path, device)[0]

    def save_denoiser(self, model, path: Path, meta: dict) -> None:
        raise ValueError("train-order antibody trains no denoiser: leave out --finetune")

    def run(self, args, cfg, model_path: Path, out: Path, log_path: Path, device) -> None:
        if cfg.finetune:  # refused before the data are read
            raise ValueError("train-order antibody trains the order nets over a frozen AntiBERTy: leave out --finetune")
        super().run(args, cfg, weights_file(model_path), out, log_path, device)

    def pairs(self, args) -> tuple:
        train = infill_chains(args.csv, args.rows, args.chains)
        tune = infill_chains(args.csv, args.tune_rows, args.chains, option="--tune-rows")
        shared = {c.text() for c in train} & {c.text() for c in tune}
        if shared:
            raise ValueError(f"--rows {args.rows} and --tune-rows {args.tune_rows} share {len(shared)} chains: give "
                             "rows apart")
        info = {"csv": display_path(args.csv), "rows": args.rows, "tune_rows": args.tune_rows,
                "region": args.region, "chains": args.chains}
        return ((region_templates(train, args.region), [c.tokens for c in train]),
                (region_templates(tune, args.region), [c.tokens for c in tune]), info)


ORDER_TASK = AntibodyOrderTask()
