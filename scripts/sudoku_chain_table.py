"""The chained Sudoku run's table, one row per stretch (issue 24): CPU-hours so far, examples seen and the
held-out accuracy (EMA weights, the 200 hardest validation puzzles) at the stretch's last validation, with
its binomial standard error. Reads the curve that ``scripts/sudoku_chain.sh save`` copies.

    python -m scripts.sudoku_chain_table [checkpoints/sudoku_chain/curve.jsonl] [--puzzles 200]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path


def rows(curve: list[dict], puzzles: int) -> list[dict]:
    """The last validated point of each stretch."""
    last: dict[int, dict] = {}
    for point in curve:
        if "val_accuracy" in point:
            last[point.get("stretch", 1)] = point
    out = []
    for stretch, p in sorted(last.items()):
        acc = p["val_accuracy"]
        out.append({"stretch": stretch, "step": p["step"], "examples": p["examples"],
                    "cpu_hours": p.get("cpu_seconds", p["seconds"]) / 3600, "accuracy": acc,
                    "se": math.sqrt(acc * (1 - acc) / puzzles), "cell_accuracy": p.get("val_cell_accuracy")})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("curve", type=Path, nargs="?", default=Path("checkpoints/sudoku_chain/curve.jsonl"))
    p.add_argument("--puzzles", type=int, default=200, help="validation puzzles (for the standard error)")
    args = p.parse_args(argv)
    curve = [json.loads(line) for line in args.curve.read_text().splitlines() if line.startswith("{")]
    print("| stretch | CPU-hours so far | examples | held-out (EMA weights) | cell accuracy |")
    print("|---|---|---|---|---|")
    for r in rows(curve, args.puzzles):
        print(f"| {r['stretch']} | {r['cpu_hours']:.2f} | {r['examples']:,} (step {r['step']:,}) | "
              f"{100 * r['accuracy']:.1f}% ± {100 * r['se']:.1f} | {r['cell_accuracy']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
