"""Training states for the Sudoku MDM: pools of solved grids and unique puzzles, expanded by transforms.

Two kinds of state, mixed per batch:
- uniform: a solved grid with each cell masked at a rate t ~ U(0, 1) drawn per example;
- puzzle-shaped: a unique puzzle's clue pattern with a random fraction s ~ U(0, 1) of its blanks
  revealed, which are exactly the states sequential decoding of real puzzles passes through.
Every example gets a fresh random validity-preserving transform, so a pool of a few thousand base grids
and puzzles gives effectively unlimited distinct data.
"""

from __future__ import annotations

import random
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import torch

from mi_core.domains.sudoku_gen import make_puzzle, random_grid, random_transform


def _pool_chunk(args: tuple[int, int, bool]) -> np.ndarray:
    seed, count, puzzles = args
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        grid = random_grid(rng)
        if puzzles:
            clues = 0 if rng.random() < 0.5 else rng.randint(24, 40)  # minimal, or a chosen clue count
            rows.append([make_puzzle(grid, clues, rng, tries=1), grid])
        else:
            rows.append([grid])
    return np.asarray(rows, dtype=np.int64)


def build_pool(seed: int, count: int, puzzles: bool, workers: int = 2, chunk: int = 250) -> np.ndarray:
    """``(count, 1, 81)`` solved grids, or ``(count, 2, 81)`` (puzzle, solution) pairs; seeded by chunk."""
    jobs = [(seed * 1_000_003 + i, min(chunk, count - i * chunk), puzzles) for i in range(-(-count // chunk))]
    if workers <= 1:
        parts = [_pool_chunk(j) for j in jobs]
    else:
        with ProcessPoolExecutor(workers) as ex:
            parts = list(ex.map(_pool_chunk, jobs))
    return np.concatenate(parts)


def sample_batch(
    grids: np.ndarray, puzzles: np.ndarray, batch: int, puzzle_frac: float, rng: np.random.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """One training batch: ``(inputs, targets)``, each ``(batch, 81)`` int64; inputs use 0 for mask."""
    n_puz = int(round(batch * puzzle_frac)) if len(puzzles) else 0
    n_uni = batch - n_puz
    uni = random_transform(grids[rng.integers(len(grids), size=n_uni), 0], rng)
    t = rng.random((n_uni, 1))
    uni_mask = rng.random(uni.shape) < t
    pairs = puzzles[rng.integers(len(puzzles), size=n_puz)] if n_puz else np.zeros((0, 2, 81), np.int64)
    pairs = random_transform(pairs.reshape(n_puz * 2, 81), rng, pair=2).reshape(n_puz, 2, 81) if n_puz else pairs
    s = rng.random((n_puz, 1))
    puz_mask = (pairs[:, 0] == 0) & (rng.random((n_puz, 81)) >= s)
    targets = np.concatenate([uni, pairs[:, 1]])
    masked = np.concatenate([uni_mask, puz_mask])
    # every example needs at least one masked cell to contribute to the loss
    empty = ~masked.any(1)
    masked[empty, rng.integers(81, size=int(empty.sum()))] = True
    inputs = np.where(masked, 0, targets)
    return torch.from_numpy(inputs), torch.from_numpy(targets)
