"""``scripts/antibody_estimator_eval.py``: the bootstrap over states and the per-state cache key (numpy only)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "antibody_estimator_eval.py"
spec = importlib.util.spec_from_file_location("antibody_estimator_eval", SCRIPT)
ev = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ev)


def test_bootstrap_of_a_perfect_ranking_is_one_and_intervals_contain_the_estimate():
    rng = np.random.default_rng(0)
    exact = [rng.random(10) for _ in range(6)]
    perfect = ev.bootstrap([(2 * e, e) for e in exact], resamples=50)
    assert perfect["spearman"] == pytest.approx(1.0) and perfect["spearman_ci95"] == pytest.approx([1.0, 1.0])
    noisy = ev.bootstrap([(e + rng.normal(0, 0.3, 10), e) for e in exact], resamples=200)
    lo, hi = noisy["spearman_ci95"]
    assert lo <= noisy["spearman"] <= hi < 1 and noisy["states"] == 6 and noisy["pairs"] == 60
    assert len(noisy["per_state_spearman"]) == 6


def test_state_pairs_read_masked_pairs_and_the_key_tells_states_apart():
    mi = np.arange(16, dtype=float).reshape(4, 4)
    masked = np.array([[True, False, True, True]])
    (pred, exact), = ev.state_pairs(mi[None], mi[None], masked)
    assert pred.tolist() == [2.0, 3.0, 11.0] == exact.tolist()
    a, b = np.array([1, 0, 2]), np.array([1, 2, 0])
    assert ev.states_key([a]) != ev.states_key([b]) and ev.states_key([a]) == ev.states_key([a.copy()])


def test_take_removes_a_flag_and_its_value():
    argv = ["--states", "3", "--boot", "50"]
    assert ev.take(argv, "--boot", 2000) == "50" and argv == ["--states", "3"]
    assert ev.take(argv, "--exact-cache") is None
