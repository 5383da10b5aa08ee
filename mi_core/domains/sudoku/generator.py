"""Random solved grids, unique-solution puzzles, and validity-preserving grid transforms (all seeded)."""

from __future__ import annotations

import random

import numpy as np

from mi_core.domains.sudoku import SUDOKU9, Geometry
from mi_core.domains.sudoku.solver import count_solutions, grade, solve_count


def random_grid(rng: random.Random, geom: Geometry = SUDOKU9) -> list[int]:
    """A solved grid by randomised backtracking from the empty grid."""
    _, grid = solve_count([0] * geom.cells, limit=1, rng=rng)
    return grid


def make_puzzle(solution: list[int], clues: int, rng: random.Random, tries: int = 20) -> list[int]:
    """Blank cells of ``solution`` in random order while the puzzle stays unique, down to ``clues`` givens; when
    all ``tries`` orders get stuck above ``clues``, the one with fewest givens (so ``clues=0`` gives a minimal
    puzzle)."""
    cells = len(solution)
    best = list(solution)
    for _ in range(tries):
        puzzle = list(solution)
        order = list(range(cells))
        rng.shuffle(order)
        filled = cells
        for cell in order:
            if filled == clues:
                break
            keep = puzzle[cell]
            puzzle[cell] = 0
            if count_solutions(puzzle, 2) == 1:
                filled -= 1
            else:
                puzzle[cell] = keep
        if filled == clues:
            return puzzle
        if filled < sum(1 for d in best if d):
            best = puzzle
    return best


def harden(puzzle: list[int], solution: list[int], rng: random.Random, iters: int) -> tuple[list[int], int]:
    """Hill-climb on the difficulty grade: move one clue to a random blank cell, kept when the puzzle stays
    unique and its grade does not fall. Returns ``(puzzle, grade)``."""
    cur, best = list(puzzle), grade(puzzle)
    for _ in range(iters):
        clues = [i for i, d in enumerate(cur) if d]
        blanks = [i for i, d in enumerate(cur) if not d]
        trial = list(cur)
        trial[rng.choice(clues)] = 0
        cell = rng.choice(blanks)
        trial[cell] = solution[cell]
        if count_solutions(trial, 2) != 1:
            continue
        g = grade(trial)
        if g >= best:
            cur, best = trial, g
    return cur, best


def random_puzzle(clues: int, seed: int, geom: Geometry = SUDOKU9) -> tuple[list[int], list[int]]:
    """``(puzzle, solution)``: a unique puzzle with ``clues`` givens (ValueError when none is found)."""
    if not 0 < clues <= geom.cells:
        raise ValueError(f"clues must be in 1..{geom.cells}, got {clues}")
    rng = random.Random(seed)
    for _ in range(50):
        solution = random_grid(rng, geom)
        puzzle = make_puzzle(solution, clues, rng, tries=4)
        if sum(1 for d in puzzle if d) == clues:
            return puzzle, solution
    raise ValueError(f"found no unique puzzle with {clues} clues from seed {seed}; try more clues")


def random_transform(grids: np.ndarray, rng: np.random.Generator, box: int = 3, pair: int = 1) -> np.ndarray:
    """``(B, n*n)`` grids (0 blank) -> copies under one random validity-preserving transform each (digit
    relabelling, band/stack and line permutations, a transpose); ``pair`` consecutive grids share one."""
    total, n = grids.shape[0], box * box
    batch = total // pair
    g = grids.reshape(total, n, n)
    relabel = np.concatenate([np.zeros((batch, 1), np.int64), 1 + rng.permuted(np.tile(np.arange(n), (batch, 1)), axis=1)], 1)
    relabel = np.repeat(relabel, pair, 0)
    g = np.take_along_axis(relabel, g.reshape(total, -1), 1).reshape(total, n, n)
    rows = np.repeat(_line_permutations(batch, box, rng), pair, 0)
    cols = np.repeat(_line_permutations(batch, box, rng), pair, 0)
    g = np.take_along_axis(g, rows[:, :, None].repeat(n, 2), 1)
    g = np.take_along_axis(g, cols[:, None, :].repeat(n, 1), 2)
    flip = np.repeat(rng.random(batch) < 0.5, pair)
    g[flip] = g[flip].transpose(0, 2, 1)
    return g.reshape(total, n * n)


def _line_permutations(batch: int, box: int, rng: np.random.Generator) -> np.ndarray:
    """``(batch, n)`` permutations that shuffle bands and lines within each band."""
    bands = rng.permuted(np.tile(np.arange(box), (batch, 1)), axis=1)
    within = rng.permuted(np.tile(np.arange(box), (batch * box, 1)), axis=1).reshape(batch, box, box)
    return (bands[:, :, None] * box + within).reshape(batch, box * box)


def follows_rules(start, final) -> bool:
    """True when ``final`` fills every blank of ``start``, keeps its givens and repeats no digit in a row,
    column or box (the solver's answer is not read)."""
    start, final = np.asarray(start), np.asarray(final)
    given = start != 0
    return bool((final[given] == start[given]).all()) and is_valid_solution(final)


def is_valid_solution(grid) -> bool:
    """True when every row, column and box of a full grid holds each digit once."""
    g = np.asarray(grid).reshape(-1)
    geom = Geometry(int(round(len(g) ** 0.25)))
    rows, cols, boxes = geom.indices()
    want = np.arange(1, geom.n + 1)
    return all(np.array_equal(np.sort(g[idx == u]), want) for idx in (rows, cols, boxes) for u in range(geom.n))
