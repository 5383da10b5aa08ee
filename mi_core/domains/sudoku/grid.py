"""Sudoku grids: ``n*n`` characters row by row (``.`` or ``0`` blank). Token ids: ``MASK_ID`` for a blank,
else the digit ``d`` (1..n), whose value index (the model's logit slot) is ``d - 1``."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch

from mi_core.domain import DOMAINS, Domain, describe_char
from mi_core.domains.sudoku.solver import (
    SUDOKU4,
    SUDOKU9,
    Geometry,
    SudokuError,
    SudokuFormatError,
    geometry_for_length,
    solve_count,
)
from mi_core.io import MISSING_CELLS, csv_problem, missing_file, not_text, quotes_closed

MASK_ID = 0
BLANK_CHARS = ".0"


class SudokuConflictError(SudokuError):
    """A digit repeated in a row, column or box."""


class NoSolutionError(SudokuError):
    """The givens admit no solution."""


class MultipleSolutionsError(SudokuError):
    """The givens admit more than one solution."""


def parse_grid(text: str, size: int | None = 81) -> list[int]:
    """One grid string -> digits, 0 for blank; ``size`` cells (``None``: 16 or 81). Whitespace is ignored, and so is
    the drawing of a grid printed with box lines: ``|`` and ``+``, and lines of only ``-``, ``=``, ``+`` and ``|``.
    SudokuFormatError on a wrong length or a character that is neither a digit nor a blank."""
    if not isinstance(text, str):
        raise SudokuFormatError(f"a Sudoku must be given as a string, got {type(text).__name__}")
    rows = [line for line in text.splitlines() if not line.strip() or line.strip(" -=+|")]
    chars = "".join("".join(rows).split()).replace("|", "").replace("+", "")
    if not chars:
        raise SudokuFormatError("the Sudoku string holds only the box lines - = + | (blanks are '.' or '0')"
                                if text.strip() else "the Sudoku string is empty")
    hidden = next(((i, ch) for i, ch in enumerate(chars) if not ch.isprintable()), None)
    if hidden is not None:  # a zero-width space pasted along: it would only show as one character too many
        raise SudokuFormatError(f"invisible character {describe_char(hidden[1])} at position {hidden[0] + 1}: "
                                "remove it")
    try:
        expected = geometry_for_length(len(chars)).cells if size is None else size
    except SudokuFormatError as err:
        raise SudokuFormatError(f"{err}{_stray_note(chars)}") from None
    if len(chars) != expected:
        raise SudokuFormatError(f"a Sudoku has {expected} cells, got {len(chars)} characters{_stray_note(chars)}")
    n = math.isqrt(expected)
    allowed = BLANK_CHARS + "123456789"[:n]  # ASCII only: str.isdigit() would also take '٣', '３' or '²'
    bad = next(((pos, ch) for pos, ch in enumerate(chars) if ch not in allowed), None)
    if bad is not None:
        row, col = divmod(bad[0], n)
        raise SudokuFormatError(f"bad character {describe_char(bad[1])} at position {bad[0] + 1} (row {row + 1}, "
                                f"column {col + 1}): use ASCII digits 1-{n}, '.' or '0'")
    return [0 if ch in BLANK_CHARS else int(ch) for ch in chars]


def _stray_note(chars: str) -> str:
    """For a grid of the wrong length: its first character that is neither a digit nor a blank, if any (a grid
    pasted with commas is not only too long)."""
    stray = next(((i, ch) for i, ch in enumerate(chars) if ch not in BLANK_CHARS + "123456789"), None)
    if stray is None:
        return ""
    return f", among them {describe_char(stray[1])} at position {stray[0] + 1}, neither a digit nor a blank ('.' or '0')"


def solution_conflict(puzzle: list[int], solution: list[int]) -> str | None:
    """Why ``solution`` cannot be the solution of ``puzzle`` (a blank, a repeated digit, or a given it
    changes), or None when it is a complete valid grid that keeps every given."""
    geom = geometry_for_length(len(puzzle))
    if len(solution) != len(puzzle):
        return f"the solution has {len(solution)} cells, the puzzle {len(puzzle)}"
    for cell, (g, s) in enumerate(zip(puzzle, solution)):
        if s == 0:
            return f"the solution has a blank at row {cell // geom.n + 1}, column {cell % geom.n + 1}"
        if g and g != s:
            return (f"the solution contradicts the givens at row {cell // geom.n + 1}, column {cell % geom.n + 1} "
                    f"(given {g}, solution {s})")
    conflict = find_conflict(solution)
    return f"the solution is not a valid grid: {conflict}" if conflict else None


def find_conflict(digits: list[int]) -> str | None:
    """Describe the first digit repeated in a row, column or box, or return None."""
    geom = geometry_for_length(len(digits))
    rows, cols, boxes = geom.indices()
    for kind, unit in (("row", rows), ("column", cols), ("box", boxes)):
        seen: dict[tuple[int, int], int] = {}
        for cell, d in enumerate(digits):
            if d == 0:
                continue
            key = (int(unit[cell]), d)
            if key in seen:
                first = seen[key]
                return (f"digit {d} appears twice in {kind} {key[0] + 1}: at cells (row {first // geom.n + 1}, "
                        f"col {first % geom.n + 1}) and (row {cell // geom.n + 1}, col {cell % geom.n + 1})")
            seen[key] = cell
    return None


def validate(text: str, size: int | None = 81, require_unique: bool = True) -> tuple[list[int], list[int]]:
    """Parse and validate a puzzle -> ``(digits, solution)``; raises SudokuFormatError, SudokuConflictError,
    NoSolutionError or (with ``require_unique``) MultipleSolutionsError."""
    digits = parse_grid(text, size)
    conflict = find_conflict(digits)
    if conflict:
        raise SudokuConflictError(conflict)
    count, solution = solve_count(digits, limit=2)
    if count == 0:
        raise NoSolutionError("this puzzle has no solution")
    if count > 1 and require_unique:
        raise MultipleSolutionsError("this puzzle has more than one solution")
    return digits, solution


def to_string(digits, blank: str = ".") -> str:
    """Digits (list, array or 1-D tensor; 0 or MASK_ID for blank) to a grid string."""
    values = digits.tolist() if hasattr(digits, "tolist") else list(digits)
    return "".join(blank if d == MASK_ID else str(int(d)) for d in values)


def to_tokens(grids, device: torch.device | str = "cpu") -> torch.Tensor:
    """Grid strings or digit lists to token ids ``(B, cells)`` int64 (blanks become ``MASK_ID``)."""
    rows = [parse_grid(g, None) if isinstance(g, str) else list(g) for g in grids]
    return torch.tensor(rows, dtype=torch.long, device=device)


@dataclass(frozen=True)
class PuzzleRecord:
    """One puzzle read from a file; ``solution`` and ``level`` may be absent."""

    puzzle: str
    solution: str | None = None
    level: str | None = None
    line: int = 0


def read_puzzles(path: str | Path, limit: int | None = None) -> list[PuzzleRecord]:
    """A ``.txt`` file (one puzzle a line, ``#`` comments) or a ``.csv`` with a ``puzzle`` column (and optional
    ``solution``, ``level``); streamed up to ``limit`` puzzles. SudokuFormatError names a malformed line."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory, not a puzzle file (give a .txt or .csv file)")
    if not path.is_file():
        raise FileNotFoundError(missing_file(path, "puzzle file not found"))
    with path.open(encoding="utf-8-sig", newline="") as handle:
        try:
            lines = (raw.rstrip("\r\n") for raw in handle)
            return _parse(lines, path.suffix.lower() == ".csv", str(path), limit)
        except UnicodeDecodeError:
            raise SudokuFormatError(not_text(path)) from None


def solutions_for(records: list[PuzzleRecord]) -> list[str]:
    """The unique solution of each record (the file's, else the solver's); ValueError names a puzzle with none
    or several, which a benchmark could otherwise score against the wrong grid."""
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


def parse_puzzle_text(text: str, csv_format: bool, name: str = "input", limit: int | None = None) -> list[PuzzleRecord]:
    """Parse the contents of a puzzle file (see :func:`read_puzzles`)."""
    return _parse(iter(text.splitlines()), csv_format, name, limit)


def _parse(lines, csv_format: bool, name: str, limit: int | None) -> list[PuzzleRecord]:
    try:
        lines = quotes_closed(lines, SudokuFormatError, name) if csv_format else lines
        records = list(islice(_records(lines, csv_format, name), limit or None))
    except csv.Error as err:
        raise SudokuFormatError(f"{name}: {csv_problem(err)}") from None
    if not records:
        raise SudokuFormatError(f"{name} contains no puzzles")
    return records


def text_row(line: str) -> dict:
    """A ``.txt`` line: the puzzle, or the puzzle and its solution as two fields of one length (a space or a
    comma between); a grid written cell by cell with spaces stays one puzzle."""
    fields = line.replace(",", " ").split()
    if len(fields) == 2 and len(fields[0]) == len(fields[1]) >= 16:
        return {"puzzle": fields[0], "solution": fields[1]}
    return {"puzzle": line.strip()}


def _line_hint(line: str, first: bool) -> str:
    """For a ``.txt`` line that is no puzzle: what it looks like instead (one row of a grid written over several
    lines, or a header), and how to write it."""
    chars = "".join(line.split()).replace("|", "")
    if len(chars) in (4, 9) and all(ch in BLANK_CHARS + "123456789" for ch in chars):
        return (f" (one row of a grid? a puzzle file holds one puzzle a line: write each grid's {len(chars)} rows "
                f"one after another on one line of {len(chars) ** 2} characters)")
    if first and any(ch.isalpha() for ch in chars):
        return " (a header line? a .txt puzzle file has none: remove it, or name the file .csv with a 'puzzle' column)"
    return ""


def no_puzzle_column(name: str, fields: list[str]) -> SudokuFormatError:
    """The error for a CSV header without a ``puzzle`` column (``fields``: its names), with what it looks like
    instead: columns split by semicolons or tabs, or no header at all (a puzzle in its place)."""
    found = f"{name}: a CSV puzzle file needs a 'puzzle' column, found {fields or 'no header'}"
    sep = next((word for mark, word in ((";", "semicolons"), ("\t", "tabs")) if len(fields) == 1 and mark in fields[0]),
               None)
    if sep:
        return SudokuFormatError(f"{found} (its columns are separated by {sep}: save it comma-separated)")
    cells = ["".join(f.split()) for f in fields]
    if any(len(c) in (16, 81) and all(ch in BLANK_CHARS + "123456789" for ch in c) for c in cells):
        return SudokuFormatError(f"{found} (the first line is a puzzle, not a header: add a first line naming the "
                                 "columns, e.g. puzzle,solution)")
    return SudokuFormatError(found)


def _records(lines, csv_format: bool, name: str):
    numbers = []  # the file's line number of each line kept

    def kept():
        for no, line in enumerate(lines, start=1):
            if line.strip() and not line.lstrip().startswith("#"):
                numbers.append(no)
                yield line

    if csv_format:
        reader = csv.DictReader(kept())
        fields = [f.strip().lower() for f in (reader.fieldnames or [])]
        if "puzzle" not in fields:
            raise no_puzzle_column(name, fields)
        rows = ((numbers[reader.line_num - 1], {k.strip().lower(): (v or "").strip() for k, v in row.items()
                                                if k is not None}) for row in reader)
    else:
        rows = ((numbers[-1], text_row(line)) for line in kept())
    for lineno, row in rows:
        try:
            digits = parse_grid(row["puzzle"], None)
            solution = None
            if (row.get("solution") or "").lower() in MISSING_CELLS:  # R's NA, pandas' nan: no solution given
                row["solution"] = ""
            if row.get("solution"):
                try:
                    sol_digits = parse_grid(row["solution"], len(digits))
                except SudokuFormatError as err:
                    raise SudokuFormatError(f"solution: {err}") from None
                problem = solution_conflict(digits, sol_digits)
                if problem:
                    raise SudokuFormatError(problem)
                solution = to_string(sol_digits)
        except SudokuFormatError as err:
            hint = "" if csv_format else _line_hint(row["puzzle"], first=lineno == numbers[0])
            raise SudokuFormatError(f"{name}, line {lineno}: {err}{hint}") from None
        yield PuzzleRecord(to_string(digits), solution, row.get("level") or None, lineno)


@dataclass(frozen=True)
class GridDomain(Domain):
    """A Sudoku of ``geometry``: digits ``1..n``, cells named ``r3c5``, rows, columns and boxes as its rules."""

    geometry: Geometry = SUDOKU9
    layout: ClassVar[str] = "grid"
    require_unique: bool = True
    mask_char: str = "."
    nouns: tuple[str, str] = ("cell", "digit")

    def __post_init__(self):
        object.__setattr__(self, "length", self.geometry.cells)
        super().__post_init__()
        lo, hi = self.clue_range
        if not 0 < lo <= hi <= self.geometry.cells:
            raise ValueError(f"domain {self.key}: bad clue_range {self.clue_range}")

    def parse_state(self, text: str) -> list[int]:
        return parse_grid(text, self.cells)

    def parse_input(self, text: str) -> list[int]:
        return validate(text, size=self.cells, require_unique=False)[0]

    def state_text(self, tokens) -> str:
        return to_string(self.state_ids(tokens))

    def cell_label(self, cell: int) -> str:
        n = self.geometry.n
        return f"r{cell // n + 1}c{cell % n + 1}"

    def rules(self, length: int | None = None) -> np.ndarray:
        return self.geometry.peers()

    def solution(self, tokens: list[int]) -> list[int] | None:
        count, found = solve_count(list(tokens), limit=2)
        return found if count == 1 else None

    def read_inputs(self, path, limit: int | None = None, level: str | None = None) -> tuple[list, list, list]:
        """:func:`read_inputs` of this domain's geometry: a ``level`` keeps that level's puzzles."""
        return read_inputs(path, self.geometry, limit, level)


def read_inputs(path, geometry: Geometry, limit: int | None = None,
                level: str | None = None) -> tuple[list, list, list]:
    """``(templates, solutions, levels)`` of a file of ``geometry``'s puzzles (see :func:`read_puzzles`); ``level``
    keeps that level's puzzles (before ``limit``); each puzzle needs exactly one solution."""
    records = read_puzzles(path, limit=None if level else limit)
    other = next((r for r in records if len(r.puzzle) != geometry.cells), None)
    if other is not None:
        raise ValueError(f"{path}: the puzzle on line {other.line} has {len(other.puzzle)} cells, not the "
                         f"{geometry.cells} of a {geometry.n}x{geometry.n} Sudoku{_domain_note(len(other.puzzle))}")
    if level:
        levels = sorted({r.level for r in records if r.level})
        if not levels:
            raise ValueError(f"--level {level}: {path} has no levels (a .csv file with a level column has)")
        records = [r for r in records if (r.level or "").lower() == level.lower()][:limit]
        if not records:
            raise ValueError(f"no puzzles of level {level!r} in {path}; its levels: {', '.join(levels)}")
    try:
        solutions = [parse_grid(s, geometry.cells) for s in solutions_for(records)]
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    return [np.asarray(parse_grid(r.puzzle, geometry.cells)) for r in records], solutions, [r.level for r in records]


def _domain_note(cells: int) -> str:
    """Which domains read grids of ``cells`` cells, for a file given to another size's domain."""
    names = [d.cli_name for d in DOMAINS.values() if isinstance(d, GridDomain) and d.cells == cells]
    return f" ({cells}-cell puzzles are read by the {' or '.join(names)} domain)" if names else ""


def digits(geometry: Geometry) -> tuple[str, ...]:
    return tuple(str(d) for d in range(1, geometry.n + 1))


__all__ = [
    "BLANK_CHARS", "Geometry", "GridDomain", "MASK_ID", "MultipleSolutionsError", "NoSolutionError",
    "PuzzleRecord", "SUDOKU4", "SUDOKU9", "SudokuConflictError", "SudokuError", "SudokuFormatError",
    "digits", "find_conflict", "geometry_for_length", "no_puzzle_column", "parse_grid", "parse_puzzle_text",
    "read_puzzles", "solution_conflict", "solutions_for", "solve_count", "text_row", "to_string", "to_tokens",
    "validate",
]
