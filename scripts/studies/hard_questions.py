"""Three questions about a Sudoku MDM, answered on Kaggle Hard, Kaggle Expert and 17-clue puzzles with
settings tuned on other puzzles of the same sets:

1. Does MI-guided decoding (plain and relative) reach sequential's accuracy at 1/5 of its passes?
2. Does it beat EB-Sampler by at least 5 points at equal mean passes?
3. Does the learned order beat top-prob-margin by at least 8 points where the latter solves >= 20%?

    PYTHONPATH=. python scripts/studies/hard_questions.py --model M --estimator E --selector S \
        --json assets/benchmarks/hard_questions.json --markdown BENCHMARKS.md

Tuning puzzles: the ``--tune`` puzzles after the first ``--score`` of each set (Kaggle: per level). Scored
puzzles: the first ``--score`` of each set. Every accuracy comes with its standard error (binomial), and every
comparison with the standard error of the paired difference (the same puzzles decoded both ways).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import torch

from mi_core.bench import decode
from mi_core.bench.metrics import SolvedMetric
from mi_core.bench.report import update_section
from mi_core.decoding import make_strategy
from mi_core.domains.sudoku import parse_grid, read_puzzles, solutions_for
from mi_core.domains.sudoku.mdm import load_sudoku_mdm
from mi_core.io import atomic_write_json

DATA = Path("../shared/data/sudoku")
SETS = {"Kaggle Hard": ("kaggle_graded_dev.csv", "Hard"), "Kaggle Expert": ("kaggle_graded_dev.csv", "Expert"),
        "17-clue": ("clue17_dev.txt", None)}
MI_GRID = [{"gamma": g, "lam": lam} for g in ("0.3", "0.6", "1", "2") for lam in ("0.5", "1", "2")]
REL_GRID = [{"gamma": g, "lam": lam, "relative": "true"} for g in ("0.6", "1", "1.5", "2", "3") for lam in ("0.25", "0.5", "1")]
EB_GRID = [{"gamma": g} for g in ("0.05", "0.1", "0.2", "0.5", "1", "2", "4")]
BUDGETS = (5, 10, 15, 20)
SECTION = "hard-questions"


def puzzles(name: str, lo: int, hi: int):
    file, level = SETS[name]
    records = read_puzzles(DATA / file)
    if level:
        records = [r for r in records if r.level == level]
    return records[lo:hi]


def run(model, records, sampler: str, params: dict, extra: dict, bf16: bool) -> dict:
    strategy = make_strategy(sampler, **params)
    for key, value in extra.items():
        if hasattr(strategy, key):
            setattr(strategy, key, value)
    templates = [np.asarray(parse_grid(r.puzzle, None)) for r in records]
    metric = SolvedMetric([parse_grid(s, None) for s in solutions_for(records)])
    result, gen = decode.evaluate(model, templates, strategy, metric, batch_size=256, bf16=bf16, device=model.device)
    solved = [r[1] for r in metric.rows]
    return {"sampler": sampler, "params": params, "accuracy": result["accuracy"], "mean_passes": result["mean_passes"],
            "se": se(result["accuracy"], len(solved)), "solved": solved, "seconds": gen.seconds}


def question3(model, score, selector: Path, extra: dict, bf16: bool) -> dict:
    out = {}
    for t in BUDGETS:
        margin = run(model, score, "top_margin", {"steps": str(t)}, extra, bf16)
        learned = run(model, score, "learned", {"steps": str(t), "selector": str(selector)}, extra, bf16)
        d3, d3_se = paired(learned["solved"], margin["solved"])
        out[t] = {"top_margin": strip(margin), "learned": strip(learned), "diff": d3, "diff_se": d3_se}
        print(f"T={t}: learned {learned['accuracy']:.3f} top_margin {margin['accuracy']:.3f}", file=sys.stderr, flush=True)
    return out


def se(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n) if n else float("nan")


def paired(a: list[bool], b: list[bool]) -> tuple[float, float]:
    """Mean of a - b over the same puzzles and its standard error (points)."""
    d = np.asarray(a, float) - np.asarray(b, float)
    return 100 * float(d.mean()), 100 * float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else float("nan")


def best(rows: list[dict], max_passes: float) -> dict | None:
    fit = [r for r in rows if r["mean_passes"] <= max_passes]
    return max(fit, key=lambda r: (r["accuracy"], -r["mean_passes"])) if fit else None


def strip(row: dict | None) -> dict | None:
    return None if row is None else {k: v for k, v in row.items() if k != "solved"}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--estimator", type=Path, required=True)
    p.add_argument("--selector", type=Path, default=None, help="order selector for question 3 (skipped without)")
    p.add_argument("--score", type=int, default=200, help="first N puzzles of each set are scored")
    p.add_argument("--tune", type=int, default=100, help="the next N puzzles of each set tune the settings")
    p.add_argument("--sets", default=",".join(SETS))
    p.add_argument("--json", type=Path, required=True)
    p.add_argument("--markdown", type=Path, default=None)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bf16", action="store_true", help="bf16 autocast (only on CPUs with AMX or a GPU; emulated and "
                   "much slower on AVX2 CPUs)")
    p.add_argument("--merge", action="store_true", help="keep the answers already in --json for the questions not run")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    model = load_sudoku_mdm(args.model)
    extra, bf16 = {"estimator": str(args.estimator)}, args.bf16
    out = {"command": "PYTHONPATH=. python " + shlex.join(sys.argv), "model": str(args.model),
           "estimator": str(args.estimator), "selector": str(args.selector) if args.selector else None,
           "score": args.score, "tune": args.tune, "bf16": args.bf16, "sets": {}}
    old = json.loads(args.json.read_text()) if args.merge and args.json.is_file() else {"sets": {}}
    if args.merge and old.get("bf16", True) != args.bf16:  # files before the flag were all bf16
        raise SystemExit(f"{args.json} holds {'bf16' if old.get('bf16', True) else 'fp32'} answers: merge with the "
                         "same precision (--bf16 or not)")
    start = time.time()
    for name in args.sets.split(","):
        if args.selector is not None and args.merge and name in old["sets"]:  # only question 3 is new
            res = old["sets"][name]
            res["q3"] = question3(model, puzzles(name, 0, args.score), args.selector, extra, bf16)
            out["sets"][name] = res
            atomic_write_json(args.json, {**old, **{k: v for k, v in out.items() if k != "sets"}, "sets": {**old["sets"], **out["sets"]}})
            continue
        tune = puzzles(name, args.score, args.score + args.tune)
        score = puzzles(name, 0, args.score)
        log = lambda m, name=name: print(f"[{time.time() - start:6.0f}s] {name}: {m}", file=sys.stderr, flush=True)  # noqa: E731
        seq_tune = run(model, tune, "sequential", {}, extra, bf16)
        budget = seq_tune["mean_passes"] / 5
        tuned = {fam: [run(model, tune, "mi", prm, extra, bf16) for prm in grid] for fam, grid in (("mi", MI_GRID), ("mi relative", REL_GRID))}
        eb_tune = [run(model, tune, "eb", prm, extra, bf16) for prm in EB_GRID]
        log(f"tuned: sequential {seq_tune['accuracy']:.3f} in {seq_tune['mean_passes']:.1f} passes; budget {budget:.1f}")
        seq = run(model, score, "sequential", {}, extra, bf16)
        res = {"sequential": strip(seq), "tune_sequential": strip(seq_tune), "budget": budget, "q1": {}, "q2": {}, "q3": {}}
        for fam, rows in tuned.items():
            pick = best(rows, budget)
            if pick is None:
                res["q1"][fam] = None
                continue
            got = run(model, score, "mi", pick["params"], extra, bf16)
            d, d_se = paired(got["solved"], seq["solved"])
            res["q1"][fam] = {**strip(got), "tuned": strip(pick), "vs_sequential": d, "vs_sequential_se": d_se,
                              "pass_ratio": got["mean_passes"] / seq["mean_passes"]}
            # question 2: EB-Sampler tuned to no more passes than this MI setting took on the tuning puzzles
            eb_pick = best(eb_tune, pick["mean_passes"] * 1.05)
            if eb_pick is not None:
                eb = run(model, score, "eb", eb_pick["params"], extra, bf16)
                d2, d2_se = paired(got["solved"], eb["solved"])
                res["q2"][fam] = {"mi": strip(got), "eb": strip(eb), "eb_tuned": strip(eb_pick), "diff": d2, "diff_se": d2_se}
            log(f"{fam}: {pick['params']} -> {got['accuracy']:.3f} vs sequential {seq['accuracy']:.3f}")
        if args.selector is not None:
            res["q3"] = question3(model, score, args.selector, extra, bf16)
        out["sets"][name] = res
        atomic_write_json(args.json, out)
    out["seconds"] = round(time.time() - start)
    if args.merge:
        out = {**old, **{k: v for k, v in out.items() if k != "sets"}, "sets": {**old["sets"], **out["sets"]}}
    atomic_write_json(args.json, out)
    if args.markdown is not None:
        update_section(SECTION, markdown(out), args.markdown)
    return 0


def pct(x: float, s: float) -> str:
    return f"{100 * x:.1f} ± {100 * s:.1f}%"


def markdown(out: dict) -> str:
    precision = "bf16" if out.get("bf16", True) else "fp32"  # runs before the flag were all bf16
    lines = [f"### Three questions on `{Path(out['model']).name}`", "",
             f"`{out['command']}`", "",
             f"Scored on the first {out['score']} puzzles of each set; every setting chosen on the next {out['tune']} "
             f"(Kaggle: of the same level). {precision} forward passes, one CPU thread. ± is one standard error; "
             "differences are paired (the same puzzles both ways).", "",
             "**1. MI-guided decoding at 1/5 of sequential's passes** (the best setting within that budget on the "
             "tuning puzzles):", "",
             "| set | sequential | passes | MI setting | MI | passes | MI - sequential |", "|---|---|---|---|---|---|---|"]
    for name, r in out["sets"].items():
        s = r["sequential"]
        for fam, q in r["q1"].items():
            if q is None:
                lines.append(f"| {name} | {pct(s['accuracy'], s['se'])} | {s['mean_passes']:.1f} | {fam}: none within "
                             f"{r['budget']:.1f} passes | | | |")
                continue
            prm = ", ".join(f"{k}={v}" for k, v in q["params"].items())
            lines.append(f"| {name} | {pct(s['accuracy'], s['se'])} | {s['mean_passes']:.1f} | {fam} ({prm}) | "
                         f"{pct(q['accuracy'], q['se'])} | {q['mean_passes']:.1f} | {q['vs_sequential']:+.1f} ± "
                         f"{q['vs_sequential_se']:.1f} |")
    lines += ["", "**2. MI-guided vs EB-Sampler at equal passes** (EB's gamma chosen on the tuning puzzles within "
              "the MI setting's passes there, +5%):", "",
              "| set | MI setting | MI | passes | EB gamma | EB | passes | MI - EB |", "|---|---|---|---|---|---|---|---|"]
    for name, r in out["sets"].items():
        for fam, q in r["q2"].items():
            prm = ", ".join(f"{k}={v}" for k, v in q["mi"]["params"].items())
            lines.append(f"| {name} | {fam} ({prm}) | {pct(q['mi']['accuracy'], q['mi']['se'])} | "
                         f"{q['mi']['mean_passes']:.1f} | {q['eb']['params']['gamma']} | "
                         f"{pct(q['eb']['accuracy'], q['eb']['se'])} | {q['eb']['mean_passes']:.1f} | "
                         f"{q['diff']:+.1f} ± {q['diff_se']:.1f} |")
    if any(r["q3"] for r in out["sets"].values()):
        lines += ["", f"**3. Learned order vs top-prob-margin at T steps** (selector `{out['selector']}`):", "",
                  "| set | T | top_margin | passes | learned | passes | learned - top_margin |", "|---|---|---|---|---|---|---|"]
        for name, r in out["sets"].items():
            for t, q in r["q3"].items():
                m, lr = q["top_margin"], q["learned"]
                lines.append(f"| {name} | {t} | {pct(m['accuracy'], m['se'])} | {m['mean_passes']:.1f} | "
                             f"{pct(lr['accuracy'], lr['se'])} | {lr['mean_passes']:.1f} | {q['diff']:+.1f} ± {q['diff_se']:.1f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
