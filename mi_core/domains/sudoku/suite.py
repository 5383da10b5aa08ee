"""``python -m mi_core bench-suite sudoku``: the shipped Sudoku MDM with sequential and naive top-k decoding on
the shared puzzle sets."""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from mi_core.bench.metrics import SolvedMetric
from mi_core.bench.report import markdown_table, update_section
from mi_core.bench.scale import run_cells, runner, sweep_cell
from mi_core.device import pick_device, warn_if_slow_bf16
from mi_core.domain import get_domain
from mi_core.domains.sudoku.bench import LEVELS
from mi_core.domains.sudoku.mdm import load_sudoku_mdm
from mi_core.io import atomic_write_json, check_output
from mi_core.options import Device, Force, markdown_option, option
from mi_core.scale.engine import EngineConfig, engine_from_args

SETS = ["kaggle_graded_dev.csv", "top1465.txt", "clue17_dev.txt"]
SAMPLERS = [("sequential", {}), ("topk", {"k": 4}), ("topk", {"k": 7})]


@dataclass
class SuiteOptions:
    data: Path = option(Path("../shared/data/sudoku"), "folder of the shared puzzle sets")
    limit: int = option(500, "puzzles per file (the Kaggle file is used whole)", range=(1, 10_000_000))
    model: Path | None = option(None, "Sudoku MDM weights (default: the shipped one)",
                               default_for=lambda d: d.default_file("model"))
    json: Path = option(None, "write the rows here (the first model's, archived: assets/benchmarks/foundation.json)",
                        required=True)
    bf16: bool = option(False, "bf16 autocast for the model passes (faster on CPUs with AMX)")
    markdown: Path | None = markdown_option("write the foundation section into this file (e.g. BENCHMARKS.md)")


def options(domain) -> list:
    return [SuiteOptions, Device, Force, EngineConfig]


def check_data(folder: Path) -> None:
    """ValueError naming ``--data`` unless it is a folder holding every file of :data:`SETS`."""
    if not folder.is_dir():
        raise ValueError(f"--data {folder}: {'not a folder' if folder.exists() else 'no such folder'}; give the "
                         f"folder of {', '.join(SETS)}")
    missing = [name for name in SETS if not (folder / name).is_file()]
    if missing:
        raise ValueError(f"--data {folder}: has no {', '.join(missing)} (the suite reads {', '.join(SETS)})")


def main(args) -> int:
    check_data(args.data)
    check_output(args.json, args.force)
    check_output(args.markdown, True, "--markdown")  # a report file: its own section is replaced
    engine = engine_from_args(args)  # Ray missing or a bad setting: one line before any work
    domain = get_domain(args.domain)
    device = pick_device(args.device, args.threads)
    warn_if_slow_bf16(device, args.bf16)
    model = load_sudoku_mdm(args.model, device)
    precision = "bf16" if args.bf16 else "fp32"
    run = {"temperature": 0.0, "seed": 0, "batch_size": 256, "bf16": args.bf16, "seeding": "per item"}
    payloads = []
    for name in SETS:
        limit = None if name.startswith("kaggle") else args.limit
        templates, solutions, levels = domain.read_inputs(args.data / name, limit)
        metric = partial(SolvedMetric, solutions, levels, domain.mask_id)
        payloads += [(sweep_cell, templates, metric, run, sampler, params, None) for sampler, params in SAMPLERS]
    cells = run_cells(payloads, args, engine, None if engine.engine == "ray" else runner(model, device))
    rows = []
    for (name, (sampler, params)), res in zip(itertools.product(SETS, SAMPLERS), cells):
        if "by_level" in res:
            res["by_level"] = res.pop("by_level")  # after seconds, as in the committed rows
        rows.append({"set": name, "sampler": sampler, "params": params, "device": device.type, "precision": precision,
                     **res})
        print(f"{name} {sampler} {params}: {res['accuracy']:.3f} in {res['mean_passes']:.1f} passes", file=sys.stderr)
    atomic_write_json(args.json, rows)
    keys = ("set", "sampler", "params", "n", "accuracy", "cell_accuracy", "mean_passes", "seconds")
    table_rows = [{**{k: r[k] for k in keys}, **{lv: r["by_level"][lv]["accuracy"] for lv in LEVELS
                                                 if lv in r.get("by_level", {})}} for r in rows]
    cols = [("set", "puzzle set"), ("sampler", "sampler"), ("params", "params"), ("n", "n"), ("accuracy", "solved"),
            ("cell_accuracy", "cells right"), ("mean_passes", "mean passes")] + [(lv, lv) for lv in LEVELS] + [("seconds", "seconds")]
    cmd = "python -m mi_core bench-suite " + " ".join(args.argv)
    if args.markdown is not None:
        update_section("foundation", f"## Sudoku MDM: sequential and naive top-k ({device.type}, {precision} forward "
                       f"passes)\n\n`{cmd}`\n\nSolved = the whole grid equals the unique solution; cells right = over "
                       "blank cells.\n\n" + markdown_table(table_rows, cols), args.markdown)
    return 0
