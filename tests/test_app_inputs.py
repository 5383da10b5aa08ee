"""Input limits that agree: one length check where a sequence is given, big puzzle files picked by line
number, and a note for DNA pasted as protein."""

import time

import pytest
import torch

from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig, save_protein_mdm
from mi_lens_app.domains import DOMAINS, read_upload
from tests import test_app_pages
from tests.test_app_pages import EASY, assert_clean, run_page

weights = test_app_pages.weights
env = test_app_pages.env


@pytest.fixture
def protein_env(env, tmp_path):
    torch.manual_seed(0)
    save_protein_mdm(ProteinMDM(ProteinMDMConfig(max_len=256, d_model=32, n_layers=1, n_heads=2, d_ff=64)),
                     tmp_path / "protein.safetensors")
    env.setenv("MI_LENS_PROTEIN_MODEL", str(tmp_path / "protein.safetensors"))
    env.setenv("MI_LENS_PROTEIN_ESTIMATOR", "/nonexistent/protein_est.safetensors")
    return env


@pytest.mark.parametrize("length", [2000, 5000])
def test_a_sequence_too_long_for_the_model_is_refused_once_in_the_sidebar(protein_env, length):
    seq = ("MKTAYIAKQRQISFVKSHFSRQ" * 300)[:length - 20] + "_" * 20
    at = run_page("pages/1_MI_maps.py", domain="protein", psrc="paste", seq=seq)
    assert_clean(at)
    errors = [e.value for e in at.sidebar.error]
    assert len(errors) == 1 and f"{length} residues, longer than the 256 this model takes" in errors[0]
    assert [e.value for e in at.main.error] == errors  # and once in the main area, above the fold
    assert not any("masked" in c.value for c in at.sidebar.caption)  # not "2000 residues, 20 masked" first
    assert any("Correct the sequence in the sidebar" in i.value for i in at.info)


def test_dna_pasted_as_protein_gets_a_note(protein_env):
    at = run_page("pages/1_MI_maps.py", domain="protein", psrc="paste", seq="ATGGCGTACCTGA_GTTACGATCGATCG")
    assert_clean(at)
    assert any("looks like DNA" in w.value for w in at.sidebar.warning)
    at = run_page("pages/1_MI_maps.py", domain="protein", psrc="paste", seq="MKTAYIAKQRQ_SFVKSHFSRQ")
    assert not any("looks like DNA" in w.value for w in at.sidebar.warning)


def big_file(rows: int = 63000) -> bytes:
    return "".join(f"{EASY}\n" for _ in range(rows)).encode()


def test_a_5_mib_puzzle_file_is_indexed_quickly():  # 63,000 rows: just under the 5 MiB upload limit
    data = big_file()
    assert len(data) < 5 * 2**20
    domain = DOMAINS["sudoku9"]  # the registry's first lookup loads the domains: not part of the timing
    start = time.perf_counter()
    records = read_upload("big.txt", data, domain)
    seconds = time.perf_counter() - start
    assert len(records) == 63000 and records[-1].line == 63000
    assert seconds < 3.0, seconds  # was 11.8 s when every row was parsed in full


def test_a_big_file_lists_a_capped_picker_and_finds_a_line(env):
    at = run_page("pages/1_MI_maps.py", src="upload")
    at.file_uploader(key="upload").set_value(("big.txt", big_file(5000), "text/plain")).run()
    assert_clean(at)
    picker = at.selectbox(key="upload_row")
    assert len(picker.options) == 200 and "the first 200 listed" in picker.label
    at.number_input(key="upload_line").set_value(4321).run()
    assert_clean(at)
    assert "upload_row" not in [s.key for s in at.selectbox]  # the line number picked the puzzle
    assert not at.error and at.get("plotly_chart")
    at.number_input(key="upload_line").set_value(5000).run()
    assert not at.error and at.get("plotly_chart")


def test_an_uploaded_text_file_reads_a_line_as_the_command_line_does():
    """A .txt line with its solution after a space or a comma, or with its cells spaced, is one puzzle to
    `bench --puzzles`; the upload left such lines out without a word ('has no 81-cell puzzles')."""
    solution = "534678912672195348198342567859761423426853791713924856961537284287419635345286179"
    puzzle = "." * 5 + solution[5:]
    data = f"{puzzle} {solution}\n{puzzle},{solution}\n{' '.join(puzzle)}\n# a comment\n{puzzle}\n".encode()
    records = read_upload("mine.txt", data, DOMAINS["sudoku9"])
    assert [(r.puzzle, r.solution, r.line) for r in records] == [
        (puzzle, solution, 1), (puzzle, solution, 2), (puzzle, None, 3), (puzzle, None, 5)]
