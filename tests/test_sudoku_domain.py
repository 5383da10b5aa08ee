import random

import numpy as np
import pytest

from mi_core.domains import sudoku as S
from mi_core.domains.sudoku.generator import (
    is_valid_solution,
    make_puzzle,
    random_grid,
    random_puzzle,
    random_transform,
)
from mi_core.domains.sudoku.solver import count_solutions, solve_count

EASY = "..9.7.1.....2.8...2...3...4.9.........8....311.6...52.....6327.....9.6...1...7.5."
EASY_SOL = "349675182761248395285931764597312846428756931136489527954163278872594613613827459"
# a 17-clue puzzle (the minimum), first line of Royle's list as commonly reproduced
CLUE17 = "000000010400000000020000000000050407008000300001090000300400200050100000000806000"
CLUE17_SOL = "693784512487512936125963874932651487568247391741398625319475268856129743274836159"


def test_parse_golden():
    digits = S.parse_grid(EASY)
    assert len(digits) == 81 and digits[:3] == [0, 0, 9] and sum(d > 0 for d in digits) == 25
    assert S.parse_grid(EASY.replace(".", "0")) == digits
    assert S.parse_grid(" " + EASY[:40] + "\n" + EASY[40:] + "\r\n") == digits
    assert S.to_string(digits) == EASY
    assert S.to_string(digits, blank="0") == EASY.replace(".", "0")


def test_tokens_round_trip():
    tokens = S.to_tokens([EASY, EASY_SOL])
    assert tokens.shape == (2, 81) and tokens.dtype.is_floating_point is False
    assert int(tokens[0, 0]) == S.MASK_ID and int(tokens[0, 2]) == 9
    assert S.to_string(tokens[0]) == EASY


@pytest.mark.parametrize(
    "text, match",
    [
        ("123", "81 cells.*got 3"),
        ("", "empty"),
        ("-" * 81, r"only the box lines - = \+ \| \(blanks are '\.' or '0'\)"),  # it said "empty"
        (EASY[:-1] + "x", r"bad character 'x' at position 81 \(row 9, column 9\)"),
        (EASY[:10] + "-" + EASY[11:], r"bad character '-' at position 11 \(row 2, column 2\)"),
        (",".join(EASY), r"got 161 characters, among them ',' at position 2, neither a digit nor a blank"),
        ("a" + EASY[2:], r"got 80 characters, among them 'a' at position 1"),
    ],
)
def test_parse_errors(text, match):
    with pytest.raises(S.SudokuFormatError, match=match):
        S.parse_grid(text)


def test_a_grid_printed_with_box_lines_parses_as_its_digits():
    rows = [EASY[r * 9:(r + 1) * 9] for r in range(9)]
    boxed = [" | ".join(" ".join(row[c:c + 3]) for c in (0, 3, 6)) for row in rows]  # ". . 9 | . 7 . | 1 . ."
    pretty = "\n".join(boxed[0:3] + ["------+-------+------"] + boxed[3:6] + ["======+=======+======"] + boxed[6:9])
    assert S.parse_grid(pretty) == S.parse_grid(EASY)  # it said "got 99 characters": the | were counted
    with pytest.raises(S.SudokuFormatError, match=r"bad character '-' at position 2 "):
        S.parse_grid("5-3" + "." * 78)  # a - inside a row is no box line


def test_parse_rejects_non_string():
    with pytest.raises(S.SudokuFormatError, match="string"):
        S.parse_grid(123)


def test_validate_errors_by_type():
    row_dup = "11" + "." * 79
    with pytest.raises(S.SudokuConflictError, match=r"digit 1 appears twice in row 1.*col 1.*col 2"):
        S.validate(row_dup)
    col_dup = "5" + "." * 8 + "5" + "." * 71
    with pytest.raises(S.SudokuConflictError, match="column 1"):
        S.validate(col_dup)
    box_dup = "7" + "." * 9 + "7" + "." * 70
    with pytest.raises(S.SudokuConflictError, match="box 1"):
        S.validate(box_dup)
    # no conflict among givens, but cell (1,9) has no candidate left
    unsolvable = "12345678." + "........9" + "." * 63
    with pytest.raises(S.NoSolutionError, match="no solution"):
        S.validate(unsolvable)
    with pytest.raises(S.MultipleSolutionsError, match="more than one"):
        S.validate("." * 81)
    digits, solution = S.validate("." * 81, require_unique=False)
    assert is_valid_solution(solution)


def test_validate_returns_solution():
    digits, solution = S.validate(EASY)
    assert S.to_string(solution) == EASY_SOL
    assert all(d == 0 or d == s for d, s in zip(digits, solution))


@pytest.mark.parametrize("puzzle, sol", [(EASY, EASY_SOL), (CLUE17, CLUE17_SOL)])
def test_solver_known_solutions(puzzle, sol):
    count, found = solve_count(S.parse_grid(puzzle), limit=2)
    assert count == 1 and S.to_string(found) == sol


def test_solver_counts_4x4_solutions():
    assert count_solutions([0] * 16, limit=1000) == 288
    assert solve_count([0] * 16, limit=1)[1] is not None


def test_counting_solutions_makes_only_the_first_one_digits(monkeypatch):
    """solve_count (count_solutions: up to 1000 in scripts/make_presets.py) turned every solution it found into
    digits to return the first: 1000 of an empty 9x9 took 7% longer. ``solutions`` still gives them all."""
    from mi_core.domains.sudoku import solver

    calls = []

    class Mask(int):  # a found grid's candidate mask that counts its conversions to a digit
        def bit_length(self):
            calls.append(1)
            return int.bit_length(self)

    def search(cands, limit, found, *rest):  # `limit` solutions at once, each the empty 4x4's masks
        found.extend([Mask(m) for m in cands] for _ in range(limit))

    monkeypatch.setattr(solver, "_search", search)
    assert solve_count([0] * 16, limit=50) == (50, [4] * 16) and len(calls) == 16  # the first one's 16 cells
    assert solver.solutions([0] * 16, limit=3) == [[4] * 16] * 3


def test_solver_conflicting_givens_have_no_solution():
    assert solve_count([1, 1] + [0] * 79)[0] == 0


def test_generator_gives_valid_unique_puzzles():
    for seed in range(3):
        puzzle, solution = random_puzzle(26, seed)
        assert sum(d > 0 for d in puzzle) == 26
        assert is_valid_solution(solution)
        assert count_solutions(puzzle) == 1
        assert all(p == 0 or p == s for p, s in zip(puzzle, solution))
    assert random_puzzle(30, 7) == random_puzzle(30, 7)
    assert random_puzzle(30, 7) != random_puzzle(30, 8)


def test_generator_minimal_puzzle_and_bad_clues():
    rng = random.Random(0)
    grid = random_grid(rng)
    minimal = make_puzzle(grid, 0, rng, tries=1)
    assert count_solutions(minimal) == 1
    for cell in (c for c, d in enumerate(minimal) if d):  # minimal: no given can be removed
        trial = list(minimal)
        trial[cell] = 0
        assert count_solutions(trial) == 2
    with pytest.raises(ValueError, match="clues must be in 1..81"):
        random_puzzle(0, 0)


def test_random_grids_are_diverse():
    rng = random.Random(1)
    grids = {tuple(random_grid(rng)) for _ in range(20)}
    assert len(grids) == 20 and all(is_valid_solution(g) for g in grids)


def test_transform_preserves_validity_and_uniqueness():
    rng = np.random.default_rng(0)
    puzzle, solution = random_puzzle(27, 3)
    pairs = np.array([puzzle, solution] * 8)
    out = random_transform(pairs, rng, pair=2).reshape(8, 2, 81)
    assert len({tuple(o[1]) for o in out}) == 8
    for p, s in out:
        assert is_valid_solution(s) and count_solutions(list(p)) == 1
        assert ((p == 0) | (p == s)).all() and (p > 0).sum() == 27


def test_read_puzzles_txt_and_csv(tmp_path):
    txt = tmp_path / "p.txt"
    txt.write_text(f"# a comment\r\n{EASY}\r\n\r\n{EASY.replace('.', '0')}\n")
    recs = S.read_puzzles(txt)
    assert [r.puzzle for r in recs] == [EASY, EASY] and recs[0].line == 2
    csv = tmp_path / "p.csv"
    csv.write_text(f"puzzle,solution,level\n{EASY},{EASY_SOL},Easy\n{EASY},,\n")
    recs = S.read_puzzles(csv, limit=5)
    assert recs[0].solution == EASY_SOL and recs[0].level == "Easy" and recs[1].solution is None


def test_read_puzzles_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        S.read_puzzles(tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text(EASY + "\n" + EASY[:-3] + "\n")
    with pytest.raises(S.SudokuFormatError, match="line 2: a Sudoku has 81 cells"):
        S.read_puzzles(bad)
    nocol = tmp_path / "nocol.csv"
    nocol.write_text("grid\n" + EASY + "\n")
    with pytest.raises(S.SudokuFormatError, match="'puzzle' column"):
        S.read_puzzles(nocol)
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    with pytest.raises(S.SudokuFormatError, match="no puzzles"):
        S.read_puzzles(empty)
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\x00\x01\xff\x81")
    with pytest.raises(S.SudokuFormatError, match="bin.txt is not a text file"):
        S.read_puzzles(binary)


def test_read_puzzles_streams_up_to_the_limit(tmp_path):
    """With a limit, lines after the limit-th puzzle are never read: a bad line there is no error."""
    from mi_core.domains.sudoku import SudokuFormatError, read_puzzles

    good = "..9.7.1.....2.8...2...3...4.9.........8....311.6...52.....6327.....9.6...1...7.5."
    for name, header in (("p.txt", ""), ("p.csv", "puzzle\n")):
        path = tmp_path / name
        path.write_text(header + f"{good}\n{good}\nnot a puzzle\n")
        assert len(read_puzzles(path, limit=2)) == 2
        with pytest.raises(SudokuFormatError, match="line"):
            read_puzzles(path)


def test_a_text_line_may_carry_its_solution_after_a_space_or_a_comma(tmp_path):
    solved = "534678912672195348198342567859761423426853791713924856961537284287419635345286179"
    puzzle = "." * 5 + solved[5:]
    wrong = solved[:-1] + ("1" if solved[-1] != "1" else "2")
    path = tmp_path / "p.txt"
    path.write_text(f"{puzzle} {solved}\n{puzzle},{solved}\n{' '.join(puzzle)}\n")
    records = S.read_puzzles(path)
    assert [r.solution for r in records] == [solved, solved, None] and {r.puzzle for r in records} == {puzzle}
    path.write_text(f"{puzzle} {wrong}\n")
    with pytest.raises(S.SudokuFormatError, match="line 1"):
        S.read_puzzles(path)


def test_read_inputs_names_the_puzzle_of_another_size(tmp_path):
    from mi_core.domain import get_domain

    path = tmp_path / "mixed.txt"
    path.write_text(f"{EASY}\n{CLUE17}\n..34341221434321\n")
    with pytest.raises(ValueError, match=r"mixed.txt: the puzzle on line 3 has 16 cells, not the 81 of a 9x9 Sudoku "
                                         r"\(16-cell puzzles are read by the oracle4 domain\)"):
        get_domain("sudoku9").read_inputs(path)
    templates, solutions, _ = get_domain("sudoku9").read_inputs(path, limit=2)
    assert S.to_string(templates[0]) == EASY and S.to_string(solutions[0]) == EASY_SOL


def test_help_of_a_grid_domains_read_inputs_is_its_own():
    """Without a docstring of its own, help() of the Sudoku domains' read_inputs showed Domain's, which says a
    ``level`` is refused ("these files have none"), where a .csv file's level column is read."""
    import inspect

    from mi_core.domain import get_domain

    doc = inspect.getdoc(get_domain("sudoku9").read_inputs)
    assert "level" in doc and "have none" not in doc


def test_held_out_states_are_drawn_together_as_eval_estimator_help_says(capsys):
    """Sudoku's held-out states are drawn together (their recorded figures' draw), so --states 8 does not begin with
    --states 4's states: `eval-estimator sudoku --help` says so."""
    from mi_core.cli import main
    from mi_core.domains.sudoku.pool import build_pool
    from mi_core.domains.sudoku.states import draw_states

    pool = build_pool(0, 12, puzzles=True, workers=1)
    four, _ = draw_states(None, pool[:, 0], pool[:, 1], 4, (1, 1, 0), np.random.default_rng(0), transform=False,
                          distinct=True)
    eight, _ = draw_states(None, pool[:, 0], pool[:, 1], 8, (1, 1, 0), np.random.default_rng(0), transform=False,
                           distinct=True)
    assert (four != eight[:4]).any()
    assert main(["eval-estimator", "sudoku", "--help"]) == 0
    assert "--states 8 does not begin with --states 4's states" in " ".join(capsys.readouterr().out.split())


def test_a_grid_written_row_by_row_or_a_header_in_a_text_file_is_named_with_its_fix(tmp_path):
    """One puzzle a line: a 9x9 grid written as 9 lines of 9 (or a 4x4 as 4 lines of 4) and a header line were
    refused as 'got 9 characters' with no word of how to write them."""
    grid = tmp_path / "grid.txt"
    grid.write_text("\n".join(" ".join(EASY[i:i + 9]) for i in range(0, 81, 9)) + "\n")
    with pytest.raises(S.SudokuFormatError, match=r"line 1: .*got 9 characters \(one row of a grid\?.*one line of 81"):
        S.read_puzzles(grid)
    small = tmp_path / "small.txt"
    small.write_text("1...\n..2.\n.3..\n...4\n")
    with pytest.raises(S.SudokuFormatError, match=r"one line of 16 characters"):
        S.read_puzzles(small)
    header = tmp_path / "header.txt"
    header.write_text(f"puzzle,solution\n{EASY},{EASY_SOL}\n")
    with pytest.raises(S.SudokuFormatError, match=r"line 1: .*\(a header line\? .*'puzzle' column\)"):
        S.read_puzzles(header)
    late = tmp_path / "late.txt"  # a bad line later in the file is not called a header
    late.write_text(f"{EASY}\nnot a puzzle\n")
    with pytest.raises(S.SudokuFormatError, match=r"line 2: ") as err:
        S.read_puzzles(late)
    assert "header" not in str(err.value)


@pytest.mark.parametrize("text, hint", [
    (f"puzzle;solution\n{EASY};{EASY_SOL}\n", r"\(its columns are separated by semicolons: save it comma-separated\)"),
    (f"puzzle\tsolution\n{EASY}\t{EASY_SOL}\n", r"\(its columns are separated by tabs: save it comma-separated\)"),
    (f"{EASY},{EASY_SOL}\n{EASY},{EASY_SOL}\n", r"\(the first line is a puzzle, not a header: add a first line naming"),
])
def test_a_csv_without_a_puzzle_column_says_what_its_first_line_is(tmp_path, text, hint):
    """A spreadsheet's semicolon- or tab-separated CSV, or one without a header, was refused as lacking a 'puzzle'
    column, with no word of why the column it had (or its first puzzle) was not read as one."""
    from mi_lens_app.domains import DOMAINS, read_upload

    path = tmp_path / "mine.csv"
    path.write_text(text)
    with pytest.raises(S.SudokuFormatError, match=rf"mine.csv: a CSV puzzle file needs a 'puzzle' column, .* {hint}"):
        S.read_puzzles(path)
    with pytest.raises(S.SudokuFormatError, match=hint):  # the app's upload says the same
        read_upload("mine.csv", text.encode(), DOMAINS["sudoku9"])


def test_a_csv_the_csv_module_cannot_read_is_one_error_not_a_traceback(tmp_path):
    """An unclosed quote (the rest of a big file one field over the csv module's limit) ended `bench --puzzles` and
    `eval-model --csv` in a _csv.Error traceback, and a CSV with old-Mac line ends (a lone carriage return) did so
    in the app's upload, whose .txt upload read such a file as one line ('no 81-cell puzzles')."""
    from mi_core.domains.antibody.sequence import AntibodyInputError, read_file
    from mi_lens_app.domains import DOMAINS, read_upload

    quote = tmp_path / "quote.csv"
    quote.write_text(f'puzzle\n"{EASY}\n' + f"{EASY}\n" * 2000)
    with pytest.raises(S.SudokuFormatError, match=r"quote.csv: a field over 131,072 characters.*quote mark"):
        S.read_puzzles(quote)
    with pytest.raises(S.SudokuFormatError, match=r"quote.csv: a field over 131,072 characters"):
        read_upload("quote.csv", quote.read_bytes(), DOMAINS["sudoku9"])
    antibodies = tmp_path / "abs.csv"
    antibodies.write_text('name,vh\n"ab1,' + "A" * 140_000 + "\n")
    with pytest.raises(AntibodyInputError, match=r"abs.csv: a field over 131,072 characters"):
        read_file(antibodies)
    for name, text in (("mac.csv", f"puzzle,level\r{EASY},Easy\r{EASY},Hard\r"), ("mac.txt", f"{EASY}\r{EASY}\r")):
        assert [r.puzzle for r in read_upload(name, text.encode(), DOMAINS["sudoku9"])] == [EASY, EASY]


def test_an_unclosed_quote_in_a_csv_is_named_not_the_rows_after_it_dropped(tmp_path):
    """A field opened by a quote mark that none closes made the csv module read the rest of the file as that field:
    `bench --puzzles` scored 1 puzzle of 3 without a word (the antibody reader and the app's upload alike)."""
    from mi_core.domains.antibody.sequence import AntibodyInputError, read_file
    from mi_lens_app.domains import DOMAINS, read_upload
    from tests.test_antibody_domain import TRASTUZUMAB

    path = tmp_path / "notes.csv"
    path.write_text(f'puzzle,note\n{EASY},"hard\n{EASY},ok\n{EASY},ok\n')
    with pytest.raises(S.SudokuFormatError, match=r"notes.csv, line 2: a quote mark \(\"\) opens a field that no quote"):
        S.read_puzzles(path)
    with pytest.raises(S.SudokuFormatError, match=r"notes.csv, line 2: a quote mark"):
        read_upload("notes.csv", path.read_bytes(), DOMAINS["sudoku9"])
    path.write_text(f'puzzle,note\n{EASY},"two\nlines"\n{EASY},a 5" mark\n')  # closed, or a literal quote: read
    assert len(S.read_puzzles(path)) == 2
    vh = TRASTUZUMAB[0]
    antibodies = tmp_path / "abs.csv"
    antibodies.write_text(f'name,vh\n"ab1,{vh}\nab2,{vh}\n')
    with pytest.raises(AntibodyInputError, match=r"abs.csv, line 2: a quote mark"):
        read_file(antibodies)
    antibodies.write_text(f'name,vh\nab 5" tag,{vh}\nab2,{vh}\n')
    assert [c.name for c in read_file(antibodies)] == ['ab 5" tag VH', "ab2 VH"]


def test_a_missing_solution_written_na_is_no_solution(tmp_path):
    """A CSV from R (write.csv writes NA) or pandas (nan) with no solution for a puzzle was refused: 'solution: a
    Sudoku has 81 cells, got 2 characters'; such a cell is now an empty one (the solver finds the solution)."""
    path = tmp_path / "r.csv"
    path.write_text(f'"puzzle","solution"\n"{EASY}",NA\n"{EASY}",nan\n"{EASY}","{EASY_SOL}"\n')
    assert [r.solution for r in S.read_puzzles(path)] == [None, None, EASY_SOL]


def test_a_file_in_another_encoding_is_named_with_what_to_do(tmp_path):
    """A puzzle CSV saved as Excel's "Unicode Text" (UTF-16) was 'not a UTF-8 text file' with no word of what it
    was; a Latin-1 one the same; the FASTA reader already said which byte. Every reader now says it one way."""
    utf16 = tmp_path / "excel.csv"
    utf16.write_bytes(f"puzzle\n{EASY}\n".encode("utf-16"))
    with pytest.raises(S.SudokuFormatError, match=r"excel.csv starts as UTF-16 text does .*: save it as UTF-8$"):
        S.read_puzzles(utf16)
    latin = tmp_path / "latin.txt"
    latin.write_bytes(f"# r\xe9sum\xe9\n{EASY}\n".encode("latin-1"))
    with pytest.raises(S.SudokuFormatError, match=r"latin.txt is not UTF-8 text \(byte 4, b'\\xe9': written in Latin-1"):
        S.read_puzzles(latin)
