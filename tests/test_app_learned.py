"""The ``learned`` sampler in the app: the decoding page beside ``mi``, the selector's P(unmask) per step,
the domains and models it is hidden on, and the figure builder. Pages run on a tiny random MDM with a
tiny selector that fits it (tmp dir), and once on the shipped Sudoku MDM with the shipped selector."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from mi_core.mi.estimator import EstimatorConfig, MIEstimator, save_estimator
from mi_core.models.sudoku_mdm import SudokuMDM, SudokuMDMConfig, save_sudoku_mdm
from mi_core.order.selector import make_order_nets, save_order_net
from mi_lens_app import core, exports, figures
from mi_lens_app import selector as order
from mi_lens_app.domains import DOMAINS, load_presets

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
S9 = DOMAINS["sudoku9"]
PRESET = load_presets()["sudoku9"][0].puzzle  # 45 blanks
SHIPPED = {"MI_LENS_SUDOKU_MODEL": "assets/sudoku_mdm.safetensors",
           "MI_LENS_SUDOKU_SELECTOR": "assets/sudoku_order_selector.safetensors"}


def tiny_selector(d_model: int):
    """A selector whose last layer is random, so its probabilities differ between cells and steps."""
    torch.manual_seed(1)
    _, net = make_order_nets(d_model, width=16)
    torch.nn.init.normal_(net.mlp[-1].weight, std=0.5)
    return net.eval()


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    """A tiny random MDM, estimator and selector on disk: ``(model, estimator, selector)`` paths."""
    root = tmp_path_factory.mktemp("learned_models")
    torch.manual_seed(0)
    save_sudoku_mdm(SudokuMDM(SudokuMDMConfig(box=3, d_model=32, n_layers=1, n_heads=2, d_ff=64)), root / "mdm.safetensors")
    est = MIEstimator(EstimatorConfig(d_in=32, n_values=9, d_node=16, d_proj=8, d_pair=8, init_bias=0.0))
    save_estimator(est, root / "est.safetensors")
    save_order_net(tiny_selector(32), root / "sel.safetensors", {"denoiser": str(root / "mdm.safetensors")})
    return root / "mdm.safetensors", root / "est.safetensors", root / "sel.safetensors"


@pytest.fixture
def env(monkeypatch, weights):
    monkeypatch.setenv("MI_LENS_SUDOKU_MODEL", str(weights[0]))
    monkeypatch.setenv("MI_LENS_SUDOKU_ESTIMATOR", str(weights[1]))
    monkeypatch.setenv("MI_LENS_SUDOKU_SELECTOR", str(weights[2]))
    monkeypatch.setenv("MI_LENS_DEVICE", "cpu")
    return monkeypatch


def run_page(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("pages/3_Decoding.py")
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def specs(at: AppTest) -> dict:
    return {json.loads(c.proto.spec)["layout"]["title"]["text"]: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def z_of(spec: dict) -> np.ndarray:
    """The heatmap of a grid figure as ``(81,)`` floats (NaN where blank), from plain or base64 JSON."""
    z = spec["data"][0]["z"]
    if isinstance(z, dict):
        import base64
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"])).astype(float).ravel()
    return np.array([np.nan if v is None else v for row in z for v in row], float)


def step_metrics(at: AppTest) -> list[str]:
    return [m.value for m in at.metric if m.label == "step"]


def test_learned_beside_mi_shows_the_selectors_probabilities(env):
    at = run_page(a="learned", a_learned_steps="6", b="mi")
    assert_clean(at)
    assert not at.error and "learned" in at.selectbox(key="a").options
    assert {"steps", "threshold"} <= {n.label for n in at.number_input} and at.selectbox(key="a_learned_mode")
    assert len(step_metrics(at)) == 2 and not any("P(unmask)" in t for t in specs(at))
    assert any("shows from step 1 on" in c.value for c in at.caption)
    givens = np.array([c != "." for c in PRESET])
    at.button(key="step_next").click().run()
    assert_clean(at)
    first = z_of(specs(at)["learned: P(unmask) at step 1"])
    assert first.shape == (81,) and np.isnan(first[givens]).all()  # blank on filled cells
    masked = first[~givens]
    assert np.isfinite(masked).all() and (masked >= 0).all() and (masked <= 1).all() and masked.std() > 0.01
    caption = next(c.value for c in at.caption if c.value.startswith("Step budget"))
    assert "T = 6" in caption and "step 1 of 6, T left: 5" in caption
    outlined = [s for s in specs(at)["learned: P(unmask) at step 1"]["layout"]["shapes"] if s["type"] == "rect"]
    assert f"the {len(outlined)} cells unmasked" in caption and len(outlined) >= 1
    at.button(key="step_next").click().run()
    assert_clean(at)
    second = z_of(specs(at)["learned: P(unmask) at step 2"])
    assert np.isnan(second).sum() == np.isnan(first).sum() + len(outlined)  # step 1's cells are filled now
    assert not np.allclose(np.nan_to_num(first), np.nan_to_num(second))
    at.button(key="step_last").click().run()
    assert_clean(at)
    assert int(step_metrics(at)[0].split(" / ")[1]) <= 6  # at most T passes
    assert any("Trace A (learned)" in b.label for b in at.download_button)


def test_learned_params_are_checked(env):
    at = run_page(a="learned", a_learned_threshold="0", b="mi")
    assert_clean(at)
    assert any("Cannot decode with learned: threshold must be in (0, 1]" in e.value for e in at.error)
    assert len(step_metrics(at)) == 1  # mi still decodes


def test_shipped_selector_runs_on_the_shipped_model(monkeypatch):
    for key, value in SHIPPED.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("MI_LENS_SUDOKU_ESTIMATOR", raising=False)
    monkeypatch.setenv("MI_LENS_DEVICE", "cpu")
    at = run_page(a="learned", b="mi", step="1")
    assert_clean(at)
    assert not at.error and not any("trained against" in c.value for c in at.caption)
    z = z_of(specs(at)["learned: P(unmask) at step 1"])
    blanks = np.array([c == "." for c in PRESET])
    assert np.isfinite(z[blanks]).all() and np.isnan(z[~blanks]).all() and ((0 <= z[blanks]) & (z[blanks] <= 1)).all()
    assert int(step_metrics(at)[0].split(" / ")[1]) <= 10  # the default budget T = 10


def test_a_selector_that_does_not_fit_the_model_is_hidden_with_a_note(env):
    env.setenv("MI_LENS_SUDOKU_SELECTOR", SHIPPED["MI_LENS_SUDOKU_SELECTOR"])  # d = 128 beside the tiny d = 32 MDM
    at = run_page(a="learned", b="mi")
    assert_clean(at)
    assert "learned" not in at.selectbox(key="a").options and at.selectbox(key="a").value == "mi"
    assert any("`learned` is not offered: the order selector cannot be used (sudoku_order_selector.safetensors "
               "does not fit the model: it reads hidden states of size 128" in c.value and "model's are 32" in c.value
               for c in at.caption)
    assert not at.error and len(step_metrics(at)) == 2


def test_a_missing_selector_hides_learned(env):
    env.setenv("MI_LENS_SUDOKU_SELECTOR", "/nonexistent/sel.safetensors")
    at = run_page(a="learned")
    assert_clean(at)
    assert "learned" not in at.selectbox(key="a").options
    assert any("/nonexistent/sel.safetensors is missing" in c.value for c in at.caption)


def test_a_selector_trained_against_another_file_is_cautioned(env, tmp_path):
    save_order_net(tiny_selector(32), tmp_path / "sel.safetensors", {"denoiser": "assets/other_mdm.safetensors"})
    env.setenv("MI_LENS_SUDOKU_SELECTOR", str(tmp_path / "sel.safetensors"))
    at = run_page(a="learned", b="mi")
    assert_clean(at)
    assert any("was trained against `other_mdm.safetensors`" in c.value for c in at.caption)
    assert len(step_metrics(at)) == 2  # same hidden size: it still runs


@pytest.fixture
def tiny_protein(env, tmp_path):
    """A tiny protein MDM, independent of the shipped one a training job may be rewriting."""
    from mi_core.models.protein_mdm import ProteinMDM, ProteinMDMConfig, save_protein_mdm

    torch.manual_seed(0)
    save_protein_mdm(ProteinMDM(ProteinMDMConfig(max_len=256, d_model=32, n_layers=1, n_heads=2, d_ff=64)),
                     tmp_path / "protein.safetensors")
    env.setenv("MI_LENS_PROTEIN_MODEL", str(tmp_path / "protein.safetensors"))
    env.setenv("MI_LENS_PROTEIN_ESTIMATOR", "/nonexistent/protein_est.safetensors")
    return env


@pytest.mark.parametrize("domain", ["4x4", "protein"])
def test_domains_without_a_selector_do_not_offer_learned(tiny_protein, domain):
    at = run_page(domain=domain, a="learned", b="topk")
    assert_clean(at)
    options = at.selectbox(key="a").options
    assert "learned" not in options and "mi" in options and at.selectbox(key="a").value == "mi"
    assert any("`learned` is not offered for" in c.value and "no order selector is trained for it" in c.value
               for c in at.caption)
    assert len(step_metrics(at)) == 2


# ---- the pieces below the page ----


def test_select_prob_figure_blanks_filled_cells_and_outlines_the_chosen():
    before = np.array([1, 0, 0, 3, 0, 2, 0, 0, 4, 0, 0, 1, 0, 0, 0, 0])
    givens = np.zeros(16, bool)
    givens[[0, 3]] = True
    prob = np.linspace(0, 1.2, 16)  # beyond 1 at the end: clipped
    chosen = np.zeros(16, bool)
    chosen[[1, 15]] = True
    fig = figures.select_prob_figure(prob, before, givens, chosen, 2, [f"c{i}" for i in range(16)], title="t")
    z = np.asarray(fig.data[0].z, float).ravel()
    masked = before == 0
    assert np.isnan(z[~masked]).all()
    np.testing.assert_allclose(z[masked], np.clip(prob, 0, 1)[masked])
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0.0, 1.0)
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    assert sorted((r.x0 + 0.44, r.y0 + 0.44) for r in rects) == [(1.0, 0.0), (3.0, 3.0)]
    text = next(t for t in fig.data if t.name == "P(unmask)" and t.type == "scatter")
    assert list(text.text) == [f"{min(p, 1):.2f}" for p in prob[masked]]


def test_decode_trace_keeps_the_selectors_probabilities_per_step(tiny_mdm):
    net = tiny_selector(32)
    trace = core.decode_trace(tiny_mdm, None, S9, PRESET, None, "learned", {"steps": 4}, selector=net)
    assert 2 <= len(trace.steps) <= 5 and "select_prob" not in trace.steps[0].maps
    for before, s in zip(trace.steps, trace.steps[1:]):
        prob = s.maps["select_prob"]
        masked = before.tokens == 0
        assert prob.shape == (81,) and (prob[~masked] == 0).all() and ((prob >= 0) & (prob <= 1)).all()
        assert s.chosen[masked].any() and not s.chosen[~masked].any()
        assert s.info["count"] == s.chosen.sum()
    assert (trace.steps[-1].tokens != 0).all()
    exported = json.loads(exports.trace_json(trace, PRESET, "sudoku9", S9.labels(), 0.0, 0))["steps"]
    assert "per_position" not in exported[0]
    np.testing.assert_allclose(exported[1]["per_position"]["select_prob"], trace.steps[1].maps["select_prob"])
    runs = [core.decode_trace(tiny_mdm, None, S9, PRESET, None, "learned", {"steps": 4, "mode": "sample"}, seed=3,
                              selector=net) for _ in range(2)]
    assert [s.chosen.tolist() for s in runs[0].steps] == [s.chosen.tolist() for s in runs[1].steps]  # seeded
    with pytest.raises(ValueError, match="has no selector"):
        core.decode_trace(tiny_mdm, None, S9, PRESET, None, "learned", {})


def test_selector_helpers():
    assert order.uses_selector("learned") and not order.uses_selector("mi")
    fields = {f.name: f for f in core.strategy_fields("learned")}
    assert "selector" not in fields and fields["mode"].choices == ("threshold", "sample", "rank")
    assert fields["steps"].kind == "int" and fields["threshold"].kind == "float"
    small = SudokuMDM(SudokuMDMConfig(box=3, d_model=32, n_layers=1, n_heads=2, d_ff=64)).eval()
    assert order.selector_mismatch(small, tiny_selector(32), S9) is None
    assert order.selector_mismatch(small, tiny_selector(48), S9) == (
        "it reads hidden states of size 48 (those of the MDM it was trained against), but the model's are 32")
    strategy = core.make_strategy("learned", selector="given.safetensors")
    order.attach_selector(strategy, tiny_selector(32))
    assert strategy.net is None  # a selector the strategy names itself wins
