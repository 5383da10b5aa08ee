"""Property-based tests of the input parsers: for ANY input, a parsed value that satisfies the documented
contract, or the documented ``ValueError`` subclass with a one-line message; never another exception.

Covers Sudoku strings, puzzle files (TXT and CSV), FASTA / plain protein text, ``--mask-positions`` ranges,
``--set`` values (through ``make_strategy``) and the numeric option ranges of the command line.
"""

import contextlib
import io
import string
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mi_core.cli import ArgumentParser, add_options
from mi_core.decoding import STRATEGIES, make_strategy
from mi_core.domains import protein as P
from mi_core.domains import sudoku as S
from mi_core.domains.protein.bench import parse_lengths
from mi_core.options import option, parse_positions, parse_sets

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
GRID_CHARS = ".0123456789 \t" + "\u0663\u0669\uff13\u00b2\u2079xX-+_٠"
# text near the valid format: digits, blanks, whitespace and look-alike digits from other scripts
near_grids = st.one_of(
    st.text(alphabet=GRID_CHARS, min_size=75, max_size=90),
    st.text(alphabet=GRID_CHARS, min_size=12, max_size=20),
    st.text(),
)


def one_line(err: Exception) -> None:
    text = str(err)
    assert text and "\n" not in text, repr(text)


@SETTINGS
@given(near_grids)
def test_parse_grid_parses_or_names_the_problem(text):
    try:
        digits = S.parse_grid(text, None)
    except S.SudokuFormatError as err:
        one_line(err)
        return
    chars = "".join(text.split())
    n = 9 if len(digits) == 81 else 4
    assert len(digits) in (16, 81) and len(chars) == len(digits)
    assert all(c in ".0" + "123456789"[:n] for c in chars)  # ASCII digits only were accepted
    assert digits == [0 if c in ".0" else int(c) for c in chars]


@SETTINGS
@given(st.lists(st.sampled_from(list(".123456789")), min_size=81, max_size=81))
def test_validate_gives_a_consistent_solution_or_a_sudoku_error(cells):
    text = "".join(cells)
    try:
        digits, solution = S.validate(text, require_unique=False)
    except S.SudokuError as err:
        one_line(err)
        return
    assert S.solution_conflict(digits, solution) is None


EASY = "..9.7.1.....2.8...2...3...4.9.........8....311.6...52.....6327.....9.6...1...7.5."
non_ascii_numbers = st.characters(categories=("Nd", "No", "Nl")).filter(lambda c: not c.isascii())


@SETTINGS
@given(st.integers(0, 80), non_ascii_numbers)
def test_a_non_ascii_digit_anywhere_in_a_grid_is_named(pos, ch):
    text = EASY[:pos] + ch + EASY[pos + 1:]
    with pytest.raises(S.SudokuFormatError) as info:
        S.parse_grid(text)
    one_line(info.value)
    assert f"U+{ord(ch):04X}" in str(info.value) and f"at position {pos + 1} (row {pos // 9 + 1}, column {pos % 9 + 1})" in str(info.value)


@SETTINGS
@given(st.integers(0, 19), st.characters(min_codepoint=128).filter(lambda c: not c.isspace()))
def test_a_non_ascii_character_in_a_protein_is_named(pos, ch):
    seq = "MKTAYIAKQRQISFVKSHFS"
    with pytest.raises(P.ProteinInputError) as info:
        P.tokenize(seq[:pos] + ch + seq[pos + 1:])
    one_line(info.value)
    assert f"at {pos + 1}" in str(info.value)


lines = st.one_of(
    st.builds(lambda g: "".join(g), st.lists(st.sampled_from(list(".123456789")), min_size=81, max_size=81)),
    st.text(alphabet=GRID_CHARS + ",#\n", max_size=100),
    st.just("# a comment"), st.just(""), st.just("puzzle,solution,level"),
)


@SETTINGS
@given(st.lists(lines, max_size=6), st.booleans())
def test_puzzle_files_parse_or_name_a_line(rows, csv_format):
    text = "\n".join(rows)
    try:
        records = S.parse_puzzle_text(text, csv_format=csv_format, name="f")
    except S.SudokuFormatError as err:
        one_line(err)
        return
    assert records
    for rec in records:
        digits = S.parse_grid(rec.puzzle, None)
        if rec.solution is not None:
            assert S.solution_conflict(digits, S.parse_grid(rec.solution, len(digits))) is None
        assert 1 <= rec.line <= len(text.splitlines())


@SETTINGS
@given(st.integers(0, 80), st.integers(1, 9))
def test_csv_solution_that_changes_a_given_is_refused_with_its_line(cell, offset):
    puzzle = "..9.7.1.....2.8...2...3...4.9.........8....311.6...52.....6327.....9.6...1...7.5."
    solution = "349675182761248395285931764597312846428756931136489527954163278872594613613827459"
    changed = list(solution)
    changed[cell] = str((int(solution[cell]) - 1 + offset) % 9 + 1)
    assume(changed != list(solution))
    text = f"# header comment\n\npuzzle,solution\n{puzzle},{''.join(changed)}\n"
    with pytest.raises(S.SudokuFormatError, match="f, line 4: the solution") as info:
        S.parse_puzzle_text(text, csv_format=True, name="f")
    one_line(info.value)


fasta_like = st.one_of(
    st.text(alphabet=string.ascii_letters + "_*>; \n\u00df\u0663", max_size=200),
    st.text(max_size=100),
    st.builds(lambda h, s: f">{h}\n{s}\n", st.text(alphabet=string.ascii_letters + " ", max_size=10),
              st.text(alphabet="ACDEFGHIKLMNPQRSTVWYX_", min_size=1, max_size=60)),
)


@SETTINGS
@given(fasta_like)
def test_protein_text_parses_or_names_the_problem(text):
    try:
        records = P.parse_text(text)
    except P.ProteinInputError as err:
        one_line(err)
        return
    assert records
    for rec in records:
        assert rec.tokens.ndim == 1 and len(rec.tokens) >= 1
        assert ((rec.tokens >= 0) & (rec.tokens <= 20)).all()


@SETTINGS
@given(fasta_like)
def test_fasta_files_strict_and_plain(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("fa") / "x.fa"
    path.write_text(text, encoding="utf-8")
    for strict in (False, True):
        try:
            records = P.read_fasta(path, strict=strict)
        except P.ProteinInputError as err:
            one_line(err)
            continue
        assert records and all(len(r.tokens) >= 1 for r in records)


@SETTINGS
@given(st.text(alphabet="0123456789-, \u0663\uff15x", max_size=20), st.integers(1, 300))
def test_mask_positions_parse_or_fail_cleanly(spec, length):
    try:
        out = parse_positions(spec, length)
    except ValueError as err:
        one_line(err)
        return
    assert out == sorted(set(out)) and all(0 <= i < length for i in out) and out  # empty parts are skipped


@SETTINGS
@given(st.text(max_size=20))
def test_lengths_parse_or_fail_cleanly(spec):
    try:
        lo, hi = parse_lengths(spec)
    except ValueError as err:
        one_line(err)
        return
    assert 1 <= lo <= hi


set_values = st.one_of(st.text(max_size=12), st.sampled_from(["4", "0", "-1", "1e9", "100000000", "nan", "inf",
                                                              "true", "none", "\u0663", "\uff14", "0.5"]))


@SETTINGS
@given(st.sampled_from(sorted(STRATEGIES)), st.sampled_from(["k", "steps", "gamma", "lam", "tau", "threshold",
                                                             "mode", "gumbel", "eps", "max_batch", "relative", "zz"]),
       set_values)
def test_set_values_build_a_strategy_or_fail_cleanly(name, key, value):
    try:
        params = parse_sets([f"{key}={value}"])
        strategy = make_strategy(name, **params)
    except ValueError as err:
        one_line(err)
        return
    for field in ("k", "steps", "max_batch"):
        v = getattr(strategy, field, None)
        assert v is None or 1 <= v <= 4096  # a step count is a loop bound: always bounded


@dataclass
class Numbers:
    limit: int | None = option(None, range=(1, 10_000_000))
    seed: int = option(0, range=(0, 2**63 - 1))
    temperature: float = option(0.0, range=(0, 100))


def parser():
    p = ArgumentParser(prog="t")
    add_options(p, [Numbers])
    return p


@SETTINGS
@given(st.sampled_from(["--limit", "--seed", "--temperature"]),
       st.one_of(st.text(max_size=12), st.integers(-2**80, 2**80).map(str),
                 st.floats(allow_nan=True, allow_infinity=True).map(repr)))
def test_numeric_options_in_range_or_one_error_line(option, value):
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stderr(buffer):
            args = parser().parse_args([f"{option}={value}"])
    except SystemExit as done:
        err = buffer.getvalue()
        assert done.code == 2 and len([ln for ln in err.splitlines() if "error:" in ln]) == 1, err
        return
    got = getattr(args, option[2:])
    lo, hi = {"--limit": (1, 10_000_000), "--seed": (0, 2**63 - 1), "--temperature": (0, 100)}[option]
    assert lo <= got <= hi


@pytest.mark.parametrize("spec, noted", [("cdr3", True), ("H3,5", True), ("5-x", False), ("5.5", False)])
def test_a_region_name_where_positions_are_numbers_says_so(spec, noted):
    """--mask-positions cdr3 on a plain protein said only "'cdr3' is not a residue number", not that this input
    names no regions (an antibody's chain does)."""
    with pytest.raises(ValueError) as err:
        parse_positions(spec, 30)
    assert str(err.value).endswith("(positions are numbers here: this input names no regions)") is noted
