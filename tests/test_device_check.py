"""scripts/device_check.sh on the CPU with tiny settings, its report, and the commands it calls without
plotly, streamlit or esm (absent on the GPU machine)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
DATA = [SHARED / "sudoku" / "kaggle_graded_dev.csv", SHARED / "protein" / "cath-dataset-nonredundant-S40.fa"]


def test_device_commands_import_without_plotly_streamlit_esm():
    code = ("import sys\nfor m in ('plotly', 'streamlit', 'esm'): sys.modules[m] = None\n"
            "import mi_core.cli, mi_core.bench.sweep, mi_core.domains.sudoku.bench_probe, mi_core.bench.estimator, "
            "scripts.probe_scaling, mi_core.train.estimator, mi_core.order.train\n"
            "import tests.test_cuda\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_report_gathers_steps_and_sections(tmp_path):
    (tmp_path / "steps.jsonl").write_text('{"step": "cuda_tests", "rc": 0, "seconds": 3.5, "timed_out": false}\n'
                                          '{"step": "sweep", "rc": 1, "seconds": 9.0, "timed_out": false}\n')
    (tmp_path / "cuda_tests.log").write_text("....\n6 passed in 3.1s\n")
    (tmp_path / "sweep.json").write_text("[]\n")
    (tmp_path / "benchmarks_gpu_raw.md").write_text("# MI Lens benchmarks\n\nEvery table ...\n\n"
                                                    "<!-- bench-probe:start -->\n## Exact probe\n\n| a |\n"
                                                    "<!-- bench-probe:end -->\n")
    rc = subprocess.run([sys.executable, "scripts/device_report.py", str(tmp_path), "cuda"], cwd=ROOT).returncode
    assert rc == 1  # a step failed
    report = json.loads((tmp_path / "device_check.json").read_text())
    assert report["cuda_tests"] == "6 passed in 3.1s" and report["results"]["sweep"] == []
    assert report["results"]["scaling"] is None and [s["step"] for s in report["steps"]] == ["cuda_tests", "sweep"]
    md = (tmp_path / "gpu_section.md").read_text()
    assert md.startswith("<!-- gpu:start -->\n## GPU") and md.rstrip().endswith("<!-- gpu:end -->")
    assert "### Exact probe" in md and "bench-probe:start" not in md and "sweep FAILED (rc 1)" in md


@pytest.mark.slow
@pytest.mark.skipif(not all(p.is_file() for p in DATA), reason="../shared/data not present")
def test_device_check_runs_on_cpu_with_tiny_settings(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for p in DATA:
        shutil.copy(p, data)
    out = tmp_path / "out"
    env = {**os.environ, "DEVICE_CHECK_DEVICE": "cpu", "DEVICE_CHECK_SMALL": "1", "DEVICE_CHECK_DATA": str(data),
           "DEVICE_CHECK_OUT": str(out), "OMP_NUM_THREADS": "1", "PYTHON": sys.executable}
    proc = subprocess.run(["bash", "scripts/device_check.sh"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((out / "device_check.json").read_text())
    assert [s["rc"] for s in report["steps"]] == [0] * 6
    assert all(report["results"][k] for k in ("bench_probe", "eval_estimator", "sweep", "scaling"))
    assert {r["sampler"] for r in report["results"]["sweep"]} == {"sequential", "topk", "eb", "mi", "learned"}
    assert "skipped" in report["cuda_tests"]  # no CUDA here: the cuda tests are reported as skipped
    assert "## GPU" in (out / "gpu_section.md").read_text()


@pytest.mark.slow  # about a minute: it builds the default grid pool
def test_train_gpu_pool_step_runs(tmp_path):
    """The Python that scripts/train_gpu.sh runs first (the cached pools) still fits the trainer's config."""
    script = (ROOT / "scripts" / "train_gpu.sh").read_text()
    code = script.split("<<'PY'\n", 1)[1].split("\nPY\n", 1)[0].replace('root="device_data/pools"',
                                                                        f'root="{tmp_path}"')
    proc = subprocess.run([sys.executable, "-", "40", "1"], input=code, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "graded puzzles" in proc.stdout


def test_report_refuses_missing_arguments_and_folder(tmp_path):
    """Without its arguments or with a folder that is not there, the report was a traceback."""
    for args in ([], [str(tmp_path / "missing"), "cuda"]):
        proc = subprocess.run([sys.executable, "scripts/device_report.py", *args], cwd=ROOT, capture_output=True, text=True)
        assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
