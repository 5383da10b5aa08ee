"""The protein MI estimator: variable-length shards against the exact probe (written, resumable, padded
without changing anything), the separation feature's invariants, a short training run, and the CLIs, on
a tiny seeded protein MDM and short sequences."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from mi_core.cli import main as cli_main
from mi_core.domains.protein import AMINO_ACIDS, MASK_ID, PAD_ID, split_of
from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig, save_protein_mdm
from mi_core.mi.estimator import (
    EstimatorConfig,
    EstimatorInputError,
    MIEstimator,
    check_model_match,
    estimator_loss,
    load_estimator,
    mdm_features,
    pair_mask,
    save_estimator,
    separation_bucket,
)
from mi_core.mi.probe import probe

SHIPPED_SUDOKU_ESTIMATOR = Path("assets/sudoku_mi_estimator.safetensors")


@pytest.fixture
def tiny_protein_mdm():
    torch.manual_seed(0)
    return ProteinMDM(ProteinMDMConfig(max_len=64, d_model=32, n_layers=1, n_heads=2, d_ff=64, dropout=0.0)).eval()


@pytest.fixture
def fasta(tmp_path):
    """A FASTA file with 6 train-split and 3 val-split sequences of 14-20 random residues."""
    rng = np.random.default_rng(0)
    want, lines, i = {"train": 6, "val": 3}, [], 0
    while any(want.values()):
        name, i = f"seq{i}", i + 1
        split = split_of(name)
        if want.get(split, 0):
            want[split] -= 1
            lines += [f">{name}", "".join(rng.choice(list(AMINO_ACIDS), size=int(rng.integers(14, 21))))]
    path = tmp_path / "tiny.fa"
    path.write_text("\n".join(lines) + "\n")
    return path


def small_data_config(fasta, **kw):
    from mi_core.domains.protein.states import ProteinDataConfig

    base = {"fasta": str(fasta), "seed": 3, "states": 5, "shard_size": 2, "min_len": 10, "max_len": 14,
            "min_masked": 3, "max_batch": 64, "mix": (1.0, 1.0, 1.0)}
    return ProteinDataConfig(**{**base, **kw})


@pytest.fixture
def protein_data(tmp_path, tiny_protein_mdm, fasta):
    from mi_core.train.estimator_data import run

    model_path = tmp_path / "pmdm.safetensors"
    save_protein_mdm(tiny_protein_mdm, model_path)
    cfg = small_data_config(fasta)
    out = tmp_path / "data"
    summary = run(tiny_protein_mdm, model_path, cfg, out, "cpu", log=lambda m: None)
    return out, cfg, model_path, summary


def separation_cfg(**kw) -> EstimatorConfig:
    return EstimatorConfig(**{"d_in": 32, "n_values": 20, "d_node": 16, "d_proj": 6, "d_pair": 8, "rel_buckets": 16,
                              "d_rel": 4, **kw})


def randomised(cfg: EstimatorConfig, seed: int = 0) -> MIEstimator:
    torch.manual_seed(seed)
    est = MIEstimator(cfg)
    with torch.no_grad():
        for p in est.parameters():
            p.normal_(0, 0.5)
    return est.eval()


def inputs(n: int, b: int = 2, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    probs = torch.randn(b, n, 20, generator=g).softmax(-1)
    masked = torch.rand(b, n, generator=g) < 0.6
    masked[:, :2] = True
    entropy = -(probs * probs.log()).sum(-1) * masked
    return torch.randn(b, n, 32, generator=g), probs, entropy, masked


# --- the separation feature ---------------------------------------------------------------------------


def test_separation_buckets_golden():
    sep = torch.tensor([1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 16, 22, 23, 64, 90, 91, 181, 182, 5000])
    assert separation_bucket(sep, 16).tolist() == [0, 1, 2, 3, 4, 5, 5, 6, 6, 7, 8, 8, 9, 12, 12, 13, 14, 15, 15]
    assert separation_bucket(sep, 6).max() == 5


@pytest.mark.parametrize("n", [7, 12, 30])
def test_separation_estimator_invariants_any_length(n):
    est = randomised(separation_cfg())
    hidden, probs, entropy, masked = inputs(n)
    mi = est(hidden, probs, entropy, masked)
    assert mi.shape == (2, n, n) and torch.equal(mi, mi.transpose(1, 2)) and (mi >= 0).all()
    assert (mi[~pair_mask(masked)] == 0).all() and (mi[pair_mask(masked)] > 0).all()


def test_separation_feature_reads_the_separation():
    """Three masked positions with identical features: without the feature every pair gets the same MI, with it
    pairs at separation 1 and 2 differ."""
    hidden = torch.zeros(1, 3, 32)
    probs = torch.full((1, 3, 20), 1 / 20)
    masked = torch.ones(1, 3, dtype=torch.bool)
    entropy = torch.full((1, 3), float(np.log(20)))
    with_sep = randomised(separation_cfg(bound=False))(hidden, probs, entropy, masked)[0]
    without = randomised(separation_cfg(bound=False, rel_buckets=0))(hidden, probs, entropy, masked)[0]
    torch.testing.assert_close(with_sep[0, 1], with_sep[1, 2])
    assert abs(with_sep[0, 1] - with_sep[0, 2]) > 1e-3 * with_sep[0, 1]
    torch.testing.assert_close(without[[0, 0, 1], [1, 2, 2]], without[0, 1].expand(3))
    with pytest.raises(ValueError, match="rel_buckets must be an integer >= 0"):
        separation_cfg(rel_buckets=-1)


def test_padding_changes_nothing():
    """A state padded with unmasked zero positions (the shard format) gets the same MI block and loss."""
    est = randomised(separation_cfg())
    hidden, probs, entropy, masked = inputs(9, b=1)
    def pad(x, *fill):
        return torch.nn.functional.pad(x, (*fill, 0, 5))
    padded = (pad(hidden, 0, 0), pad(probs, 0, 0), pad(entropy), pad(masked))
    mi, mi_pad = est(hidden, probs, entropy, masked), est(*padded)
    torch.testing.assert_close(mi_pad[:, :9, :9], mi, rtol=0, atol=0)
    assert (mi_pad[:, 9:] == 0).all() and (mi_pad[:, :, 9:] == 0).all()
    target = torch.rand(1, 9, 9)
    target = target + target.transpose(1, 2)
    target_pad = torch.nn.functional.pad(target, (0, 5, 0, 5))
    torch.testing.assert_close(estimator_loss(mi_pad, target_pad, padded[3], "log"),
                               estimator_loss(mi, target, masked, "log"))


@pytest.mark.skipif(not SHIPPED_SUDOKU_ESTIMATOR.is_file(), reason="shipped Sudoku estimator not present")
def test_shipped_sudoku_estimator_has_no_separation_feature():
    est = load_estimator(SHIPPED_SUDOKU_ESTIMATOR)
    assert est.cfg.rel_buckets == 0 and est.rel is None
    assert set(est.state_dict()) == set(load_file(SHIPPED_SUDOKU_ESTIMATOR))


def test_model_match_check(tiny_protein_mdm):
    check_model_match(tiny_protein_mdm, MIEstimator(separation_cfg()))
    with pytest.raises(EstimatorInputError, match="reads hidden size 48 and 20 values, the model gives hidden size 32"):
        check_model_match(tiny_protein_mdm, MIEstimator(separation_cfg(d_in=48)), "the model")


# --- data shards --------------------------------------------------------------------------------------


def test_protein_shards_hold_exact_probe_padded_and_resume(protein_data, tiny_protein_mdm, fasta, monkeypatch):
    from mi_core.cli import parse
    from mi_core.domains.protein.states import SOURCES, sequence_pool
    from mi_core.train.estimator_data import load_shards, run

    out, cfg, model_path, summary = protein_data
    assert sorted(p.name for p in out.glob("shard_*")) == [f"shard_0000{i}.safetensors" for i in range(3)]
    data, manifest = load_shards(out)
    assert manifest["domain"] == "protein" and manifest["sources"] == list(SOURCES)
    assert summary["states"] == 5 and sum(summary["by_source"].values()) == 5 and summary["passes"] > 5
    args = parse(manifest["command"].split()[3:])[1]  # the recorded command gives this config
    assert (args.fasta, args.states, args.min_len, args.max_len, args.min_masked, args.max_batch) == (
        str(fasta), 5, 10, 14, 3, 64)
    assert data["tokens"].shape == (5, 14) and data["mi"].shape == (5, 14, 14) and data["hidden"].shape == (5, 14, 32)
    lengths = data["length"].tolist()
    assert all(10 <= n <= 14 for n in lengths) and summary["mean_length"] == pytest.approx(np.mean(lengths))
    train = [s.tolist() for s in sequence_pool(fasta, "train", 10)]
    for s, n in enumerate(lengths):
        tokens = data["tokens"][s, :n]
        assert (data["tokens"][s, n:] == PAD_ID).all() and not data["masked"][s, n:].any()
        assert (data["mi"][s, n:] == 0).all() and (data["mi"][s, :, n:] == 0).all()
        assert int((tokens == MASK_ID).sum()) >= 3 and torch.equal(data["masked"][s, :n], tokens == MASK_ID)
        ref = probe(tiny_protein_mdm, tokens)  # the stored target is the exact probe of the real-length state
        torch.testing.assert_close(data["mi"][s, :n, :n], ref.mi.float(), rtol=1e-5, atol=1e-8)
        assert data["passes"][s] == ref.passes == 1 + 20 * int((tokens == MASK_ID).sum())
        features = dict(zip(("hidden", "probs", "entropy"), mdm_features(tiny_protein_mdm, tokens[None])))
        for key, value in features.items():
            torch.testing.assert_close(data[key][s, :n], value[0])
            assert (data[key][s, n:] == 0).all()
        if data["source"][s] == 0:  # a uniform state is a masked window of a train-split sequence
            given = ~data["masked"][s, :n]
            assert any(torch.equal(torch.tensor(q[o:o + n])[given], tokens[given])
                       for q in train for o in range(len(q) - n + 1))
    monkeypatch.setattr("mi_core.train.estimator_data.probe_by_length", lambda *a, **k: pytest.fail("probe ran on resume"))
    assert run(tiny_protein_mdm, model_path, cfg, out, "cpu", log=lambda m: None)["states"] == 5
    monkeypatch.undo()
    before = load_file(out / "shard_00001.safetensors")
    (out / "shard_00001.safetensors").unlink()
    run(tiny_protein_mdm, model_path, cfg, out, "cpu", log=lambda m: None)
    after = load_file(out / "shard_00001.safetensors")
    assert all(torch.equal(before[k], after[k]) for k in before if k != "seconds")
    with pytest.raises(ValueError, match="holds shards of other settings: --seed"):
        run(tiny_protein_mdm, model_path, small_data_config(fasta, seed=4), out, "cpu", log=lambda m: None)


def test_protein_data_config_errors(fasta):
    from mi_core.domain import check_mix
    from mi_core.domains.protein.states import SOURCES, sequence_pool

    with pytest.raises(ValueError, match="--max-len 9 is below --min-len 10"):
        small_data_config(fasta, max_len=9)
    with pytest.raises(ValueError, match="--min-masked must be in 2..--min-len"):
        small_data_config(fasta, min_masked=11)
    with pytest.raises(ValueError, match="--mix expects three weights >= 0, not all 0"):
        small_data_config(fasta, mix=(0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match=r"--mix expects three weights >= 0, not all 0 \(uniform,decode_all_masked,decode_partial\)"):
        check_mix("1,2", SOURCES)
    with pytest.raises(ValueError, match="no val-split sequence has 50 or more residues"):
        sequence_pool(fasta, "val", 50)


def test_an_empty_split_is_named_as_such(tmp_path):
    """A one-record FASTA whose header hashes to the val split was refused as 'no train-split sequence has 50 or
    more residues' though its sequence had 130: the message now says the split holds none of the file's."""
    from mi_core.domains.protein.states import sequence_pool

    name = next(f"mine{i}" for i in range(1000) if split_of(f"mine{i}") == "val")
    path = tmp_path / "one.fa"
    path.write_text(f">{name}\n{'MKTAYIAKQR' * 13}\n")
    with pytest.raises(ValueError, match=r"no train-split sequence has 50 or more residues \(the train split holds 0 "
                                         r"of the file's 1 sequences, chosen by a hash of each header"):
        sequence_pool(path, "train", 50)


# --- training -----------------------------------------------------------------------------------------


def test_training_reduces_loss(protein_data):
    from mi_core.train.estimator import TrainConfig, split, train_one
    from mi_core.train.estimator_data import load_shards

    data, _ = load_shards(protein_data[0])
    cfg = TrainConfig(steps=40, batch=3, eval_every=40, val_frac=0.4, warmup=5)
    train_idx, val_idx = split(5, cfg.val_frac, cfg.seed)
    est_cfg = separation_cfg(d_node=32, d_proj=8, d_pair=16)

    def loss_of(est):
        with torch.no_grad():
            d = {k: data[k][train_idx] for k in ("hidden", "probs", "entropy", "masked", "mi")}
            pred = est(d["hidden"], d["probs"], d["entropy"], d["masked"])
            return float(estimator_loss(pred, d["mi"], d["masked"], "log"))

    torch.manual_seed(cfg.seed)
    before = loss_of(MIEstimator(est_cfg))  # train_one starts from this same seeded initialisation
    est, record = train_one(est_cfg, cfg, data, train_idx, val_idx, log=lambda m: None)
    assert loss_of(est) < 0.5 * before
    assert record["curve"][-1]["step"] == 40 and "spearman" in record["curve"][-1]


def test_train_estimator_cli_on_protein_shards(protein_data, tmp_path):
    out, _, model_path, _ = protein_data
    weights = tmp_path / "pest.safetensors"
    assert cli_main(["train-estimator", "--data", str(out), "--out", str(weights), "--steps", "4", "--batch", "2",
                     "--eval-every", "2", "--val-frac", "0.4", "--variants", "log:free,log:free:nosep"]) == 0
    meta = json.loads(weights.with_suffix(".json").read_text())
    assert meta["domain"] == "protein" and meta["mdm"] == str(model_path) and meta["data"]["states"] == 5
    assert [v["variant"] for v in meta["variants"]] == ["log:free", "log:free:nosep"]
    cfg = load_estimator(weights).cfg
    assert cfg.n_positions == 0 and cfg.rel_buckets == (16 if meta["chosen"] == "log:free" else 0)
    assert meta["variants"][1]["params"] < meta["variants"][0]["params"]  # no separation embedding
    # validation's top-k counts edges above the domain's threshold, as eval-estimator does (it took 1e-2 here)
    assert {v["val"]["edge_threshold"] for v in meta["variants"]} == {1e-3}


# --- command lines ------------------------------------------------------------------------------------


@pytest.fixture
def saved(tmp_path, tiny_protein_mdm):
    model_path, est_path = tmp_path / "pmdm.safetensors", tmp_path / "pest.safetensors"
    save_protein_mdm(tiny_protein_mdm, model_path)
    save_estimator(randomised(separation_cfg()), est_path, {"mdm": str(model_path)})
    wrong = tmp_path / "wrong.safetensors"
    save_estimator(MIEstimator(separation_cfg(d_in=48)), wrong)
    return model_path, est_path, wrong


def test_eval_estimator_protein_cli(saved, fasta, tmp_path, capsys):
    model_path, est_path, wrong = saved
    bench = tmp_path / "BENCH.md"
    bench.write_text("# Benchmarks\n\n<!-- eval-estimator:start -->\nsudoku\n<!-- eval-estimator:end -->\n")
    out = tmp_path / "eval.json"
    args = ["eval-estimator", "protein", "--model", str(model_path), "--estimator", str(est_path), "--fasta",
            str(fasta), "--states", "3", "--min-len", "10", "--max-len", "14", "--min-masked", "3", "--json", str(out),
            "--markdown", str(bench), "--device", "cpu"]
    assert cli_main(args) == 0
    res = json.loads(out.read_text())
    for key in ("n_states", "spearman", "spearman_median", "pearson", "mae", "topk_precision", "by_source",
                "by_mask_ratio", "by_separation", "exact_seconds_per_state", "estimator_seconds_per_state", "speedup"):
        assert key in res
    assert res["n_states"] == 3 and res["split"] == "val" and 10 <= res["mean_length"] <= 14
    assert res["speedup"] == pytest.approx(res["exact_seconds"] / res["estimator_seconds"])
    # the per-state pair is of the batched calls, as the speedup beside it (the estimator's was one state at a time)
    assert res["speedup"] == pytest.approx(res["exact_seconds_per_state"] / res["estimator_seconds_per_state"])
    assert res["exact_passes"] == round(3 * (1 + 20 * res["mean_masked"]))  # 1 + 20 x masked passes per state
    text = bench.read_text()
    assert "sudoku" in text and text.count("<!-- eval-estimator-protein:start -->") == 1 and "| 1-4 |" in text
    capsys.readouterr()
    assert cli_main([*args[:5], str(wrong), *args[6:], "--force"]) == 2
    assert "reads hidden size 48" in capsys.readouterr().err


def test_eval_estimator_refuses_held_out_sequences_it_was_trained_on(saved, fasta, tmp_path, capsys):
    """An estimator whose data came from the held-out split's sequences was scored on them without a word (the
    antibody domain refused it; proteins had no check)."""
    from mi_core.domains.protein.states import ProteinDataConfig, ProteinStates

    model_path, _, _ = saved
    held_out = ProteinStates(ProteinDataConfig(fasta=str(fasta), split="val", min_len=10))
    assert held_out.overlap({"fasta": str(fasta), "split": "train", "min_len": 10, "split_seed": 0}) is None
    assert held_out.overlap({"fasta": str(tmp_path / "gone.fa"), "split": "val"}) is None  # nothing to compare
    est = tmp_path / "on_val.safetensors"
    save_estimator(randomised(separation_cfg()), est, {"mdm": str(model_path), "data": {"config": {
        "fasta": str(fasta), "split": "val", "min_len": 10, "split_seed": 0}}})
    assert cli_main(["eval-estimator", "protein", "--model", str(model_path), "--estimator", str(est), "--fasta",
                     str(fasta), "--min-len", "10", "--max-len", "14", "--states", "2", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert re.search(r"error: .* of the (\d+) held-out sequences \(the val split of .*\) are sequences of its "
                     r"training data \(the val split", err) and "Traceback" not in err, err


def test_estimate_protein_cli(saved, tmp_path, capsys):
    model_path, est_path, wrong = saved
    out = tmp_path / "estimate.json"
    seq = "MKT_LV__AGHE"
    for model in (str(model_path), "auto"):  # auto: the MDM named in the estimator's JSON
        assert cli_main(["estimate", "protein", "--sequence", seq, "--model", model, "--estimator", str(est_path),
                         "--json", str(out), "--device", "cpu", "--force"]) == 0
        res = json.loads(out.read_text())
        assert res["model"] == str(model_path) and res["sequence"] == seq and res["passes"] == 1
        mi = np.array(res["mi"])
        assert mi.shape == (12, 12) and np.array(res["marginals"]).shape == (12, 20) and len(res["entropy"]) == 12
        masked = np.array([c == "_" for c in seq])
        assert (mi[~(masked[:, None] & masked[None, :])] == 0).all() and (np.diag(mi) == 0).all()
    assert "3 masked residues" in capsys.readouterr().out
    assert cli_main(["estimate", "protein", "--sequence", seq, "--model", str(model_path), "--estimator",
                     str(wrong)]) == 2
    assert "reads hidden size 48" in capsys.readouterr().err
    assert cli_main(["estimate", "protein", "--sequence", "MK1L", "--model", str(model_path), "--estimator",
                     str(est_path)]) == 2
    assert "not amino-acid letters" in capsys.readouterr().err
    assert cli_main(["estimate", "protein", "--sequence", seq, "--mask-positions", "1-2,12", "--model", str(model_path),
                     "--estimator", str(est_path), "--json", str(out), "--force"]) == 0  # probe's masking too
    assert json.loads(out.read_text())["sequence"] == "__T_LV__AGH_"
    assert json.loads(out.read_text())["native"] == seq.upper()  # the residues masked were lost
    assert cli_main(["estimate", "protein", "--sequence", seq, "--mask-positions", "13", "--model", str(model_path),
                     "--estimator", str(est_path)]) == 2
    assert "--mask-positions: '13' is outside 1-12 (the sequence has 12 residues)" in capsys.readouterr().err


def test_data_configs_hold_one_spelling_of_their_file():
    from mi_core.domains.antibody.states import AntibodyDataConfig
    from mi_core.domains.protein.states import ProteinDataConfig

    assert ProteinDataConfig(fasta="./data//x.fa").fasta == "data/x.fa"  # a manifest written either way resumes
    assert AntibodyDataConfig(csv="./data//x.csv").csv == "data/x.csv"
