"""How well the solver's difficulty grade tracks Kaggle's ratings, and the grades the generator produces.

    PYTHONPATH=. python scripts/studies/grade_report.py --dev ../shared/data/sudoku/kaggle_graded_dev.csv \
        --pool runs/pools/pool_<key>.npz --json assets/benchmarks/sudoku_grade.json

Writes the Spearman correlation of ``grade`` with the dev set's ``level`` and ``difficulty`` columns, the
grade distribution per level and per hardening length, and the time per grade.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from mi_core.domains.sudoku import parse_grid
from mi_core.domains.sudoku.solver import grade

LEVELS = ["Beginner", "Easy", "Medium", "Hard", "Expert"]


def _summary(g: np.ndarray) -> dict:
    return {"n": int(len(g)), "mean": round(float(g.mean()), 2), "median": float(np.median(g)),
            "p10": float(np.percentile(g, 10)), "p90": float(np.percentile(g, 90)), "zero": round(float((g == 0).mean()), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dev", type=Path, required=True)
    parser.add_argument("--pool", type=Path, action="append", default=[])
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    rows = list(csv.DictReader(args.dev.open()))
    t0 = time.perf_counter()
    grades = np.array([grade(parse_grid(r["puzzle"])) for r in rows])
    seconds = (time.perf_counter() - t0) / len(rows)
    levels = np.array([LEVELS.index(r["level"]) for r in rows])
    difficulty = np.array([float(r["difficulty"]) for r in rows])
    out = {
        "dev": str(args.dev.name), "n": len(rows), "ms_per_grade": round(1000 * seconds, 3),
        "spearman_level": round(float(spearmanr(grades, levels).statistic), 4),
        "spearman_difficulty": round(float(spearmanr(grades, difficulty).statistic), 4),
        "by_level": {name: _summary(grades[levels == i]) for i, name in enumerate(LEVELS)},
        "pools": {},
    }
    for pool in args.pool:
        with np.load(pool) as f:
            out["pools"][pool.name] = _summary(f["grades"])
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
