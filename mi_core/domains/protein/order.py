"""Protein side of ``train-order``: the engine's sequence order task (:mod:`mi_core.order.sequences`) on
windows of the FASTA file's train split (validation on its val split)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mi_core.domains.protein import read_fasta, split_records
from mi_core.domains.protein.mdm import load_protein_mdm, save_protein_mdm
from mi_core.options import option
from mi_core.order.sequences import SequenceOrderTask, WindowOptions


@dataclass
class OrderData(WindowOptions):
    fasta: Path = option(Path("../shared/data/protein/cath-dataset-nonredundant-S40.fa"), "FASTA read with the "
                         "strict rule; training windows from its train split, validation from val")


class ProteinOrderTask(SequenceOrderTask):
    options, domain = OrderData, "protein"
    load, save_denoiser = staticmethod(load_protein_mdm), staticmethod(save_protein_mdm)

    def splits(self, args) -> tuple[list, list, dict]:
        splits = split_records(read_fasta(args.fasta, strict=True))
        return splits["train"], splits["val"], {"fasta": str(args.fasta)}


ORDER_TASK = ProteinOrderTask()
