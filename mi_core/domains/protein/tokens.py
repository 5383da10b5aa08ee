"""Protein tokens (shared by every protein model through its adapter) and FASTA / plain-sequence parsing.

Token ids: 0 mask, 1..20 the amino acids ``ACDEFGHIKLMNPQRSTVWY``, 21 padding (training batches only).

Non-standard letters: ``X`` and the ambiguity codes ``B``, ``Z``, ``J`` are read as masked; ``U`` and ``O`` are
rejected (the message says to write X in their place) unless ``ambiguous="mask"``; a final ``*`` is dropped; case
and whitespace are ignored; any other character is an error naming it and its 1-based position. Training and reference data use ``read_fasta(strict=True)``.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np

from mi_core.domain import Domain, describe_char
from mi_core.io import decode_text, missing_file, user_path

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
MASK_ID = 0
PAD_ID = 21
VOCAB_SIZE = 22
MASK_CHAR = "_"
SOFT_MASK = frozenset("XBZJ")
RARE = frozenset("UO")
MAX_INPUT_LENGTH = 2048

_TOKEN_OF = {aa: i + 1 for i, aa in enumerate(AMINO_ACIDS)}


class ProteinInputError(ValueError):
    """Input that is not a protein sequence this tool can read."""


@dataclass(frozen=True)
class ProteinRecord:
    """``name`` (FASTA header without ``>``, or ``sequence N``) and ``tokens`` (L,) int64."""

    name: str
    tokens: np.ndarray

    @property
    def length(self) -> int:
        return int(self.tokens.shape[0])

    @property
    def masked(self) -> int:
        return int((self.tokens == MASK_ID).sum())

    def text(self) -> str:
        return detokenize(self.tokens)


def tokenize(sequence: str, *, ambiguous: str = "error", max_length: int = MAX_INPUT_LENGTH, name: str = "sequence") -> np.ndarray:
    """Token ids ``(L,)`` of one sequence (``_``: an explicit mask; ``ambiguous="mask"`` masks U/O too)."""
    if ambiguous not in ("error", "mask"):
        raise ValueError(f"ambiguous must be 'error' or 'mask', got {ambiguous!r}")
    letters = "".join(sequence.split())
    foreign = [(i, ch) for i, ch in enumerate(letters) if not ch.isascii()]
    if foreign:  # before upper(): 'ß'.upper() is 'SS', which would shift every later position
        shown = ", ".join(f"{describe_char(ch)} at {i + 1}" for i, ch in foreign[:4])
        raise ProteinInputError(f"{name}: non-ASCII characters are not amino-acid letters: {shown}"
                                + (f" and {len(foreign) - 4} more" if len(foreign) > 4 else ""))
    letters = letters.upper().removesuffix("*")
    if not letters:
        raise ProteinInputError(f"{name}: empty sequence")
    masks = SOFT_MASK | {MASK_CHAR} | (RARE if ambiguous == "mask" else frozenset())
    bad: list[str] = []  # the first 8 letters that are none, then how many more (no array yet: the file may be huge)
    more, rare_only, gaps_only, digits_only = 0, True, True, True
    for i, ch in enumerate(letters):
        if ch not in _TOKEN_OF and ch not in masks:
            rare_only = rare_only and ch in RARE
            gaps_only = gaps_only and ch in "-."
            digits_only = digits_only and ch.isdigit()
            if len(bad) < 8:
                bad.append(f"{ch!r} at {i + 1}")
            else:
                more += 1
    if bad:
        shown = ", ".join(bad) + (f" and {more} more" if more else "")
        hint = (" (U and O are rare residues this model has never seen: write X or _ in their place to let the "
                "model fill them)") if rare_only else ""
        if gaps_only:  # an aligned sequence (IMGT's gapped numbering writes '.')
            hint = " (alignment gaps: remove them to give the residues alone; _ or X marks a masked residue)"
        if digits_only:  # a GenBank ORIGIN or EMBL listing: "1 mvlspadktn vkaawgkvga" ('1' at 22 named no line)
            hint = (" (residue numbers, as a GenBank or EMBL listing writes them: give the letters alone; positions "
                    "count the characters other than spaces and line breaks)")
        raise ProteinInputError(f"{name}: not amino-acid letters: {shown}{hint}")
    if len(letters) > max_length:  # after the letters: a file of another kind read whole is named as such
        raise ProteinInputError(f"{name}: {len(letters)} residues, longer than the {max_length} this model takes")
    return np.array([_TOKEN_OF.get(ch, MASK_ID) for ch in letters], dtype=np.int64)


def detokenize(tokens) -> str:
    """Letters of token ids; masked positions as ``_`` (padding is dropped)."""
    values = np.asarray(tokens).tolist()
    return "".join(MASK_CHAR if t == MASK_ID else AMINO_ACIDS[t - 1] for t in values if t == MASK_ID or 1 <= t <= 20)


def parse_text(text: str, *, ambiguous: str = "error", max_length: int = MAX_INPUT_LENGTH, limit: int | None = None) -> list[ProteinRecord]:
    """Records from FASTA text (``>`` headers) or one plain sequence (no header, called ``sequence``)."""
    return [ProteinRecord(name or "sequence", tokenize(seq, ambiguous=ambiguous, max_length=max_length,
                                                         name=name or "sequence"))
            for name, seq in fasta_or_plain(text, "a sequence or FASTA text", limit)]


def fasta_or_plain(text: str, kinds: str, limit: int | None = None, error: type = ProteinInputError) -> list[tuple]:
    """``(name, letters)`` of each FASTA record of ``text`` (an unnamed one: ``sequence K``), or ``(None,
    letters)`` of one plain sequence; ``error`` on empty input (``kinds``: what to paste) or text before a header."""
    if not text or not text.strip():
        raise error(f"empty input: paste {kinds}")
    lines = text.strip().splitlines()
    if starts_with_header(text):
        pairs = islice(_fasta_pairs(text, comments=True), limit)
        return [(header or f"sequence {k + 1}", seq) for k, (header, seq) in enumerate(pairs)]
    if any(line.lstrip().startswith(">") for line in lines):
        raise error("text before the first FASTA header '>': start the input with a header or paste one plain sequence")
    return [(None, "".join(lines))]


def starts_with_header(text: str) -> bool:
    """Whether the first line of ``text`` that is neither blank nor a ``;`` comment (old FASTA's) is a ``>`` header."""
    first = next((line.lstrip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith(";")), "")
    return first.startswith(">")


def read_fasta(path: str | Path, *, strict: bool = False, ambiguous: str = "error", max_length: int = MAX_INPUT_LENGTH,
               limit: int | None = None) -> list[ProteinRecord]:
    """Records of a FASTA file. ``strict`` (training and reference data): skip, instead of failing on,
    sequences with letters other than the 20 and ``X``, over 10% ``X``, or over ``max_length``."""
    path = Path(path)
    text = read_text_file(path, "a FASTA file", "FASTA file not found")
    if not strict:
        try:
            return parse_text(text, ambiguous=ambiguous, max_length=max_length, limit=limit)
        except ProteinInputError as err:
            if not any(line.lstrip().startswith(">") for line in text.splitlines()):
                raise ProteinInputError(f"{path} has no FASTA header ('>name'), so it was read as one sequence: "
                                        f"{err}") from None
            raise ProteinInputError(f"{path}: {err}") from None
    records, skipped, first = [], 0, ""
    for header, seq in _fasta_pairs(text):
        letters = "".join(seq.split())
        letters = letters.upper().rstrip("*") if letters.isascii() else ""  # 'ß'.upper() would be 'SS'
        why = _left_out(letters, max_length)
        if not why:
            records.append(ProteinRecord(header, np.array([_TOKEN_OF.get(c, MASK_ID) for c in letters], dtype=np.int64)))
            if limit is not None and len(records) >= limit:
                break
        else:
            skipped += 1
            first = first or f"; the first: {header!r}, {why}"
    if skipped and records:  # training read 199 of a file's 200 without a word
        print(f"warning: {path}: {skipped} of {skipped + len(records)} records left out (letters other than the 20 "
              f"amino acids and X, over 10% X, or over {max_length} residues){first}", file=sys.stderr)
    if not records:
        if not text.strip():
            raise ProteinInputError(f"{path}: the file is empty")
        if not skipped:  # no '>' line at all: nothing was read, so nothing was left out
            raise ProteinInputError(f"{path}: no FASTA header ('>name'): each record starts with one, its letters on "
                                    "the lines below")
        raise ProteinInputError(f"{path}: no usable sequences: all {skipped} records left out (letters other than the "
                                f"20 amino acids and X, over 10% X, or over {max_length} residues){first}")
    return records


def _left_out(letters: str, max_length: int) -> str:
    """Why the strict rule of :func:`read_fasta` leaves out a record's ``letters`` (upper case); ``""``: kept."""
    if not letters:
        return "no sequence (or letters outside ASCII)"
    if len(letters) > max_length:
        return f"{len(letters)} residues"
    bad = next(((i, c) for i, c in enumerate(letters) if c not in _TOKEN_OF and c != "X"), None)
    if bad:
        return f"{describe_char(bad[1])} at {bad[0] + 1}"
    return f"{letters.count('X')} of {len(letters)} residues X" if letters.count("X") > 0.1 * len(letters) else ""


def read_text_file(path: Path, kind: str, missing: str, error: type = ProteinInputError) -> str:
    """The text of a file, without the byte-order mark a spreadsheet's "CSV UTF-8" starts with (it hid a first
    column's name or a FASTA file's first '>'); each error names ``path`` (``kind``: what it should be); a
    leading ``~`` is the home folder."""
    path = user_path(str(path))
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory, not {kind}")
    if not path.is_file():
        raise FileNotFoundError(missing_file(path, missing))
    return decode_text(path.read_bytes(), str(path), error)


def _fasta_pairs(text: str, comments: bool = False):
    """``(header, sequence)`` of each record; text before the first header (and ``;`` lines if ``comments``) dropped."""
    header, chunks = None, []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(">"):
            if header is not None:
                yield header, "".join(chunks)
            header, chunks = line[1:].strip(), []
        elif header is not None and line and not (comments and line.startswith(";")):
            chunks.append(line)
    if header is not None:
        yield header, "".join(chunks)


SPLITS = ("train", "val", "reference")


def split_of(name: str, seed: int = 0) -> str:
    """The split of a FASTA header by a seeded hash (independent of file order): 5% of headers go to ``val``, the
    next 5% to ``reference``, the rest to ``train``."""
    bucket = int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:8], "big") % 100
    return "val" if bucket < 5 else "reference" if bucket < 10 else "train"


def split_records(records: list[ProteinRecord], seed: int = 0) -> dict[str, list[ProteinRecord]]:
    out: dict[str, list[ProteinRecord]] = {s: [] for s in SPLITS}
    for rec in records:
        out[split_of(rec.name, seed)].append(rec)
    return out


@dataclass(frozen=True)
class ProteinDomain(Domain):
    def parse_state(self, text: str) -> list[int]:
        return tokenize(text).tolist()

    def parse_input(self, text: str) -> list[int]:
        """Plain letters or one FASTA record."""
        records = parse_text(text)
        if len(records) != 1:
            raise ProteinInputError(f"the input holds {len(records)} FASTA records; give one sequence")
        return records[0].tokens.tolist()

    def state_text(self, tokens) -> str:
        return detokenize(self.state_ids(tokens, pad=True))


__all__ = [
    "AMINO_ACIDS", "MASK_CHAR", "MASK_ID", "MAX_INPUT_LENGTH", "PAD_ID", "ProteinDomain", "ProteinInputError",
    "ProteinRecord", "RARE", "SOFT_MASK", "SPLITS", "VOCAB_SIZE", "detokenize", "parse_text", "read_fasta",
    "split_of", "split_records", "tokenize",
]
