"""Compare samplers at equal passes across the Sudoku sweeps: best accuracy within a pass budget.

    PYTHONPATH=. python scripts/studies/compare_frontiers.py assets/benchmarks/sweep_*.json [--budgets 10,15,20,25]

For each sweep file and pass budget P, each sampler family's entry is the highest accuracy among its
settings whose mean passes are <= P (with the passes it used), so families are compared at equal cost.
``mi`` is split into ``mi`` (MI in nats) and ``mi relative`` (``relative=true``). Writes the
``frontier-compare`` section of BENCHMARKS.md (``--section``, ``--title``: another one).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from mi_core.bench.report import markdown_table, update_section

FAMILIES = ("mi relative", "mi", "eb", "topk", "top_margin", "threshold", "mask_predict", "sequential")


def family(row: dict) -> str:
    relative = str(row["params"].get("relative", "false")).lower() in ("1", "true", "yes")
    return "mi relative" if row["sampler"] == "mi" and relative else row["sampler"]


def best_within(rows: list[dict], fam: str, budget: float) -> dict | None:
    fitting = [r for r in rows if family(r) == fam and r["mean_passes"] <= budget]
    return max(fitting, key=lambda r: (r["accuracy"], -r["mean_passes"])) if fitting else None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sweeps", nargs="+", type=Path)
    p.add_argument("--budgets", default="10,15,20,25")
    p.add_argument("--markdown", default="BENCHMARKS.md")
    p.add_argument("--section", default="frontier-compare", help="the section of --markdown to write")
    p.add_argument("--title", default="Samplers at equal passes")
    args = p.parse_args()
    budgets = [float(b) for b in args.budgets.split(",")]
    table, counts = [], set()
    for path in args.sweeps:
        data = json.loads(path.read_text())
        rows = data["rows"] if isinstance(data, dict) else data
        name = path.stem.removeprefix("sweep_")
        seq = best_within(rows, "sequential", float("inf"))
        counts.update(r["n"] for r in rows)
        for budget in budgets:
            line = {"set": name, "budget": f"<= {budget:g}"}
            for fam in FAMILIES[:-1]:
                best = best_within(rows, fam, budget)
                line[fam] = f"{100 * best['accuracy']:.1f}% ({best['mean_passes']:.1f})" if best else "-"
            line["sequential"] = f"{100 * seq['accuracy']:.1f}% ({seq['mean_passes']:.1f})" if seq else "-"
            table.append(line)
    columns = [("set", "puzzle set"), ("budget", "mean passes")] + [(f, f) for f in FAMILIES]
    command = "PYTHONPATH=. python " + shlex.join(sys.argv)
    text = (f"### {args.title}\n\n`{command}`\n\nBest accuracy among each sampler's settings whose "
            "mean passes fit the budget (passes used in brackets); sequential for reference. Puzzles per set: "
            + ", ".join(sorted({str(n) for n in counts})) + ".\n\n"
            + markdown_table(table, columns))
    print(text)
    if args.markdown != "-":
        update_section(args.section, text, args.markdown)


if __name__ == "__main__":
    main()
