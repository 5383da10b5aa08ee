"""probe_many: every state's probe in one stream of batches, equal to the single-state probe to 1e-6."""

import json

import pytest
import torch

import mi_core.mi.probe as probe_mod
from mi_core.domains.oracle4 import Oracle4Model, exact_pair_mi
from mi_core.domains.sudoku.bench_probe import random_states
from mi_core.mi.probe import ProbeInputError, probe, probe_many
from tests.test_oracle4 import random_states as oracle_states
from tests.test_probe import SHIPPED, TableModel, naive_probe

FIELDS = ("marginals", "entropy", "mi_directional", "mi", "mi_paper", "error_bound")


def assert_matches_single(model, tokens, tol=1e-6, **kw):
    """Each state of ``probe_many`` equals ``probe`` of that state to ``tol``, passes and masks exactly."""
    many = probe_many(model, tokens, **kw)
    assert len(many) == tokens.shape[0]
    for s in range(tokens.shape[0]):
        one, got = probe(model, tokens[s], **kw), many.state(s)
        for name in FIELDS:
            diff = (getattr(one, name) - getattr(got, name)).abs().max().item()
            assert diff <= tol, (s, name, diff)
        assert got.passes == one.passes and int(many.passes[s]) == one.passes
        assert torch.equal(got.probed, one.probed) and torch.equal(got.masked, one.masked)
    return many


@pytest.mark.parametrize("eps", [0.0, 0.05])
def test_oracle4_matches_single_and_exact_mi(eps):
    model = Oracle4Model()
    tokens = torch.stack(oracle_states(12, seed=3))
    many = assert_matches_single(model, tokens, eps=eps, max_batch=37)
    if eps == 0:
        for s in range(len(tokens)):
            assert (many.mi[s] - exact_pair_mi(tokens[s])).abs().max() < 1e-14


@pytest.mark.parametrize("eps", [0.0, 1e-3, 0.1])
def test_inconsistent_model_with_pruning(eps):
    model = TableModel(6, 4, scale=3.0, seed=1)
    tokens = torch.tensor([[0, 0, 0, 0, 2, 0], [1, 0, 3, 0, 0, 0], [0, 0, 0, 0, 0, 0], [1, 2, 3, 4, 1, 2]])
    many = assert_matches_single(model, tokens, tol=1e-10, eps=eps, max_batch=5)
    assert int(many.passes[3]) == 1 and (many.mi[3] == 0).all()  # nothing masked: only the base pass
    if eps == 0:  # and each state equals the formulas written out one sequence a pass (probe wraps probe_many)
        for s in range(len(tokens)):
            directional, paper = naive_probe(model, tokens[s])
            assert torch.allclose(many.mi_directional[s], directional, atol=1e-10, rtol=0)
            assert torch.allclose(many.mi_paper[s], paper, atol=1e-10, rtol=0)
    for s in range(len(many)):  # the derived views of the batch are those of each state
        one = many.state(s)
        for view in ("asymmetry", "form_gap", "mi_error_bound"):
            assert torch.allclose(getattr(many, view)[s], getattr(one, view)), view
    assert many.to_json_dict()["states"][1] == many.state(1).to_json_dict()


def test_tiny_mdm_many_states_chunked(tiny_mdm, monkeypatch):
    tokens = torch.stack(random_states(81, 12, 5, 0, "cpu") + random_states(81, 30, 2, 1, "cpu"))
    monkeypatch.setattr(probe_mod, "ACC_BYTES", 3 * 8 * 81 * 81 * 10)  # chunks of 3 states
    assert len(probe_mod._state_chunks(7, 81, 9)) == 3
    many = assert_matches_single(tiny_mdm, tokens, max_batch=100)
    assert many.mi.device == tokens.device and many.mi.shape == (7, 81, 81)
    assert torch.equal(many.mi, many.mi.transpose(1, 2))


def test_positions_and_progress(tiny_mdm):
    tokens = torch.stack(random_states(81, 10, 3, 2, "cpu"))
    positions = torch.zeros_like(tokens, dtype=torch.bool)
    for s in range(3):
        positions[s, (tokens[s] == 0).nonzero().flatten()[: s + 1]] = True
    seen = []
    many = probe_many(tiny_mdm, tokens, positions=positions, progress=lambda d, t: seen.append((d, t)), max_batch=8)
    for s in range(3):
        one = probe(tiny_mdm, tokens[s], positions=positions[s])
        assert (one.mi - many.state(s).mi).abs().max() < 1e-6
    assert seen[-1][0] == seen[-1][1] == int(many.passes.sum()) == 3 + 9 * (1 + 2 + 3)


@pytest.mark.skipif(not SHIPPED.is_file(), reason="shipped Sudoku MDM not present")
@pytest.mark.parametrize("eps", [0.0, 1e-3])
def test_shipped_mdm_matches_single(eps):
    from mi_core.domains.sudoku.mdm import load_sudoku_mdm

    model = load_sudoku_mdm(SHIPPED)
    tokens = torch.stack(random_states(81, 8, 2, 5, "cpu") + random_states(81, 15, 1, 6, "cpu"))
    many = assert_matches_single(model, tokens, eps=eps)
    assert many.mi_directional.min() >= -1e-6


@pytest.mark.parametrize("kwargs,tokens,match", [
    ({}, torch.zeros(81, dtype=torch.long), "shape"),
    ({}, torch.zeros(2, 81), "int64"),
    ({"eps": 1.0}, torch.zeros(2, 81, dtype=torch.long), "eps"),
    ({"max_batch": 0}, torch.zeros(2, 81, dtype=torch.long), "max_batch"),
    ({"positions": torch.zeros(81, dtype=torch.bool)}, torch.zeros(2, 81, dtype=torch.long), "positions"),
])
def test_bad_input(tiny_mdm, kwargs, tokens, match):
    with pytest.raises(ProbeInputError, match=match):
        probe_many(tiny_mdm, tokens, **kwargs)


def test_unknown_token_and_unmasked_position(tiny_mdm):
    tokens = torch.zeros(2, 81, dtype=torch.long)
    tokens[1, 5] = 42
    with pytest.raises(ProbeInputError, match="state 1: the token at position 5"):
        probe_many(tiny_mdm, tokens)
    tokens[1, 5] = 3
    positions = torch.zeros(2, 81, dtype=torch.bool)
    positions[1, 5] = True
    with pytest.raises(ProbeInputError, match="state 1: position 5 is not masked"):
        probe_many(tiny_mdm, tokens, positions=positions)


def test_scaling_bench_writes_json_and_section(tmp_path, model_path):
    from mi_core.mi.estimator import EstimatorConfig, MIEstimator, save_estimator
    from scripts.probe_scaling import main

    est = tmp_path / "est.safetensors"
    save_estimator(MIEstimator(EstimatorConfig(d_in=32, n_values=9, n_positions=81)), est)
    out, md = tmp_path / "s.json", tmp_path / "B.md"
    assert main(["--device", "cpu", "--sudoku-model", str(model_path), "--sudoku-estimator", str(est),
                 "--no-protein", "--masked", "2", "--batch-sizes", "1,2,64", "--peak-batches", "4",
                 "--min-seconds", "0.01", "--time-cap", "0.5", "--json", str(out), "--markdown", str(md)]) == 0
    res = json.loads(out.read_text())
    points = res["sudoku"]["points"]
    assert [p["states"] for p in points] == [1, 2, 64]
    assert points[0]["passes_per_state"] == 1 + 2 * 9 and points[1]["estimator_states_per_s"] > 0
    assert points[2].get("skipped") in ("time cap", None)
    text = md.read_text()
    assert "probe-scaling-cpu:start" in text and "% of peak" in text and "warm-up" in text


def test_scaling_bench_refuses_bad_input_in_one_line(tmp_path, capsys):
    """A missing model file or an out-of-range value was a traceback (docs/gpu.md runs this by hand)."""
    from scripts.probe_scaling import main

    missing = tmp_path / "missing.safetensors"
    assert main(["--device", "cpu", "--sudoku-model", str(missing), "--no-protein"]) == 2
    assert capsys.readouterr().err == f"error: weights file not found: {missing}\n"
    assert main(["--device", "cpu", "--masked", "100"]) == 2
    assert capsys.readouterr().err.startswith("error: batch sizes and lengths must be >= 1, --masked in 0..81")
