"""Protein inputs for the app: presets, pasted sequences or FASTA, uploads, and which residues to mask
(no streamlit, no torch).

A protein state is a sequence whose masked residues the model fills. The user gives a sequence (``_`` or
``X`` marks residues already unknown) and a :class:`Masking`: the input's own masks only, explicit 1-based
positions (``"5-20,33"``), or a seeded random rate. The unmasked input is kept as the native sequence, so
decoding can report how much of it the model recovers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mi_core.domains.protein import AMINO_ACIDS, MASK_ID, ProteinInputError, ProteinRecord, tokenize
from mi_core.domains.protein.tokens import fasta_or_plain, starts_with_header
from mi_core.options import counted
from mi_core.options import parse_positions as core_positions
from mi_lens_app.domains import ROOT, Domain, Puzzle, upload_text

PROTEIN_PRESETS_PATH = ROOT / "assets" / "examples" / "protein_presets.json"
PRESET_FILES = {"protein": PROTEIN_PRESETS_PATH, "antibody": ROOT / "assets" / "examples" / "antibody_presets.json"}
MAX_FASTA_BYTES = 2**20
MAX_FASTA_RECORDS = 500
MASK_MODES = ("as given", "positions", "rate")


class MaskSpecError(ProteinInputError):
    """A mask position list or rate that cannot be applied; the message names the bad part."""


class NothingMasked(MaskSpecError):
    """A state with no masked position: nothing to fill, so no MI. Not a mistake in the input but a step still
    to take; the message says how to mask."""


def parse_positions(spec: str, length: int, noun: str = "residue") -> list[int]:
    """0-based positions of a 1-based spec such as ``"5-20, 33"`` for a sequence of ``length`` positions, each a ``noun``
    (:func:`mi_core.options.parse_positions`; a MaskSpecError names a bad part)."""
    try:
        # a blank spec masks nothing more (the page prompts for one); ", " names no position: an error saying so
        return core_positions(spec, length, "a position or a range like 5-20", noun, what="mask positions",
                              allow_empty=not spec.strip())
    except ValueError as err:
        raise MaskSpecError(str(err)) from None


def random_positions(length: int, rate: float, seed: int) -> list[int]:
    """``round(rate * length)`` (at least 1) distinct 0-based positions drawn with ``seed``."""
    if not 0 < rate <= 1:
        raise MaskSpecError(f"mask rate must be in (0, 1], got {rate}")
    count = max(1, round(rate * length))
    return sorted(np.random.default_rng(seed).choice(length, size=count, replace=False).tolist())


@dataclass(frozen=True)
class Masking:
    """Which residues to mask beyond the input's own ``_``/``X``: ``mode`` is ``"as given"`` (none),
    ``"positions"`` (the 1-based ``positions`` spec) or ``"rate"`` (``rate`` of residues, drawn with ``seed``)."""

    mode: str = "as given"
    positions: str = ""
    rate: float = 0.15
    seed: int = 0

    def __post_init__(self):
        if self.mode not in MASK_MODES:
            raise MaskSpecError(f"mask mode must be one of {', '.join(MASK_MODES)}, got {self.mode!r}")

    def positions_for(self, length: int, noun: str = "residue") -> list[int]:
        if self.mode == "positions":
            return parse_positions(self.positions, length, noun)
        if self.mode == "rate":
            return random_positions(length, self.rate, self.seed)
        return []

    @classmethod
    def from_json(cls, raw: dict) -> Masking:
        """``{"positions": "5-20"}`` or ``{"rate": 0.15, "seed": 0}`` (a preset's default masking)."""
        if "positions" in raw:
            return cls("positions", positions=str(raw["positions"]))
        if "rate" in raw:
            return cls("rate", rate=float(raw["rate"]), seed=int(raw.get("seed", 0)))
        return cls()


MAX_TEXT_RESIDUES = 10**6  # parsing only; the model's own limit is checked by :func:`check_length`
DNA_LETTERS = frozenset("ACGTUN")


def first_record(text: str) -> tuple[ProteinRecord, int]:
    """The first sequence of pasted text (one plain sequence or FASTA) and how many records it has; only the first
    is read as a protein, so a later record's stop codon or gap does not stop the one used."""
    pairs = fasta_or_plain(text, "a sequence or FASTA text")
    name = pairs[0][0] or "sequence"
    return ProteinRecord(name, tokenize(pairs[0][1], max_length=MAX_TEXT_RESIDUES, name=name)), len(pairs)


def check_length(record: ProteinRecord, max_residues: int) -> None:
    """The one length check of the app, where the input is given: ``max_residues`` is the model's own limit.

    Raises:
        ProteinInputError: a longer sequence, naming both lengths.
    """
    if record.length > max_residues:
        raise ProteinInputError(f"{record.name}: {record.length} residues, longer than the {max_residues} this "
                                "model takes; paste a shorter sequence or a fragment of it")


def looks_like_dna(record: ProteinRecord) -> bool:
    """Whether a sequence reads as nucleotides (only A, C, G, T, U and N, at least 12 of them): the model would
    take it as a protein made of alanine, cysteine, glycine and threonine."""
    letters = "".join(AMINO_ACIDS[t - 1] for t in record.tokens if 0 < t <= len(AMINO_ACIDS))
    return len(letters) >= 12 and set(letters) <= DNA_LETTERS


def masked_positions(domain: Domain, native: np.ndarray, masking: Masking) -> list[int]:
    """0-based positions ``masking`` adds; a domain with named regions (an antibody's ``cdr3``, ``cdrs``, ``fr2``,
    ``CDR-H3``) reads them in a positions spec as its command line does (MaskSpecError names a bad one)."""
    named = getattr(domain, "named_positions", None)
    if masking.mode != "positions" or named is None or not any(ch.isalpha() for ch in masking.positions):
        return masking.positions_for(len(native))
    try:
        return named(native, masking.positions)
    except ValueError as err:
        raise MaskSpecError(f"mask positions: {err}") from None


def protein_puzzle(domain: Domain, record: ProteinRecord, masking: Masking, name: str = "") -> Puzzle:
    """The state to show: ``record`` with ``masking`` applied; the record itself is the native sequence.

    Raises:
        MaskSpecError: a bad masking; NothingMasked: a state with no masked residue (nothing to fill, so no MI).
    """
    native = record.tokens
    tokens = native.copy()
    tokens[masked_positions(domain, native, masking)] = MASK_ID
    if not (tokens == MASK_ID).any():
        raise NothingMasked("no residue is masked: mark some with _ or X, or choose mask positions or a mask rate")
    return Puzzle(domain.key, tuple(int(t) for t in tokens), tuple(int(t) for t in native), name or record.name)


def state_puzzle(domain: Domain, text: str, masking: Masking, name: str, limit: int) -> Puzzle:
    """The state to show for a sequence domain that is not a protein: ``text`` read by the domain's own parser
    (one character a position, its mask character for masked), with ``masking`` applied on top.

    Raises:
        ValueError: the domain's message naming a bad character and its position, a state longer than the
        model's ``limit``, or a bad masking; NothingMasked: nothing masked.
    """
    native = np.asarray(domain.parse_input(text), dtype=np.int64)
    if len(native) > limit:
        raise ValueError(f"{counted(len(native), domain.nouns[0])}, longer than the {limit} this model takes")
    tokens = native.copy()
    tokens[masking.positions_for(len(tokens), domain.nouns[0])] = domain.mask_id
    if not (tokens == domain.mask_id).any():
        raise NothingMasked(f"no {domain.nouns[0]} is masked: mark some with {domain.mask_char}, or choose mask "
                            "positions or a mask rate")
    return Puzzle(domain.key, tuple(int(t) for t in tokens), tuple(int(t) for t in native), name)


def read_states_upload(name: str, data: bytes, domain: Domain) -> tuple[list[tuple[str, str]], list[str]]:
    """``(name, text)`` of each state of an uploaded text file, one a line (``#`` starts a comment line), and a
    line naming each line left out and why; ValueError when no line is a state, naming the first problem."""
    text = upload_text(name, data, MAX_FASTA_BYTES, ValueError)
    states, skipped = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            try:
                domain.parse_input(line)
            except ValueError as err:
                skipped.append(f"{name} line {number}: {err}")
                continue
            states.append((f"line {number}", line.strip()))
        if len(states) > MAX_FASTA_RECORDS:
            raise ValueError(f"{name}: more than {MAX_FASTA_RECORDS} states; upload fewer")
    if not states:
        raise ValueError(skipped[0] if skipped else f"{name}: no state in the file (one a line)")
    return states, skipped


def read_fasta_upload(name: str, data: bytes, domain: Domain | None = None) -> tuple[list[ProteinRecord], int, list[str]]:
    """The sequences of an uploaded FASTA (or plain-sequence) file, or of a CSV file where ``domain`` reads CSV
    (antibodies: ``name,vh,vl``, each chain a record, as the command line reads it): the first
    :data:`MAX_FASTA_RECORDS` that read as sequences, how many records the file holds, and a line for each record
    left out (``name: why``), so one record with a U or a gap among a download's hundreds leaves the others usable.

    Raises:
        ProteinInputError: too big, not UTF-8 text, or no record a sequence (the message names the file and the
        first bad letter with its position).
    """
    text = upload_text(name, data, MAX_FASTA_BYTES, ProteinInputError)
    try:  # lengths are checked against the model when a record is picked (check_length)
        as_csv = name.lower().endswith(".csv") and not starts_with_header(text)  # FASTA named .csv: read as FASTA
        chains = (domain.csv_records(text, source=name, csv_file=as_csv)
                  if hasattr(domain, "csv_records") else None)
        if chains:
            return chains[:MAX_FASTA_RECORDS], len(chains), []
        return _fasta_records(text)
    except ProteinInputError as err:
        raise ProteinInputError(str(err) if str(err).startswith(f"{name}: ") else f"{name}: {err}") from None


def _fasta_records(text: str) -> tuple[list[ProteinRecord], int, list[str]]:
    """:func:`read_fasta_upload` of FASTA or plain text: every record read alone, those that are no sequence left
    out and named; a ProteinInputError (the first one's) when none is."""
    pairs = fasta_or_plain(text, "a sequence or FASTA text")
    records, left_out, first = [], [], None
    for header, letters in pairs:
        record_name = header or "sequence"
        try:
            record = ProteinRecord(record_name, tokenize(letters, max_length=MAX_TEXT_RESIDUES, name=record_name))
        except ProteinInputError as err:
            first = first or err
            left_out.append(str(err) if str(err).startswith(record_name) else f"{record_name}: {err}")
            continue
        if len(records) < MAX_FASTA_RECORDS:
            records.append(record)
    if not records:
        raise first
    return records, len(pairs), left_out


@dataclass(frozen=True)
class ProteinPreset:
    name: str
    sequence: str
    cath_id: str
    masking: Masking
    note: str = ""


def load_protein_presets(path: Path = PROTEIN_PRESETS_PATH, key: str = "protein") -> list[ProteinPreset]:
    """The shipped presets of a sequence domain (``key``: ``protein`` or ``antibody``, whose list the file
    holds under that key); an empty list when the file is absent."""
    if not path.is_file():
        return []
    raw = json.loads(path.read_text())
    return [ProteinPreset(p["name"], p["sequence"], p.get("cath_id", ""), Masking.from_json(p.get("mask", {})),
                          p.get("note", "")) for p in raw.get(key, [])]

