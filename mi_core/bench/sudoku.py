"""Decode a set of Sudoku puzzles with one sampler and score the results."""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict

import torch

from mi_core.decoding import decode_final
from mi_core.domains.sudoku import PuzzleRecord, parse_grid, to_string
from mi_core.domains.sudoku_solver import solve_count

DEFAULT_ESTIMATOR = "assets/sudoku_mi_estimator.safetensors"


def with_default_estimator(strategy, path: str = DEFAULT_ESTIMATOR):
    """Point a strategy that reads an MI estimator (``estimator`` left unset) at the shipped one."""
    if hasattr(strategy, "estimator") and strategy.estimator is None and getattr(strategy, "mi_fn", None) is None:
        strategy.estimator = path
    return strategy


def solutions_for(records: list[PuzzleRecord]) -> list[str]:
    """The unique solution of each record (the file's, which parsing checked against the givens, or the
    solver's). Benchmarks score a decode against this one grid, so a puzzle with no solution or with more
    than one is refused rather than scored against whichever solution a solver finds.

    Raises:
        ValueError: a puzzle without a solution or with several, naming its line.
    """
    out = []
    for rec in records:
        count, sol = solve_count(parse_grid(rec.puzzle, None), limit=2)
        if count == 0:
            raise ValueError(f"puzzle on line {rec.line} has no solution")
        if count > 1:
            raise ValueError(f"puzzle on line {rec.line} has more than one solution; benchmarks need puzzles "
                             "with exactly one (a valid grid could otherwise be scored wrong)")
        out.append(rec.solution or to_string(sol))
    return out


def warm_up(model, records: list[PuzzleRecord], strategy, device, bf16: bool = False) -> None:
    """Decode the first puzzle once, untimed, so no timed run pays one-off start-up costs (CUDA context,
    kernel selection, allocator growth)."""
    evaluate(model, records[:1], strategy, batch_size=1, device=device, bf16=bf16)


def puzzle_seed(seed: int, index: int) -> int:
    """The decode seed of the puzzle at ``index`` of a run seeded by ``seed`` (independent of batching)."""
    return (seed * 1_000_003 + index) % 2**63  # runs with neighbouring seeds share no stream


@torch.no_grad()
def evaluate(model, records: list[PuzzleRecord], strategy, *, batch_size: int = 256, temperature: float = 0.0,
             seed: int = 0, device: torch.device | str = "cpu", progress=None, bf16: bool = False) -> dict:
    """Decode every puzzle and score it against its unique solution.

    Returns a dict with ``n``, ``accuracy`` (whole grid right), ``cell_accuracy`` (over blank cells),
    ``mean_passes``, ``seconds``, ``passes`` (per puzzle) and, when records carry levels, ``by_level``.
    ``progress(n_done)`` is called after each batch. Puzzle ``i`` decodes with its own generator seeded by
    ``seed + i`` (:func:`puzzle_seed`), so results do not depend on ``batch_size``. ``bf16`` runs the
    model's forward passes under bf16 autocast (about 2x faster on CPUs with AMX; entropies and choices are still computed in float32).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch size must be an integer >= 1, got {batch_size!r}")
    solutions = solutions_for(records)
    rows = []  # (level, solved, right_blanks, blanks, passes)
    start = time.perf_counter()
    for lo in range(0, len(records), batch_size):
        chunk = records[lo : lo + batch_size]
        tokens = torch.tensor([parse_grid(r.puzzle, None) for r in chunk], device=device)
        target = torch.tensor([parse_grid(s, None) for s in solutions[lo : lo + batch_size]], device=device)
        autocast = torch.autocast(torch.device(device).type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
        with autocast:
            seeds = [puzzle_seed(seed, lo + i) for i in range(len(chunk))]  # per puzzle: any batch size
            final = decode_final(model, tokens, strategy, temperature=temperature, seed=seeds)
        blank = tokens == model.mask_id
        right = (final.tokens == target) & blank
        stats = torch.stack([(final.tokens == target).all(1).long(), right.sum(1), blank.sum(1), final.passes], 1)
        for rec, (solved, n_right, n_blank, passes) in zip(chunk, stats.tolist()):  # one host read per batch
            rows.append((rec.level, bool(solved), n_right, n_blank, passes))
        if progress:
            progress(len(chunk))
    result = _summarise(rows)
    result["seconds"] = round(time.perf_counter() - start, 3)
    result["passes"] = [r[4] for r in rows]
    levels = {r[0] for r in rows}
    if levels != {None}:
        groups = defaultdict(list)
        for r in rows:
            groups[r[0] or "unlabelled"].append(r)
        result["by_level"] = {level: _summarise(group) for level, group in groups.items()}
    return result


def _summarise(rows: list[tuple]) -> dict:
    n = len(rows)
    return {
        "n": n,
        "accuracy": sum(r[1] for r in rows) / n,
        "cell_accuracy": sum(r[2] for r in rows) / max(1, sum(r[3] for r in rows)),
        "mean_passes": sum(r[4] for r in rows) / n,
    }
