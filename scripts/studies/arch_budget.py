"""Which Sudoku MDM shapes can the CPU app afford? Issue 13's limits, on one torch thread: the
estimator's MI map within 1 s, and the pruned exact probe of a 50-blank grid within 5 s (at the app's
eps, 1e-3; eps 1e-4 is timed too).

For each candidate shape (layers x loops, width) this times the two things the app does with a model:
``mi_lens_app.core.run_estimator`` (one model pass, then the estimator head) and ``run_probe``. The
states are Kaggle Hard puzzles brought to exactly 50 blanks by filling cells from their solutions.
The default model's shape uses its trained weights; looped shapes reuse them, as a looped warm start
would (how much a model trained as a loop would prune is not known, so their probe times are estimates);
other shapes get random weights, whose probe prunes almost nothing: their time is close to the unpruned
worst case (1 + 50 x 9 = 451 passes). The head is the shipped estimator where widths match, a random one
otherwise: its cost does not depend on its weights.

    PYTHONPATH=. python scripts/studies/arch_budget.py --json assets/benchmarks/arch_budget.json --markdown BENCHMARKS.md

A weight-tied recurrent model (``loops`` > 1, e.g. the peer-recurrent default) is timed instead at each of
``--iterations`` iterations per pass with its trained weights (the app's inference setting), and the
report's section is ``arch-budget-recurrent``:

    PYTHONPATH=. python scripts/studies/arch_budget.py --model assets/sudoku_peer_recurrent.safetensors \
        --estimator assets/sudoku_mi_estimator_recurrent.safetensors --iterations 8,12,16,24,32 \
        --json assets/benchmarks/arch_budget_recurrent.json --markdown BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from mi_core.bench.report import update_section
from mi_core.device import cpu_flags
from mi_core.domains.sudoku import parse_grid, read_puzzles
from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig, load_sudoku_mdm
from mi_core.io import atomic_write_json
from mi_core.mi.estimator import MIEstimator, load_estimator
from mi_lens_app.core import run_estimator, run_probe

SECTION = "arch-budget"
EPS = (1e-3, 1e-4)  # the app's pruning for Sudoku (Domain.fallback_eps, the slider's default), and a stricter one
LIMIT_MAP, LIMIT_PROBE, LIMIT_STEP = 1.0, 5.0, 0.3


def map_limit(recurrent: bool) -> float:
    """A recurrent model's map is held to a decoding step's limit: the app runs the same pass for both."""
    return LIMIT_STEP if recurrent else LIMIT_MAP
# (name, layers, loops, d_model): the default, looped variants of it, deeper and wider stacks
SHAPES = [("8x1 d128", 8, 1, 128), ("8x2 d128", 8, 2, 128), ("8x3 d128", 8, 3, 128), ("12x1 d128", 12, 1, 128),
          ("16x1 d128", 16, 1, 128), ("8x1 d192", 8, 1, 192), ("8x1 d256", 8, 1, 256)]


def fifty_blank_states(path: Path, count: int, seed: int = 0) -> list[torch.Tensor]:
    """The first ``count`` Hard puzzles of a Kaggle CSV, each with clues added from its solution (seeded)
    until exactly 50 cells are blank; mask id 0."""
    rng = random.Random(seed)
    states = []
    for rec in read_puzzles(path):
        if rec.level != "Hard" or rec.puzzle.count(".") + rec.puzzle.count("0") < 50:
            continue
        cells, solution = parse_grid(rec.puzzle, None), parse_grid(rec.solution, None)
        blanks = [i for i, c in enumerate(cells) if c == 0]
        for i in rng.sample(blanks, len(blanks) - 50):
            cells[i] = solution[i]
        states.append(torch.tensor(cells))
        if len(states) == count:
            return states
    raise SystemExit(f"{path}: found {len(states)} Hard puzzles with at least 50 blanks, wanted {count}")


def model_for(shape: tuple, trained: SudokuMDM) -> tuple[SudokuMDM, str]:
    _, layers, loops, width = shape
    cfg = trained.cfg
    if (layers, width) == (cfg.n_layers, cfg.d_model):  # the trained weights, run with `loops` iterations per pass
        model = SudokuMDM(replace(cfg, loops=loops))
        model.load_state_dict(trained.state_dict())
        if loops == cfg.loops:
            return model.eval(), "trained"
        return model.eval(), f"trained at {cfg.loops}, run at {loops}" if cfg.loops > 1 else "trained 8x1 weights, looped"
    torch.manual_seed(0)
    heads = max(4, width // 32)
    return SudokuMDM(SudokuMDMConfig(d_model=width, n_layers=layers, n_heads=heads, d_ff=4 * width, loops=loops)).eval(), "random"


def shapes_for(args, cfg) -> list[tuple]:
    """The candidate shapes: the table's for a single-pass model, else the trained one at each ``--iterations``."""
    if cfg.loops == 1:
        return [s for s in SHAPES if not args.shapes or s[0] in args.shapes]
    name = f"{cfg.n_layers}x{{}} d{cfg.d_model} {cfg.attention}"
    return [(name.format(t), cfg.n_layers, t, cfg.d_model) for t in args.iterations]


def head_for(width: int, shipped: MIEstimator) -> MIEstimator:
    if shipped.cfg.d_in == width:
        return shipped
    torch.manual_seed(0)
    return MIEstimator(replace(shipped.cfg, d_in=width)).eval()


def timed(fn, repeats: int) -> list[float]:
    fn()  # warm-up
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


@torch.no_grad()
def measure(args) -> dict:
    torch.set_num_threads(1)
    trained = load_sudoku_mdm(args.model)
    shipped = load_estimator(args.estimator)
    states = fifty_blank_states(args.puzzles, args.states)
    rows, reference = [], None
    for shape in shapes_for(args, trained.cfg):
        model, weights = model_for(shape, trained)
        head = head_for(shape[3], shipped)
        maps = [t for tokens in states for t in timed(lambda: run_estimator(model, head, tokens), args.repeats)]
        row = {"shape": shape[0], "layers": shape[1], "loops": shape[2], "d_model": shape[3], "weights": weights,
               "params": model.num_params(), "map_s_median": statistics.median(maps), "map_s_max": max(maps)}
        run_probe(model, states[0], EPS[0])  # untimed warm-up, like the map's
        random_weights = weights == "random"  # its probe is near the unpruned worst case: two states, one eps
        for eps in EPS[:1] if random_weights else EPS:
            times, passes = [], []
            for tokens in states[:2] if random_weights else states:
                t = time.perf_counter()
                passes.append(run_probe(model, tokens, eps).passes)
                times.append(time.perf_counter() - t)
            row[f"probe_{eps:g}"] = {"s_median": statistics.median(times), "s_max": max(times),
                                     "passes_median": statistics.median(passes), "passes_max": max(passes),
                                     "s_per_pass": sum(times) / sum(passes)}
        probe = row[f"probe_{EPS[0]:g}"]
        if random_weights and reference:  # the time at the passes the trained model needed
            probe["s_estimate"] = probe["s_per_pass"] * reference["passes_max"]
        elif shape[2] == 1 or weights == "trained":
            reference = reference or probe
        seconds = probe.get("s_estimate", probe["s_max"])
        row["fits"] = row["map_s_max"] <= map_limit(trained.cfg.loops > 1) and seconds <= LIMIT_PROBE
        rows.append(row)
        print(json.dumps(row), flush=True)
    return {"rows": rows, "states": len(states), "eps": list(EPS), "threads": 1,
            "machine": f"{platform.machine()}, torch {torch.__version__}",
            "cpu_flags": " ".join(sorted((cpu_flags() or set()) & {"avx2", "avx512f", "avx512_bf16", "amx_bf16"})) or "unknown", "model": str(args.model), "estimator": str(args.estimator),
            "recurrent": trained.cfg.loops > 1, "trained_iterations": trained.cfg.loops,
            "command": "python scripts/studies/arch_budget.py " + " ".join(sys.argv[1:])}


def markdown(res: dict) -> str:
    if res.get("recurrent"):
        title = f"## Iterations per pass the CPU app can afford with `{Path(res['model']).name}` (`scripts/studies/arch_budget.py`)"
        note = (f"The trained weights (trained at {res['trained_iterations']} iterations) run at each count; a "
                f"decoding step is the MI map's work (one model pass, plus the head for MI-guided decoding), limit {LIMIT_STEP:g} s.")
    else:
        title, note = "## Which model shapes the CPU app can afford (`scripts/studies/arch_budget.py`)", (
            "Shapes with random weights prune almost nothing (451 passes), so they were probed on 2 states at one eps, "
            "and their row's verdict uses an estimate: their seconds per pass times the most passes the trained 8x1 "
            "model needed.")
    lines = [title, "", f"`{res['command']}`", "",
             f"One torch thread; CPU flags: {res['cpu_flags']}. {res['states']} Kaggle Hard puzzles brought to 50 "
             f"blanks; MI map = one model pass + the estimator head (limit {map_limit(res.get('recurrent', False)):g} s); probe = the pruned exact "
             f"probe at the app's eps {EPS[0]:g} (limit {LIMIT_PROBE:g} s) and at {EPS[1]:g}: median / max seconds over the "
             "states (median passes). " + note, "",
             f"| shape | weights | params | MI map | probe, eps {EPS[0]:g} | probe, eps {EPS[1]:g} | ms per pass | within limits |",
             "|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        cells = []
        for eps in EPS:
            q = r.get(f"probe_{eps:g}")
            cells.append(f"{q['s_median']:.2f} / {q['s_max']:.2f} s ({q['passes_median']:.0f})" if q else "-")
        q = r[f"probe_{EPS[0]:g}"]
        verdict = "yes" if r["fits"] else "no"
        if "s_estimate" in q:
            verdict += f" (estimate: {q['s_estimate']:.1f} s if trained)"
        lines.append(f"| {r['shape']} | {r['weights']} | {r['params']:,} | {r['map_s_median']:.3f} / {r['map_s_max']:.3f} s | "
                     f"{cells[0]} | {cells[1]} | {1000 * q['s_per_pass']:.1f} | {verdict} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, default=Path("assets/sudoku_mdm_hard.safetensors"))
    p.add_argument("--estimator", type=Path, default=Path("assets/sudoku_mi_estimator_hard.safetensors"))
    p.add_argument("--puzzles", type=Path, default=Path("../shared/data/sudoku/kaggle_graded_dev.csv"))
    p.add_argument("--states", type=int, default=5)
    p.add_argument("--repeats", type=int, default=3, help="timed MI maps per state")
    p.add_argument("--shapes", nargs="*", default=None,
                   help="only these shapes, named as in the table, e.g. '8x2 d128' (quoted; default: all)")
    p.add_argument("--iterations", type=lambda v: [int(t) for t in v.split(",")], default=[8, 12, 16, 24, 32],
                   help="a recurrent model's iterations per pass to time, comma-separated (default 8,12,16,24,32)")
    p.add_argument("--json", type=Path, required=True)
    p.add_argument("--markdown", type=Path, default=None, help="write the section into this report file")
    args = p.parse_args(argv)
    res = measure(args)
    atomic_write_json(args.json, res)
    if args.markdown:
        update_section(SECTION + "-recurrent" if res["recurrent"] else SECTION, markdown(res), args.markdown)


if __name__ == "__main__":
    main()
