"""Standard errors on the unit their point estimate is taken over (the statistics audit of 2026-12)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mi_core.domains.antibody.evaluate import summarise


def _rows(groups):
    return [{"chain": i, "ce": v} for i, g in enumerate(groups) for v in g]


def test_perplexity_se_is_that_of_the_pooled_mean_when_chains_score_unequal_counts():
    # a region scored on 1 residue of one chain and 6 of another: the pooled mean weights them 1:6
    groups = [[2.0], [0.5, 0.6, 0.4, 0.5, 0.7, 0.3], [1.0, 1.2], [0.9, 1.1, 1.0]]
    out = summarise(_rows(groups))
    values = np.concatenate(groups)
    mean = values.mean()
    sums = np.array([sum(g) for g in groups])
    counts = np.array([len(g) for g in groups], float)
    m = len(groups)
    se = math.sqrt(((sums - mean * counts) ** 2).sum() / (m * (m - 1))) / counts.mean()
    assert out["cross_entropy"] == pytest.approx(mean)
    assert out["cross_entropy_se"] == pytest.approx(se)
    assert out["perplexity_se"] == pytest.approx(math.exp(mean) * se)
    # not the SE of the unweighted mean of chain means, a different estimator than the one reported
    chain_means = np.array([np.mean(g) for g in groups])
    assert out["cross_entropy_se"] != pytest.approx(chain_means.std(ddof=1) / math.sqrt(m))


def test_with_equal_counts_it_is_the_se_of_the_chain_means():
    rng = np.random.default_rng(0)
    groups = [list(rng.random(4)) for _ in range(9)]
    out = summarise(_rows(groups))
    chain_means = np.array([np.mean(g) for g in groups])
    assert out["cross_entropy_se"] == pytest.approx(chain_means.std(ddof=1) / 3)
    assert summarise(_rows(groups[:1]))["cross_entropy_se"] == 0.0


def test_the_one_state_speedup_compares_the_same_states():
    from mi_core.bench.estimator import one_state_timing

    # the exact probe timed on the first 2 states alone; the estimator on all 5, slower on the last 3
    timing = one_state_timing([10.0, 12.0], [1.0, 1.0, 50.0, 50.0, 50.0])
    assert timing["speedup_median"] == pytest.approx(11.0)
    # the medians recorded beside it are those it divides (the estimator's was over all 5 states: 50 s, "11x")
    assert timing["estimator_median_seconds"] == 1.0 and timing["exact_median_seconds"] == 11.0
    assert one_state_timing([8.0, 8.0, 8.0], [2.0, 2.0, 2.0])["speedup_median"] == pytest.approx(4.0)


def test_benchmark_accuracies_carry_a_binomial_se_and_jsd_rows_none():
    from mi_lens_app import benchmarks

    acc, jsd, rec = benchmarks.METRICS
    assert benchmarks.binomial_se({"n": 200, "accuracy": 0.775}, acc) == pytest.approx(100 * math.sqrt(.775 * .225 / 200))
    assert benchmarks.binomial_se({"n": 300, "jsd_dipeptide": 0.007}, jsd) is None
    assert benchmarks.binomial_se({"n": 200, "accuracy": 0.7, "seeds": 3}, acc) is None
    # recovery is a mean over n chains of each one's share of residues: sqrt(p (1 - p) / n) is no SE of it (9.1
    # points here, where the chains' own spread gives 2)
    assert benchmarks.binomial_se({"n": 30, "recovery": 0.5, "recovery_se": 0.02}, rec) is None


def test_the_benchmarks_page_shows_each_accuracy_with_its_se(monkeypatch):
    from tests.test_app_pages import ROOT, assert_clean, run_page

    monkeypatch.setenv("MI_LENS_BENCHMARKS", str(ROOT / "assets" / "benchmarks"))
    at = run_page("pages/5_Benchmarks.py", set="top1465")
    assert_clean(at)
    table = at.dataframe[0].value
    assert "± SE" in table.columns
    column = next(c for c in table.columns if c.startswith("puzzles solved") or c.startswith("Accuracy")
                  or "solved" in c)
    n = 200  # every row of the set: the chart's title says so, and the table has no n column
    assert "n" not in table.columns and "(n=200)" in at.get("plotly_chart")[0].proto.spec
    for _, row in table.iterrows():
        p = row[column] / 100
        assert row["± SE"] == pytest.approx(100 * math.sqrt(p * (1 - p) / n), abs=0.06)
