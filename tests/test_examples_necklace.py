"""The one-file example plugin ``examples/necklace.py`` as a user meets it: named by ``MI_LENS_DOMAINS``, trained
for a few steps into an empty working folder, then probed and benched there through the command line with no
``--model``, so its default weights path (``runs/necklace/`` under the working folder) is the one ``train`` wrote."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def necklace():
    from mi_core.domain import DOMAINS, unregister

    sys.path.insert(0, str(EXAMPLES))
    try:
        module = importlib.import_module("necklace")  # registers the domain on its first import
        if "necklace" not in DOMAINS:  # imported and unregistered earlier in this process
            module = importlib.reload(module)
    finally:
        sys.path.remove(str(EXAMPLES))
    yield module
    unregister("necklace")


def test_the_necklaces_are_the_proper_colourings_of_the_ring(necklace):
    rows = necklace.NECKLACES
    assert rows.shape == (2**10 + 2, 10) and len({tuple(r) for r in rows}) == len(rows)
    assert all(necklace.verify(np.zeros(10, dtype=np.int64), r) for r in rows)
    held = len(necklace.SPLITS["heldout"])
    assert held + len(necklace.SPLITS["train"]) == len(rows) and 60 < held < 160  # about a tenth
    start = np.array([1, 0, 0, 0, 0, 2, 0, 0, 0, 0])  # R____G____
    assert not necklace.verify(start, np.array([1, 2, 1, 2, 1, 3, 1, 2, 1, 2]))  # bead 6 given G, not B
    assert not necklace.verify(start, np.array([1, 2, 1, 2, 3, 2, 3, 2, 3, 1]))  # beads 10 and 1 both R
    assert necklace.NECKLACE.rules(10).sum() == 20 and necklace.NECKLACE.rules(10)[0, 9]


def test_print_states_writes_masked_held_out_necklaces(necklace, capsys):
    necklace.print_states(20, seed=3)
    lines = capsys.readouterr().out.split()
    assert len(lines) == 20 and all(len(s) == 10 and s.count("_") >= 2 for s in lines)
    held = {"".join(necklace.ALPHABET[t - 1] for t in r) for r in necklace.SPLITS["heldout"]}
    assert all(any(all(a in ("_", b) for a, b in zip(s, h)) for h in held) for s in lines)
    with pytest.raises(ValueError, match="a count of at least 1 and a split of"):
        necklace.print_states(0)


def mi_core(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``python -m mi_core ARGS`` in ``cwd``, with the example found as examples/README.md finds it."""
    env = os.environ | {"MI_LENS_DOMAINS": "necklace", "PYTHONPATH": f"{EXAMPLES}{os.pathsep}{ROOT}"}
    env.pop("MI_LENS_NECKLACE_MODEL", None)
    env.pop("MI_LENS_NECKLACE_ESTIMATOR", None)
    done = subprocess.run([sys.executable, "-m", "mi_core", *args, "--threads", "1"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def trained(necklace, tmp_path_factory) -> Path:
    """A working folder where ``train necklace`` ran for 20 steps: its weights in ``runs/necklace/``."""
    folder = tmp_path_factory.mktemp("necklace")
    mi_core(["train", "necklace", "--out", "runs/necklace/necklace_mdm.safetensors", "--steps", "20", "--batch", "16",
             "--eval-every", "10", "--eval-sequences", "20", "--train-necklaces", "200", "--val-necklaces", "20"],
            folder)
    return folder


def test_train_probe_and_bench_through_the_command_line(trained):
    weights = trained / "runs" / "necklace" / "necklace_mdm.safetensors"
    assert weights.exists() and json.loads(weights.with_suffix(".json").read_text())["config"]["max_len"] == 10
    probe = mi_core(["probe", "necklace", "--state", "R____G____", "--json", "probe.json"], trained)
    assert "probed 8 masked beads" in probe.stdout + probe.stderr
    record = json.loads((trained / "probe.json").read_text())
    mi = np.array(record["mi"])
    assert mi.shape == (10, 10) and (mi >= -1e-6).all()
    assert Path(record["model"]) == weights  # no --model: the default, the file train wrote in this folder
    states = trained / "states.txt"
    states.write_text("R____G____\n__________\nRGRGRGRGR_\n")
    mi_core(["bench", "necklace", "--puzzles", str(states), "--json", "bench.json"], trained)
    result = json.loads((trained / "bench.json").read_text())
    assert result["n"] == 3 and 0 <= result["accuracy"] <= 1 and Path(result["model"]) == weights


@pytest.mark.slow
def test_an_estimator_is_made_and_read_without_a_width(trained):
    """The state source gives no ``width`` (a fixed length): make-estimator-data still writes unpadded shards, and
    ``bench --sampler mi`` reads the estimator from the default path."""
    from mi_core.train.estimator_data import load_shards

    mi_core(["make-estimator-data", "necklace", "--out", "runs/necklace/data", "--states", "16"], trained)
    shards, _ = load_shards(trained / "runs" / "necklace" / "data")
    assert "length" not in shards and shards["tokens"].shape == (16, 10)
    mi_core(["train-estimator", "--data", "runs/necklace/data", "--out", "runs/necklace/necklace_mi_estimator.safetensors",
             "--variants", "log:free", "--steps", "20", "--eval-every", "10"], trained)
    (trained / "mi_states.txt").write_text("R____G____\n__________\n")
    mi_core(["bench", "necklace", "--puzzles", "mi_states.txt", "--sampler", "mi", "--json", "bench_mi.json"], trained)
    result = json.loads((trained / "bench_mi.json").read_text())
    assert result["n"] == 2 and Path(result["estimator"]) == trained / "runs/necklace/necklace_mi_estimator.safetensors"
