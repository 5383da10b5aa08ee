"""Answered: does an order selector trained on graded puzzles beat the shipped one on the dev sets? Both decode
the same scored puzzles of scripts/studies/hard_questions.py (the first ``--score`` of Kaggle Hard, Kaggle Expert
and 17-clue) with ``learned`` at each T, beside top-prob-margin; every difference is paired, with its standard
error.

    PYTHONPATH=. python scripts/studies/selector_pair.py --model M --estimator E --a S1 --b S2 --json OUT
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import torch

from mi_core.domains.sudoku.mdm import load_sudoku_mdm
from mi_core.io import atomic_write_json
from scripts.studies.hard_questions import BUDGETS, SETS, paired, puzzles, run, strip


def compare(model, records, a: Path, b: Path, extra: dict) -> dict:
    out = {}
    for t in BUDGETS:
        rows = {"top_margin": run(model, records, "top_margin", {"steps": str(t)}, extra, False),
                "a": run(model, records, "learned", {"steps": str(t), "selector": str(a)}, extra, False),
                "b": run(model, records, "learned", {"steps": str(t), "selector": str(b)}, extra, False)}
        diffs = {"b_minus_a": paired(rows["b"]["solved"], rows["a"]["solved"]),
                 "a_minus_top_margin": paired(rows["a"]["solved"], rows["top_margin"]["solved"]),
                 "b_minus_top_margin": paired(rows["b"]["solved"], rows["top_margin"]["solved"])}
        out[t] = {**{k: strip(v) for k, v in rows.items()}, **{k: {"diff": d, "se": s} for k, (d, s) in diffs.items()}}
        print(f"T={t}: a {rows['a']['accuracy']:.3f} b {rows['b']['accuracy']:.3f} top_margin "
              f"{rows['top_margin']['accuracy']:.3f}", file=sys.stderr, flush=True)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--estimator", type=Path, required=True)
    p.add_argument("--a", type=Path, required=True, help="the shipped selector")
    p.add_argument("--b", type=Path, required=True, help="the candidate")
    p.add_argument("--score", type=int, default=200)
    p.add_argument("--sets", default=",".join(SETS))
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    model, extra = load_sudoku_mdm(args.model), {"estimator": str(args.estimator)}
    out = {"command": "PYTHONPATH=. python " + shlex.join(sys.argv), "a": str(args.a), "b": str(args.b),
           "score": args.score, "sets": {}}
    for name in args.sets.split(","):
        print(name, file=sys.stderr, flush=True)
        out["sets"][name] = compare(model, puzzles(name, 0, args.score), args.a, args.b, extra)
        atomic_write_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
