"""How long the MI maps page's iteration views take, on one thread as the app runs.

``PYTHONPATH=. python scripts/studies/time_iterations.py [--clues 31] [--seed 0] [--eps 1e-3] [--at 8 16]``

Times, on a generated puzzle (31 clues: 50 blanks): the one forward pass with ``keep = T`` that the slider
indexes, a slider move (build and serialise the grid figure at an iteration), and the pruned exact probe at
each iteration of ``--at``; then the 8-layer model's pruned probe of the same grid, for comparison (the host's
speed swings between runs: compare within one run).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from mi_core.models.iterations import iterations_of
from mi_core.models.loading import load_model
from mi_lens_app import core, figures
from mi_lens_app.domains import generate, get_domain


def median_seconds(fn, repeats: int) -> float:
    fn()  # the first call pays for lazy setup
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clues", type=int, default=31)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eps", type=float, default=1e-3)
    parser.add_argument("--at", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    domain = get_domain("sudoku9")  # the default: recurrent
    pz = generate(domain, args.clues, args.seed)
    model = load_model(None, "cpu", domain)
    tokens = core.tokens_of(pz.text, domain, "cpu")
    print(f"{len(pz.blanks)} blanks; {iterations_of(model)} iterations")
    print(f"forward, keep=T: {median_seconds(lambda: core.iteration_view(model, tokens), args.repeats):.3f} s")
    view = core.iteration_view(model, tokens)
    digits, givens = np.asarray(pz.digits), pz.givens

    def redraw(k: int = 4) -> None:
        hover = figures.cell_hover(domain.labels(), digits, givens, view.entropy[k], view.marginals[k])
        layer = np.where(~givens, view.entropy[k], np.nan)
        figures.grid_figure(digits, givens, 3, layer=layer, hover=hover, height=430).to_json()

    print(f"slider move (grid figure): {median_seconds(redraw, args.repeats):.3f} s")
    for k in args.at:
        res = core.probe_at_iteration(model, tokens, k, args.eps)
        print(f"pruned probe at iteration {k} (eps={args.eps:g}): {res.passes} passes, {res.seconds:.2f} s")
    previous = load_model(None, "cpu", get_domain("sudoku9_8layer"))
    res = core.run_probe(previous, tokens, args.eps)
    print(f"the 8-layer model's pruned probe: {res.passes} passes, {res.seconds:.2f} s")


if __name__ == "__main__":
    main()
