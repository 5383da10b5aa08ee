"""Antibody variable domains: reading them (text, FASTA, CSV), checking that they are one, and their CDRs.

One chain (VH or VL) of protein tokens at a time. A variable domain (:func:`find_anchors`) carries the conserved
cysteines (Kabat H22/H92, L23/L88), the Trp after CDR1 (H36/L35) and the framework-4 motif after CDR3 (W-G-x-G
heavy, F-G-x-G light); anything else is refused with the missing motif named. CDRs are Kabat's, located by
A. C. R. Martin's sequence rules (bioinf.org.uk/abs/info.html) from those anchors (``c1``, ``c2``: the
cysteines; ``w1``: the Trp; ``m``: the first residue of W/F-G-x-G; 0-based, end exclusive):

    H1  c1 + 9 .. w1          Kabat 31-35B: 5 after the Chothia start (4 after the Cys), up to the Trp
    H2  w1 + 14 .. c2 - 29    starts 15 after H1's end; ends 33 before H3's start (FR3 is 32 long)
    H3  c2 + 3 .. m           Kabat 95-102: after C-x-x (typically C-A-R), up to W-G-x-G
    L1  c1 + 1 .. w1          Kabat 24-34: after the Cys, up to the Trp (W-Y-Q, W-L-Q, ...)
    L2  w1 + 15 .. w1 + 22    Kabat 50-56: 16 after L1's end, always 7 long
    L3  c2 + 1 .. m           Kabat 89-97: after the Cys, up to F-G-x-G

A masked residue (``_``) stands in for a conserved one where the real one is missing. Where a masked run of two
or more covers a conserved residue, its place is a guess (any position of the run would move the CDRs), so the
chain reads without regions and ``unplaced`` says which run hides which residue.

CDR lengths outside Kabat's observed ranges are refused. The rules are checked against published Kabat CDRs and
all 100 antibodies of Jain et al. 2017 (``tests/test_antibody_domain.py``)."""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from mi_core.domains.protein import MASK_CHAR, ProteinInputError, ProteinRecord, detokenize, tokenize
from mi_core.domains.protein.tokens import fasta_or_plain, read_text_file, starts_with_header
from mi_core.io import MISSING_CELLS, csv_problem, quotes_closed
from mi_core.options import counted

MAX_RESIDUES = 510  # AntiBERTy: 512 positions less [CLS] and [SEP]
HEAVY_GAP = 72  # residues from the first conserved cysteine to the second: >= this in a heavy chain
MAX_FR4 = 20  # framework 4 from the W/F of its motif: 11 heavy, 10 light (a few more with a tag)
MIN_RESIDUES = 70  # shorter than any complete variable domain (~107 light, ~120 heavy)
PROTEIN_HINT = "; for other proteins use the protein domain"
REGIONS = ("FR1", "CDR1", "FR2", "CDR2", "FR3", "CDR3", "FR4")
CDR_NAMES = ("CDR1", "CDR2", "CDR3")
CHAIN_KINDS = {"H": "heavy (VH)", "L": "light (VL)"}
# Kabat CDR lengths (a margin beyond the usual 5-7, 16-19, 3-25 / 10-17, 7, 7-11 for rare antibodies)
CDR_LENGTHS = {("H", "CDR1"): (5, 7), ("H", "CDR2"): (14, 21), ("H", "CDR3"): (2, 40),
               ("L", "CDR1"): (10, 17), ("L", "CDR2"): (7, 7), ("L", "CDR3"): (5, 14)}


class AntibodyInputError(ProteinInputError):
    """Input that is not an antibody variable domain this tool reads."""


@dataclass(frozen=True)
class Anchors:
    """0-based positions of the conserved residues and the chain, ``H`` or ``L``."""

    chain: str
    c1: int
    w1: int
    c2: int
    motif: int
    unplaced: str = ""  # the masked run that hides a conserved residue, when one does (:func:`hidden_anchor`)
    first_motif: int = -1  # the first framework-4 motif of the chain's type (``motif`` is the last)


@dataclass(frozen=True)
class AntibodyChain(ProteinRecord):
    """One variable domain: a protein record with its ``chain`` (``H``/``L``) and ``regions``: ``{region:
    (start, end)}``, 0-based, end exclusive, for every name of :data:`REGIONS`; none where ``unplaced`` says
    that masked residues hide a conserved one."""

    chain: str
    regions: dict[str, tuple[int, int]] = field(default_factory=dict)
    unplaced: str = ""

    def positions(self, region: str) -> list[int]:
        """0-based indices of a region (``CDR3``, ``FR2``, ``H3``, ...), of ``cdrs`` (all three CDRs) or ``all``."""
        key = region_key(region)
        if key == "ALL":
            return list(range(self.length))
        if self.unplaced:
            raise ValueError(f"{self.name}: {self.unplaced}, so its regions cannot be placed; give that residue, or "
                             f"mask residues by number (e.g. 95-102)")
        if key == "CDRS":
            return [i for name in CDR_NAMES for i in range(*self.regions[name])]
        if key in ("H1", "H2", "H3", "L1", "L2", "L3"):
            if key[0] != self.chain:
                raise ValueError(f"{region.strip()} is a CDR of a {CHAIN_KINDS[key[0]]} chain; {self.name} is a "
                                 f"{CHAIN_KINDS[self.chain]} chain: give cdr{key[1]} or {self.chain}{key[1]}")
            key = f"CDR{key[1]}"
        if key not in self.regions:
            raise ValueError(f"unknown region {region!r}; choose one of cdr1, cdr2, cdr3, cdrs, fr1..fr4, h1..h3, "
                             "l1..l3 or all")
        return list(range(*self.regions[key]))

    def region_of(self) -> list[str]:
        """``(L,)`` the region name of each position."""
        out = [""] * self.length
        for name, (a, b) in self.regions.items():
            out[a:b] = [name] * (b - a)
        return out


def region_key(region: str) -> str:
    """A region's name in capitals without spaces or hyphens, the usual spellings of one CDR (``CDR-H3``, as the
    app's bands name it, ``CDRH3``, ``HCDR3``) read as ``H3``."""
    key = re.sub(r"[\s-]", "", region).upper()
    m = re.fullmatch(r"CDR([HL])([123])|([HL])CDR([123])", key)
    return f"{m[1] or m[3]}{m[2] or m[4]}" if m else key


def _masked_match(text: str, pattern: str, start: int, stop: int) -> list[int]:
    """Start indices in ``start..stop`` where ``pattern`` (``x``: any residue) matches, ``_`` matching anything."""
    n = len(pattern)
    return [i for i in range(max(0, start), min(stop, len(text) - n) + 1)
            if all(p == "x" or t in (p, MASK_CHAR) for p, t in zip(pattern, text[i:i + n]))]


def find_anchors(text: str, name: str = "sequence") -> Anchors:
    """The conserved residues of a variable domain in letters (``_`` matches any residue); AntibodyInputError
    names the first missing motif."""
    n = len(text)
    where = f"{name}: not an antibody variable domain (VH or VL)"
    hint = PROTEIN_HINT
    if n < MIN_RESIDUES:
        raise AntibodyInputError(f"{where}: {counted(n, 'residue')}, shorter than any variable domain "
                                 f"({MIN_RESIDUES}+){hint}")
    # a real cysteine first; a masked position stands in for one only where no cysteine is there
    c1s = [i for i in range(15, min(n, 30)) if text[i] == "C"] or [i for i in range(19, 25) if text[i] == MASK_CHAR]
    if not c1s:
        raise AntibodyInputError(f"{where}: no conserved cysteine near position 22-23 (Kabat H22 / L23){hint}")
    c1 = c1s[0]
    c2s = [i for i in range(c1 + 55, n) if text[i] == "C"] or [i for i in range(c1 + 55, n) if text[i] == MASK_CHAR]
    if not c2s:
        raise AntibodyInputError(f"{where}: no second conserved cysteine (Kabat H92 / L88) 55+ residues after "
                                 f"the first (at {c1 + 1}){hint}")
    c2 = c2s[0]
    # W-x-Q-G: the rare heavy framework 4 with G104 replaced (olaratumab's W-D-Q-G)
    heavy = _masked_match(text, "WGxG", c2 + 4, n) or _masked_match(text, "WxQG", c2 + 4, n)
    light = _masked_match(text, "FGxG", c2 + 4, n)
    if not heavy and not light:
        raise AntibodyInputError(f"{where}: no W-G-x-G (heavy) or F-G-x-G (light) motif after the second "
                                 f"cysteine (at {c2 + 1}){hint}")
    # the chain type: the cysteine gap (heavy C22-C92 spans 73+ residues with Kabat's 82A-C, light C23-C88
    # at most 71 with L1's 27A-F), unless that type's motif is absent; the motif is the last one (framework
    # 4 ends the domain; a CDR3 may hold F-G-x-G, as necitumumab's VH does)
    gap_says = "H" if c2 - c1 >= HEAVY_GAP else "L"
    found = {"H": heavy, "L": light}
    chain = gap_says if found[gap_says] else ("L" if gap_says == "H" else "H")
    motif = found[chain][-1]
    w1 = tryptophan_after_cdr1(text, chain, c1)
    if w1 is None:
        raise AntibodyInputError(f"{where}: no conserved tryptophan after CDR1 (Kabat "
                                 f"{'H36' if chain == 'H' else 'L35'}, {c1 + 12}-{c1 + 20}){hint}")
    anchors = Anchors(chain, c1, w1, c2, motif, first_motif=found[chain][0])
    return dataclasses.replace(anchors, unplaced=hidden_anchor(text, anchors, found[chain]))


def leading_residues(text: str) -> str:
    """``"; residues 1-19 come before a variable domain ..."`` where one starts further in (after a signal peptide
    or a tag: its first conserved cysteine, Kabat H22 / L23, then lies past position 30), else ``""``."""
    for i in (i for i in range(30, min(len(text), 120)) if text[i] == "C"):
        try:
            chain = find_anchors(text[i - 21:]).chain
        except AntibodyInputError:
            continue
        start = i - 21 if chain == "H" else i - 22  # the cysteine at Kabat H22 or L23
        return (f"; residues 1-{start} come before a variable domain (a signal peptide or a tag?): give it from "
                f"residue {start + 1}")
    return ""


def masked_run(text: str, i: int) -> tuple[int, int]:
    """The run of masked positions through ``i``: 0-based start, end exclusive (``(i, i)`` where ``i`` is a residue)."""
    if text[i] != MASK_CHAR:
        return i, i
    a, b = i, i + 1
    while a > 0 and text[a - 1] == MASK_CHAR:
        a -= 1
    while b < len(text) and text[b] == MASK_CHAR:
        b += 1
    return a, b


def hidden_anchor(text: str, a: Anchors, motifs: list[int]) -> str:
    """``"residues 20-24 are masked over ..."`` where a conserved residue was read at a masked position with a
    masked neighbour (the run could hold it a place or more along), or the motif at a masked position where
    another reading of it starts within 4; ``""`` where every one is placed."""
    conserved = [(a.c1, "the first conserved cysteine (Kabat H22 / L23)"),  # the chain may be a guess too
                 (a.w1, "the tryptophan after CDR1 (Kabat H36 / L35)"),
                 (a.c2, "the second conserved cysteine (Kabat H92 / L88)")]
    for i, what in conserved:
        start, end = masked_run(text, i)
        if end - start > 1:
            return f"residues {start + 1}-{end} are masked over {what}"
    masked = [i for i in range(a.motif, a.motif + 4) if text[i] == MASK_CHAR]
    if masked and any(0 < abs(m - a.motif) <= 4 for m in motifs):
        start, end = masked_run(text, masked[0])
        return f"residues {start + 1}-{end} are masked over framework 4's W-G-x-G / F-G-x-G"
    return ""


def tryptophan_after_cdr1(text: str, chain: str, c1: int) -> int | None:
    """The Trp ending CDR1 (Kabat H36 / L35), or None: the first W (or masked position) where the CDR
    length is usual (H1 5-7, L1 10-17) that is followed two later by R or Q (W-V-R-Q, W-Y-Q-Q, ...), else
    the first usual-length W, else the first W a little outside (``c1 + 11 .. c1 + 19``)."""
    usual = range(c1 + 14, c1 + 17) if chain == "H" else range(c1 + 11, c1 + 19)
    near = [i for i in range(c1 + 11, min(c1 + 20, len(text))) if text[i] in ("W", MASK_CHAR)]
    inside = [i for i in near if i in usual]
    framed = [i for i in inside if i + 2 < len(text) and text[i + 2] in "RQ" and text[i] == "W"]
    pick = framed or [i for i in inside if text[i] == "W"] or inside or near
    return pick[0] if pick else None


def annotate(anchors: Anchors, length: int) -> dict[str, tuple[int, int]]:
    """``{region: (start, end)}`` of every name of :data:`REGIONS` by the rules of the module docstring."""
    a = anchors
    if a.chain == "H":
        cdr = {"CDR1": (a.c1 + 9, a.w1), "CDR2": (a.w1 + 14, a.c2 - 29), "CDR3": (a.c2 + 3, a.motif)}
    else:
        cdr = {"CDR1": (a.c1 + 1, a.w1), "CDR2": (a.w1 + 15, a.w1 + 22), "CDR3": (a.c2 + 1, a.motif)}
    bounds = [0, *[x for name in CDR_NAMES for x in cdr[name]], length]
    frameworks = {f"FR{k + 1}": (bounds[2 * k], bounds[2 * k + 1]) for k in range(4)}
    return {name: frameworks.get(name) or cdr[name] for name in REGIONS}


def check_regions(regions: dict[str, tuple[int, int]], chain: str, name: str) -> None:
    """Raise AntibodyInputError when a CDR's length is outside :data:`CDR_LENGTHS` or regions overlap."""
    order = [regions[r] for r in REGIONS]
    if any(b < a for a, b in order) or any(order[k][1] > order[k + 1][0] for k in range(len(order) - 1)):
        raise AntibodyInputError(f"{name}: not an antibody variable domain: its conserved residues are out of "
                                 "order; for other proteins use the protein domain")
    for cdr in CDR_NAMES:
        lo, hi = CDR_LENGTHS[(chain, cdr)]
        a, b = regions[cdr]
        if not lo <= b - a <= hi:
            label = f"{chain}{cdr[-1]}"
            raise AntibodyInputError(f"{name}: not an antibody variable domain: CDR-{label} would be {b - a} "
                                     f"residues ({a + 1}-{b}), outside Kabat's {lo}-{hi}; for other proteins "
                                     "use the protein domain")


def read_chain(sequence: str, name: str = "sequence") -> AntibodyChain:
    """One variable domain from letters (``_`` or ``X`` masked): tokens, chain, CDRs; AntibodyInputError says
    why it is not one."""
    try:
        tokens = tokenize(sequence, max_length=MAX_RESIDUES, name=name)
    except ProteinInputError as err:
        message = str(err)
        if "longer than" in message:
            message += " (AntiBERTy reads one variable domain of at most 510; give VH or VL alone)"
        raise AntibodyInputError(message) from None
    try:
        anchors = find_anchors(detokenize(tokens), name)
    except AntibodyInputError as err:  # a signal peptide or a tag before the domain: say where it starts
        lead = leading_residues(detokenize(tokens))
        raise AntibodyInputError(str(err).removesuffix(PROTEIN_HINT) + lead if lead else str(err)) from None
    tail = len(tokens) - anchors.motif
    if tail > MAX_FR4:
        raise AntibodyInputError(f"{name}: {tail} residue{'s follow' if tail != 1 else ' follows'} CDR3's framework-4 motif (at most {MAX_FR4} in "
                                 "one variable domain): give one VH or VL alone, without a linker, a second "
                                 "domain or the constant region")
    if anchors.motif - anchors.first_motif >= MIN_RESIDUES:  # a tandem: the second domain would be read as CDR3
        motif = "W-G-x-G" if anchors.chain == "H" else "F-G-x-G"
        raise AntibodyInputError(f"{name}: more than one variable domain (framework 4's {motif} at "
                                 f"{anchors.first_motif + 1} and again at {anchors.motif + 1}): give one VH or VL "
                                 "alone, without a linker or a second domain")
    if anchors.unplaced:  # a variable domain, read without regions: a guess at them would be silently off
        return AntibodyChain(name, tokens, anchors.chain, {}, anchors.unplaced)
    regions = annotate(anchors, len(tokens))
    check_regions(regions, anchors.chain, name)
    return AntibodyChain(name, tokens, anchors.chain, regions)


CHAIN_COLUMNS = {"vh": " VH", "vl": " VL", "heavy": " heavy", "light": " light", "sequence": ""}  # name suffixes


def is_csv_text(text: str) -> bool:
    """Whether ``text`` starts with a CSV header naming a chain column (``vh``, ``vl``, ``sequence`` ...)."""
    first = text.strip().splitlines()[0] if text and text.strip() else ""
    if "," not in first or first.startswith(">"):
        return False
    fields = next(csv.reader([first]), [])  # a quoted header ("name","vh","vl", as R writes one) names them too
    return bool({c.strip().lower() for c in fields} & set(CHAIN_COLUMNS))


def parse_text(text: str, limit: int | None = None, name: str = "sequence") -> list[AntibodyChain]:
    """Chains from FASTA text (``>`` headers, one chain a record), CSV text (a header naming ``vh`` and/or
    ``vl``, or ``sequence``; ``name`` optional) or one plain sequence (called ``name``)."""
    if is_csv_text(text):
        return read_csv_text(text, limit)
    pairs = fasta_or_plain(text, "a VH or VL sequence, FASTA or CSV text", limit, AntibodyInputError)
    return [read_chain(seq, record or name) for record, seq in pairs]


def read_csv_text(text: str, limit: int | None = None, source: str = "CSV", delimiter: str = ",") -> list[AntibodyChain]:
    """Chains of CSV text: per row its ``vh`` then ``vl`` (``heavy``/``light`` and ``sequence`` also read),
    named ``NAME VH`` / ``NAME VL``; empty cells (or ``NA``, ``nan``, ``-`` ...: :data:`mi_core.io.MISSING_CELLS`)
    are skipped. ``limit``: rows read; ``delimiter``: a tab for a ``.tsv`` file."""
    try:
        lines = quotes_closed(io.StringIO(text), AntibodyInputError, source)
        return _csv_chains(csv.DictReader(lines, delimiter=delimiter), text, limit, source)
    except csv.Error as err:
        raise AntibodyInputError(f"{source}: {csv_problem(err)}") from None


def _csv_chains(reader: csv.DictReader, text: str, limit: int | None, source: str) -> list[AntibodyChain]:
    """The chains of :func:`read_csv_text` from its ``reader`` over ``text``."""
    columns = {(c or "").strip().lower(): c for c in reader.fieldnames or []}
    chain_cols = [c for c in CHAIN_COLUMNS if c in columns]
    if not chain_cols:
        header = text.lstrip().split("\n", 1)[0]
        other = next((name for sep, name in (("\t", "tabs"), (";", "semicolons")) if sep in header), None)
        hint = f" (its columns are separated by {other}: save it comma-separated)" if other else ""
        if starts_with_header(text):
            hint = " (it starts with '>', as FASTA does: give it a FASTA name, .fasta or .fa)"
        raise AntibodyInputError(f"{source}: no vh, vl or sequence column in the header {list(columns)}{hint}")
    out = []
    for row_no, row in enumerate(islice(reader, limit), start=2):
        base = (row.get(columns.get("name", ""), "") or "").strip() or f"row {row_no}"
        for col in chain_cols:
            seq = (row.get(columns[col]) or "").strip()
            if seq and seq.lower() not in MISSING_CELLS:
                out.append(checked_column(read_chain(seq, base + CHAIN_COLUMNS[col]), col, columns[col]))
    if not out:
        raise AntibodyInputError(f"{source}: no sequences")
    return out


def checked_column(chain: AntibodyChain, column: str, header: str) -> AntibodyChain:
    """``chain`` where its type fits its ``column`` (``vh``/``heavy``: H; ``vl``/``light``: L; ``sequence``:
    either); else AntibodyInputError: a VL under ``vh`` would be read, and named, as a heavy chain's row."""
    wanted = {"vh": "H", "heavy": "H", "vl": "L", "light": "L"}.get(column)
    if wanted is None or chain.chain == wanted:
        return chain
    raise AntibodyInputError(f"{chain.name}: the {header.strip()!r} column holds a {CHAIN_KINDS[chain.chain]} chain "
                             "(its conserved residues and framework 4 read as one): are the vh and vl columns swapped?")


def read_file(path: str | Path, limit: int | None = None) -> list[AntibodyChain]:
    """Chains of a CSV (``.csv``), tab-separated (``.tsv``) or FASTA file (anything else); the path is named in every
    error."""
    path = Path(path)
    text = read_text_file(path, "a CSV or FASTA file", "antibody file not found", AntibodyInputError)
    try:
        if path.suffix.lower() in (".csv", ".tsv"):
            chains = read_csv_text(text, limit, str(path), "\t" if path.suffix.lower() == ".tsv" else ",")
        elif not starts_with_header(text):
            raise AntibodyInputError("not a FASTA file (no '>' header) and not a .csv or .tsv")
        else:
            chains = parse_text(text, limit)
        named = Counter(c.name for c in chains)
        twice = next((name for name, count in named.items() if count > 1), None)
        if twice is not None:  # rows, results and the estimator's held-out check tell antibodies apart by name
            raise AntibodyInputError(f"two chains are named {twice!r}{_pair_hint(chains, twice)}")
        return chains
    except AntibodyInputError as err:
        raise AntibodyInputError(f"{path}: {err}" if str(path) not in str(err) else str(err)) from None


def _pair_hint(chains: list[AntibodyChain], name: str) -> str:
    """How to name the chains called ``name``: one antibody's heavy and light chain need the VH / VL suffixes
    that rows count antibodies by; otherwise two antibodies share a name."""
    kinds = sorted(c.chain for c in chains if c.name == name)
    if kinds == ["H", "L"]:
        return (f" (its heavy and light chain): name them '{name} VH' and '{name} VL', or give the antibody one "
                "CSV row with vh and vl columns")
    return ": give each antibody a name of its own"


# a chain's name ends in which chain it is: " VH" / " VL" (and " heavy" / " light") as the CSV columns name them, or
# "_H", "-L", ".HC", "|heavy" ... as FASTA files of antibody pairs (and the PDB's H / L chains) do
CHAIN_SUFFIX = re.compile(r"[ _.|-](VH|VL|H|L|HC|LC|heavy|light)$", re.IGNORECASE)


def antibody_of(name: str) -> str:
    """The antibody a chain called ``name`` belongs to: its name without its chain suffix (:data:`CHAIN_SUFFIX`)."""
    return CHAIN_SUFFIX.sub("", name)


def select_rows(chains: list[AntibodyChain], rows: str | None, option: str = "--rows") -> list[AntibodyChain]:
    """The chains of antibodies ``rows`` (1-based inclusive ``A-B`` over antibodies, i.e. chain names
    without their chain suffix, :func:`antibody_of`, in file order; None or ``all``: every one). ``option``: the option
    that gave ``rows``, named in the errors."""
    if rows in (None, "", "all"):
        return chains
    m = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", rows)
    if not m:
        raise ValueError(f"{option} must be A-B (1-based, inclusive) or all, got {rows!r}")
    if int(m[1]) < 1:
        raise ValueError(f"{option} {rows}: rows count from 1 (give {option} 1-{max(int(m[2]), 1)})")
    if int(m[1]) > int(m[2]):
        raise ValueError(f"{option} {rows}: the range runs backwards; give the first row first ({option} {m[2]}-{m[1]})")
    antibodies = [antibody_of(c.name) for c in chains]
    names = list(dict.fromkeys(antibodies))
    if int(m[2]) > len(names):
        raise ValueError(f"{option} {rows}: the file holds {len(names)} antibodies (give {option} all, or A-B within "
                         f"1-{len(names)})")
    keep = set(names[int(m[1]) - 1:int(m[2])])
    return [c for c, antibody in zip(chains, antibodies) if antibody in keep]
