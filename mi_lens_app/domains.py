"""The puzzles a user picks in the app's domains (no streamlit, no torch).

The domains are the core's registry (:mod:`mi_core.domain`): each
:class:`~mi_core.domain.Domain` names its layout (a Sudoku grid, or a sequence of any length), where
its model, MI estimator and order selector come from. Pages branch only on the layout (``"grid"`` or
``"sequence"``), which picks the figure builders, so a domain registered in the core shows up here. Sequence inputs (proteins: presets, pasted text, FASTA uploads and
masking) are read in :mod:`mi_lens_app.sequences`.
"""

from __future__ import annotations

import csv
import functools
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mi_core.domain import DOMAINS, ROOT, Domain, env_file
from mi_core.domain import get_domain as core_domain
from mi_core.domains.sudoku import (
    PuzzleRecord,
    SudokuFormatError,
    no_puzzle_column,
    text_row,
    validate,
)
from mi_core.domains.sudoku.domain import SUDOKU_8LAYER, SUDOKU_VIEWS, VIEWS
from mi_core.domains.sudoku.generator import random_puzzle
from mi_core.domains.sudoku.solver import count_solutions
from mi_core.io import csv_problem, decode_text, quotes_closed

# the models a user can pick for a domain, by the name its link uses: the first is the domain's own. A second
# model is the same domain with other model files (and the estimator and selector trained on them)
MODELS: dict[str, dict[str, tuple[str, Domain | None]]] = {
    "sudoku9": {"default": ("default (recurrent, 24 iterations)", None),
                "views": (f"default, {VIEWS} symmetric views", SUDOKU_VIEWS),
                "8layer": ("8 layers (the previous default)", SUDOKU_8LAYER)},
}
_VARIANTS = {d.key: d for choices in MODELS.values() for _, d in choices.values() if d is not None}


def named(key: str) -> dict[str, str]:
    """How an export names domain ``key``: the domain the command line takes and, for a second model of one
    (``sudoku9_views``), the model's link name (``{"domain": "sudoku9", "model": "views"}``)."""
    for base, choices in MODELS.items():
        for name, (_, variant) in choices.items():
            if variant is not None and variant.key == key:
                return {"domain": base, "model": name}
    return {"domain": key}


def bench_domain_options(key: str) -> list[str]:
    """How ``python -m mi_core bench`` names domain ``key`` and runs its model: the domain's command-line name, then
    ``--views K`` for the default read in symmetric views or ``--model FILE`` for another model file (the command
    finds the estimator and selector trained on it)."""
    base = named(key)
    options = [core_domain(base["domain"]).cli_name]
    if base.get("model") == "views":
        options += ["--views", str(VIEWS)]
    elif "model" in base:
        options += ["--model", get_domain(key).default_file("model")]  # its variable's file, else the shipped one
    return options


def get_domain(name: str) -> Domain:
    """The core's domain ``name``, or a second model of one (:data:`MODELS`); ValueError when there is none."""
    return _VARIANTS.get(name) or core_domain(name)


_OWN_SUFFIX = {"views": f", {VIEWS} symmetric views"}  # what a choice adds to the model file a variable names


def model_choices(domain: Domain) -> dict[str, str]:
    """``{link name: label}`` of the models ``domain`` offers (empty: only its own). A model whose variable
    (``MI_LENS_SUDOKU_MODEL``) names the user's file is labelled by that file and the variable: the shipped
    model's label would describe another model."""
    choices = {}
    for name, (label, variant) in MODELS.get(domain.key, {}).items():
        source = variant or domain
        own = env_file(source.model_env, source.model_keys) if source.model_env else None
        choices[name] = label if own is None else f"{Path(own).name}{_OWN_SUFFIX.get(name, '')} ({source.model_env})"
    return choices


def with_model(domain: Domain, name: str) -> Domain:
    """``domain`` with model ``name`` of :func:`model_choices` (its own for an unknown name)."""
    found = MODELS.get(domain.key, {}).get(name)
    return found[1] if found and found[1] is not None else domain


PRESETS_PATH = ROOT / "assets" / "examples" / "sudoku_presets.json"
MAX_UPLOAD_BYTES = 5 * 2**20


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
        """A cell's name: ``r3c5`` on a grid; elsewhere its value and 1-based position (``M1``), or the domain's mask
        symbol for a masked one (``_7``: a protein's)."""
        domain = get_domain(self.domain)
        if domain.layout == "grid":
            return domain.cell_label(cell)
        token = self.digits[cell]
        return f"{domain.alphabet[token - 1] if token else domain.mask_char}{cell + 1}"

    def labels(self) -> list[str]:
        """Every cell's :meth:`label`; an antibody's CDR residues carry their CDR (``W99·H3``), so every
        figure drawn with these labels marks the CDRs."""
        tags = cdr_tags(self.domain, self.solution or self.digits)
        return [self.label(c) + tags.get(c, "") for c in range(self.length)]

    @property
    def givens(self) -> np.ndarray:
        """``(N,)`` bool: True at given cells."""
        return np.asarray(self.digits) > 0

    @property
    def blanks(self) -> list[int]:
        return [c for c, d in enumerate(self.digits) if d == 0]


@functools.lru_cache(maxsize=256)
def cdr_tags(domain_key: str, tokens: tuple[int, ...]) -> dict[int, str]:
    """``{cell: "·H3"}`` for the CDR residues of an antibody chain (Kabat); empty for other domains or a state
    that does not read as a variable domain."""
    annotate = getattr(get_domain(domain_key), "annotation", None)
    found = annotate(np.asarray(tokens)) if annotate is not None else {}
    return {c: f"·{found['chain']}{name[-1]}" for name, (a, b) in found.get("regions", {}).items() if name.startswith("CDR")
            for c in range(a - 1, b)}


def make_puzzle(domain: Domain, text: str, name: str = "", several: bool = False) -> Puzzle:
    """Parse and validate ``text`` for ``domain``.

    Raises:
        SudokuError subclasses (ValueError): wrong length or characters, conflicting givens, no solution
        or (when the domain requires it and ``several`` is off) more than one solution, each naming the problem; for a sequence
        domain, ProteinInputError naming a bad letter and its position.
    """
    if domain.layout == "sequence":
        return Puzzle(domain.key, tuple(domain.parse_state(text)), None, name)
    require = domain.require_unique and not several  # ``several``: the map pages take any solvable grid
    digits, solution = validate(text, size=domain.cells, require_unique=require)
    unique = require or count_solutions(digits, 2) == 1
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
    return decode_text(data, name, error)  # as a file opened by the command line reads


def _line_records(lines, cells: int):
    """``PuzzleRecord`` of every line whose puzzle has ``cells`` characters (one puzzle a line, as the command line
    reads it: cells may be spaced, and the solution may follow after a space or a comma; ``#`` comments)."""
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        row = text_row(line)
        puzzle = "".join(row["puzzle"].split())
        if len(puzzle) == cells:
            yield PuzzleRecord(puzzle, row.get("solution"), line=lineno)


def _csv_records(lines, cells: int, name: str):
    """``PuzzleRecord`` of every row whose ``puzzle`` column has ``cells`` characters (``solution`` and
    ``level`` kept when present)."""
    rows = csv.reader(ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#"))
    header = [h.strip().lower() for h in next(rows, [])]
    if "puzzle" not in header:
        raise no_puzzle_column(name, header)
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
        try:
            records = list(_csv_records(quotes_closed(lines, SudokuFormatError, name), domain.cells, name))
        except csv.Error as err:
            raise SudokuFormatError(f"{name}: {csv_problem(err)}") from None
    else:
        records = list(_line_records(lines, domain.cells))
    if not records:
        raise SudokuFormatError(f"{name} has no {domain.cells}-cell puzzles for {domain.label}")
    return records
