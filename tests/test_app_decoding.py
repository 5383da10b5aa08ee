"""The decoding page as a class watches it: numbers never cut off, a legend, presentation mode, a readable
protein strip and an animated export."""

import json
import re

import numpy as np

from mi_core.domains.protein import AMINO_ACIDS
from mi_lens_app import exports, protein_figures
from tests import test_app_pages
from tests.test_app_pages import assert_clean, frame_numbers, run_page, specs

weights = test_app_pages.weights
env = test_app_pages.env


def grid_spec(at, strategy: str) -> dict:
    return next(s for t, s in specs(at).items() if t.startswith(f"{strategy}: step"))


def test_frame_numbers_are_one_wrapping_line_not_truncated_metrics(env):
    at = run_page("pages/3_Decoding.py", a="topk", a_topk_k="4", b="eb", step="3")
    assert_clean(at)
    assert not at.metric  # st.metric cuts long values ("13 …") in a narrow column
    numbers = frame_numbers(at)
    assert [n["step"] for n in numbers] == ["3 / 12", "3 / 45"]
    assert set(numbers[0]) == {"step", "passes", "unmasked", "MI among", "errors"}


def test_the_legend_names_every_colour(env):
    at = run_page("pages/3_Decoding.py")
    legend = next(m.value for m in at.markdown if "outline" in m.value)
    for words in ("**Black** digits were given", ":blue[**blue**]", ":red[**red**]", ":orange[**orange outline**]"):
        assert words in legend


def test_presentation_mode_draws_large_grids_and_folds_the_settings(env):
    at = run_page("pages/3_Decoding.py", a="topk", a_topk_k="4", b="eb")
    normal = grid_spec(at, "topk")["layout"]["height"]
    assert not at.get("popover")
    at = run_page("pages/3_Decoding.py", a="topk", a_topk_k="4", b="eb", present="true")
    assert_clean(at)
    spec = grid_spec(at, "topk")
    assert spec["layout"]["height"] > normal
    digits = [t for t in spec["data"] if t.get("mode") == "text" and t["name"] == "given"]
    assert digits[0]["textfont"]["size"] >= 28
    assert at.get("popover")  # the strategies fold into a button; the grids come first
    assert any("<style>" in h.proto.body for h in at.get("html"))  # large fonts


def test_one_strategy_per_row_stacks_the_grids(env):
    at = run_page("pages/3_Decoding.py", a="topk", b="eb", stack="true")
    assert_clean(at)
    assert at.toggle(key="stack").value
    assert len(frame_numbers(at)) == 2


def test_the_protein_strip_shows_letters_from_step_0():
    tokens = np.array([[0, 5, 0, 7]])
    fig = protein_figures.decode_strip(tokens, np.zeros((1, 4), bool), np.zeros((1, 4)), np.zeros((1, 4), bool),
                                       AMINO_ACIDS, size=60)
    letters = next(t for t in fig.data if t.name == "letters")
    assert list(letters.text) == ["_", AMINO_ACIDS[4], "_", AMINO_ACIDS[6]]  # the heatmap itself is blank here
    assert letters.textfont.size >= 14 and fig.layout.height >= 170


def test_the_animated_export_is_a_self_contained_player(env):
    at = run_page("pages/3_Decoding.py", a="topk", a_topk_k="4", b="eb")
    assert "Animation (HTML player)" in [b.label for b in at.download_button]
    from mi_lens_app import core
    from mi_lens_app.domains import DOMAINS, load_presets
    domain = DOMAINS["sudoku4"]
    puzzle = load_presets()["sudoku4"][0].puzzle
    trace = core.decode_trace(core.load_domain_model(domain, core.app_device())[0], None, domain, puzzle, None,
                              "sequential", {})
    html = exports.decoding_player_html([trace], puzzle, [c != "." for c in puzzle], domain.value_names, 2)
    data = json.loads(re.search(r"const DATA = (.*);\n", html).group(1))
    assert len(data["runs"][0]["frames"]) == len(trace.steps) and data["n"] == 4
    assert data["runs"][0]["frames"][-1]["state"].count(".") == 0
    assert "<script src" not in html and "http" not in html.split("<script>")[1]  # nothing to fetch
    assert 'e.code === "Space"' in html


def test_strategies_are_described_in_plain_words_with_the_technical_form_apart(env):
    at = run_page("pages/3_Decoding.py", a="mi", b="learned")
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Fills several cells per pass, but only cells the model is sure of") for c in captions)
    inside = [c.value for e in at.expander if e.label == "Technical description" for c in e.caption]
    assert any("mi_fn(ctx) -> (B, N, N)" in c for c in inside)
    outside = [c for c in captions if c not in inside]
    for developer_text in ("mi_fn", "prepare", "``net``", "max_batch"):
        assert not any(developer_text in c for c in outside), developer_text


def test_a_rare_residue_gets_advice_an_app_user_can_follow(env):
    at = run_page("pages/1_MI_maps.py", domain="protein", psrc="paste", seq="MKTAYIAKQRQISFVKSHFSRQUEERLGLIEVQ")
    assert_clean(at)
    message = " ".join(e.value for e in at.error)
    assert "write X or _ in their place" in message and "ambiguous=" not in message


def test_a_step_back_and_forth_reuses_the_frames_it_drew(env, monkeypatch):
    """A decoding step redraws two grids: each frame is built once (support.figure), without click markers
    (a frame only shows), so stepping costs little more than sending them."""
    from mi_lens_app import figures, support

    support._figure.clear()
    built = []
    real = figures.grid_figure
    monkeypatch.setattr(figures, "grid_figure", lambda *a, **k: built.append(k.get("title")) or real(*a, **k))
    at = run_page("pages/3_Decoding.py", a="topk", a_topk_k="4", b="eb", step="3")
    assert_clean(at)
    first = list(built)
    assert {"topk: step 3", "eb: step 3"} <= set(first)
    assert not at.button(key="step_prev").disabled  # the buttons know the link's frame on its first run
    at.button(key="step_next").click().run()
    assert [n["step"] for n in frame_numbers(at)] == ["4 / 12", "4 / 45"]  # on from the link's frame, not from 0
    at.button(key="step_prev").click().run()
    assert_clean(at)
    assert built.count("topk: step 3") == first.count("topk: step 3")  # step 3 was not built again
    assert "topk: step 4" in built
    spec = grid_spec(at, "topk")
    assert all(t.get("name") != "cells" for t in spec["data"])  # no click markers
    assert spec["data"][0]["type"] == "heatmap" and spec["data"][0]["hoverinfo"] == "text"  # the hover is kept
    assert not [s for s in spec["layout"].get("shapes", []) if s["type"] == "line"]  # grid lines: two traces
