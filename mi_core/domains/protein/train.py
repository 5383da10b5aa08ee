"""The protein task of the MDM trainer (:mod:`mi_core.train.mdm`): ``python -m mi_core train protein --fasta PATH``.

The engine's sequence task (:mod:`mi_core.train.sequences`) on a FASTA file read with the strict rule (``X`` read
as masked and never scored) and split by ``split_of`` (a seeded hash of each header): the validation and reference
sets are never trained on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mi_core.domains.protein import read_fasta, split_records
from mi_core.domains.protein.mdm import PROTEIN_MDM
from mi_core.domains.protein.states import DEFAULT_FASTA
from mi_core.io import file_sha256
from mi_core.options import option, redefault
from mi_core.order.sequences import SequenceOrderTask, WindowOptions
from mi_core.train.sequences import SequenceTask, SequenceTrainConfig


@dataclass
class FastaOption:
    fasta: Path = option(None, "training FASTA, e.g. ../shared/data/protein/cath-dataset-nonredundant-S40.fa",
                         required=True)


@dataclass(frozen=True)
class ProteinTrainConfig(SequenceTrainConfig):
    min_len: int = redefault(SequenceTrainConfig, "min_len", 30)


class ProteinTask(SequenceTask):
    name, model_cls, options = "protein_mdm", PROTEIN_MDM.model_cls, FastaOption
    train_config, save = ProteinTrainConfig, PROTEIN_MDM.save

    def read_data(self, args: dict, cfg: SequenceTrainConfig, log) -> tuple[list, list, dict]:
        self.fasta = fasta = Path(args["fasta"])
        records = read_fasta(fasta, strict=True, max_length=100_000)
        splits = split_records(records, cfg.split_seed)
        train = [r.tokens for r in splits["train"] if r.length >= cfg.min_len]
        log(f"{len(records)} sequences (X read as masked): train {len(train)} (>= {cfg.min_len} residues), "
            f"val {len(splits['val'])} (evaluating {min(cfg.eval_sequences, len(splits['val']))}), "
            f"reference {len(splits['reference'])}")
        data = {"fasta": fasta.name, "train": len(train), "val": len(splits["val"]), "reference": len(splits["reference"])}
        return train, [r.tokens for r in splits["val"]], data

    def fingerprint(self) -> str:
        return file_sha256(self.fasta)


@dataclass
class OrderData(WindowOptions):
    lengths: str = redefault(WindowOptions, "lengths", "50-100", "N or LO-HI: window lengths drawn per batch")
    fasta: Path = option(DEFAULT_FASTA, "FASTA read with the strict rule; training windows from its train split, "
                         "validation from val")


class ProteinOrderTask(SequenceOrderTask):
    """``train-order protein``: the engine's sequence order task on windows of the FASTA file's train split
    (validation on its val split)."""

    options, domain = OrderData, "protein"
    budgets = (5, 10, 15, 20)  # the budgets of docs/learned_order.md's protein run and benchmark
    load, save_denoiser = PROTEIN_MDM.load, PROTEIN_MDM.save

    def splits(self, args) -> tuple[list, list, dict]:
        splits = split_records(read_fasta(args.fasta, strict=True))
        return splits["train"], splits["val"], {"fasta": str(args.fasta)}
