"""scripts/studies/soup.py: the mean of checkpoints' weights, and the inputs it refuses."""

import importlib.util
import json
import re
from pathlib import Path

import torch
from safetensors.torch import load_file

from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig, save_sudoku_mdm

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "studies" / "soup.py"
spec = importlib.util.spec_from_file_location("soup", SCRIPT)
soup = importlib.util.module_from_spec(spec)
spec.loader.exec_module(soup)


def _model(path: Path, seed: int, **shape) -> Path:
    torch.manual_seed(seed)
    save_sudoku_mdm(SudokuMDM(SudokuMDMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32, **shape)), path)
    return path


def test_the_soup_is_the_mean_of_the_weights(tmp_path):
    paths = [_model(tmp_path / f"m{i}.safetensors", i, loops=2 + i) for i in range(3)]
    out = tmp_path / "soup.safetensors"
    assert soup.main([*map(str, paths), "--out", str(out), "--loops", "5"]) == 0
    weights, got = [load_file(p) for p in paths], load_file(out)
    for name, value in got.items():
        assert torch.allclose(value.double(), sum(w[name].double() for w in weights) / 3, atol=1e-7), name
    assert json.loads(out.with_suffix(".json").read_text())["config"]["loops"] == 5


def test_the_soup_refuses_other_models_a_bad_loops_and_an_existing_out(tmp_path, capsys):
    """Checkpoints of other models with weights of the same shapes (full and peer attention) were averaged under
    the first's config; ``--loops -1`` ended in a traceback, ``--loops 0`` was ignored; an existing ``--out`` was
    overwritten."""
    plain = _model(tmp_path / "plain.safetensors", 0)
    peer = _model(tmp_path / "peer.safetensors", 1, attention="peer", inject=True)
    out = tmp_path / "soup.safetensors"
    for argv, why in (([plain, peer], "peer.safetensors has attention peer, inject True, unlike .*plain.safetensors"),
                      ([plain, plain, "--loops", "-1"], "--loops -1: give 1 or more"),
                      ([plain, plain, "--loops", "0"], "--loops 0: give 1 or more")):
        assert soup.main([*map(str, argv), "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ")
        assert re.search(why, err[0]), err[0]
        assert not out.exists()
    out.write_text("keep me\n")
    assert soup.main([str(plain), str(plain), "--out", str(out)]) == 2
    assert "already exists; pass --force" in capsys.readouterr().err and out.read_text() == "keep me\n"
    assert soup.main([str(plain), str(plain), "--out", str(out), "--force"]) == 0
