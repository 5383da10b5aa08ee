"""The app's support code without Streamlit: domains, core results, graph, figures, exports, benchmarks."""

import json

import numpy as np
import pytest
import torch

from mi_core.domains.oracle4 import Oracle4Model, exact_pair_mi
from mi_core.domains.sudoku import (
    SUDOKU4,
    SUDOKU9,
    MultipleSolutionsError,
    NoSolutionError,
    SudokuConflictError,
    SudokuFormatError,
)
from mi_core.domains.sudoku.domain import SUDOKU_VIEWS
from mi_core.mi.estimator import EstimatorConfig, MIEstimator
from mi_lens_app import benchmarks, charts, core, exports, figures, graph, traces
from mi_lens_app.domains import DOMAINS, generate, load_presets, make_puzzle, named, read_upload

EASY = "..9.7.1.....2.8...2...3...4.9.........8....311.6...52.....6327.....9.6...1...7.5."
EASY_SOL = "349675182761248395285931764597312846428756931136489527954163278872594613613827459"
S9, S4 = DOMAINS["sudoku9"], DOMAINS["sudoku4"]


@pytest.fixture
def tiny_estimator():
    torch.manual_seed(1)
    return MIEstimator(EstimatorConfig(d_in=32, n_values=9, d_node=16, d_proj=8, d_pair=8, init_bias=0.0)).eval()


# ---- domains -----------------------------------------------------------------------------------------


def test_make_puzzle_keeps_digits_and_unique_solution():
    pz = make_puzzle(S9, EASY, "easy")
    assert pz.text == EASY and pz.solution_text == EASY_SOL
    assert pz.givens.sum() == 25 and len(pz.blanks) == 56 and pz.blanks[0] == 0


@pytest.mark.parametrize("text, error, match", [
    (EASY[:-1], SudokuFormatError, "81 cells, got 80"),
    (EASY[:10] + "x" + EASY[11:], SudokuFormatError, "bad character 'x' at position 11"),
    ("99" + EASY[2:], SudokuConflictError, "digit 9 appears twice in row 1"),
    ("5" + EASY[1:], NoSolutionError, "no solution"),  # no direct conflict, but the solution has 3 there
    ("." * 81, MultipleSolutionsError, "more than one solution"),
])
def test_make_puzzle_rejects_bad_input_with_a_clear_message(text, error, match):
    with pytest.raises(error, match=match):
        make_puzzle(S9, text)


def test_4x4_domain_accepts_several_solutions_without_a_reference_solution():
    pz = make_puzzle(S4, "." * 16)
    assert pz.solution is None and len(pz.blanks) == 16
    assert make_puzzle(S4, "...2...41...2...").solution is not None  # a unique 4x4 puzzle keeps its solution


def test_presets_are_valid_and_run_from_easy_to_hard():
    presets = load_presets()
    assert set(presets) == {"sudoku9", "sudoku4"} and len(presets["sudoku9"]) >= 4
    assert presets["sudoku9"][0].name.startswith("MI showcase")  # what the app opens on (tests/test_presets.py)
    clues = [int(make_puzzle(S9, p.puzzle).givens.sum()) for p in presets["sudoku9"][1:]]
    assert clues == sorted(clues, reverse=True)  # fewer givens further down the list
    assert all(make_puzzle(S9, p.puzzle).solution is not None for p in presets["sudoku9"])
    assert make_puzzle(S4, presets["sudoku4"][0].puzzle).solution is None  # the 4x4 oracle needs open states


def test_generate_is_seeded_and_checks_the_clue_range():
    a, b = generate(S9, 30, 5), generate(S9, 30, 5)
    assert a == b and a.givens.sum() == 30 and a.solution is not None
    with pytest.raises(ValueError, match="needs 24-60 clues, got 10"):
        generate(S9, 10, 0)


def test_read_upload_filters_by_size_and_names_bad_files():
    data = f"# two puzzles\n{EASY}\n{'.' * 16}\n".encode()
    records = read_upload("p.txt", data, S9)
    assert [r.puzzle for r in records] == [EASY] and records[0].line == 2
    csv_data = f"puzzle,solution\n{EASY},{EASY_SOL}\n".encode()
    assert read_upload("p.csv", csv_data, S9)[0].solution == EASY_SOL
    with pytest.raises(SudokuFormatError, match="p.txt starts as UTF-16 text does .*: save it as UTF-8"):
        read_upload("p.txt", b"\xff\xfe\x00\x81", S9)
    with pytest.raises(SudokuFormatError, match="p.txt is not a text file"):
        read_upload("p.txt", b"PK\x03\x04\x00\x81", S9)
    with pytest.raises(SudokuFormatError, match="has no 16-cell puzzles"):
        read_upload("p.txt", f"{EASY}\n".encode(), S4)
    with pytest.raises(SudokuFormatError, match="has no 81-cell puzzles"):
        read_upload("p.txt", b"12345\n", S9)
    bad = EASY[:10] + "x" + EASY[11:]  # measured when read, checked in full when picked
    assert [r.line for r in read_upload("p.txt", f"{bad}\n{EASY}\n".encode(), S9)] == [1, 2]
    with pytest.raises(SudokuFormatError, match="bad character 'x' at position 11"):
        make_puzzle(S9, bad)
    with pytest.raises(SudokuFormatError, match="'puzzle' column"):
        read_upload("p.csv", b"grid\n123\n", S9)


# ---- core ---------------------------------------------------------------------------------------------


def test_estimator_map_is_symmetric_and_zero_on_givens(tiny_mdm, tiny_estimator):
    tokens = core.tokens_of(EASY, S9, "cpu")
    m = core.fast_map(tiny_mdm, tiny_estimator, S9, tokens)
    given = ~m.masked
    assert m.mi.shape == (81, 81) and m.source == "neural estimator" and m.passes == 1
    np.testing.assert_array_equal(m.mi, m.mi.T)
    assert (m.mi[given] == 0).all() and (m.mi[:, given] == 0).all() and (np.diag(m.mi) == 0).all()
    assert m.marginals.shape == (81, 9) and np.allclose(m.marginals.sum(1), 1, atol=1e-6)


def test_estimator_mismatch_names_what_does_not_fit(tiny_mdm, tiny_estimator):
    assert core.estimator_mismatch(tiny_mdm, tiny_estimator, S9) is None
    wide = MIEstimator(EstimatorConfig(d_in=64, n_values=9))
    assert core.estimator_mismatch(tiny_mdm, wide, S9) == "it reads hidden states of size 64, but the model's are 32"
    four = MIEstimator(EstimatorConfig(d_in=32, n_values=4))
    assert core.estimator_mismatch(tiny_mdm, four, S9) == "it expects 4 values, the model has 9"


def test_fast_map_without_estimator_is_the_pruned_probe(tiny_mdm):
    tokens = core.tokens_of(EASY, S9, "cpu")
    m = core.fast_map(tiny_mdm, None, S9, tokens)
    exact = core.run_probe(tiny_mdm, tokens, 1e-3)
    assert m.source == "exact (pruned, eps=0.001)"
    np.testing.assert_array_equal(m.mi, exact.mi)
    assert m.passes == exact.passes <= 1 + 56 * 9


def test_4x4_probe_matches_the_exact_joint_mi():
    model = Oracle4Model()
    grid = "1..." + "." * 12
    tokens = core.tokens_of(grid, S4, "cpu")
    view = core.run_probe(model, tokens, 0.0)
    np.testing.assert_allclose(view.mi, exact_pair_mi(tokens).numpy(), atol=1e-9)
    assert view.asymmetry.max() < 1e-9  # consistent conditionals: both directions agree
    assert view.as_map().source == "exact"


def test_compare_maps_reports_perfect_agreement_and_topk_overlap():
    rng = np.random.default_rng(0)
    a = rng.random((16, 16))
    a = a + a.T
    masked = np.ones(16, bool)
    same = core.compare_maps(a, a, masked, k=10)
    assert same["spearman"] == pytest.approx(1.0) and same["mae"] == 0 and same["topk_overlap"] == 1.0
    flipped = core.compare_maps(-a, a, masked, k=10)
    assert flipped["spearman"] == pytest.approx(-1.0) and flipped["topk_overlap"] == 0.0


def test_what_if_clamps_one_blank_and_refuses_a_given(tiny_mdm):
    tokens = core.tokens_of(EASY, S9, "cpu")
    w = core.what_if(tiny_mdm, tokens, 0, 2)
    assert w.entropy_after[0] == 0 and w.marginals_after[0, 2] == 1.0  # the clamped cell is now visible
    assert w.p_value == pytest.approx(w.marginals_before[0, 2])
    assert w.mi_from_cell.shape == (81,) and (w.mi_from_cell >= 0).all() and w.mi_from_cell[0] == 0
    with pytest.raises(ValueError, match="cell 2 is not blank"):
        core.what_if(tiny_mdm, tokens, 2, 0)


def test_decode_trace_starts_at_the_puzzle_and_fills_every_blank(tiny_mdm):
    trace = traces.decode_trace(tiny_mdm, None, S9, EASY, EASY_SOL, "topk", {"k": 7})
    first, last = trace.steps[0], trace.steps[-1]
    assert first.step == 0 and (first.tokens == np.array([int(c) if c != "." else 0 for c in EASY])).all()
    assert not first.chosen.any() and first.passes == 0
    assert (last.tokens > 0).all() and last.passes == len(trace.steps) - 1 == 8  # 56 blanks, 7 per pass
    assert sum(int(s.chosen.sum()) for s in trace.steps) == 56
    givens = first.tokens > 0
    assert all((s.tokens[givens] == first.tokens[givens]).all() for s in trace.steps)
    target = np.array([int(c) for c in EASY_SOL])
    np.testing.assert_array_equal(last.errors, (last.tokens != target))
    assert trace.solved == (not last.errors.any())
    assert trace.mi_source is None and last.mi_among is None  # no estimator: no MI to show


def test_a_decode_stops_where_its_progress_callback_raises(tiny_mdm):
    seen = []

    class Closed(Exception):  # what Streamlit raises in a run whose session was closed
        pass

    def progress(filled: int, masked: int) -> None:
        seen.append((filled, masked))
        if len(seen) == 2:
            raise Closed

    with pytest.raises(Closed):
        traces.decode_trace(tiny_mdm, None, S9, EASY, EASY_SOL, "sequential", {}, progress=progress)
    assert seen == [(1, 56), (2, 56)]  # two of the 56 steps ran, not all of them


def test_the_first_wrong_value_is_wrong_when_written_even_if_taken_back():
    def frame(step, tokens, chosen, errors):
        zeros = np.zeros(3)
        return traces.StepView(step, np.array(tokens), np.array(chosen), np.zeros(3, bool), zeros, zeros, step, 0,
                             None, None, None, np.array(errors))

    # mask_predict's way: step 1 fills all three, position 0 wrongly; step 2 rewrites it right, and writes 2 wrong
    trace = traces.Trace("mask_predict", {}, [frame(0, [0, 0, 0], [0, 0, 0], [0, 0, 0]),
                                            frame(1, [5, 1, 2], [1, 1, 1], [1, 0, 0]),
                                            frame(2, [4, 1, 7], [1, 0, 1], [0, 0, 1])], None, 0.0)
    assert trace.first_wrong() == (1, 0)  # not position 2, the one wrong in the final grid
    trace.steps[1] = frame(1, [4, 1, 2], [1, 1, 1], [0, 0, 0])
    assert trace.first_wrong() == (2, 2)
    trace.steps[2] = frame(2, [4, 1, 2], [0, 0, 0], [0, 0, 0])
    assert trace.first_wrong() is None


def test_a_value_masked_again_at_once_keeps_its_digit_and_probability(tiny_mdm):
    """mask_predict writes every blank, then masks the least confident again in the same step: each chosen cell's
    digit and p(digit) are those of the value written (argmax at temperature 0), not of the mask (token 0)."""
    trace = traces.decode_trace(tiny_mdm, None, S9, EASY, EASY_SOL, "mask_predict", {"steps": 3})
    prev = trace.steps[0].tokens
    again = 0
    for s in trace.steps[1:]:
        with torch.no_grad():
            probs = tiny_mdm(torch.as_tensor(prev)[None]).logits.double().softmax(-1)[0].numpy()
        chosen = np.flatnonzero(s.chosen)
        again += int(s.remasked[chosen].sum())
        np.testing.assert_allclose(s.confidence[chosen], probs[chosen].max(-1), rtol=1e-5)
        np.testing.assert_array_equal(s.written[chosen], probs[chosen].argmax(-1) + 1)
        assert (s.written[~s.chosen] == 0).all() and (s.tokens[s.remasked] == 0).all()
        prev = s.tokens
    assert again == 38 + 19  # 56 blanks: 38 masked again after step 1, 19 after step 2
    row = json.loads(exports.trace_json(trace, EASY, "sudoku9", S9.labels(), 0.0, 0))["steps"][1]["unmasked"]
    assert all(u["digit"] in set("123456789") for u in row)  # the digit written, not the mask's "."


def test_decode_trace_mi_strategy_uses_the_estimator(tiny_mdm, tiny_estimator):
    trace = traces.decode_trace(tiny_mdm, tiny_estimator, S9, EASY, EASY_SOL, "mi", {"gamma": 2.0})
    assert trace.mi_source == "mi's own MI"
    assert all(s.budget_spent is not None and s.mi_among >= 0 for s in trace.steps[1:])
    with pytest.raises(ValueError, match="has no MI source"):
        traces.decode_trace(tiny_mdm, None, S9, EASY, EASY_SOL, "mi", {})


def test_decode_trace_on_the_oracle_counts_rule_conflicts_and_stops_when_inconsistent():
    # on the empty grid every marginal is uniform: 4 cells of row 1 at once all take digit 1 (argmax ties)
    trace = traces.decode_trace(Oracle4Model(), None, S4, "." * 16, None, "topk", {"k": 4})
    assert len(trace.steps) == 2 and "no 4x4 Sudoku solution" in trace.stopped
    np.testing.assert_array_equal(trace.steps[1].tokens[:4], [1, 1, 1, 1])
    np.testing.assert_array_equal(np.flatnonzero(trace.steps[1].errors), [0, 1, 2, 3])
    assert trace.mi_source == "exact (4x4 oracle)" and trace.steps[1].mi_among > 0
    assert 0 < trace.steps[1].mi_max < trace.steps[1].mi_among  # six pairs: their largest, below their sum
    exported = json.loads(exports.trace_json(trace, "." * 16, "oracle4", S4.labels(), 0.0, 0))["steps"][1]
    assert (exported["mi_among"], exported["mi_max"]) == pytest.approx((trace.steps[1].mi_among, trace.steps[1].mi_max))
    ok = traces.decode_trace(Oracle4Model(), None, S4, "." * 16, None, "sequential", {})
    assert ok.stopped is None and ok.solved and len(ok.steps) == 17


def test_rule_conflicts_marks_both_repeated_cells():
    tokens = np.zeros(81, int)
    tokens[[0, 5, 40]] = [3, 3, 3]  # r1c1 and r1c6 share row 1; r5c5 shares nothing with them
    np.testing.assert_array_equal(np.flatnonzero(traces.rule_conflicts(tokens, SUDOKU9.peers())), [0, 5])


def test_strategy_fields_cover_the_registry_and_hide_app_supplied_params():
    fields = {f.name: f for f in core.strategy_fields("topk")}
    assert fields["k"].kind == "int" and not fields["k"].optional
    assert fields["steps"].kind == "int" and fields["steps"].optional and fields["steps"].default is None
    mi_fields = core.strategy_fields("mi")
    assert [f.name for f in mi_fields] == ["gamma", "lam", "relative"]  # 'estimator' is supplied by the app
    assert mi_fields[2].kind == "bool" and mi_fields[2].default is False


def test_domain_strategy_defaults_start_the_widgets_and_fit_their_ranges():
    tuned = {f.name: f.default for f in core.strategy_fields("mi", (("mi", "lam", 2.0), ("eb", "gamma", 9.0)))}
    assert tuned == {"gamma": 1.0, "lam": 2.0, "relative": False}  # only mi's own entries apply
    for domain in DOMAINS.values():
        for strategy, key, value in domain.strategy_defaults:
            field = next(f for f in core.strategy_fields(strategy, domain.strategy_defaults) if f.name == key)
            lo, hi = core.param_range(strategy, field)
            assert field.default == value and lo <= value <= hi, (domain.key, strategy, key)

# ---- graph, figures, exports, benchmarks -----------------------------------------------------------------


def test_dependency_graph_by_threshold_and_top_k():
    mi = np.zeros((81, 81))
    mi[0, 1] = mi[1, 0] = 0.5  # same row
    mi[0, 40] = mi[40, 0] = 0.2  # no shared rule
    mi[2, 3] = mi[3, 2] = 0.9  # r1c4 is given below: never an edge
    masked = np.ones(81, bool)
    masked[3] = False
    g = graph.dependency_graph(mi, masked, SUDOKU9.peers(), threshold=0.1)
    assert graph.edge_list(g) == [(0, 1, 0.5, True), (0, 40, 0.2, False)]
    top = graph.dependency_graph(mi, masked, SUDOKU9.peers(), top_k=1)
    assert graph.edge_list(top) == [(0, 1, 0.5, True)]
    info = graph.summary(g)
    assert info == {"edges": 2, "rule_edges": 1, "other_edges": 1, "rule_fraction": 0.5, "components": 1}
    assert graph.strength(g, 81)[0] == pytest.approx(0.7)
    with pytest.raises(ValueError, match="exactly one"):
        graph.dependency_graph(mi, masked, SUDOKU9.peers())


def test_pairs_tied_with_the_kth_strongest_are_all_kept():
    """On the empty 4x4 grid the 56 pairs of a shared row, column or box tie: top 30 kept rows 1-2's and none
    of rows 3-4's, a lopsided graph of a symmetric puzzle."""
    peers = SUDOKU4.peers()
    mi = np.where(peers, 0.288, 0.0) + np.where(peers, 1e-9, 0.0) * np.random.default_rng(0).random((16, 16))
    mi = (mi + mi.T) / 2
    g = graph.dependency_graph(mi, np.ones(16, bool), peers, top_k=30)
    assert g.number_of_edges() == 56 and g.graph["tied"] == 26 and g.graph["candidates"] == 56
    cut = graph.dependency_graph(mi, np.ones(16, bool), peers, top_k=30, cap=40)  # 56 ties, 40 drawn at most
    assert cut.number_of_edges() == 30 and cut.graph["tie_cut"] and cut.graph["tied"] == 0
    strict = np.where(peers, np.arange(256).reshape(16, 16) + 1.0, 0.0)
    strict = np.maximum(strict, strict.T)  # no ties: exactly the k strongest
    assert graph.dependency_graph(strict, np.ones(16, bool), peers, top_k=30).number_of_edges() == 30


def _array(value):
    """A plotly JSON array (a list or a typed array) as numpy."""
    if isinstance(value, dict):
        import base64

        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = [int(s) for s in str(value.get("shape", len(arr))).split(",")]
        return arr.reshape(shape)
    return np.asarray(value)


def test_mi_heatmap_box_major_permutes_rows_and_columns():
    mi = np.arange(81 * 81, dtype=float).reshape(81, 81)
    labels = S9.labels()
    order = figures.cell_order(81, 3, "box")
    assert order[:9].tolist() == [0, 1, 2, 9, 10, 11, 18, 19, 20] and sorted(order) == list(range(81))
    trace = json.loads(figures.mi_heatmap(mi, 3, labels, order="box", selected=10).to_json())["data"][0]
    z = _array(trace["z"])
    assert z.shape == (81, 81)
    np.testing.assert_array_equal(z, mi[np.ix_(order, order)])
    assert trace["x"][:4] == ["r1c1", "r1c2", "r1c3", "r2c1"] and trace["y"] == trace["x"]  # hover names the pair
    with pytest.raises(ValueError, match="'row' or 'box'"):
        figures.cell_order(81, 3, "column")


def test_grid_figure_click_markers_map_back_to_cells():
    digits = np.array([int(c) if c != "." else 0 for c in EASY])
    fig = figures.grid_figure(digits, digits > 0, 3, layer=np.zeros(81), hover=[str(i) for i in range(81)])
    clicks = next(t for t in fig.data if t.name == "cells")
    assert len(clicks.x) == 81
    assert figures.clicked_cell({"points": [{"x": 4, "y": 2}]}, 81) == 22
    assert figures.clicked_cell({"points": []}, 81) is None


def test_exports_round_trip(tiny_mdm, tiny_estimator):
    m = core.fast_map(tiny_mdm, tiny_estimator, S9, core.tokens_of(EASY, S9, "cpu"))
    labels = S9.labels()
    rows = exports.mi_csv(m.mi, labels, m.masked).decode("utf-8-sig").strip().split("\n")
    assert rows[0].split(",")[:4] == ["cell", "masked", "r1c1", "r1c2"] and len(rows) == 82
    assert [int(r.split(",")[1]) for r in rows[1:]] == [int(c == ".") for c in EASY]  # givens are told apart
    parsed = np.array([[float(v) for v in r.split(",")[2:]] for r in rows[1:]])
    np.testing.assert_allclose(parsed, m.mi, rtol=1e-7, atol=1e-12)
    data = json.loads(exports.mi_json(m, EASY, "sudoku9", labels))
    assert data["puzzle"] == EASY and np.asarray(data["mi"]).shape == (81, 81)
    trace = traces.decode_trace(tiny_mdm, None, S9, EASY, EASY_SOL, "topk", {"k": 28})
    t = json.loads(exports.trace_json(trace, EASY, "sudoku9", labels, 0.0, 0))
    assert [s["step"] for s in t["steps"]] == [0, 1, 2] and len(t["steps"][1]["unmasked"]) == 28
    assert "model" not in t and "model" not in data
    # a second model of a domain: the export names the domain the command line takes, and the model apart
    views = json.loads(exports.trace_json(trace, EASY, labels=labels, temperature=0.0, seed=0,
                                          **named(SUDOKU_VIEWS.key)))
    assert (views["domain"], views["model"]) == ("sudoku9", "views")
    assert named("sudoku9_8layer") == {"domain": "sudoku9", "model": "8layer"} and named("protein") == {"domain": "protein"}
    html = exports.figure_html(charts.bar_figure(["a"], {"s": np.ones(1)}))
    assert html.startswith("<!doctype html>") and "Plotly.newPlot" in html
    assert "<script src=" not in html and len(html) > 1_000_000  # plotly.js inlined: opens offline


def test_exports_name_the_model_that_ran(tiny_mdm, tiny_estimator):
    """A map or trace records the model line the sidebar shows (its file): ``auto`` or a variable may have picked
    another model than the domain's default, and {"domain": "protein"} alone does not say ESM-C or the MDM."""
    m = core.fast_map(tiny_mdm, tiny_estimator, S9, core.tokens_of(EASY, S9, "cpu"))
    line = "Model: protein MDM trained on CATH S40 (128-dim, 6 layers, max 256 residues; protein_mdm.safetensors)."
    data = json.loads(exports.mi_json(m, EASY, "protein", S9.labels(), model_description=line))
    assert data["model_description"] == line.removeprefix("Model: ").removesuffix(".")  # a record, not a sentence
    trace = traces.decode_trace(tiny_mdm, None, S9, EASY, EASY_SOL, "topk", {"k": 28})
    t = json.loads(exports.trace_json(trace, EASY, "sudoku9", S9.labels(), 0.0, 0, model_description=line))
    assert t["model_description"] == data["model_description"]
    assert "model_description" not in json.loads(exports.mi_json(m, EASY, "sudoku9", S9.labels()))


def test_the_bench_command_of_a_second_model_names_the_file_its_variable_picks(monkeypatch):
    from mi_lens_app.domains import bench_domain_options

    assert bench_domain_options("sudoku9_8layer") == ["sudoku", "--model", "assets/sudoku_mdm_hard.safetensors"]
    monkeypatch.setenv("MI_LENS_SUDOKU_8LAYER_MODEL", "/data/my_8layer.safetensors")
    assert bench_domain_options("sudoku9_8layer") == ["sudoku", "--model", "/data/my_8layer.safetensors"]


def test_benchmark_rows_from_sweep_files(tmp_path):
    rows = [{"set": "dev", "sampler": "topk", "params": {"k": "2"}, "n": 10, "accuracy": 0.5, "mean_passes": 28.0},
            {"set": "dev", "sampler": "eb", "params": {"gamma": "0.1"}, "n": 10, "accuracy": 0.6, "mean_passes": 30.0}]
    (tmp_path / "sweep_dev.json").write_text(json.dumps(rows))
    (tmp_path / "sweep_hard.json").write_text(json.dumps([{k: v for k, v in rows[0].items() if k != "set"}]))
    (tmp_path / "app_speed.json").write_text(json.dumps({"first_map_s": 1.0}))
    (tmp_path / "broken.json").write_text("{not json")
    found = benchmarks.load_rows(tmp_path)
    assert found.sets == ["dev", "hard"] and found.files == ["sweep_dev.json", "sweep_hard.json"]
    assert sorted(found.skipped) == ["app_speed.json", "broken.json"]
    assert found.rows[0]["label"] == "topk (k=2)"
    assert benchmarks.pareto(found.rows[:2], benchmarks.METRICS[0]) == found.rows[:2]  # more passes, more accuracy
    assert benchmarks.load_rows(tmp_path / "absent").rows == []


def test_benchmark_rows_decoded_again_or_over_views_are_series_of_their_own(tmp_path):
    row = {"set": "dev", "sampler": "mi", "params": {"gamma": "0.6"}, "n": 10, "accuracy": 0.5, "mean_passes": 6.0}
    rows = [row, {**row, "attempts": 32, "accuracy": 0.9, "mean_passes": 9.0}, {**row, "views": 4, "attempts": 1}]
    (tmp_path / "sweep_dev.json").write_text(json.dumps(rows))
    found = benchmarks.load_rows(tmp_path)
    assert [r["sampler"] for r in found.rows] == ["mi", "mi, up to 32 decodes", "mi, 4 views"]
    assert found.rows[1]["label"] == "mi, up to 32 decodes (gamma=0.6)"
    traces = charts.frontier_figure(found.rows).data
    points = [t for t in traces if t.mode == "markers"]
    assert [t.name for t in points] == ["mi", "mi, up to 32 decodes", "mi, 4 views"]
    assert len({t.marker.color for t in points}) == 1  # one sampler, one colour; each series a shape of its own
    assert [t.marker.symbol for t in points] == ["circle", "square", "diamond"]


def test_benchmark_sets_of_two_models_stay_apart_and_the_page_opens_on_the_default(tmp_path):
    row = {"set": "expert", "sampler": "mi", "params": {}, "n": 10, "accuracy": 0.5, "mean_passes": 9.0}
    learned = {**row, "sampler": "learned"}
    (tmp_path / "sweep_expert.json").write_text(json.dumps([row, learned]))
    # a rerun on the default model that kept the set's --name: it was merged into one set of two models
    (tmp_path / "sweep_expert_new.json").write_text(json.dumps([{**r, "model_sha256": "abc"} for r in (row, learned)]))
    found = benchmarks.load_rows(tmp_path)
    assert found.sets == ["expert", "expert_new"] and len(found.rows) == 4
    assert benchmarks.sets_on_model(found.rows, "abc") == {"expert_new"}
    assert benchmarks.opening_set(found.rows, found.sets, benchmarks.sets_on_model(found.rows, "abc")) == "expert_new"
    assert benchmarks.opening_set(found.rows, found.sets) == "expert"


def test_an_unreadable_or_folder_model_file_is_a_message(monkeypatch):
    from mi_lens_app import support

    shown = []
    monkeypatch.setattr(support, "show_error", lambda err, what: shown.append(str(err)))
    for err in (PermissionError(13, "Permission denied", "/srv/m.safetensors"),  # was a traceback on the page
                IsADirectoryError(21, "Is a directory", "/srv/models")):
        def fail(err=err):
            raise err
        assert support.attempt(fail, what="Cannot load the model") is None
    assert "Permission denied" in shown[0] and "Is a directory" in shown[1]


def test_a_model_named_by_its_variable_is_labelled_by_its_file(monkeypatch):
    """With MI_LENS_SUDOKU_MODEL naming the user's own 2-layer model, the sidebar's Model select still said "default
    (recurrent, 24 iterations)", the shipped model's description, as if the variable had been ignored."""
    from mi_lens_app.domains import get_domain, model_choices

    monkeypatch.delenv("MI_LENS_SUDOKU_MODEL", raising=False)
    monkeypatch.delenv("MI_LENS_SUDOKU_8LAYER_MODEL", raising=False)
    assert model_choices(get_domain("sudoku9"))["default"] == "default (recurrent, 24 iterations)"
    monkeypatch.setenv("MI_LENS_SUDOKU_MODEL", "runs/mine.safetensors")
    choices = model_choices(get_domain("sudoku9"))
    assert choices["default"] == "mine.safetensors (MI_LENS_SUDOKU_MODEL)"
    assert choices["views"] == "mine.safetensors, 4 symmetric views (MI_LENS_SUDOKU_MODEL)"
    assert choices["8layer"] == "8 layers (the previous default)"
