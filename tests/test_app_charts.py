"""Charts that tell the truth: axes next to the data, all-zero maps drawn as zero, log and percentile colour,
clickable heatmap cells, benchmark points and fronts, protein sweeps, capped dependency graphs."""


import numpy as np
import pytest

from mi_lens_app import benchmarks, charts, figures, protein_figures, screen, strips
from tests import test_app_pages
from tests.test_app_pages import EASY_PRESET, ROOT, assert_clean, run_page, specs

weights = test_app_pages.weights
env = test_app_pages.env


def test_benchmark_sets_are_named_without_folders_or_extensions():
    assert benchmarks.set_name("top1465.txt") == benchmarks.set_name("top1465") == "top1465"
    assert benchmarks.set_name("data/kaggle_graded_dev.csv") == "kaggle_graded_dev"
    found = benchmarks.load_rows(ROOT / "assets" / "benchmarks")
    assert "top1465.txt" not in found.sets and "top1465" in found.sets
    assert "cath_reference" in found.sets and "sweep_protein_cath.json" in found.files  # no longer skipped
    # a file of three puzzle sets whose ids other files share: three sets named by file and set, never merged
    foundation = sorted(s for s in found.sets if s.startswith("foundation"))
    assert foundation == ["foundation_clue17_dev", "foundation_kaggle_graded_dev", "foundation_top1465"]
    assert benchmarks.set_title("foundation_top1465") == "first Sudoku model (6 layers): top-1465"
    assert all(len({(r["sampler"], str(r["params"])) for r in found.rows if r["set"] == s})
               == sum(r["set"] == s for r in found.rows) for s in foundation)  # no sampler twice in one set


def test_the_frontier_draws_points_per_sampler_and_one_front_line():
    rows = [{"sampler": "mi", "label": f"mi ({p})", "mean_passes": x, "accuracy": a}
            for p, x, a in (("gamma=1", 10, 0.5), ("lam=3", 12, 0.2), ("gamma=2", 8, 0.4))]
    fig = charts.frontier_figure(rows)
    assert [t.mode for t in fig.data] == ["markers", "lines"]
    assert list(fig.data[-1].x) == [8, 10]  # the front skips the dominated lam=3 point


def test_rows_tied_with_a_frontier_row_are_on_the_frontier_too():
    """Two settings at 5.0 passes and 1.4% (top_margin steps=5 and learned_mi steps=5 on one shipped set): the list
    named one of them."""
    rows = [{"sampler": s, "mean_passes": x, "accuracy": a}
            for s, x, a in (("a", 5.0, 0.014), ("b", 5.0, 0.014), ("c", 5.0, 0.010), ("d", 8.0, 0.5), ("e", 9.0, 0.5))]
    assert [r["sampler"] for r in benchmarks.pareto(rows, benchmarks.METRICS[0])] == ["a", "b", "d"]


def test_a_protein_front_is_lowest_divergence_for_the_passes():
    rows = [{"sampler": "s", "label": "s", "mean_passes": x, "jsd_dipeptide": j} for x, j in ((10, 0.7), (20, 0.01),
                                                                                              (30, 0.02))]
    metric = benchmarks.metric_of(rows)
    assert not metric.higher and [r["mean_passes"] for r in benchmarks.pareto(rows, metric)] == [10, 20]


def test_the_benchmarks_page_shows_the_shipped_protein_sweep(env):
    env.setenv("MI_LENS_BENCHMARKS", str(ROOT / "assets" / "benchmarks"))
    at = run_page("pages/5_Benchmarks.py", set="cath_reference")
    assert_clean(at)
    spec = next(s for t, s in specs(at).items()
                if t.startswith("Dipeptide JSD vs passes (n=") and "<sup>CATH reference sequences" in t)
    assert spec["layout"]["yaxis"]["title"]["text"].startswith("dipeptide JSD")
    assert "dipeptide JSD" in at.dataframe[0].value.columns


def test_rows_that_differ_by_seed_are_one_point_with_their_spread(env):
    env.setenv("MI_LENS_BENCHMARKS", str(ROOT / "assets" / "benchmarks"))
    rows = [{"sampler": "random", "params": {"steps": 5}, "T": 5, "seed": s, "n": 300, "mean_passes": 5.0,
             "jsd_dipeptide": v} for s, v in enumerate([0.0058, 0.0061, 0.0070])]
    rows.append({"sampler": "eb", "params": {"gamma": 8.0}, "T": None, "seed": 0, "n": 300, "mean_passes": 3.5,
                 "jsd_dipeptide": 0.0065})
    merged = benchmarks.mean_over_seeds(rows, "jsd_dipeptide")
    assert [(r["sampler"], r.get("seeds")) for r in merged] == [("random", 3), ("eb", None)]
    assert merged[0]["jsd_dipeptide"] == pytest.approx(0.0063) and merged[0]["jsd_dipeptide_sd"] == pytest.approx(
        0.000624, abs=1e-6) and "seed" not in merged[0] and merged[1] == rows[3]
    # one seed, two runs: decoding once and again while the rules break are not averaged (nor two models)
    runs = [{"sampler": "sequential", "params": {}, "seed": 0, "n": 200, "mean_passes": p, "accuracy": a, **extra}
            for p, a, extra in ((56.8, 0.775, {}), (111.7, 0.97, {"attempts": 32}), (56.8, 0.6, {"model": "b"}))]
    assert benchmarks.mean_over_seeds(runs, "accuracy") == runs
    at = run_page("pages/5_Benchmarks.py", set="order_protein_cath")
    assert_clean(at)
    table = at.dataframe[0].value
    assert not table.duplicated(["sampler", "params"]).any() and "± sd" in table.columns
    assert any("mean over 3 seeds" in c.value for c in at.caption)


def test_an_all_zero_matrix_is_drawn_as_zero_not_saturated():
    fig = figures.mi_heatmap(np.zeros((16, 16)), 2, [f"c{i}" for i in range(16)])
    heat = fig.data[0]
    assert heat.zmin == 0 and heat.zmax == figures.ZERO_SPAN  # every cell at the bottom colour, bar 0..0.001
    seq = protein_figures.sequence_heatmap(np.zeros((5, 5)), list("ABCDE"))
    assert seq.data[0].zmin == 0 and seq.data[0].zmax == figures.ZERO_SPAN


def test_heatmap_axes_hug_the_square_matrix():
    fig = figures.mi_heatmap(np.random.default_rng(0).random((81, 81)), 3, [f"c{i}" for i in range(81)])
    assert fig.layout.xaxis.constrain == fig.layout.yaxis.constrain == "domain"  # no gap under the matrix


@pytest.mark.parametrize("scale", ["log", "percentile"])
def test_log_and_percentile_colours_keep_the_value_in_the_hover(scale):
    mi = np.abs(np.random.default_rng(1).normal(size=(16, 16))) ** 4 * 1e-3
    mi = (mi + mi.T) / 2
    fig = figures.mi_heatmap(mi, 2, [f"c{i}" for i in range(16)], scale=scale)
    z, raw = np.asarray(fig.data[0].z), np.asarray(fig.data[0].customdata)
    np.testing.assert_allclose(raw, mi)
    assert "customdata" in fig.data[0].hovertemplate and scale in fig.data[0].colorbar.title.text
    order = np.argsort(mi.ravel())
    assert (np.diff(z.ravel()[order]) >= -1e-12).all()  # a monotone map of the values: the ranking is kept
    if scale == "percentile":
        assert z.max() == 100


def test_a_heatmap_click_layer_returns_the_pair():
    fig = figures.mi_heatmap(np.zeros((16, 16)), 2, [f"c{i}" for i in range(16)], order="box", clickable=True)
    layer = fig.data[1]
    assert layer.type == "scatter" and len(layer.x) == 256  # SVG: no WebGL context for a few thousand markers
    k = 5  # the 6th marker: row 0, column 5 of the box-major matrix
    i, j = (int(v) for v in layer.customdata[k])
    assert (layer.y[k], layer.x[k]) == (f"c{i}", f"c{j}")
    assert figures.clicked_pair({"points": [{"customdata": [i, j]}]}) == (i, j)
    assert figures.clicked_pair({"points": [{"customdata": {"0": i, "1": j}}]}) == (i, j)  # as Streamlit sends it
    assert layer.hoverinfo == "text" and layer.hovertext[k] == f"c{i} · c{j}<br>MI (nats) 0"  # not "skip":
    assert figures.click_layer(["a", "b"], np.arange(2)).hoverinfo == "none"  # that would drop the clicks
    assert figures.clicked_pair({"points": []}) is None
    many = figures.click_layer([f"c{i}" for i in range(60)], np.arange(60))  # 3,600 markers: a protein map
    assert many.type == "scattergl" and len(many.x) == 3600 > figures.SVG_MARKERS


def test_the_dependency_graph_is_capped_and_says_so(env):
    at = run_page("pages/1_MI_maps.py", edges="threshold", thr="0")
    assert_clean(at)
    title = next(t for t in specs(at) if t.startswith("Dependency graph"))
    assert title.replace("<br>", " ").startswith("Dependency graph: the 300 strongest of ")  # wrapped to fit a phone
    assert any("draws the 300 strongest" in c.value for c in at.caption)


def test_a_threshold_above_every_pair_says_why_the_graph_is_empty(env):
    """At "MI above 10 nats" the graph was empty under "0 edges share a row, column or box; 0 do not; 0 connected
    groups", with nothing saying that no pair comes near 10 nats or what to do."""
    at = run_page("pages/1_MI_maps.py", edges="threshold", thr="10")
    assert_clean(at)
    said = [i.value for i in at.info if i.value.startswith("No pair has MI above 10 nats")]
    assert said and "lower the threshold" in said[0] and "the largest here is " in said[0], [i.value for i in at.info]
    assert not any("connected group" in c.value for c in at.caption)
    assert [b.label for b in at.download_button][-1] == "Graph as HTML"  # the page goes on below the graph


def test_the_maps_page_offers_log_colours(env):
    at = run_page("pages/1_MI_maps.py", preset=EASY_PRESET, scale="log")
    assert_clean(at)
    spec = next(s for t, s in specs(at).items() if t.startswith("MI, "))
    assert "log" in spec["data"][0]["colorbar"]["title"]["text"]
    assert spec["data"][1]["type"] == "scatter"  # clicks select pairs
    assert spec["layout"]["xaxis"]["tickangle"] == -90  # "row 1row 2" ran together level at 1024 px


def test_protein_axes_make_room_for_their_labels():
    fig = protein_figures.contact_figure(np.ones((60, 60)), [f"A{i}" for i in range(60)], np.ones(60, bool))
    assert fig.layout.yaxis.automargin and fig.layout.xaxis.automargin
    strip = strips.marginal_strip(np.full((10, 20), 0.05), np.ones(10), [f"A{i}" for i in range(10)],
                                           np.ones(10, bool), "ACDEFGHIKLMNPQRSTVWY", extra=("MI with A1", np.ones(10)))
    mi_trace = next(t for t in strip.data if t.name == "MI with A1")
    assert mi_trace.yaxis != "y"  # its own axis: MI is ~1000 times smaller than entropy
    assert strip.layout.yaxis3.automargin and list(strip.layout.yaxis3.ticktext)[:3] == ["A", "C", "D"]


# ---- defaults that show something ----


def expected_start(weights, puzzle: str) -> tuple[int, int]:
    """The most uncertain blank of ``puzzle`` under the test model and its most probable digit."""
    import torch

    from mi_core.domains.sudoku.mdm import load_sudoku_mdm
    from mi_core.mi.estimator import load_estimator
    from mi_lens_app import core
    from mi_lens_app.domains import DOMAINS

    tokens = core.tokens_of(puzzle, DOMAINS["sudoku9"], torch.device("cpu"))
    m = core.run_estimator(load_sudoku_mdm(weights[0], "cpu"), load_estimator(weights[1], "cpu"), tokens)
    blanks = [c for c, ch in enumerate(puzzle) if ch in ".0"]
    cell = blanks[int(np.argmax(m.entropy[blanks]))]
    return cell, int(np.argmax(m.marginals[cell])) + 1


def test_maps_and_what_if_open_on_the_most_uncertain_cell_and_its_likeliest_digit(env, weights):
    from mi_lens_app.domains import load_presets

    cell, digit = expected_start(weights, load_presets()["sudoku9"][0].puzzle)
    at = run_page("pages/1_MI_maps.py")
    assert at.selectbox(key="cell").value == cell
    at = run_page("pages/4_What_if.py")
    assert_clean(at)
    assert at.selectbox(key="cell").value == cell and at.pills(key="digit").value == digit


def test_what_if_opens_a_linked_cell_on_that_cells_likeliest_digit(env, weights):
    import torch

    from mi_core.domains.sudoku.mdm import load_sudoku_mdm
    from mi_core.mi.estimator import load_estimator
    from mi_lens_app import core
    from mi_lens_app.domains import DOMAINS, load_presets

    puzzle = load_presets()["sudoku9"][0].puzzle
    first, _ = expected_start(weights, puzzle)
    tokens = core.tokens_of(puzzle, DOMAINS["sudoku9"], torch.device("cpu"))
    m = core.run_estimator(load_sudoku_mdm(weights[0], "cpu"), load_estimator(weights[1], "cpu"), tokens)
    blanks = [c for c, ch in enumerate(puzzle) if ch in ".0"]
    # a linked blank whose likeliest digit differs from the most uncertain blank's
    cell = next(c for c in blanks if c != first and np.argmax(m.marginals[c]) != np.argmax(m.marginals[first]))
    at = run_page("pages/4_What_if.py", cell=f"r{cell // 9 + 1}c{cell % 9 + 1}")
    assert_clean(at)
    assert at.selectbox(key="cell").value == cell
    assert at.pills(key="digit").value == int(np.argmax(m.marginals[cell])) + 1
    # another cell picked: its own likeliest digit, not the last cell's (which could break a rule there)
    at.selectbox(key="cell").set_value(first).run()
    assert_clean(at)
    assert at.pills(key="digit").value == int(np.argmax(m.marginals[first])) + 1
    # (AppTest leaves the link's cell in its URL after set_value; a browser writes the new one)
    assert not any("digit=" in t.value for t in [*at.caption, *at.markdown, *at.warning])
    at.pills(key="digit").set_value(int(np.argmax(m.marginals[cell])) + 1).run()  # a digit the user picks stays
    assert at.pills(key="digit").value == int(np.argmax(m.marginals[cell])) + 1


def test_a_4x4_clamp_that_contradicts_the_givens_says_so_in_plain_words(env):
    # the unique 4x4 preset's solution has 4 at r1c1: 1 breaks a rule outright, 3 only through the givens
    for digit, why in (("1", "1 already stands in r3c1"), ("3", "the givens leave no way to finish the grid")):
        at = run_page("pages/4_What_if.py", domain="4x4", preset="unique (minimal) · 4 clues", cell="r1c1",
                      digit=digit)
        assert_clean(at)
        assert not at.error  # no "state 0 of the batch has visible tokens that no 4x4 Sudoku solution agrees with"
        assert any(f"r1c1 = {digit} contradicts the givens: {why}" in w.value for w in at.warning)


def test_the_home_page_points_at_a_domain_switch_that_exists(env):
    at = run_page("app.py")
    text = " ".join(m.value for m in at.markdown)
    assert "pick **protein** in the sidebar" not in text and "*Domain*" in text
    at = run_page("pages/1_MI_maps.py")
    assert "protein" in at.radio(key="domain").options  # the switch the home page names


def test_the_selected_cell_resets_on_a_switch_to_a_protein(env, tmp_path):
    import torch

    from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig, save_protein_mdm

    torch.manual_seed(0)
    save_protein_mdm(ProteinMDM(ProteinMDMConfig(max_len=256, d_model=32, n_layers=1, n_heads=2, d_ff=64)),
                     tmp_path / "protein.safetensors")
    env.setenv("MI_LENS_PROTEIN_MODEL", str(tmp_path / "protein.safetensors"))
    env.setenv("MI_LENS_PROTEIN_ESTIMATOR", "/nonexistent/protein_est.safetensors")
    env.setenv("MI_LENS_ANTIBODY_MODEL", "/nonexistent/antiberty")  # else the switch opens an antibody
    at = run_page("pages/1_MI_maps.py", cell="r1c2")
    at.radio(key="domain").set_value("protein").run()
    assert_clean(at)
    box = at.selectbox(key="cell")
    assert box.format_func(box.value).startswith("_")  # a masked residue, not r1c2


def test_the_click_layer_covers_only_pairs_of_masked_cells():
    masked = np.zeros(16, bool)
    masked[[1, 5, 7]] = True
    fig = figures.mi_heatmap(np.zeros((16, 16)), 2, [f"c{i}" for i in range(16)], clickable=masked)
    layer = fig.data[1]
    assert len(layer.x) == 9  # 3 x 3 pairs instead of 256 markers
    assert {int(i) for i, _ in layer.customdata} == {1, 5, 7}


def mi_colour_bars(spec_by_title: dict) -> dict[str, str]:
    """``{chart title: its colour bar's title}`` for every chart that colours MI (heatmaps, a grid's MI layer,
    the contact map's dots); difference maps (diverging around 0) are left out."""
    out = {}
    for title, spec in spec_by_title.items():
        for trace in spec["data"]:
            bar = trace.get("colorbar") or (trace.get("marker") or {}).get("colorbar")
            text = ((bar or {}).get("title") or {}).get("text", "")
            if trace.get("zmid") is None and ("MI" in text or text.startswith(("I (", "I rank", "asymmetry"))):
                out[title] = text
    return out


@pytest.mark.parametrize("path, query, maps", [
    ("pages/1_MI_maps.py", {}, 2),  # the heatmap and the grid's MI layer
    ("pages/2_Exact_vs_estimated.py", {"exact": "true"}, 3),  # estimated, exact, asymmetry
    ("pages/4_What_if.py", {}, 3),  # I(cell → j) on the grid, MI before, MI after
])
@pytest.mark.parametrize("scale", ["log", "percentile"])
def test_every_mi_map_takes_the_pages_colour_scale(env, path, query, maps, scale):
    at = run_page(path, scale=scale, **query)
    assert_clean(at)
    assert at.get("button_group")  # the one picker, from widgets.scale_picker
    bars = mi_colour_bars(specs(at))
    assert len(bars) == maps, bars
    ending = " rank (percentile)" if scale == "percentile" else ", log scale"  # a rank is not in nats
    assert all(text.endswith(ending) for text in bars.values()), bars


def test_a_log_layer_keeps_uncoloured_cells_uncoloured_and_a_shared_top():
    layer = np.array([np.nan, 0.0, 1e-3, 0.5] + [np.nan] * 12)
    fig = figures.grid_figure(np.zeros(16, int), np.zeros(16, bool), 2, layer=layer, layer_name="MI (nats)",
                              zmin=0, zmax=2.0, scale="log")
    heat = fig.data[0]
    z = np.asarray(heat.z, float).ravel()
    assert np.isnan(z[0]) and np.isnan(z[4:]).all() and z[1] == np.log10(figures.LOG_FLOOR)
    assert heat.zmax == pytest.approx(np.log10(2.0))  # the top a caller shares between maps side by side
    assert heat.colorbar.title.text == "MI (nats), log scale"


def test_a_map_of_weak_mi_says_so_under_percentile_colours(env):
    from mi_lens_app.domains import load_presets

    unique = next(p.name for p in load_presets()["sudoku4"] if "unique" in p.name)  # the exact oracle's MI: 0
    at = run_page("pages/1_MI_maps.py", domain="4x4", preset=unique)
    assert_clean(at)
    assert any("Percentile colours spread even these" in c.value for c in at.caption)
    at = run_page("pages/1_MI_maps.py", domain="4x4", preset=unique, scale="linear")
    assert_clean(at)
    assert not any("Percentile colours spread even these" in c.value for c in at.caption)
    at = run_page("pages/1_MI_maps.py", preset=EASY_PRESET)  # the tiny random estimator's MI reaches 1.1 nats
    assert not any("Percentile colours spread even these" in c.value for c in at.caption)


def test_long_chart_titles_are_wrapped_to_a_phones_width():
    """A 390-px phone's chart (~340 px) holds ~35 characters of a title: plotly does not wrap one, and the What-if
    page's "Exact I(r4c7 → j): expected entropy drop, all digits" lost its last three words, an antibody's arc graph
    "..., residues 61-120 of 120 shown". Each line now fits, and the top margin holds the lines."""
    grid = figures.grid_figure(np.zeros(81, int), np.zeros(81, bool), 3, title="Exact I(r4c7 → j): expected entropy "
                               "drop, all digits")
    rng = np.random.default_rng(0)
    mi = rng.random((120, 120))
    letters = "ACDEFGHIKLMNPQRSTVWY" * 6
    arcs = protein_figures.arc_figure(letters, list(letters), np.ones(120, bool), (mi + mi.T) / 2, cap=55, start=60,
                                      size=60)
    for fig in (grid, arcs):
        lines = fig.layout.title.text.split("<br>")
        assert len(lines) >= 2 and max(map(len, lines)) <= screen.TITLE_CHARS, lines
        assert fig.layout.margin.t >= 50 + 22 * (len(lines) - 1)
    # plotly centres a title in the top margin: from a third line on, each takes 54 px, or it reached into the plot
    assert [screen.extra_title_room("<br>".join("a" * n)) for n in (1, 2, 3, 4)] == [0, 22, 76, 130]
    marked = "MI of r1c2<br><sup>a note with <b>markup</b> inside it, longer than a line of small type</sup>"
    assert figures.grid_figure(np.zeros(16, int), np.zeros(16, bool), 2, title=marked).layout.title.text == marked
    key = "bars: entropy H (left axis) · line: MI with the selected residue (right axis)"  # 78 characters in <sup>
    lines = screen.wrap_title(f"Per-residue entropy<br><sup>{key}</sup>").split("<br>")
    assert len(lines) == 3 and all(w.startswith("<sup>") and w.endswith("</sup>") for w in lines[1:])
    assert max(len(w) - len("<sup></sup>") for w in lines[1:]) <= 1.4 * screen.TITLE_CHARS


DESKTOP = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0 Safari/537.36"
PHONE = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0 Mobile Safari/537.36"


@pytest.mark.parametrize("agent, lines", [(DESKTOP, 2), (PHONE, 4), (None, 4)])
def test_titles_wrap_at_a_phones_width_only_on_a_phone(monkeypatch, agent, lines):
    """Wrapped for a phone everywhere, an antibody's "Per-residue entropy and marginals (residues 61-120 of 120)" and
    its key took four lines on a 1024-px projector and a 1366-px laptop (two before), and the plot lost their height
    (at 1366 px it began 232 px down the chart, not 124). On a larger screen a chart as wide as the page wraps at 50 characters, one
    beside another at 42; a phone, or no browser (an exported file), still at 35."""
    monkeypatch.setattr(screen, "browser_agent", lambda: agent)
    letters = "ACDEFGHIKLMNPQRSTVWY" * 6
    rng = np.random.default_rng(0)
    strip = strips.marginal_strip(rng.dirichlet(np.ones(20), 120), rng.random(120), list(letters),
                                           np.ones(120, bool), letters[:20], extra=("MI with _100·H3", rng.random(120)),
                                           start=60, size=60)
    assert len(strip.layout.title.text.split("<br>")) == lines, strip.layout.title.text
    cdr3 = np.arange(120) // 11 == 9  # 11 masked: "Arc graph: all 55 pairs (residues 61-120 of 120)"
    arcs = protein_figures.arc_figure(letters, list(letters), cdr3, rng.random((120, 120)), cap=55, start=60, size=60)
    assert len(arcs.layout.title.text.split("<br>")) == lines // 2
    heatmap = protein_figures.sequence_heatmap(rng.random((120, 120)), list(letters), start=60, size=60,
                                               title="MI of a residue with every other residue it may depend on")
    assert max(map(len, heatmap.layout.title.text.split("<br>"))) <= (42 if agent == DESKTOP else 35)


def test_a_title_as_wide_as_the_page_fits_505_px_and_says_its_window_once():
    """Beside the open sidebar on a 1280 x 800 projector zoomed to 150% a chart is 505 px, ~50 characters of a title:
    wrapped at 60, "Per-residue entropy and marginals (residues 61-120 of 120)" ran 62 px past it. A title that names
    the residues gives the window as numbers, a short aside stays whole on its line, the arc graph says its count once."""
    assert screen.WIDE_TITLE_CHARS[True] == 50
    assert (protein_figures.window_note("Per-residue entropy and marginals", "residue", 60, 120, 120)
            == "Per-residue entropy and marginals (61-120 of 120)")
    assert protein_figures.window_note("Arc graph", "residue", 60, 120, 120) == "Arc graph (residues 61-120 of 120)"
    assert protein_figures.window_note("Arc graph", "residue", 0, 120, 120) == "Arc graph"
    assert (screen.wrap_title("Entropy change and MI from _100 (residues 61-120 of 120)", 50)
            == "Entropy change and MI from _100<br>(residues 61-120 of 120)")
    assert (screen.wrap_title("Masked residues: entropy before and after _1000 = G", 50)
            == "Masked residues: entropy before and after<br>_1000 = G")
    letters = "ACDEFGHIKLMNPQRSTVWY" * 6
    mi = np.random.default_rng(0).random((120, 120))
    arcs = protein_figures.arc_figure(letters, list(letters), np.ones(120, bool), (mi + mi.T) / 2, cap=60, start=60,
                                      size=60)
    assert screen.wrap_title(arcs.layout.title.text.replace("<br>", " "), 50).split("<br>") == [
        "Arc graph: the 60 strongest of 7140 pairs", "(residues 61-120 of 120)"]


def test_a_wrapped_title_over_cdr_bands_gets_the_margin_it_needs():
    """Over an antibody's CDR bands the margin was the title's own plus its room again: a two-line title touched the
    bands' names (0.8 px over them) and a three-line one had 52 px of blank (226 px, 106 more at four lines). Each
    line past the first now adds 54 px, as plotly lays the lines out (3 to 6 px between title and names in
    Chromium at 342 px)."""
    from mi_lens_app.cdr_marks import CDR_MARK

    letters = "ACDEFGHIKLMNPQRSTVWY" * 3
    labels = [f"{i}{CDR_MARK}H1" if 20 <= i < 30 else str(i) for i in range(60)]
    mi = np.random.default_rng(0).random((60, 60))
    for title, lines in (("Arc graph", 2), ("Arc graph of a long antibody heavy chain", 3),
                         ("Arc graph of a long antibody heavy chain name with more words in it and more", 4)):
        fig = protein_figures.arc_figure(letters, labels, np.ones(60, bool), (mi + mi.T) / 2, cap=20, title=title)
        assert fig.layout.title.text.count("<br>") + 1 == lines
        assert fig.layout.margin.t == 70 + 54 * (lines - 1), (lines, fig.layout.margin.t)
    short = [f"{i}{CDR_MARK}H1" if 5 <= i < 10 else str(i) for i in range(20)]
    one = protein_figures.arc_figure(letters[:20], short, np.ones(20, bool), mi[:20, :20], cap=5, title="A")
    assert one.layout.title.text.count("<br>") == 0 and one.layout.margin.t == 74  # a one-line title as before


def test_the_shared_figure_cache_keeps_a_phones_titles_from_a_laptop(monkeypatch):
    """Figures are built once per process for every session: keyed by their inputs alone, the first visitor's title
    width was every visitor's (a phone's four-line title on the projector, or a laptop's cut on a phone)."""
    from mi_lens_app import figure_cache

    figure_cache._figure.clear()
    title = "MI of a residue with every other residue it may depend on"
    built = []
    for agent in (PHONE, DESKTOP, PHONE):
        monkeypatch.setattr(screen, "browser_agent", lambda agent=agent: agent)
        built.append(figure_cache.shared_figure(screen.wrap_title, title))
    assert built[0] == built[2] != built[1]
    assert max(map(len, built[0].split("<br>"))) <= 35 < max(map(len, built[1].split("<br>")))
    figure_cache._figure.clear()


@pytest.mark.parametrize("agent", [PHONE, DESKTOP])
def test_a_phones_mi_map_is_as_wide_as_its_chart(env, agent):
    """On a 390-px phone the 81 x 81 map shared its ~340-px chart with a colour bar beside it and labels below it:
    181 px, 2.2 px a cell. There the colour bar lies under the map and the groups are named on the left only (the
    map is symmetric), and the map takes the chart's width (273 px, 3.4 a cell); a larger screen's is as it was."""
    env.setattr(screen, "browser_agent", lambda: agent)
    at = run_page("pages/1_MI_maps.py")
    assert_clean(at)
    spec = specs(at)["MI, neural estimator"]
    bar = spec["data"][0]["colorbar"]
    phone = agent == PHONE
    assert (bar.get("orientation") == "h") == phone and (bar.get("yref") == "container") == phone
    assert spec["layout"]["xaxis"].get("showticklabels", True) != phone  # names along the bottom only off a phone
    assert (spec["layout"]["margin"]["b"] >= screen.PHONE_COLORBAR_ROOM) == phone  # room for the bar below


# Chrome on an Android tablet says "Android" without "Mobile"; iPadOS Safari says what a Mac's Safari says
TABLET = ("Mozilla/5.0 (Linux; Android 14; SM-X910) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 "
          "Safari/537.36")
IPADOS = ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 "
          "Safari/605.1.15")
WINDOWS = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0 Safari/537.36"


@pytest.mark.parametrize("agent, hints, touch", [
    (PHONE, {}, True), (TABLET, {}, True),
    ("Mozilla/5.0 (Android 14; Tablet; rv:133.0) Gecko/133.0 Firefox/133.0", {}, True),  # Firefox on a tablet
    ("Mozilla/5.0 (iPad; CPU OS 12_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148", {}, True),
    (WINDOWS, {"sec-ch-ua-platform": '"Android"', "sec-ch-ua-mobile": "?0"}, True),  # Client Hints: an Android tablet
    (WINDOWS, {"sec-ch-ua-mobile": "?1"}, True),
    (WINDOWS, {"sec-ch-ua-platform": '"Windows"', "sec-ch-ua-mobile": "?0"}, False), (DESKTOP, {}, False),
    (IPADOS, {}, False),  # an iPad's Safari: a Mac's user agent, no Client Hints; its headers cannot tell
    (None, {}, False)])
def test_a_touch_screen_is_told_by_its_request_headers(agent, hints, touch):
    assert screen.touch_screen(agent, hints) == touch


@pytest.mark.parametrize("agent", [TABLET, DESKTOP])
def test_a_tablets_letter_charts_scroll_under_a_swipe_as_a_phones_do(env, agent):
    """Only a user agent with "Mobi" took the phone's swipe: on an Android tablet (no "Mobile") a finger's swipe on the
    arc graph or a decoding strip drag-zoomed it instead of scrolling the page. A tablet that says it is one now gets
    the phone's charts without drag, in a larger screen's layout; a desktop's mouse keeps its drag-zoom."""
    env.setattr(screen, "browser_agent", lambda: agent)
    touch = agent == TABLET
    at = run_page("pages/1_MI_maps.py", domain="protein")
    assert_clean(at)
    arcs = next(s for t, s in specs(at).items() if t.startswith("Arc graph"))
    assert (arcs["layout"].get("dragmode") is False) == touch
    bar = next(t for t in arcs["data"] if t.get("name") == "arc tops")["marker"]["colorbar"]
    assert bar.get("orientation") != "h"  # a larger screen's layout: the colour bar beside the plot
    at = run_page("pages/3_Decoding.py", domain="protein", step="1")
    assert_clean(at)
    strips = [s for t, s in specs(at).items() if ": step 1" in t]
    assert len(strips) == 2 and all((s["layout"].get("dragmode") is False) == touch for s in strips)


def test_a_proteins_maps_leave_room_for_their_colour_bar_on_a_zoomed_projector():
    """At 560 px (the heatmap) and 520 (the contact map) a protein's map was 457 px tall and its colour bar 498, on a
    projector zoomed to 150% with 420-452 px below Streamlit's header bar: the scale's ends were off the screen. A
    plain protein's maps are :data:`figures.MAP_HEIGHT` tall, as the Sudoku map; an antibody's grow by the room its
    second title line, CDR bands and longer labels take, so its map keeps the same height (at a flat 440 px it kept
    237 px of plot, where a plain protein's keeps 337)."""
    from mi_lens_app.cdr_marks import CDR_MARK

    rng = np.random.default_rng(0)
    mi, masked = rng.random((120, 120)), np.ones(120, bool)
    plain = [f"{a}{k + 1}" for k, a in enumerate("ACDEFGHIKLMNPQRSTVWY" * 3)][:58]
    maps = [protein_figures.sequence_heatmap(mi[:58, :58], plain), protein_figures.contact_figure(mi[:58, :58], plain, masked[:58])]
    assert [fig.layout.height for fig in maps] == [figures.MAP_HEIGHT] * 2
    antibody = [f"_{k + 1}{CDR_MARK}H3" if 98 <= k < 109 else f"A{k + 1}" for k in range(120)]
    heat = protein_figures.sequence_heatmap(mi, antibody, start=60, size=60)
    longer = protein_figures.LABEL_CHAR_PX * (len("_101·H3") - protein_figures.PLAIN_LABEL)
    assert heat.layout.height - heat.layout.margin.t == figures.MAP_HEIGHT - 50 + round(longer)  # the plain plot's
    assert protein_figures.sequence_heatmap(mi, antibody, height=420).layout.height == 420  # a page's own height kept


@pytest.mark.parametrize("count, size, room", [(60, 14, 160), (60, 15, 160), (60, 10, 40), (30, 14, 40), (120, 9, 160),
                                               (200, 7, 160)])
def test_residue_letters_keep_a_readable_size_in_a_chart_that_scrolls_sideways(count, size, room):
    """A window of 60 residues on a 390-px phone (a chart of 342 px) drew its letters 4.2 px tall: capped to the
    chart's width, with 160 px of it beside the plot. On a page of a phone's width the chart is now never narrower
    than letters of 10 px need (or of their own size where smaller, a window of 120 or 200), and scrolls sideways in
    its container where the page is narrower; where the chart is wide enough the letters keep their size."""
    import re

    smallest = min(size, 10)
    css = protein_figures.fit_letters_css("arcs_graph", count, size, room)
    assert re.search(r"\.st-key-arcs_graph_scroll \{ overflow-x: auto; \}", css)
    found = re.search(r"@media \(max-width: 640px\) \{ \.st-key-arcs_graph \{[^}]*min-width: (\d+)px", css)
    assert found, css
    width = int(found[1])
    per_letter = re.search(r"calc\(\(100cqw - (\d+)px\) / ([\d.]+)\)", css)
    drawn = min(size, (width - int(per_letter[1])) / float(per_letter[2]))  # the letters at the narrowest chart
    assert drawn >= smallest - 1e-9, (width, drawn)
    assert (width - room) / count >= drawn * protein_figures.LETTER_WIDTH  # still apart
    assert drawn <= smallest + 0.1  # no wider than letters of that size need: no scrolling where they fit


def test_a_frontier_of_distances_spanning_decades_is_drawn_on_a_log_axis():
    """The CATH reference set's mask_predict reached a dipeptide JSD of 0.71, the other samplers 0.006: on a linear
    axis every other point lay on one line at 0. A distance spanning more than 20x goes on a log axis."""
    from mi_lens_app import benchmarks

    metric = benchmarks.METRICS[1]
    rows = [{"sampler": s, "label": s, "mean_passes": p, metric.key: v}
            for s, p, v in (("topk", 10.0, 0.0061), ("eb", 4.0, 0.0060), ("mask_predict", 10.0, 0.706))]
    fig = charts.frontier_figure(rows, "JSD", metric)
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis.title.text.endswith("(log)")
    assert list(fig.layout.yaxis.ticktext) == ["0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"]
    assert charts.frontier_figure(rows[:2], "JSD", metric).layout.yaxis.type != "log"  # a close spread stays linear
