"""Gather the outputs of ``scripts/device_check.sh`` into ``device_check.json`` and ``gpu_section.md``.

``python3 scripts/device_report.py OUTDIR DEVICE [BENCHMARKS.md]`` (with the third argument, only the ``gpu``
section of that file is replaced, nothing is written into OUTDIR, which may be read-only).
``device_check.json``: the device, the steps (exit status, seconds, the tail of the CUDA tests' summary)
and every step's JSON. ``gpu_section.md``: the
Markdown the benchmark commands wrote, under one ``## GPU`` heading between ``<!-- gpu:start -->`` and
``<!-- gpu:end -->`` markers (their own markers removed, headings one level down), ready to paste into
BENCHMARKS.md beside the CPU figures (or to place with ``mi_core.bench.report.update_section("gpu", ...)``).
"""

from __future__ import annotations

import json
import platform
import re
import sys
import time
from pathlib import Path

STEP_JSON = {"bench_probe": "bench_probe.json", "eval_estimator": "eval_estimator.json",
             "eval_estimator_protein": "eval_estimator_protein.json", "sweep": "sweep.json", "scaling": "scaling.json"}


def device_name(device: str) -> str:
    try:
        import torch

        if device.startswith("cuda") and torch.cuda.is_available():
            return f"{torch.cuda.get_device_name(0)} (torch {torch.__version__}, CUDA {torch.version.cuda})"
        return f"{platform.processor() or platform.machine()} (torch {torch.__version__})"
    except Exception as err:  # a report is still wanted when torch itself is the problem
        return f"unknown ({err})"


def pytest_summary(log: Path) -> str:
    lines = [x for x in log.read_text().splitlines() if x.strip()] if log.is_file() else []
    return lines[-1] if lines else "no output"


def section_body(raw: str) -> str:
    """The commands' Markdown without the file header and their markers, headings one level down."""
    text = raw.split("\n", 3)[-1] if raw.startswith("# ") else raw
    text = re.sub(r"^<!-- [\w.\-]+:(start|end) -->\n?", "", text, flags=re.M)
    return re.sub(r"^(#{2,5}) ", lambda m: "#" + m.group(1) + " ", text, flags=re.M).strip()


USAGE = "usage: python3 scripts/device_report.py OUTDIR DEVICE [BENCHMARKS.md]"


def problem(argv: list[str]) -> str | None:
    """One line about arguments this script cannot use, else None."""
    if len(argv) not in (2, 3):
        return USAGE
    if not Path(argv[0]).is_dir():
        return f"{argv[0]} is not a folder (OUTDIR: where scripts/device_check.sh wrote its outputs)"
    return None


def main(argv: list[str]) -> int:
    line = problem(argv)
    if line:
        print(f"error: {line}", file=sys.stderr)
        return 2
    out, device = Path(argv[0]), argv[1]
    steps = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines() if x.strip()] \
        if (out / "steps.jsonl").is_file() else []
    prior_path = out / "device_check.json"  # present when re-run on fetched outputs: keep the device's facts
    prior = json.loads(prior_path.read_text()) if len(argv) > 2 and prior_path.is_file() else {}
    name = prior.get("device_name") or device_name(device)
    date = prior.get("date") or time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    report = {"date": date, "device": device, "device_name": name,
              "steps": steps, "cuda_tests": pytest_summary(out / "cuda_tests.log"), "results": {}}
    for step, file in STEP_JSON.items():
        path = out / file
        report["results"][step] = json.loads(path.read_text()) if path.is_file() else None
    raw = (out / "benchmarks_gpu_raw.md").read_text() if (out / "benchmarks_gpu_raw.md").is_file() else ""
    status = ", ".join(f"{s['step']} {'ok' if s['rc'] == 0 else 'FAILED (rc ' + str(s['rc']) + ')'} "
                       f"{s['seconds']:.0f} s" for s in steps)
    lines = ["<!-- gpu:start -->", f"## GPU: {name}", "",
             f"Written by `scripts/device_check.sh` on {report['date']} (device `{device}`). Steps: {status}. "
             f"CUDA tests (`pytest -m cuda`): {report['cuda_tests']}. Every timing excludes an untimed warm-up "
             "call and synchronizes the device before reading the clock.", "", section_body(raw), "<!-- gpu:end -->"]
    if len(argv) <= 2:  # on the device: write the report beside the outputs
        (out / "device_check.json").write_text(json.dumps(report, indent=2) + "\n")
        (out / "gpu_section.md").write_text("\n".join(lines) + "\n")
    else:  # back home, from a fetched (possibly read-only) folder: only the section of BENCHMARKS.md
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from mi_core.bench.report import update_section

        update_section("gpu", "\n".join(lines[1:-1]), argv[2])
    return 0 if all(s["rc"] == 0 for s in steps) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
