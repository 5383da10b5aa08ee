"""The domain seam: a third domain registered from the tests alone (``tests/toy_domain.py``) is probed,
gets estimator data, decodes with every sampler, is benchmarked and is listed by the app, with no core file
knowing it. Its model is exact, so the probe and the data are checked against enumerated MI."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from toy_domain import TOY, exact_mi

from mi_core import cli
from mi_core.decoding import STRATEGIES


@pytest.fixture
def toy():
    from mi_core.domains.registry import register, unregister

    register(TOY)
    yield TOY
    unregister(TOY.key)


def test_registry_and_app_list_the_toy(toy):
    from mi_core.domains.registry import cli_names, get_domain
    from mi_lens_app.domains import DOMAINS, make_puzzle

    assert get_domain("toy6") is toy and "toy6" in cli_names()
    assert DOMAINS["toy6"].layout == "sequence"
    puzzle = make_puzzle(DOMAINS["toy6"], "ab__e_")
    assert puzzle.blanks == [2, 3, 5] and puzzle.text == "ab__e_"
    with pytest.raises(ValueError, match="'z' at position 3 is not"):
        toy.parse_state("abz___")
    with pytest.raises(ValueError, match="already registered"):
        from mi_core.domains.registry import register

        register(TOY)


def test_load_model_gives_the_interface(toy):
    from mi_core.models.loading import load_model

    model = load_model(domain="toy6")
    assert (model.seq_len, model.max_len, model.hidden_size, model.n_values, model.mask_id) == (6, 6, 13, 6, 0)
    assert model.device == torch.device("cpu") and model.dtype == torch.float32


def test_probe_command_matches_enumeration(toy, tmp_path, capsys):
    out = tmp_path / "probe.json"
    assert cli.main(["probe", "toy6", "--state", "ab____", "--json", str(out), "--no-progress"]) == 0
    result = json.loads(out.read_text())
    assert result["domain"] == "toy6" and result["puzzle"] == "ab____"
    want = exact_mi(torch.tensor(toy.parse_state("ab____")))
    np.testing.assert_allclose(np.asarray(result["mi"]), want.numpy(), atol=1e-6)
    assert want.max() > 0.01  # the check has something to see


def test_estimator_data_every_sampler_and_bench(toy, tmp_path):
    from mi_core.decoding.selector import make_order_nets, save_order_net
    from mi_core.train.estimator_data import load_shards

    data_dir = tmp_path / "data"
    argv = ["make-estimator-data", "toy6", "--out", str(data_dir), "--states", "8", "--shard-size", "4"]
    assert cli.main(argv) == 0
    data, manifest = load_shards(data_dir)
    assert manifest["domain"] == "toy6" and manifest["model"] is None and data["mi"].shape == (8, 6, 6)
    for s in range(8):
        np.testing.assert_allclose(data["mi"][s].numpy(), exact_mi(data["tokens"][s]).numpy(), atol=1e-6)
    assert cli.main(argv) == 0  # resumes: every shard is there

    estimator = tmp_path / "est.safetensors"
    assert cli.main(["train-estimator", "--data", str(data_dir), "--out", str(estimator), "--steps", "20",
                     "--eval-every", "10", "--variants", "log:free", "--batch", "4"]) == 0
    evaluation = tmp_path / "eval.json"
    assert cli.main(["eval-estimator", "toy6", "--estimator", str(estimator), "--states", "5", "--no-markdown",
                     "--json", str(evaluation)]) == 0
    res = json.loads(evaluation.read_text())
    assert res["domain"] == "toy6" and res["n_states"] == 5 and "rules" not in res and "by_separation" in res
    assert 5 < res["exact_passes"] <= round(5 + 6 * 5 * res["mean_masked"])  # values of p = 0 are skipped
    selector = tmp_path / "sel.safetensors"
    save_order_net(make_order_nets(13)[1], selector)

    puzzles = tmp_path / "toy.txt"
    puzzles.write_text("# three toy states\nab____\n______\nf_d_b_\n")
    extra = {"mi": ["estimator=" + str(estimator)], "learned": ["selector=" + str(selector)],
             "learned_mi": ["selector=" + str(selector), "estimator=" + str(estimator)]}
    for name in STRATEGIES:
        out = tmp_path / f"{name}.json"
        sets = [a for s in extra.get(name, []) for a in ("--set", s)]
        assert cli.main(["bench", "toy6", "--puzzles", str(puzzles), "--sampler", name, *sets,
                         "--json", str(out)]) == 0, name
        result = json.loads(out.read_text())
        assert result["n"] == 3 and 0 <= result["accuracy"] <= 1 and result["mean_passes"] >= 1, name
        if name in ("sequential", "mi_exact"):  # an exact model decoded one dependent value at a time
            assert result["accuracy"] == 1.0, name
