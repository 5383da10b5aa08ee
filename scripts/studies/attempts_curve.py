"""What `--attempts K` gives for every K up to a run's: a bench JSON run with --attempts N holds each puzzle's
passes a decode (`decode_passes`) and its result; view k is drawn alone (seed k) and decodes are deterministic at
temperature 0, so a puzzle solved at decode a is solved by every K >= a, in the passes of its first min(a, K)
decodes: one run answers K = 1..N exactly. Answered: how many decodes to allow (BENCHMARKS.md, the summary)."""

import json
import sys

import numpy as np

from mi_core.domains.sudoku import read_puzzles, solutions_for

run = json.load(open(sys.argv[1]))
solutions = solutions_for(read_puzzles(run["puzzles"], limit=run["limit"]))
solved = np.array([s == t for s, t in zip(run["sequences"], solutions)])
decodes = run["decode_passes"]
tries = np.array([len(d) for d in decodes])
for k in range(1, run["attempts"] + 1):
    ok = solved & (tries <= k)
    spent = np.array([sum(d[:k]) for d in decodes])
    se = ok.std(ddof=1) / np.sqrt(len(ok))
    print(f"K={k}: solved {ok.mean():.3f} ± {se:.3f}, mean passes {spent.mean():.1f}, mean decodes "
          f"{np.minimum(tries, k).mean():.2f}")
