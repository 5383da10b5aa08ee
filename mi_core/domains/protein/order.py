"""Protein side of ``train-order``: the engine's sequence order task (:mod:`mi_core.order.sequences`) on FASTA windows.

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

from dataclasses import dataclass
from pathlib import Path

from mi_core.domains.protein import read_fasta, split_records
from mi_core.domains.protein.mdm import load_protein_mdm, save_protein_mdm
from mi_core.options import option
from mi_core.order.sequences import (  # noqa: F401
    SequenceOrderTask,
    WindowOptions,
    make_validate,
    val_lengths,
    validation_windows,
    window_draw,
)


@dataclass
class OrderData(WindowOptions):
    """``train-order protein``: the windows it trains and validates on."""

    fasta: Path = option(Path("../shared/data/protein/cath-dataset-nonredundant-S40.fa"), "FASTA read with the "
                         "strict rule; training windows from its train split, validation from val")


class ProteinOrderTask(SequenceOrderTask):
    options, domain = OrderData, "protein"

    def splits(self, args) -> tuple[list, list, dict]:
        splits = split_records(read_fasta(args.fasta, strict=True))
        return splits["train"], splits["val"], {"fasta": str(args.fasta)}

    def load(self, path, device):
        return load_protein_mdm(path, device)

    def save_denoiser(self, model, path, meta) -> None:
        save_protein_mdm(model, path, meta)


ORDER_TASK = ProteinOrderTask()
