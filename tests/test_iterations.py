"""A recurrent model's iterations: when cells settle, per-iteration marginals, the truncated model, and the MI
maps page's iteration slider (shown for a recurrent model only)."""

import json

import numpy as np
import pytest
import torch

from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig, save_sudoku_mdm
from mi_core.mi.probe import probe
from mi_core.models.iterations import Truncated, settle_iteration
from mi_lens_app import core, texts
from mi_lens_app.domains import get_domain
from tests import test_app_pages
from tests.test_app_pages import EASY, assert_clean, run_page, specs

weights = test_app_pages.weights


def recurrent_model(loops: int = 4) -> SudokuMDM:
    torch.manual_seed(1)
    cfg = SudokuMDMConfig(box=3, d_model=32, n_layers=1, n_heads=2, d_ff=64, loops=loops, attention="peer",
                          inject=True)
    return SudokuMDM(cfg).eval()


def easy_tokens() -> torch.Tensor:
    return core.tokens_of(EASY, get_domain("sudoku9"), "cpu")


def test_a_cell_settles_after_its_last_change():
    argmax = np.array([[3, 1, 5, 2, 7],
                       [3, 2, 5, 2, 7],
                       [3, 2, 4, 2, 7],
                       [3, 2, 4, 5, 7],
                       [3, 2, 4, 5, 1]])  # (T=5, N=5)
    np.testing.assert_array_equal(settle_iteration(argmax), [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(settle_iteration(np.array([[1, 2], [2, 2], [1, 2]])), [3, 1])  # changed back
    np.testing.assert_array_equal(settle_iteration(np.array([[4, 4]])), [1, 1])  # one iteration
    with pytest.raises(ValueError, match="must be"):
        settle_iteration(np.array([1, 2, 3]))


def test_the_last_iteration_is_the_models_normal_output():
    model, tokens = recurrent_model(), easy_tokens()
    view = core.iteration_view(model, tokens)
    assert view.marginals.shape == (4, 81, 9) and view.iterations == 4
    base = probe(model, tokens, positions=[])  # one pass: the marginals in the probe's format
    np.testing.assert_allclose(view.marginals[-1], base.marginals.numpy(), atol=1e-6)
    np.testing.assert_allclose(view.entropy[-1], base.entropy.numpy(), atol=1e-6)
    assert (view.settle[~view.masked] == 0).all() and (view.settle[view.masked] >= 1).all()
    assert "of 4" in texts.settles(view.settle[view.masked], 4)


def test_a_truncated_model_stops_early_and_leaves_the_shared_one_alone():
    model, tokens = recurrent_model(), easy_tokens()
    with torch.no_grad():
        ours = Truncated(model, 2)(tokens[None]).logits
        direct = model(tokens[None], iterations=2).logits
        full = model(tokens[None]).logits
    torch.testing.assert_close(ours, direct, rtol=0, atol=0)
    assert not torch.allclose(ours, full)  # two iterations are not four
    res = core.probe_at_iteration(model, tokens, 2, eps=1e-2)
    view = core.iteration_view(model, tokens)
    np.testing.assert_allclose(res.marginals, view.marginals[1], atol=1e-6)  # the probe reads iteration 2
    assert model.iterations == 4
    with pytest.raises(ValueError, match="iterations must be"):
        Truncated(model, 0)


def test_a_model_that_is_not_recurrent_has_no_iterations():
    model = SudokuMDM(SudokuMDMConfig(box=3, d_model=32, n_layers=1, n_heads=2, d_ff=64)).eval()
    with pytest.raises(ValueError, match="not recurrent"):
        core.iteration_view(model, easy_tokens())


@pytest.fixture
def env(monkeypatch, weights, tmp_path):
    path = tmp_path / "recurrent.safetensors"
    save_sudoku_mdm(recurrent_model(), path)
    monkeypatch.setenv("MI_LENS_SUDOKU_MODEL", str(path))  # the default is recurrent
    monkeypatch.setenv("MI_LENS_SUDOKU_ESTIMATOR", str(weights[1]))
    monkeypatch.setenv("MI_LENS_SUDOKU_8LAYER_MODEL", str(weights[0]))  # the previous default, not recurrent
    monkeypatch.setenv("MI_LENS_SUDOKU_8LAYER_ESTIMATOR", str(weights[1]))
    monkeypatch.setenv("MI_LENS_DEVICE", "cpu")
    monkeypatch.setenv("MI_LENS_WARM", "0")
    return monkeypatch


def sliders(at) -> list[str]:
    return [s.label for s in at.slider]


def test_the_app_offers_the_default_read_in_symmetric_views(env):
    at = run_page("pages/1_MI_maps.py", preset="easy", model="views", iter="2")
    assert_clean(at)
    assert any("read in 4 symmetric views" in c.value for c in at.sidebar.caption)
    assert "Iteration" in sliders(at) and at.slider(key="iter").value == 2  # its iterations, averaged over views
    at = run_page("pages/3_Decoding.py", preset="easy", model="views")
    assert_clean(at)
    assert any("read in 4 symmetric views" in c.value for c in at.sidebar.caption)  # the decodings use it
    assert any("a pass here runs it 4 times" in c.value for c in at.caption)




def test_the_iteration_slider_shows_for_the_recurrent_model_only(env):
    at = run_page("pages/1_MI_maps.py", preset="easy", model="8layer")
    assert_clean(at)
    assert "Iteration" not in sliders(at) and "settles at" not in at.segmented_control(key="layer").options
    at = run_page("pages/1_MI_maps.py", iter="2")
    assert_clean(at)
    assert "Iteration" in sliders(at) and at.slider(key="iter").value == 2
    assert any("1 block applied 4 times" in c.value for c in at.sidebar.caption)
    assert "settles at" in at.segmented_control(key="layer").options
    assert any("settles at iteration" in c.value for c in at.caption)
    grid = next(spec for title, spec in specs(at).items()
                if title.replace("<br>", " ").endswith("iteration 2 of 4 (MI of the last iteration)"))
    hovers = [h for trace in grid["data"] for h in (trace.get("hovertext") or trace.get("text") or [])
              if isinstance(h, str) and "<b>r" in h]
    blank = [h for h in hovers if "given" not in h]
    assert len(hovers) == 81 and all("settles at iteration" in h for h in blank)  # every blank cell's hover
    assert not any("settles at iteration" in h for h in hovers if "given" in h)  # a given has no iterations
    assert any("MI source: **neural estimator**" in c.value for c in at.caption)  # the default's own estimator
    at.toggle(key="iterx").set_value(True).run()
    assert_clean(at)
    assert any("MI on this grid at iteration 2: exact" in c.value for c in at.caption)
    assert any(title.replace("<br>", " ").endswith("iteration 2 of 4 · MI: exact (pruned)") for title in specs(at))  # iteration 2's
    at.slider(key="iter").set_value(3).run()  # the toggle follows the slider
    assert_clean(at)
    assert any("MI on this grid at iteration 3: exact" in c.value for c in at.caption)
    at.slider(key="iter").set_value(4).run()  # the last iteration: the page's own map, no toggle
    assert_clean(at)
    assert not [t for t in at.toggle if t.key == "iterx"]
    at = run_page("pages/1_MI_maps.py", iter="2", iterx="true")  # a link reopens the exact map at iteration 2
    assert_clean(at)
    assert any("MI on this grid at iteration 2: exact" in c.value for c in at.caption)


def test_the_settles_at_map_is_titled_as_the_others_are(env):
    """Every map's title starts with a capital ("MI of r1c1 with every cell", "Entropy ..."): the "settles at"
    map's started "the iteration each cell settles at"."""
    at = run_page("pages/1_MI_maps.py", layer="settles at")
    assert_clean(at)
    titles = [t.replace("<br>", " ") for t in specs(at) if "settles at" in t]
    assert titles == ["The iteration each cell settles at (of 4)"], list(specs(at))


def test_a_link_with_a_bad_iteration_or_model_gives_no_traceback(env):
    at = run_page("pages/1_MI_maps.py", iter="99", layer="settles at")
    assert_clean(at)
    assert at.slider(key="iter").value == 4  # clamped to the last iteration
    at.sidebar.selectbox(key="model").set_value("8layer").run()  # "settles at" is not a layer of this model
    assert_clean(at)
    assert at.segmented_control(key="layer").value == "MI" and "Iteration" not in sliders(at)
    at = run_page("pages/1_MI_maps.py", model="banana", iter="abc")
    assert_clean(at)
    assert any("not understood" in w.value for w in at.warning)
    assert "Iteration" in sliders(at) and at.slider(key="iter").value == 4  # the default model, at its last


def test_bench_runs_a_recurrent_model_for_more_iterations_and_refuses_others(tmp_path, model_path, capsys):
    """``bench --iterations`` changes a recurrent model's passes (the JSON says how many) and is refused, in one
    line, for a model that is not recurrent."""
    from mi_core.cli import main
    from mi_core.io import file_sha256

    path = tmp_path / "recurrent.safetensors"
    save_sudoku_mdm(recurrent_model(loops=3), path)
    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY.replace("_", "0") + "\n")
    rows = {}
    for iterations in (0, 1, 6):
        out = tmp_path / f"bench{iterations}.json"
        assert main(["bench", "sudoku", "--puzzles", str(puzzles), "--model", str(path), "--iterations",
                     str(iterations), "--json", str(out)]) == 0
        rows[iterations] = json.loads(out.read_text())
    assert rows[0]["iterations"] == 3 and rows[1]["iterations"] == 1 and rows[6]["iterations"] == 6
    sweep = tmp_path / "sweep.json"
    assert main(["sweep", "sudoku", "--puzzles", str(puzzles), "--model", str(path), "--iterations", "5",
                 "--samplers", "sequential", "--json", str(sweep)]) == 0
    swept = json.loads(sweep.read_text())
    assert {r["iterations"] for r in swept} == {5} and {r["model_sha256"] for r in swept} == {file_sha256(path)}
    assert main(["bench", "sudoku", "--puzzles", str(puzzles), "--model", str(model_path), "--iterations", "6"]) != 0
    assert "is not a recurrent model" in capsys.readouterr().err


def iterations_on_worker(model, device):
    return model.iterations


def test_a_sweep_worker_runs_the_model_for_the_iterations_it_was_given(tmp_path):
    """Ray workers load the model themselves: ``--iterations`` reaches them through the worker factory."""
    from mi_core.bench.scale import ModelWorker

    path = tmp_path / "recurrent.safetensors"
    save_sudoku_mdm(recurrent_model(loops=3), path)
    assert ModelWorker("sudoku9", str(path), "cpu")()((iterations_on_worker,)) == 3
    assert ModelWorker("sudoku9", str(path), "cpu", 7)()((iterations_on_worker,)) == 7
