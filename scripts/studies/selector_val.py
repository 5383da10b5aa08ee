"""Answered: does an order selector trained on graded puzzles (``train-order sudoku --pool-file``) beat the shipped
one, which was trained on generated puzzles? Each selector decodes the ``--count`` hardest puzzles (by grade) of a
pool file with ``learned`` (threshold mode) at T = 5, 10, 15 and 20, beside top-prob-margin; every difference to
the first selector is paired over the same puzzles, with its standard error. The pool file is the selectors'
validation set, so the choice is made without the dev sets.

    PYTHONPATH=. python scripts/studies/selector_val.py --model M --pool F --json OUT SELECTOR [SELECTOR ...]
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import numpy as np
import torch

from mi_core.decoding import decode_final, make_strategy
from mi_core.domains.sudoku.mdm import load_sudoku_mdm
from mi_core.domains.sudoku.pool import hardest
from mi_core.io import atomic_write_json, display_path
from scripts.studies.hard_questions import BUDGETS, paired, se


@torch.no_grad()
def solved(model, pairs: np.ndarray, strategy) -> tuple[list[bool], float]:
    tokens, solution = torch.as_tensor(pairs[:, 0]), torch.as_tensor(pairs[:, 1])
    final = decode_final(model, tokens, strategy)
    return (final.tokens == solution).all(1).tolist(), float(np.mean(final.passes.tolist()))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--pool", type=Path, required=True, help="a pool file (grow_pool_file)")
    p.add_argument("--count", type=int, default=100, help="its hardest N puzzles by grade")
    p.add_argument("--json", type=Path, required=True)
    p.add_argument("selectors", type=Path, nargs="+")
    args = p.parse_args()
    torch.set_num_threads(1)
    model, pairs = load_sudoku_mdm(args.model), hardest(args.pool, args.count)
    out = {"command": "PYTHONPATH=. python " + shlex.join(sys.argv), "model": display_path(args.model),
           "pool": display_path(args.pool), "count": len(pairs), "rows": []}
    for t in BUDGETS:
        runs = {"top_margin": solved(model, pairs, make_strategy("top_margin", steps=t))}
        for sel in args.selectors:
            runs[display_path(sel)] = solved(model, pairs, make_strategy("learned", steps=t, selector=str(sel)))
        first = runs[display_path(args.selectors[0])][0]
        for name, (hits, passes) in runs.items():
            acc = float(np.mean(hits))
            diff, diff_se = paired(hits, first)
            out["rows"].append({"T": t, "sampler": name, "accuracy": acc, "se": se(acc, len(hits)),
                                "mean_passes": passes, "vs_first": diff, "vs_first_se": diff_se})
            print(f"T={t} {name}: {acc:.3f} in {passes:.2f} passes ({diff:+.1f} ± {diff_se:.1f} vs the first)",
                  file=sys.stderr, flush=True)
        atomic_write_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
