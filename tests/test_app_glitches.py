"""Text and axis glitches of issue 27, item 10: protein pages speak of residues, About heads one paragraph
"Proteins.", the protein decode strip's axes and colour bar, the benchmarks' log axis, the contact map's
title, axes and empty state, "1 pass", and legends for the graph's circle sizes and the candidates layer."""

import re

import numpy as np

from mi_lens_app import charts, figures, protein_figures, screen, strips, texts
from mi_lens_app.sequences import load_protein_presets
from tests import test_app_pages, test_app_protein
from tests.test_app_pages import assert_clean, run_page, specs

weights = test_app_pages.weights
env = test_app_pages.env
protein_weights = test_app_protein.weights


def shown_texts(at) -> list[str]:
    out = [e.value for kind in ("markdown", "caption", "info", "warning", "success", "error") for e in at.get(kind)]
    return out + [m.label for m in at.metric]


def test_protein_decoding_speaks_of_residues_not_cells(monkeypatch, protein_weights):
    monkeypatch.setenv("MI_LENS_PROTEIN_MODEL", str(protein_weights[0]))
    monkeypatch.setenv("MI_LENS_PROTEIN_ESTIMATOR", "/nonexistent/protein_est.safetensors")
    monkeypatch.setenv("MI_LENS_DEVICE", "cpu")
    monkeypatch.setenv("MI_LENS_WARM", "0")
    at = test_app_protein.run_page("pages/3_Decoding.py", ppreset=load_protein_presets()[0].name, a="topk",
                                   b="mi_exact")
    assert not at.exception
    said = shown_texts(at)
    assert any("residues the model is surest of" in t for t in said)  # the strategy's plain words, reworded
    assert [t for t in said if re.search(r"\b(cells?|digits?)\b", t)] == []


def test_about_heads_one_paragraph_proteins(env):
    at = run_page("pages/6_About.py")
    assert_clean(at)
    assert sum(m.value.count("**Proteins.**") for m in at.markdown) == 1


def test_one_pass_is_singular():
    assert texts.passes(1) == "1 pass" and texts.passes(2) == "2 passes"


def test_headline_nats_are_plain_decimals():
    # the Exact page showed MAE 7.58e-02 and a form gap of 1.12e+00 to a class
    assert [texts.nats(v) for v in (0.0758, 1.12, 0.0, 2.11e-2, 8.35e-5)] == ["0.0758", "1.12", "0", "0.0211",
                                                                             "< 0.001"]


def test_the_protein_strip_axes_show_the_steps_and_a_fixed_colour_range():
    letters = "ACDEFGHIKLMNPQRSTVWY"
    tokens = np.zeros((1, 10), int)
    fig = strips.decode_strip(tokens, np.zeros((1, 10), bool), np.ones((1, 10)), np.zeros((1, 10), bool),
                                       letters)
    assert list(fig.layout.yaxis.range) == [0.5, -0.5]  # step 0 alone: not -1..1
    two = np.stack([np.zeros(10, int), np.arange(1, 11)])  # every residue filled at step 1
    chosen = np.stack([np.zeros(10, bool), np.ones(10, bool)])
    fig = strips.decode_strip(two, chosen, np.ones((2, 10)), np.zeros((2, 10), bool), letters)
    heat = fig.data[0]
    assert (heat.zmin, heat.zmax) == (1, 2)  # not plotly's 0.5-1.5 around the one value
    assert heat.colorbar.dtick == 1 and heat.colorbar.tick0 == 1  # whole steps
    assert list(fig.layout.yaxis.range) == [1.5, -0.5] and fig.layout.yaxis.dtick == 1
    fig = strips.decode_strip(two, chosen, np.ones((2, 10)), np.zeros((2, 10), bool), letters,
                                       color="entropy")
    assert fig.data[0].zmin == 0 and np.isclose(fig.data[0].zmax, np.log(20))


def test_the_benchmarks_log_axis_reads_in_whole_numbers(env):
    at = run_page("pages/5_Benchmarks.py")
    assert_clean(at)
    frontier = next(s for s in specs(at).values() if s["layout"].get("xaxis", {}).get("type") == "log")
    axis = frontier["layout"]["xaxis"]
    values, text = axis["tickvals"], axis["ticktext"]
    assert values == sorted(values) and len(values) >= 3
    assert [float(t.replace(",", "")) for t in text] == values  # "20" is written 20, not "2"
    passes = [x for d in frontier["data"] if d.get("mode") == "markers" for x in d["x"]]
    assert min(values) <= 1.6 * min(passes) and max(values) >= max(passes) / 1.6


def test_log_ticks_are_1_2_5_steps():
    assert charts.log_ticks(9, 300)["ticktext"] == ["10", "20", "50", "100", "200"]
    assert charts.log_ticks(1, 1000)["ticktext"][-1] == "1,000"
    assert "range" not in charts.log_ticks(9, 300)
    narrow = charts.log_ticks(13.12, 13.18)  # two samplers 0.06 passes apart: the axis reaches 10 and 20
    assert narrow["ticktext"] == ["10", "20"] and 10 ** narrow["range"][0] < 10 and 10 ** narrow["range"][1] > 20
    one = charts.log_ticks(56.8, 56.8)
    assert 10 ** one["range"][0] < 50 and 10 ** one["range"][1] > 60


def test_the_contact_map_title_fits_its_axes_start_at_residue_1_and_an_empty_map_says_why():
    n = 60
    labels = [f"A{i + 1}" for i in range(n)]
    mi = np.random.default_rng(0).random((n, n))
    fig = protein_figures.contact_figure(mi + mi.T, labels, np.ones(n, bool))
    head, _, rest = fig.layout.title.text.partition("<br>")
    assert head == "Contact-map view" and "|i−j| ≥ 4" in rest  # the counts on their own short line
    assert list(fig.layout.yaxis.range) == [n + 0.5, 0.5] and list(fig.layout.xaxis.range) == [0.5, n + 0.5]
    assert fig.layout.yaxis.constrain == "domain" and fig.layout.xaxis.constrain == "domain"  # no stretched range
    pairs = next(t for t in fig.data if t.name == "pairs")
    assert min(pairs.x) >= 1 and min(pairs.y) >= 1
    empty = protein_figures.contact_figure(np.zeros((n, n)), labels, np.ones(n, bool), min_sep=24)
    assert "0 pairs" in empty.layout.title.text
    hint = " ".join(a.text for a in empty.layout.annotations)
    assert "Lower the separation" in hint and "mask more residues" in hint


def test_an_empty_contact_map_says_why_on_the_page(monkeypatch, protein_weights):
    monkeypatch.setenv("MI_LENS_PROTEIN_MODEL", str(protein_weights[0]))
    monkeypatch.setenv("MI_LENS_PROTEIN_ESTIMATOR", "/nonexistent/protein_est.safetensors")
    monkeypatch.setenv("MI_LENS_DEVICE", "cpu")
    monkeypatch.setenv("MI_LENS_WARM", "0")
    # one masked residue: no pair at all
    at = test_app_protein.run_page("pages/1_MI_maps.py", psrc="paste", seq=test_app_protein.SEQ, mask_mode="positions",
                                   mask="5")
    assert not at.exception
    assert any("fewer than two residues are masked" in i.value for i in at.info), [i.value for i in at.info]


def test_the_graph_says_what_a_circle_size_means_and_the_candidates_layer_is_explained(env):
    at = run_page("pages/1_MI_maps.py", layer="candidates")
    assert_clean(at)
    graph = next(s for t, s in specs(at).items() if t.startswith("Dependency graph"))
    assert figures.NODE_SIZE_LEGEND in [d.get("name") for d in graph["data"] if d.get("showlegend") is not False]
    assert texts.candidates_legend(9) in [c.value for c in at.caption]


def test_a_long_frontier_title_is_wrapped_not_cut():
    rows = [{"set": "s", "sampler": "eb", "label": "eb", "params": {}, "n": 500, "mean_passes": p, "accuracy": a,
             "cell_accuracy": a, "seconds": 1.0} for p, a in ((3, 0.1), (9, 0.4), (40, 0.5))]
    title = "Accuracy vs passes: orders: Kaggle graded (dev split) (hard-data model) (n=500)"
    lines = charts.frontier_figure(rows, title).layout.title.text.split("<br>")
    assert len(lines) == 3 and max(map(len, lines)) <= screen.TITLE_CHARS
    assert " ".join(lines) == title
    assert charts.frontier_figure(rows, "Accuracy vs passes: demo (n=20)").layout.title.text == \
        "Accuracy vs passes: demo (n=20)"


def test_the_frontier_legend_leaves_a_phone_the_width_of_the_chart():
    """Beside the plot, with plotly's 80-px margins, the legend left the points 111 px of a phone's 342-px chart;
    in rows below the plot they get 261 px (measured in Chromium). The title wraps to fit ~330 px, the top margin
    holds its lines."""
    rows = [{"set": "s", "sampler": name, "label": name, "params": {}, "n": 200, "mean_passes": p, "accuracy": a,
             "cell_accuracy": a, "seconds": 1.0} for name, p, a in (("eb", 3, 0.6), ("mi", 4, 0.8), ("random", 9, 0.5))]
    title = "Accuracy vs passes: orders: peer-recurrent Kaggle graded, 200 (40 per level) · default model (n=200)"
    layout = charts.frontier_figure(rows, title).layout
    assert layout.legend.orientation == "h" and layout.legend.y < 0 and layout.legend.yanchor == "top"
    assert layout.margin.l <= 20 and layout.margin.r <= 20  # the axes' labels take what they need (automargin)
    assert layout.xaxis.automargin and layout.yaxis.automargin
    lines = layout.title.text.split("<br>")
    assert max(map(len, lines)) <= screen.TITLE_CHARS and layout.margin.t >= 50 + 22 * (len(lines) - 1)


def test_the_map_caption_says_1_model_pass_not_1_model_passes(env):
    at = run_page("pages/1_MI_maps.py")  # the estimator's map: one forward pass
    assert_clean(at)
    source = [c.value for c in at.caption if c.value.startswith("MI source")]
    assert source and "1 model pass ·" in source[0], source
    assert not re.search(r"\b1 model passes\b", source[0])


def test_one_connected_group_is_singular(env):
    assert texts.groups(1) == "1 connected group" and texts.groups(3) == "3 connected groups"
    at = run_page("pages/1_MI_maps.py")
    assert_clean(at)
    said = [c.value for c in at.caption if "connected group" in c.value]
    assert said and not re.search(r"\b1 connected groups\b", said[0]), said


def test_the_dependency_graph_legend_hangs_below_the_grid_not_over_it():
    n = 16
    fig = figures.dependency_figure([(0, 5, 0.3, False), (0, 1, 0.2, True)], np.zeros(n, int), np.zeros(n, bool), 2,
                                    [f"c{i}" for i in range(n)], strength=np.ones(n), selected=0)
    legend = fig.layout.legend
    assert legend.yanchor == "top" and legend.y <= 0  # below the plot area: a legend of several rows grows down


def test_pencil_marks_turn_white_on_dark_cells():
    digits, givens = np.zeros(16, int), np.zeros(16, bool)
    layer = np.linspace(0, 1.4, 16)  # entropies: light orange at the first cells, dark brown at the last
    fig = figures.grid_figure(digits, givens, 2, layer=layer, zmin=0, zmax=1.4, colorscale="Oranges",
                              candidates=np.full((16, 4), 0.25))
    marks = next(t for t in fig.data if t.name == "candidates")
    colours = [c.split(",")[0] for c in marks.textfont.color]  # four marks a cell, cell by cell
    assert colours[:4] == ["rgba(0"] * 4 and colours[-4:] == ["rgba(255"] * 4
    viridis = figures.grid_figure(digits, givens, 2, layer=layer, zmin=0, zmax=1.4, colorscale="Viridis",
                                  candidates=np.full((16, 4), 0.25))  # dark purple at the low end
    marks = next(t for t in viridis.data if t.name == "candidates")
    colours = [c.split(",")[0] for c in marks.textfont.color]
    assert colours[:4] == ["rgba(255"] * 4 and colours[-4:] == ["rgba(0"] * 4
    plain = figures.grid_figure(digits, givens, 2, candidates=np.full((16, 4), 0.25))  # no layer: all black
    assert {c.split(",")[0] for c in next(t for t in plain.data if t.name == "candidates").textfont.color} == {"rgba(0"}
