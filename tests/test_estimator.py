"""The neural MI estimator: invariants by construction, loss and metrics against hand-computed values, data
shards against the exact probe, a short training run that learns, the CLIs, and the shipped weights."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from mi_core.cli import main as cli_main
from mi_core.domains.sudoku import MASK_ID, SUDOKU4, parse_grid, to_tokens
from mi_core.domains.sudoku.mdm import save_sudoku_mdm
from mi_core.mi.estimator import (
    EstimatorConfig,
    EstimatorInputError,
    MIEstimator,
    estimate_mi,
    estimator_loss,
    load_estimator,
    mdm_features,
    pair_mask,
    save_estimator,
)
from mi_core.mi.fidelity import fidelity, pair_values, rule_recovery, topk_hits
from mi_core.mi.probe import probe
from mi_core.models.base import ModelFileError

# Two puzzles of kaggle_graded_dev.csv (CC0) with their solutions.
PUZZLES = [
    ("..........1..75..9..6...41...743...66....7...8.....3.....9..1.4......6...2.8.39.5",
     "389146752412375869576298413297431586643587291851629347768952134935714628124863975"),
    ("..9.7.1.....2.8...2...3...4.9.........8....311.6...52.....6327.....9.6...1...7.5.",
     "349675182761248395285931764597312846428756931136489527954163278872594613613827459"),
]
SHIPPED_MDM = Path("assets/sudoku_mdm.safetensors")
SHIPPED_ESTIMATOR = Path("assets/sudoku_mi_estimator.safetensors")
SHIPPED_MIN_SPEARMAN = 0.8  # pooled over masked x masked pairs of the fixed states below


def randomised(cfg: EstimatorConfig, seed: int = 0) -> MIEstimator:
    """An estimator whose every weight is random (the default zero-initialised output layer would make the
    prediction constant, which would hide asymmetry)."""
    torch.manual_seed(seed)
    est = MIEstimator(cfg)
    with torch.no_grad():
        for p in est.parameters():
            p.normal_(0, 0.5)
    return est.eval()


def random_inputs(b=3, n=12, d=8, v=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(b, n, d, generator=g)
    probs = torch.randn(b, n, v, generator=g).softmax(-1)
    masked = torch.rand(b, n, generator=g) < 0.6
    masked[:, :2] = True
    entropy = -(probs * probs.log()).sum(-1) * masked
    return hidden, probs, entropy, masked


@pytest.fixture
def small_cfg():
    return EstimatorConfig(d_in=8, n_values=5, n_positions=12, d_pos=4, d_node=16, d_proj=6, d_pair=8)


# --- the head: invariants by construction -------------------------------------------------------------


@pytest.mark.parametrize("bound", [True, False])
def test_symmetric_nonnegative_zero_on_given_and_diagonal(small_cfg, bound):
    est = randomised(EstimatorConfig(**{**small_cfg.__dict__, "bound": bound}))
    hidden, probs, entropy, masked = random_inputs()
    mi = est(hidden, probs, entropy, masked)
    assert mi.shape == (3, 12, 12) and mi.dtype == torch.float32
    assert torch.equal(mi, mi.transpose(1, 2))
    assert (mi >= 0).all()
    assert (mi[~pair_mask(masked)] == 0).all()
    assert (mi[pair_mask(masked)] > 0).all()  # random weights: every masked pair gets some MI
    if bound:
        h = entropy[:, :, None].minimum(entropy[:, None, :])
        assert (mi <= h + 1e-7).all()


def test_batched_equals_one_at_a_time_and_deterministic(small_cfg):
    est = randomised(small_cfg)
    inputs = random_inputs()
    whole = est(*inputs)
    for b in range(3):
        one = est(*(x[b : b + 1] for x in inputs))
        torch.testing.assert_close(one[0], whole[b], rtol=1e-5, atol=1e-7)
    assert torch.equal(est(*inputs), whole)


def test_config_validation():
    with pytest.raises(ValueError, match="d_in must be a positive integer"):
        EstimatorConfig(d_in=0, n_values=9)
    with pytest.raises(ValueError, match="n_values must be >= 2"):
        EstimatorConfig(d_in=8, n_values=1)
    with pytest.raises(ValueError, match="d_proj must be a positive integer"):
        EstimatorConfig(d_in=8, n_values=9, d_proj=2.5)
    with pytest.raises(ValueError, match="n_positions must be an integer >= 0"):
        EstimatorConfig(d_in=8, n_values=9, n_positions=-1)


def test_bad_input_shapes(small_cfg):
    est = randomised(small_cfg)
    hidden, probs, entropy, masked = random_inputs()
    with pytest.raises(EstimatorInputError, match=r"hidden must be \(B, N, 8\)"):
        est(hidden[..., :4], probs, entropy, masked)
    with pytest.raises(EstimatorInputError, match=r"probs must be \(3, 12, 5\)"):
        est(hidden, probs[..., :4], entropy, masked)
    with pytest.raises(EstimatorInputError, match="entropy must be"):
        est(hidden, probs, entropy[:, :5], masked)
    with pytest.raises(EstimatorInputError, match="masked must be a .* bool tensor"):
        est(hidden, probs, entropy, masked.float())
    with pytest.raises(EstimatorInputError, match="reads sequences of 12 positions, got 10"):
        est(hidden[:, :10], probs[:, :10], entropy[:, :10], masked[:, :10])


def test_without_position_embeddings_any_length_works(small_cfg):
    est = randomised(EstimatorConfig(**{**small_cfg.__dict__, "n_positions": 0}))
    assert est.pos is None
    hidden, probs, entropy, masked = random_inputs(n=7)
    mi = est(hidden, probs, entropy, masked)
    assert mi.shape == (3, 7, 7) and torch.equal(mi, mi.transpose(1, 2))


# --- one pass + head on an MDM ------------------------------------------------------------------------


@pytest.fixture
def tiny_estimator():
    """A random head that fits the ``tiny_mdm`` fixture (hidden size 32)."""
    return randomised(EstimatorConfig(d_in=32, n_values=9, n_positions=81, d_pos=4, d_node=16, d_proj=8, d_pair=8),
                      seed=1)


def test_estimate_mi_matches_decode_loop_features_and_probe_format(tiny_mdm, tiny_estimator):
    tokens = to_tokens([PUZZLES[0][0], "." * 81])
    est = estimate_mi(tiny_mdm, tiny_estimator, tokens)
    assert est.mi.shape == (2, 81, 81) and est.entropy.shape == (2, 81) and est.marginals.shape == (2, 81, 9)
    assert est.hidden.shape == (2, 81, 32) and est.seconds > 0
    given = tokens != MASK_ID
    assert (est.entropy[given] == 0).all() and (est.mi[0][given[0]] == 0).all()
    # given positions: one-hot of the digit, as probe() reports them
    digits = tokens[given] - 1
    assert torch.equal(est.marginals[given].argmax(-1), digits) and (est.marginals[given].sum(-1) == 1).all()
    # masked positions: the probe's marginals and entropies (same pass, float64 there)
    ref = probe(tiny_mdm, tokens[0], positions=[])
    masked = ~given[0]
    torch.testing.assert_close(est.marginals[0][masked].double(), ref.marginals[masked], atol=1e-6, rtol=0)
    torch.testing.assert_close(est.entropy[0].double(), ref.entropy, atol=1e-5, rtol=0)
    hidden, probs, entropy, m = mdm_features(tiny_mdm, tokens)
    assert torch.equal(est.mi, tiny_estimator(hidden, probs, entropy, m))
    assert torch.equal(estimate_mi(tiny_mdm, tiny_estimator, tokens).mi, est.mi)


def test_estimate_mi_rejects_unknown_tokens(tiny_mdm, tiny_estimator):
    tokens = torch.zeros(1, 81, dtype=torch.long)
    tokens[0, 3] = 11
    with pytest.raises(EstimatorInputError, match=r"unknown ids \[11\]"):
        estimate_mi(tiny_mdm, tiny_estimator, tokens)


def test_save_load_roundtrip(tmp_path, tiny_mdm, tiny_estimator):
    path = tmp_path / "est.safetensors"
    save_estimator(tiny_estimator, path, {"note": "test"})
    loaded = load_estimator(path, "cpu")
    assert loaded.cfg == tiny_estimator.cfg and not loaded.training
    tokens = to_tokens([PUZZLES[1][0]])
    assert torch.equal(estimate_mi(tiny_mdm, loaded, tokens).mi, estimate_mi(tiny_mdm, tiny_estimator, tokens).mi)
    assert json.loads(path.with_suffix(".json").read_text())["note"] == "test"
    with pytest.raises(ModelFileError, match="weights file not found"):
        load_estimator(tmp_path / "missing.safetensors")
    bad = tmp_path / "bad.safetensors"
    save_sudoku_mdm(tiny_mdm, bad)
    with pytest.raises(ModelFileError, match="is not an MI estimator: its config has .*does not take"):
        load_estimator(bad)


# --- loss and metrics ---------------------------------------------------------------------------------


def test_estimator_loss_values():
    masked = torch.tensor([[True, True, False]])
    target = torch.zeros(1, 3, 3)
    target[0, 0, 1] = target[0, 1, 0] = 0.5
    pred = torch.zeros(1, 3, 3)
    pred[0, 0, 1] = pred[0, 1, 0] = 0.25
    pred[0, 2, 0] = 9.0  # a given position: ignored
    assert estimator_loss(pred, target, masked, "mse").item() == pytest.approx(0.0625)
    assert estimator_loss(pred, target, masked, "log", floor=1e-5).item() == pytest.approx(
        np.log((0.25 + 1e-5) / (0.5 + 1e-5)) ** 2, rel=1e-5)
    sqrt_loss = estimator_loss(pred, target, masked, "sqrt", floor=0.0).item()
    assert sqrt_loss == pytest.approx((0.5 - 0.5**0.5) ** 2, rel=1e-5)
    with pytest.raises(ValueError, match="unknown estimator loss 'l1'"):
        estimator_loss(pred, target, masked, "l1")
    with pytest.raises(ValueError, match="no masked x masked pair"):
        estimator_loss(pred, target, torch.tensor([[True, False, False]]), "mse")


def test_fidelity_metrics_golden():
    masked = np.array([[True, True, True, False]])
    exact = np.zeros((1, 4, 4))
    for (i, j), v in {(0, 1): 0.5, (0, 2): 0.02, (1, 2): 0.001, (0, 3): 7.0}.items():
        exact[0, i, j] = exact[0, j, i] = v
    assert pair_values(exact[0], masked[0]).tolist() == [0.5, 0.02, 0.001]
    same_order = exact ** 2  # monotone: ranks agree
    f = fidelity(same_order, exact, masked, threshold=0.01)
    assert f["spearman"] == pytest.approx(1.0) and f["topk_precision"] == 1.0 and f["topk_k"] == 2
    rev = fidelity(-exact, exact, masked, threshold=0.01)
    assert rev["spearman"] == pytest.approx(-1.0) and rev["topk_precision"] == 0.5
    assert fidelity(exact, exact, masked)["mae"] == 0.0
    assert topk_hits(np.array([0.1, 0.3, 0.2]), np.array([0.0, 0.5, 0.0]), 0.01) == (1, 1)
    assert topk_hits(np.array([0.1, 0.3]), np.array([0.0, 0.0]), 0.01) == (0, 0)


def test_rule_recovery():
    peers = SUDOKU4.peers()
    masked = np.ones(16, dtype=bool)
    perfect = rule_recovery(peers * 0.5, masked, peers, threshold=0.1)
    assert perfect["rule_pairs"] == 16 * 7 // 2
    assert perfect["r_precision"] == 1.0 and perfect["precision"] == 1.0 and perfect["recall"] == 1.0
    anti = rule_recovery(~peers * 0.5 * (1 - np.eye(16)), masked, peers, threshold=0.1)
    assert anti["r_precision"] == 0.0 and anti["precision"] == 0.0 and anti["recall"] == 0.0
    none = rule_recovery(np.zeros((16, 16)), masked, peers, threshold=0.1)
    assert none["edges"] == 0 and np.isnan(none["precision"]) and none["recall"] == 0.0


# --- data: states, shards, resume ---------------------------------------------------------------------


def test_draw_states_sources(tiny_mdm):
    from mi_core.domain import check_mix
    from mi_core.domains.sudoku.states import SOURCES, draw_states

    puzzles = np.array([parse_grid(p) for p, _ in PUZZLES])
    solutions = np.array([parse_grid(s) for _, s in PUZZLES])
    rng = np.random.default_rng(0)
    tokens, source = draw_states(tiny_mdm, puzzles, solutions, 12, (1, 1, 1), rng, transform=False)
    assert tokens.shape == (12, 81) and set(source.tolist()) == {0, 1, 2}
    for t, s in zip(tokens, source):
        assert (t == 0).sum() >= 2
        match = [k for k in range(2) if (puzzles[k][puzzles[k] > 0] == t[puzzles[k] > 0]).all()]
        if s == 0:  # a masked solution
            assert any((solutions[k][t > 0] == t[t > 0]).all() for k in range(2))
        elif s == 1:  # a clue pattern, exactly
            assert any((puzzles[k] == t).all() for k in range(2))
        else:  # a decoding state: the givens are kept and some blanks are filled
            assert match and (t > 0).sum() > (puzzles[match[0]] > 0).sum()
    again, _ = draw_states(tiny_mdm, puzzles, solutions, 12, (1, 1, 1), np.random.default_rng(0),
                           transform=False)
    assert np.array_equal(tokens, again)
    for bad in ("1,2", "0,0,0", "1,-1,1", "1,nan,1", "a,b,c", (1, 2)):
        with pytest.raises(ValueError, match=r"--mix expects three weights >= 0, not all 0 \(uniform,puzzle,decode\)"):
            check_mix(bad, SOURCES)
    with pytest.raises(ValueError, match="--mix expects three weights"):
        draw_states(tiny_mdm, puzzles, solutions, 12, (0, 0, 0), rng, transform=False)


def test_held_out_states_draw_each_puzzle_once(tiny_mdm, tmp_path):
    from mi_core.domains.sudoku.states import HeldOutPuzzles, distinct_picks

    path = tmp_path / "held.txt"
    path.write_text("".join(p + "\n" for p, _ in PUZZLES))
    held = HeldOutPuzzles(path, None, (0, 1, 0))  # clue patterns only: a repeated puzzle is a repeated state
    for seed in range(6):  # with replacement, two draws from two puzzles repeat one half the time
        tokens, _ = held.draw(tiny_mdm, np.random.default_rng(seed), 2, "cpu")
        assert not np.array_equal(tokens[0], tokens[1]), seed
    unsolvable = tmp_path / "unsolvable.txt"  # a 2 in the corner clashes with no clue, yet leaves no solution
    unsolvable.write_text(PUZZLES[0][0] + "\n2" + PUZZLES[0][0][1:] + "\n")
    with pytest.raises(ValueError, match=r"unsolvable.txt: puzzle on line 2 has no solution"):  # the file unnamed
        HeldOutPuzzles(unsolvable, None, (1, 1, 1))
    rng = np.random.default_rng(1)
    pick = distinct_picks(np.array([4, 4, 7, 4, 1]), 9, rng)
    assert pick[[0, 2, 4]].tolist() == [4, 7, 1] and len(set(pick.tolist())) == 5 and pick.max() < 9
    assert distinct_picks(np.array([0, 1, 0, 1, 0]), 2, rng).tolist() == [0, 1, 0, 1, 0]  # more draws than puzzles
    kept = np.array([3, 0, 8])
    state = np.random.default_rng(5).bit_generator.state
    rng = np.random.default_rng(5)
    assert distinct_picks(kept, 9, rng) is kept and rng.bit_generator.state == state  # nothing drawn


@pytest.fixture
def tiny_data(tmp_path, tiny_mdm):
    from mi_core.domains.sudoku.states import DataConfig
    from mi_core.train.estimator_data import run

    model_path = tmp_path / "mdm.safetensors"
    save_sudoku_mdm(tiny_mdm, model_path)
    cfg = DataConfig(seed=3, states=5, shard_size=2, pool=3, eps=0.0, mix=(1, 1, 1))
    out = tmp_path / "data"
    summary = run(tiny_mdm, model_path, cfg, out, "cpu", log=lambda m: None)
    return out, cfg, model_path, summary


def test_more_states_grow_a_finished_run_as_if_it_had_asked_for_them(tiny_data, tiny_mdm, tmp_path):
    """`make-estimator-data --states 8` into a finished run of 5 was refused as "a different config": 45 min of a
    400-state probe could not be extended. It grows: the whole shards are kept, the partial last one is kept aside
    and written whole, and the data equal a fresh run of 8; fewer states are still refused."""
    from mi_core.domains.sudoku.states import DataConfig
    from mi_core.train.estimator_data import load_shards, run

    out, cfg, model_path, _ = tiny_data
    kept = {i: (out / f"shard_0000{i}.safetensors").read_bytes() for i in (0, 1)}
    more = DataConfig(**{**cfg.__dict__, "states": 8})
    logged = []
    assert run(tiny_mdm, model_path, more, out, "cpu", log=logged.append)["states"] == 8
    assert all((out / f"shard_0000{i}.safetensors").read_bytes() == kept[i] for i in (0, 1))
    assert (out / "shard_00002.partial").is_file() and any("growing from 5 to 8 states" in m for m in logged)
    fresh = run(tiny_mdm, model_path, more, tmp_path / "fresh", "cpu", log=lambda m: None)
    grown, manifest = load_shards(out)
    assert manifest["config"]["states"] == 8 and "--states 8" in manifest["command"]
    assert torch.equal(grown["tokens"], load_shards(tmp_path / "fresh")[0]["tokens"]) and fresh["states"] == 8
    # fewer states: each differing option named (it was both configs printed whole, "a different config")
    with pytest.raises(ValueError, match=r"holds shards of other settings: --states 8 there, 6 asked; use a new "
                                         "--out, the same settings"):
        run(tiny_mdm, model_path, DataConfig(**{**cfg.__dict__, "states": 6}), out, "cpu", log=lambda m: None)
    with pytest.raises(ValueError, match=r"--seed \d+ there, 4 asked"):  # more states and another seed
        run(tiny_mdm, model_path, DataConfig(**{**cfg.__dict__, "states": 9, "seed": 4}), out, "cpu", log=print)


def test_shards_hold_exact_probe_and_resume(tiny_data, tiny_mdm, monkeypatch):
    from mi_core.cli import parse
    from mi_core.domains.sudoku.states import DataConfig
    from mi_core.train.estimator_data import config_from_args, load_shards, run

    out, cfg, model_path, summary = tiny_data
    assert sorted(p.name for p in out.glob("shard_*")) == [f"shard_0000{i}.safetensors" for i in range(3)]
    data, manifest = load_shards(out)
    assert summary["states"] == 5 and manifest["config"]["eps"] == 0.0
    args = parse(manifest["command"].split()[3:])[1]  # the recorded command gives this config
    assert config_from_args(args) == cfg and args.model == model_path and args.out == out
    assert data["mi"].shape == (5, 81, 81) and data["hidden"].shape == (5, 81, 32)
    assert data["masked"].dtype == torch.bool
    for s in (0, 4):  # the stored target is the exact probe's MI of the stored tokens
        ref = probe(tiny_mdm, data["tokens"][s])
        torch.testing.assert_close(data["mi"][s], ref.mi.float(), rtol=1e-5, atol=1e-8)
        assert data["passes"][s] == ref.passes
    hidden, probs, entropy, masked = mdm_features(tiny_mdm, data["tokens"])
    for key, value in {"hidden": hidden, "probs": probs, "entropy": entropy}.items():
        torch.testing.assert_close(data[key], value)
    assert torch.equal(data["masked"], masked)
    # resume: everything is on disk, so no probe runs; a removed shard is rewritten identically
    monkeypatch.setattr("mi_core.train.estimator_data.probe_by_length", lambda *a, **k: pytest.fail("probe ran on resume"))
    assert run(tiny_mdm, model_path, cfg, out, "cpu", log=lambda m: None)["states"] == 5
    monkeypatch.undo()
    before = load_file(out / "shard_00001.safetensors")
    (out / "shard_00001.safetensors").unlink()
    run(tiny_mdm, model_path, cfg, out, "cpu", log=lambda m: None)
    after = load_file(out / "shard_00001.safetensors")
    assert all(torch.equal(before[k], after[k]) for k in before if k != "seconds")
    with pytest.raises(ValueError, match="holds shards of other settings: --seed"):
        run(tiny_mdm, model_path, DataConfig(**{**cfg.__dict__, "seed": 4}), out, "cpu", log=lambda m: None)
    faster = DataConfig(**{**cfg.__dict__, "max_batch": cfg.max_batch + 7})  # how fast, not what: it resumes
    assert run(tiny_mdm, model_path, faster, out, "cpu", log=lambda m: None)["states"] == 5
    # a shard cut short: loading it names the file; a resume keeps it aside and writes it again
    (out / "shard_00002.safetensors").write_bytes((out / "shard_00002.safetensors").read_bytes()[:100])
    with pytest.raises(ValueError, match=r"shard_00002.safetensors is damaged .*writes it again"):
        load_shards(out)
    logged = []
    assert run(tiny_mdm, model_path, cfg, out, "cpu", log=logged.append)["states"] == 5
    assert (out / "shard_00002.damaged").is_file() and any("was damaged" in m for m in logged)
    # a folder written before the mix was a tuple recorded it by name: the same settings resume it
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["config"]["mix"] = {"uniform": 1.0, "puzzle": 1.0, "decode": 1.0}
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert run(tiny_mdm, model_path, cfg, out, "cpu", log=lambda m: None)["states"] == 5


def test_shards_that_do_not_fit_are_named_not_a_traceback(tiny_data, tmp_path, capsys):
    """A folder holding a shard of another model (another hidden size), a shard missing a tensor, or a manifest
    without the model it was probed on: load_shards names the file (a ValueError), so train-estimator prints one
    error line, with no traceback, and writes nothing."""
    import shutil

    from safetensors.torch import save_file

    from mi_core.train.estimator_data import load_shards

    out = tiny_data[0]

    def variant(name, edit):
        folder = tmp_path / name
        shutil.copytree(out, folder)
        edit(folder)
        return folder

    def wider(folder):  # the shard of a model with hidden size 48 beside shards of hidden size 32
        shard = load_file(folder / "shard_00001.safetensors")
        shard["hidden"] = torch.zeros(*shard["hidden"].shape[:2], 48)
        save_file(shard, folder / "shard_00001.safetensors")

    def without_probs(folder):
        shard = load_file(folder / "shard_00002.safetensors")
        del shard["probs"]
        save_file(shard, folder / "shard_00002.safetensors")

    def without_model(folder):
        manifest = json.loads((folder / "manifest.json").read_text())
        del manifest["model_sha256"]
        (folder / "manifest.json").write_text(json.dumps(manifest))

    cases = {"wide": (wider, r"shard_00001.safetensors does not fit shard_00000.safetensors: its hidden is "
                             r"\(81, 48\) a state, there \(81, 32\)"),
             "noprobs": (without_probs, r"shard_00002.safetensors is not a shard of estimator data: it has no probs"),
             "nosha": (without_model, r"manifest.json is not the manifest of estimator data: it has no model_sha256")}
    for name, (edit, message) in cases.items():
        folder = variant(name, edit)
        with pytest.raises(ValueError, match=message):
            load_shards(folder)
        weights = tmp_path / f"{name}.safetensors"
        capsys.readouterr()
        assert cli_main(["train-estimator", "--data", str(folder), "--out", str(weights), "--steps", "1",
                         "--variants", "log:bound"]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and err.count("error:") == 1 and err.startswith("error: ")
        assert not weights.exists() and not weights.with_suffix(".json").exists()


def test_load_shards_errors(tmp_path):
    from mi_core.domains.sudoku.states import DataConfig
    from mi_core.train.estimator_data import load_shards

    with pytest.raises(FileNotFoundError, match="missing manifest.json"):
        load_shards(tmp_path)
    with pytest.raises(ValueError, match="eps: -1.0 is outside the accepted range 0..1"):
        DataConfig(eps=-1.0)


def test_a_run_stopped_before_its_first_shard_does_not_lock_its_folder(tiny_data, tiny_mdm, tmp_path):
    """A run that fails before writing a shard (here: a bad --fasta, a bad --eps of an older version) leaves only
    its manifest; the corrected command into the same --out used to be refused ("holds shards of a different
    config") though the folder held no shard. Now the new settings replace that manifest; a folder holding shards
    of other settings is still refused."""
    from mi_core.domains.sudoku.states import DataConfig
    from mi_core.train.estimator_data import run, write_manifest

    out, cfg, model_path, _ = tiny_data
    empty = tmp_path / "stopped"
    failed = DataConfig(**{**cfg.__dict__, "pool": 7})
    write_manifest(empty, failed, model_path, tiny_mdm, "cmd", failed.sources, "sudoku9")  # as a failed run leaves it
    small = DataConfig(**{**cfg.__dict__, "states": 2})
    assert run(tiny_mdm, model_path, small, empty, "cpu", log=lambda m: None)["states"] == 2
    assert json.loads((empty / "manifest.json").read_text())["config"]["states"] == 2
    with pytest.raises(ValueError, match="holds shards of other settings"):
        run(tiny_mdm, model_path, failed, out, "cpu", log=lambda m: None)


def test_make_estimator_data_refuses_a_folder_another_run_is_filling(tmp_path, model_path, capsys):
    """Two runs into one new --out (other models, other --eps), the second begun before the first wrote its manifest,
    both ran to the end: the folder held shards of both under the second's manifest, and train-estimator trained
    on them."""
    import os

    out = tmp_path / "data"
    out.mkdir()
    (out / "make-estimator-data.lock").write_text(str(os.getpid()))  # a run in progress: this process
    assert cli_main(["make-estimator-data", "sudoku", "--model", str(model_path), "--out", str(out), "--states", "2",
                     "--shard-size", "2", "--pool", "3", "--threads", "1", "--device", "cpu"]) == 2
    assert f"another run (process {os.getpid()}) is writing it" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["make-estimator-data.lock"]


def test_shards_without_a_manifest_are_not_taken_for_this_runs(tiny_data, tiny_mdm, tmp_path, capsys):
    """Shards in --out with no manifest.json (it was removed, or the shards copied in) were taken as this run's:
    'N of N shards already written', and a manifest of the new settings (another seed, another model) written over
    data probed with others. Now make-estimator-data refuses, in one error line, and writes nothing."""
    import shutil

    from mi_core.domains.sudoku.states import DataConfig
    from mi_core.train.estimator_data import run

    out, cfg, model_path, _ = tiny_data
    orphans = tmp_path / "orphans"
    shutil.copytree(out, orphans)
    (orphans / "manifest.json").unlink()
    before = sorted(p.name for p in orphans.iterdir())
    with pytest.raises(ValueError, match=r"holds 3 shards but no manifest.json"):
        run(tiny_mdm, model_path, DataConfig(**{**cfg.__dict__, "seed": 4}), orphans, "cpu", log=lambda m: None)
    capsys.readouterr()
    assert cli_main(["make-estimator-data", "sudoku", "--model", str(model_path), "--out", str(orphans),
                     "--states", "5", "--shard-size", "2", "--pool", "3", "--threads", "1", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("error:") == 1 and "holds 3 shards but no manifest.json" in err
    assert sorted(p.name for p in orphans.iterdir()) == before


@pytest.mark.parametrize("argv", [["make-estimator-data", "sudoku"], ["eval-estimator", "sudoku", "--puzzles", "p.txt"],
                                  ["bench-probe"]])
def test_a_pruning_threshold_of_one_is_refused_before_any_work(argv, tmp_path, capsys):
    """--eps 1 was inside the range 0..1 these commands state, but the probe takes eps < 1: make-estimator-data
    built its puzzle pool (29 s at the default --pool) and wrote a manifest before failing, eval-estimator drew and
    decoded its states, bench-probe ran its throughput sweep. Now the parser refuses it, as probe's does."""
    out = tmp_path / "out"
    capsys.readouterr()
    assert cli_main([*argv, "--out" if argv[0] == "make-estimator-data" else "--json", str(out), "--eps", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "--eps: 1 would skip every value; give a probability under 1" in err
    assert not out.exists()

# --- training -----------------------------------------------------------------------------------------


def oracle4_data(n: int, seed: int) -> dict[str, torch.Tensor]:
    """States of the exact 4x4 oracle with their exact MI (the oracle's hidden features carry no position:
    the estimator's position embeddings must learn which cells interact)."""
    from mi_core.domains.oracle4 import Oracle4Model, all_solutions4, exact_pair_mi

    g = torch.Generator().manual_seed(seed)
    sols = all_solutions4()
    mask = torch.rand(n, 16, generator=g) < torch.rand(n, 1, generator=g)
    mask[:, :2] = True
    tokens = torch.where(mask, MASK_ID, sols[torch.randint(len(sols), (n,), generator=g)])
    hidden, probs, entropy, masked = mdm_features(Oracle4Model(), tokens)
    return {"hidden": hidden, "probs": probs, "entropy": entropy, "masked": masked,
            "mi": torch.stack([exact_pair_mi(t) for t in tokens]).float()}


def test_training_learns_exact_4x4_mi():
    """250 steps on 120 states of the exact 4x4 oracle. The unbounded head starts from a constant (no ranking
    at all); with ``bound=True`` the untrained head would already rank pairs by min(H_i, H_j), which here
    gives Spearman 0.82 and would make the ranking check meaningless."""
    from mi_core.train.estimator import TrainConfig, batch_of, predict, split, train_one

    data = oracle4_data(160, seed=0)
    train_idx, val_idx = split(160, 0.25, seed=0)
    est_cfg = EstimatorConfig(d_in=9, n_values=4, n_positions=16, d_pos=8, d_node=32, d_proj=16, d_pair=16,
                              bound=False)
    cfg = TrainConfig(loss="log", floor=1e-3, steps=250, batch=16, eval_every=50, lr=3e-3, warmup=10)

    def train_loss(est):
        hidden, probs, entropy, masked, mi = batch_of(data, train_idx)
        with torch.no_grad():
            return estimator_loss(est(hidden, probs, entropy, masked), mi, masked, "log", cfg.floor).item()

    torch.manual_seed(cfg.seed)
    untrained = MIEstimator(est_cfg)
    start = train_loss(untrained)
    assert np.ptp(pair_values(predict(untrained, data, val_idx)[0], data["masked"][val_idx[0]].numpy())) == 0
    est, record = train_one(est_cfg, cfg, data, train_idx, val_idx, log=lambda m: None)
    assert train_loss(est) < 0.5 * start  # measured: 10.4 -> 2.7
    f = fidelity(predict(est, data, val_idx), data["mi"][val_idx].double().numpy(), data["masked"][val_idx].numpy())
    assert f["spearman"] > 0.7 and record["best_val_spearman"] == pytest.approx(f["spearman"])  # measured: 0.77


def test_training_is_deterministic():
    from mi_core.train.estimator import TrainConfig, split, train_one

    data = oracle4_data(20, seed=1)
    train_idx, val_idx = split(20, 0.25, seed=0)
    est_cfg = EstimatorConfig(d_in=9, n_values=4, n_positions=16, d_node=8, d_proj=4, d_pair=4)
    cfg = TrainConfig(steps=10, batch=4, eval_every=5, warmup=2)
    a, rec_a = train_one(est_cfg, cfg, data, train_idx, val_idx, log=lambda m: None)
    b, rec_b = train_one(est_cfg, cfg, data, train_idx, val_idx, log=lambda m: None)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert [p["train_loss"] for p in rec_a["curve"]] == [p["train_loss"] for p in rec_b["curve"]]


def test_train_config_and_variants_validation():
    from mi_core.train.estimator import TrainConfig, parse_variants, split

    variants = parse_variants("log:bound,mse:free,sqrt:free:nopos")
    assert [(v.loss, v.bound, v.positions) for v in variants] == [("log", True, True), ("mse", False, True),
                                                                  ("sqrt", False, False)]
    assert [str(v) for v in variants] == ["log:bound", "mse:free", "sqrt:free:nopos"]
    (rules,) = parse_variants("log:free:nopos:rules")
    assert (rules.rules, rules.positions, str(rules)) == (True, False, "log:free:nopos:rules")
    for bad in ("log:maybe", "l1:free", "log:free:pos", "log", "log:free:rules:rules"):
        with pytest.raises(ValueError, match="a variant is LOSS:bound or LOSS:free"):
            parse_variants(bad)
    with pytest.raises(ValueError, match="unknown loss 'huber'"):
        TrainConfig(loss="huber")
    with pytest.raises(ValueError, match=r"val_frac: 1.0 is outside the accepted range 1e-06..0.999999"):
        TrainConfig(val_frac=1.0)
    with pytest.raises(ValueError, match="need at least 2 states"):
        split(1, 0.2, 0)
    train, val = split(10, 0.2, 0)
    assert len(val) == 2 and sorted(np.concatenate([train, val]).tolist()) == list(range(10))


# --- command lines ------------------------------------------------------------------------------------


def test_train_estimator_cli(tiny_data, tmp_path):
    out, _, model_path, _ = tiny_data
    weights = tmp_path / "est.safetensors"
    assert cli_main(["train-estimator", "--data", str(out), "--out", str(weights), "--steps", "6", "--batch", "2",
                     "--eval-every", "3", "--val-frac", "0.4", "--variants", "log:bound,mse:free:nopos"]) == 0
    meta = json.loads(weights.with_suffix(".json").read_text())
    assert meta["config"]["d_in"] == 32 and meta["data"]["states"] == 5 and len(meta["variants"]) == 2
    assert meta["mdm"] == str(model_path) and meta["chosen"] in ("log:bound", "mse:free:nopos")
    cfg = load_estimator(weights).cfg
    assert (cfg.bound, cfg.n_positions) == ((True, 81) if meta["chosen"] == "log:bound" else (False, 0))
    assert meta["variants"][1]["params"] < meta["variants"][0]["params"]  # no position table
    from mi_core.bench.estimator import training_markdown, training_summary
    from mi_core.models.base import load_meta

    text = "\n".join(training_markdown(training_summary(load_meta(weights))))
    assert "Training data: 5 states" in text and "make-estimator-data sudoku" in text and "--variants" in text
    assert "| log:bound |" in text and "| mse:free:nopos |" in text and f"kept: **{meta['chosen']}**" in text
    assert "the exact probe took" in text  # the tiny data was probed exactly (eps 0)


def test_train_estimator_says_when_the_data_is_unfinished(tiny_data, tmp_path, capsys):
    """A make-estimator-data run stopped early leaves fewer shards than its manifest plans: training on them says
    so, with the command that resumes the data."""
    import shutil

    out, _, _, _ = tiny_data
    part = tmp_path / "part"
    shutil.copytree(out, part)
    (part / "shard_00002.safetensors").unlink()  # 4 of the 5 states
    weights = tmp_path / "est.safetensors"
    assert cli_main(["train-estimator", "--data", str(part), "--out", str(weights), "--steps", "2", "--batch", "2",
                     "--eval-every", "2", "--val-frac", "0.5", "--variants", "log:free"]) == 0
    err = capsys.readouterr().err
    assert f"warning: {part} holds 4 of the 5 states its make-estimator-data run planned" in err
    assert "make-estimator-data sudoku" in err
    assert cli_main(["train-estimator", "--data", str(out), "--out", str(weights), "--steps", "2", "--batch", "2",
                     "--eval-every", "2", "--val-frac", "0.5", "--variants", "log:free", "--force"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_training_markdown_says_when_the_targets_came_from_a_pruned_probe():
    from mi_core.bench.estimator import training_markdown, training_summary

    meta = {"data": {"states": 3, "passes": 10, "probe_seconds": 1.0, "config": {"eps": 1e-4}},
            "variants": [{"variant": "log:free", "val_spearman": 0.9, "params": 5, "seconds": 1.0, "val": {}}],
            "command": "train", "chosen": "log:free", "train_states": 2, "val_states": 1}
    text = "\n".join(training_markdown(training_summary(meta)))
    assert "the probe, pruned at eps 0.0001, took 10 passes" in text and "exact probe" not in text


def test_rules_feature_is_trained_saved_and_read(tiny_data, tmp_path, small_cfg):
    """A ``:rules`` variant gets the domain's table (Sudoku: the 20 peers of each cell), keeps it through save and
    load, and its prediction depends on it; it needs a fixed length."""
    out, _, _, _ = tiny_data
    weights = tmp_path / "est.safetensors"
    assert cli_main(["train-estimator", "--data", str(out), "--out", str(weights), "--steps", "4", "--batch", "2",
                     "--eval-every", "2", "--val-frac", "0.4", "--variants", "log:free:rules"]) == 0
    est = load_estimator(weights)
    assert est.cfg.rules and est.rule_pairs.shape == (81, 81)
    assert est.rule_pairs.sum() == 81 * 20 and est.rule_pairs[0, 1] == 1 and est.rule_pairs[0, 40] == 0
    est = randomised(replace(small_cfg, rules=True, bound=False))  # unbounded: a saturated sigmoid hides it
    inputs = random_inputs()
    before = est(*inputs)
    with torch.no_grad():
        est.rule_pairs[0, 1] = est.rule_pairs[1, 0] = 1.0
    after = est(*inputs)
    assert not torch.allclose(before[:, 0, 1], after[:, 0, 1]) and torch.allclose(before[:, 2:, 2:], after[:, 2:, 2:])
    with pytest.raises(ValueError, match="rules needs a fixed length"):
        EstimatorConfig(d_in=8, n_values=5, rules=True)
    from mi_core.train.estimator import TrainConfig, train_one

    for table in (None, np.zeros((3, 3))):
        with pytest.raises(ValueError, match=r"needs the domain's \(12, 12\) rules table"):
            train_one(replace(small_cfg, rules=True), TrainConfig(steps=1), {"hidden": torch.zeros(1)}, [0], [0],
                      rules=table)


def test_estimate_and_eval_cli(tmp_path, tiny_mdm, tiny_estimator, capsys):
    model_path, est_path = tmp_path / "mdm.safetensors", tmp_path / "est.safetensors"
    save_sudoku_mdm(tiny_mdm, model_path)
    save_estimator(tiny_estimator, est_path)
    out = tmp_path / "estimate.json"
    assert cli_main(["estimate", "sudoku", "--puzzle", PUZZLES[0][0], "--json", str(out), "--model", str(model_path),
                     "--estimator", str(est_path), "--device", "cpu"]) == 0
    res = json.loads(out.read_text())
    assert np.array(res["mi"]).shape == (81, 81) and np.array(res["marginals"]).shape == (81, 9)
    assert len(res["entropy"]) == 81 and res["passes"] == 1 and res["seconds"] > 0
    assert cli_main(["estimate", "sudoku", "--puzzle", "11" + "." * 79, "--model", str(model_path),
                     "--estimator", str(est_path)]) == 2
    assert "digit 1 appears twice in row 1" in capsys.readouterr().err

    puzzles = tmp_path / "p.csv"
    puzzles.write_text("puzzle,solution\n" + "".join(f"{p},{s}\n" for p, s in PUZZLES))
    bench = tmp_path / "BENCH.md"
    bench.write_text("# Benchmarks\n\n<!-- eval-estimator:start -->\nold\n<!-- eval-estimator:end -->\n"
                     "\n## other\nkeep\n")
    out = tmp_path / "eval.json"
    args = ["eval-estimator", "sudoku", "--puzzles", str(puzzles), "--states", "3", "--json", str(out), "--model",
            str(model_path), "--estimator", str(est_path), "--markdown", str(bench), "--device", "cpu"]
    capsys.readouterr()
    assert cli_main(args) == 0
    said = capsys.readouterr().err
    res = json.loads(out.read_text())
    # the cost is said before the slow part, whose time is said after it
    assert "model passes at most" in said and said.index("exact probe of 3 states:") < said.index(" s, estimator ")
    for key in ("n_states", "spearman", "spearman_median", "pearson", "mae", "topk_precision", "estimator_seconds",
                "exact_seconds", "speedup", "speedup_median", "by_mask_ratio", "by_source", "rules"):
        assert key in res
    assert res["n_states"] == 3 and res["speedup"] == pytest.approx(res["exact_seconds"] / res["estimator_seconds"])
    assert res["rules"]["all masked"]["exact"]["rule_pairs"] == 810
    text = bench.read_text()
    assert text.count("<!-- eval-estimator:start -->") == 1 and "old" not in text and text.endswith("## other\nkeep\n")
    assert "Spearman" in text and "warm-up calls excluded" in text and res["timed_states"] == 3
    assert cli_main([*args[:5], "0", *args[6:]]) == 2


# --- the shipped estimator ----------------------------------------------------------------------------


@pytest.mark.slow  # 6 s on one CPU thread; .ci/run runs it with -m slow
@pytest.mark.skipif(not (SHIPPED_MDM.is_file() and SHIPPED_ESTIMATOR.is_file()),
                    reason="shipped MDM or estimator weights not present")
def test_shipped_estimator_correlates_with_exact_probe():
    """On fixed states (a clue pattern, two half-masked solutions) the shipped estimator ranks masked x masked
    pairs like the exact probe: pooled Spearman >= SHIPPED_MIN_SPEARMAN."""
    from mi_core.domains.sudoku.mdm import load_sudoku_mdm

    model = load_sudoku_mdm(SHIPPED_MDM)
    estimator = load_estimator(SHIPPED_ESTIMATOR)
    rng = np.random.default_rng(0)
    states = [parse_grid(PUZZLES[0][0])]
    for _, solution in PUZZLES:
        states.append(np.where(rng.random(81) < 0.5, MASK_ID, parse_grid(solution)).tolist())
    tokens = torch.tensor(states)
    exact = np.stack([probe(model, t).mi.numpy() for t in tokens])
    pred = estimate_mi(model, estimator, tokens).mi.double().numpy()
    f = fidelity(pred, exact, (tokens == MASK_ID).numpy())
    assert f["spearman"] >= SHIPPED_MIN_SPEARMAN, f


def test_estimator_runs_in_float32_inside_bf16_autocast():
    """Benchmarks decode under bf16 autocast; the head must still return float32 and the same values."""
    from mi_core.mi.estimator import EstimatorConfig, MIEstimator

    torch.manual_seed(0)
    est = MIEstimator(EstimatorConfig(d_in=16, n_values=9, n_positions=81)).eval()
    hidden, probs = torch.randn(2, 81, 16), torch.rand(2, 81, 9).softmax(-1)
    entropy, masked = torch.rand(2, 81), torch.rand(2, 81) < 0.5
    with torch.no_grad():
        plain = est(hidden, probs, entropy, masked)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            auto = est(hidden, probs, entropy, masked)
    assert auto.dtype == torch.float32 and torch.equal(auto, plain)


def test_each_variant_is_validated_before_it_leaves_the_data_device(monkeypatch):
    """train-estimator moves each trained variant to the CPU; its validation score ran after that, on the data,
    which sits on the training device: on CUDA a device mismatch at the end of the first variant. The score must
    be taken before the estimator leaves the data's device (tests/test_cuda.py runs it on CUDA)."""
    import mi_core.train.estimator as trainer

    moved = set()
    to_cpu, validate = MIEstimator.cpu, trainer.validate

    def cpu(self):
        moved.add(id(self))
        return to_cpu(self)

    def checked(estimator, data, idx, threshold):
        assert id(estimator) not in moved, "validated after it was moved off the data's device"
        return validate(estimator, data, idx, threshold)

    monkeypatch.setattr(MIEstimator, "cpu", cpu)
    monkeypatch.setattr(trainer, "validate", checked)
    hidden, probs, entropy, masked = random_inputs(b=8, n=12, d=8, v=5)
    data = {"hidden": hidden, "probs": probs, "entropy": entropy, "masked": masked,
            "mi": torch.rand(8, 12, 12) * 1e-2}
    cfg = EstimatorConfig(d_in=8, n_values=5, n_positions=12, d_pos=4, d_node=16, d_proj=6, d_pair=8)
    train_cfg = trainer.TrainConfig(steps=2, batch=2, eval_every=1, warmup=0)
    estimator, summary = trainer.train_variants(data, cfg, train_cfg, trainer.parse_variants("log:free,mse:bound"),
                                                log=lambda m: None)
    assert [v["variant"] for v in summary["variants"]] == ["log:free", "mse:bound"]
    for v in summary["variants"]:  # the score kept is the validation of the checkpoint kept
        assert v["val"]["spearman"] == pytest.approx(v["val_spearman"], nan_ok=True)


def test_a_shard_write_interrupted_leaves_no_temporary_file(tmp_path, monkeypatch):
    """Ctrl-C on a Ray run between a shard's temporary write and its rename left ``shard_00002.safetensors.tmp``."""
    from mi_core import io
    from mi_core.train.estimator_data import save_shard

    def interrupted(tmp, path):
        raise KeyboardInterrupt

    monkeypatch.setattr(io, "commit", interrupted)
    path = tmp_path / "shard_00000.safetensors"
    with pytest.raises(KeyboardInterrupt):
        save_shard({"mi": torch.zeros(1, 2, 2)}, path)
    assert list(tmp_path.iterdir()) == []


def test_a_stopped_eval_estimator_keeps_the_states_it_probed(tmp_path, tiny_mdm, tiny_estimator, capsys, monkeypatch):
    """eval-estimator stopped during its exact probe (minutes on a CPU) kept nothing. The states probed, a chunk
    of 8 at a time, are compared and written to --json and --markdown's section, marked partial; exit 130."""
    from mi_core.bench import estimator as bench_estimator

    model_path, est_path = tmp_path / "mdm.safetensors", tmp_path / "est.safetensors"
    save_sudoku_mdm(tiny_mdm, model_path)
    save_estimator(tiny_estimator, est_path)
    puzzles = tmp_path / "p.csv"
    puzzles.write_text("puzzle,solution\n" + "".join(f"{p},{s}\n" for p, s in PUZZLES))
    bench, out = tmp_path / "BENCH.md", tmp_path / "eval.json"
    bench.write_text("# Benchmarks\n\n<!-- eval-estimator:start -->\nold\n<!-- eval-estimator:end -->\n")
    calls, real = [], bench_estimator.probe_by_length

    def stops(*args, **kwargs):  # the warm-up, the first 8 states, then a stop in the last 2
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(bench_estimator, "probe_by_length", stops)
    assert cli_main(["eval-estimator", "sudoku", "--puzzles", str(puzzles), "--states", "10", "--json", str(out),
                     "--model", str(model_path), "--estimator", str(est_path), "--markdown", str(bench),
                     "--device", "cpu", "--threads", "1"]) == 130
    err = capsys.readouterr().err
    left_out = "rule recovery on the all-masked state is left out (its exact probe is not run on a stop)"
    assert "Traceback" not in err and err.strip().splitlines()[-1] == (
        "interrupted (Ctrl-C): the files already written are whole; kept the 8 of 10 states finished, marked partial "
        f"(\"stopped\"), in {out} and the section eval-estimator of {bench} (replacing the one there); {left_out}; "
        f"{out}.partial keeps the finished states: add --resume to the same command to continue")
    res = json.loads(out.read_text())
    assert res["partial"] is True and res["stopped"] == {"done": 8, "of": 10, "unit": "state", "caveat": left_out}
    assert res["n_states"] == 8 and res["timed_states"] == 0 and res["speedup_median"] is None
    assert res["estimator_passes"] == 8 and "rules" in res and "all masked" not in res["rules"]
    text = bench.read_text()
    assert "old" not in text and "**Partial: stopped after 8 of 10 states**; every figure here is over those 8" in text


def test_an_eval_estimator_stopped_in_its_timing_stops_at_once_and_says_what_was_cut(tmp_path, tiny_mdm,
                                                                                    tiny_estimator, capsys, monkeypatch):
    """eval-estimator stopped while it timed states one at a time took ~30 s to stop (its figures of the states kept
    probed the all-masked state exactly, for the rules' report) and marked "partial: 3 of 3 states" as if states were
    missing. The stop runs no exact probe, and the report and stop line say what was cut: the timing, after 1 of 2
    states, and the rules' all-masked state."""
    from mi_core.bench import estimator as bench_estimator

    argv, out = eval_estimator_args(tmp_path, tiny_mdm, tiny_estimator, "--threads", "1")
    stopped, probed, real_probe, real_batches = [], [], bench_estimator.probe, bench_estimator.probe_by_length

    def probe(*args, **kwargs):  # the second state timed alone
        if len(stopped) == 1:
            stopped.append("stop")
            raise KeyboardInterrupt
        stopped.append("timed")
        return real_probe(*args, **kwargs)

    monkeypatch.setattr(bench_estimator, "probe", probe)
    monkeypatch.setattr(bench_estimator, "probe_by_length",
                        lambda *a, **k: probed.append(len(stopped)) or real_batches(*a, **k))
    assert cli_main(argv) == 130
    assert max(probed) == 0  # every exact probe before the timing; none after the stop
    cut = ("the exact probe finished all 10; only its timing of states one at a time was cut, after 1 of 2; rule "
           "recovery on the all-masked state is left out (its exact probe is not run on a stop)")
    assert f"kept the 10 of 10 states finished, marked partial (\"stopped\"), in {out}; {cut}; " in capsys.readouterr().err
    res = json.loads(out.read_text())
    assert res["stopped"] == {"done": 10, "of": 10, "unit": "state", "caveat": cut} and res["timed_states"] == 1
    assert "all masked" not in res["rules"] and res["rules"]["all held-out states"]


# figures of the wall time, and the command (its --json): the rest of a resumed run's result is the uninterrupted run's
TIMING_KEYS = ("command", "estimator_seconds", "exact_seconds", "speedup", "exact_seconds_per_state", "estimator_seconds_per_state",
               "exact_median_seconds", "estimator_median_seconds", "speedup_median")


def untimed(res: dict) -> dict:
    return {k: v for k, v in res.items() if k not in TIMING_KEYS}


def test_a_stopped_eval_estimator_resumes_and_equals_a_whole_run(tmp_path, tiny_mdm, tiny_estimator, capsys,
                                                                 monkeypatch):
    """A stopped eval-estimator could not go on: a rerun probed every state again. The states probed are kept in
    OUT.json.partial as each chunk finishes; --resume probes only the rest (stopped in the timing, only the timing
    left), and its figures are the uninterrupted run's. The refusals are sweep's."""
    from mi_core.bench import estimator as bench_estimator

    model_path, est_path = tmp_path / "mdm.safetensors", tmp_path / "est.safetensors"
    save_sudoku_mdm(tiny_mdm, model_path)
    save_estimator(tiny_estimator, est_path)
    puzzles = tmp_path / "p.csv"
    puzzles.write_text("puzzle,solution\n" + "".join(f"{p},{s}\n" for p, s in PUZZLES))
    out, whole = tmp_path / "eval.json", tmp_path / "whole.json"
    base = ["eval-estimator", "sudoku", "--puzzles", str(puzzles), "--states", "10", "--timing-states", "2",
            "--model", str(model_path), "--estimator", str(est_path), "--no-markdown", "--device", "cpu",
            "--threads", "1", "--json"]
    assert cli_main([*base, str(whole)]) == 0
    real = bench_estimator.probe_by_length
    for name, stop_at, probed_again in (("probe_by_length", 3, 2), ("probe", 2, 0)):  # stopped in the last 2 states'
        monkeypatch.undo()
        calls, stopped = [], getattr(bench_estimator, name)  # chunk, or in timing the second state alone

        def stops(*args, stopped=stopped, stop_at=stop_at, **kwargs):
            calls.append(1)
            if len(calls) == stop_at:
                raise KeyboardInterrupt
            return stopped(*args, **kwargs)

        monkeypatch.setattr(bench_estimator, name, stops)
        assert cli_main([*base, str(out), "--force"]) == 130
        assert capsys.readouterr().err.strip().endswith(
            f"{out}.partial keeps the finished states: add --resume to the same command to continue")
        if stop_at == 3:
            assert cli_main([*base, str(out)]) == 2 and "add --resume to continue it" in capsys.readouterr().err
            assert cli_main([*base, str(out), "--resume", "--eps", "0.001"]) == 2
            assert "was a run of other settings (--eps 0.0 there, 0.001 now)" in capsys.readouterr().err
        monkeypatch.undo()
        monkeypatch.setattr(bench_estimator, "probe_by_length", lambda *a, **k: calls.append(len(a[1])) or real(*a, **k))
        calls.clear()
        assert cli_main([*base, str(out), "--resume"]) == 0
        assert calls[1:-1] == [probed_again] * bool(probed_again)  # after the warm-up, the states not kept; then the
        # rules' all-masked state
        resumed = json.loads(out.read_text())
        assert untimed(resumed) == untimed(json.loads(whole.read_text())) and "--resume" not in resumed["command"]
        assert not (tmp_path / "eval.json.partial").exists()


def eval_estimator_args(tmp_path, tiny_mdm, tiny_estimator, *more: str) -> tuple[list[str], Path]:
    """An eval-estimator command line over 10 states of tiny models saved in ``tmp_path``, and its --json."""
    model_path, est_path = tmp_path / "mdm.safetensors", tmp_path / "est.safetensors"
    save_sudoku_mdm(tiny_mdm, model_path)
    save_estimator(tiny_estimator, est_path)
    puzzles = tmp_path / "p.csv"
    puzzles.write_text("puzzle,solution\n" + "".join(f"{p},{s}\n" for p, s in PUZZLES))
    out = tmp_path / "eval.json"
    return ["eval-estimator", "sudoku", "--puzzles", str(puzzles), "--states", "10", "--timing-states", "2",
            "--model", str(model_path), "--estimator", str(est_path), "--no-markdown", "--device", "cpu", *more,
            "--json", str(out)], out


def stop_in_second_chunk(monkeypatch, argv: list[str]) -> None:
    """Run ``argv`` stopped by a Ctrl-C in its second chunk of exact probes (the first is kept)."""
    from mi_core.bench import estimator as bench_estimator

    calls, real = [], bench_estimator.probe_by_length

    def stops(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(bench_estimator, "probe_by_length", stops)
    assert cli_main(argv) == 130
    monkeypatch.undo()


def test_a_resumed_eval_estimator_stopped_before_its_states_are_drawn_keeps_its_partial(tmp_path, tiny_mdm,
                                                                                          tiny_estimator, capsys,
                                                                                          monkeypatch):
    """A resumed eval-estimator holds the stopped run's probes before it draws its states again; a Ctrl-C while it
    drew them took the figures of those probes over states not there: a KeyError traceback. It now stops with one
    line, keeping the .partial, and a --resume after it finishes."""
    from mi_core.domains.sudoku import states

    base, out = eval_estimator_args(tmp_path, tiny_mdm, tiny_estimator, "--threads", "1")
    stop_in_second_chunk(monkeypatch, base)
    capsys.readouterr()

    def drawing(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(states.HeldOutPuzzles, "draw", drawing)
    assert cli_main([*base, "--resume"]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip().endswith(f"{out}.partial keeps the finished states: add --resume "
                                                            "to the same command to continue")
    monkeypatch.undo()
    assert cli_main([*base, "--resume"]) == 0 and json.loads(out.read_text())["n_states"] == 10


def test_a_resumed_eval_estimator_on_other_threads_is_refused(tmp_path, tiny_mdm, tiny_estimator, capsys,
                                                                 monkeypatch):
    """eval-estimator's figures are timings: a stopped run's states timed on 1 thread were resumed on 2 without a
    word, the result naming 2. --threads is now one of the settings a --resume must keep."""
    base, _ = eval_estimator_args(tmp_path, tiny_mdm, tiny_estimator)
    threads = torch.get_num_threads()
    try:
        stop_in_second_chunk(monkeypatch, [*base, "--threads", "1"])
        capsys.readouterr()
        assert cli_main([*base, "--threads", "2", "--resume"]) == 2
        assert "was a run of other settings (--threads 1 there, 2 now)" in capsys.readouterr().err
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("states", [[["0", [[[0.0]], 1]]], [["1", [[[0.0]], 1, 0.5]]], [["0", [[[0.0, 1.0]], 1, 0.5]]],
                                    [["0", [[["a"]], 1, 0.5]]], [["alone", 0.5]]])
def test_a_damaged_eval_estimator_partial_is_one_line_naming_it(tmp_path, tiny_mdm, tiny_estimator, capsys, states,
                                                                 monkeypatch):
    """A .partial edited by hand or damaged, whose states were not ``[MI, passes, seconds]`` from 0 on, failed on
    --resume with a bare unpacking error (or a KeyError) that named no file; it is now the line that names it and
    says what to do, and the file is kept."""
    base, out = eval_estimator_args(tmp_path, tiny_mdm, tiny_estimator, "--threads", "1")
    partial = tmp_path / "eval.json.partial"
    stop_in_second_chunk(monkeypatch, base)
    settings = json.loads(partial.read_text().split("\n")[0])["settings"]
    partial.write_text(json.dumps({"settings": settings, "rows": states}))  # one object, as earlier versions kept
    capsys.readouterr()
    assert cli_main([*base, "--resume"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: --resume: {partial} is not an eval-estimator's record of finished states; move it away, or give "
        "--force without --resume to start again")
    assert json.loads(partial.read_text())["rows"] == states


def test_a_stopped_train_estimator_says_nothing_is_kept(tmp_path, monkeypatch, capsys):
    """Ctrl-C while the estimator trained printed only "the files already written are whole", though it writes
    nothing until training ends and has no --resume."""
    import mi_core.train.estimator as trainer
    import mi_core.train.estimator_data as data

    manifest = {"domain": None, "summary": {"states": 2}, "config": {}, "model": None, "model_sha256": None}
    monkeypatch.setattr(data, "load_shards", lambda folder: ({"hidden": torch.zeros(2, 4, 8),
                                                              "probs": torch.full((2, 4, 3), 1 / 3)}, manifest))

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(trainer, "train_variants", stop)
    out = tmp_path / "e.safetensors"
    assert cli_main(["train-estimator", "--data", str(tmp_path), "--out", str(out), "--device", "cpu"]) == 130
    assert capsys.readouterr().err.strip().endswith(
        f"nothing is kept: {out} is written when training ends; the same command starts again")
    assert not out.exists()
