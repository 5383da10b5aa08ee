"""Paired comparison of two `bench sudoku` runs on the same puzzles, from the decoded grids their JSON keeps:

    PYTHONPATH=. python scripts/studies/paired_bench.py A.json B.json PUZZLES.csv OUT.json

writes both accuracies, the puzzles only each solves, the paired difference A - B with its standard error,
and the accuracies per level (for a file with a ``level`` column). PUZZLES may also be a .txt file of puzzles
alone (top1465): a grid then counts as solved when it is complete and valid and keeps every given.
"""
import csv
import json
import math
import sys

from mi_core.domains.sudoku.grid import parse_grid, solution_conflict


def is_solved(grid: str, row: dict) -> bool:
    if row.get("solution"):
        return grid.replace(".", "0") == row["solution"]
    return solution_conflict(parse_grid(row["puzzle"]), parse_grid(grid)) is None


def read_rows(puzzles: str) -> list[dict]:
    with open(puzzles, newline="") as handle:
        if puzzles.endswith(".csv"):
            return list(csv.DictReader(handle))
        return [{"puzzle": line.split()[0]} for line in handle if line.strip() and not line.startswith("#")]


def solved(path: str, rows: list[dict]) -> list[bool]:
    run = json.load(open(path))
    if len(run["sequences"]) != len(rows):
        sys.exit(f"{path}: {len(run['sequences'])} decoded grids for {len(rows)} puzzles")
    out = [is_solved(s, r) for s, r in zip(run["sequences"], rows)]
    assert abs(sum(out) / len(out) - run["accuracy"]) < 1e-9, f"{path}: the grids disagree with its accuracy"
    return out


def main(a_path: str, b_path: str, puzzles: str, out_path: str) -> None:
    rows = read_rows(puzzles)
    n = len(json.load(open(a_path))["sequences"])
    rows = rows[:n]
    a, b = solved(a_path, rows), solved(b_path, rows)
    diff = [int(x) - int(y) for x, y in zip(a, b)]
    mean = sum(diff) / n
    se = math.sqrt(sum((d - mean) ** 2 for d in diff) / (n - 1) / n)
    levels = {}
    for x, y, r in zip(a, b, rows):
        level = levels.setdefault(r.get("level", "all"), [0, 0, 0])
        level[0], level[1], level[2] = level[0] + x, level[1] + y, level[2] + 1
    out = {"a": a_path, "b": b_path, "puzzles": puzzles, "n": n, "accuracy_a": sum(a) / n, "accuracy_b": sum(b) / n,
           "only_a": sum(x and not y for x, y in zip(a, b)), "only_b": sum(y and not x for x, y in zip(a, b)),
           "diff": mean, "paired_se": se,
           "by_level": {k: {"a": v[0] / v[2], "b": v[1] / v[2], "n": v[2]} for k, v in levels.items()}}
    json.dump(out, open(out_path, "w"), indent=1)
    print(f"A {out['accuracy_a']:.3f}  B {out['accuracy_b']:.3f}  A-B {mean:+.3f} ± {se:.3f} "
          f"(only A {out['only_a']}, only B {out['only_b']})")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
