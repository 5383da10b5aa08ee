"""Absolute positions for the engine's sequence MDM (``SequenceMDMConfig.positions``, ``train --positions``): a rule
tied to places (a palindrome's position i and 7 - i, ``tests/palindrome_domain.py``) that rotary positions, relative
only, learn slowly; the setting is recorded in the weights' config and read back."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from palindrome_domain import MDM, PALINDROME, PalindromeMDMConfig

from mi_core import cli
from mi_core.models.base import ModelFileError
from mi_core.models.mdm import SequenceMDMConfig

TINY = {"d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 32}


@pytest.fixture
def palindrome():
    from mi_core.domain import register, unregister

    register(PALINDROME)
    yield PALINDROME
    unregister(PALINDROME.key)


def test_positions_round_trip_through_a_checkpoint(tmp_path):
    tokens = torch.tensor([[1, 0, 3, 4, 0, 0, 2, 1], [0] * 8])
    for positions in ("rotary", "absolute", "both"):
        torch.manual_seed(0)
        model = MDM.model_cls(PalindromeMDMConfig(positions=positions, **TINY)).eval()
        path = tmp_path / f"{positions}.safetensors"
        MDM.save(model, path)
        loaded = MDM.loader(str(path), "cpu")[0]
        assert json.loads(path.with_suffix(".json").read_text())["config"]["positions"] == positions
        assert loaded.cfg.positions == positions and loaded.seq_len is None and loaded.max_len == 8
        assert ("pos_emb.weight" in loaded.state_dict()) == (positions != "rotary")
        with torch.no_grad():
            assert torch.equal(loaded(tokens).logits, model(tokens).logits)
            assert loaded(tokens[:, :5]).logits.shape == (2, 5, 4)  # a shorter sequence reads the first rows


def test_a_positions_value_outside_the_choices_is_refused(palindrome, tmp_path, capsys):
    with pytest.raises(ValueError, match="positions must be one of rotary, absolute, both, got 'learned'"):
        SequenceMDMConfig(positions="learned")
    path = tmp_path / "m.safetensors"
    MDM.save(MDM.model_cls(PalindromeMDMConfig(**TINY)), path)
    meta = json.loads(path.with_suffix(".json").read_text())
    meta["config"]["positions"] = "learned"
    path.with_suffix(".json").write_text(json.dumps(meta))
    with pytest.raises(ModelFileError, match="positions must be one of"):
        MDM.loader(str(path), "cpu")
    assert cli.main(["train", "palindrome8", "--positions", "learned", "--out", str(tmp_path / "x.safetensors")]) == 2
    err = capsys.readouterr().err
    assert "error: argument --positions: invalid choice: 'learned'" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.safetensors").exists()


def trained(positions: str, tmp_path, capsys) -> tuple[float, float]:
    """``(best val_ce, share of 100 decodes that are palindromes)`` after 300 steps of ``train palindrome8``."""
    out = tmp_path / f"{positions}.safetensors"
    argv = ["train", "palindrome8", "--out", str(out), "--positions", positions, "--steps", "300", "--eval-every", "300",
            "--log-every", "300", "--warmup", "20", "--lr", "1e-2", "--no-bf16", "--threads", "1", "--device", "cpu",
            *(f"--{k.replace('_', '-')}={v}" for k, v in TINY.items())]
    assert cli.main(argv) == 0
    best = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["best_val_ce"]
    assert cli.main(["generate", "palindrome8", "--model", str(out), "--length", "8", "--n", "100", "--device", "cpu"]) == 0
    words = [line for line in capsys.readouterr().out.splitlines() if not line.startswith(">")]
    return best, float(np.mean([w == w[::-1] for w in words]))


def test_absolute_positions_learn_the_palindrome_that_rotary_does_not(palindrome, tmp_path, capsys):
    """The exact conditionals score 0.99 nats under these validation masks, the uniform guess log 4 = 1.39 (seeds
    0-5 gave rotary 1.32-1.36 and 0-3% palindromes, absolute 1.01-1.04 and 90-99%)."""
    rotary, absolute = trained("rotary", tmp_path, capsys), trained("absolute", tmp_path, capsys)
    assert absolute[0] < 1.1 and absolute[1] >= 0.75, absolute
    assert rotary[0] > 1.25 and rotary[1] < 0.2, rotary


def test_resume_of_a_checkpoint_older_than_the_setting_refuses_another_positions(palindrome, tmp_path, capsys):
    """A checkpoint written before ``positions`` existed holds a rotary model; ``--resume --positions absolute`` went on
    with rotary positions, saying nothing."""
    from mi_core.train.mdm import checkpoint_path

    out = tmp_path / "m.safetensors"
    argv = ["train", "palindrome8", "--out", str(out), "--steps", "4", "--eval-every", "2", "--log-every", "2",
            "--warmup", "1", "--no-bf16", "--threads", "1", "--device", "cpu",
            *(f"--{k.replace('_', '-')}={v}" for k, v in TINY.items())]
    assert cli.main(argv) == 0
    state = torch.load(checkpoint_path(out), weights_only=True)
    model_cfg = json.loads(state["model_cfg"])
    del model_cfg["positions"]
    state["model_cfg"] = json.dumps(model_cfg)
    torch.save(state, checkpoint_path(out))
    capsys.readouterr()
    assert cli.main(["train", "palindrome8", "--out", str(out), "--resume", "--positions", "absolute"]) == 2
    assert "--positions absolute differs from its rotary" in capsys.readouterr().err
