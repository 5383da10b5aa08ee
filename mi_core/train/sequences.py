"""The MDM trainer's task for sequence domains (:mod:`mi_core.train.mdm`): :class:`SequenceMDM` trained on a
domain's clean sequences.

Sequences longer than ``max_len`` are cropped to a random window each time they are drawn; batches are
length-sorted neighbours. Loss: mean cross-entropy over masked positions, mask ratio t ~ U(0, 1) per
sequence, at least one position masked; positions masked in the clean data (unknown residues) are never
scored. Validation: masked CE at seeded masks and at a fixed 15% rate; the best weights have the lowest CE.
"""

from __future__ import annotations

import json
import math
from abc import abstractmethod
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from mi_core.models.base import load_state
from mi_core.models.mdm import SequenceMDM, SequenceMDMConfig
from mi_core.options import SEED_MAX, option, redefault
from mi_core.scale import distributed
from mi_core.train.mdm import LoopConfig


@dataclass(frozen=True)
class SequenceTrainConfig(LoopConfig):
    steps: int = redefault(LoopConfig, "steps", 12000)
    batch: int = redefault(LoopConfig, "batch", 64, "sequences per step")
    warmup: int = redefault(LoopConfig, "warmup", 200)
    split_seed: int = option(0, "seed of the data's train / val / reference split", range=(0, SEED_MAX))
    min_len: int = option(1, "leave out training sequences shorter than this (validation keeps them)",
                          range=(1, 100_000))
    eval_sequences: int = option(400, "validation sequences", range=(1, 10_000_000))
    init: str = option("", "weights to start from (a model of the same config); a stopped run continues with --resume")


def crop(tokens: np.ndarray, max_len: int, rng: np.random.Generator | None) -> np.ndarray:
    """A window of at most ``max_len`` positions: random with ``rng``, else the first ``max_len``."""
    if len(tokens) <= max_len:
        return tokens
    start = int(rng.integers(0, len(tokens) - max_len + 1)) if rng is not None else 0
    return tokens[start:start + max_len]


def pad_batch(seqs: list[np.ndarray], pad_id: int, max_len: int, multiple: int = 16) -> torch.Tensor:
    """``(B, n)`` with padding, ``n`` rounded up to a multiple (fewer distinct shapes), at most ``max_len``."""
    longest = max(len(s) for s in seqs)
    n = max(longest, min(-(-longest // multiple) * multiple, max_len))
    out = np.full((len(seqs), n), pad_id, dtype=np.int64)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = s
    return torch.from_numpy(out)


def mask_batch(clean: torch.Tensor, gen: torch.Generator, mask_id: int, pad_id: int,
               rate: float | None = None) -> torch.Tensor:
    """Masked copy of ``clean``: each sequence's rate t ~ U(0, 1) (or ``rate``), at least one position masked."""
    real = (clean != pad_id) & (clean != mask_id)  # positions masked in the data stay masked and are never scored
    b, n = clean.shape
    t = torch.rand(b, 1, generator=gen) if rate is None else torch.full((b, 1), rate)
    u = torch.rand(b, n, generator=gen)
    masked = (u < t) & real
    first = torch.where(real, u, torch.full_like(u, 2.0)).argmin(1)  # one masked position per sequence
    masked[torch.arange(b), first] = True
    return clean.masked_fill(masked, mask_id)


def scored(clean: torch.Tensor, inputs: torch.Tensor, mask_id: int, pad_id: int) -> torch.Tensor:
    """Positions that count in the loss: masked in ``inputs`` and known in ``clean``."""
    return (inputs == mask_id) & (clean != mask_id) & (clean != pad_id)


class Batches:
    """Length-sorted batches over training sequences, reshuffled each epoch."""

    def __init__(self, seqs: list[np.ndarray], batch: int, max_len: int, pad_id: int, rng: np.random.Generator):
        self.seqs = sorted(seqs, key=len)
        self.batch, self.max_len, self.pad_id, self.rng = batch, max_len, pad_id, rng
        self.order: list[int] = []
        self.epoch = 0

    def __next__(self) -> torch.Tensor:
        if not self.order:
            starts = np.arange(0, len(self.seqs), self.batch)
            self.order = list(self.rng.permutation(starts))
            self.epoch += 1
        start = self.order.pop()
        seqs = [crop(s, self.max_len, self.rng) for s in self.seqs[start:start + self.batch]]
        return pad_batch(seqs, self.pad_id, self.max_len)


@torch.no_grad()
def evaluate(model: SequenceMDM, seqs: list[np.ndarray], device: torch.device, seed: int = 1234,
             batch: int = 64) -> dict:
    """Masked CE (nats per masked position) at seeded t ~ U(0, 1) masks and at a fixed 15% rate."""
    was_training = model.training
    model.eval()
    seqs = sorted((crop(s, model.max_len, None) for s in seqs), key=len)
    ids = model.mask_id, model.pad_id
    out = {}
    for label, rate in (("val_ce", None), ("val_ce_15", 0.15)):
        gen = torch.Generator().manual_seed(seed)
        total, count = 0.0, 0
        for i in range(0, len(seqs), batch):
            clean = pad_batch(seqs[i:i + batch], model.pad_id, model.max_len)
            inputs = mask_batch(clean, gen, *ids, rate)
            masked = scored(clean, inputs, *ids)
            logits = model(inputs.to(device)).logits.cpu()
            total += F.cross_entropy(logits[masked], clean[masked] - 1, reduction="sum").item()
            count += int(masked.sum())
        out[label] = total / count
        out[label.replace("ce", "ppl")] = math.exp(total / count)
    model.train(was_training)
    return out


class SequenceTask:
    """A sequence domain's task for :func:`mi_core.train.mdm.train`: a subclass sets ``name``, ``model_cls``,
    ``save`` and ``options``, gives :meth:`read_data` and may give :meth:`fingerprint` (checked on resume) and
    ``train_config`` (a :class:`SequenceTrainConfig` subclass, e.g. another default ``--min-len``)."""

    name: str
    model_cls: type[SequenceMDM]
    model_config, train_config = SequenceMDMConfig, SequenceTrainConfig
    best_key, higher = "val_ce", False
    options: type

    def __init__(self, model_cfg: SequenceMDMConfig, cfg: SequenceTrainConfig, device: torch.device, args: dict,
                 log=print):
        self.model_cls.check_vocabulary()
        self.model_cfg, self.cfg, self.device = model_cfg, cfg, device
        self.rng = np.random.default_rng(distributed.rank_seed(cfg.seed))
        self.gen = torch.Generator().manual_seed(distributed.rank_seed(cfg.seed))
        train, val, self.data = self.read_data(args, cfg, log)
        train = self.long_enough(train, log)
        if not val:  # the validation loss would divide by no positions
            held = ", ".join(f"{k} {v}" for k, v in self.data.items())
            raise ValueError(f"the data gives no validation sequences ({held}): give more "
                             "sequences, so its split holds some out")
        self.val = val[: cfg.eval_sequences]
        self.batches = Batches(train, cfg.batch, model_cfg.max_len, self.model_cls.pad_id, self.rng)
        self.residues = 0

    @abstractmethod
    def read_data(self, args: dict, cfg: SequenceTrainConfig, log) -> tuple[list, list, dict]:
        """``(training sequences, validation sequences, what the run records about them)``."""
        raise NotImplementedError

    def long_enough(self, train: list, log) -> list:
        """The training sequences of ``--min-len`` or more positions (ValueError when none is)."""
        kept = [s for s in train if len(s) >= self.cfg.min_len]
        if not kept:
            longest = max(map(len, train), default=0)
            raise ValueError(f"--min-len {self.cfg.min_len}: no training sequence is that long (the longest has "
                             f"{longest} positions)")
        if len(kept) < len(train):
            log(f"{len(train) - len(kept)} training sequences shorter than --min-len {self.cfg.min_len} left out")
            self.data = {**self.data, "shorter_than_min_len": len(train) - len(kept)}
        return kept

    def fingerprint(self) -> str:
        return ""

    def build_model(self, fresh: bool = False) -> SequenceMDM:
        model = self.model_cls(self.model_cfg)
        if self.cfg.init and not fresh:
            model = load_state(model, self.cfg.init, self.device)
        return model

    def before_step(self, model, step: int) -> None:
        pass

    def batch(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        ids = self.model_cls.mask_id, self.model_cls.pad_id
        clean = next(self.batches)
        inputs = mask_batch(clean, self.gen, *ids)
        self.residues += int((clean != ids[1]).sum())
        return inputs.to(self.device), (clean - 1).to(self.device), scored(clean, inputs, *ids).to(self.device)

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
                "fingerprint": self.fingerprint()}

    def load_state_dict(self, state: dict, step: int) -> None:
        if state.get("fingerprint", state.get("fasta_sha256", "")) != self.fingerprint():
            raise ValueError("--resume: the training data are not those this run was trained on (another file, or a changed one)")
        self.rng.bit_generator.state = json.loads(state["rng"])
        self.gen.set_state(state["gen"].cpu())
        self.batches.epoch, self.batches.order = int(state["epoch"]), state["order"].tolist()
        self.residues = int(state["residues"])
        if not distributed.is_main():  # the checkpoint holds rank 0's data state: the others draw afresh
            self.batches.order = []
            self.rng = self.batches.rng = np.random.default_rng(distributed.rank_seed(self.cfg.seed + step))
            self.gen.manual_seed(distributed.rank_seed(self.cfg.seed + step))
