"""The Sudoku domain. The grid API (:mod:`mi_core.domains.sudoku.grid`) is importable from the package itself;
the domain object is :data:`mi_core.domains.sudoku.domain.SUDOKU`."""

from mi_core.domains.sudoku.grid import *  # noqa: F403  (the grid API: parse_grid, read_puzzles, SUDOKU9, ...)
from mi_core.domains.sudoku.grid import __all__  # noqa: F401
