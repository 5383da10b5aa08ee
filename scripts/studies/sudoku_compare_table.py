"""The table of scripts/studies/sudoku_compare.sh: held-out accuracy against CPU-minutes for each candidate.

Usage: python scripts/studies/sudoku_compare_table.py OUT [--baseline default_val200.json] --json FILE
Reads OUT/<candidate>/train.log (the trainer's JSON points) and prints a Markdown table; every accuracy
comes with its binomial standard error over the validation puzzles.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path


def points(log: Path) -> list[dict]:
    rows = []
    for line in log.read_text().splitlines():
        if line.startswith("{") and '"val_accuracy"' in line:
            rows.append(json.loads(line))
    return rows


def se(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--baseline", type=Path, help="bench JSON of the starting model on the same puzzles")
    parser.add_argument("--puzzles", type=int, default=200)
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    rows = []
    if args.baseline:
        base = json.loads(args.baseline.read_text())
        rows.append({"candidate": "start (assets/sudoku_mdm_hard)", "cpu_minutes": 0.0, "examples": 0,
                     "val_accuracy": base["accuracy"]})
    for log in sorted(args.out.glob("*/train.log")):
        for p in points(log):
            rows.append({"candidate": log.parent.name, "cpu_minutes": round(p["cpu_seconds"] / 60, 1),
                         "examples": p["examples"], "val_accuracy": p["val_accuracy"],
                         "val_cell_accuracy": round(p["val_cell_accuracy"], 4)})
    for r in rows:
        r["se"] = round(se(r["val_accuracy"], args.puzzles), 4)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"puzzles": args.puzzles, "rows": rows}, indent=2) + "\n")
    print("| candidate | CPU-minutes | examples | solved (200 hard held-out) |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['candidate']} | {r['cpu_minutes']} | {r['examples']:,} | "
              f"{100 * r['val_accuracy']:.1f}% ± {100 * r['se']:.1f} |")


if __name__ == "__main__":
    main()
