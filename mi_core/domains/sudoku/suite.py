"""``python -m mi_core bench-suite sudoku``: the shipped Sudoku MDM with sequential and naive top-k decoding on
the shared puzzle sets."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from mi_core.bench.report import markdown_table, update_section
from mi_core.bench.scale import ModelWorker, absolute, run_cells
from mi_core.decoding import make_strategy
from mi_core.device import pick_device, warn_if_slow_bf16
from mi_core.domains.sudoku import read_puzzles
from mi_core.domains.sudoku.bench import evaluate, warm_up
from mi_core.domains.sudoku.mdm import load_sudoku_mdm
from mi_core.io import atomic_write_json, check_output
from mi_core.options import Device, Force, option
from mi_core.scale.engine import EngineConfig, engine_from_args

SETS = ["kaggle_graded_dev.csv", "top1465.txt", "clue17_dev.txt"]
SAMPLERS = [("sequential", {}), ("topk", {"k": 4}), ("topk", {"k": 7})]
LEVELS = ["Beginner", "Easy", "Medium", "Hard", "Expert"]


@dataclass
class SuiteOptions:
    data: Path = option(Path("../shared/data/sudoku"), "folder of the shared puzzle sets")
    limit: int = option(500, "puzzles per file (the Kaggle file is used whole)", range=(1, 10_000_000))
    model: Path | None = option(None, "Sudoku MDM weights (default: the shipped one)",
                               default_for=lambda d: d.default_file("model"))
    json: Path = option(Path("assets/benchmarks/foundation.json"), "write the rows here")
    bf16: bool = option(False, "bf16 autocast for the model passes (faster on CPUs with AMX)")
    markdown: Path | None = option(None, "write the foundation section into this file (e.g. BENCHMARKS.md)")


def options(domain) -> list:
    return [SuiteOptions, Device, Force, EngineConfig]


def main(args) -> int:
    check_output(args.json, args.force)
    engine = engine_from_args(args)  # Ray missing or a bad setting: one line before any work
    device = pick_device(args.device, args.threads)
    warn_if_slow_bf16(device, args.bf16)
    model = load_sudoku_mdm(args.model, device)
    rows = []
    sets = {name: read_puzzles(args.data / name)[: None if name.startswith("kaggle") else args.limit]
            for name in SETS}
    cells = suite_cells([(sets[n], s, p) for n in SETS for s, p in SAMPLERS], args, engine) if engine.engine == "ray" else None
    for name in SETS:
        records = sets[name]
        if not rows and cells is None:
            warm_up(model, records, make_strategy(SAMPLERS[0][0], **SAMPLERS[0][1]), device, args.bf16)  # untimed
        for sampler, params in SAMPLERS:
            if cells is not None:  # computed on Ray actors, in this order
                res = cells.pop(0)
            else:
                with tqdm(total=len(records), desc=f"{name} {sampler} {params}", file=sys.stderr, leave=False) as bar:
                    res = evaluate(model, records, make_strategy(sampler, **params), device=device, progress=bar.update, bf16=args.bf16)
                res.pop("passes")
            rows.append({"set": name, "sampler": sampler, "params": params, "device": device.type, "precision": "bf16" if args.bf16 else "fp32", **res})
            print(f"{name} {sampler} {params}: {res['accuracy']:.3f} in {res['mean_passes']:.1f} passes", file=sys.stderr)
    atomic_write_json(args.json, rows)
    keys = ("set", "sampler", "params", "n", "accuracy", "cell_accuracy", "mean_passes", "seconds")
    table_rows = [{**{k: r[k] for k in keys}, **{lv: r["by_level"][lv]["accuracy"] for lv in LEVELS
                                                 if lv in r.get("by_level", {})}} for r in rows]
    cols = [("set", "puzzle set"), ("sampler", "sampler"), ("params", "params"), ("n", "n"), ("accuracy", "solved"),
            ("cell_accuracy", "cells right"), ("mean_passes", "mean passes")] + [(lv, lv) for lv in LEVELS] + [("seconds", "seconds")]
    cmd = "python -m mi_core bench-suite " + " ".join(args.argv)
    if args.markdown is not None:
        update_section("foundation", f"## Sudoku MDM: sequential and naive top-k ({device.type}, "
                       f"{'bf16' if args.bf16 else 'fp32'} forward passes)\n\n`{cmd}`\n\n"
                       "Solved = the whole grid equals the unique solution; cells right = over blank cells.\n\n"
                       + markdown_table(table_rows, cols), args.markdown)
    return 0


def suite_cell(model, device, records, sampler: str, params: dict, bf16: bool) -> dict:
    """One ``bench-suite`` cell: a sampler on one puzzle set, decoded as the local loop does."""
    strategy = make_strategy(sampler, **params)
    warm_up(model, records, strategy, device, bf16)
    res = evaluate(model, records, strategy, device=device, bf16=bf16)
    res.pop("passes")
    return res


def suite_cells(cells: list[tuple], args, engine: EngineConfig) -> list[dict]:
    """``bench-suite`` results of ``(records, sampler, params)`` cells on ``engine``, in order."""
    maker = ModelWorker("sudoku9", absolute(args.model), args.device)
    return run_cells([(suite_cell, records, sampler, params, args.bf16) for records, sampler, params in cells],
                     maker, engine)
