"""A disk that fills up, a folder that cannot be written, a run stopped by SIGTERM: each is one clear line, and no
file is left half-written.

A full disk is made without privileges: the command runs under ``RLIMIT_FSIZE`` (a write past the limit fails with
EFBIG, "File too large", as one past a full disk fails with ENOSPC), or writes its log to ``/dev/full``.
"""

import errno
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

from mi_core import cli
from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig, save_sudoku_mdm
from mi_core.io import OutputPathError, check_output, line_log

REPO = Path(__file__).resolve().parent.parent
TINY = ["--threads", "1", "--d-model", "32", "--n-layers", "1", "--n-heads", "2", "--d-ff", "64", "--grid-pool", "200",
        "--puzzle-pool", "50", "--max-harden", "5", "--eval-puzzles", "4", "--eval-every", "10", "--onpolicy-every",
        "0", "--batch", "16", "--pool-workers", "1", "--steps", "10", "--log-every", "10"]
ORDER = ["--steps-budget", "5", "--eval-every", "5", "--batch", "4", "--samples", "2", "--width", "16", "--threads",
         "1", "--puzzle-pool", "20", "--eval-puzzles", "4", "--updates", "5"]


def run(args: list[str], limit: int | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    return run_module("mi_core", args, limit, timeout)


def run_module(module: str, args: list[str], limit: int | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    def cap():  # a write past ``limit`` bytes fails (EFBIG) instead of killing the process with SIGXFSZ
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "PYTHONPATH": str(REPO), "MI_LENS_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, env=env,
                          timeout=timeout, preexec_fn=cap if limit else None)


def one_error(proc: subprocess.CompletedProcess, text: str) -> None:
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-1500:]
    assert len(errors) == 1 and text in errors[0], errors


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny Sudoku MDM trained for 10 steps (its pools cached in ``pools``), in a folder of its own."""
    root = tmp_path_factory.mktemp("trained")
    proc = run(["train", "sudoku", *TINY, "--pool-dir", str(root / "pools"), "--out", str(root / "m.safetensors")])
    assert proc.returncode == 0, proc.stderr[-1500:]
    return root


def test_a_full_disk_at_the_pool_cache_is_one_line(tmp_path, trained):
    proc = run(["train", "sudoku", *TINY, "--pool-dir", str(tmp_path / "pools"), "--out", str(tmp_path / "m.safetensors")],
               limit=100_000)  # the pools' file (about 200 kB) does not fit
    one_error(proc, f"cannot write {tmp_path / 'pools'}/pool_")
    assert "File too large" in proc.stderr and not list((tmp_path / "pools").iterdir())  # no part of it left


@pytest.mark.parametrize("limit, what", [(30_000, "m_last.safetensors"), (100_000, "m.ckpt")])
def test_a_full_disk_at_a_trainers_save_is_one_line(tmp_path, trained, limit, what):
    """The weights (42 kB) or the checkpoint (150 kB) do not fit: torch.save raised a RuntimeError traceback and left
    ``m.ckpt.tmp``, save_model an OSError traceback."""
    proc = run(["train", "sudoku", *TINY, "--pool-dir", str(trained / "pools"), "--out", str(tmp_path / "m.safetensors")],
               limit=limit)
    one_error(proc, f"cannot write {tmp_path / what}: File too large")
    assert not list(tmp_path.glob("*.tmp"))


def test_a_full_disk_at_the_order_trainers_log_and_checkpoint(tmp_path, trained):
    model = str(trained / "m.safetensors")
    if Path("/dev/full").exists():
        proc = run(["train-order", "sudoku", "--model", model, *ORDER, "--out", str(tmp_path / "o.safetensors"),
                    "--log", "/dev/full", "--force"])
        one_error(proc, "cannot write /dev/full: No space left on device")
    proc = run(["train-order", "sudoku", "--model", model, *ORDER, "--out", str(tmp_path / "p.safetensors")],
               limit=20_000)  # the selector (5 kB) fits, its checkpoint (57 kB) does not
    one_error(proc, f"cannot write {tmp_path / 'p.ckpt'}: File too large")
    assert not list(tmp_path.glob("*.tmp"))


def test_save_model_on_a_full_disk_names_the_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "m.safetensors"
    model = SudokuMDM(SudokuMDMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=16))

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OutputPathError, match=f"cannot write {path}: No space left on device"):
        save_sudoku_mdm(model, path)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("argv", [["train", "sudoku"], ["train-order", "sudoku"]])
def test_resume_into_a_folder_that_cannot_be_written_stops_before_any_work(tmp_path, monkeypatch, capsys, argv):
    """Before, the run went on (the pools built, training until its first save) and then raised a traceback."""
    def read_only(*a, **k):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "TemporaryFile", read_only)
    out = tmp_path / "m.safetensors"
    assert cli.main([*argv, "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: --out {out}: cannot write in {tmp_path} (Read-only file system)"]


def test_sigterm_says_so_and_leaves_whole_files(tmp_path, trained):
    """SIGTERM (``kill``, ``timeout``, a scheduler) killed the process silently, before its clean-up ran (Ctrl-C:
    ``test_scale.py``)."""
    out = tmp_path / "shards"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "mi_core", "make-estimator-data", "sudoku", "--model",
                             str(trained / "m.safetensors"), "--out", str(out), "--states", "400", "--shard-size", "4",
                             "--pool", "20", "--threads", "1"], stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 120
    while not list(out.glob("shard_*.safetensors")) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in err, err[-1500:]
    assert err.strip().splitlines()[-1] == (f"interrupted (SIGTERM): the files already written are whole; {out} keeps "
                                            "the shards written: the same command again continues")
    assert not list(out.glob("*.tmp"))
    for shard in out.glob("shard_*.safetensors"):  # every shard written is whole
        from safetensors.torch import load_file
        assert all(isinstance(t, torch.Tensor) for t in load_file(shard).values())
    assert json.loads((out / "manifest.json").read_text())


STOP_WHILE_LOADING = """
import signal, sys
from mi_core import cli
def load_builtin():
    if {sig} == signal.SIGINT:
        raise KeyboardInterrupt  # Ctrl-C, as Python takes it
    signal.raise_signal({sig})
cli.load_builtin = load_builtin
sys.exit(cli.main(["bench-order", "--help"]))
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_while_the_domains_load_is_one_line(sig):
    """The domains load (torch) for a second before any command: Ctrl-C there printed a KeyboardInterrupt traceback,
    and SIGTERM ended the run without a word."""
    done = subprocess.run([sys.executable, "-c", STOP_WHILE_LOADING.format(sig=int(sig))], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 128 + sig and "Traceback" not in done.stderr, done.stderr[-1500:]
    assert done.stderr.startswith(f"interrupted ({'Ctrl-C' if sig == signal.SIGINT else 'SIGTERM'})")

CTRL_C_AT_EXIT = """
import atexit, runpy, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
atexit.register(signal.raise_signal, signal.SIGINT)  # Ctrl-C as Python shuts down, the command done
sys.argv = ["mi_core", "--help"]
runpy.run_module("mi_core", run_name="__main__")
"""


def test_ctrl_c_as_a_finished_command_exits_is_no_traceback():
    """A random Ctrl-C that came as Python shut down (after the command had written its files) printed
    'Exception ignored ... KeyboardInterrupt' with a traceback."""
    done = subprocess.run([sys.executable, "-c", CTRL_C_AT_EXIT], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, \
        done.stderr[-1500:]

def test_a_stopped_training_run_names_its_checkpoint_and_resumes_from_it(tmp_path, trained):
    out = tmp_path / "m.safetensors"
    args = ["train", "sudoku", *TINY, "--pool-dir", str(trained / "pools"), "--out", str(out)]
    args[args.index("--steps") + 1] = "100000"
    proc = subprocess.Popen([sys.executable, "-m", "mi_core", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    deadline = time.time() + 120
    while not out.with_suffix(".ckpt").exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    last = err.strip().splitlines()[-1]
    assert proc.returncode == 143 and "Traceback" not in err, err[-1500:]
    said = re.fullmatch(r"interrupted \(SIGTERM\): the files already written are whole; (.+) holds step (\d+): add "
                        "--resume to the same command to continue from there", last)
    assert said and said[1] == str(out.with_suffix(".ckpt")), last
    step = int(said[2])
    args[args.index("--steps") + 1] = str(step + 10)
    done = run([*args, "--resume"])
    assert done.returncode == 0 and f"at step {step}" in done.stdout and json.loads(done.stdout.splitlines()[-1])["step"] == step + 10


def test_a_stopped_run_without_out_names_the_out_that_resume_needs(tmp_path, trained):
    """Without --out a run writes runs/<name>_<time>.safetensors: the line said "add --resume to the same command",
    which then said "--resume needs the --out of the run to continue"."""
    args = ["train", "sudoku", *TINY, "--pool-dir", str(trained / "pools")]
    args[args.index("--steps") + 1] = "100000"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "mi_core", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=tmp_path)
    deadline = time.time() + 120
    while not list(tmp_path.glob("runs/*.ckpt")) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    last = err.strip().splitlines()[-1]
    said = re.fullmatch(r"interrupted \(SIGTERM\): the files already written are whole; (.+) holds step (\d+): add "
                        r"--resume --out (\S+) to the same command to continue from there", last)
    assert proc.returncode == 143 and said, last
    assert said[3] == str(Path(said[1]).with_suffix(".safetensors")) and (tmp_path / said[3]).is_file()
    args[args.index("--steps") + 1] = str(int(said[2]) + 10)
    done = subprocess.run([sys.executable, "-m", "mi_core", *args, "--resume", "--out", said[3]], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=240)
    assert done.returncode == 0 and f"at step {said[2]}" in done.stdout, done.stderr[-1500:]


class Stopped(Exception):
    pass


def test_a_stop_while_a_checkpoint_is_written_is_taken_once_the_stop_line_names_it(tmp_path, monkeypatch):
    """A SIGTERM between a checkpoint's rename and its note for the stop line said the run kept no checkpoint (or an
    older step's) while the new one stood on disk; the stop now waits until both are done."""
    from mi_core.io import ON_STOP, note_on_stop
    from mi_core.train.mdm import save_checkpoint

    class Task:
        name, cfg = "toy", SudokuMDMConfig()

        def state_dict(self):
            return {}

    real_save = torch.save

    def save_then_stop(obj, f, *args, **kwargs):  # the signal lands inside the write, as a `kill` may
        real_save(obj, f, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)

    def stop(signum, frame):
        raise Stopped

    monkeypatch.setattr(torch, "save", save_then_stop)
    before = signal.signal(signal.SIGTERM, stop)
    note_on_stop(None)
    model = torch.nn.Linear(2, 2)
    model.cfg = SudokuMDMConfig()
    try:
        with pytest.raises(Stopped):
            save_checkpoint(tmp_path / "run.ckpt", model, torch.optim.SGD(model.parameters(), lr=0.1), Task(), 300,
                            1.0, [], 0.0)
    finally:
        signal.signal(signal.SIGTERM, before)
    assert (tmp_path / "run.ckpt").is_file() and ON_STOP == [
        f"{tmp_path / 'run.ckpt'} holds step 300: add --resume to the same command to continue from there"]
    note_on_stop(None)


def test_sweep_plot_beside_on_a_full_disk_keeps_the_old_html(tmp_path):
    """``--plotlyjs beside`` wrote with plotly's write_html: a full disk left a cut HTML over the old one and said
    ``error: [Errno 28] No space left on device``."""
    rows = sorted((REPO / "assets" / "benchmarks").glob("sweep*.json"))[0]
    out = tmp_path / "plot.html"
    out.write_text("the old plot")
    (tmp_path / "plotly.min.js").write_text("// kept")
    proc = run_module("mi_lens_app.sweep_plot", [str(rows), str(out), "--plotlyjs", "beside", "--force"], limit=2_000)
    one_error(proc, f"cannot write {out}: File too large")
    assert out.read_text() == "the old plot" and not list(tmp_path.glob("*.tmp"))
    proc = run_module("mi_lens_app.sweep_plot", [str(rows), str(out), "--plotlyjs", "beside", "--force"])
    assert proc.returncode == 0 and 'src="plotly.min.js"' in out.read_text()
    assert (tmp_path / "plotly.min.js").read_text() == "// kept"  # an existing bundle is left as it is


def test_an_output_on_a_full_disk_is_refused_before_any_work(tmp_path, monkeypatch):
    """Before, only a file was made and removed (which a full disk allows): the run did all its work and then
    failed to write (bench --sampler mi of 100 puzzles: 26 s, then the error)."""
    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OutputPathError, match=rf"--json {tmp_path}/r.json: cannot write in {tmp_path} \(No space left"):
        check_output(tmp_path / "r.json")
    assert not list(tmp_path.iterdir())


def test_a_log_stopped_before_its_first_line_leaves_no_file(tmp_path):
    """``train-order`` stopped while it built its data left an empty ``_log.jsonl``, and the same command then asked
    for --force; with --force, an old log was emptied before the run wrote a line."""
    path = tmp_path / "sel_log.jsonl"
    with line_log(path):
        pass
    assert not path.exists()
    path.write_text("old\n")
    with pytest.raises(KeyboardInterrupt), line_log(path):
        raise KeyboardInterrupt
    assert path.read_text() == "old\n"
    with line_log(path) as write:
        write("new")
    assert path.read_text() == "new\n"
