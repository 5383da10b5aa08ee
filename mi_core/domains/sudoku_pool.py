"""Pools of generated Sudoku grids and graded unique puzzles, built in worker processes and cached on disk
(``runs/pools/pool_<key>.npz``). Used by the MDM trainer, the estimator data and the order trainer.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from mi_core.domains.sudoku_gen import harden, make_puzzle, random_grid

POOL_DIR = Path("runs/pools")


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


def _jobs(seed: int, count: int, chunk: int, *extra) -> list[tuple]:
    return [(seed * 1_000_003 + i, min(chunk, count - i * chunk), *extra) for i in range(-(-count // chunk))]


def _run(fn, jobs: list[tuple], workers: int) -> list:
    workers = min(workers, len(jobs))
    if workers <= 1:
        return [fn(j) for j in jobs]
    with ProcessPoolExecutor(workers) as ex:
        return list(ex.map(fn, jobs))


def build_pool(seed: int, count: int, puzzles: bool, workers: int = 2, chunk: int = 250) -> np.ndarray:
    """``(count, 1, 81)`` solved grids, or ``(count, 2, 81)`` (puzzle, solution) pairs; seeded by chunk."""
    return np.concatenate(_run(_pool_chunk, _jobs(seed, count, chunk, puzzles), workers))


def _graded_chunk(args: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    seed, count, max_iters = args
    rng = random.Random(seed)
    rows, grades = [], []
    for _ in range(count):
        solution = random_grid(rng)
        # a spread of grades: hill-climb lengths from 0 (a random minimal puzzle) to max_iters
        puzzle, g = harden(make_puzzle(solution, 0, rng, tries=1), solution, rng, rng.randint(0, max_iters))
        rows.append([puzzle, solution])
        grades.append(g)
    return np.asarray(rows, dtype=np.int64), np.asarray(grades, dtype=np.int64)


def build_graded_pool(seed: int, count: int, max_iters: int, workers: int = 2, chunk: int = 50):
    """``(count, 2, 81)`` (puzzle, solution) pairs across difficulty grades and their ``(count,)`` grades."""
    parts = _run(_graded_chunk, _jobs(seed, count, chunk, max_iters), workers)
    return np.concatenate([p for p, _ in parts]), np.concatenate([g for _, g in parts])


@dataclass(frozen=True)
class PoolSpec:
    """What a cached pool holds; its hash names the cache file."""

    seed: int
    grids: int
    puzzles: int
    max_iters: int
    version: int = 1

    def key(self) -> str:
        return hashlib.sha1(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]


def load_or_build_pools(spec: PoolSpec, root: Path = POOL_DIR, workers: int = 2, exclude: set[str] = frozenset(), log=print):
    """``{"grids" (G, 81), "puzzles" (P, 2, 81), "grades" (P,)}`` from ``root/pool_<key>.npz``, built once.

    ``exclude``: puzzle strings (81 digits, 0 for blank) that must never be trained on (evaluation sets);
    a generated puzzle equal to one of them is dropped.
    """
    path = Path(root) / f"pool_{spec.key()}.npz"
    if path.is_file():
        with np.load(path) as f:
            return _drop_excluded({k: f[k] for k in f.files if k != "spec"}, exclude, log)
    grids = build_pool(spec.seed, spec.grids, puzzles=False, workers=workers)[:, 0]
    puzzles, grades = build_graded_pool(spec.seed + 1, spec.puzzles, spec.max_iters, workers=workers)
    pools = _drop_excluded({"grids": grids, "puzzles": puzzles, "grades": grades}, exclude, log)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")  # processes building the same pool do not collide
    np.savez(tmp, spec=json.dumps(asdict(spec)), **pools)
    tmp.replace(path)
    return pools


def _drop_excluded(pools: dict, exclude: set[str], log) -> dict:
    """``pools`` without the puzzles whose string (0 for blank) is in ``exclude``."""
    keep = np.array([("".join(map(str, p)) not in exclude) for p in pools["puzzles"][:, 0]], dtype=bool)
    if (~keep).any():
        log(f"dropped {int((~keep).sum())} generated puzzles that occur in an evaluation set")
    return {**pools, "puzzles": pools["puzzles"][keep], "grades": pools["grades"][keep]}
