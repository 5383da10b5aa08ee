"""Domains the app can show, and the puzzles a user picks in them (no streamlit, no torch).

A :class:`Domain` names a grid geometry, where its model comes from and where its fast MI source comes
from. Pages are written against this registry, so a new domain (proteins, in their own issue) adds an
entry here and figure builders for its layout; the pages do not branch on Sudoku.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mi_core.domains.sudoku import (
    SUDOKU4,
    SUDOKU9,
    Geometry,
    PuzzleRecord,
    SudokuFormatError,
    parse_puzzle_text,
    to_string,
    validate,
)
from mi_core.domains.sudoku_gen import random_puzzle
from mi_core.domains.sudoku_solver import count_solutions

ROOT = Path(__file__).resolve().parent.parent
PRESETS_PATH = ROOT / "assets" / "examples" / "sudoku_presets.json"
MAX_UPLOAD_BYTES = 5 * 2**20


@dataclass(frozen=True)
class Domain:
    """One kind of input the app shows: ``key`` names it in code, ``short`` in the URL and the picker.

    ``model_env``/``model_default``: the environment variable naming the model weights and its default
    (both None: the domain's model is built in, e.g. the exact 4x4 oracle). ``estimator_env``/
    ``estimator_default``: the same for the neural MI estimator (None: the domain has none and its fast MI
    map is the exact probe). ``exact_model``: the model's conditionals are exact. ``fallback_eps``: pruning
    of the exact probe used for the fast map when no estimator is available. ``clue_range``: givens a
    generated puzzle may have. ``require_unique``: refuse puzzles with several solutions (the exact 4x4
    oracle allows them: its MI is zero once the solution is unique).
    """

    key: str
    label: str
    short: str
    geometry: Geometry
    model_env: str | None = None
    model_default: str | None = None
    estimator_env: str | None = None
    estimator_default: str | None = None
    exact_model: bool = False
    fallback_eps: float = 1e-3
    clue_range: tuple[int, int] = (24, 60)
    require_unique: bool = True

    def __post_init__(self):
        if (self.model_env is None) != (self.model_default is None):
            raise ValueError(f"domain {self.key}: give both model_env and model_default, or neither")
        if not 0 <= self.fallback_eps < 1:
            raise ValueError(f"domain {self.key}: fallback_eps must be in [0, 1), got {self.fallback_eps}")
        lo, hi = self.clue_range
        if not 0 < lo <= hi <= self.geometry.cells:
            raise ValueError(f"domain {self.key}: bad clue_range {self.clue_range}")

    @property
    def cells(self) -> int:
        return self.geometry.cells

    @property
    def n_values(self) -> int:
        return self.geometry.n

    def model_path(self) -> Path | None:
        """The model weights this domain loads (None: a built-in model)."""
        if self.model_env is None:
            return None
        return _resolve(os.environ.get(self.model_env) or self.model_default)

    def estimator_path(self) -> Path | None:
        """The MI estimator weights this domain would load (None: the domain has no estimator)."""
        if self.estimator_env is None:
            return None
        return _resolve(os.environ.get(self.estimator_env) or self.estimator_default)

    def cell_label(self, cell: int) -> str:
        return f"r{cell // self.geometry.n + 1}c{cell % self.geometry.n + 1}"

    def labels(self) -> list[str]:
        return [self.cell_label(c) for c in range(self.cells)]


def _resolve(path: str) -> Path:
    p = Path(path)
    return p if p.is_absolute() else ROOT / p


DOMAINS: dict[str, Domain] = {
    "sudoku9": Domain(
        "sudoku9", "Sudoku 9x9 (trained MDM)", "9x9", SUDOKU9,
        model_env="MI_LENS_SUDOKU_MODEL", model_default="assets/sudoku_mdm.safetensors",
        estimator_env="MI_LENS_SUDOKU_ESTIMATOR", estimator_default="assets/sudoku_mi_estimator.safetensors",
    ),
    "sudoku4": Domain("sudoku4", "Sudoku 4x4 (exact oracle)", "4x4", SUDOKU4, exact_model=True, fallback_eps=0.0,
                      clue_range=(4, 12), require_unique=False),
}


def get_domain(key: str) -> Domain:
    if key not in DOMAINS:
        raise ValueError(f"unknown domain {key!r}; choose one of {', '.join(DOMAINS)}")
    return DOMAINS[key]


@dataclass(frozen=True)
class Puzzle:
    """A validated puzzle: ``digits`` (0 for blank), its ``solution`` when unique (else None: any grid that
    keeps the rules is right) and a display name."""

    domain: str
    digits: tuple[int, ...]
    solution: tuple[int, ...] | None
    name: str = ""

    @property
    def text(self) -> str:
        return to_string(self.digits)

    @property
    def solution_text(self) -> str | None:
        return None if self.solution is None else to_string(self.solution)

    @property
    def givens(self) -> np.ndarray:
        """``(N,)`` bool: True at given cells."""
        return np.asarray(self.digits) > 0

    @property
    def blanks(self) -> list[int]:
        return [c for c, d in enumerate(self.digits) if d == 0]


def make_puzzle(domain: Domain, text: str, name: str = "") -> Puzzle:
    """Parse and validate ``text`` for ``domain``.

    Raises:
        SudokuError subclasses (ValueError): wrong length or characters, conflicting givens, no solution
        or (when the domain requires it) more than one solution, each naming the problem.
    """
    digits, solution = validate(text, size=domain.cells, require_unique=domain.require_unique)
    unique = domain.require_unique or count_solutions(digits, 2) == 1
    return Puzzle(domain.key, tuple(digits), tuple(solution) if unique else None, name)


@dataclass(frozen=True)
class Preset:
    name: str
    puzzle: str
    note: str = ""


def load_presets(path: Path = PRESETS_PATH) -> dict[str, list[Preset]]:
    """Presets per domain key from the shipped JSON (an empty dict when the file is absent)."""
    if not path.is_file():
        return {}
    raw = json.loads(path.read_text())
    return {key: [Preset(p["name"], p["puzzle"], p.get("note", "")) for p in raw.get(key, [])] for key in DOMAINS}


def generate(domain: Domain, clues: int, seed: int) -> Puzzle:
    """A unique-solution puzzle with ``clues`` givens from ``seed`` (raises ValueError when out of range)."""
    lo, hi = domain.clue_range
    if not lo <= clues <= hi:
        raise ValueError(f"a generated {domain.label} puzzle needs {lo}-{hi} clues, got {clues}")
    digits, solution = random_puzzle(clues, seed, domain.geometry)
    return Puzzle(domain.key, tuple(digits), tuple(solution), f"generated ({clues} clues, seed {seed})")


def read_upload(name: str, data: bytes, domain: Domain) -> list[PuzzleRecord]:
    """The puzzles of ``domain``'s size in an uploaded ``.txt`` (one a line) or ``.csv`` (a ``puzzle`` column).

    Raises:
        SudokuFormatError: too big, not UTF-8 text, malformed, or no puzzle of the domain's size.
    """
    if len(data) > MAX_UPLOAD_BYTES:
        raise SudokuFormatError(f"{name} is {len(data) / 2**20:.1f} MiB; uploads are limited to 5 MiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SudokuFormatError(f"{name} is not a UTF-8 text file") from None
    records = parse_puzzle_text(text, csv_format=name.lower().endswith(".csv"), name=name)
    fitting = [r for r in records if len(r.puzzle) == domain.cells]
    if not fitting:
        raise SudokuFormatError(f"{name} has no {domain.cells}-cell puzzles for {domain.label}")
    return fitting
