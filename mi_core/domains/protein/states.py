"""Protein states for the MI estimator's data and its evaluation (:data:`SOURCES`): a window masked uniformly
at a random rate, a temperature-1 decode from all masked, and one from a uniformly masked window."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch

from mi_core.decoding import decode, make_strategy
from mi_core.domain import ConfigStates, MixedShardConfig, ShardConfig, mix_option, uniform_mask
from mi_core.domains.protein import MASK_ID, read_fasta, split_records
from mi_core.io import ROOT
from mi_core.options import SKIP, only, option, option_text, redefault

SOURCES = ("uniform", "decode_all_masked", "decode_partial")

DEFAULT_FASTA = Path("../shared/data/protein/cath-dataset-nonredundant-S40.fa")


@dataclass(frozen=True)
class ProteinDataConfig(MixedShardConfig):
    """Windows of ``min_len..max_len`` residues of the ``split`` of ``fasta``, at least ``min_masked`` masked."""

    sources: ClassVar[tuple[str, ...]] = SOURCES
    states: int = redefault(ShardConfig, "states", 320)
    # the probe's batch: 1.8x faster than 512 for a 75-residue protein MDM state on one CPU thread
    max_batch: int = redefault(ShardConfig, "max_batch", 128)
    mix: tuple[float, float, float] = mix_option(SOURCES)
    fasta: str = option(str(DEFAULT_FASTA), "FASTA file; states come from its train split (eval-estimator: val)")
    split: str = "train"
    split_seed: int = 0
    min_len: int = option(50, "shortest window", range=(1, 100_000))
    max_len: int = option(100, "longest window (the shards' width)", range=(1, 100_000))
    min_masked: int = option(10, "fewest masked residues a state keeps", range=(1, 100_000))

    def __post_init__(self):
        super().__post_init__()
        # "./a//b.fa" is "a/b.fa": a shard folder resumes under either spelling
        object.__setattr__(self, "fasta", str(Path(self.fasta)))
        if self.max_len < self.min_len:
            raise ValueError(f"--max-len {self.max_len} is below --min-len {self.min_len}")
        if not 2 <= self.min_masked <= self.min_len:
            raise ValueError(f"--min-masked must be in 2..--min-len ({self.min_len}), got {self.min_masked}")


def sequence_pool(fasta: str | Path, split: str, min_len: int, split_seed: int = 0) -> list[np.ndarray]:
    """Token arrays of the ``split`` sequences with at least ``min_len`` residues."""
    every = read_fasta(fasta, strict=True)
    records = split_records(every, split_seed)[split]
    pool = [r.tokens for r in records if r.length >= min_len]
    if not pool:  # a small file's split may be empty: the hash, not the lengths, is then the reason
        raise ValueError(f"{fasta}: no {split}-split sequence has {min_len} or more residues (the {split} split holds "
                         f"{len(records)} of the file's {len(every)} sequences, chosen by a hash of each header: about "
                         "90% train, 5% val, 5% reference)")
    return pool


def decode_to(model, start: np.ndarray, rng: np.random.Generator, minimum: int, device) -> np.ndarray:
    """The first state of a temperature-1 decode from ``start`` ``(L,)`` with at most m masked residues, m
    uniform in ``minimum..masked(start)`` (the one before it when a step overshoots below ``minimum``)."""
    masked = int((start == MASK_ID).sum())
    if masked <= minimum:
        return start.copy()
    target = int(rng.integers(minimum, masked + 1))
    k = int(rng.choice([1, 2, 4]))
    strategy = make_strategy("sequential") if k == 1 else make_strategy("topk", k=k)
    state = start
    tokens = torch.as_tensor(start[None], device=device)
    for frame in decode(model, tokens, strategy, temperature=1.0, seed=int(rng.integers(2**31))):
        row = frame.tokens[0].cpu().numpy()
        left = int((row == MASK_ID).sum())
        if left <= target:
            return row if left >= minimum else state
        state = row
    return state


def draw_state(model, pool: list[np.ndarray], cfg: ProteinDataConfig, rng: np.random.Generator,
               device) -> tuple[np.ndarray, int]:
    """One state ``(L,)`` int64 and its source index."""
    seq = pool[int(rng.integers(len(pool)))]
    length = int(rng.integers(cfg.min_len, min(cfg.max_len, len(seq)) + 1))
    offset = int(rng.integers(0, len(seq) - length + 1))
    window = seq[offset:offset + length]
    weights = np.asarray(cfg.mix, dtype=float)
    source = int(rng.choice(len(SOURCES), p=weights / weights.sum()))
    if source == 0:
        tokens = uniform_mask(window, rng, cfg.min_masked, MASK_ID)
    elif source == 1:
        tokens = decode_to(model, np.full_like(window, MASK_ID), rng, cfg.min_masked, device)
    else:
        tokens = decode_to(model, uniform_mask(window, rng, cfg.min_masked, MASK_ID), rng, cfg.min_masked, device)
    return tokens.astype(np.int64), source


class ProteinStates(ConfigStates):
    """``Domain.states`` of proteins: windows of the FASTA file's ``train`` split (``held_out``: ``val``)."""

    config_cls, sources = ProteinDataConfig, SOURCES
    data_options = ProteinDataConfig, {"split": SKIP, "split_seed": SKIP}
    eval_options = only(ProteinDataConfig, "fasta", "min_len", "max_len", "min_masked", "mix")
    held_out_config = {"split": "val"}
    eval_defaults = {"states": 40, "threshold": 1e-3, "max_batch": ProteinDataConfig.max_batch}

    @property
    def width(self) -> int:
        return self.cfg.max_len

    def check(self, model) -> None:
        self.pool  # read now: a bad --fasta fails before make-estimator-data writes its manifest under --out
        if self.cfg.max_len > model.max_len:
            raise ValueError(f"--max-len {self.cfg.max_len} is longer than the {model.max_len} residues the model takes")

    @cached_property
    def pool(self) -> list[np.ndarray]:
        return sequence_pool(self.cfg.fasta, self.cfg.split, self.cfg.min_len, self.cfg.split_seed)

    def draw(self, model, rng: np.random.Generator, count: int, device) -> tuple[list[np.ndarray], list[int]]:
        drawn = [draw_state(model, self.pool, self.cfg, rng, device) for _ in range(count)]
        return [t for t, _ in drawn], [s for _, s in drawn]

    @classmethod
    def held_out(cls, args) -> ProteinStates:
        source = super().held_out(args)
        source.pool  # read now: a bad file fails before the model loads
        return source

    def overlap(self, trained: dict) -> str | None:
        """The held-out sequences that are in the pool of ``trained`` (its ``fasta``, ``split``, ``min_len`` and
        ``split_seed``); None when none is, or when ``trained`` is not protein data or its file is not here."""
        if not trained.get("fasta") or "split" not in trained:
            return None
        path = Path(trained["fasta"])
        path = path if path.is_file() else ROOT / path
        try:
            seen = {t.tobytes() for t in sequence_pool(path, trained["split"], int(trained.get("min_len", 1)),
                                                       int(trained.get("split_seed", 0)))}
        except (OSError, ValueError, KeyError):
            return None
        shared = sum(t.tobytes() in seen for t in self.pool)
        if not shared:
            return None
        return (f"{shared} of the {len(self.pool)} held-out sequences (the {self.cfg.split} split of "
                f"{Path(self.cfg.fasta).name}) are sequences of its training data (the {trained['split']} split of "
                f"{path.name}): give another --fasta")

    def about(self) -> str:
        c = self.cfg
        return (f"windows of {c.min_len}-{c.max_len} residues of {c.split}-split sequences "
                f"(mix {','.join(SOURCES)} = {option_text(c.mix)})")
