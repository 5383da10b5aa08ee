"""What `--attempts K` gives for every K up to a run's: a bench JSON run with --attempts N holds each puzzle's
passes a decode (`decode_passes`) and its result; view k is drawn alone (seed k) and decodes are deterministic at
temperature 0, so a puzzle solved at decode a is solved by every K >= a, in the passes of its first min(a, K)
decodes: one run answers K = 1..N exactly. `--against K0` adds each K's paired gain over K0 (the puzzles solved
with K and not with K0: never the other way). Answered: how many decodes to allow (BENCHMARKS.md, the summary).

    PYTHONPATH=. python scripts/studies/attempts_curve.py RUN.json [--against 8] [--every 4]
"""

import argparse
import json

import numpy as np

from mi_core.domains.sudoku import read_puzzles, solutions_for

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("run", help="a bench sudoku JSON written with --attempts N")
parser.add_argument("--against", type=int, default=None, help="also print each K's paired gain over this K")
parser.add_argument("--every", type=int, default=1, help="print K = 1 and every multiple of this")
args = parser.parse_args()
run = json.load(open(args.run))
solutions = solutions_for(read_puzzles(run["puzzles"], limit=run.get("limit")))
solved = np.array([s == t for s, t in zip(run["sequences"], solutions)])
decodes = run["decode_passes"]
tries = np.array([len(d) for d in decodes])


def solved_by(k: int) -> np.ndarray:
    return solved & (tries <= k)


for k in range(1, run["attempts"] + 1):
    if k > 1 and k % args.every and k != run["attempts"]:
        continue
    ok = solved_by(k)
    spent = np.array([sum(d[:k]) for d in decodes])
    se = ok.std(ddof=1) / np.sqrt(len(ok))
    line = (f"K={k}: solved {ok.mean():.3f} ± {se:.3f}, mean passes {spent.mean():.1f}, mean decodes "
            f"{np.minimum(tries, k).mean():.2f}")
    if args.against is not None and k != args.against:
        gain = ok.astype(float) - solved_by(args.against)
        line += (f"; against K={args.against} {gain.mean():+.3f} ± {gain.std(ddof=1) / np.sqrt(len(gain)):.3f} "
                 f"({int((gain > 0).sum())} / {int((gain < 0).sum())})")
    print(line)
