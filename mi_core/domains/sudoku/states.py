"""Sudoku states for the estimator's data and its evaluation, from three sources (:data:`SOURCES`): a solved
grid masked at a random rate, a puzzle's own clue pattern, and an intermediate state of a top-k decoding run."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch

from mi_core.decoding import decode, make_strategy
from mi_core.domain import ConfigStates, MixedShardConfig, check_mix, mix_option, uniform_mask
from mi_core.domains.sudoku import MASK_ID, SUDOKU9
from mi_core.domains.sudoku.generator import random_transform
from mi_core.domains.sudoku.grid import read_inputs
from mi_core.domains.sudoku.pool import build_pool
from mi_core.options import SKIP, option, option_text, redefault

SOURCES = ("uniform", "puzzle", "decode")


def decode_states(model, starts: np.ndarray, rng: np.random.Generator, minimum: int, device) -> np.ndarray:
    """One random intermediate state ``(B, N)`` of a top-k decoding run (k in 1..4, temperature 0 or 1, drawn
    once for the batch) from each start ``(B, N)``, among the steps leaving ``minimum`` cells masked."""
    strategy = make_strategy("topk", k=int(rng.integers(1, 5)))
    temperature = float(rng.choice([0.0, 1.0]))
    tokens = torch.as_tensor(starts, device=device)
    steps = decode(model, tokens, strategy, temperature=temperature, seed=int(rng.integers(2**31)))
    frames = [f.tokens.cpu().numpy() for f in steps]
    out = starts.copy()
    for b in range(len(starts)):
        options = [f[b] for f in frames if (f[b] == model.mask_id).sum() >= minimum]
        if options:
            out[b] = options[int(rng.integers(len(options)))]
    return out


def distinct_picks(pick: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``pick`` (indices into ``count`` puzzles) with each repeat replaced by a puzzle not picked, at random, while
    any is left. A pick without repeats draws nothing more, so it stays as drawn."""
    _, first = np.unique(pick, return_index=True)
    repeats = np.setdiff1d(np.arange(len(pick)), first)
    if len(repeats):
        unused = rng.permutation(np.setdiff1d(np.arange(count), pick))[:len(repeats)]
        pick = pick.copy()
        pick[repeats[:len(unused)]] = unused
    return pick


def draw_states(model, puzzles: np.ndarray, solutions: np.ndarray, n: int, mix: tuple[float, float, float],
                rng: np.random.Generator, *, transform: bool, minimum: int = 2, distinct: bool = False,
                device="cpu") -> tuple[np.ndarray, np.ndarray]:
    """``n`` states from ``(P, N)`` puzzles and solutions (0 blank), each pair freshly transformed with
    ``transform``: ``(tokens (n, N) int64, source (n,) int64)``, ``source`` indexing :data:`SOURCES` and ``mix``
    weighting them (need not sum to 1). ``distinct``: no puzzle twice while ``n <= P`` (held-out states)."""
    weights = np.asarray(check_mix(mix, SOURCES))
    source = rng.choice(len(SOURCES), size=n, p=weights / weights.sum())
    pick = rng.integers(len(puzzles), size=n)
    if distinct:
        pick = distinct_picks(pick, len(puzzles), rng)
    pairs = np.stack([puzzles[pick], solutions[pick]], 1).reshape(2 * n, -1)
    if transform and n:
        pairs = random_transform(pairs, rng, pair=2)
    pairs = pairs.reshape(n, 2, -1)
    tokens = pairs[:, 0].copy()
    for s in np.flatnonzero(source == 0):  # a solved grid with each cell masked at a rate t ~ U(0, 1)
        tokens[s] = uniform_mask(pairs[s, 1], rng, minimum, MASK_ID)
    dec = np.flatnonzero(source == 2)
    if len(dec):
        tokens[dec] = decode_states(model, pairs[dec, 0], rng, minimum, device)
    return tokens.astype(np.int64), source.astype(np.int64)


@dataclass(frozen=True)
class DataConfig(MixedShardConfig):
    """``pool``: generated (puzzle, solution) pairs to draw from; ``min_masked``: masked cells every state keeps.
    ``eps`` stays 0 (exact): 1e-4 saved 4-40% of the passes but moved MI by more than the median pair's MI."""

    pool: int = option(400, "generated puzzles to draw states from", range=(1, 100_000_000))
    min_masked: int = 2
    sources: ClassVar[tuple[str, ...]] = SOURCES
    mix: tuple[float, float, float] = mix_option(SOURCES, (0.4, 0.2, 0.4))


@dataclass
class HeldOutOptions:
    """``eval-estimator sudoku``: where the held-out states come from."""

    puzzles: Path = option(None, "held-out puzzles (.txt or .csv); never training data; the states are drawn from "
                           "them together, so --states 8 does not begin with --states 4's states", required=True)
    limit: int | None = option(None, "draw from the first N puzzles only", range=(1, 10_000_000))
    mix: tuple[float, float, float] = redefault(DataConfig, "mix", (0.4, 0.2, 0.4))


class SudokuStates(ConfigStates):
    """The Sudoku state source of estimator data: states of seeded *generated* puzzles, freshly transformed,
    so no file puzzle is ever trained on."""

    config_cls = DataConfig
    sources = SOURCES
    section = "eval-estimator"  # its section of BENCHMARKS.md
    data_options = DataConfig, {"min_masked": SKIP}
    eval_options = HeldOutOptions
    eval_defaults = {"states": 60, "threshold": 1e-2, "max_batch": DataConfig.max_batch}

    def check(self, model) -> None:
        if model.seq_len is None:
            raise ValueError("Sudoku estimator data needs a Sudoku model")

    @cached_property
    def pool(self) -> tuple[np.ndarray, np.ndarray]:
        """``(P, 81)`` puzzles and their solutions, generated from the config's seed."""
        pool = build_pool(self.cfg.seed + 7919, self.cfg.pool, puzzles=True, workers=1)
        return pool[:, 0], pool[:, 1]

    def draw(self, model, rng: np.random.Generator, count: int, device) -> tuple[list[np.ndarray], list[int]]:
        tokens, source = draw_states(model, *self.pool, count, self.cfg.mix, rng, transform=True,
                                     minimum=self.cfg.min_masked, device=device)
        return list(tokens), source.tolist()

    @staticmethod
    def held_out(args) -> HeldOutPuzzles:
        return HeldOutPuzzles(args.puzzles, args.limit, args.mix)


class HeldOutPuzzles:
    """Held-out Sudoku states: drawn as the training states are, from a puzzle file's own puzzles untransformed."""

    sources = SOURCES

    def __init__(self, path: Path, limit: int | None, mix: tuple[float, float, float]):
        self.path, self.limit, self.mix = path, limit, check_mix(mix, SOURCES)
        puzzles, solutions, _ = read_inputs(path, SUDOKU9, limit)
        self.puzzles, self.solutions = np.array(puzzles, dtype=np.int64), np.array(solutions, dtype=np.int64)

    def draw(self, model, rng: np.random.Generator, count: int, device) -> tuple[list[np.ndarray], list[int]]:
        tokens, source = draw_states(model, self.puzzles, self.solutions, count, self.mix, rng, transform=False,
                                     distinct=True, device=device)
        return list(tokens), source.tolist()

    def info(self) -> dict:
        mix = option_text(self.mix)
        return {"puzzles": str(self.path), "limit": self.limit, "mix": mix,
                "about": f"drawn from that file's puzzles (mix {','.join(SOURCES)} = {mix})"}
