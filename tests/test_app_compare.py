"""Exact versus estimated, one pair at a time (issue 27, item 11): the estimated map's hover gives the exact
value too, a clicked pair shows both values, a scatter of every masked pair, and the agreement in plain words."""

import re

import numpy as np

from mi_lens_app import texts
from tests import test_app_pages
from tests.test_app_pages import EASY, array, assert_clean, run_page, specs

weights = test_app_pages.weights
env = test_app_pages.env


def open_compare():
    at = run_page("pages/2_Exact_vs_estimated.py", src="paste", puzzle=EASY, exact="true", scale="linear")
    assert_clean(at)
    return at


def test_the_estimated_map_hovers_with_the_exact_value_and_the_scatter_pairs_them(env):
    at = open_compare()
    maps = specs(at)
    est, exact = array(maps["Estimated"]["data"][0]["z"]), array(maps["Exact probe"]["data"][0]["z"])
    layer = maps["Estimated"]["data"][1]  # the click layer over the heatmap carries the hover
    names = maps["Estimated"]["data"][0]["x"]
    hover = layer["hovertext"][5]
    r, c = names.index(layer["y"][5]), names.index(layer["x"][5])
    shown = dict(re.findall(r"(MI \(nats\)|exact) ([-\d.e+]+)", hover))
    assert np.isclose(float(shown["MI (nats)"]), est[r, c], rtol=1e-3, atol=1e-9)
    assert np.isclose(float(shown["exact"]), exact[r, c], rtol=1e-3, atol=1e-9)
    scatter = maps["Estimated against exact, per pair"]
    points = next(d for d in scatter["data"] if d["name"] == "pairs")
    blanks = [i for i, ch in enumerate(EASY) if ch == "."]
    assert len(array(points["x"])) == len(blanks) * (len(blanks) - 1) // 2  # every masked pair once
    i, j = array(points["customdata"])[0]
    assert np.isclose(array(points["x"])[0], exact[i, j]) and np.isclose(array(points["y"])[0], est[i, j])


def test_a_clicked_pair_shows_both_values_and_is_ringed_on_the_scatter(env):
    at = open_compare()
    assert any(c.value.startswith("Click a pair") for c in at.caption)
    blanks = [i for i, ch in enumerate(EASY) if ch == "."]
    i, j = blanks[0], blanks[3]
    at.session_state["pair"] = (i, j)  # what a click on the maps or the scatter writes
    at.run()
    assert_clean(at)
    maps = specs(at)
    est, exact = array(maps["Estimated"]["data"][0]["z"]), array(maps["Exact probe"]["data"][0]["z"])
    line = next(c.value for c in at.caption if c.value.startswith("Pair "))
    values = [float(v) for v in re.findall(r"(?:estimated|exact) ([-\d.e+]+) nats", line)]
    assert np.allclose(values, [est[i, j], exact[i, j]], rtol=1e-3, atol=1e-9), line
    ring = maps["Estimated against exact, per pair"]["data"][-1]
    assert ring["x"] == [exact[i, j]] or np.isclose(ring["x"][0], exact[i, j])


def test_the_agreement_has_a_plain_reading_of_its_numbers(env):
    at = open_compare()
    spearman = next(m.value for m in at.metric if m.label == "Spearman")
    overlap = float(next(m.value for m in at.metric if m.label == "Top-20 overlap").rstrip("%")) / 100
    reading = next(m.value for m in at.markdown if m.value.startswith("**In plain words:**"))
    assert f"(Spearman {spearman};" in reading  # the number the metric shows
    assert f"{round(overlap * 20)} of the 20 pairs the exact probe finds strongest are also among" in reading


def test_the_plain_reading_follows_the_numbers():
    assert "almost the same order" in texts.agreement_reading(0.95, 0.9, 20)
    reading = texts.agreement_reading(0.808, 0.3, 20)
    # 6 of 20: the few strong pairs, which decoding uses, come first
    assert reading.startswith("**In plain words:** only 6 of the 20 pairs the exact probe finds strongest are")
    assert "mostly the same order" in reading
    assert "agree more on the order of the many weak pairs than on which few are strongest" in reading
    assert "which few are strongest" not in texts.agreement_reading(0.95, 0.9, 20)
    assert "little in common" in texts.agreement_reading(0.1, 0.0, 20)
    assert texts.agreement_reading(float("nan"), float("nan"), 20).startswith("Too few")


def test_the_exact_page_opens_on_the_cell_mi_maps_opens_on(env):
    # it opened on the first blank (r1c2) while MI maps and What-if open on the most uncertain one (r4c7)
    maps = run_page("pages/1_MI_maps.py", src="paste", puzzle=EASY)
    assert_clean(maps)
    at = open_compare()
    assert at.selectbox(key="cell").value == maps.selectbox(key="cell").value
    assert at.selectbox(key="cell").value != EASY.index(".")  # the puzzle's most uncertain blank is not its first


def test_agreement_reading_says_when_the_top_k_holds_every_pair():
    reading = texts.agreement_reading(1.0, 1.0, 6, pairs=6)
    assert "in the same order" in reading and "almost" not in reading
    assert "the top-k overlap counts every pair, so it says nothing here" in reading
    assert "says nothing" not in texts.agreement_reading(0.95, 0.9, 20, pairs=300)
