"""What `--attempts K` gives for every K up to a run's: a bench JSON run with --attempts N holds each puzzle's
decodes and result; a puzzle solved at decode a is solved by every K >= a (decodes are deterministic at
temperature 0), so one run answers K = 1..N. Answered: how many decodes to allow (docs/sudoku_training.md)."""

import json
import sys

import numpy as np

from mi_core.domains.sudoku import read_puzzles, solutions_for

run = json.load(open(sys.argv[1]))
solutions = solutions_for(read_puzzles(run["puzzles"], limit=run["limit"]))
solved = np.array([s == t for s, t in zip(run["sequences"], solutions)])
tries = np.array(run["attempts_each"])
passes = np.array(run["passes"])
per_decode = passes / tries  # sequential: every decode of a puzzle takes its blank count in passes
for k in range(1, run["attempts"] + 1):
    ok = solved & (tries <= k)
    spent = per_decode * np.minimum(tries, k)  # exact for sequential; other samplers: the run's mean per decode
    se = ok.std(ddof=1) / np.sqrt(len(ok))
    exact = run["sampler"] == "sequential" or k == run["attempts"]
    print(f"K={k}: solved {ok.mean():.3f} ± {se:.3f}, mean passes {spent.mean():.1f}{'' if exact else ' (about)'}, "
          f"mean decodes {np.minimum(tries, k).mean():.2f}")
