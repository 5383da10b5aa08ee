"""The scripts under ``scripts/`` against today's ``mi_core``: the command lines ``scripts/reproduce.sh`` and the
shell studies run still parse, and the studies find the repository's files from where they now live."""

import argparse
import importlib.util
import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from mi_core.cli import parse
from mi_core.domain import load_builtin

ROOT = Path(__file__).resolve().parents[1]
# what the shell scripts call, recorded instead of run: python (argv NUL-separated, one record per call, and the
# Sudoku model its environment names a line each in calls.env), the chained run's script, the commands that copy or
# check out files
STUBS = r"""
record() { { printf '%s\0' "$@"; printf '\1\0'; } >> "$CALLS"; echo "${MI_LENS_SUDOKU_MODEL:-}" >> "$CALLS.env"; }
python() { if [ "${1:-}" = - ]; then cat > /dev/null; fi; record "$@"; }
python3() { python "$@"; }
cp() { :; }
git() { :; }
scripts/sudoku_chain.sh() { :; }
bash() { test -f "$REPO/$1"; }  # the shell studies reproduce.sh runs are run below on their own
"""
SHELL_SCRIPTS = [("scripts/reproduce.sh",), ("scripts/protein_estimator.sh",), ("scripts/studies/protein_seed_noise.sh",),
                 ("scripts/studies/sudoku_compare.sh", "runs/pool.txt.gz", "runs/val.txt.gz", "runs/compare", "480")]


def recorded_calls(tmp_path: Path) -> list[list[str]]:
    """Every python command line of the shell scripts, run to their end with the stubs above in ``tmp_path``."""
    (tmp_path / "stubs.sh").write_text(STUBS)
    (tmp_path / "runs").mkdir()
    data = tmp_path / "data"
    data.mkdir()
    for name in ("kaggle_graded_dev.csv", "top1465.txt"):  # the files the script cuts tuning sets from
        (data / name).write_text("puzzle,solution\n")
    calls = tmp_path / "calls"
    env = {"PATH": "/usr/bin:/bin", "BASH_ENV": str(tmp_path / "stubs.sh"), "CALLS": str(calls), "DATA": str(data),
           "REPO": str(ROOT)}
    for script, *args in SHELL_SCRIPTS:
        proc = subprocess.run(["bash", str(ROOT / script), *args], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, (f"{script} stopped (exit {proc.returncode}) after {last_call(calls)}: "
                                      f"{proc.stderr[-2000:]}")
    return read_calls(calls)


def read_calls(calls: Path) -> list[list[str]]:
    records = calls.read_bytes().split(b"\x01\x00")[:-1] if calls.is_file() else []
    return [[a.decode() for a in r.split(b"\x00")[:-1]] for r in records]


def last_call(calls: Path) -> str:
    recorded = read_calls(calls)
    return "python " + " ".join(recorded[-1]) if recorded else "no python call"


class Parsed(Exception):
    """Raised where a script's parser returns: its options parsed, nothing run."""


def check_script(argv: list[str], monkeypatch) -> None:
    """``python SCRIPT ARGS`` or ``python -m MODULE ARGS``: its file exists and its argparse parser takes ARGS."""
    module = argv[0] == "-m"
    target = argv[1] if module else argv[0]
    args = argv[2:] if module else argv[1:]
    if not module:
        assert (ROOT / target).is_file(), f"no script {target}"
        if "argparse" not in (ROOT / target).read_text():  # reads sys.argv itself
            return
    parse_args = argparse.ArgumentParser.parse_args

    def stop(self, *a, **kw):
        raise Parsed(parse_args(self, *a, **kw))

    with monkeypatch.context() as m:
        m.setattr(argparse.ArgumentParser, "parse_args", stop)
        m.setattr(sys, "argv", [target, *args])
        with pytest.raises(Parsed):
            if module:
                m.delitem(sys.modules, target, raising=False)  # imported by another test: runpy warns of it
                runpy.run_module(target, run_name="__main__")
            else:
                runpy.run_path(str(ROOT / target), run_name="__main__")


def test_shell_scripts_command_lines_parse(tmp_path, monkeypatch):
    """reproduce.sh once stopped at its phase-5 loop (under set -e a failed test inside $(...) ends the script),
    and its bench-suite line lacked --json, required since the command stopped writing a default file."""
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.chdir(ROOT)
    load_builtin()
    calls = recorded_calls(tmp_path)
    engine = [c[2:] for c in calls if c[:2] == ["-m", "mi_core"]]
    assert len(engine) > 200
    for argv in engine:
        parse(argv)  # a bad option or value exits (SystemExit 2), an unknown command raises
    for argv in calls:
        if argv[:2] != ["-m", "mi_core"] and argv[0] not in ("-c", "-"):
            check_script(argv, monkeypatch)
    inline = [c[1] for c in calls if c[0] == "-c"]
    assert inline and all(compile(code, "-c", "exec") for code in inline)


def test_reproduce_runs_each_table_on_the_model_its_rows_record(tmp_path):
    """reproduce.sh exported the first model's MI_LENS_SUDOKU_MODEL (and estimator, selector) for its first steps and
    never unset them, so the 32 later decoding runs that name no model (the soup's views, MI-guided and --attempts
    tables) ran on the first model, not the default their committed rows record."""
    calls = recorded_calls(tmp_path)
    models = (tmp_path / "calls.env").read_text().splitlines()
    assert len(models) == len(calls)
    checked, wrong = 0, []
    for argv, env_model in zip(calls, models):
        if argv[:2] != ["-m", "mi_core"] or argv[3:4] != ["sudoku"] or "--json" not in argv:
            continue
        out = ROOT / argv[argv.index("--json") + 1]
        if not out.is_file() or out.parent != ROOT / "assets" / "benchmarks":
            continue
        data = json.loads(out.read_text())
        rows = data if isinstance(data, list) else data.get("rows", [data])
        recorded = {r.get("model") for r in rows if isinstance(r, dict)}
        if len(recorded) != 1 or not str(next(iter(recorded))).endswith(".safetensors"):
            continue
        model = argv[argv.index("--model") + 1] if "--model" in argv else env_model or "(the shipped default)"
        checked += 1
        if model == "assets/sudoku_mdm.safetensors" != next(iter(recorded)):
            wrong.append(f"{out.name}: runs {model}, its rows record {recorded.pop()}")
    assert checked > 100 and not wrong, wrong


def load_study(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "studies" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_scale_report_reads_the_committed_figures(tmp_path):
    """bench_scale.py looked for its files under scripts/ (assets/benchmarks/scale.json, the model, Ray's
    PYTHONPATH) since it moved into scripts/studies/."""
    bench_scale = load_study("bench_scale")
    assert (bench_scale.ROOT / "mi_core").is_dir()
    out = tmp_path / "B.md"
    assert bench_scale.main(["--report-only", "--markdown", str(out)]) == 0
    assert "## Scale-out: make-estimator-data" in out.read_text()


def test_order_experiments_finds_its_files_and_tunes(monkeypatch):
    """order_experiments.py looked for the model, selector and puzzles under scripts/ since its move."""
    study = load_study("order_experiments")
    assert study.MODEL.is_file() and study.SELECTOR.is_file()
    if not study.PUZZLES.is_file():
        pytest.skip("../shared/data not present")
    records = study.pick_records(study.PUZZLES, 1, skip=100)  # one tuning puzzle a level
    monkeypatch.setattr(study, "tuning_slice", lambda: records)
    rows = study.tune(study.load_sudoku_mdm(study.MODEL), [(5, "learned", {"steps": 5, "mode": "paced", "threshold": 0.7})])
    assert rows[0]["n"] == len(records) and rows[0]["mean_passes"] <= 5


def test_chain_status_without_a_run_says_so_and_creates_nothing(tmp_path):
    """``sudoku_chain.sh status`` (or a misspelt command) created the run's folder and status then failed in tail."""
    run = tmp_path / "chain" / "run"
    for command, code, line in (("status", 1, f"error: no run at {run} (start begins one)"),
                                ("bogus", 2, "usage: ")):
        proc = subprocess.run(["bash", "scripts/sudoku_chain.sh", command], cwd=ROOT, capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", "CHAIN_DIR": str(run)})
        assert proc.returncode == code and proc.stderr.startswith(line) and proc.stderr.count("\n") == 1, proc.stderr
        assert not (tmp_path / "chain").exists()


def test_the_click_through_opens_every_blank_cell_of_every_preset_under_each_scale(capsys):
    """scripts/click_memory.py: the 975 views of the MI map's click-through (6 presets, 325 blank cells, 3 scales),
    each once; its arguments are checked before any server starts."""
    sys.path.insert(0, str(ROOT))
    from scripts import click_memory

    views = click_memory.views()
    assert len(views) == len(set(views)) == 975
    assert "cell=r1c2" in views[0] and "scale=linear" in views[0] and "scale=percentile" in views[-1]
    with pytest.raises(SystemExit):
        click_memory.main(["--url", "http://127.0.0.1:9"])  # no --pid: refused, nothing opened
    assert "--url and --pid go together" in capsys.readouterr().err
