"""Fault injection: interrupt writers at random points and check that what was on disk still loads.

A weights file and its ``.json`` config are written as a pair (temporary names, weights renamed first, config
last, both carrying one ``save_id``); a JSON result is written to a temporary name and renamed. So a reader
sees the old files or the new ones, never a mix, and a crash between the two renames is finished by the
loader. The subprocess tests kill a tiny training run and a bench run with SIGTERM or SIGKILL after a
random delay (seeded, a few times each).
"""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig, load_sudoku_mdm, save_sudoku_mdm
from mi_core.io import atomic_write_json
from mi_core.io import tmp_path as tmp_name
from mi_core.models import base

REPO = Path(__file__).resolve().parent.parent
EASY = "..9.7.1.....2.8...2...3...4.9.........8....311.6...52.....6327.....9.6...1...7.5."


def tiny(d_model: int, seed: int = 0) -> SudokuMDM:
    torch.manual_seed(seed)
    return SudokuMDM(SudokuMDMConfig(d_model=d_model, n_layers=1, n_heads=2, d_ff=32)).eval()


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_crash_between_the_two_renames_is_finished_by_the_loader(tmp_path, monkeypatch):
    path = tmp_path / "m.safetensors"
    save_sudoku_mdm(tiny(32), path)
    new = tiny(16, seed=1)
    calls = []
    real_commit = base.commit

    def dying_commit(tmp, target):
        calls.append(target)
        if len(calls) == 2:  # the config's rename: the process dies here
            raise KeyboardInterrupt
        real_commit(tmp, target)

    monkeypatch.setattr(base, "commit", dying_commit)
    with pytest.raises(KeyboardInterrupt):
        save_sudoku_mdm(new, path)
    monkeypatch.setattr(base, "commit", real_commit)
    assert json.loads(path.with_suffix(".json").read_text())["config"]["d_model"] == 32  # the old config
    assert tmp_path.joinpath("m.json.tmp").is_file()
    loaded = load_sudoku_mdm(path)  # recognises the pending config by its save_id and renames it
    assert loaded.cfg.d_model == 16 and same_weights(loaded, new)
    assert not tmp_path.joinpath("m.json.tmp").exists()


def test_stop_just_after_the_weights_rename_keeps_the_configs_tmp(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM (raised as KeyboardInterrupt) while the weights' rename flushes its folder: the new
    weights are in place, so the config's .tmp stays for the loader (the clean-up of a failed save removed it,
    leaving the new weights beside the old config)."""
    path = tmp_path / "m.safetensors"
    save_sudoku_mdm(tiny(32), path)
    new = tiny(16, seed=1)
    real_commit = base.commit

    def stopped_after_renaming(tmp, target):
        real_commit(tmp, target)
        raise KeyboardInterrupt

    monkeypatch.setattr(base, "commit", stopped_after_renaming)
    with pytest.raises(KeyboardInterrupt):
        save_sudoku_mdm(new, path)
    monkeypatch.undo()
    assert tmp_path.joinpath("m.json.tmp").is_file()
    loaded = load_sudoku_mdm(path)
    assert loaded.cfg.d_model == 16 and same_weights(loaded, new)


def test_crash_before_the_renames_leaves_the_old_pair(tmp_path, monkeypatch):
    path = tmp_path / "m.safetensors"
    old = tiny(32)
    save_sudoku_mdm(old, path)

    def dying_commit(tmp, target):
        raise KeyboardInterrupt

    monkeypatch.setattr(base, "commit", dying_commit)
    with pytest.raises(KeyboardInterrupt):
        save_sudoku_mdm(tiny(16, seed=1), path)
    monkeypatch.undo()
    tmp_path.joinpath("m.safetensors.tmp").write_bytes(b"")  # a 0-byte orphan, as a SIGKILL can leave
    assert same_weights(load_sudoku_mdm(path), old)  # orphans (a stale config .tmp too) are ignored
    save_sudoku_mdm(tiny(16, seed=2), path)  # and the next save replaces them
    assert load_sudoku_mdm(path).cfg.d_model == 16
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())


def test_atomic_json_write_keeps_the_old_file_when_interrupted(tmp_path, monkeypatch):
    out = tmp_path / "r.json"
    atomic_write_json(out, {"old": True})

    def dying_replace(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", dying_replace)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_json(out, {"new": True})
    monkeypatch.undo()
    assert json.loads(out.read_text()) == {"old": True} and not tmp_name(out).exists()


def spawn(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "mi_core", *args], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def kill_after(proc: subprocess.Popen, delay: float, sig: int) -> None:
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(sig)
    proc.wait(timeout=60)


# one seed in the default run, the others with -m slow (.ci/run runs both)
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)])
def test_killing_a_training_run_leaves_loadable_weights(tmp_path, seed):
    rng = random.Random(seed)
    out = tmp_path / "m.safetensors"
    save_sudoku_mdm(tiny(32), out)  # the file a user had
    args = ["train", "sudoku", "--out", str(out), "--force", "--device", "cpu", "--threads", "1",
            "--steps", "100000", "--d-model", "16", "--n-layers", "1", "--n-heads", "2", "--d-ff", "16",
            "--batch", "4", "--grid-pool", "20", "--puzzle-pool", "20", "--eval-every", "1", "--eval-puzzles", "2",
            "--max-harden", "5", "--no-bf16"]
    proc = spawn(args)
    start = time.time()
    # wait until the run has saved at least once, then kill it at a random moment of its save loop
    while time.time() - start < 90 and proc.poll() is None and not out.with_name("m_last.safetensors").exists():
        time.sleep(0.05)
    kill_after(proc, rng.uniform(0.0, 1.5), rng.choice([signal.SIGTERM, signal.SIGKILL]))
    for name in ("m", "m_last"):
        path = tmp_path / f"{name}.safetensors"
        if path.exists():
            model = load_sudoku_mdm(path)  # old pair or new pair, never a mix
            assert model.cfg.d_model in (16, 32)


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_killing_a_bench_run_leaves_the_previous_json(tmp_path, seed):
    rng = random.Random(100 + seed)
    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n")
    out = tmp_path / "b.json"
    out.write_text(json.dumps({"previous": "result"}) + "\n")
    for _ in range(2):
        proc = spawn(["bench", "sudoku", "--puzzles", str(puzzles), "--json", str(out), "--force",
                      "--device", "cpu", "--batch-size", "1"])
        kill_after(proc, rng.uniform(1.0, 6.0), rng.choice([signal.SIGTERM, signal.SIGKILL]))
        data = json.loads(out.read_text())  # the old result or a complete new one
        assert data == {"previous": "result"} or data["n"] == 1


def load_injector():
    import importlib.util

    spec = importlib.util.spec_from_file_location("fault_inject", REPO / "scripts" / "fault_inject.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("fault_at", [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)])
def test_sigkill_inside_a_save_of_a_training_run(tmp_path, fault_at):
    """SIGKILL at the weights rename (1, 3) or between the weights and config renames (2) of a real run."""
    injector = load_injector()
    row = injector.train_round(REPO, tmp_path, random.Random(0), old=False, fault_at=fault_at)
    assert row["injected"] and row["loads"] and all(row["loads"].values()), row


def test_sigkill_inside_a_bench_json_write(tmp_path):
    injector = load_injector()
    row = injector.bench_round(REPO, tmp_path, random.Random(0), old=False, fault_at=1)
    assert row["injected"] and row["loads"] == {"b.json": True}
    assert json.loads((tmp_path / "b.json").read_text()) == {"previous": "result"}


def test_json_written_is_strict(tmp_path):
    """A validation figure that is undefined (NaN: train-estimator on a tiny validation set) was written as ``NaN``,
    which strict JSON readers refuse; numpy scalars raised a TypeError. Both are written as JSON numbers or null."""
    import numpy as np

    def strict(path):
        return json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"{path} holds {c}"))

    atomic_write_json(tmp_path / "r.json", {"spearman": float("nan"), "best": [float("-inf"), np.float32(0.5)],
                                            "n": np.int64(3), "mi": np.array([[0.25, np.nan]])})
    assert strict(tmp_path / "r.json") == {"spearman": None, "best": [None, 0.5], "n": 3, "mi": [[0.25, None]]}
    save_sudoku_mdm(tiny(16), tmp_path / "m.safetensors", {"best_val_spearman": float("nan")})
    assert strict(tmp_path / "m.json")["best_val_spearman"] is None
    assert same_weights(load_sudoku_mdm(tmp_path / "m.safetensors"), tiny(16))
