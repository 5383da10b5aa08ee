"""``train-order antibody`` and ``bench-order antibody`` on CDR in-filling: train-order refused the antibody domain
("has no order task"), so no selector could be made for it. Runs are tiny: a random 2-layer AntiBERTy, three
antibodies, two updates."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from mi_core import cli
from mi_core.order.infill import check_pairs, infill_draw
from tests.test_antibody_domain import SEQUENCES, tiny_folder  # noqa: F401 (a fixture)
from tests.test_antibody_pipeline import write_csv


@pytest.fixture
def data(tmp_path):
    return write_csv(tmp_path / "mine.csv", [(n, h, v) for n, (h, v) in SEQUENCES.items()])


def train_argv(data, folder, out, *more):
    return ["train-order", "antibody", "--csv", str(data), "--rows", "1-2", "--tune-rows", "3-3", "--model",
            str(folder), "--out", str(out), "--steps-budget", "2,3", "--batch", "2", "--samples", "2",
            "--eval-every", "1", "--threads", "1", *more]


def test_train_order_antibody_makes_a_selector_that_bench_order_scores(data, tiny_folder, tmp_path,  # noqa: F811
                                                                       capsys):
    selector = tmp_path / "sel.safetensors"
    assert cli.main(train_argv(data, tiny_folder, selector, "--updates", "2")) == 0
    meta = json.loads(selector.with_suffix(".json").read_text())
    assert (meta["domain"], meta["region"], meta["rows"], meta["tune_rows"]) == ("antibody", "cdr3", "1-2", "3-3")
    assert meta["train_templates"] == 4 and meta["validation_templates"] == 2 and len(meta["mdm_sha256"]) == 64
    assert [p["update"] for p in meta["curve"]] == [1, 2] and 0 <= meta["curve"][0]["val_T2"] <= 1
    assert meta["curve"][0]["val_passes_T3"] <= 3
    # a stopped run goes on from its checkpoint
    assert cli.main(train_argv(data, tiny_folder, selector, "--updates", "3", "--resume")) == 0
    log = [json.loads(line) for line in selector.with_name("sel_log.jsonl").read_text().splitlines()]
    assert [p["update"] for p in log if "update" in p] == [1, 2, 3]

    out = tmp_path / "order.json"
    capsys.readouterr()
    assert cli.main(["bench-order", "antibody", "--csv", str(data), "--rows", "3-3", "--model", str(tiny_folder),
                     "--selector", str(selector), "--budgets", "2", "--gammas", "", "--json", str(out)]) == 0
    # row 3 is the selector's tuning row: the bench says its learned rows are not held out (it said nothing)
    err = capsys.readouterr().err
    assert "note: 2 of the 2 chains benched" in err and "(rows 1-2 and 3-3 of mine.csv)" in err, err
    rows = json.loads(out.read_text())
    assert [(r["sampler"], r["params"].get("mode")) for r in rows] == [
        ("random", None), ("top_prob", None), ("top_margin", None), ("learned", "threshold"), ("learned", "rank"),
        ("sequential", None)]
    margin, rank = rows[2], rows[4]
    assert len(margin["per_chain"]) == 2 and margin["recovery"] == pytest.approx(np.mean(margin["per_chain"]))
    assert margin["vs_margin"] == 0 and rank["mean_passes"] == margin["mean_passes"] == 2
    assert rank["vs_margin"] == pytest.approx(rank["recovery"] - margin["recovery"])
    report = out.with_suffix(".md").read_text()
    assert "### T = 2" in report and "minus top_margin ± SE (paired)" in report
    assert f"| {rank['recovery']:.3f} ± {rank['recovery_se']:.3f} |" in report


@pytest.mark.parametrize("more,error", [
    (["--tune-rows", "2-3"], "--rows 1-2 and --tune-rows 2-3 share 2 chain(s), the first 'bevacizumab VH': give "
                             "rows apart"),
    (["--finetune"], "over a frozen AntiBERTy: leave out --finetune"),
    (["--rows", "2-5"], "--rows 2-5: the file holds 3 antibodies"),
])
def test_train_order_antibody_names_a_bad_setting(data, tiny_folder, tmp_path, capsys, more, error):  # noqa: F811
    out = tmp_path / "sel.safetensors"
    assert cli.main(train_argv(data, tiny_folder, out, "--updates", "1", *more)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and error in err and err.count("\n") == 1, err
    assert not out.exists()


def test_infill_batches_hold_one_length_and_pairs_are_checked():
    templates = [np.array([1, 0, 3]), np.array([0, 2]), np.array([4, 0])]
    natives = [np.array([1, 2, 3]), np.array([5, 2]), np.array([4, 6])]
    draw = infill_draw(templates, natives)
    rng = np.random.default_rng(0)
    for _ in range(10):
        start, target = draw(rng, 3)
        assert start.shape == target.shape and start.shape[1] in (2, 3) and start.dtype == torch.long
        assert ((start == 0) | (start == target + 1)).all()  # givens are the native's
    check_pairs(templates, natives, 0, "chain")
    with pytest.raises(ValueError, match="chain 1: a given token differs from the native"):
        check_pairs([np.array([2, 0, 3])], natives[:1], 0, "chain")
    with pytest.raises(ValueError, match="chain 1: the template has no masked position to fill"):
        check_pairs([np.array([1, 2, 3])], natives[:1], 0, "chain")
    with pytest.raises(ValueError, match="chain 1: the native has an unknown token at position 2"):
        check_pairs([np.array([1, 0, 3])], [np.array([1, 0, 3])], 0, "chain")


def test_a_light_chain_two_antibodies_share_is_named_as_such(tmp_path, tiny_folder, capsys):  # noqa: F811
    """Row 3 with row 1's light chain was refused as "--rows 1-2 and --tune-rows 3-3 share 1 chains: give rows
    apart", though the rows were apart: the same sequence sat in another row."""
    rows = [(n, h, v) for n, (h, v) in SEQUENCES.items()]
    rows[2] = (rows[2][0], rows[2][1], rows[0][2])
    data = write_csv(tmp_path / "shared.csv", rows)
    assert cli.main(train_argv(data, tiny_folder, tmp_path / "sel.safetensors", "--updates", "1")) == 2
    err = capsys.readouterr().err
    assert "--tune-rows 3-3 holds 1 chain(s) that --rows 1-2 trains on under another name, the first 'rituximab VL' " \
           "(as 'trastuzumab VL')" in err and err.count("\n") == 1, err


def test_a_chain_with_an_unknown_residue_is_left_out_and_named(tmp_path, tiny_folder, capsys):  # noqa: F811
    """One X in a framework residue refused the whole run as "training sequence 3: a template needs a masked position
    and a native of its length with every token known", naming neither the chain nor the X."""
    rows = [(n, h, v) for n, (h, v) in SEQUENCES.items()]
    rows[1] = (rows[1][0], rows[1][1][:5] + "X" + rows[1][1][6:], rows[1][2])
    data = write_csv(tmp_path / "x.csv", rows)
    selector = tmp_path / "sel.safetensors"
    assert cli.main(train_argv(data, tiny_folder, selector, "--updates", "1")) == 0
    err = capsys.readouterr().err
    assert "warning: --rows 1-2: 1 of 4 chains left out for an unknown residue (X); the first: 'bevacizumab VH' at " \
           "6" in err, err
    assert json.loads(selector.with_suffix(".json").read_text())["train_templates"] == 3
    assert cli.main(train_argv(data, tiny_folder, tmp_path / "b.safetensors", "--updates", "1", "--rows", "2-2",
                               "--chains", "H")) == 2
    assert "error: --rows 2-2: every chain has an unknown residue (X), as 'bevacizumab VH' at 6" in \
        capsys.readouterr().err


def test_a_model_folder_without_weights_is_named_as_given(data, tmp_path, capsys):
    """``--model FOLDER`` without AntiBERTy's weights said "FOLDER/pytorch_model.bin holds no pytorch_model.bin and
    config.json", naming a file that is not there as a folder."""
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(train_argv(data, empty, tmp_path / "sel.safetensors", "--updates", "1")) == 2
    assert f"error: {empty} holds no pytorch_model.bin and config.json" in capsys.readouterr().err


def test_bench_order_antibody_modes_run_once_each():
    """A mode named twice ran its rows twice."""
    from mi_core.bench.order import mode_list

    assert mode_list("rank, threshold,rank") == ["rank", "threshold"] and mode_list("") == []
    with pytest.raises(ValueError, match="'fast' is not a mode of learned"):
        mode_list("rank,fast")
