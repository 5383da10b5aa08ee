"""The protein task of the MDM trainer (:mod:`mi_core.train.mdm`): ``python -m mi_core train protein --fasta PATH``.

The engine's sequence task (:mod:`mi_core.train.sequences`) on a FASTA file read with the strict rule (``X`` read
as masked and never scored) and split by ``split_of`` (a seeded hash of each header): the validation and reference
sets are never trained on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mi_core.domains.protein import read_fasta, split_records
from mi_core.domains.protein.mdm import ProteinMDM, save_protein_mdm
from mi_core.io import file_sha256
from mi_core.options import option
from mi_core.train.sequences import SequenceTask, SequenceTrainConfig

TrainConfig = SequenceTrainConfig


@dataclass
class FastaOption:
    fasta: Path = option(None, "training FASTA, e.g. ../shared/data/protein/cath-dataset-nonredundant-S40.fa",
                         required=True)


class ProteinTask(SequenceTask):
    name, model_cls, options = "protein_mdm", ProteinMDM, FastaOption
    save = staticmethod(save_protein_mdm)

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
