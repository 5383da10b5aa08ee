"""The exact 4x4 oracle, and the probe checked against it to 1e-6."""

import math
import random
from collections import Counter

import pytest
import torch

from mi_core.domains.oracle4 import (
    InconsistentStateError,
    Oracle4Model,
    all_solutions4,
    exact_marginals,
    exact_pair_mi,
)
from mi_core.domains.sudoku import SUDOKU4, to_tokens
from mi_core.domains.sudoku.generator import is_valid_solution
from mi_core.domains.sudoku.solver import count_solutions
from mi_core.mi.probe import probe
from mi_core.models.base import MaskedLM


def random_states(count: int, seed: int) -> list[torch.Tensor]:
    """Solution grids with a random number of random cells masked (always consistent, often ambiguous)."""
    rng = random.Random(seed)
    sols = all_solutions4()
    states = []
    for _ in range(count):
        tokens = sols[rng.randrange(len(sols))].clone()
        tokens[rng.sample(range(16), rng.randint(2, 16))] = 0
        states.append(tokens)
    return states


def counted_mi(tokens: torch.Tensor, i: int, j: int) -> float:
    """MI of cells i and j from plain counts over the consistent solutions (an independent reference)."""
    rows = [s for s in all_solutions4().tolist() if all(t == 0 or t == d for t, d in zip(tokens.tolist(), s))]
    n = len(rows)
    pair, left, right = Counter((s[i], s[j]) for s in rows), Counter(s[i] for s in rows), Counter(s[j] for s in rows)
    return sum(c / n * math.log(c * n / (left[a] * right[b])) for (a, b), c in pair.items())


def test_all_solutions():
    sols = all_solutions4()
    assert sols.shape == (288, 16) and sols.dtype == torch.long
    assert len({tuple(s) for s in sols.tolist()}) == 288
    assert all(is_valid_solution(s) for s in sols.tolist())
    assert count_solutions([0] * 16, limit=1000) == 288


def test_exact_marginals():
    empty = torch.zeros(1, 16, dtype=torch.long)
    assert torch.equal(exact_marginals(empty), torch.full((1, 16, 4), 0.25, dtype=torch.float64))
    tokens = to_tokens(["1..............."])
    marg = exact_marginals(tokens)[0]
    assert marg[0].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert marg[1].tolist() == [0.0, 1 / 3, 1 / 3, 1 / 3]  # a row peer of a 1 is never 1
    assert torch.allclose(marg.sum(-1), torch.ones(16, dtype=torch.float64))


def test_model_interface_and_exact_conditionals():
    model = Oracle4Model()
    assert isinstance(model, MaskedLM) and model.mask_id == 0
    assert model.value_tokens.tolist() == [1, 2, 3, 4]
    tokens = torch.stack(random_states(5, seed=3))
    out = model(tokens)
    assert out.logits.shape == (5, 16, 4) and out.hidden.shape == (5, 16, 9)
    probs = out.logits.softmax(-1)
    assert torch.allclose(probs, exact_marginals(tokens), atol=1e-15, rtol=0)
    assert ((probs == 0) == (exact_marginals(tokens) == 0)).all()  # impossible values get exactly 0
    assert torch.isfinite(out.logits).all()
    assert torch.equal(model(tokens).hidden, out.hidden)


@pytest.mark.parametrize(
    "grid,match",
    [
        ("11..............", "no 4x4 Sudoku solution agrees"),  # two 1s in a row
        ("123........4....", "no 4x4 Sudoku solution agrees"),  # no direct conflict, still unsolvable
    ],
)
def test_inconsistent_states_raise(grid, match):
    with pytest.raises(InconsistentStateError, match=match):
        Oracle4Model()(to_tokens([grid]))
    with pytest.raises(InconsistentStateError, match="admit no 4x4 Sudoku solution"):
        exact_pair_mi(to_tokens([grid])[0])


@pytest.mark.parametrize(
    "tokens,match",
    [
        (torch.zeros(2, 15, dtype=torch.long), r"shape \(B, 16\)"),
        (torch.zeros(16, dtype=torch.long), r"shape \(B, 16\)"),
        (torch.full((1, 16), 5), "masked\\) or digits 1..4"),
        (torch.zeros(1, 16), "integer token ids"),
    ],
)
def test_bad_tokens(tokens, match):
    with pytest.raises(ValueError, match=match):
        Oracle4Model()(tokens)


def test_exact_pair_mi_golden_values():
    empty = torch.zeros(16, dtype=torch.long)
    mi = exact_pair_mi(empty)
    assert mi[0, 1] == pytest.approx(math.log(4 / 3), abs=1e-12)  # row peers: any two distinct digits
    assert mi[0, 4] == pytest.approx(math.log(4 / 3), abs=1e-12)  # column peers
    assert torch.equal(mi, mi.T) and (mi.diagonal() == 0).all() and (mi >= 0).all()
    unique = to_tokens(["2.1..4........2."])[0]  # a minimal puzzle with one solution
    assert count_solutions(unique.tolist(), 2) == 1
    assert (exact_pair_mi(unique) == 0).all()  # every cell determined: no dependence left


@pytest.mark.parametrize("seed", range(4))
def test_exact_pair_mi_matches_plain_counting(seed):
    tokens = random_states(1, seed)[0]
    mi = exact_pair_mi(tokens)
    masked = (tokens == 0).nonzero().flatten().tolist()
    for i in masked[:4]:
        for j in masked[:6]:
            if i != j:
                assert mi[i, j] == pytest.approx(counted_mi(tokens, i, j), abs=1e-12)
    given = tokens != 0
    assert (mi[given] == 0).all() and (mi[:, given] == 0).all()


def test_probe_matches_exact_mi_on_many_states():
    model = Oracle4Model()
    worst = 0.0
    for tokens in random_states(60, seed=0) + [torch.zeros(16, dtype=torch.long)]:
        r = probe(model, tokens)
        exact = exact_pair_mi(tokens)
        for m in (r.mi_directional, r.mi, r.mi_paper):
            worst = max(worst, float((m - exact).abs().max()))
        assert float((r.mi_directional - r.mi_directional.T).abs().max()) < 1e-12  # I(i->j) == I(j->i)
        assert float(r.asymmetry.max()) < 1e-12 and float(r.form_gap.max()) < 1e-12  # a consistent model
        assert torch.allclose(r.marginals, exact_marginals(tokens[None])[0], atol=1e-15, rtol=0)
        live = int((r.marginals[tokens == 0] > 0).sum())
        assert r.passes == 1 + live  # impossible values carry no weight and are never run
    assert worst < 1e-14  # README: exact on the oracle to 1e-15


def test_pruned_probe_on_oracle_stays_in_bound():
    model = Oracle4Model()
    largest_bound = 0.0
    for tokens in random_states(20, seed=1):
        exact = exact_pair_mi(tokens)
        for eps in (0.2, 0.3, 0.45):
            r = probe(model, tokens, eps=eps)
            assert ((r.mi_directional - exact).abs() <= r.error_bound + 1e-12).all()
            assert ((r.mi - exact).abs() <= r.mi_error_bound + 1e-12).all()
            largest_bound = max(largest_bound, float(r.error_bound.max()))
    assert largest_bound > 0.1  # values were skipped: the check above was not vacuous


def test_geometry_is_4x4():
    assert SUDOKU4.cells == 16 and Oracle4Model().seq_len == 16


def test_bench_mi_on_the_oracle_reads_the_exact_probe_as_mi_exact_does(tmp_path, capsys):
    """The oracle has no estimator: ``bench oracle4 --sampler mi`` refused ("needs an MI estimator"), so the command
    a 4x4 MI-guided trace exports from the app did not run. It reads the exact probe, as the app and mi_exact do."""
    import json

    from mi_core.cli import main

    (tmp_path / "p.txt").write_text("43....34.1.....1\n.....34.4.31..2.\n...2...41..32..1\n")
    rows = {}
    for sampler in ("mi", "mi_exact"):
        out = tmp_path / f"{sampler}.json"
        assert main(["bench", "oracle4", "--puzzles", str(tmp_path / "p.txt"), "--sampler", sampler, "--set",
                     "gamma=1", "--set", "lam=1", "--threads", "1", "--json", str(out)]) == 0
        rows[sampler] = json.loads(out.read_text())
    assert "the MI of each step is the exact probe's" in capsys.readouterr().err
    assert rows["mi"]["sequences"] == rows["mi_exact"]["sequences"] and rows["mi"]["accuracy"] == 1.0
    assert rows["mi"]["mean_extra_passes"] == rows["mi_exact"]["mean_extra_passes"] > 0
