"""Sudoku geometry (rows, columns, boxes of an ``n x n`` grid), the base input errors, and the exact solver
and solution counter (4x4 and 9x9); the lowest Sudoku module, below the grid API.

Candidates are bit masks (bit ``d - 1`` for digit ``d``), propagated by naked and hidden singles; the search
branches on the cell with the fewest candidates.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np


class SudokuError(ValueError):
    """Base class of every error about a Sudoku input."""


class SudokuFormatError(SudokuError):
    """Wrong length or characters that are not digits or blanks."""


@dataclass(frozen=True)
class Geometry:
    """Row, column and box of every cell of an ``n x n`` Sudoku (``n = box * box``)."""

    box: int

    @property
    def n(self) -> int:
        return self.box * self.box

    @property
    def cells(self) -> int:
        return self.n * self.n

    def indices(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Row, column and box index of each cell, each ``(cells,)`` int64."""
        cells = np.arange(self.cells)
        rows, cols = cells // self.n, cells % self.n
        return rows, cols, (rows // self.box) * self.box + cols // self.box

    def peers(self) -> np.ndarray:
        """``(cells, cells)`` bool: True where two distinct cells share a row, column or box."""
        r, c, b = self.indices()
        same = (r[:, None] == r[None]) | (c[:, None] == c[None]) | (b[:, None] == b[None])
        return same & ~np.eye(self.cells, dtype=bool)


SUDOKU9 = Geometry(3)
SUDOKU4 = Geometry(2)


def geometry_for_length(length: int) -> Geometry:
    """The geometry whose grid has ``length`` cells (16 or 81)."""
    for geom in (SUDOKU9, SUDOKU4):
        if geom.cells == length:
            return geom
    raise SudokuFormatError(f"a Sudoku has 81 cells (or 16 for 4x4), got {length} characters")


@cache
def _tables(cells: int) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...], int]:
    geom = geometry_for_length(cells)
    peers = geom.peers()
    rows, cols, boxes = geom.indices()
    units = [tuple(int(c) for c in range(cells) if idx[c] == u) for idx in (rows, cols, boxes) for u in range(geom.n)]
    peer_lists = tuple(tuple(int(p) for p in peers[c].nonzero()[0]) for c in range(cells))
    return peer_lists, tuple(units), (1 << geom.n) - 1


def _eliminate(cands: list[int], cell: int, bit: int, peers) -> bool:
    """Place ``bit`` at ``cell`` and propagate naked singles; False on contradiction."""
    stack = [(cell, bit)]
    while stack:
        c, b = stack.pop()
        if not cands[c] & b:
            return False
        cands[c] = b
        for p in peers[c]:
            m = cands[p]
            if m & b:
                m &= ~b
                if not m:
                    return False
                cands[p] = m
                if not m & (m - 1):
                    stack.append((p, m))
    return True


def _hidden_singles(cands: list[int], units, peers, full: int) -> bool:
    """Place digits that fit in one cell of a unit, until nothing changes; False on contradiction."""
    changed = True
    while changed:
        changed = False
        for unit in units:
            once = twice = 0
            for c in unit:
                m = cands[c]
                twice |= once & m
                once |= m
            if once != full:
                return False  # some digit has no place in this unit
            only = once & ~twice
            if not only:
                continue
            for c in unit:
                b = cands[c] & only
                if b and cands[c] != b:
                    if b & (b - 1) or not _eliminate(cands, c, b, peers):
                        return False
                    changed = True
    return True


def _search(cands: list[int], limit: int, found: list[list[int]], units, peers, full: int, rng=None, stats=None) -> None:
    if stats is not None:
        stats[0] += 1
    if not _hidden_singles(cands, units, peers, full):
        return
    best, best_count = -1, 99
    for i, m in enumerate(cands):
        if m & (m - 1):
            k = m.bit_count()
            if k < best_count:
                best, best_count = i, k
                if k == 2:
                    break
    if best < 0:
        found.append(cands)
        return
    m = cands[best]
    bits = [1 << d for d in range(m.bit_length()) if m >> d & 1]
    if rng is not None:
        rng.shuffle(bits)
    for b in bits:
        if len(found) >= limit:
            return
        trial = cands[:]
        if _eliminate(trial, best, b, peers):
            _search(trial, limit, found, units, peers, full, rng, stats)


def solutions(digits: list[int], limit: int = 2, rng=None, stats: list[int] | None = None) -> list[list[int]]:
    """Up to ``limit`` solutions of ``digits`` (16 or 81 ints, 0 blank), in the order the search finds them; ``rng``
    (a ``random.Random``) branches in random digit order, so the first solution is a random one; ``stats[0]``
    counts the search nodes."""
    return [[m.bit_length() for m in grid] for grid in _solved_masks(digits, limit, rng, stats)]


def _solved_masks(digits: list[int], limit: int, rng, stats) -> list[list[int]]:
    """:func:`solutions` as candidate masks, one bit set in each (not yet digits)."""
    peers, units, full = _tables(len(digits))
    cands = [full] * len(digits)
    found: list[list[int]] = []
    if all(not d or _eliminate(cands, cell, 1 << (d - 1), peers) for cell, d in enumerate(map(int, digits))):
        _search(cands, limit, found, units, peers, full, rng, stats)
    return found


def solve_count(digits: list[int], limit: int = 2, rng=None,
                stats: list[int] | None = None) -> tuple[int, list[int] | None]:
    """``(count, first_solution)`` of :func:`solutions`: the count up to ``limit``; only the first is made digits."""
    found = _solved_masks(digits, limit, rng, stats)
    return len(found), ([m.bit_length() for m in found[0]] if found else None)


def count_solutions(digits: list[int], limit: int = 2) -> int:
    """Number of solutions, counted up to ``limit``."""
    return solve_count(digits, limit)[0]


def grade(digits: list[int]) -> int:
    """Difficulty grade: search nodes beyond the root to find every solution (counted up to 2), in digit order;
    a guess refuted at once by naked singles is not a node, and 0 means singles alone solve the puzzle.
    ValueError when the puzzle has no solution."""
    stats = [0]
    if not solve_count(digits, 2, stats=stats)[0]:  # no node searched when the givens contradict each other
        raise ValueError("the puzzle has no solution" if stats[0] else "the puzzle's givens contradict each other")
    return stats[0] - 1
