"""The decode loop and every strategy: invariants on a tiny model, the exact 4x4 oracle and the real model,
each selection rule against a reference written out here, and the MI-guided rule's guarantees."""

import json
import math
from pathlib import Path

import pytest
import torch

from mi_core.decoding import (
    STRATEGIES,
    decode,
    decode_final,
    estimator_mi_fn,
    make_strategy,
    mi_greedy,
    strategy_params,
)
from mi_core.domains.oracle4 import InconsistentStateError, Oracle4Model, all_solutions4, exact_pair_mi
from mi_core.domains.sudoku import MASK_ID, SUDOKU4, to_tokens
from mi_core.domains.sudoku.generator import random_puzzle
from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig, load_sudoku_mdm
from mi_core.mi.estimator import EstimatorConfig, MIEstimator, save_estimator
from mi_core.mi.probe import probe

SHIPPED_MDM = Path(__file__).resolve().parents[1] / "assets" / "sudoku_mdm.safetensors"


def exact_mi_fn(ctx):
    """The oracle's exact pairwise MI of each state of the batch, ``(B, 16, 16)``."""
    return torch.stack([exact_pair_mi(t) for t in ctx.tokens])


def ones_mi_fn(ctx):
    b, n = ctx.masked.shape
    return torch.ones(b, n, n) * 0.05


# (name, params) covering every strategy and both fixed-count modes; mi gets its MI source per model
CONFIGS = [
    ("sequential", {}),
    ("random", {"k": 3}),
    ("random", {"steps": 4}),
    ("topk", {"k": 4}),
    ("topk", {"steps": 5}),
    ("top_prob", {"k": 2}),
    ("top_prob", {"k": 3, "gumbel": 0.5}),
    ("top_margin", {"steps": 3, "gumbel": 0.5}),
    ("eb", {"gamma": 0.5}),
    ("threshold", {"tau": 0.5}),
    ("mask_predict", {"steps": 4}),
    ("mi", {"gamma": 1.0, "lam": 5.0}),
    ("mi_exact", {"gamma": 1.0, "lam": 5.0}),
]
IDS = [f"{n}-{'-'.join(f'{k}{v}' for k, v in p.items())}" for n, p in CONFIGS]


def build(name, params, mi_fn=ones_mi_fn):
    extra = {"mi_fn": mi_fn} if name == "mi" else {}
    return make_strategy(name, **params, **extra)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """These tensors are tiny: one thread is faster, and on a busy 2-core host much faster (no spin-waits)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny4():
    torch.manual_seed(0)
    return SudokuMDM(SudokuMDMConfig(box=2, d_model=32, n_layers=1, n_heads=2, d_ff=64)).eval()


@pytest.fixture(scope="module")
def oracle():
    return Oracle4Model()


def tiny_batch():
    """Rows with 15, 12 and 1 masked cells and one fully given row (inactive from the start)."""
    sols = all_solutions4()
    rows = torch.zeros(4, 16, dtype=torch.long)
    rows[0, 0] = sols[0, 0]
    rows[1, :4] = sols[5, :4]
    rows[2] = sols[9]
    rows[2, 7] = MASK_ID
    rows[3] = sols[17]
    return rows


def unique4(count=3):
    """``(count, 16)`` unique-solution 4x4 puzzles and their solutions."""
    pairs = [random_puzzle(4 + i % 2, seed=i, geom=SUDOKU4) for i in range(count)]
    return to_tokens([p for p, _ in pairs]), to_tokens([s for _, s in pairs])


def multi4():
    """Six 4x4 states with several solutions each (2 to 7 clues of random solution grids)."""
    g = torch.Generator().manual_seed(0)
    sols = all_solutions4()
    states = torch.zeros(6, 16, dtype=torch.long)
    for i in range(6):
        sol = sols[torch.randint(288, (1,), generator=g)][0]
        keep = torch.randperm(16, generator=g)[: 2 + i]
        states[i, keep] = sol[keep]
    return states


def expected_passes(name, params, masked):
    """Passes a row with ``masked`` masked cells must take, where the rule fixes it (else None)."""
    if masked == 0:
        return 0
    if name == "sequential":
        return masked
    if name == "mask_predict":
        return params["steps"]
    if "steps" in params:
        return min(params["steps"], masked)
    if "k" in params:
        return math.ceil(masked / params["k"])
    return None


def check_trajectory(frames, tokens, name, params, mask_id=MASK_ID):
    """The invariants every strategy keeps: givens fixed, only masked cells filled, at least one per pass,
    pass counts equal to the passes each row took, every cell filled at the end."""
    given = tokens != mask_id
    before = tokens
    taken = torch.zeros(tokens.shape[0], dtype=torch.long)
    for frame in frames:
        masked = before == mask_id
        active = masked.any(1)
        taken += active.long()
        assert torch.equal(frame.tokens[given], tokens[given]), "a given token changed"
        assert not (frame.chosen & ~masked).any(), "a strategy filled a position that was not masked"
        assert torch.equal(frame.chosen.any(1), active), "an active row filled nothing (or a finished row did)"
        filled = frame.chosen & ~frame.remasked
        assert (frame.tokens[filled] != mask_id).all()
        if name != "mask_predict":
            assert not frame.remasked.any()
            assert torch.equal(frame.tokens[~masked], before[~masked]), "a filled token changed"
        assert torch.equal(frame.passes, taken)
        before = frame.tokens
    assert frames[-1].done and (frames[-1].tokens != mask_id).all()
    for row, m in enumerate((tokens == mask_id).sum(1).tolist()):
        want = expected_passes(name, params, m)
        if want is not None:
            assert frames[-1].passes[row] == want, f"row {row} with {m} masked took {frames[-1].passes[row]}"


# --- the registry and bad parameters -------------------------------------------------------------------


def test_registry_names():
    assert set(STRATEGIES) == {"sequential", "random", "topk", "top_prob", "top_margin", "eb", "threshold",
                               "mask_predict", "mi", "mi_exact", "learned", "learned_mi"}
    assert strategy_params("mi") == {"gamma": 1.0, "lam": 1.0, "relative": False, "estimator": None}  # mi_fn: set by code, not listed
    assert strategy_params("topk") == {"k": 1, "steps": None}


def test_make_strategy_converts_text():
    assert make_strategy("topk", k="4").k == 4
    assert make_strategy("topk", steps="7").steps == 7
    assert make_strategy("topk", steps="none").steps is None
    assert make_strategy("eb", gamma="0.25").gamma == 0.25
    assert make_strategy("top_prob", k="2", gumbel="1").gumbel == 1.0


@pytest.mark.parametrize("name, params, match", [
    ("topk", {"k": 0}, "k must be >= 1"),
    ("random", {"k": -2}, "k must be >= 1"),
    ("top_prob", {"steps": 0}, "steps must be >= 1"),
    ("topk", {"k": 2, "steps": 3}, "give k or steps, not both"),
    ("top_margin", {"gumbel": -1.0}, "gumbel must be a finite number >= 0"),
    ("eb", {"gamma": -0.1}, "gamma must be a finite number >= 0"),
    ("mi", {"gamma": -1.0}, "gamma must be a finite number >= 0"),
    ("mi", {"lam": -0.5}, "lam must be a finite number >= 0"),
    ("mi_exact", {"gamma": float("nan")}, "gamma must be a finite number >= 0"),
    ("mi_exact", {"eps": 1.0}, r"eps must be in \[0, 1\)"),
    ("mi_exact", {"max_batch": 0}, "max_batch must be >= 1"),
    ("threshold", {"tau": 0.0}, r"tau must be in \(0, 1\]"),
    ("threshold", {"tau": 1.5}, r"tau must be in \(0, 1\]"),
    ("mask_predict", {"steps": 0}, "steps must be >= 1"),
    ("topk", {"k": 2.5}, "k must be an integer, got 2.5"),
    ("topk", {"kk": 2}, "strategy 'topk' has no parameter 'kk'; it takes k, steps"),
    ("sequential", {"k": 2}, "has no parameter 'k'; it takes none"),
    ("topk", {"k": "four"}, "parameter k='four' is not a valid int"),
    ("mi", {"mi_fn": "estimator"}, "mi_fn is set by code"),
    ("nope", {}, "unknown sampler 'nope'"),
])
def test_bad_parameters(name, params, match):
    with pytest.raises(ValueError, match=match):
        make_strategy(name, **params)


def test_mi_needs_an_mi_source(tiny4):
    with pytest.raises(ValueError, match="strategy 'mi' has no MI source: give estimator=PATH"):
        decode_final(tiny4, tiny_batch(), make_strategy("mi", gamma=1.0, lam=1.0))
    bad = make_strategy("mi", mi_fn=lambda ctx: torch.zeros(3, 3))
    with pytest.raises(ValueError, match=r"mi_fn returned shape \(3, 3\), expected \(4, 16, 16\)"):
        decode_final(tiny4, tiny_batch(), bad)


def test_bad_decode_inputs(tiny4):
    with pytest.raises(ValueError, match="nothing to decode"):
        decode_final(tiny4, all_solutions4()[:2], make_strategy("sequential"))
    with pytest.raises(ValueError, match=r"tokens must be a \(B, N\) int64 tensor"):
        decode_final(tiny4, torch.zeros(16, dtype=torch.long), make_strategy("sequential"))
    with pytest.raises(ValueError, match="temperature must be >= 0"):
        decode_final(tiny4, tiny_batch(), make_strategy("sequential"), temperature=-1.0)
    with pytest.raises(RuntimeError, match="decoding with sequential did not finish within 2 steps"):
        decode_final(tiny4, tiny_batch(), make_strategy("sequential"), max_steps=2)


# --- invariants on every strategy ------------------------------------------------------------------------


@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize("name, params", CONFIGS, ids=IDS)
def test_invariants_tiny_model(tiny4, name, params, temperature):
    tokens = tiny_batch()
    frames = list(decode(tiny4, tokens, build(name, params), temperature=temperature, seed=3))
    check_trajectory(frames, tokens, name, params)


@pytest.mark.parametrize("name, params", CONFIGS, ids=IDS)
def test_invariants_oracle_solves_unique_puzzles(oracle, name, params):
    """With exact conditionals every strategy fills a unique puzzle with its solution."""
    tokens, solutions = unique4()
    frames = list(decode(oracle, tokens, build(name, params, exact_mi_fn), temperature=1.0, seed=1))
    check_trajectory(frames, tokens, name, params)
    assert torch.equal(frames[-1].tokens, solutions)


@pytest.mark.parametrize("name, params", CONFIGS, ids=IDS)
def test_same_seed_same_trajectory(tiny4, name, params):
    runs = [list(decode(tiny4, tiny_batch(), build(name, params), temperature=1.0, seed=7)) for _ in range(2)]
    assert len(runs[0]) == len(runs[1])
    for a, b in zip(*runs):
        assert torch.equal(a.tokens, b.tokens) and torch.equal(a.chosen, b.chosen)


def test_seed_matters_for_random_choices(tiny4):
    strategy = make_strategy("random", k=1)
    a, b = (decode_final(tiny4, tiny_batch(), strategy, temperature=1.0, seed=s).tokens for s in (0, 1))
    assert not torch.equal(a, b)


@pytest.mark.parametrize("name, params", [c for c in CONFIGS if c[0] not in ("random", "top_prob", "top_margin")],
                         ids=[i for i, c in zip(IDS, CONFIGS) if c[0] not in ("random", "top_prob", "top_margin")])
def test_batched_equals_one_at_a_time(oracle, name, params):
    tokens, _ = unique4()
    tokens = torch.cat([tokens, multi4()[2:4]])  # multi-solution states that stay consistent for all of these
    batched = decode_final(oracle, tokens, build(name, params, exact_mi_fn))
    for row in range(len(tokens)):
        single = decode_final(oracle, tokens[row:row + 1], build(name, params, exact_mi_fn))
        assert torch.equal(single.tokens[0], batched.tokens[row])
        assert single.passes[0] == batched.passes[row]


# --- each selection rule against a reference --------------------------------------------------------------


def reference_choice(name, params, entropy, probs, masked):
    """The positions rule ``name`` must pick in one row (indices, a set), written out plainly."""
    cand = [i for i in range(len(masked)) if masked[i]]
    if probs is not None:
        top = probs.max(-1).values.tolist()
        top2 = probs.topk(2, -1).values.tolist()
    by = {"sequential": lambda i: (entropy[i], i), "topk": lambda i: (entropy[i], i),
          "top_prob": lambda i: (-top[i], i), "top_margin": lambda i: (-(top2[i][0] - top2[i][1]), i)}
    if name in by:
        k = 1 if name == "sequential" else params["k"]
        return set(sorted(cand, key=by[name])[:k])
    if name == "threshold":
        return {i for i in cand if top[i] >= params["tau"]} | {min(cand, key=lambda i: (-top[i], i))}
    ranked = sorted(cand, key=lambda i: (entropy[i], i))
    limit = {"eb": lambda hs: sum(hs) - max(hs), "budget": sum}[name]
    return {i for j, i in enumerate(ranked)
            if j == 0 or limit([entropy[r] for r in ranked[: j + 1]]) <= params["gamma"]}


@pytest.mark.parametrize("name, params", [
    ("sequential", {}), ("topk", {"k": 3}), ("top_prob", {"k": 2}), ("top_margin", {"k": 3}),
    ("threshold", {"tau": 0.3}), ("eb", {"gamma": 0.8}), ("eb", {"gamma": 3.0}),
])
def test_selection_matches_reference(name, params):
    """On a model with spread-out marginals, each frame's choice is what the rule says."""
    torch.manual_seed(1)
    model = SudokuMDM(SudokuMDMConfig(box=2, d_model=32, n_layers=1, n_heads=2, d_ff=64))
    torch.nn.init.normal_(model.head.weight, std=2.0)  # make the marginals far from uniform
    model.eval()
    tokens = tiny_batch()[:3]
    before = tokens
    for frame in decode(model, tokens, make_strategy(name, **params)):
        for row in range(len(tokens)):
            masked = (before[row] == MASK_ID).tolist()
            if any(masked):
                want = reference_choice(name, params, frame.entropy[row].tolist(), frame.probs[row], masked)
                assert set(frame.chosen[row].nonzero()[:, 0].tolist()) == want
        before = frame.tokens


def test_sequential_equals_topk_1(tiny4):
    a = list(decode(tiny4, tiny_batch(), make_strategy("sequential"), temperature=1.0, seed=2))
    b = list(decode(tiny4, tiny_batch(), make_strategy("topk"), temperature=1.0, seed=2))
    assert all(torch.equal(x.chosen, y.chosen) and torch.equal(x.tokens, y.tokens) for x, y in zip(a, b))


def test_eb_info_is_the_budget_it_spent(tiny4):
    for frame in decode(tiny4, tiny_batch(), make_strategy("eb", gamma=2.0)):
        h = frame.entropy * frame.chosen
        assert torch.allclose(frame.info["entropy_sum"], h.sum(1))
        assert torch.allclose(frame.info["budget_spent"], h.sum(1) - h.amax(1))
        assert (frame.info["budget_spent"] <= 2.0 + 1e-6).all()


def test_mask_predict_schedule(tiny4):
    """T passes; after pass t, ceil(M (T - 1 - t) / T) of a row's M free cells are masked again."""
    tokens, steps = tiny_batch()[:3], 4
    free = (tokens == MASK_ID).sum(1)
    frames = list(decode(tiny4, tokens, make_strategy("mask_predict", steps=steps), temperature=1.0, seed=0))
    assert len(frames) == steps
    for t, frame in enumerate(frames):
        want = torch.div(free * (steps - 1 - t) + steps - 1, steps, rounding_mode="floor")
        assert torch.equal(frame.remasked.sum(1), want)
        assert torch.equal((frame.tokens == MASK_ID).sum(1), want)
        assert torch.equal(frame.chosen, frames[t - 1].tokens == MASK_ID if t else tokens == MASK_ID)


# --- the MI-guided rule -----------------------------------------------------------------------------------


def test_mi_greedy_by_hand():
    """H = (0.1, 0.2, 0.3), MI(0, 1) = 1, gamma = lam = 1: accept 0 (B = 0.9), defer 1 (cost 1.2),
    accept 2 (cost 0.3): spent 0.4, no MI among the chosen."""
    entropy = torch.tensor([[0.1, 0.2, 0.3]])
    mi = torch.zeros(1, 3, 3)
    mi[0, 0, 1] = mi[0, 1, 0] = 1.0
    chosen, spent, mi_spent = mi_greedy(entropy, mi, torch.ones(1, 3, dtype=torch.bool), 1.0, 1.0)
    assert chosen.tolist() == [[True, False, True]]
    assert spent.item() == pytest.approx(0.4) and mi_spent.item() == 0.0
    # the lowest-entropy position is accepted even over budget, and its entropy is charged
    everything = torch.ones(1, 2, dtype=torch.bool)
    chosen, spent, _ = mi_greedy(torch.tensor([[2.0, 0.5]]), torch.zeros(1, 2, 2), everything, 0.1, 1.0)
    assert chosen.tolist() == [[False, True]] and spent.item() == pytest.approx(0.5)


def test_mi_greedy_charges_mi_of_earlier_accepted():
    entropy = torch.tensor([[0.1, 0.2, 0.3, 0.4]])
    mi = torch.full((1, 4, 4), 0.05)
    chosen, spent, mi_spent = mi_greedy(entropy, mi, torch.ones(1, 4, dtype=torch.bool), 10.0, 2.0)
    assert chosen.all()
    assert mi_spent.item() == pytest.approx(0.05 * (0 + 1 + 2 + 3))  # each pays for those before it
    assert spent.item() == pytest.approx(1.0 + 2.0 * mi_spent.item())


def test_mi_lambda_zero_is_the_entropy_budget_rule(tiny4):
    """With lam = 0 the accepted set is the longest entropy-sorted prefix with sum H <= gamma (at least one)."""
    g = torch.Generator().manual_seed(0)
    for gamma in (0.0, 0.7, 2.5, 9.0):
        entropy = torch.rand(5, 16, generator=g) * 1.5
        masked = torch.rand(5, 16, generator=g) < 0.7
        mi = torch.rand(5, 16, 16, generator=g)
        chosen, _, _ = mi_greedy(entropy * masked, mi, masked, gamma, 0.0)
        for row in range(5):
            h = (entropy * masked)[row].tolist()
            want = reference_choice("budget", {"gamma": gamma}, h, None, masked[row].tolist())
            assert set(chosen[row].nonzero()[:, 0].tolist()) == want
    # and inside the loop, on a real decode
    before = tiny_batch()
    for frame in decode(tiny4, before, make_strategy("mi", gamma=2.0, lam=0.0, mi_fn=ones_mi_fn)):
        for row in range(len(before)):
            masked = (before[row] == MASK_ID).tolist()
            if any(masked):
                want = reference_choice("budget", {"gamma": 2.0}, frame.entropy[row].tolist(), None, masked)
                assert set(frame.chosen[row].nonzero()[:, 0].tolist()) == want
        before = frame.tokens


def test_mi_info(tiny4):
    strategy = make_strategy("mi", gamma=3.0, lam=2.0, mi_fn=ones_mi_fn)
    for frame in decode(tiny4, tiny_batch(), strategy):
        info = frame.info
        assert info["mi"].shape == (4, 16, 16)
        assert torch.allclose(info["entropy_spent"], (frame.entropy.double() * frame.chosen).sum(1))
        assert torch.allclose(info["budget_spent"], info["entropy_spent"] + 2.0 * info["mi_spent"])
        n = frame.chosen.sum(1).double()
        assert torch.allclose(info["mi_spent"], 0.05 * n * (n - 1) / 2)  # constant MI, every pair once


def test_mi_never_accepts_dependent_peers_on_the_oracle(oracle):
    """Two accepted cells i, j satisfy lam * MI(i, j) <= gamma; with a small budget and a large lam, no two
    peers (same row, column or box) with large exact MI are ever accepted together."""
    gamma, lam = 1.0, 10.0
    peers = torch.as_tensor(SUDOKU4.peers())
    states = multi4()
    strategy = make_strategy("mi", gamma=gamma, lam=lam, mi_fn=exact_mi_fn)
    blocked = multi_accepted = 0
    before = states
    for frame in decode(oracle, states, strategy):
        for row in range(len(states)):
            exact = exact_pair_mi(before[row])
            pair = frame.chosen[row][:, None] & frame.chosen[row][None, :]
            assert (exact[pair] <= gamma / lam + 1e-12).all()
            assert not (pair & peers & (exact > gamma / lam)).any()
            candidates = (before[row] == MASK_ID)[:, None] & (before[row] == MASK_ID)[None, :]
            blocked += int((candidates & peers & (exact > gamma / lam)).any())
            multi_accepted += int(frame.chosen[row].sum() > 1)
        before = frame.tokens
    assert blocked > 0 and multi_accepted > 0  # the check was not vacuous


def test_mi_exact_decodes_multi_solution_states_consistently(oracle):
    """Measured on these six states: MI-guided decoding with exact MI reaches a valid solution from each,
    while the entropy budget alone (lam = 0, same gamma) runs into a state no solution agrees with."""
    states = multi4()
    final = decode_final(oracle, states, make_strategy("mi", gamma=1.0, lam=10.0, mi_fn=exact_mi_fn))
    solutions = all_solutions4()
    assert all((solutions == row).all(1).any() for row in final.tokens)
    with pytest.raises(InconsistentStateError):
        decode_final(oracle, states, make_strategy("mi", gamma=2.0, lam=0.0, mi_fn=exact_mi_fn))


def test_mi_exact_uses_the_probe_and_counts_its_passes(oracle):
    states = multi4()[:3]
    via_probe = list(decode(oracle, states, make_strategy("mi_exact", gamma=1.0, lam=10.0)))
    via_oracle = list(decode(oracle, states, make_strategy("mi", gamma=1.0, lam=10.0, mi_fn=exact_mi_fn)))
    assert len(via_probe) == len(via_oracle)
    total = torch.zeros(3, dtype=torch.long)
    before = states
    for a, b in zip(via_probe, via_oracle):
        assert torch.equal(a.chosen, b.chosen)
        assert torch.allclose(a.info["mi"], b.info["mi"], atol=1e-9)  # the probe is exact on the oracle
        for row in range(3):
            active = bool((before[row] == MASK_ID).any())
            want = probe(oracle, before[row]).passes if active else 0
            assert a.info["probe_passes"][row] == want
        total += a.info["probe_passes"]
        assert torch.equal(a.extra_passes, total)
        assert torch.equal(a.passes, b.passes)  # probe passes are not decode passes
        before = a.tokens


def test_a_benchmark_reports_the_probe_passes_of_mi_exact(tmp_path):
    from mi_core.cli import main

    puzzles, out = tmp_path / "p.txt", tmp_path / "r.json"
    puzzles.write_text("..3..4...1....2.\n12.434.221434321\n")  # 4x4 puzzles with one solution each
    for sampler in ("mi_exact", "sequential"):
        assert main(["bench", "oracle4", "--puzzles", str(puzzles), "--sampler", sampler, "--json", str(out),
                     "--force"]) == 0
        row = json.loads(out.read_text())
        if sampler == "mi_exact":  # the probe's passes were dropped: only the decode passes were reported
            first = probe(Oracle4Model(), to_tokens(["..3..4...1....2."])[0]).passes
            assert row["mean_extra_passes"] >= first / 2 > 0
        else:
            assert "mean_extra_passes" not in row  # a strategy that spends none reports none


def test_mi_with_the_neural_estimator(tiny4):
    """``estimator_mi_fn`` plugs an estimator (hidden, probs, entropy, masked) -> (B, N, N) into ``mi``."""
    torch.manual_seed(0)
    estimator = MIEstimator(EstimatorConfig(d_in=32, n_values=4)).eval()
    strategy = make_strategy("mi", gamma=1.5, lam=1.0)
    strategy.mi_fn = estimator_mi_fn(estimator)
    tokens = tiny_batch()
    frames = list(decode(tiny4, tokens, strategy))
    check_trajectory(frames, tokens, "mi", {})
    assert frames[0].info["mi"].shape == (4, 16, 16) and (frames[0].info["mi"] >= 0).all()


def test_mi_loads_an_estimator_from_a_path(tiny4, tmp_path):
    torch.manual_seed(0)
    estimator = MIEstimator(EstimatorConfig(d_in=32, n_values=4)).eval()
    with torch.no_grad():  # a fresh head reads sigmoid(-6) min(H) whatever its weights: a loader could ignore them
        for p in estimator.parameters():
            p.normal_(0, 0.5)
    save_estimator(estimator, tmp_path / "est.safetensors")
    # a budget of about four cells' entropy, so that the MI decides how many go together
    strategy = make_strategy("mi", gamma="6", lam="5", estimator=str(tmp_path / "est.safetensors"))
    frames = list(decode(tiny4, tiny_batch(), strategy))
    direct = make_strategy("mi", gamma=6.0, lam=5.0, mi_fn=estimator_mi_fn(estimator))
    assert all(torch.equal(a.chosen, b.chosen) for a, b in zip(frames, decode(tiny4, tiny_batch(), direct)))
    fresh = make_strategy("mi", gamma=6.0, lam=5.0, mi_fn=estimator_mi_fn(MIEstimator(estimator.cfg).eval()))
    assert any(not torch.equal(a.chosen, b.chosen) for a, b in zip(frames, decode(tiny4, tiny_batch(), fresh)))
    missing = make_strategy("mi", estimator=str(tmp_path / "nope.safetensors"))
    with pytest.raises(ValueError, match="weights file not found"):
        decode_final(tiny4, tiny_batch(), missing)


# --- the real model -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_mdm():
    if not SHIPPED_MDM.is_file():
        pytest.skip(f"no trained Sudoku MDM at {SHIPPED_MDM}")
    return load_sudoku_mdm(SHIPPED_MDM)


def real_batch(blanks=(21, 14)):
    """9x9 puzzles with these numbers of blanks, and a fully given grid."""
    rows = [random_puzzle(81 - b, seed=i)[0] for i, b in enumerate(blanks)] + [random_puzzle(81, seed=1)[1]]
    return to_tokens(rows)


@pytest.mark.parametrize("name, params", CONFIGS, ids=IDS)
def test_invariants_real_model(real_mdm, name, params):
    tokens = real_batch((7,)) if name == "mi_exact" else real_batch()  # fewer blanks: cheaper probes
    mi_fn = estimator_mi_fn(MIEstimator(EstimatorConfig(d_in=real_mdm.cfg.d_model, n_values=9)).eval())
    strategy = build(name, params, mi_fn)
    runs = [list(decode(real_mdm, tokens, strategy, temperature=1.0, seed=4)) for _ in range(2)]
    check_trajectory(runs[0], tokens, name, params)
    assert all(torch.equal(a.tokens, b.tokens) for a, b in zip(*runs)) and len(runs[0]) == len(runs[1])


def test_relative_mi_charges_dependency_strength():
    from mi_core.decoding.mi_guided import mi_greedy, relative_mi

    entropy = torch.tensor([[0.01, 0.02, 0.5]])
    mi = torch.zeros(1, 3, 3, dtype=torch.float64)
    mi[0, 0, 1] = mi[0, 1, 0] = 0.009  # two confident cells sharing 90% of the smaller entropy
    rel = relative_mi(mi, entropy)
    assert rel[0, 0, 1].item() == pytest.approx(0.9) and rel[0, 0, 2].item() == 0.0
    masked = torch.ones(1, 3, dtype=torch.bool)
    plain, _, _ = mi_greedy(entropy, mi, masked, gamma=0.1, lam=1.0)
    strength, _, _ = mi_greedy(entropy, rel, masked, gamma=0.1, lam=1.0)
    assert plain[0].tolist() == [True, True, False]  # 0.01 + (0.02 + 0.009) fits the budget
    assert strength[0].tolist() == [True, False, False]  # 0.02 + 0.9 does not


# --- the vectorised MI-guided selection against recorded picks -----------------------------------------


def _reference_greedy(entropy, mi, masked, gamma, lam, relative=False):
    """The rule of the module docstring, one row and one cell at a time (plain Python); ``relative``: each MI
    as a share of the smaller of the two entropies (0 where that is below 1e-6), at most 1."""
    def charge(b, i, j):
        m, h = max(float(mi[b, i, j]), 0.0), min(float(entropy[b, i]), float(entropy[b, j]))
        return m if not relative else 0.0 if h < 1e-6 else min(m / h, 1.0)

    chosen = torch.zeros_like(masked)
    for b in range(masked.shape[0]):
        cells = sorted(masked[b].nonzero().flatten().tolist(), key=lambda i: (float(entropy[b, i]), i))
        budget, accepted = gamma, []
        for r, i in enumerate(cells):
            cost = float(entropy[b, i]) + lam * sum(charge(b, i, j) for j in accepted)
            if r == 0 or cost <= budget:
                accepted.append(i)
                budget -= cost
        chosen[b, accepted] = True
    return chosen


@pytest.mark.parametrize("domain", ["oracle", "sudoku"])
def test_mi_selection_matches_recorded_picks(domain):
    from tests import mi_greedy_cases as cases

    if domain == "sudoku" and not (cases.SUDOKU_MODEL.is_file() and cases.SUDOKU_ESTIMATOR.is_file()):
        pytest.skip("shipped Sudoku MDM or estimator not present")
    recorded = json.loads(cases.PICKS.read_text())[domain]
    inputs = cases.oracle_inputs() if domain == "oracle" else cases.sudoku_inputs()
    for g, lam, rel in cases.PARAMS:
        picks = cases.select(*inputs, g, lam, rel)
        assert [row.nonzero().flatten().tolist() for row in picks] == recorded[f"{g}/{lam}/{int(rel)}"], (g, lam, rel)
        assert torch.equal(picks, _reference_greedy(*inputs, g, lam, rel)), (g, lam, rel)


@pytest.mark.parametrize("scan", ["device", "cpu"])
def test_mi_selection_makes_no_host_sync(monkeypatch, scan):
    """Off the CPU the rule visits every rank and reads nothing back (emulated: a device's scan length, and
    every way of reading a tensor on the host refused); on the CPU it stops at the most masked cells of
    any row (a free read). Both give the reference picks."""
    import mi_core.decoding.mi_guided as mg
    from mi_core.decoding.mi_guided import mi_greedy
    from tests import mi_greedy_cases as cases

    entropy, mi, masked = cases.oracle_inputs(6)
    masked[:, -3:] = False  # fewer masked cells than N in every row: the two scans differ in length
    ref = _reference_greedy(entropy, mi, masked, 1.0, 2.0)
    if scan == "device":
        def refuse(*args, **kwargs):
            raise AssertionError("host read in the selection rule")

        monkeypatch.setattr(mg, "scan_length", lambda m: m.shape[1])
        for name in ("item", "tolist", "__bool__", "__int__", "__index__", "__float__", "numpy", "cpu"):
            monkeypatch.setattr(torch.Tensor, name, refuse)
    chosen, spent, mi_spent = mi_greedy(entropy, mi, masked, 1.0, 2.0)
    monkeypatch.undo()
    assert torch.equal(chosen, ref)


@pytest.mark.parametrize("name, params", CONFIGS, ids=IDS)
@pytest.mark.parametrize("every", [3, 8])
def test_checking_for_the_end_every_k_steps_gives_the_same_frames(tiny_mdm, name, params, every):
    tokens = real_batch((9, 4))
    strategy = build(name, params)
    ref = list(decode(tiny_mdm, tokens, strategy, temperature=1.0, seed=3, sync_every=1))
    got = list(decode(tiny_mdm, tokens, strategy, temperature=1.0, seed=3, sync_every=every))
    assert len(got) == len(ref)
    for a, b in zip(ref, got):
        assert a.step == b.step and torch.equal(a.tokens, b.tokens) and torch.equal(a.chosen, b.chosen)
        assert torch.equal(a.passes, b.passes) and torch.equal(a.extra_passes, b.extra_passes)
        assert torch.equal(a.remasked, b.remasked)


@pytest.mark.parametrize("every", [1, 3])
def test_a_cpu_decode_calls_the_model_only_on_rows_still_masked(tiny_mdm, every, monkeypatch):
    """After its last step a CPU decode called the model once more on a batch of no rows (no pass counted)."""
    sizes, forward = [], type(tiny_mdm).forward
    monkeypatch.setattr(type(tiny_mdm), "forward", lambda self, x, *a, **k: sizes.append(len(x)) or forward(self, x, *a, **k))
    tokens = real_batch((9, 4))
    frames = list(decode(tiny_mdm, tokens, make_strategy("topk", k=3), sync_every=every))
    assert min(sizes) > 0 and len(sizes) == len(frames) == int(frames[-1].passes.max())
    assert not (frames[-1].tokens == tiny_mdm.mask_id).any()


def test_sync_every_checks(oracle):
    with pytest.raises(ValueError, match="sync_every"):
        list(decode(oracle, tiny_batch(), make_strategy("sequential"), sync_every=0))
    with pytest.raises(RuntimeError, match="did not finish within 2 steps"):
        list(decode(oracle, tiny_batch(), make_strategy("sequential"), max_steps=2, sync_every=8))
    with pytest.raises(RuntimeError, match="did not finish within 0 steps"):
        list(decode(oracle, tiny_batch(), make_strategy("sequential"), max_steps=0))


def test_small_temperatures_sample_without_underflow():
    from mi_core.decoding.loop import _fill

    probs = torch.zeros(2, 3, 9)
    probs[0] = torch.softmax(torch.randn(3, 9, generator=torch.Generator().manual_seed(0)), -1)  # row 1: finished
    for temperature in (0.01, 0.05, 1.0):
        values = _fill(probs, temperature, torch.Generator().manual_seed(0))
        assert values.shape == (2, 3)
    assert (_fill(probs, 0.01, torch.Generator().manual_seed(0))[0] == probs[0].argmax(-1)).all()


@pytest.mark.parametrize("temperature", [1.0, 10.0, 100.0])
def test_a_value_of_probability_zero_is_never_drawn(temperature):
    """probs**(1/T) keeps 0 at 0 at any temperature; clamped to 1e-30 first, the ruled-out values here were drawn
    at T = 10 and 100."""
    from mi_core.decoding.loop import _fill

    probs = torch.tensor([0.5, 0.5 - 1e-35, 1e-35, 0.0, 0.0]).expand(4000, 5)
    values = _fill(probs, temperature, torch.Generator().manual_seed(0))
    assert not (values >= 3).any()
    assert (values == 1).any() and (values == 0).any()
