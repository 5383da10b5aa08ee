"""The Benchmarks page names the folder it read: with ``MI_LENS_BENCHMARKS`` set (a plugin's own sweeps), it said
"Results are read from assets/benchmarks/*.json" and told to write a sweep there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toy_domain import TOY

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def toy():
    from mi_core.domain import register, unregister

    register(TOY)
    yield TOY
    unregister(TOY.key)


def _words(at) -> str:
    parts = [*at.markdown, *at.caption, *at.info, *at.selectbox]
    return " ".join(f"{getattr(e, 'value', '')} {getattr(e, 'label', '')} {getattr(e, 'help', '')}" for e in parts)


def _page(monkeypatch, folder: Path, domain: str):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("MI_LENS_BENCHMARKS", str(folder))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.switch_page("pages/5_Benchmarks.py")
    at.query_params["domain"] = domain
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return _words(at)


def test_the_page_names_the_folder_of_its_sweeps(toy, tmp_path, monkeypatch):
    row = {"sampler": "sequential", "params": {}, "n": 4, "accuracy": 0.5, "mean_passes": 3.0,
           "command": "python -m mi_core sweep toy6 --puzzles s.txt --json sweep_s.json"}
    (tmp_path / "sweep_s.json").write_text(json.dumps([row]))
    words = _page(monkeypatch, tmp_path, "toy6")
    assert f"{tmp_path}/*.json" in words and "assets/benchmarks" not in words, words


def test_a_domain_with_no_sweep_is_told_to_write_one_into_that_folder(toy, tmp_path, monkeypatch):
    row = {"sampler": "sequential", "params": {}, "n": 4, "accuracy": 0.5, "mean_passes": 3.0,
           "command": "python -m mi_core sweep sudoku --puzzles s.txt --json sweep_s.json"}
    (tmp_path / "sweep_s.json").write_text(json.dumps([row]))
    words = _page(monkeypatch, tmp_path, "toy6")
    assert f"--json {tmp_path}/sweep_<set>.json" in words and "assets/benchmarks" not in words, words


def test_a_relative_or_home_folder_is_read_from_the_working_folder(tmp_path, monkeypatch):
    """MI_LENS_BENCHMARKS=mine set in another folder was read as <checkout>/mine (and ~/mine as <checkout>/~/mine),
    while the page told to write ``sweep --json mine/sweep_<set>.json``, which lands in the working folder."""
    from mi_lens_app import benchmarks

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MI_LENS_BENCHMARKS", "mine")
    assert benchmarks.bench_dir() == tmp_path / "mine" and benchmarks.bench_dir_name() == "mine"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MI_LENS_BENCHMARKS", "~/sweeps")
    assert benchmarks.bench_dir() == tmp_path / "home" / "sweeps"
    monkeypatch.delenv("MI_LENS_BENCHMARKS")  # the default is the checkout's, named so from here
    assert benchmarks.bench_dir() == ROOT / "assets" / "benchmarks"
    assert benchmarks.bench_dir_name() == str(ROOT / "assets" / "benchmarks")
    monkeypatch.chdir(ROOT)
    assert benchmarks.bench_dir_name() == "assets/benchmarks"
