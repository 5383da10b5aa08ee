"""Every page under ``streamlit.testing.v1.AppTest``, on a tiny random Sudoku MDM (and estimator) in a tmp dir."""

import base64
import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig, save_sudoku_mdm
from mi_core.mi.estimator import EstimatorConfig, MIEstimator, save_estimator
from mi_lens_app.domains import load_presets
from mi_lens_app.figures import cell_order
from mi_lens_app.frame import VIEWS
from mi_lens_app.texts import read_frame_line

EASY_PRESET = load_presets()["sudoku9"][1].name  # 45 blanks; the app opens on the showcase (58)

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
FIXTURES = ROOT / "tests" / "fixtures"
EASY = "..9.7.1.....2.8...2...3...4.9.........8....311.6...52.....6327.....9.6...1...7.5."


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    """A tiny random MDM and estimator on disk: ``(model_path, estimator_path)``."""
    root = tmp_path_factory.mktemp("app_models")
    torch.manual_seed(0)
    model = SudokuMDM(SudokuMDMConfig(box=3, d_model=32, n_layers=1, n_heads=2, d_ff=64))
    save_sudoku_mdm(model, root / "mdm.safetensors")
    est = MIEstimator(EstimatorConfig(d_in=32, n_values=9, d_node=16, d_proj=8, d_pair=8, init_bias=0.0))
    save_estimator(est, root / "est.safetensors")
    return root / "mdm.safetensors", root / "est.safetensors"


@pytest.fixture
def env(monkeypatch, weights, tmp_path):
    monkeypatch.setenv("MI_LENS_SUDOKU_MODEL", str(weights[0]))
    monkeypatch.setenv("MI_LENS_SUDOKU_ESTIMATOR", str(weights[1]))
    monkeypatch.setenv("MI_LENS_BENCHMARKS", str(FIXTURES))
    monkeypatch.setenv("MI_LENS_DEVICE", "cpu")
    monkeypatch.setenv("MI_LENS_WARM", "0")  # no background loads while tests swap models
    return monkeypatch


def run_page(path: str, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    if path != "app.py":
        at.switch_page(path)
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def specs(at: AppTest) -> dict:
    """Plotly figure JSON of every chart, by its title."""
    out = {}
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        title = spec["layout"].get("title", {})
        out[title.get("text", "") if isinstance(title, dict) else str(title)] = spec
    return out


def array(value) -> np.ndarray:
    """A plotly JSON array (a list or a base64 typed array) as numpy."""
    if isinstance(value, dict):
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        return arr.reshape([int(s) for s in str(value.get("shape", len(arr))).split(",")])
    return np.asarray(value)


def heatmaps(at: AppTest) -> dict:
    return {title: array(spec["data"][0]["z"]) for title, spec in specs(at).items()
            if spec["data"] and spec["data"][0]["type"] == "heatmap"}


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("path", [v.path for v in VIEWS])
def test_every_page_renders_without_exception(env, path):
    at = run_page(path)
    assert_clean(at)
    assert at.title and not at.error
    assert not at.subheader or at.header  # headings step h1, h2, h3: a screen reader's outline skips no level


def test_mi_maps_heatmap_has_one_entry_per_pair_of_cells(env):
    at = run_page("pages/1_MI_maps.py")
    assert_clean(at)
    maps = heatmaps(at)
    assert maps["MI, neural estimator"].shape == (81, 81)
    z = maps["MI, neural estimator"]
    np.testing.assert_allclose(z, z.T)
    assert any("Dependency graph" in t for t in specs(at))
    assert [b.label for b in at.download_button] == ["MI as CSV", "MI as JSON", "Heatmap as HTML", "Graph as HTML"]


def test_mi_maps_4x4_domain_is_exact(env):
    at = run_page("pages/1_MI_maps.py", domain="4x4")
    assert_clean(at)
    z = heatmaps(at)["MI, exact"]
    assert z.shape == (16, 16) and z.max() > 0.1  # the empty 4x4 grid: strong dependencies along the rules


def test_shared_url_reopens_the_same_view(env):
    preset = load_presets()["sudoku9"][3].name
    at = run_page("pages/1_MI_maps.py", preset=preset, cell="r5c4", layer="entropy", boxmajor="true")
    assert_clean(at)
    assert at.selectbox(key="preset").value == preset
    assert at.selectbox(key="cell").value == 39  # a blank of this preset
    assert at.segmented_control(key="layer").value == "entropy"
    maps = heatmaps(at)
    z = maps["MI, neural estimator"]
    default = heatmaps(run_page("pages/1_MI_maps.py", preset=preset))["MI, neural estimator"]
    order = cell_order(81, 3, "box")
    np.testing.assert_allclose(z, default[np.ix_(order, order)])  # box-major is the same matrix, permuted
    assert "entropy" in specs(at)


def test_mi_maps_without_estimator_says_so_and_uses_the_pruned_probe(env):
    env.setenv("MI_LENS_SUDOKU_ESTIMATOR", "/nonexistent/est.safetensors")
    at = run_page("pages/1_MI_maps.py")
    assert_clean(at)
    assert any("No usable MI estimator (/nonexistent/est.safetensors is missing)" in w.value for w in at.warning)
    assert heatmaps(at)["MI, exact (pruned, eps=0.001)"].shape == (81, 81)


def test_an_estimator_that_does_not_fit_the_model_is_set_aside(env, tmp_path):
    est = MIEstimator(EstimatorConfig(d_in=16, n_values=9, d_node=8, d_proj=4, d_pair=4))
    save_estimator(est, tmp_path / "other.safetensors")
    env.setenv("MI_LENS_SUDOKU_ESTIMATOR", str(tmp_path / "other.safetensors"))
    at = run_page("pages/1_MI_maps.py")
    assert_clean(at)
    assert any("does not fit the model: it reads hidden states of size 16, but the model's are 32" in w.value
               for w in at.warning)
    assert "MI, exact (pruned, eps=0.001)" in heatmaps(at)
    at = run_page("pages/3_Decoding.py", a="topk")
    assert_clean(at)
    assert not at.error and len(frame_steps(at)) == 2  # dependency-blind strategies decode without it


def test_missing_model_is_a_message_and_the_4x4_domain_still_works(env):
    env.setenv("MI_LENS_SUDOKU_MODEL", "/nonexistent/mdm.safetensors")
    at = run_page("pages/1_MI_maps.py")
    assert_clean(at)
    assert any("model file /nonexistent/mdm.safetensors is missing" in e.value for e in at.error)
    at = run_page("pages/1_MI_maps.py", domain="4x4")
    assert_clean(at)
    assert not at.error and "MI, exact" in heatmaps(at)


def test_variables_name_files_from_the_working_folder(env, weights, tmp_path):
    """MI_LENS_SUDOKU_MODEL=mine/mdm.safetensors set where the app starts: the app looked for it in the checkout
    (its model file ... is missing) though the command line read it from the working folder."""
    (tmp_path / "mine").mkdir()
    for path in (*weights, weights[0].with_suffix(".json"), weights[1].with_suffix(".json")):
        (tmp_path / "mine" / path.name).write_bytes(path.read_bytes())
    env.chdir(tmp_path)
    env.setenv("MI_LENS_SUDOKU_MODEL", "mine/mdm.safetensors")
    env.setenv("MI_LENS_SUDOKU_ESTIMATOR", "mine/est.safetensors")
    at = run_page("pages/1_MI_maps.py")
    assert_clean(at)
    assert not at.error and "MI, neural estimator" in heatmaps(at)


def test_a_model_whose_config_is_another_models_is_a_message(env, weights, tmp_path):
    """Weights beside the JSON of another model of the same shapes (other loops): refused on the page, naming
    both files; it loaded and drew maps of a model that was never trained."""
    path = tmp_path / "mdm.safetensors"
    path.write_bytes(weights[0].read_bytes())
    meta = json.loads(weights[0].with_suffix(".json").read_text())
    path.with_suffix(".json").write_text(json.dumps({**meta, "config": {**meta["config"], "loops": 4}}))
    env.setenv("MI_LENS_SUDOKU_MODEL", str(path))
    at = run_page("pages/1_MI_maps.py")
    assert_clean(at)
    assert any("mdm.safetensors do not fit the config" in e.value and "loops 4" in e.value for e in at.error)
    assert "MI, neural estimator" not in heatmaps(at)


@pytest.mark.parametrize("puzzle, message", [
    (EASY[:-1], "a Sudoku has 81 cells, got 80 characters"),
    (EASY[:10] + "x" + EASY[11:], "bad character 'x' at position 11"),
    ("99" + EASY[2:], "digit 9 appears twice in row 1"),
    ("5" + EASY[1:], "this puzzle has no solution"),
    ("." * 80 + "1", "more than one solution"),
])
@pytest.mark.parametrize("path", ["pages/1_MI_maps.py", "pages/3_Decoding.py"])
def test_bad_puzzles_show_an_error_and_keep_the_page_working(env, path, puzzle, message):
    at = run_page(path, src="paste", puzzle=puzzle)
    if message == "more than one solution" and path != "pages/3_Decoding.py":
        assert_clean(at)  # the map pages show it, with a note (tests/test_app_limits.py)
        assert heatmaps(at)
        return
    assert_clean(at)
    assert any(message in e.value for e in at.sidebar.error), [e.value for e in at.error]
    assert any(message in e.value for e in at.main.error)  # repeated where a 768-px screen shows it
    assert at.title and any("Correct the puzzle in the sidebar" in i.value for i in at.info)
    at.text_area(key="puzzle").set_value(EASY).run()  # fixing the input brings the page back
    assert_clean(at)
    assert not at.error and (at.get("plotly_chart") or frames(at))  # the maps, or the decoding frames (SVG)


@pytest.mark.parametrize("path, purpose", [("pages/1_MI_maps.py", "to see its MI map"),
                                           ("pages/2_Exact_vs_estimated.py", "to compare its maps"),
                                           ("pages/3_Decoding.py", "to decode it"), ("pages/4_What_if.py", "to try a value")])
def test_a_grid_with_no_blank_cell_asks_for_one(env, path, purpose):
    """A solved grid pasted on MI maps drew empty maps and said "the model is nearly sure of the cells"."""
    from mi_core.domains.sudoku.grid import parse_grid
    from mi_core.domains.sudoku.solver import solve_count

    solved = "".join(str(int(d)) for d in np.asarray(solve_count(parse_grid(EASY), limit=1)[1]).reshape(-1))
    at = run_page(path, src="paste", puzzle=solved)
    assert_clean(at)
    assert [i.value for i in at.main.info][:1] == [f"This grid has no blank cell: blank some with a dot or 0 in the "
                                                   f"sidebar {purpose}."]
    assert not at.get("plotly_chart") and at.text_area(key="puzzle").value == solved


def test_unreadable_upload_shows_an_error(env):
    at = run_page("pages/1_MI_maps.py", src="upload")
    at.file_uploader(key="upload").set_value(("p.txt", b"\xff\xfe\x81", "text/plain")).run()
    assert_clean(at)
    assert any("p.txt starts as UTF-16 text does" in e.value for e in at.error)
    at.file_uploader(key="upload").set_value(("p.txt", f"{EASY}\n".encode(), "text/plain")).run()
    assert_clean(at)
    assert not at.error and heatmaps(at)["MI, neural estimator"].shape == (81, 81)
    share = next(b for b in at.button if b.label == "Put this puzzle in the link")
    share.click().run()  # the upload becomes a pasted, shareable puzzle
    assert at.radio(key="src").value == "paste" and at.text_area(key="puzzle").value == EASY


def frame_numbers(at: AppTest) -> list[dict]:
    """Each decoding frame's line of numbers (step, passes, unmasked, ...), by label."""
    return [read_frame_line(m.value) for m in at.markdown if m.value.startswith("step\u00a0**")]


def frame_steps(at: AppTest) -> list[str]:
    return [numbers["step"] for numbers in frame_numbers(at)]


def frames(at: AppTest) -> dict:
    """The SVG of every decoding frame's grid (``mi_lens_app.grid_svg``), by its title (``topk: step 3``; its
    label, as presenting draws none)."""
    out = {}
    for m in at.markdown:
        title = re.search(r'<svg [^>]*aria-label="([^"]*)"', m.value) if "mi-grid" in m.value else None
        if title:
            out[html.unescape(title.group(1))] = m.value
    return out


def frame_grid(at: AppTest, strategy: str) -> str:
    return next(svg for title, svg in frames(at).items() if title.startswith(f"{strategy}: step"))


def frame_digits(at: AppTest, strategy: str) -> list:
    """The digits a frame shows, as ``[(kind, digit), ...]`` (kind: given, filled or wrong)."""
    return re.findall(r'<text class="(given|filled|wrong)"[^>]*>(\d+)</text>', frame_grid(at, strategy))


def test_decoding_steps_forward_and_back(env):
    at = run_page("pages/3_Decoding.py", preset=EASY_PRESET, a="topk", a_topk_k="4", b="eb")
    assert_clean(at)
    # the easy preset has 45 blanks: 12 passes of 4; the random model's entropies all exceed eb's budget: 45
    assert frame_steps(at) == ["0 / 12", "0 / 45"]
    start = frame_digits(at, "topk")
    at.button(key="step_next").click().run()
    assert frame_steps(at)[0] == "1 / 12" and frame_digits(at, "topk") != start
    assert frame_numbers(at)[0]["unmasked"] == "4"
    at.button(key="step_next").click().run()
    at.button(key="step_prev").click().run()
    assert frame_steps(at)[0] == "1 / 12"
    at.button(key="step_first").click().run()
    assert frame_steps(at)[0] == "0 / 12" and frame_digits(at, "topk") == start  # rewind
    at.slider(key="step").set_value(9).run()
    assert frame_steps(at) == ["9 / 12", "9 / 45"]
    at.button(key="step_last").click().run()
    assert frame_steps(at) == ["12 / 12", "45 / 45"]
    assert len(at.success) + len(at.error) == 2  # each side says solved or how many cells are wrong


def test_decoding_autoplay_advances_and_stops_at_the_last_frame(env):
    at = run_page("pages/3_Decoding.py", preset=EASY_PRESET, a="topk", a_topk_k="4", b="topk", b_topk_k="4")
    play = at.button(key="play_button")
    assert play.label == "Play" and play.proto.shortcut.lower() == "space"
    play.click().run()
    assert_clean(at)
    assert frame_steps(at)[0] == "1 / 12" and at.button(key="play_button").label == "Pause"
    at.run()
    assert frame_steps(at)[0] == "2 / 12"
    at.slider(key="step").set_value(11).run()
    assert frame_steps(at)[0] == "12 / 12"
    at.run()  # the next tick at the end stops the timer instead of running on
    assert_clean(at)
    assert frame_steps(at)[0] == "12 / 12" and at.button(key="play_button").label == "Play"
    assert not at.session_state["play"]
    at.run()
    assert frame_steps(at)[0] == "12 / 12"
    at.button(key="play_button").click().run()  # Play at the end starts again from the beginning
    assert frame_steps(at)[0] == "1 / 12"


def test_decoding_reads_strategies_and_parameters_from_the_url(env):
    at = run_page("pages/3_Decoding.py", a="mi", a_mi_lam="0.5", b="threshold", b_threshold_tau="0.7", step="3")
    assert_clean(at)
    heads = [m.value for m in at.markdown if m.value.startswith("**")]
    # gamma is not in the link: the Sudoku default (Domain.strategy_defaults), not the strategy's own 1.0
    assert "**mi** (MI-guided) · gamma 0.6 · lam 0.5" in heads
    assert "**threshold** (confidence threshold) · tau 0.7" in heads
    assert frame_steps(at)[0].startswith("3 / ")
    labels = [b.label for b in at.download_button]
    assert "Trace A (mi) as JSON" in labels and "Trace B (threshold) as JSON" in labels


def test_decoding_bad_parameters_show_an_error_beside_a_working_side(env):
    at = run_page("pages/3_Decoding.py", a="threshold", a_threshold_tau="0", b="eb")
    assert_clean(at)
    assert any("Cannot decode with threshold: tau must be in (0, 1]" in e.value for e in at.error)
    assert len(frame_steps(at)) == 1  # the other strategy still decodes


def test_decoding_mi_without_estimator_says_what_is_missing(env):
    env.setenv("MI_LENS_SUDOKU_ESTIMATOR", "/nonexistent/est.safetensors")
    at = run_page("pages/3_Decoding.py")  # the defaults: mi beside eb
    assert_clean(at)
    assert any("strategy mi reads MI from the neural estimator, which is not usable here "
               "(/nonexistent/est.safetensors is missing)" in w.value for w in at.warning)
    assert len(frame_steps(at)) == 1  # eb still decodes


def test_exact_vs_estimated_compares_and_prunes(env):
    at = run_page("pages/2_Exact_vs_estimated.py", scale="linear")  # the maps' z are then the values themselves
    assert_clean(at)
    assert any("Turn on the exact probe" in i.value for i in at.info)
    at.toggle(key="exact").set_value(True).run()
    assert_clean(at)
    maps = heatmaps(at)
    for title in ("Estimated", "Exact probe", "Estimated − exact", "Asymmetry |I(i→j) − I(j→i)|"):
        assert maps[title].shape == (81, 81)
    np.testing.assert_allclose(maps["Estimated − exact"], maps["Estimated"] - maps["Exact probe"])
    labels = {m.label for m in at.metric}
    assert {"Spearman", "MAE (nats)", "Top-20 overlap", "Largest asymmetry (nats)"} <= labels
    assert "Passes" not in labels  # the pruned probe runs only when asked: in class it doubled the wait
    at.toggle(key="prune").set_value(True).run()
    assert_clean(at)
    assert {"Passes", "Time (s)", "Error bound (nats)"} <= {m.label for m in at.metric}
    assert not any("rank of its own pairs" in c.value for c in at.caption)  # linear: one range for both maps
    at = run_page("pages/2_Exact_vs_estimated.py", scale="percentile")
    at.toggle(key="exact").set_value(True).run()
    assert_clean(at)  # percentile ranks each map within itself: equal shades are not equal MI (it said nothing)
    assert any("equal shades on the two maps are not equal MI" in c.value for c in at.caption)


def test_exact_vs_estimated_on_the_oracle_has_no_asymmetry(env):
    at = run_page("pages/2_Exact_vs_estimated.py", domain="4x4", exact="true", prune="true", eps="0.1")
    assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert float(metrics["Largest asymmetry (nats)"]) < 1e-9
    assert metrics["Passes"] == str(1 + 16 * 4)  # the empty grid's marginals are uniform: eps=0.1 skips nothing
    assert float(metrics["Spearman"]) == pytest.approx(1.0)  # the 4x4 fast map is the exact probe itself
    at = run_page("pages/2_Exact_vs_estimated.py", domain="4x4")
    assert_clean(at)
    assert any("Here the fast map is exact too" in i.value for i in at.info), [i.value for i in at.info]


def test_what_if_clamps_a_cell(env):
    at = run_page("pages/4_What_if.py", preset=EASY_PRESET, cell="r1c2", digit="3")
    assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert "p(r1c2 = 3)" in metrics and "Entropy of r1c2" in metrics
    titles = specs(at)
    assert "After r1c2 = 3" in titles and "MI after" in titles
    assert heatmaps(at)["After − before"].shape == (81, 81)
    said = " ".join(m.value for m in at.markdown)
    assert "not equal MI" in said and "share one colour range" not in said  # percentile: each map its own ranks
    linear = run_page("pages/4_What_if.py", preset=EASY_PRESET, cell="r1c2", digit="3", scale="linear")
    assert "share one colour range" in " ".join(m.value for m in linear.markdown)


def test_what_ifs_entropy_change_names_its_unit(env):
    """The total entropy's change read "-9.25" under "26.68 nats": a number without its unit on a projected page."""
    at = run_page("pages/4_What_if.py", preset=EASY_PRESET, cell="r1c2", digit="3")
    assert_clean(at)
    total = next(m for m in at.metric if m.label.startswith("Total entropy of the other"))
    assert total.value.endswith(" nats") and re.fullmatch(r"[+-]\d+\.\d\d nats", total.delta), total.delta


def test_what_if_inconsistent_clamp_on_the_oracle_is_a_message(env):
    at = run_page("pages/4_What_if.py", domain="4x4", src="paste", puzzle="1" + "." * 15, cell="r1c2", digit="1")
    assert_clean(at)
    assert any("r1c2 = 1 contradicts the givens: 1 already stands in r1c1" in w.value for w in at.warning)
    assert not at.error  # a plain sentence, not the oracle's "state 0 of the batch has visible tokens ..."


def test_benchmarks_plot_the_fixture_frontier(env):
    at = run_page("pages/5_Benchmarks.py")
    assert_clean(at)
    spec = specs(at)["Accuracy vs passes (n=20)<br><sup>demo</sup>"]  # the set in small type: one large line
    names = [t["name"] for t in spec["data"]]
    assert names == ["sequential", "topk", "eb", "frontier"]
    frontier = spec["data"][-1]
    assert list(array(frontier["x"])) == [12.5, 20.0, 50.0]  # topk k=4, eb, sequential; topk k=2 is beaten by eb
    assert len(at.dataframe[0].value) == 4


def test_benchmarks_open_on_a_protein_set_for_a_protein_link(env, tmp_path):
    # domain=protein (carried from a protein view) opened on the Sudoku plot without a word
    rows = [{"set": "cath_demo", "sampler": s, "params": {}, "n": 10, "jsd_dipeptide": j, "mean_passes": p}
            for s, j, p in (("sequential", 0.02, 80.0), ("topk", 0.05, 20.0))]
    (tmp_path / "sweep_cath.json").write_text(json.dumps(rows))
    (tmp_path / "sweep_demo.json").write_text((FIXTURES / "sweep_demo.json").read_text())
    env.setenv("MI_LENS_BENCHMARKS", str(tmp_path))
    for domain, opened in (("protein", "cath_demo"), ("antibody", "cath_demo"), ("9x9", "demo")):
        at = run_page("pages/5_Benchmarks.py", domain=domain)
        assert_clean(at)
        assert at.selectbox(key="set").value == opened, domain
        assert ("Opened on a protein set" in at.caption[0].value) == (opened == "cath_demo")
        # a protein link was told "Opened on a protein set for the protein domain; antibody in-filling results are
        # in BENCHMARKS.md": the antibody's note, on the protein's own kind of set
        assert ("antibody" in at.caption[0].value) == (domain == "antibody"), at.caption[0].value
    # a link that names its set opens on it, and the caption does not say it opened on another (it did)
    at = run_page("pages/5_Benchmarks.py", domain="protein", set="demo")
    assert at.selectbox(key="set").value == "demo" and "Opened on" not in at.caption[0].value, at.caption[0].value


@pytest.mark.parametrize("command", [True, False])
def test_benchmarks_open_on_the_antibody_sweep_for_an_antibody_link(env, tmp_path, command):
    """domain=antibody opened on a protein set though an antibody sweep was among the results listed: the page
    chose among sets scored like a protein's (a distance), and an antibody's recovery is higher-is-better. Its rows
    are the antibody's by the command that wrote them, or (with none) by their recovery."""
    def rows(set_name, key, domain, values):
        cmd = {"command": f"python -m mi_core sweep {domain} --json x.json"} if command else {}
        return [{"set": set_name, "sampler": s, "params": {}, "n": 10, key: v, "mean_passes": p, **cmd}
                for s, v, p in values]

    (tmp_path / "sweep_cath.json").write_text(json.dumps(
        rows("cath_demo", "jsd_dipeptide", "protein", (("sequential", 0.02, 80.0), ("topk", 0.05, 20.0)))))
    (tmp_path / "sweep_demo.json").write_text((FIXTURES / "sweep_demo.json").read_text())
    (tmp_path / "sweep_ab.json").write_text(json.dumps(
        rows("antibody-cdr3", "recovery", "antibody", (("sequential", 0.6, 12.0), ("topk", 0.5, 6.0)))))
    env.setenv("MI_LENS_BENCHMARKS", str(tmp_path))
    for domain, opened, said in (("antibody", "antibody-cdr3", "Opened on a sweep of the antibody domain."),
                                 ("protein", "cath_demo", "Opened on a protein set"), ("9x9", "demo", None)):
        at = run_page("pages/5_Benchmarks.py", domain=domain)
        assert_clean(at)
        assert at.selectbox(key="set").value == opened, domain
        assert (said in at.caption[0].value) if said else "Opened on" not in at.caption[0].value, at.caption[0].value
    assert "Recovery vs passes (n=10)<br><sup>antibody-cdr3</sup>" in specs(run_page("pages/5_Benchmarks.py",
                                                                                     domain="antibody"))


def test_a_set_measured_on_ones_own_model_is_named_the_apps_model(env, tmp_path, weights):
    """With MI_LENS_SUDOKU_MODEL naming one's own model, the sets measured on it were titled "the default model"."""
    from mi_core.io import file_sha256

    rows = json.loads((FIXTURES / "sweep_demo.json").read_text())
    (tmp_path / "sweep_mine.json").write_text(json.dumps([{**r, "set": "mine", "model_sha256": file_sha256(weights[0])}
                                                          for r in rows]))
    env.setenv("MI_LENS_BENCHMARKS", str(tmp_path))
    at = run_page("pages/5_Benchmarks.py", set="mine")
    assert_clean(at)
    assert at.selectbox(key="set").format_func("mine").endswith(" · the app's model")


def test_benchmarks_without_results_say_so(env, tmp_path):
    env.setenv("MI_LENS_BENCHMARKS", str(tmp_path))
    at = run_page("pages/5_Benchmarks.py")
    assert_clean(at)
    assert any("No benchmark results yet" in i.value for i in at.info)


def test_weak_mi_of_an_untrained_model_is_not_called_sure(env, tmp_path):
    """A user's barely trained 9x9 MDM (uniform marginals, so every pair's MI ~0) under percentile colours was
    captioned "the model is nearly sure of the cells", the opposite of the truth; the 4x4 oracle's unique puzzle (sure
    of every cell) keeps that wording (test_a_map_of_weak_mi_says_so_under_percentile_colours)."""
    torch.manual_seed(0)
    model = SudokuMDM(SudokuMDMConfig(box=3, d_model=32, n_layers=1, n_heads=2, d_ff=64))
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()  # constant logits: every masked cell uniform over the 9 digits
    save_sudoku_mdm(model, tmp_path / "flat.safetensors")
    save_estimator(MIEstimator(EstimatorConfig(d_in=16, n_values=9)), tmp_path / "est16.safetensors")  # does not fit
    env.setenv("MI_LENS_SUDOKU_MODEL", str(tmp_path / "flat.safetensors"))
    env.setenv("MI_LENS_SUDOKU_ESTIMATOR", str(tmp_path / "est16.safetensors"))  # the map: the exact probe
    at = run_page("pages/1_MI_maps.py", preset=EASY_PRESET)
    assert_clean(at)
    note = next(c.value for c in at.caption if "Percentile colours spread even these" in c.value)
    assert "the model is unsure of every masked cell" in note and "nearly sure" not in note
