"""``python -m mi_core bench-order sudoku --puzzles CSV --selector PATH``: the learned order against the
step-budget heuristics at the same T, and eb / mi at matching mean passes.

For each budget T: ``random``, ``top_prob``, ``top_margin`` (all with ``steps=T``), ``learned``
(threshold and sample modes, ``steps=T``), and ``top_margin`` again with ``steps`` = the learned
sampler's mean passes rounded (it may stop before T). ``eb`` and ``mi`` have no step budget, so each runs over a
grid of ``gamma`` once and, per T, the most accurate setting whose mean passes are <= T is reported.
Writes a JSON list of rows and a Markdown report (per-level accuracies, the pass distribution of
``learned``, and whether learned beats top_margin by the issue's margin where top_margin is >= 20%).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import torch

from mi_core.bench.report import markdown_table, write_json
from mi_core.bench.sudoku import evaluate, with_default_estimator
from mi_core.decoding import make_strategy
from mi_core.domains.sudoku import read_puzzles
from mi_core.models.sudoku_mdm import load_sudoku_mdm

GAMMAS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 4.0, 8.0)


def pick_records(path: Path, per_level: int) -> list:
    """The first ``per_level`` puzzles of each level (all of them when the file has no levels)."""
    records, seen = [], Counter()
    for rec in read_puzzles(path):
        if seen[rec.level] < per_level:
            seen[rec.level] += 1
            records.append(rec)
    return records


def run(model, records, name: str, params: dict, selector: Path, seed: int) -> dict:
    extra = {"selector": str(selector)} if name == "learned" else {}
    strategy = with_default_estimator(make_strategy(name, **params, **extra))
    res = evaluate(model, records, strategy, batch_size=256, seed=seed, bf16=True)
    row = {"sampler": name, "params": params, **{k: res[k] for k in ("n", "accuracy", "mean_passes", "seconds")}}
    row["by_level"] = {lvl: round(v["accuracy"], 4) for lvl, v in res.get("by_level", {}).items()}
    row["passes_hist"] = dict(sorted(Counter(res["passes"]).items()))
    return row


def matched(rows: list[dict], name: str, budget: int) -> dict | None:
    """The most accurate ``name`` row with mean passes <= ``budget``."""
    fits = [r for r in rows if r["sampler"] == name and r["mean_passes"] <= budget]
    return max(fits, key=lambda r: (r["accuracy"], -r["mean_passes"])) if fits else None


def report(rows: list[dict], budgets: list[int], levels: list[str]) -> str:
    out = []
    for t in budgets:
        table = [r for r in rows if r.get("T") == t] + [r for n in ("eb", "mi") if (r := matched(rows, n, t))]
        table = [dict(r, **{f"lvl_{k}": v for k, v in r["by_level"].items()}) for r in table]
        cols = [("sampler", "sampler"), ("params", "params"), ("accuracy", "solved")]
        cols += [(f"lvl_{lv}", lv) for lv in levels] + [("mean_passes", "mean passes")]
        out += [f"### T = {t}", "", markdown_table(table, cols), ""]
        learned = next(r for r in rows if r.get("T") == t and r["sampler"] == "learned"
                       and r["params"].get("mode") == "threshold")
        out.append(f"learned (threshold) passes used: {learned['passes_hist']}")
        margin = next(r for r in rows if r.get("T") == t and r["sampler"] == "top_margin" and not r.get("matched"))
        for lv in levels:
            m, lrn = margin["by_level"].get(lv, 0.0), learned["by_level"].get(lv, 0.0)
            if m >= 0.2:
                out.append(f"- {lv}: top_margin {m:.3f}, learned {lrn:.3f}, difference {lrn - m:+.3f} "
                           f"({'meets' if lrn - m >= 0.08 else 'misses'} the +0.08 goal)")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mi_core bench-order", description=__doc__)
    p.add_argument("domain", choices=["sudoku"])
    p.add_argument("--puzzles", type=Path, required=True)
    p.add_argument("--model", type=Path, default=Path("assets/sudoku_mdm.safetensors"))
    p.add_argument("--selector", type=Path, default=Path("assets/sudoku_order_selector.safetensors"))
    p.add_argument("--per-level", type=int, default=100)
    p.add_argument("--budgets", default="5,10,15,20")
    p.add_argument("--gammas", default=",".join(str(g) for g in GAMMAS), help="eb / mi budgets; empty: skip")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, required=True)
    p.add_argument("--md", type=Path, default=None, help="Markdown report (default: JSON path with .md)")
    p.add_argument("--threads", type=int, default=0)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    budgets = [int(b) for b in args.budgets.split(",")]
    gammas = [float(g) for g in args.gammas.split(",") if g.strip()]
    model = load_sudoku_mdm(args.model)
    records = pick_records(args.puzzles, args.per_level)
    known = ["Beginner", "Easy", "Medium", "Hard", "Expert"]
    levels = sorted(dict.fromkeys(r.level for r in records if r.level), key=lambda v: (v not in known, known.index(v) if v in known else 0, v))
    rows = []
    for t in budgets:
        for name, params in [("random", {"steps": t}), ("top_prob", {"steps": t}), ("top_margin", {"steps": t}),
                             ("learned", {"steps": t, "mode": "threshold"}),
                             ("learned", {"steps": t, "mode": "sample"})]:
            rows.append(dict(run(model, records, name, params, args.selector, args.seed), T=t))
            print(rows[-1], flush=True)
        # learned may stop early: top_margin at the learned sampler's own mean passes
        used = next(r for r in rows if r.get("T") == t and r["params"].get("mode") == "threshold")["mean_passes"]
        rows.append(dict(run(model, records, "top_margin", {"steps": max(1, round(used))}, args.selector,
                             args.seed), T=t, matched=True))
        print(rows[-1], flush=True)
    for name in ("eb", "mi"):
        for g in gammas:
            rows.append(run(model, records, name, {"gamma": g}, args.selector, args.seed))
            print(rows[-1], flush=True)
    write_json(rows, args.json)
    md = args.md or args.json.with_suffix(".md")
    md.write_text(f"{len(records)} puzzles of {args.puzzles.name} ({args.per_level} per level), "
                  f"selector {args.selector}\n\n" + report(rows, budgets, levels))
    print(md.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
