"""Paste limits (issue 27, item 12): a 9x9 grid with several solutions (the empty grid) is viewable on the
map pages with a note, decoding refuses it in plain words, and a very long paste stays out of the URL."""

import pytest

from mi_lens_app import links
from mi_lens_app.widgets import SEVERAL_NOTE
from tests import test_app_pages, test_app_protein
from tests.test_app_pages import EASY, assert_clean, heatmaps, run_page

weights = test_app_pages.weights
env = test_app_pages.env
protein_weights = test_app_protein.weights
EMPTY = "." * 81


@pytest.mark.parametrize("path, title", [("pages/1_MI_maps.py", "MI, neural estimator"),
                                         ("pages/4_What_if.py", "MI before"),
                                         ("pages/2_Exact_vs_estimated.py", "neural estimator")])
def test_the_empty_grid_opens_on_the_map_pages_with_a_note(env, path, title):
    at = run_page(path, src="paste", puzzle=EMPTY)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert heatmaps(at)[title].shape == (81, 81)
    assert SEVERAL_NOTE in [i.value for i in at.info]
    assert any("81 blanks; several solutions" in c.value for c in at.sidebar.caption)


def test_a_unique_puzzle_gets_no_several_solutions_note(env):
    at = run_page("pages/1_MI_maps.py", src="paste", puzzle=EASY)
    assert_clean(at)
    assert SEVERAL_NOTE not in [i.value for i in at.info]


def test_decoding_refuses_several_solutions_and_says_where_they_can_be_seen(env):
    at = run_page("pages/3_Decoding.py", src="paste", puzzle=EMPTY)
    assert not at.exception
    error = " ".join(e.value for e in at.error)
    assert "more than one solution" in error and "add givens" in error and "MI maps" in error


def test_a_very_long_paste_stays_out_of_the_url_with_a_message(env):
    at = run_page("pages/1_MI_maps.py", src="paste", puzzle=EASY)
    assert at.query_params.get("puzzle") in (EASY, [EASY])
    long = "1" * 300_000
    at.text_area(key="puzzle").set_value(long).run()
    assert not at.exception
    assert "puzzle" not in at.query_params or len(str(at.query_params["puzzle"])) <= links.MAX_LINK_TEXT
    warned = [w.value for w in at.sidebar.warning]
    assert any("300,000 characters long" in w and "left out of the page's address" in w for w in warned), warned
    assert any("81 cells" in e.value for e in at.error)  # and why the text is no puzzle
    at.text_area(key="puzzle").set_value(EASY).run()  # a puzzle again: back in the link
    assert_clean(at)
    assert at.query_params.get("puzzle") in (EASY, [EASY])


def test_a_very_long_sequence_paste_stays_out_of_the_url(monkeypatch, protein_weights):
    monkeypatch.setenv("MI_LENS_PROTEIN_MODEL", str(protein_weights[0]))
    monkeypatch.setenv("MI_LENS_PROTEIN_ESTIMATOR", "/nonexistent/protein_est.safetensors")
    monkeypatch.setenv("MI_LENS_DEVICE", "cpu")
    monkeypatch.setenv("MI_LENS_WARM", "0")
    at = test_app_protein.run_page("pages/1_MI_maps.py", psrc="paste", seq=test_app_protein.SEQ)
    at.text_area(key="seq").set_value("M" * 300_000).run()
    assert not at.exception
    assert "seq" not in at.query_params or len(str(at.query_params["seq"])) <= links.MAX_LINK_TEXT
    assert any("left out of the page's address" in w.value for w in at.sidebar.warning)
