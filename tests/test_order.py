"""Learned generation orders (mi_core.order, the ``learned`` strategy): the posterior's renormalisation,
the RLOO estimator against an exact gradient, the Bernoulli KL, a short ELBO training run on the exact
4x4 oracle, and the strategy's invariants."""

import hashlib
import itertools
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from mi_core.cli import main as cli_main
from mi_core.decoding import decode, decode_final, make_strategy
from mi_core.decoding.selector import load_order_net, make_order_nets, pick_positions, save_order_net, selector_features
from mi_core.domains.oracle4 import Oracle4Model, all_solutions4
from mi_core.domains.sudoku import MASK_ID
from mi_core.models.base import ModelFileError
from mi_core.order.elbo import bernoulli_kl, rloo, rollout, score_function_surrogate
from mi_core.order.loop import OrderTrainConfig, train_order
from mi_core.order.posterior import posterior_log_prob, posterior_logq, sample_posterior, split_logq


def random_masks(b, n, seed, rate=0.7):
    g = torch.Generator().manual_seed(seed)
    masked = torch.rand(b, n, generator=g) < rate
    masked[:, 0] = True  # at least one masked per row
    return masked


# --- the posterior Q_phi ---------------------------------------------------------------------------------


def unmask_schedule(alpha: torch.Tensor, masked: torch.Tensor, tau: float, steps: int,
                    generator: torch.Generator) -> torch.Tensor:
    """A whole schedule from fixed scores: ``(B, N)``, the step each masked position is unmasked at, else -1."""
    when = torch.full(masked.shape, -1, dtype=torch.long, device=masked.device)
    left = masked.clone()
    for t in range(steps):
        logq = posterior_logq(alpha, left, tau)
        r = sample_posterior(logq, left, t == steps - 1, generator)
        when[r] = t
        left &= ~r
    return when


@pytest.mark.parametrize("tau", [0.05, 1.0, 20.0])
@pytest.mark.parametrize("steps", [1, 2, 5])
def test_schedule_unmasks_at_least_one_per_step_and_everything_by_T(tau, steps):
    masked = random_masks(64, 30, seed=1)
    alpha = torch.randn(64, 30, generator=torch.Generator().manual_seed(2))
    when = unmask_schedule(alpha, masked, tau, steps, torch.Generator().manual_seed(3))
    assert torch.equal(when >= 0, masked)  # every masked position unmasked, nothing else touched
    assert int(when.max()) <= steps - 1
    for row in range(64):
        used = sorted(set(when[row][masked[row]].tolist()))
        assert used == list(range(len(used))), "a step with positions left unmasked none"


def test_posterior_best_is_certain_and_higher_scores_are_likelier():
    masked = torch.tensor([[True, True, False, True]])
    alpha = torch.tensor([[0.5, 2.0, 9.0, 1.0]])
    logq = posterior_logq(alpha, masked, tau=0.5)
    assert torch.allclose(logq, torch.tensor([[-3.0, 0.0, 0.0, -2.0]]))  # (alpha - 2) / 0.5; unmasked: 0
    r = sample_posterior(logq, masked, last=False, generator=torch.Generator().manual_seed(0))
    assert r[0, 1] and not r[0, 2]
    assert torch.equal(sample_posterior(logq, masked, True, torch.Generator()), masked)
    draws = torch.stack([sample_posterior(logq.expand(4000, 4), masked.expand(4000, 4), False,
                                          torch.Generator().manual_seed(5))]).float().mean((0, 1))
    assert abs(draws[0] - np.exp(-3)) < 0.01 and abs(draws[3] - np.exp(-2)) < 0.02
    with pytest.raises(ValueError, match="tau must be > 0"):
        posterior_logq(alpha, masked, 0.0)


def test_posterior_log_prob_sums_to_one_over_subsets():
    masked = torch.tensor([[True, True, True, False]])
    logq = posterior_logq(torch.tensor([[0.3, -0.2, 0.9, 0.0]]), masked, tau=0.7)
    subsets = [torch.tensor([[a, b, c, False]]) for a, b, c in itertools.product([False, True], repeat=3)]
    total = sum(posterior_log_prob(r, logq, masked, False).exp() for r in subsets if r[0, 2])  # best always in
    assert torch.allclose(total, torch.ones(1, dtype=total.dtype))


# --- RLOO and the KL -------------------------------------------------------------------------------------


def toy_return(r: torch.Tensor) -> torch.Tensor:
    """A non-linear function of the subset, so the gradient of its expectation is not trivial."""
    w = torch.tensor([1.0, -2.0, 0.5, 3.0])
    rf = r.double()
    return rf @ w.double() + 4.0 * rf[:, 0] * rf[:, 3] - 1.5 * rf[:, 1] * rf[:, 2]


def test_rloo_gradient_is_unbiased_on_a_toy_with_known_gradient():
    masked = torch.ones(1, 4, dtype=torch.bool)
    tau = 1.5
    alpha = torch.tensor([[0.2, -0.4, 0.8, 0.1]], dtype=torch.float64, requires_grad=True)
    # exact: E_Q[f] = sum over all subsets of Q(r) f(r), differentiated by autograd
    subsets = torch.tensor(list(itertools.product([False, True], repeat=4)))
    logq = posterior_logq(alpha, masked, tau)
    sure, *_ = split_logq(logq, masked, False)
    subsets = subsets[(subsets | ~sure).all(1)]  # the certain position is always in
    exact_value = (posterior_log_prob(subsets, logq.expand(len(subsets), 4), masked.expand(len(subsets), 4),
                                      False).exp() * toy_return(subsets)).sum()
    (exact,) = torch.autograd.grad(exact_value, alpha)
    # RLOO: 20 chunks of M groups of K draws; each chunk's surrogate gradient is one estimate
    m, k, chunks = 2000, 4, 20
    estimates = []
    for c in range(chunks):
        logq = posterior_logq(alpha.expand(m * k, 4), masked.expand(m * k, 4), tau)
        r = sample_posterior(logq, masked.expand(m * k, 4), False, torch.Generator().manual_seed(c))
        log_q = posterior_log_prob(r, logq, masked.expand(m * k, 4), False).view(m, k)
        estimates.append(torch.autograd.grad(score_function_surrogate(log_q, toy_return(r).view(m, k)), alpha)[0])
    est = torch.cat(estimates)
    mean, se = est.mean(0), est.std(0) / chunks**0.5
    assert exact.abs().max() > 1.0 and se.max() < 0.05
    assert ((mean - exact[0]).abs() < 4 * se + 1e-3).all(), (mean, exact, se)
    # the check has power: a baseline that includes the sample itself shrinks the gradient by (K-1)/K
    assert ((mean * (k - 1) / k - exact[0]).abs() > 4 * se).any()


def test_rloo_by_hand():
    adv = rloo(torch.tensor([[1.0, 2.0, 6.0]]))
    assert torch.allclose(adv, torch.tensor([[1 - 4.0, 2 - 3.5, 6 - 1.5]]))
    assert torch.allclose(rloo(torch.full((2, 5), 7.0)), torch.zeros(2, 5))
    with pytest.raises(ValueError, match="RLOO needs at least 2 samples"):
        rloo(torch.ones(3, 1))


def test_kl_is_zero_when_p_equals_q_and_positive_otherwise():
    masked = random_masks(8, 20, seed=4)
    logq = posterior_logq(torch.randn(8, 20, generator=torch.Generator().manual_seed(5)), masked, 0.8)
    sure, free, s, s1m = split_logq(logq, masked, False)
    matched = torch.where(sure, torch.full_like(s, 60.0), s - s1m)  # logit(q); q = 1 -> a huge logit
    assert torch.allclose(bernoulli_kl(logq, matched, masked, False), torch.zeros(8), atol=1e-6)
    other = matched + torch.randn(8, 20, generator=torch.Generator().manual_seed(6))
    assert (bernoulli_kl(logq, other, masked, False) > 1e-4).all()
    assert torch.equal(bernoulli_kl(logq, other, masked, True), torch.zeros(8))  # last step: both forced
    # by hand: q = e^-1 against p = 1/2, plus the certain position's -log p
    logq1 = torch.tensor([[-1.0, 0.0]])
    q = np.exp(-1)
    want = q * np.log(q / 0.5) + (1 - q) * np.log((1 - q) / 0.5) + np.log(2)
    got = bernoulli_kl(logq1, torch.zeros(1, 2), torch.ones(1, 2, dtype=torch.bool), False)
    assert abs(got.item() - want) < 1e-6


def test_kl_gradients_are_finite_at_certain_positions():
    masked = torch.ones(2, 5, dtype=torch.bool)
    alpha = torch.tensor([[1.0, 1.0, 0.0, -3.0, 2.0], [0.0, 0.0, 0.0, 0.0, 0.0]], requires_grad=True)
    logit_p = torch.zeros(2, 5, requires_grad=True)
    logq = posterior_logq(alpha, masked, 0.3)
    r = sample_posterior(logq, masked, False, torch.Generator().manual_seed(0))
    loss = bernoulli_kl(logq, logit_p, masked, False).sum() + posterior_log_prob(r, logq, masked, False).sum()
    loss.backward()
    assert torch.isfinite(alpha.grad).all() and torch.isfinite(logit_p.grad).all()


# --- training on the exact 4x4 oracle ----------------------------------------------------------------------


def oracle_draw(rng: np.random.Generator, batch: int):
    sols = all_solutions4()
    target = sols[rng.integers(len(sols), size=batch)]
    masked = torch.from_numpy(rng.random((batch, 16)) < rng.uniform(0.6, 1.0, (batch, 1)))
    masked[:, 0] = True
    return target.masked_fill(masked, MASK_ID), target - 1


def mean_elbo(model, nets, states, steps, seed=0):
    with torch.no_grad():
        ro = rollout(model, *states, *nets, steps, 1.0, 8, torch.Generator().manual_seed(seed))
    return (ro.elbo / ro.n_masked).mean().item()


def test_short_training_on_the_oracle_improves_the_elbo():
    oracle = Oracle4Model()
    states = oracle_draw(np.random.default_rng(99), 64)
    torch.manual_seed(0)
    nets = make_order_nets(9, width=16)
    before = mean_elbo(oracle, nets, states, steps=3)
    cfg = OrderTrainConfig(seed=0, updates=60, batch=16, samples=4, tau=1.0, lr=3e-3, width=16, budgets=(3,),
                           bf16=False)
    _, _, curve = train_order(oracle, oracle_draw, cfg, 9, nets=nets, eval_every=30, log=lambda _: None)
    after = mean_elbo(oracle, nets, states, steps=3)
    assert len(curve) == 2 and all(np.isfinite(p["elbo"]) for p in curve)
    assert after > before + 0.02, (before, after)


# --- the learned strategy ----------------------------------------------------------------------------------


@pytest.fixture
def selector9():
    """A selector whose last layer is random: a fresh one's is zero, P(unmask) 0.5 at every cell, and no order
    or risk rule could be told from another."""
    torch.manual_seed(1)
    net = make_order_nets(32)[1]
    torch.nn.init.normal_(net.mlp[-1].weight, std=0.5)
    return net.eval()


def puzzles9(n=3):
    from mi_core.domains.sudoku.generator import random_puzzle

    return torch.tensor([random_puzzle(30, seed)[0] for seed in range(n)])


@pytest.mark.parametrize("steps", [1, 3, 6])
@pytest.mark.parametrize("mode", ["sample", "threshold", "rank", "paced"])
def test_learned_keeps_givens_fills_everything_and_respects_T(tiny_mdm, selector9, steps, mode):
    tokens = puzzles9()
    strategy = make_strategy("learned", steps=steps, mode=mode, net=selector9)
    frames = list(decode(tiny_mdm, tokens, strategy, seed=4))
    final = frames[-1]
    given = tokens != MASK_ID
    assert final.done and torch.equal(final.tokens[given], tokens[given])
    assert len(frames) <= steps and (final.passes <= steps).all()
    for f in frames:
        assert f.info["select_prob"].shape == tokens.shape
        assert torch.equal(f.info["count"], f.chosen.sum(1))
        assert ((f.info["select_prob"] >= 0) & (f.info["select_prob"] <= 1)).all()


def test_learned_rank_mode_spreads_over_exactly_T_steps(tiny_mdm, selector9):
    """Rank mode takes ceil(masked / steps left) per step, the most probable first: exactly T passes."""
    tokens = puzzles9()
    frames = list(decode(tiny_mdm, tokens, make_strategy("learned", steps=5, mode="rank", net=selector9)))
    assert len(frames) == 5 and (frames[-1].passes == 5).all()
    left = (tokens == MASK_ID).sum(1)
    for t, f in enumerate(frames):
        expected = (left + (5 - t) - 1) // (5 - t)
        assert torch.equal(f.chosen.sum(1), expected)
        prob = f.info["select_prob"]
        weakest_chosen = prob.masked_fill(~f.chosen, 2.0).min(1).values
        strongest_left = prob.masked_fill(f.chosen | (prob == 0), -1.0).max(1).values
        assert (weakest_chosen >= strongest_left).all()
        left = left - expected


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.9])
def test_learned_paced_mode_takes_the_confident_and_never_less_than_uniform(tiny_mdm, selector9, threshold):
    tokens = puzzles9()
    strategy = make_strategy("learned", steps=6, mode="paced", threshold=threshold, net=selector9)
    frames = list(decode(tiny_mdm, tokens, strategy))
    assert len(frames) <= 6 and frames[-1].done
    left = (tokens == MASK_ID).sum(1)
    for t, f in enumerate(frames):
        prob, chosen = f.info["select_prob"], f.chosen
        uniform = (left + (6 - t) - 1) // (6 - t)
        confident = ((prob >= threshold) & (prob > 0)).sum(1)
        assert torch.equal(chosen.sum(1), torch.minimum(torch.maximum(uniform, confident), left))
        weakest_chosen = prob.masked_fill(~chosen, 2.0).min(1).values
        strongest_left = prob.masked_fill(chosen | (prob == 0), -1.0).max(1).values
        assert (weakest_chosen[chosen.any(1)] >= strongest_left[chosen.any(1)]).all()
        left = left - chosen.sum(1)


def pairwise_mi(seed=0):
    """An ``mi_fn`` giving a fixed random symmetric MI matrix in [0, 0.5] per call (shape of the state)."""

    def mi_fn(ctx):
        g = torch.Generator().manual_seed(seed)
        b, n = ctx.masked.shape
        m = torch.rand(b, n, n, generator=g) * 0.5
        return (m + m.transpose(1, 2)) / 2

    return mi_fn


@pytest.mark.parametrize("steps", [1, 4, 8])
def test_learned_mi_keeps_givens_respects_T_and_spends_its_budget(tiny_mdm, selector9, steps):
    tokens = puzzles9()
    strategy = make_strategy("learned_mi", steps=steps, gamma=1.5, lam=0.5, relative=False, net=selector9,
                             mi_fn=pairwise_mi())
    frames = list(decode(tiny_mdm, tokens, strategy, seed=1))
    given = tokens != MASK_ID
    assert frames[-1].done and torch.equal(frames[-1].tokens[given], tokens[given]) and len(frames) <= steps
    for t, f in enumerate(frames):
        prob, chosen = f.info["select_prob"], f.chosen
        assert torch.equal(f.info["count"], chosen.sum(1))
        if t == steps - 1:
            continue  # the budget's last step takes everything left
        risk = -prob.clamp_min(1e-12).log().double()
        for row in range(len(tokens)):
            picked = chosen[row].nonzero()[:, 0]
            if len(picked) > 1:  # beyond the always-taken first one, everything fits the budget
                assert float(f.info["budget_spent"][row]) <= 1.5 + 1e-9
            assert int(picked[risk[row, picked].argmin()]) == int(prob[row].argmax())


def test_learned_mi_with_zero_budget_is_one_per_step_and_with_no_mi_is_a_risk_budget(tiny_mdm, selector9):
    tokens = puzzles9(1)
    one = make_strategy("learned_mi", steps=81, gamma=0.0, net=selector9, mi_fn=pairwise_mi())
    frames = list(decode(tiny_mdm, tokens, one))
    assert all(int(f.chosen.sum()) == 1 for f in frames)
    none = make_strategy("learned_mi", steps=81, gamma=2.0, lam=0.0, net=selector9, mi_fn=pairwise_mi())
    first = next(iter(decode(tiny_mdm, tokens, none)))
    risk = -first.info["select_prob"][0].clamp_min(1e-12).log().double()
    masked = tokens[0] == MASK_ID
    order = risk.masked_fill(~masked, float("inf")).argsort()
    h = risk[order][: int(masked.sum())]
    expected = max(1, int(((h.cumsum(0) - h[0]) + h[0] <= 2.0).sum()))  # the longest risk prefix within gamma
    assert int(first.chosen.sum()) == expected


def test_learned_mi_needs_a_selector_and_an_mi_source(tiny_mdm, selector9):
    with pytest.raises(ValueError, match="strategy 'learned_mi' has no MI source"):
        decode_final(tiny_mdm, puzzles9(), make_strategy("learned_mi", net=selector9))
    with pytest.raises(ValueError, match="strategy 'learned_mi' has no selector"):
        decode_final(tiny_mdm, puzzles9(), make_strategy("learned_mi", mi_fn=pairwise_mi()))
    with pytest.raises(ValueError, match="gamma must be a finite number >= 0"):
        make_strategy("learned_mi", gamma=-1)


def test_learned_same_seed_same_trajectory(tiny_mdm, selector9):
    def run(seed):
        strategy = make_strategy("learned", steps=5, mode="sample", net=selector9)
        return [f.chosen for f in decode(tiny_mdm, puzzles9(), strategy, temperature=1.0, seed=seed)]

    a, b = run(3), run(3)
    assert len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


def test_pick_positions_rule():
    prob = torch.tensor([[0.2, 0.7, 0.9, 0.4], [0.1, 0.3, 0.2, 0.05]])
    masked = torch.tensor([[True, True, False, True], [True, True, True, True]])
    got = pick_positions(prob, masked, False, "threshold", 0.5)
    assert got.tolist() == [[False, True, False, False], [False, True, False, False]]  # best always taken
    assert torch.equal(pick_positions(prob, masked, True, "threshold", 0.5), masked)
    with pytest.raises(ValueError, match="mode must be 'sample' or 'threshold'"):
        pick_positions(prob, masked, False, "greedy", 0.5)


def test_selector_features_shape_and_budget_columns():
    probs = torch.softmax(torch.randn(2, 5, 4), -1)
    masked = torch.tensor([[True, False, True, True, False], [True] * 5])
    f = selector_features(probs, masked, step=2, steps=6)
    assert f.shape == (2, 5, 10) and torch.isfinite(f).all()
    assert torch.allclose(f[0, :, 6], torch.full((5,), 0.6)) and torch.allclose(f[:, :, 8], torch.full((2, 5), 0.25))


def test_save_load_round_trip_and_bad_files(tmp_path, tiny_mdm, selector9, model_path):
    path = tmp_path / "sel.safetensors"
    save_order_net(selector9, path, {"note": "test"})
    strategy = make_strategy("learned", selector=str(path), steps=4)
    ref = decode_final(tiny_mdm, puzzles9(), make_strategy("learned", steps=4, net=selector9))
    assert torch.equal(decode_final(tiny_mdm, puzzles9(), strategy).tokens, ref.tokens)
    with pytest.raises(ModelFileError, match="holds an order selector, expected a posterior"):
        load_order_net(path, role="posterior")
    with pytest.raises(ModelFileError, match="is not an order network: its config has"):
        load_order_net(model_path)
    ckpt = path.with_suffix(".ckpt")  # train-order's checkpoint beside the selector and its JSON
    ckpt.write_bytes(b"\x80\x02" + bytes(64))
    with pytest.raises(ModelFileError, match=r"sel.ckpt is a training checkpoint \(what --resume continues from\), "
                                             r"not weights: give the weights file beside it, .*sel.safetensors"):
        load_order_net(ckpt)
    with pytest.raises(ValueError, match="strategy 'learned' has no selector"):
        decode_final(tiny_mdm, puzzles9(), make_strategy("learned"))


def test_a_selector_of_another_domain_is_named_before_its_hidden_size(tmp_path):
    """A selector trained on another domain's model of another hidden size (brackets' 64 on Sudoku's 128) was
    refused for its hidden size, with "use a selector trained on this model"; the domain it was trained on is the
    mistake to name."""
    from types import SimpleNamespace

    from mi_core.decoding.selector import check_order_net_fits

    path = tmp_path / "sel.safetensors"
    save_order_net(make_order_nets(13)[1], path, {"domain": "protein"})
    model = SimpleNamespace(hidden_size=32, domain="sudoku", n_values=9)
    with pytest.raises(ModelFileError, match="was trained on protein, the model is one for sudoku"):
        check_order_net_fits(load_order_net(path), model, path)
    save_order_net(make_order_nets(13)[1], path, {"domain": "brackets"})  # a plugin's, its module not loaded
    with pytest.raises(ModelFileError, match="was trained on the domain 'brackets', which no module registered here "
                                             r"\(is its module named in MI_LENS_DOMAINS\?\), the model is one for sudoku"):
        check_order_net_fits(load_order_net(path), model, path)
    save_order_net(make_order_nets(13)[1], path, {"domain": "sudoku4"})  # the 4x4 oracle: train-order trains none
    with pytest.raises(ModelFileError, match=r"hidden size 13, the model gives 32: use a selector trained on this "
                                             r"model \(train-order trains none for oracle4\)"):
        check_order_net_fits(load_order_net(path), SimpleNamespace(hidden_size=32, domain="sudoku4", n_values=4), path)


@pytest.mark.parametrize("params, match", [
    ({"steps": 0}, "steps must be >= 1"),
    ({"mode": "greedy"}, "mode must be 'sample', 'threshold', 'rank' or 'paced'"),
    ({"threshold": 0.0}, r"threshold must be in \(0, 1\]"),
    ({"net": "x.safetensors"}, "net is set by code"),
])
def test_learned_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        make_strategy("learned", **params)


def test_train_order_cli_errors(capsys):
    assert cli_main(["train-order", "sudoku", "--steps-budget", "5,x"]) == 2
    assert "--steps-budget must be integers" in capsys.readouterr().err
    assert cli_main(["train-order", "sudoku", "--samples", "1", "--model", "nope.safetensors"]) == 2
    assert "argument --samples: 1 is outside the accepted range 2..1000000" in capsys.readouterr().err


# --- the default step budgets ------------------------------------------------------------------------------


@pytest.mark.parametrize("positions, budgets", [(81, (5, 10, 15, 20)), (100, (6, 12, 19, 25)), (16, (2, 3, 4, 5)),
                                                (10, (2, 3, 4, 5)), (6, (2, 3, 4, 5)), (5, (2, 3, 4)), (3, (2,)),
                                                (2, (1,)), (1, (1,))])
def test_derived_budgets_lie_below_the_positions(positions, budgets):
    from mi_core.decoding.budgets import derived_budgets

    assert derived_budgets(positions) == budgets
    assert positions <= 2 or max(budgets) < positions


def default_of(command: str, domain: str, name: str):
    """The default of option ``name`` in ``python -m mi_core COMMAND DOMAIN``'s parser."""
    import argparse

    from mi_core.cli import command_parser, load

    parser = command_parser(command, load(command))
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return subs.choices[domain].get_default(name)


@pytest.mark.parametrize("domain", ["sudoku", "protein", "antibody"])
def test_the_shipped_domains_keep_their_budgets(domain):
    """Their selectors and committed benchmarks were made at 5, 10, 15, 20: the defaults stay."""
    assert default_of("train-order", domain, "steps_budget") == "5,10,15,20"
    assert default_of("bench-order", domain, "budgets") == [5, 10, 15, 20]


def test_the_16_cell_oracle_gets_budgets_below_its_cells(capsys):
    """bench-order oracle4 defaulted to 5,10,15,20 on 16 cells: at 20 every puzzle was decoded one cell a pass."""
    assert default_of("bench-order", "oracle4", "budgets") == [2, 3, 4, 5]
    assert cli_main(["bench-order", "oracle4", "--help"]) == 0
    assert "(default: 2,3,4,5)" in " ".join(capsys.readouterr().out.split())


def test_bench_orders_budgets_count_the_positions_an_input_fills():
    """bench-order derived its budgets from the longest input's length (an antibody chain's 127 positions: T = 8,
    16, 24, 32, each filling a CDR3 of at most 18 one a pass); n is now the most masked positions of an input."""
    import mi_core.bench.order as bench_order

    templates = [np.array([3, 0, 0, 4, 5, 6, 7, 8]), np.array([0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2]),
                 np.zeros(6, dtype=np.int64)]  # a fully masked input counts every position
    assert bench_order.positions_to_fill(templates, 0) == 6
    assert bench_order.positions_to_fill([], 0) is None
    assert "most positions to fill (its masked ones)" in bench_order.FILLED


def test_a_budget_at_or_above_the_positions_is_named_once():
    from mi_core.decoding.budgets import fit_budgets

    said = []
    assert fit_budgets([2, 16, 20], 16, "--budgets", "the longest input", said.append) == (2, 16, 20)
    assert said == ["note: --budgets 16,20: the longest input has 16 positions, so at T >= 16 every state can be "
                    "decoded one position a pass and the budget limits nothing (budgets below 16 do)"]
    said.clear()
    assert fit_budgets(None, 10, "--budgets", "the longest input", said.append) == (2, 3, 4, 5)
    assert said and "derived from the 10 positions of the longest input" in said[0]
    with pytest.raises(ValueError, match="the positions of a state are not known here.*give --steps-budget"):
        fit_budgets(None, None, "--steps-budget", "a state")


def test_a_domain_declaring_bad_budgets_is_named():
    from types import SimpleNamespace

    from mi_core.decoding.budgets import default_budgets

    bad = SimpleNamespace(key="mine", length=None, order_task=SimpleNamespace(budgets=(5, 0)))
    with pytest.raises(ValueError, match=r"domain mine: its order task's budgets \(5, 0\) must be integers in 1..4096"):
        default_budgets(bad)
    assert default_budgets(SimpleNamespace(key="mine", length=None, order_task=None)) is None


def test_train_order_init_of_a_posterior_file_names_it(tmp_path, capsys):
    """``--init sel_posterior.safetensors`` (the posterior, not the selector) said the file had no posterior
    beside it, sel_posterior_posterior.safetensors."""
    posterior = tmp_path / "sel_posterior.safetensors"
    save_order_net(make_order_nets(16)[0], posterior)
    assert cli_main(["train-order", "sudoku", "--init", str(posterior), "--out", str(tmp_path / "o.safetensors")]) == 2
    assert f"error: {posterior} holds an order posterior, expected a selector" in capsys.readouterr().err


def test_train_order_cli_runs_and_writes_checkpoints(tmp_path, model_path):
    out = tmp_path / "sel.safetensors"
    args = ["train-order", "sudoku", "--model", str(model_path), "--out", str(out), "--updates", "2",
            "--batch", "2", "--samples", "2", "--steps-budget", "3", "--eval-every", "2", "--eval-puzzles", "4",
            "--puzzle-pool", "4", "--no-bf16"]
    assert cli_main(args) == 0
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["config"]["role"] == "selector" and meta["denoiser_frozen"] is True
    assert meta["mdm_sha256"] == hashlib.sha256(Path(model_path).read_bytes()).hexdigest()  # its fit check reads it
    assert [p["update"] for p in meta["curve"]] == [2] and "val_T3" in meta["curve"][0]
    assert out.with_name("sel_posterior.safetensors").is_file()
    assert len((tmp_path / "sel_log.jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize("joint", [False, True])
def test_train_order_resume_continues_bit_identically(tmp_path, model_path, capsys, joint):
    """A run stopped after 2 updates and resumed to 4 writes the weights, log and curve of a run of 4 (--init only
    warm-started: the data stream and Adam began afresh, 3.7e-3 off after 4 updates)."""
    from safetensors.torch import load_file

    def args(out, updates):
        return ["train-order", "sudoku", "--model", str(model_path), "--out", str(out), "--updates", str(updates),
                "--batch", "2", "--samples", "2", "--steps-budget", "3,4", "--eval-every", "2", "--eval-puzzles", "4",
                "--puzzle-pool", "6", "--no-bf16"] + (["--finetune", "--denoiser-lr", "1e-3"] if joint else [])

    whole, parts = tmp_path / "whole" / "sel.safetensors", tmp_path / "parts" / "sel.safetensors"
    assert cli_main(args(whole, 4)) == 0
    assert cli_main(args(parts, 2)) == 0
    assert cli_main(args(parts, 4) + ["--resume"]) == 0
    assert "resumed" in capsys.readouterr().out
    names = ["sel_last", "sel_posterior_last"] + (["sel_denoiser_last"] if joint else [])
    for name in names:
        a, b = (load_file(d / f"{name}.safetensors") for d in (whole.parent, parts.parent))
        assert all(torch.equal(a[k], b[k]) for k in a), name

    def points(path):
        return [{k: v for k, v in json.loads(line).items() if k not in ("seconds", "out")}
                for line in path.read_text().splitlines()]
    assert points(parts.with_name("sel_log.jsonl")) == points(whole.with_name("sel_log.jsonl"))
    assert [p["update"] for p in json.loads(parts.with_name("sel_last.json").read_text())["curve"]] == [2, 4]


def test_train_order_resume_refuses_what_it_cannot_continue(tmp_path, model_path, capsys):
    out = tmp_path / "sel.safetensors"
    args = ["train-order", "sudoku", "--model", str(model_path), "--updates", "2", "--batch", "2", "--samples", "2",
            "--steps-budget", "3", "--eval-every", "2", "--eval-puzzles", "4", "--puzzle-pool", "4", "--no-bf16"]
    assert cli_main(args + ["--out", str(out), "--resume"]) == 2
    assert f"--resume: no checkpoint {out.with_suffix('.ckpt')} to continue" in capsys.readouterr().err
    assert cli_main(args + ["--resume"]) == 2
    assert "--resume needs the --out of the run to continue" in capsys.readouterr().err
    assert cli_main(args + ["--out", str(out)]) == 0
    assert cli_main(args + ["--out", str(out), "--resume"]) == 2  # it ran its 2 updates: nothing was left to do
    assert f"--resume: {out.with_suffix('.ckpt')} is at update 2 already: give --updates above it" in capsys.readouterr().err
    assert cli_main(args + ["--out", str(out), "--resume", "--batch", "3"]) == 2
    assert "--resume continues the run's own settings: --batch 3 differs from its 2" in capsys.readouterr().err
    # an option left out is its default, not one given: it said "--batch 16 differs from its 2" to a command without it
    no_batch = args[:6] + args[8:]
    assert cli_main(no_batch + ["--out", str(out), "--resume", "--updates", "4"]) == 2
    assert "--batch left out is 16, the run's 2: give its options again" in capsys.readouterr().err
    # the same model file spelled another way is the same setting (it was "--model ./... differs from its /...")
    spelled = ["--model", os.path.relpath(model_path)] + args[4:]
    assert cli_main(args[:2] + spelled + ["--out", str(out), "--resume", "--samples", "3"]) == 2
    assert "--samples 3 differs from its 2" in capsys.readouterr().err
    assert cli_main(args + ["--out", str(tmp_path / "other.safetensors"), "--resume"]) == 2
    capsys.readouterr()
    assert not (tmp_path / "other.json").exists()
    out.with_suffix(".ckpt").write_bytes(b"cut")
    assert cli_main(args + ["--out", str(out), "--resume"]) == 2
    assert "is not a readable checkpoint" in capsys.readouterr().err
    out2 = tmp_path / "two.safetensors"
    out2.with_suffix(".ckpt").write_bytes(b"mine")  # a fresh run does not replace a file named as its checkpoint
    assert cli_main(args + ["--out", str(out2)]) == 2
    assert "two.ckpt, which this run writes beside it, already exists" in capsys.readouterr().err


def test_train_order_resume_refuses_a_model_file_replaced_since(tmp_path, model_path, capsys):
    """A selector run stopped, its --model retrained into the same path, then resumed went on against the new weights
    without a word, and its JSON then named the new file's sha256 for updates made on the old one."""
    from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig, save_sudoku_mdm

    out = tmp_path / "sel.safetensors"
    args = ["train-order", "sudoku", "--model", str(model_path), "--out", str(out), "--batch", "2", "--samples", "2",
            "--steps-budget", "3", "--eval-every", "2", "--eval-puzzles", "4", "--puzzle-pool", "4", "--no-bf16"]
    assert cli_main(args + ["--updates", "2"]) == 0
    torch.manual_seed(1)  # the same shape, other weights: as a retrained model
    save_sudoku_mdm(SudokuMDM(SudokuMDMConfig(box=3, d_model=32, n_layers=1, n_heads=2, d_ff=64)).eval(), model_path)
    capsys.readouterr()
    assert cli_main(args + ["--updates", "4", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "is not the model this run trained against" in err and "retrained or replaced since" in err
    assert [p["update"] for p in json.loads(out.with_name("sel_last.json").read_text())["curve"]] == [2]


def test_train_order_refuses_an_out_another_run_is_writing(tmp_path, model_path, capsys):
    """A second train-order of one --out (with --force, or before the first wrote a file) trained beside the first,
    each replacing the other's selector, log and checkpoint."""
    out = tmp_path / "sel.safetensors"
    out.with_name("sel.safetensors.lock").write_text(str(os.getpid()))  # a run in progress: this process
    args = ["train-order", "sudoku", "--model", str(model_path), "--out", str(out), "--updates", "2", "--batch", "2",
            "--samples", "2", "--steps-budget", "3", "--eval-every", "2", "--eval-puzzles", "4", "--puzzle-pool", "4",
            "--no-bf16", "--force"]
    assert cli_main(args) == 2
    assert f"another run (process {os.getpid()}) is writing it" in capsys.readouterr().err
    assert not out.exists() and not out.with_name("sel_log.jsonl").exists()


def test_train_order_names_a_pool_file_cut_short(tmp_path, model_path, capsys):
    """A --pool-file (or --val-file) cut short within its first chunk said "error: high <= 0", numpy's words for
    drawing from no puzzles; it is named with what is wrong, as train sudoku does."""
    from mi_core.io import ROOT

    cut = tmp_path / "cut.txt.gz"
    cut.write_bytes((ROOT / "assets" / "sudoku_pools" / "train_graded.txt.gz").read_bytes()[:3000])
    base = ["train-order", "sudoku", "--model", str(model_path), "--out", str(tmp_path / "s.safetensors"), "--updates",
            "1", "--no-bf16", "--threads", "1"]
    for option in ("--pool-file", "--val-file"):
        files = {"--pool-file": str(ROOT / "assets" / "sudoku_pools" / "train_graded.txt.gz"), option: str(cut)}
        assert cli_main([*base, *[x for pair in files.items() for x in pair]]) == 2
        assert f"error: {option} {cut} holds no puzzles whole: it is cut short" in capsys.readouterr().err


def test_train_order_resume_on_another_kind_of_device_is_one_error_line(tmp_path, model_path, capsys):
    """A checkpoint written on a GPU resumed on the CPU (or the other way round) stopped with a RuntimeError
    traceback from torch ("Expected a CPUGeneratorImplState of size 5056 but found ... 16"): --device is not one of
    the settings --resume compares, but the data stream's generator is the device's own."""
    out = tmp_path / "sel.safetensors"
    args = ["train-order", "sudoku", "--model", str(model_path), "--out", str(out), "--updates", "2", "--batch", "2",
            "--samples", "2", "--steps-budget", "3", "--eval-every", "2", "--eval-puzzles", "4", "--puzzle-pool", "4",
            "--no-bf16"]
    assert cli_main(args) == 0
    ckpt = out.with_suffix(".ckpt")
    state = torch.load(ckpt, weights_only=True)
    assert state["device"] == "cpu"  # the run's own kind of device is recorded
    state["gen"] = torch.zeros(16, dtype=torch.uint8)  # a CUDA generator's state (seed and offset)
    for written in (None, "cuda"):  # None: a checkpoint of the day before it recorded its device
        torch.save({k: v for k, v in state.items() if k != "device"} | ({"device": written} if written else {}), ckpt)
        capsys.readouterr()
        assert cli_main(args + ["--updates", "4", "--resume"]) == 2
        err = capsys.readouterr().err
        assert f"--resume: {ckpt} was written by a run on {written or 'another kind of device'}" in err, err
        assert "resume it with that run's --device" in err and "Traceback" not in err


def test_train_order_reads_graded_pool_files(tmp_path, model_path, capsys):
    import gzip

    from mi_core.domains.sudoku import to_string
    from mi_core.domains.sudoku.generator import random_puzzle

    def pool_file(name: str, seeds: range) -> Path:
        path = tmp_path / name
        with gzip.open(path, "wt") as fh:
            for seed in seeds:
                puzzle, solution = random_puzzle(30, seed)
                fh.write(f"{to_string(puzzle, blank='0')} {to_string(solution)} {seed}\n")
        return path

    train, val = pool_file("train.txt.gz", range(5)), pool_file("val.txt.gz", range(10, 16))
    out = tmp_path / "sel.safetensors"
    args = ["train-order", "sudoku", "--model", str(model_path), "--out", str(out), "--updates", "2", "--batch", "2",
            "--samples", "2", "--steps-budget", "3", "--eval-every", "2", "--eval-puzzles", "4", "--no-bf16"]
    assert cli_main(args + ["--pool-file", str(train), "--val-file", str(val)]) == 0
    meta = json.loads(out.with_suffix(".json").read_text())
    assert (meta["puzzle_pool"], meta["eval_puzzles"]) == (5, 4)  # the 4 hardest (grades 12-15) of the 6
    assert meta["pool_file"].endswith("train.txt.gz") and meta["val_file"].endswith("val.txt.gz")
    assert "5 training puzzles and 4 validation ones (from" in capsys.readouterr().out
    (tmp_path / "bad.txt.gz").write_bytes(gzip.compress(b"123 456 7\n"))
    assert cli_main(args + ["--force", "--pool-file", str(tmp_path / "bad.txt.gz")]) == 2
    assert "bad.txt.gz line 1: expected 'puzzle solution grade'" in capsys.readouterr().err
    # the pool file grown or replaced under its name since the stop: a resumed run went on with other puzzles
    pool_file("train.txt.gz", range(20, 25))
    files = ["--pool-file", str(train), "--val-file", str(val)]
    assert cli_main(args[:5] + [args[5]] + ["--updates", "4"] + args[8:] + files + ["--resume"]) == 2
    err = capsys.readouterr().err
    assert "--resume: --pool-file" in err and "is not the file this run trained on" in err and "changed since" in err


def test_bench_order_cli_writes_rows_and_report(tmp_path, model_path, selector9):
    from mi_core.domains.sudoku import to_string
    from mi_core.domains.sudoku.generator import random_puzzle

    csv = tmp_path / "p.csv"
    lines = ["puzzle,solution,level"]
    for seed, level in [(0, "Easy"), (1, "Easy"), (2, "Hard")]:
        puzzle, solution = random_puzzle(30, seed)
        lines.append(f"{to_string(puzzle)},{to_string(solution)},{level}")
    csv.write_text("\n".join(lines) + "\n")
    selector = tmp_path / "sel.safetensors"
    save_order_net(selector9, selector)
    out = tmp_path / "rows.json"
    assert cli_main(["bench-order", "sudoku", "--puzzles", str(csv), "--model", str(model_path), "--selector",
                     str(selector), "--per-level", "1", "--budgets", "2", "--gammas", "", "--learned-mi-gammas", "",
                     "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [r["sampler"] for r in rows] == ["random", "top_prob", "top_margin", "learned", "learned", "learned",
                                            "top_margin", "sequential"]
    assert [r["params"].get("mode") for r in rows[3:6]] == ["threshold", "paced", "sample"]
    assert all(r["n"] == 2 for r in rows) and all(r["mean_passes"] <= 2 for r in rows if r.get("T") == 2)
    report = out.with_suffix(".md").read_text()
    assert "### T = 2" in report and "Reference: sequential" in report


def test_time_budget_stops_and_still_records_the_last_window():
    oracle = Oracle4Model()
    cfg = OrderTrainConfig(updates=1000, batch=2, samples=2, budgets=(2,), bf16=False, time_budget=1e-9, width=8)
    saved = []
    _, _, curve = train_order(oracle, oracle_draw, cfg, 9, eval_every=50, log=lambda _: None,
                              checkpoint=lambda p, s, c, state: saved.append(len(c)))
    assert [p["update"] for p in curve] == [1] and saved == [1]


def test_learned_without_a_selector_runs_the_domains_own(monkeypatch):
    from mi_core.bench.decode import selector_fields, with_selector
    from mi_core.domain import get_domain

    monkeypatch.delenv("MI_LENS_SUDOKU_SELECTOR", raising=False)
    sudoku = get_domain("sudoku")
    strategy = with_selector(make_strategy("learned", steps=5), sudoku)
    assert Path(strategy.selector).name == "sudoku_order_selector_recurrent.safetensors"
    assert selector_fields(strategy)["selector"] == "assets/sudoku_order_selector_recurrent.safetensors"
    assert len(selector_fields(strategy)["selector_sha256"]) == 64
    assert with_selector(make_strategy("learned", selector="x.safetensors"), sudoku).selector == "x.safetensors"
    assert selector_fields(make_strategy("topk", k=4)) == {}  # a strategy without a selector records none
    assert not hasattr(with_selector(make_strategy("topk", k=4), sudoku), "selector")
    with pytest.raises(ValueError, match=r"Antibody \(AntiBERTy\) domain ships none: --set selector=PATH"):
        with_selector(make_strategy("learned"), get_domain("antibody"))


def test_a_domain_train_order_does_not_serve_is_not_sent_to_it():
    """bench/generate --sampler learned and selector=shipped in Python said "python -m mi_core train-order makes
    one" for a domain train-order takes none of (oracle4; antibody until it had an order task): the line says so;
    Sudoku's and antibody's point to train-order."""
    from types import SimpleNamespace

    from mi_core.bench.decode import with_selector
    from mi_core.decoding.learned import shipped_selector
    from mi_core.domain import get_domain

    with pytest.raises(ValueError, match=r"selector=PATH \(python -m mi_core train-order trains none for oracle4\)$"):
        with_selector(make_strategy("learned"), get_domain("sudoku4"))
    with pytest.raises(ValueError, match=r"\(python -m mi_core train-order trains none for oracle4\)$"):
        shipped_selector(SimpleNamespace(domain="sudoku4"))
    # antibody has an order task (and ships no selector): its line points to train-order and its variable
    with pytest.raises(ValueError, match=r"train-order makes one, and \$MI_LENS_ANTIBODY_SELECTOR names it"):
        shipped_selector(SimpleNamespace(domain="antibody"))
    with pytest.raises(ValueError, match=r"no domain; give selector=PATH \(python -m mi_core train-order makes one\)$"):
        shipped_selector(SimpleNamespace())


def test_a_sweep_row_of_learned_records_the_selector_it_ran(tmp_path, monkeypatch):
    from tests.test_cli import EASY

    monkeypatch.delenv("MI_LENS_SUDOKU_SELECTOR", raising=False)
    monkeypatch.delenv("MI_LENS_SUDOKU_MODEL", raising=False)
    puzzles, out = tmp_path / "p.txt", tmp_path / "rows.json"
    puzzles.write_text(EASY + "\n")
    assert cli_main(["sweep", "sudoku", "--puzzles", str(puzzles), "--grid", "learned:steps=5", "--json", str(out),
                     "--device", "cpu", "--threads", "1"]) == 0
    (row,) = json.loads(out.read_text())
    assert row["params"] == {"steps": 5, "selector": "assets/sudoku_order_selector_recurrent.safetensors"}


@pytest.mark.parametrize("log", ["o.json", "o_posterior.safetensors", "o.ckpt"])
def test_train_order_log_beside_out_is_refused(tmp_path, model_path, capsys, log):
    """--log o.json with --out o.safetensors: the selector's config written beside it replaced the whole log (and
    --log o_posterior.safetensors: the posterior's weights did)."""
    argv = ["train-order", "sudoku", "--model", str(model_path), "--out", str(tmp_path / "o.safetensors"), "--log",
            str(tmp_path / log), "--updates", "1", "--batch", "2", "--samples", "2", "--steps-budget", "3", "--width",
            "8", "--puzzle-pool", "4", "--eval-puzzles", "2", "--eval-every", "1", "--device", "cpu", "--threads", "1"]
    assert cli_main(argv) == 2 and not (tmp_path / log).exists()
    assert f"error: --log {tmp_path / log} is a file this run writes beside --out" in capsys.readouterr().err


def test_train_order_resume_as_another_domain_names_the_domain_typed(tmp_path, model_path, capsys):
    """Resuming a sudoku run as 'train-order protein' said "--domain left out is protein, the run's sudoku9": the
    domain is the argument typed before the options (there is no --domain), never left out."""
    out = tmp_path / "sel.safetensors"
    tail = ["--batch", "2", "--samples", "2", "--steps-budget", "3", "--eval-every", "2", "--no-bf16", "--out", str(out),
            "--device", "cpu", "--threads", "1"]
    assert cli_main(["train-order", "sudoku", "--model", str(model_path), "--updates", "2", "--eval-puzzles", "4",
                     "--puzzle-pool", "4", *tail]) == 0
    capsys.readouterr()
    assert cli_main(["train-order", "protein", "--updates", "4", "--resume", *tail]) == 2
    err = capsys.readouterr().err
    assert "--resume continues the run's own settings: DOMAIN protein differs from its sudoku9" in err, err


def test_a_sequence_order_task_derives_its_budgets_from_its_windows_not_the_models_length():
    """A variable-length sequence domain that declares no budgets had them derived from the model's max_len (256 by
    default: T = 16, 32, 48, 64) for windows of at most 16 positions, where every T decodes one position a pass."""
    from types import SimpleNamespace

    from mi_core.decoding.budgets import fit_budgets
    from mi_core.order.sequences import SequenceOrderTask

    class Words(SequenceOrderTask):
        domain, load, save_denoiser = "words", None, None

        def splits(self, args):
            return [np.ones(n, dtype=np.int64) for n in (10, 12, 16)], [], {}

    model = SimpleNamespace(max_len=256)
    assert Words().positions(SimpleNamespace(lengths=None), model) == 16
    assert Words().positions(SimpleNamespace(lengths="8-12"), model) == 12
    said = []
    assert fit_budgets(None, Words().positions(SimpleNamespace(lengths=None), model), "--steps-budget", "the longest "
                       "start state", said.append) == (2, 3, 4, 5)


def test_a_sequence_order_task_reads_its_splits_once():
    """positions read the splits for the longest training sequence and data read them again (a second pass over a
    FASTA or CSV); now they share one read, which data lets go."""
    from types import SimpleNamespace

    from mi_core.order.loop import OrderTrainConfig
    from mi_core.order.sequences import SequenceOrderTask

    reads = []

    class Words(SequenceOrderTask):
        domain, load, save_denoiser = "words", None, None

        def splits(self, args):
            reads.append(args)
            return [np.ones(n, dtype=np.int64) for n in (10, 12, 16)], [np.ones(16, dtype=np.int64)] * 2, {}

    model, args, task = SimpleNamespace(max_len=256, mask_id=0), SimpleNamespace(lengths=None, eval_per_length=2), Words()
    assert task.positions(args, model) == 16
    header = task.data(args, OrderTrainConfig(), model)[2]
    assert header.startswith("3 training sequences, 8 validation windows"), header
    assert len(reads) == 1  # positions and data share one read
    task.data(args, OrderTrainConfig(), model)
    assert len(reads) == 2  # data let it go: a later run reads the files again


def test_an_infill_order_task_derives_its_budgets_from_the_positions_it_fills():
    """An in-filling domain that declares no budgets had them derived from the model's max_len (512: T = 32, 64, 96,
    128) for templates of at most 6 masked positions, where every T fills one a pass; its pairs are read once."""
    from types import SimpleNamespace

    from mi_core.decoding.budgets import fit_budgets
    from mi_core.order.infill import InfillOrderTask
    from mi_core.order.loop import OrderTrainConfig

    reads = []

    class Fill(InfillOrderTask):
        domain, load, save_denoiser = "fill", None, None

        def pairs(self, args):
            reads.append(args)
            natives = [np.arange(1, n + 1) for n in (20, 30, 12)]
            templates = [np.where(np.arange(len(t)) < k, 0, t) for t, k in zip(natives, (3, 6, 2))]
            return (templates[:2], natives[:2]), (templates[2:], natives[2:]), {}

    model, args, said = SimpleNamespace(max_len=512, mask_id=0), SimpleNamespace(), []
    task = Fill()
    assert task.positions(args, model) == 6
    assert fit_budgets(None, task.positions(args, model), "--steps-budget", task.positions_of, said.append) == (2, 3,
                                                                                                               4, 5)
    assert "derived from the 6 positions of the template with the most positions to fill" in said[0], said
    header = task.data(args, OrderTrainConfig(), model)[2]
    assert header.startswith("2 training templates (4.5 masked positions on average), 1 validation"), header
    assert len(reads) == 1  # positions and data share one read
