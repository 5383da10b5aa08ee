"""Domains the app can show, and the puzzles a user picks in them (no streamlit, no torch).

A :class:`Domain` names its layout (a Sudoku grid geometry, or a sequence of any length), where its model
comes from and where its fast MI source comes from. Pages are written against this registry and branch
only on the layout (``"grid"`` or ``"sequence"``), which picks the figure builders; a new domain with an
existing layout adds an entry here. Sequence inputs (proteins: presets, pasted text, FASTA uploads and
masking) are read in :mod:`mi_lens_app.sequences`.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mi_core.domains import protein
from mi_core.domains.sudoku import (
    SUDOKU4,
    SUDOKU9,
    Geometry,
    PuzzleRecord,
    SudokuFormatError,
    parse_grid,
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

    ``geometry``: the Sudoku grid; None for a sequence domain (proteins), whose length varies by input.
    ``model_env``/``model_default``: the environment variable naming the model and its default (both None:
    the domain's model is built in, e.g. the exact 4x4 oracle); for a sequence domain the value is a spec
    its loader reads (``auto``, or a weights path). ``model_fallback``: the weights file a keyword spec
    such as ``auto`` falls back to; ``stamp_envs``: more variables naming files the model may read (their
    modification times join the cache key). ``estimator_env``/
    ``estimator_default``: the same for the neural MI estimator (None: the domain has none and its fast MI
    map is the exact probe). ``exact_model``: the model's conditionals are exact. ``fallback_eps``: pruning
    of the exact probe used for the fast map when no estimator is available. ``clue_range``: givens a
    generated puzzle may have. ``require_unique``: refuse puzzles with several solutions (the exact 4x4
    oracle allows them: its MI is zero once the solution is unique). ``probe_fallback``: without a usable
    estimator, MI-reading decoders take their MI from the pruned exact probe at each step (its passes are
    counted apart) instead of refusing to run. ``selector_env``/``selector_default``: the learned-order
    selector the ``learned`` sampler runs (None: none is trained for this domain, and ``learned`` is not
    offered).
    """

    key: str
    label: str
    short: str
    geometry: Geometry | None
    model_env: str | None = None
    model_default: str | None = None
    model_fallback: str | None = None
    stamp_envs: tuple[str, ...] = ()
    estimator_env: str | None = None
    estimator_default: str | None = None
    exact_model: bool = False
    fallback_eps: float = 1e-3
    clue_range: tuple[int, int] = (24, 60)
    require_unique: bool = True
    probe_fallback: bool = False
    selector_env: str | None = None
    selector_default: str | None = None

    def __post_init__(self):
        if (self.model_env is None) != (self.model_default is None):
            raise ValueError(f"domain {self.key}: give both model_env and model_default, or neither")
        if (self.selector_env is None) != (self.selector_default is None):
            raise ValueError(f"domain {self.key}: give both selector_env and selector_default, or neither")
        if not 0 <= self.fallback_eps < 1:
            raise ValueError(f"domain {self.key}: fallback_eps must be in [0, 1), got {self.fallback_eps}")
        lo, hi = self.clue_range
        if self.geometry is not None and not 0 < lo <= hi <= self.geometry.cells:
            raise ValueError(f"domain {self.key}: bad clue_range {self.clue_range}")

    @property
    def layout(self) -> str:
        """``"grid"`` (Sudoku, fixed cells) or ``"sequence"`` (proteins, any length)."""
        return "grid" if self.geometry is not None else "sequence"

    @property
    def cells(self) -> int:
        if self.geometry is None:
            raise ValueError(f"{self.label} sequences have no fixed length")
        return self.geometry.cells

    @property
    def value_names(self) -> tuple[str, ...]:
        """The name of each value index: digits ``1..n``, or the 20 amino-acid letters."""
        if self.geometry is None:
            return tuple(protein.AMINO_ACIDS)
        return tuple(str(d) for d in range(1, self.geometry.n + 1))

    @property
    def n_values(self) -> int:
        return len(self.value_names)

    def parse_state(self, text: str) -> list[int]:
        """Token ids of a state string (a grid; or letters with ``_`` for masked residues)."""
        if self.geometry is None:
            return protein.tokenize(text).tolist()
        return parse_grid(text, self.cells)

    def state_text(self, tokens) -> str:
        """The state string of token ids (inverse of :meth:`parse_state`)."""
        return protein.detokenize(tokens) if self.geometry is None else to_string(tokens)

    def model_spec(self) -> str | None:
        """What the model loader is given: the environment's value or the default (None: built in)."""
        if self.model_env is None:
            return None
        return os.environ.get(self.model_env) or self.model_default

    def model_path(self) -> Path | None:
        """The model weights this domain loads (None: a built-in model); a keyword spec (``auto``) names
        the fallback weights."""
        spec = self.model_spec()
        if spec is None:
            return None
        if self.model_fallback is not None and _is_keyword(spec):
            return _resolve(self.model_fallback)
        return _resolve(spec)

    def stamp_paths(self) -> list[Path]:
        """The files whose modification times key the model's cached results."""
        extra = [_resolve(os.environ[e]) for e in self.stamp_envs if os.environ.get(e)]
        path = self.model_path()
        return ([] if path is None else [path]) + extra

    def estimator_path(self) -> Path | None:
        """The MI estimator weights this domain would load (None: the domain has no estimator)."""
        if self.estimator_env is None:
            return None
        return _resolve(os.environ.get(self.estimator_env) or self.estimator_default)

    def selector_path(self) -> Path | None:
        """The order selector weights this domain would load (None: the domain has no selector)."""
        if self.selector_env is None:
            return None
        return _resolve(os.environ.get(self.selector_env) or self.selector_default)

    def cell_label(self, cell: int) -> str:
        if self.geometry is None:
            return str(cell + 1)
        return f"r{cell // self.geometry.n + 1}c{cell % self.geometry.n + 1}"

    def labels(self) -> list[str]:
        return [self.cell_label(c) for c in range(self.cells)]


def _resolve(path: str) -> Path:
    p = Path(path)
    return p if p.is_absolute() else ROOT / p


def _is_keyword(spec: str) -> bool:
    """A model spec that names a choice (``auto``, ``esmc``) rather than a file."""
    return "/" not in spec and "." not in spec


DOMAINS: dict[str, Domain] = {
    "sudoku9": Domain(
        "sudoku9", "Sudoku 9x9 (trained MDM)", "9x9", SUDOKU9,
        model_env="MI_LENS_SUDOKU_MODEL", model_default="assets/sudoku_mdm.safetensors",
        estimator_env="MI_LENS_SUDOKU_ESTIMATOR", estimator_default="assets/sudoku_mi_estimator.safetensors",
        selector_env="MI_LENS_SUDOKU_SELECTOR", selector_default="assets/sudoku_order_selector.safetensors",
    ),
    "sudoku4": Domain("sudoku4", "Sudoku 4x4 (exact oracle)", "4x4", SUDOKU4, exact_model=True, fallback_eps=0.0,
                      clue_range=(4, 12), require_unique=False),
    "protein": Domain(
        "protein", "Protein", "protein", None,
        model_env="MI_LENS_PROTEIN_MODEL", model_default="auto", model_fallback="assets/protein_mdm.safetensors",
        stamp_envs=("MI_LENS_ESMC_WEIGHTS",),
        estimator_env="MI_LENS_PROTEIN_ESTIMATOR", estimator_default="assets/protein_mi_estimator.safetensors",
        require_unique=False, probe_fallback=True,
        selector_env="MI_LENS_PROTEIN_SELECTOR", selector_default="assets/protein_order_selector.safetensors",
    ),
}


def get_domain(key: str) -> Domain:
    if key not in DOMAINS:
        raise ValueError(f"unknown domain {key!r}; choose one of {', '.join(DOMAINS)}")
    return DOMAINS[key]


@dataclass(frozen=True)
class Puzzle:
    """A validated puzzle: ``digits`` (token ids, 0 for blank), its ``solution`` when unique (else None: any
    grid that keeps the rules is right) and a display name. For a protein, ``digits`` are residue tokens
    and ``solution`` the native sequence (0 where it is unknown too), when known."""

    domain: str
    digits: tuple[int, ...]
    solution: tuple[int, ...] | None
    name: str = ""

    @property
    def text(self) -> str:
        return get_domain(self.domain).state_text(self.digits)

    @property
    def solution_text(self) -> str | None:
        return None if self.solution is None else get_domain(self.domain).state_text(self.solution)

    @property
    def length(self) -> int:
        return len(self.digits)

    def label(self, cell: int) -> str:
        """A cell's name: ``r3c5`` on a grid; residue letter and 1-based position (``M1``; ``_7`` masked)."""
        domain = get_domain(self.domain)
        if domain.layout == "grid":
            return domain.cell_label(cell)
        token = self.digits[cell]
        return f"{domain.value_names[token - 1] if token else protein.MASK_CHAR}{cell + 1}"

    def labels(self) -> list[str]:
        return [self.label(c) for c in range(self.length)]

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
        or (when the domain requires it) more than one solution, each naming the problem; for a sequence
        domain, ProteinInputError naming a bad letter and its position.
    """
    if domain.layout == "sequence":
        return Puzzle(domain.key, tuple(domain.parse_state(text)), None, name)
    digits, solution = validate(text, size=domain.cells, require_unique=domain.require_unique)
    unique = domain.require_unique or count_solutions(digits, 2) == 1
    return Puzzle(domain.key, tuple(digits), tuple(solution) if unique else None, name)


@dataclass(frozen=True)
class Preset:
    name: str
    puzzle: str
    note: str = ""


def load_presets(path: Path = PRESETS_PATH) -> dict[str, list[Preset]]:
    """Presets per grid domain key from the shipped JSON (an empty dict when the file is absent); protein
    presets are read by :func:`mi_lens_app.sequences.load_protein_presets`."""
    if not path.is_file():
        return {}
    raw = json.loads(path.read_text())
    return {key: [Preset(p["name"], p["puzzle"], p.get("note", "")) for p in raw.get(key, [])]
            for key, d in DOMAINS.items() if d.layout == "grid"}


def clamp_contradicts(domain: Domain, digits: tuple[int, ...], cell: int, digit: int) -> bool:
    """Whether writing ``digit`` into blank ``cell`` leaves a grid no solution agrees with (a rule broken
    outright, or one the givens rule out a few steps later)."""
    clamped = list(digits)
    clamped[cell] = digit
    return count_solutions(clamped, 1) == 0


def generate(domain: Domain, clues: int, seed: int) -> Puzzle:
    """A unique-solution puzzle with ``clues`` givens from ``seed`` (raises ValueError when out of range)."""
    lo, hi = domain.clue_range
    if not lo <= clues <= hi:
        raise ValueError(f"a generated {domain.label} puzzle needs {lo}-{hi} clues, got {clues}")
    digits, solution = random_puzzle(clues, seed, domain.geometry)
    return Puzzle(domain.key, tuple(digits), tuple(solution), f"generated ({clues} clues, seed {seed})")


def upload_text(name: str, data: bytes, max_bytes: int, error: type[ValueError]) -> str:
    """An uploaded file's text; ``error`` (naming the file) when it is over ``max_bytes`` or not UTF-8."""
    if len(data) > max_bytes:
        raise error(f"{name} is {len(data) / 2**20:.1f} MiB; uploads are limited to {max_bytes / 2**20:g} MiB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise error(f"{name} is not a UTF-8 text file") from None


def _line_records(lines, cells: int):
    """``PuzzleRecord`` of every line of ``cells`` characters (one puzzle a line; ``#`` comments)."""
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if len(line) == cells and not line.startswith("#"):
            yield PuzzleRecord(line, line=lineno)


def _csv_records(lines, cells: int, name: str):
    """``PuzzleRecord`` of every row whose ``puzzle`` column has ``cells`` characters (``solution`` and
    ``level`` kept when present)."""
    rows = csv.reader(ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#"))
    header = [h.strip().lower() for h in next(rows, [])]
    if "puzzle" not in header:
        raise SudokuFormatError(f"{name}: a CSV puzzle file needs a 'puzzle' column, found {header or 'no header'}")
    col = {key: header.index(key) for key in ("puzzle", "solution", "level") if key in header}
    for lineno, row in enumerate(rows, start=2):
        puzzle, solution, level = (row[col[k]].strip() if k in col and col[k] < len(row) else ""
                                   for k in ("puzzle", "solution", "level"))
        if len(puzzle) == cells:
            yield PuzzleRecord(puzzle, solution or None, level or None, lineno)


def read_upload(name: str, data: bytes, domain: Domain) -> list[PuzzleRecord]:
    """The puzzles of ``domain``'s size in an uploaded ``.txt`` (one a line) or ``.csv`` (a ``puzzle`` column).

    The file is read line by line and each row only measured (a 5 MiB file of 64,000 puzzles in well under a
    second); the puzzle a user picks is checked in full then (:func:`make_puzzle`), so a bad row elsewhere in
    the file does not stop the others.

    Raises:
        SudokuFormatError: too big, not UTF-8 text, no ``puzzle`` column in a CSV, or no puzzle of the
        domain's size.
    """
    text = upload_text(name, data, MAX_UPLOAD_BYTES, SudokuFormatError)
    lines = io.StringIO(text)
    if name.lower().endswith(".csv"):
        records = list(_csv_records(lines, domain.cells, name))
    else:
        records = list(_line_records(lines, domain.cells))
    if not records:
        raise SudokuFormatError(f"{name} has no {domain.cells}-cell puzzles for {domain.label}")
    return records
