"""Kill writers at random moments and count how often the files on disk still load.

``python scripts/fault_inject.py --repo PATH --runs N [--seed S] [--json OUT]`` measures a checkout (an old
commit checked out with ``git worktree add`` works too; ``--old`` for one without ``--force``):

- training: a pre-existing 32-dim Sudoku MDM at ``m.safetensors`` is overwritten by a tiny 16-dim training
  run that saves every step; the run gets SIGTERM or SIGKILL at a random moment after its first save, then
  the checkout's own loader must load ``m.safetensors`` and ``m_last.safetensors`` (in a subprocess);
- bench: ``bench sudoku --json`` over a file that holds a previous result is killed at a random moment;
  the JSON must still parse.

``--mode writes`` kills at a chosen file-system write instead of a random moment: the command runs under a
hook that counts calls of ``Path.write_text``/``write_bytes``, ``safetensors.torch.save_file`` and
``os.replace`` and, at call number K (drawn at random), writes half of the data (or, for a rename, nothing)
and SIGKILLs its own process: a crash exactly inside a save, which random timing rarely hits.

Prints and writes the counts: faults injected, files that loaded, files that did not.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EASY = "..9.7.1.....2.8...2...3...4.9.........8....311.6...52.....6327.....9.6...1...7.5."
SEED_MODEL = """
import sys, torch
from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig, save_sudoku_mdm
torch.manual_seed(0)
save_sudoku_mdm(SudokuMDM(SudokuMDMConfig(d_model=32, n_layers=1, n_heads=2, d_ff=32)), sys.argv[1])
"""
LOAD = """
import sys
from mi_core.domains.sudoku.mdm import load_sudoku_mdm
print(load_sudoku_mdm(sys.argv[1]).cfg.d_model)
"""


HOOK = """
import os, pathlib, signal, sys
K = int(os.environ["FAULT_AT"])
calls = [0]

def due():
    calls[0] += 1
    return calls[0] == K

def die():
    os.kill(os.getpid(), signal.SIGKILL)

real_text, real_bytes, real_replace = pathlib.Path.write_text, pathlib.Path.write_bytes, os.replace

def write_text(self, data, *a, **k):
    if due():
        real_text(self, data[: len(data) // 2], *a, **k)
        die()
    return real_text(self, data, *a, **k)

def write_bytes(self, data):
    if due():
        real_bytes(self, data[: len(data) // 2])
        die()
    return real_bytes(self, data)

def replace(src, dst, *a, **k):
    if due():
        die()
    return real_replace(src, dst, *a, **k)

import safetensors.torch as st
real_save = st.save_file

def save_file(tensors, filename, metadata=None):
    if due():
        data = st.save(tensors, metadata=metadata)
        with open(filename, "wb") as fh:
            fh.write(data[: len(data) // 2])
        die()
    return real_save(tensors, filename, metadata=metadata)

pathlib.Path.write_text, pathlib.Path.write_bytes, os.replace, st.save_file = write_text, write_bytes, replace, save_file
from mi_core.cli import main
sys.exit(main(sys.argv[1:]))
"""


def launch(repo: Path, args: list[str], fault_at: int | None) -> subprocess.Popen:
    """``python -m mi_core ARGS``, or with ``fault_at`` the same under :data:`HOOK` (killed at that write)."""
    env = env_for(repo)
    cmd = [sys.executable, "-m", "mi_core", *args]
    if fault_at is not None:
        env["FAULT_AT"] = str(fault_at)
        cmd = [sys.executable, "-c", HOOK, *args]
    return subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def env_for(repo: Path) -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(repo)}


def kill_after(proc: subprocess.Popen, delay: float, sig: int) -> bool:
    """Send ``sig`` after ``delay`` seconds; True when the process was still running (a fault injected)."""
    try:
        proc.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(sig)
        proc.wait(timeout=60)
        return True


def train_round(repo: Path, folder: Path, rng: random.Random, old: bool, fault_at: int | None = None) -> dict:
    out = folder / "m.safetensors"
    subprocess.run([sys.executable, "-c", SEED_MODEL, str(out)], cwd=repo, env=env_for(repo), check=True)
    args = ["train", "sudoku", "--out", str(out), "--device", "cpu", "--threads", "1", "--steps", "100000",
            "--d-model", "16", "--n-layers", "1", "--n-heads", "2", "--d-ff", "16", "--batch", "4",
            "--grid-pool", "20", "--puzzle-pool", "20", "--eval-every", "1", "--eval-puzzles", "2", "--max-harden", "5", "--no-bf16"]
    if not old:
        args.append("--force")
    proc = launch(repo, args, fault_at)
    if fault_at is None:
        start = time.time()
        while time.time() - start < 120 and proc.poll() is None and not (folder / "m_last.safetensors").exists():
            time.sleep(0.02)
        sig = rng.choice([signal.SIGTERM, signal.SIGKILL])
        injected = kill_after(proc, rng.uniform(0.0, 1.5), sig)
    else:
        sig = signal.SIGKILL
        injected = proc.wait(timeout=300) == -signal.SIGKILL
    loads = {}
    for name in ("m", "m_last"):
        path = folder / f"{name}.safetensors"
        if path.exists():
            res = subprocess.run([sys.executable, "-c", LOAD, str(path)], cwd=repo, env=env_for(repo),
                                 capture_output=True, text=True, check=False)
            loads[name] = res.returncode == 0
    orphans = sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))
    return {"kind": "train", "signal": sig.name, "fault_at": fault_at, "injected": injected, "loads": loads,
            "orphans": orphans}


def bench_round(repo: Path, folder: Path, rng: random.Random, old: bool, fault_at: int | None = None) -> dict:
    puzzles = folder / "p.txt"
    puzzles.write_text(EASY + "\n")
    out = folder / "b.json"
    out.write_text(json.dumps({"previous": "result"}) + "\n")
    args = ["bench", "sudoku", "--puzzles", str(puzzles), "--json", str(out), "--device", "cpu", "--batch-size", "1"]
    if not old:
        args.append("--force")
    proc = launch(repo, args, fault_at)
    if fault_at is None:
        sig = rng.choice([signal.SIGTERM, signal.SIGKILL])
        injected = kill_after(proc, rng.uniform(1.0, 6.0), sig)
    else:
        sig = signal.SIGKILL
        injected = proc.wait(timeout=300) == -signal.SIGKILL
    try:
        json.loads(out.read_text())
        ok = True
    except (OSError, ValueError):
        ok = False
    return {"kind": "bench", "signal": sig.name, "fault_at": fault_at, "injected": injected, "loads": {"b.json": ok}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    p.add_argument("--runs", type=int, default=10, help="kills of each kind")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--old", action="store_true", help="the checkout has no --force option")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--mode", choices=["timing", "writes"], default="timing",
                   help="timing: a signal at a random moment; writes: SIGKILL inside the K-th file write (K random)")
    args = p.parse_args(argv)
    repo, rng, rows = args.repo.resolve(), random.Random(args.seed), []
    for i in range(args.runs):
        for kind, most in ((train_round, 12), (bench_round, 1)):
            fault_at = rng.randint(1, most) if args.mode == "writes" else None
            with tempfile.TemporaryDirectory(prefix="fault_") as tmp:
                rows.append(kind(repo, Path(tmp), rng, args.old, fault_at))
            print(json.dumps(rows[-1]), flush=True)
    files = [ok for r in rows if r["injected"] for ok in r["loads"].values()]
    summary = {"repo": str(repo), "faults_injected": sum(r["injected"] for r in rows),
               "files_checked": len(files), "files_loaded": sum(files), "files_broken": len(files) - sum(files),
               "runs_with_tmp_orphans": sum(bool(r.get("orphans")) for r in rows if r["injected"])}
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
