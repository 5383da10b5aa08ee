"""The protein task of the MDM trainer (:mod:`mi_core.train.mdm`): ``python -m mi_core train protein --fasta PATH``.

Data: the FASTA file split by ``mi_core.domains.protein.split_of`` (a seeded hash of each header): the
validation and reference sets are never trained on. ``X`` residues are read as masked and never
scored; sequences with other non-standard letters or over 10% ``X`` are skipped.
Sequences longer than ``max_len`` are cropped to a random window each time they are drawn. Batches are
built from length-sorted neighbours (little padding). Loss: plain mean cross-entropy over masked residues,
mask ratio t ~ U(0, 1) per sequence, at least one residue masked. Validation: masked CE at seeded masks (t ~ U(0, 1)) and at a fixed 15% rate, with the
perplexity exp(CE); the best weights are those with the lowest validation CE.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from mi_core.domains.protein import MASK_ID, PAD_ID, ProteinRecord, read_fasta, split_records
from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig, save_protein_mdm
from mi_core.io import file_sha256
from mi_core.models.base import load_state
from mi_core.scale import distributed


@dataclass(frozen=True)
class TrainConfig:
    seed: int = 0
    split_seed: int = 0
    steps: int = 12000
    batch: int = 64
    lr: float = 1e-3
    warmup: int = 200
    weight_decay: float = 0.01
    clip: float = 1.0
    min_len: int = 30
    eval_every: int = 500
    eval_sequences: int = 400
    log_every: int = 500
    bf16: bool = True
    time_budget: float = 0.0  # seconds; > 0 runs the schedule by elapsed time and stops when it is spent
    init: str = ""  # weights to start from (a model of the same config); a stopped run continues with --resume

    def __post_init__(self):
        if min(self.steps, self.batch, self.eval_every, self.eval_sequences) < 1:
            raise ValueError("steps, batch, eval_every and eval_sequences must be positive")


def crop(tokens: np.ndarray, max_len: int, rng: np.random.Generator | None) -> np.ndarray:
    """A window of at most ``max_len`` residues: random with ``rng``, else the first ``max_len``."""
    if len(tokens) <= max_len:
        return tokens
    start = int(rng.integers(0, len(tokens) - max_len + 1)) if rng is not None else 0
    return tokens[start:start + max_len]


def pad_batch(seqs: list[np.ndarray], multiple: int = 16) -> torch.Tensor:
    """``(B, n)`` with padding, ``n`` rounded up to a multiple (fewer distinct shapes: less allocator churn)."""
    n = -(-max(len(s) for s in seqs) // multiple) * multiple
    out = np.full((len(seqs), n), PAD_ID, dtype=np.int64)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = s
    return torch.from_numpy(out)


def mask_batch(clean: torch.Tensor, gen: torch.Generator, rate: float | None = None) -> torch.Tensor:
    """Masked copy of ``clean``: each sequence's rate t ~ U(0, 1) (or ``rate``), at least one residue masked."""
    real = (clean != PAD_ID) & (clean != MASK_ID)  # X (unknown) residues stay masked and are never scored
    b, n = clean.shape
    t = torch.rand(b, 1, generator=gen) if rate is None else torch.full((b, 1), rate)
    u = torch.rand(b, n, generator=gen)
    masked = (u < t) & real
    # guarantee one masked residue per sequence: the real position with the smallest u
    first = torch.where(real, u, torch.full_like(u, 2.0)).argmin(1)
    masked[torch.arange(b), first] = True
    return clean.masked_fill(masked, MASK_ID)


def scored(clean: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
    """Positions that count in the loss: masked in ``inputs`` and a known residue in ``clean``."""
    return (inputs == MASK_ID) & (clean != MASK_ID) & (clean != PAD_ID)


class Batches:
    """Length-sorted batches over training records, reshuffled each epoch."""

    def __init__(self, records: list[ProteinRecord], batch: int, max_len: int, rng: np.random.Generator):
        self.seqs = sorted((r.tokens for r in records), key=len)
        self.batch, self.max_len, self.rng = batch, max_len, rng
        self.order: list[int] = []
        self.epoch = 0

    def __next__(self) -> torch.Tensor:
        if not self.order:
            starts = np.arange(0, len(self.seqs), self.batch)
            self.order = list(self.rng.permutation(starts))
            self.epoch += 1
        start = self.order.pop()
        return pad_batch([crop(s, self.max_len, self.rng) for s in self.seqs[start:start + self.batch]])


@torch.no_grad()
def evaluate(model: ProteinMDM, records: list[ProteinRecord], device: torch.device, seed: int = 1234, batch: int = 64) -> dict:
    """Masked CE (nats per masked residue) at seeded t ~ U(0, 1) masks and at a fixed 15% rate."""
    was_training = model.training
    model.eval()
    seqs = sorted((crop(r.tokens, model.max_len, None) for r in records), key=len)
    out = {}
    for label, rate in (("val_ce", None), ("val_ce_15", 0.15)):
        gen = torch.Generator().manual_seed(seed)
        total, count = 0.0, 0
        for i in range(0, len(seqs), batch):
            clean = pad_batch(seqs[i:i + batch])
            inputs = mask_batch(clean, gen, rate)
            masked = scored(clean, inputs)
            logits = model(inputs.to(device)).logits.cpu()
            total += F.cross_entropy(logits[masked], clean[masked] - 1, reduction="sum").item()
            count += int(masked.sum())
        out[label] = total / count
        out[label.replace("ce", "ppl")] = math.exp(total / count)
    model.train(was_training)
    return out


class ProteinTask:
    """The protein MDM's data, validation and best-weights rule for :func:`mi_core.train.mdm.train`."""

    name = "protein_mdm"
    model_config, train_config, ranges = ProteinMDMConfig, TrainConfig, {}
    best_key, higher = "val_ce", False
    save = staticmethod(save_protein_mdm)

    def __init__(self, model_cfg: ProteinMDMConfig, cfg: TrainConfig, device: torch.device, args: dict, log=print):
        self.model_cfg, self.cfg, self.device = model_cfg, cfg, device
        self.rng = np.random.default_rng(distributed.rank_seed(cfg.seed))  # under torchrun: each rank its own batches
        self.gen = torch.Generator().manual_seed(distributed.rank_seed(cfg.seed))
        self.fasta = fasta = Path(args["fasta"])
        records = read_fasta(fasta, strict=True, max_length=100_000)
        splits = split_records(records, cfg.split_seed)
        train_recs = [r for r in splits["train"] if r.length >= cfg.min_len]
        self.val = splits["val"][: cfg.eval_sequences]
        log(f"{len(records)} sequences (X read as masked): train {len(train_recs)} (>= {cfg.min_len} residues), "
            f"val {len(splits['val'])} (evaluating {len(self.val)}), reference {len(splits['reference'])}")
        self.data = {"fasta": fasta.name, "train": len(train_recs), "val": len(splits["val"]),
                     "reference": len(splits["reference"])}
        self.batches = Batches(train_recs, cfg.batch, model_cfg.max_len, self.rng)
        self.residues = 0

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--fasta", type=Path, required=True,
                            help="training FASTA, e.g. ../shared/data/protein/cath-dataset-nonredundant-S40.fa")

    def build_model(self, fresh: bool = False) -> ProteinMDM:
        model = ProteinMDM(self.model_cfg)
        if self.cfg.init and not fresh:
            model = load_state(model, self.cfg.init, self.device)
        return model

    def before_step(self, model, step: int) -> None:
        pass

    def batch(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        clean = next(self.batches)
        inputs = mask_batch(clean, self.gen)
        self.residues += int((clean != PAD_ID).sum())
        return inputs.to(self.device), (clean - 1).to(self.device), scored(clean, inputs).to(self.device)

    def point(self) -> dict:
        return {"epoch": self.batches.epoch, "residues": self.residues}

    def validate(self, model) -> dict:
        return evaluate(model, self.val, self.device)

    def summary(self) -> dict:
        return {"data": self.data}

    def state_dict(self) -> dict:
        b = self.batches
        return {"rng": json.dumps(self.rng.bit_generator.state), "gen": self.gen.get_state(), "epoch": b.epoch,
                "order": torch.tensor([int(i) for i in b.order], dtype=torch.long), "residues": self.residues,
                "fasta_sha256": file_sha256(self.fasta)}

    def load_state_dict(self, state: dict, step: int) -> None:
        if state["fasta_sha256"] != file_sha256(self.fasta):
            raise ValueError(f"--resume: --fasta {self.fasta} is not the file this run was trained on")
        self.rng.bit_generator.state = json.loads(state["rng"])
        self.gen.set_state(state["gen"].cpu())
        self.batches.epoch, self.batches.order = int(state["epoch"]), state["order"].tolist()
        self.residues = int(state["residues"])
        if not distributed.is_main():  # the checkpoint holds rank 0's data state: the others draw afresh
            self.batches.order = []
            self.rng = self.batches.rng = np.random.default_rng(distributed.rank_seed(self.cfg.seed + step))
            self.gen.manual_seed(distributed.rank_seed(self.cfg.seed + step))
