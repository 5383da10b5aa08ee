"""Trainers under torchrun (docs/scale.md): DistributedDataParallel on 2 CPU processes (gloo), rank-aware data
seeds, one checkpoint written by rank 0, and one rank under torchrun giving exactly the plain run's weights."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from mi_core.scale import distributed

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def torchrun(nproc: int, args: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
           "-m", "mi_core", *args]
    return subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout)


def plain(args: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mi_core", *args], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=timeout)


def assert_same_weights(a: Path, b: Path) -> None:
    wa, wb = load_file(a), load_file(b)
    assert wa.keys() == wb.keys()
    for k in wa:
        assert torch.equal(wa[k], wb[k]), k


def test_helpers_without_torchrun():
    assert not distributed.active() and distributed.rank() == 0 and distributed.world_size() == 1
    assert distributed.is_main() and distributed.setup("cpu") == torch.device("cpu")
    net = torch.nn.Linear(2, 2)
    assert distributed.wrap(net) is net
    seeds = [distributed.rank_seed(7, r) for r in range(4)]
    assert seeds[0] == 7 and len(set(seeds)) == 4 and all(0 <= s < 2**63 for s in seeds)
    assert distributed.rank_seed(7, 3) == seeds[3] and distributed.rank_seed(8, 1) != seeds[1]


@pytest.fixture
def estimator_data(tmp_path, tiny_mdm, model_path):
    from mi_core.domains.sudoku.states import DataConfig
    from mi_core.train.estimator_data import run

    out = tmp_path / "data"
    run(tiny_mdm, model_path, DataConfig(seed=3, states=6, shard_size=3, pool=3, eps=0.0, mix=(1, 1, 1)),
        out, "cpu", log=lambda m: None)
    return out


@pytest.mark.slow  # three torchrun launches, ~20 s on 2 shared cores
def test_estimator_trainer_under_torchrun(tmp_path, estimator_data):
    args = ["train-estimator", "--data", str(estimator_data), "--variants", "log:free", "--steps", "6",
            "--eval-every", "3", "--batch", "2", "--threads", "1", "--device", "cpu", "--d-node", "8",
            "--d-proj", "4", "--d-pair", "4", "--d-pos", "4"]
    one = plain(args + ["--out", str(tmp_path / "plain.safetensors")])
    assert one.returncode == 0, one.stderr
    ddp1 = torchrun(1, args + ["--out", str(tmp_path / "ddp1.safetensors")])
    assert ddp1.returncode == 0, ddp1.stderr
    assert_same_weights(tmp_path / "plain.safetensors", tmp_path / "ddp1.safetensors")
    ddp2 = torchrun(2, args + ["--out", str(tmp_path / "ddp2.safetensors")])
    assert ddp2.returncode == 0, ddp2.stderr
    assert (tmp_path / "ddp2.safetensors").is_file()
    assert ddp2.stdout.count('"chosen"') == 1 and ddp2.stderr.count("variant log:free") == 1  # rank 0 only
    weights = load_file(tmp_path / "ddp2.safetensors")
    assert not all(torch.equal(weights[k], load_file(tmp_path / "plain.safetensors")[k]) for k in weights)


@pytest.mark.slow  # three torchrun launches, ~20 s on 2 shared cores
def test_sudoku_mdm_trainer_under_torchrun(tmp_path):
    args = ["train", "sudoku", "--steps", "4", "--batch", "8", "--grid-pool", "30", "--puzzle-pool", "8",
            "--max-harden", "10", "--eval-every", "4", "--log-every", "2", "--eval-puzzles", "0",
            "--onpolicy-every", "3", "--onpolicy-puzzles", "2", "--warmup", "2", "--no-bf16", "--d-model", "16",
            "--n-layers", "1", "--n-heads", "2", "--d-ff", "32", "--pool-dir", str(tmp_path / "pools"),
            "--device", "cpu", "--threads", "1"]
    one = plain(args + ["--out", str(tmp_path / "plain.safetensors")])
    assert one.returncode == 0, one.stderr
    ddp1 = torchrun(1, args + ["--out", str(tmp_path / "ddp1.safetensors")])
    assert ddp1.returncode == 0, ddp1.stderr
    assert_same_weights(tmp_path / "plain.safetensors", tmp_path / "ddp1.safetensors")
    ddp2 = torchrun(2, args + ["--out", str(tmp_path / "ddp2.safetensors")])
    assert ddp2.returncode == 0, ddp2.stderr
    assert (tmp_path / "ddp2.safetensors").is_file() and ddp2.stdout.count('"best_val_accuracy"') == 1


@pytest.mark.slow  # three torchrun launches, ~20 s on 2 shared cores
def test_protein_mdm_trainer_under_torchrun(tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    fasta = tmp_path / "train.fa"
    fasta.write_text("".join(f">d{i}\n{''.join(rng.choice(list('ACDEFGHIKLMNPQRSTVWY'), 40))}\n" for i in range(200)))
    args = ["train", "protein", "--fasta", str(fasta), "--steps", "3", "--batch", "4", "--eval-every", "3",
            "--eval-sequences", "4", "--no-bf16", "--d-model", "16", "--n-layers", "1", "--n-heads", "2",
            "--d-ff", "32", "--max-len", "64", "--min-len", "10", "--warmup", "1", "--device", "cpu", "--threads", "1"]
    one = plain(args + ["--out", str(tmp_path / "plain.safetensors")])
    assert one.returncode == 0, one.stderr
    ddp1 = torchrun(1, args + ["--out", str(tmp_path / "ddp1.safetensors")])
    assert ddp1.returncode == 0, ddp1.stderr
    assert_same_weights(tmp_path / "plain.safetensors", tmp_path / "ddp1.safetensors")
    ddp2 = torchrun(2, args + ["--out", str(tmp_path / "ddp2.safetensors")])
    assert ddp2.returncode == 0, ddp2.stderr
    assert (tmp_path / "ddp2.safetensors").is_file() and ddp2.stdout.count('"best_val_ce"') == 1


@pytest.mark.slow  # three torchrun launches, ~20 s on 2 shared cores
def test_order_trainer_under_torchrun(tmp_path, model_path):
    args = ["train-order", "sudoku", "--model", str(model_path), "--updates", "2", "--batch", "2", "--samples", "2",
            "--steps-budget", "3", "--no-bf16", "--width", "8", "--puzzle-pool", "4", "--eval-puzzles", "2",
            "--eval-every", "2", "--device", "cpu", "--threads", "1"]
    one = plain(args + ["--out", str(tmp_path / "plain.safetensors")])
    assert one.returncode == 0, one.stderr
    ddp1 = torchrun(1, args + ["--out", str(tmp_path / "ddp1.safetensors")])
    assert ddp1.returncode == 0, ddp1.stderr
    for name in ("", "_posterior"):
        assert_same_weights(tmp_path / f"plain{name}.safetensors", tmp_path / f"ddp1{name}.safetensors")
    ddp2 = torchrun(2, args + ["--out", str(tmp_path / "ddp2.safetensors")])
    assert ddp2.returncode == 0, ddp2.stderr
    assert (tmp_path / "ddp2_posterior.safetensors").is_file() and ddp2.stdout.count('"done": true') == 1
    assert len((tmp_path / "ddp2_log.jsonl").read_text().splitlines()) == 2  # one evaluation and done, by rank 0


FAIL_ON_RANK_1 = """
import os, sys, torch
if os.environ.get("RANK") == "1":
    backward, calls = torch.Tensor.backward, [0]
    def failing(self, *args, **kwargs):
        calls[0] += 1
        if calls[0] == 3:
            raise ValueError("bad input on rank 1")
        return backward(self, *args, **kwargs)
    torch.Tensor.backward = failing
from mi_core.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow  # one torchrun launch, ~6 s
def test_error_in_one_rank_is_one_line_on_each(tmp_path, estimator_data):
    """A user error in rank 1 is its one error line; rank 0, whose collective then fails (gloo: connection closed
    by peer), says so in one line instead of a traceback, and the job stops at once."""
    script = tmp_path / "fail.py"
    script.write_text(FAIL_ON_RANK_1)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script),
           "train-estimator", "--data", str(estimator_data), "--variants", "log:free", "--steps", "6",
           "--eval-every", "3", "--batch", "2", "--threads", "1", "--device", "cpu", "--d-node", "8", "--d-proj", "4",
           "--d-pair", "4", "--d-pos", "4", "--out", str(tmp_path / "e.safetensors")]
    done = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode != 0 and not (tmp_path / "e.safetensors").exists()
    assert errors[0] == "error: bad input on rank 1" or errors[1] == "error: bad input on rank 1"
    assert len(errors) == 2 and any(e.startswith("error: rank 0: another rank of this torchrun job stopped") for e in errors)
    assert "[rank0]: Traceback" not in done.stderr
