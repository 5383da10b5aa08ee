import json
from pathlib import Path

import pytest
import torch

from mi_core.device import pick_device, slow_bf16
from mi_core.domains.sudoku import MASK_ID, to_tokens
from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig, load_sudoku_mdm, masked_ce, save_sudoku_mdm
from mi_core.models.base import ModelFileError
from mi_core.models.loading import load_model


def test_shapes_and_dtypes(tiny_mdm):
    tokens = to_tokens(["." * 81, "123456789" + "." * 72])
    out = tiny_mdm(tokens)
    assert out.logits.shape == (2, 81, 9) and out.logits.dtype == torch.float32
    assert out.hidden.shape == (2, 81, 32) and out.hidden.dtype == torch.float32
    assert tiny_mdm.mask_id == MASK_ID
    assert tiny_mdm.value_tokens.tolist() == list(range(1, 10))


def test_4x4_model_shapes():
    model = SudokuMDM(SudokuMDMConfig(box=2, d_model=16, n_layers=1, n_heads=2, d_ff=32))
    out = model(torch.zeros(3, 16, dtype=torch.long))
    assert out.logits.shape == (3, 16, 4) and out.hidden.shape == (3, 16, 16)


def test_a_saved_model_records_the_domain_of_its_grid(tmp_path, tiny_mdm):
    """A 4x4 model is refused by the 9x9 domain's loader, naming the domain it records (it recorded sudoku9)."""
    save_sudoku_mdm(tiny_mdm, tmp_path / "m9.safetensors")
    save_sudoku_mdm(SudokuMDM(SudokuMDMConfig(box=2, d_model=16, n_layers=1, n_heads=2, d_ff=32)), tmp_path / "m4.safetensors")
    assert json.loads((tmp_path / "m9.json").read_text())["domain"] == "sudoku9"
    assert json.loads((tmp_path / "m4.json").read_text())["domain"] == "sudoku4"
    with pytest.raises(ModelFileError, match="records the domain sudoku4"):
        load_model(tmp_path / "m4.safetensors", domain="sudoku9")


def test_bf16_autocast_returns_float32_logits(tiny_mdm):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = tiny_mdm(torch.zeros(1, 81, dtype=torch.long))
    assert out.logits.dtype == torch.float32


def test_bidirectional(tiny_mdm):
    """Changing the last cell changes the first cell's logits: attention is not causal."""
    a = torch.zeros(1, 81, dtype=torch.long)
    b = a.clone()
    b[0, 80] = 5
    assert not torch.allclose(tiny_mdm(a).logits[0, 0], tiny_mdm(b).logits[0, 0])


@pytest.mark.parametrize("kwargs, match", [({"box": 4}, "box must be"), ({"d_model": 30, "n_heads": 4}, "divisible"),
                                           ({"n_layers": 0}, "positive")])
def test_config_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SudokuMDMConfig(**kwargs)


def test_save_load_round_trip(tmp_path, tiny_mdm):
    path = tmp_path / "m.safetensors"
    save_sudoku_mdm(tiny_mdm, path, {"note": "test"})
    meta = json.loads(path.with_suffix(".json").read_text())
    assert meta["config"]["d_model"] == 32 and meta["note"] == "test"
    loaded = load_sudoku_mdm(path)
    tokens = to_tokens(["." * 81])
    assert torch.equal(loaded(tokens).logits, tiny_mdm(tokens).logits)


def test_load_errors(tmp_path, tiny_mdm):
    with pytest.raises(ModelFileError, match="weights file not found"):
        load_sudoku_mdm(tmp_path / "nope.safetensors")
    path = tmp_path / "m.safetensors"
    save_sudoku_mdm(tiny_mdm, path)
    path.with_suffix(".json").write_text(json.dumps({"config": {"box": 3, "d_model": 64, "n_layers": 1, "n_heads": 2, "d_ff": 64}}))
    with pytest.raises(ModelFileError, match="do not fit the config"):
        load_sudoku_mdm(path)
    path.with_suffix(".json").write_text('{"note": "no config"}')
    with pytest.raises(ModelFileError, match="is not a model config: it has no 'config' entry"):
        load_sudoku_mdm(path)
    path.with_suffix(".json").write_text("{not json")
    with pytest.raises(ModelFileError, match="not a valid model config"):
        load_sudoku_mdm(path)
    path.with_suffix(".json").write_text(json.dumps({"config": {"colour": "red"}}))
    with pytest.raises(ModelFileError, match="is not a Sudoku MDM: its config has .colour., which a Sudoku MDM does not take"):
        load_sudoku_mdm(path)
    path.write_bytes(b"garbage")
    path.with_suffix(".json").write_text(json.dumps({"config": {}}))
    with pytest.raises(ModelFileError, match="cannot read weights"):
        load_sudoku_mdm(path)


def test_masked_ce_only_counts_masked():
    logits = torch.zeros(1, 3, 9)
    logits[0, 0, 0] = 100.0  # confident and right at an unmasked position: must not matter
    target = torch.tensor([[0, 1, 2]])
    masked = torch.tensor([[False, True, True]])
    assert masked_ce(logits, target, masked).item() == pytest.approx(torch.log(torch.tensor(9.0)).item(), rel=1e-6)


def test_pick_device():
    assert pick_device("cpu").type == "cpu"
    assert pick_device(None).type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            pick_device("cuda")


@pytest.mark.parametrize("flags, slow", [("fpu avx2 fma", True), ("avx2 avx512f avx512_bf16", False),
                                         ("avx2 amx_bf16 amx_tile", False)])
def test_slow_bf16_reads_the_cpu_flags(monkeypatch, tmp_path, flags, slow):
    import builtins

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda f, *a, **k: real_open(cpuinfo if f == "/proc/cpuinfo" else f, *a, **k))
    assert (slow_bf16("cpu") is not None) == slow
    assert slow_bf16("cuda") is None  # a GPU has its own bf16


def test_a_config_of_another_model_with_the_same_shapes_is_refused(tmp_path):
    """The weights record the config they were saved with: another model's JSON (other loops or attention, same
    tensors), or one missing a key whose default differs, would load and give other outputs."""
    path = tmp_path / "m.safetensors"
    save_sudoku_mdm(SudokuMDM(SudokuMDMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32, loops=3, attention="peer")), path)
    meta = json.loads(path.with_suffix(".json").read_text())
    for change, match in [({"loops": 1}, "it gives loops 1, the weights were saved with loops 3"),
                          ({"attention": "full"}, 'it gives attention "full", the weights were saved with attention "peer"')]:
        path.with_suffix(".json").write_text(json.dumps({**meta, "config": {**meta["config"], **change}}))
        with pytest.raises(ModelFileError, match=f"do not fit the config .*m.json: {match}"):
            load_sudoku_mdm(path)
    path.with_suffix(".json").write_text(json.dumps({**meta, "config": {k: v for k, v in meta["config"].items() if k != "loops"}}))
    with pytest.raises(ModelFileError, match=r"it has no loops \(default 1\), the weights were saved with loops 3"):
        load_sudoku_mdm(path)
    path.with_suffix(".json").write_text(json.dumps({**meta, "config": {**meta["config"], "dropout": 0.3}}))
    assert load_sudoku_mdm(path).cfg.loops == 3  # dropout changes no output in eval mode: not another model
    path.with_suffix(".json").write_text(json.dumps(meta))
    assert load_sudoku_mdm(path).cfg.loops == 3


@pytest.mark.parametrize("text, match", [
    ('{"config": {"inject": "false"}}', "m.json: config inject must be true or false, got 'false'"),
    ('{"config": {"attention": 3}}', "m.json: config attention must be a string, got 3"),
    ("[1, 2]", "m.json is not a model config: it holds a JSON list, not an object"),
])
def test_config_values_of_the_wrong_type_are_named(tmp_path, tiny_mdm, text, match):
    path = tmp_path / "m.safetensors"
    save_sudoku_mdm(tiny_mdm, path)
    path.with_suffix(".json").write_text(text)
    with pytest.raises(ModelFileError, match=match):
        load_sudoku_mdm(path)


def test_an_unreadable_config_is_named(tmp_path, tiny_mdm, monkeypatch):
    path = tmp_path / "m.safetensors"
    save_sudoku_mdm(tiny_mdm, path)
    real = Path.read_text

    def denied(self, *args, **kwargs):  # chmod 000 does not stop root, who runs CI
        if self.name == "m.json":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", denied)
    with pytest.raises(ModelFileError, match="cannot read the config .*m.json: Permission denied"):
        load_sudoku_mdm(path)
