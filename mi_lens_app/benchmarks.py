"""Read the shipped sweep results (``assets/benchmarks/*.json``) into rows for the frontier plot.

A sweep file is a JSON list of rows with at least ``sampler``, ``params``, ``n``, ``accuracy`` and
``mean_passes``, and the puzzle set's name in ``set`` (else taken from the file name ``sweep_<set>.json``).
Files that are not such lists (e.g. ``app_speed.json``) are skipped, and named in ``skipped``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from mi_lens_app.domains import ROOT

REQUIRED = ("sampler", "params", "n", "accuracy", "mean_passes")


def bench_dir() -> Path:
    """``MI_LENS_BENCHMARKS`` or ``assets/benchmarks``."""
    path = Path(os.environ.get("MI_LENS_BENCHMARKS") or "assets/benchmarks")
    return path if path.is_absolute() else ROOT / path


@dataclass
class BenchRows:
    rows: list[dict] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def sets(self) -> list[str]:
        return list(dict.fromkeys(r["set"] for r in self.rows))


def params_label(params) -> str:
    if isinstance(params, dict):
        return ", ".join(f"{k}={v}" for k, v in params.items()) or "defaults"
    return str(params)


def _set_name(path: Path) -> str:
    stem = path.stem
    return stem.removeprefix("sweep_")


def _rows_of(data, path: Path) -> list[dict] | None:
    """Normalised rows of one file's JSON, or None when it is not a sweep."""
    if isinstance(data, dict):
        data = data.get("rows")
    if not isinstance(data, list) or not data:
        return None
    if not all(isinstance(r, dict) and all(k in r for k in REQUIRED) for r in data):
        return None
    out = []
    for r in data:
        out.append({**r, "set": str(r.get("set") or _set_name(path)), "sampler": str(r["sampler"]),
                    "accuracy": float(r["accuracy"]), "mean_passes": float(r["mean_passes"]), "n": int(r["n"]),
                    "label": f"{r['sampler']} ({params_label(r['params'])})"})
    return out


def load_rows(directory: Path | None = None) -> BenchRows:
    """Every sweep row under ``directory`` (default :func:`bench_dir`), in file-name order."""
    directory = bench_dir() if directory is None else directory
    found = BenchRows()
    if not directory.is_dir():
        return found
    for path in sorted(directory.glob("*.json")):
        try:
            rows = _rows_of(json.loads(path.read_text()), path)
        except (OSError, ValueError, TypeError):
            rows = None
        if rows is None:
            found.skipped.append(path.name)
            continue
        found.rows += rows
        found.files.append(path.name)
    return found
