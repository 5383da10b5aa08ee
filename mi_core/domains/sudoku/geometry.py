"""Sudoku geometry (rows, columns, boxes of an ``n x n`` grid) and the base input errors; the lowest Sudoku
module, below both the grid API and the solver."""

from __future__ import annotations

from dataclasses import dataclass

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
