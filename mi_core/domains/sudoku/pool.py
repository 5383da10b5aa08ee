"""Pools of generated Sudoku grids and graded unique puzzles, built in worker processes and cached on disk."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import random
import zipfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from mi_core.domains.sudoku.generator import harden, make_puzzle, random_grid
from mi_core.io import cannot_write, display_path, missing_file

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


def _run(fn, jobs: list[tuple], workers: int):
    """``fn`` of each job, yielded in the order of ``jobs`` (in worker processes when ``workers > 1``)."""
    workers = min(workers, len(jobs))
    if workers <= 1:
        yield from map(fn, jobs)
        return
    with ProcessPoolExecutor(workers) as ex:
        yield from ex.map(fn, jobs)


def build_pool(seed: int, count: int, puzzles: bool, workers: int = 2, chunk: int = 250) -> np.ndarray:
    """``(count, 1, 81)`` solved grids, or ``(count, 2, 81)`` (puzzle, solution) pairs; seeded by chunk."""
    return np.concatenate(list(_run(_pool_chunk, _jobs(seed, count, chunk, puzzles), workers)))


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
    parts = list(_run(_graded_chunk, _jobs(seed, count, chunk, max_iters), workers))
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


def load_or_build_pools(spec: PoolSpec, root: Path = POOL_DIR, workers: int = 2, exclude: set[str] = frozenset(), log=print,
                        puzzle_file: Path | None = None):
    """``{"grids" (G, 81), "puzzles" (P, 2, 81), "grades" (P,)}`` from ``root/pool_<key>.npz``, built once;
    puzzles whose string (0 for blank) is in ``exclude`` are dropped; ``puzzle_file``: the puzzles come from
    this file of :func:`grow_pool_file`."""
    if puzzle_file is not None:  # read first: a bad file is named before the grid pool is built (minutes)
        puzzles = read_pool_file(puzzle_file, "--pool-file")
        grids = load_or_build_pools(replace(spec, puzzles=0), root, workers, log=log)["grids"]
        return _drop_excluded({"grids": grids, **puzzles}, exclude, log)
    path = Path(root) / f"pool_{spec.key()}.npz"
    cached = _read_cache(path, log) if path.is_file() else None
    if cached is not None:
        return _drop_excluded(cached, exclude, log)
    made = f"{spec.grids} grids" + (f" and {spec.puzzles} graded puzzles" if spec.puzzles else "")
    log(f"building the training pools ({made}) into {display_path(path)}: minutes, once (later runs read the file; "
        "--time-budget counts from the first step)")
    grids = build_pool(spec.seed, spec.grids, puzzles=False, workers=workers)[:, 0]
    if spec.puzzles:
        puzzles, grades = build_graded_pool(spec.seed + 1, spec.puzzles, spec.max_iters, workers=workers)
    else:
        puzzles, grades = np.zeros((0, 2, 81), dtype=np.int64), np.zeros(0, dtype=np.int64)
    pools = {"grids": grids, "puzzles": puzzles, "grades": grades}  # cached whole: the file is the spec's alone
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")  # processes building the same pool do not collide
    try:
        np.savez(tmp, spec=json.dumps(asdict(spec)), **pools)
        tmp.replace(path)
    except OSError as err:  # a full disk: one line naming the cache file
        raise cannot_write(path, err) from None
    finally:  # gone once renamed; else (an error, Ctrl-C) no orphan of the pools' size is left
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
    return _drop_excluded(pools, exclude, log)


def _read_cache(path: Path, log) -> dict | None:
    """The pools cached at ``path``; None, said, when the file cannot be read (cut short or damaged by a copy, a full
    disk): the cache is built again, the same pools, as they are seeded."""
    try:
        with np.load(path) as f:
            pools = {k: f[k] for k in f.files if k != "spec"}
        if {"grids", "puzzles", "grades"} <= pools.keys():
            return pools
        problem = "it lacks the pools' arrays"
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as err:
        problem = f"{type(err).__name__}: {err}"
    log(f"note: the pool cache {display_path(path)} cannot be read ({problem}): building it again")
    return None


def _drop_excluded(pools: dict, exclude: set[str], log) -> dict:
    keep = np.array([("".join(map(str, p)) not in exclude) for p in pools["puzzles"][:, 0]], dtype=bool)
    if (~keep).any():
        log(f"dropped {int((~keep).sum())} generated puzzles that occur in an evaluation set")
    return {**pools, "puzzles": pools["puzzles"][keep], "grades": pools["grades"][keep]}


POOL_FILE_CHUNK = 50  # puzzles per chunk of a pool file; chunk i is seeded by (seed, i), so a file grows reproducibly


def grow_pool_file(path: str | Path, seed: int, count: int, max_iters: int, workers: int = 1, log=print) -> int:
    """Append graded puzzles (lines ``puzzle solution grade``, 0 for blank) to the gzip file ``path`` until it
    holds ``count``; each finished chunk is appended at once, so a stopped build resumes where the file ends.
    Returns the number of puzzles the file holds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pool, whole = _read_pool(path) if path.is_file() else (None, True)
    have = 0 if pool is None else len(pool["grades"])
    if have % POOL_FILE_CHUNK:
        raise ValueError(f"{path} holds {have} puzzles, not whole chunks of {POOL_FILE_CHUNK}: not a pool file")
    if not whole:  # a build stopped while appending: its cut chunk goes, or the chunks appended after it are unreadable
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        with gzip.open(tmp, "wt") as fh:
            fh.write(_pool_lines(pool["puzzles"], pool["grades"]))
        tmp.replace(path)
        log(f"{path}: dropped a chunk cut off by a stopped build; {have} puzzles kept")
    first = have // POOL_FILE_CHUNK
    jobs = [(seed * 1_000_003 + i, POOL_FILE_CHUNK, max_iters) for i in range(first, -(-count // POOL_FILE_CHUNK))]
    for rows, grades in _run(_graded_chunk, jobs, workers):  # in order, so the file is the same however it was built
        with gzip.open(path, "at") as fh:
            fh.write(_pool_lines(rows, grades))
        have += len(grades)
        log(f"{path}: {have} puzzles")
    return have


def _pool_lines(rows, grades) -> str:
    """Pool-file lines ``puzzle solution grade`` (0 for blank) of ``(P, 2, 81)`` rows and ``(P,)`` grades."""
    return "".join(f"{''.join(map(str, p))} {''.join(map(str, s))} {g}\n" for (p, s), g in zip(rows, grades))


def read_pool_file(path: str | Path, option: str = "") -> dict:
    """``{"puzzles" (P, 2, 81), "grades" (P,)}`` from a file of :func:`grow_pool_file` (ValueError on a bad line);
    ``option``: the file must hold a puzzle, and the ValueError for one that holds none names this option."""
    pool, whole = _read_pool(path)
    if option and not len(pool["grades"]):
        raise ValueError(f"{option} {path} holds no puzzles" + ("" if whole else f" whole: it is cut short (its gzip "
                         f"stream ends early) within its first chunk of {POOL_FILE_CHUNK}"))
    return pool


def _read_pool(path: str | Path) -> tuple[dict, bool]:
    """:func:`read_pool_file`'s pool, and False when the file ends in a cut chunk (left out of the pool)."""
    rows, grades, whole = [], [], True
    if not Path(path).is_file() and not Path(path).is_dir():  # a named pipe would block the read for good
        raise ValueError(missing_file(Path(path), "pool file not found"))
    try:
        with gzip.open(path, "rt") as fh:
            for number, line in enumerate(fh, 1):
                parts = line.split()
                if (len(parts) != 3 or len(parts[0]) != 81 or len(parts[1]) != 81 or not parts[2].isdigit()
                        or not set(parts[0] + parts[1]) <= set("0123456789")):  # 0 for blank; int() names no line
                    raise ValueError(f"{path} line {number}: expected 'puzzle solution grade', got {line[:40]!r}")
                rows.append([[int(c) for c in parts[0]], [int(c) for c in parts[1]]])
                grades.append(int(parts[2]))
    except EOFError:  # the last chunk is still being appended: keep the whole chunks before it
        keep = len(grades) - len(grades) % POOL_FILE_CHUNK
        rows, grades, whole = rows[:keep], grades[:keep], False
    except FileNotFoundError:
        raise ValueError(f"pool file not found: {path}") from None
    except (OSError, gzip.BadGzipFile) as err:
        raise ValueError(f"{path} is not a gzip pool file: {err}") from None
    pool = {"puzzles": np.asarray(rows, dtype=np.int64).reshape(-1, 2, 81), "grades": np.asarray(grades, dtype=np.int64)}
    return pool, whole


def hardest(path: str | Path, count: int, option: str = "") -> np.ndarray:
    """The ``count`` hardest ``(P, 2, 81)`` pairs (by grade) of a pool file, in file order (``option``: see
    :func:`read_pool_file`)."""
    pool = read_pool_file(path, option)
    return pool["puzzles"][np.sort(np.argsort(-pool["grades"], kind="stable")[:count])]
