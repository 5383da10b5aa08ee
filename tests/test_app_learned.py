"""The ``learned`` sampler in the app: the decoding page beside ``mi``, the selector's P(unmask) per step
(a board on Sudoku, bars along a protein), the domains and models it is hidden on, the figure builders and
the mode captions. Pages run on tiny random MDMs with tiny selectors that fit them (tmp dir), and once each
on the shipped Sudoku and protein MDMs with their shipped selectors."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from mi_core.decoding import make_strategy
from mi_core.decoding.selector import make_order_nets, save_order_net
from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig, save_sudoku_mdm
from mi_core.mi.estimator import EstimatorConfig, MIEstimator, save_estimator
from mi_lens_app import core, exports, figures, grid_svg, strips, texts, traces
from mi_lens_app import selector as order
from mi_lens_app.domains import DOMAINS, load_presets
from mi_lens_app.sequences import load_protein_presets
from mi_lens_app.texts import read_frame_line

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
S9 = DOMAINS["sudoku9"]
PRESET = load_presets()["sudoku9"][0].puzzle  # the showcase the app opens on: 58 blanks
EASY = load_presets()["sudoku9"][1]  # 45 blanks
SHIPPED = {"MI_LENS_SUDOKU_MODEL": "assets/sudoku_mdm.safetensors",
           "MI_LENS_SUDOKU_SELECTOR": "assets/sudoku_order_selector.safetensors"}
PROTEIN = load_protein_presets()[0]  # 58 residues, 20-31 masked
PROTEIN_MASKED = np.arange(58) >= 19
PROTEIN_MASKED[31:] = False


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
    monkeypatch.setenv("MI_LENS_WARM", "0")  # no background loads while tests swap models
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


def boards(at: AppTest) -> dict[str, str]:
    """The SVG grids of the selector's P(unmask) (``grid_svg.select_prob_svg``), by their title."""
    found = (re.search(r'aria-label="([^"]*P\(unmask\)[^"]*)"', m.value) for m in at.markdown)
    return {f.group(1): f.string for f in found if f}


def probs(svg: str) -> np.ndarray:
    """A P(unmask) grid's probability per cell, from the cells' tooltips (NaN: filled before the step)."""
    tips = re.findall(r"<title>[^<]*?(?:P\(unmask\) = ([0-9.]+)|filled before this step)[^<]*</title>", svg)
    return np.array([float(t) if t else np.nan for t in tips])


def values(data) -> np.ndarray:
    """A plotly data array as floats, from a plain list or plotly's base64 form."""
    if isinstance(data, dict):
        import base64
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"])).astype(float)
    return np.array([np.nan if v is None else v for v in data], float)


def step_metrics(at: AppTest) -> list[str]:
    return [read_frame_line(m.value)["step"] for m in at.markdown if m.value.startswith("step\u00a0**")]


def test_learned_beside_mi_shows_the_selectors_probabilities(env):
    at = run_page(a="learned", a_learned_steps="6", b="mi")
    assert_clean(at)
    assert not at.error and "learned" in at.selectbox(key="a").options
    assert {"steps", "threshold"} <= {n.label for n in at.number_input} and at.selectbox(key="a_learned_mode")
    assert len(step_metrics(at)) == 2 and not boards(at)
    assert any("shows from step 1 on" in c.value for c in at.caption)
    givens = np.array([c != "." for c in PRESET])
    at.button(key="step_next").click().run()
    assert_clean(at)
    first = probs(boards(at)["learned: P(unmask) at step 1"])
    assert first.shape == (81,) and np.isnan(first[givens]).all()  # blank on filled cells
    masked = first[~givens]
    assert np.isfinite(masked).all() and (masked >= 0).all() and (masked <= 1).all() and masked.std() > 0.01
    caption = next(c.value for c in at.caption if c.value.startswith("Step budget"))
    assert "T = 6" in caption and "step 1 of 6, T left: 5" in caption
    outlined = re.findall('class="chosen"', boards(at)["learned: P(unmask) at step 1"])
    assert len(outlined) >= 1
    assert caption == texts.learned_caption("threshold", 0.5, 6, 1, int((~givens).sum()), len(outlined))
    at.button(key="step_next").click().run()
    assert_clean(at)
    second = probs(boards(at)["learned: P(unmask) at step 2"])
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
    monkeypatch.setenv("MI_LENS_WARM", "0")  # no background loads while tests swap models
    at = run_page(preset=EASY.name, a="learned", b="mi", step="1")
    assert_clean(at)
    assert not at.error and not any("trained against" in c.value for c in at.caption)
    z = probs(boards(at)["learned: P(unmask) at step 1"])
    blanks = np.array([c == "." for c in EASY.puzzle])
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


def test_the_shipped_selector_is_hidden_on_another_model_of_its_size(env):
    env.setenv("MI_LENS_SUDOKU_MODEL", SHIPPED["MI_LENS_SUDOKU_MODEL"])  # d = 128, 6 layers: not its model
    env.delenv("MI_LENS_SUDOKU_ESTIMATOR")  # the default model's estimator and selector
    env.delenv("MI_LENS_SUDOKU_SELECTOR")  # the default model's selector, trained on the recurrent weights
    at = run_page(a="learned", b="topk")
    assert_clean(at)
    assert "learned" not in at.selectbox(key="a").options
    note = next(c.value for c in at.caption if "`learned` is not offered" in c.value)
    assert "it was trained on assets/sudoku_peer_recurrent.safetensors" in note
    assert "not on assets/sudoku_mdm.safetensors" in note
    assert "set MI_LENS_SUDOKU_MODEL to `assets/sudoku_peer_recurrent.safetensors` to run `learned`" in note
    assert "sha256" not in note  # the names differ: no checksum needed to tell them apart
    assert any("MI estimator: not usable" in c.value for c in at.sidebar.caption)  # not run on the wrong model


@pytest.fixture
def tiny_protein(env, tmp_path):
    """A tiny protein MDM, independent of the shipped one a training job may be rewriting."""
    from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig, save_protein_mdm

    torch.manual_seed(0)
    save_protein_mdm(ProteinMDM(ProteinMDMConfig(max_len=256, d_model=32, n_layers=1, n_heads=2, d_ff=64)),
                     tmp_path / "protein.safetensors")
    env.setenv("MI_LENS_PROTEIN_MODEL", str(tmp_path / "protein.safetensors"))
    env.setenv("MI_LENS_PROTEIN_ESTIMATOR", "/nonexistent/protein_est.safetensors")
    env.delenv("MI_LENS_PROTEIN_SELECTOR", raising=False)  # the shipped one, d = 128
    return env


@pytest.mark.parametrize("domain", ["4x4", "protein"])
def test_learned_is_hidden_without_a_selector_that_fits(tiny_protein, domain):
    at = run_page(domain=domain, a="learned", b="topk")
    assert_clean(at)
    options = at.selectbox(key="a").options
    assert "learned" not in options and "mi" in options and at.selectbox(key="a").value == "mi"
    notes = [c.value for c in at.caption if "`learned` is not offered" in c.value]
    assert len(notes) == 1
    if domain == "4x4":  # no selector is trained for the exact oracle
        assert "not offered for Sudoku 4x4 (exact oracle): no order selector is trained for it" in notes[0]
        assert "the shipped ones serve Sudoku 9x9 and Protein" in notes[0]
    else:  # the shipped protein selector reads the shipped MDM's 128-dim hidden states, not the tiny one's 32
        assert notes[0] == ("`learned` is not offered: the order selector cannot be used (protein_order_selector"
                            ".safetensors does not fit the model: it reads hidden states of size 128 (those of the "
                            "MDM it was trained against), but the model's are 32; set MI_LENS_PROTEIN_MODEL to "
                            "`assets/protein_mdm.safetensors` to run `learned`).")
    assert len(step_metrics(at)) == 2


def profile_of(at: AppTest, step: int) -> dict:
    return specs(at)[f"learned: P(unmask) at step {step}"]["data"][0]


def test_learned_on_a_protein_shows_the_selectors_probabilities(tiny_protein, tmp_path):
    save_order_net(tiny_selector(32), tmp_path / "psel.safetensors", {"denoiser": "protein.safetensors"})
    tiny_protein.setenv("MI_LENS_PROTEIN_SELECTOR", str(tmp_path / "psel.safetensors"))
    at = run_page(domain="protein", ppreset=PROTEIN.name, a="learned", a_learned_mode="rank", a_learned_steps="4",
                  b="topk")
    assert_clean(at)
    assert not at.error and "learned" in at.selectbox(key="a").options and len(step_metrics(at)) == 2
    assert step_metrics(at)[0] == "0 / 4"  # rank: exactly T steps for 12 masked residues
    assert any(c.value == "The order selector's P(unmask) of each masked residue shows from step 1 on."
               for c in at.caption)
    assert not any("P(unmask)" in t for t in specs(at))
    masked, filled_before, shown = PROTEIN_MASKED.copy(), None, []
    for step in (1, 2):
        at.button(key="step_next").click().run()
        assert_clean(at)
        bars = profile_of(at, step)
        x, y = values(bars["x"]), values(bars["y"])
        np.testing.assert_array_equal(x, np.arange(1, 59))  # one bar per residue, 1-based as in the strip
        assert ((y >= 0) & (y <= 1)).all() and (y[~masked] == 0).all() and (y[masked] > 0).all()
        chosen = np.array(bars["marker"]["color"]) == figures.CHOSEN_COLOR
        assert chosen.sum() == 3 and not chosen[~masked].any()  # ceil(12 / 4), then ceil(9 / 3)
        assert y[chosen].min() >= y[masked & ~chosen].max()  # the most probable ones
        caption = next(c.value for c in at.caption if c.value.startswith("Step budget"))
        assert caption == texts.learned_caption("rank", 0.5, 4, step, int(masked.sum()), 3, "residue", "Orange bars")
        table = at.dataframe[0].value
        # the native residue and whether it was written: a tick box headed "native" named neither
        assert list(table.columns) == ["residue", "entropy (nats)", "p(amino acid)", "P(unmask)", "native",
                                       "matches native"]
        assert all(len(a) == 1 and a.isalpha() for a in table["native"])
        assert list(table["matches native"]) == [r[0] == a for r, a in zip(table["residue"], table["native"])]
        np.testing.assert_allclose(sorted(table["P(unmask)"]), sorted(np.round(y[chosen], 3)), atol=1e-3)
        if filled_before is not None:
            assert (y[filled_before] == 0).all()  # residues step 1 filled carry no bar at step 2
        filled_before, masked = chosen, masked & ~chosen
        shown.append(y)
    assert not np.allclose(shown[0][masked], shown[1][masked])  # the selector reads the new state


def test_shipped_protein_selector_runs_on_the_shipped_protein_model(monkeypatch):
    monkeypatch.setenv("MI_LENS_PROTEIN_MODEL", "assets/protein_mdm.safetensors")
    for key in ("MI_LENS_PROTEIN_SELECTOR", "MI_LENS_PROTEIN_ESTIMATOR", "MI_LENS_ESMC_WEIGHTS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("MI_LENS_DEVICE", "cpu")
    monkeypatch.setenv("MI_LENS_WARM", "0")  # no background loads while tests swap models
    at = run_page(domain="protein", ppreset=PROTEIN.name, a="learned", b="topk", step="1")
    assert_clean(at)
    assert not at.error and "learned" in at.selectbox(key="a").options
    assert not any("trained against" in c.value or "not offered" in c.value for c in at.caption)
    bars = profile_of(at, 1)
    y = values(bars["y"])
    assert y.shape == (58,) and (y[~PROTEIN_MASKED] == 0).all() and ((0 <= y) & (y <= 1)).all()
    chosen = np.array(bars["marker"]["color"]) == figures.CHOSEN_COLOR
    # threshold mode at 0.5: what the bars show is what was taken (and always the most probable one)
    taken = PROTEIN_MASKED & (y >= 0.5)
    taken[np.argmax(np.where(PROTEIN_MASKED, y, -1))] = True
    np.testing.assert_array_equal(chosen, taken)
    assert specs(at)["learned: P(unmask) at step 1"]["layout"]["shapes"][0]["y0"] == 0.5  # the threshold line
    caption = next(c.value for c in at.caption if c.value.startswith("Step budget"))
    assert caption == texts.learned_caption("threshold", 0.5, 10, 1, 12, int(chosen.sum()), "residue",
                                            "Dashed line: the threshold; orange bars")
    assert int(step_metrics(at)[0].split(" / ")[1]) <= 10  # the default budget T = 10


# ---- the pieces below the page ----


def test_select_prob_board_blanks_filled_cells_and_outlines_the_chosen():
    before = np.array([1, 0, 0, 3, 0, 2, 0, 0, 4, 0, 0, 1, 0, 0, 0, 0])
    givens = np.zeros(16, bool)
    givens[[0, 3]] = True
    prob = np.linspace(0, 1.2, 16)  # beyond 1 at the end: clipped
    chosen = np.zeros(16, bool)
    chosen[[1, 15]] = True
    svg = grid_svg.select_prob_svg(prob, before, givens, chosen, 2, [f"c{i}" for i in range(16)], title="t")
    z = probs(svg)
    masked = before == 0
    assert np.isnan(z[~masked]).all()
    np.testing.assert_allclose(z[masked], np.round(np.clip(prob, 0, 1)[masked], 3))
    boxes = re.findall(r'<rect class="chosen" x="([0-9.]+)" y="([0-9.]+)"', svg)
    assert len(boxes) == 2 and float(boxes[0][0]) < float(boxes[1][0])  # cells 1 (row 1) and 15 (row 4)
    notes = re.findall(r'<text class="note" data-cell="(\d+)"[^>]*>([^<]*)</text>', svg)
    assert [int(c) for c, _ in notes] == list(np.flatnonzero(masked))
    assert [t for _, t in notes] == [grid_svg.prob_text(min(p, 1)) for p in prob[masked]]
    assert [grid_svg.prob_text(p) for p in (0.953, 0.05, 0.996, 0.004, 0.5)] == [".95", ".05", "1", "0", ".50"]
    assert "mi-bar" not in svg  # the numbers are the scale: no colour bar narrows the grid
    assert "P(unmask): r1c2 .08," in svg  # a screen reader hears them too


@pytest.mark.parametrize("cells, side", [(81, 400), (81, 500), (16, 400)])  # the decoding page's GRID_SIDE
def test_select_prob_numbers_are_as_large_as_the_digits_and_fit_their_cells(cells, side):
    """As a plotly chart beside a colour bar, the numbers were 11 px, 7 px tall on a 1024-px screen: in the SVG, which
    shrinks with its column, they are the size of the grid's digits, and three characters fit a cell."""
    before = np.zeros(cells, int)
    svg = grid_svg.select_prob_svg(np.full(cells, 0.5), before, np.zeros(cells, bool), np.zeros(cells, bool),
                                   int(np.sqrt(np.sqrt(cells))), [str(c) for c in range(cells)], title="t", side=side)
    width = float(re.search(r'viewBox="0 0 ([0-9.]+)', svg).group(1))
    size = float(re.search(r'class="note"[^>]*font-size="([0-9.]+)"', svg).group(1))
    cell = side / np.sqrt(cells)
    assert width <= side + 2 * grid_svg.PAD  # the grid's own width: no colour bar
    assert 3 * 0.6 * size <= cell  # ".95" fits its cell
    assert size * 330 / width >= 14  # in a 330-px column (1024 px, sidebar open)


def test_decode_trace_keeps_the_selectors_probabilities_per_step(tiny_mdm):
    net = tiny_selector(32)
    trace = traces.decode_trace(tiny_mdm, None, S9, PRESET, None, "learned", {"steps": 4}, selector=net)
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
    runs = [traces.decode_trace(tiny_mdm, None, S9, PRESET, None, "learned", {"steps": 4, "mode": "sample"}, seed=3,
                              selector=net) for _ in range(2)]
    assert [s.chosen.tolist() for s in runs[0].steps] == [s.chosen.tolist() for s in runs[1].steps]  # seeded
    with pytest.raises(ValueError, match="has no selector"):
        traces.decode_trace(tiny_mdm, None, S9, PRESET, None, "learned", {})


def test_selector_helpers():
    assert order.uses_selector("learned") and not order.uses_selector("mi")
    fields = {f.name: f for f in core.strategy_fields("learned")}
    assert "selector" not in fields and set(fields["mode"].choices) == {"threshold", "paced", "sample", "rank"}
    assert fields["steps"].kind == "int" and fields["threshold"].kind == "float"
    small = SudokuMDM(SudokuMDMConfig(box=3, d_model=32, n_layers=1, n_heads=2, d_ff=64)).eval()
    assert order.selector_mismatch(small, tiny_selector(32), S9) is None
    assert order.selector_mismatch(small, tiny_selector(48), S9) == (
        "it reads hidden states of size 48 (those of the MDM it was trained against), but the model's are 32")
    strategy = make_strategy("learned", selector="given.safetensors")
    order.attach_selector(strategy, tiny_selector(32))
    assert strategy.net is None  # a selector the strategy names itself wins


def test_the_app_refuses_the_shipped_selector_on_another_model_of_its_size():
    from mi_core.decoding.selector import load_order_net
    from mi_core.models.loading import load_model

    net = load_order_net(S9.selector_path())
    assert order.selector_mismatch(load_model(str(S9.model_path()), domain="sudoku"), net, S9) is None
    other = load_model("assets/sudoku_mdm.safetensors", domain="sudoku")  # hidden size 128 as well
    assert order.selector_mismatch(other, net, S9).startswith("it was trained on assets/sudoku_peer_recurrent")


def test_select_prob_profile_zeroes_filled_residues_and_colours_the_chosen():
    before = np.array([3, 0, 0, 5, 0, 0, 0, 1])
    prob = np.array([0.9, 0.2, 1.3, 0.7, 0.6, -0.1, 0.4, 0.8])  # out of [0, 1] at 2 and 5: clipped
    chosen = np.zeros(8, bool)
    chosen[[2, 4]] = True
    labels = [f"r{i + 1}" for i in range(8)]
    fig = strips.select_prob_profile(prob, before, chosen, labels, threshold=0.5, title="t")
    bar = fig.data[0]
    np.testing.assert_array_equal(bar.x, np.arange(1, 9))
    np.testing.assert_allclose(bar.y, [0, 0.2, 1.0, 0, 0.6, 0.0, 0.4, 0])
    assert [c == figures.CHOSEN_COLOR for c in bar.marker.color] == chosen.tolist()
    assert bar.hovertext[0] == "r1: filled before this step" and bar.hovertext[2].endswith("unmasked at this step")
    assert fig.layout.shapes[0].y0 == 0.5 and fig.layout.title.text == "t"
    window = strips.select_prob_profile(prob, before, chosen, labels, start=2, size=4, title="t")
    np.testing.assert_array_equal(window.data[0].x, [3, 4, 5, 6])
    np.testing.assert_allclose(window.data[0].y, [1.0, 0, 0.6, 0.0])
    assert window.layout.title.text == "t (residues 3-6 of 8)" and not window.layout.shapes


@pytest.mark.parametrize("mode, expected", [
    ("threshold", ("Mode threshold: at each step the masked cells with P ≥ 0.7 are unmasked, always with the most "
                   "probable one, and at step T every masked cell is (so a decode can end before T).")),
    ("paced", ("Mode paced: at each step the masked cells with P ≥ 0.7 are unmasked, but never fewer than "
               "⌈masked left / steps left, this one included⌉ (here ⌈30 / 8⌉ = 4), the most probable first.")),
    ("sample", ("Mode sample: at each step each masked cell is unmasked with probability P (a seeded draw), always "
                "with the most probable one, and at step T every masked cell is.")),
    ("rank", ("Mode rank: at each step exactly ⌈masked left / steps left, this one included⌉ (here ⌈30 / 8⌉ = 4) "
              "of the masked cells are unmasked, the most probable first.")),
])
def test_learned_caption_states_each_modes_rule(mode, expected):
    caption = texts.learned_caption(mode, 0.7, 10, 3, 30, 4)
    assert caption == f"Step budget T = 10: step 3 of 10, T left: 7. {expected} Outlined: the 4 cells unmasked at this step."


def test_learned_mi_caption_states_the_risk_budget():
    caption = texts.learned_caption("mi", 0.0, 20, 2, 40, 3, budget=(1.0, 0.5, True))
    assert ("at each step the masked cells are visited from the most probable, and one is unmasked while its risk "
            "−log P plus 0.5 × the MI / min(H_i, H_j) with those already taken fits what is left of the budget γ = 1") \
        in caption
    assert "× the MI with" in texts.learned_caption("mi", 0.0, 20, 2, 40, 3, budget=(2.0, 1.0, False))
    with pytest.raises(ValueError, match="unknown learned mode 'mi'"):
        texts.learned_caption("mi", 0.5, 4, 1, 5, 1)  # mode mi needs its budget


def test_learned_mi_runs_on_the_page_with_the_selector_view(env):
    at = run_page(a="learned_mi", a_learned_mi_steps="8", b="mi")
    assert_clean(at)
    assert "learned_mi" in at.selectbox(key="a").options
    at.button(key="step_next").click().run()
    assert_clean(at)
    first = probs(boards(at)["learned_mi: P(unmask) at step 1"])
    givens = np.array([c != "." for c in PRESET])
    assert np.isnan(first[givens]).all() and np.isfinite(first[~givens]).all()
    caption = next(c.value for c in at.caption if c.value.startswith("Step budget"))
    assert "T = 8" in caption and "risk −log P" in caption
    at.button(key="step_last").click().run()
    assert_clean(at)
    assert int(step_metrics(at)[0].split(" / ")[1]) <= 8


def test_learned_caption_counts_and_nouns():
    last = texts.learned_caption("rank", 0.5, 4, 4, 5, 5, "residue", "Orange bars")
    assert "step 4 of 4, T left: 0" in last and "(here ⌈5 / 1⌉ = 5)" in last  # the last step takes every one
    assert last.endswith("Orange bars: the 5 residues unmasked at this step.")
    assert texts.learned_caption("paced", 0.5, 4, 9, 2, 1).endswith("the 1 cell unmasked at this step.")  # past T
    with pytest.raises(ValueError, match="unknown learned mode 'greedy'; choose one of threshold, paced"):
        texts.learned_caption("greedy", 0.5, 4, 1, 5, 1)


def test_presenting_the_selectors_board_can_take_the_grids_place(env):
    """Presenting on a 1024 x 768 projector, learned's P(unmask) board below its grid started at y = 737, off the
    screen: a switch in the settings' pop-up shows it in the grid's place (from step 1 on), on the screen."""
    at = run_page(a="learned", b="mi", present="true", step="1")
    assert_clean(at)
    grids = lambda: [m.value for m in at.markdown if 'class="mi-grid"' in m.value]  # noqa: E731
    assert len(grids()) == 3 and "learned: P(unmask) at step 1" in boards(at)  # learned's grid, its board, mi's grid
    at.toggle(key="present_select").set_value(True).run()
    assert_clean(at)
    assert len(grids()) == 2 and "learned: P(unmask) at step 1" in boards(at)  # the board in the grid's place
    assert "P(unmask)" in grids()[0] and "P(unmask)" not in grids()[1]  # mi keeps its grid
    at.button(key="step_first").click().run()  # step 0: no board yet, the grid stays
    assert_clean(at)
    assert len(grids()) == 2 and not boards(at)


@pytest.mark.parametrize("query, said", [
    ({"a": "learned", "b": "mi"}, "present_select (add present=true: it needs presentation mode on)"),
    ({"a": "learned", "b": "mi", "present": "false"}, "present_select (use present=true: it needs presentation mode on)"),
    ({"a": "mi", "b": "topk", "present": "true"},
     "present_select (it needs a strategy that runs the order selector: learned or learned_mi)"),
    ({"a": "learned", "b": "mi", "present": "true"}, None),
])
def test_a_links_present_select_says_what_it_needs_where_it_cannot_apply(env, query, said):
    """A link's ``present_select=true`` without presentation mode was noted as "not used on this page" and no more:
    the note names what the switch needs, presentation mode on (or, presenting, a strategy that runs the selector)."""
    at = run_page(**query, present_select="true")
    assert_clean(at)
    notes = [w.value for w in at.warning if "link" in w.value]
    assert notes == ([f"Part of this link is not used on this page: {said}."] if said else []), notes
