"""``bench-order sudoku``: the learned order against the step-budget heuristics at the same T.

For each budget T: ``random``, ``top_prob``, ``top_margin`` (all with ``steps=T``), ``learned`` (threshold,
paced and sample modes, ``steps=T``), ``learned_mi`` (the selector's risk in the MI budget, ``steps=T``, gamma
per T from ``--learned-mi-gammas``), and ``top_margin`` again with ``steps`` = the learned sampler's mean passes
rounded (it may stop before T). ``sequential`` runs once as the ceiling. ``eb`` and ``mi`` have no step budget,
so each runs over a grid of ``gamma`` once (mi both plain and with the relative cost, lam 0.5) and, per T, the
most accurate setting whose mean passes are <= T is reported. ``mi`` and ``learned_mi`` read ``--estimator``, else the
shipped estimator trained on ``--model``; without one they are skipped. Writes a JSON list of rows and a Markdown report
(per-level accuracies, the pass distribution of ``learned``, and whether learned beats top_margin by the 8-point
goal where top_margin is >= 20%).
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from mi_core.bench import decode
from mi_core.bench.order import estimator_of, gammas_of, matched, row_bar, selector_or_skip, strategy_for, write_report
from mi_core.bench.report import markdown_table
from mi_core.device import pick_device, warn_if_slow_bf16
from mi_core.domains.sudoku import read_puzzles
from mi_core.domains.sudoku.bench import LEVELS, evaluate, with_default_estimator
from mi_core.domains.sudoku.mdm import load_sudoku_mdm
from mi_core.io import display_path
from mi_core.options import counted, option

GAMMAS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 4.0, 8.0)


def pick_records(path: Path, per_level: int, skip: int = 0) -> list:
    """Puzzles ``skip + 1 .. skip + per_level`` of each level, in file order."""
    records, seen = [], Counter()
    for rec in read_puzzles(path):
        seen[rec.level] += 1
        if skip < seen[rec.level] <= skip + per_level:
            records.append(rec)
    return records


LEARNED_MI_GAMMAS = {5: 8.0, 10: 4.0, 15: 2.0, 20: 1.0}  # chosen on puzzles 101-200 per level (scripts/studies/order_experiments.py)


def parse_gamma_map(spec: str) -> dict[int, float]:
    """``"5:8,10:4"`` -> ``{5: 8.0, 10: 4.0}``; a budget below 1 or a gamma that is not a finite number >= 0 is
    refused here, before any row decodes."""
    try:
        gammas = {int(t): float(g) for t, g in (item.split(":") for item in spec.split(",") if item.strip())}
    except ValueError:
        raise ValueError(f"--learned-mi-gammas expects T:GAMMA pairs separated by commas, got {spec!r}") from None
    for t, g in gammas.items():
        if t < 1 or not math.isfinite(g) or g < 0:
            raise ValueError(f"--learned-mi-gammas {spec}: {t}:{g:g} needs a budget T >= 1 and a gamma that is a "
                             "finite number >= 0")
    return gammas


def run(model, records, args, done, name: str, params: dict, **extra) -> dict:
    """One sampler's row (``extra`` appended), kept and printed by ``done`` (:class:`~mi_core.bench.order.Rows`) as
    it is done, or read back from an interrupted run's; a sampler that reads MI reads ``args.estimator``."""
    def row() -> dict:
        strategy = with_default_estimator(strategy_for(name, params, args.selector), args.estimator)
        res = evaluate(model, records, strategy, batch_size=256, seed=args.seed, bf16=args.bf16, device=model.device)
        return {"sampler": name, "params": params, **{k: res[k] for k in ("n", "accuracy", "mean_passes", "seconds")},
                "by_level": {lvl: round(v["accuracy"], 4) for lvl, v in res.get("by_level", {}).items()},
                "passes_hist": dict(sorted(Counter(res["passes"]).items())),
                **decode.estimator_fields(getattr(strategy, "estimator", None)), **extra}

    return done([name, params, extra], row)


def goal_lines(margin: dict, learned: dict, label: str, levels: list[str]) -> list[str]:
    """Where top_margin solves >= 20% (whole set and per level), does ``learned`` beat it by >= 8 points?"""
    out = []
    for lv, m, lrn in [("all", margin["accuracy"], learned["accuracy"])] + [
            (lv, margin["by_level"].get(lv, 0.0), learned["by_level"].get(lv, 0.0)) for lv in levels]:
        if m >= 0.2:
            out.append(f"- {lv}: top_margin {m:.3f}, {label} {lrn:.3f}, difference {lrn - m:+.3f} "
                       f"({'meets' if lrn - m >= 0.08 else 'misses'} the +0.08 goal)")
    return out


def by_level_text(by_level: dict, levels: list[str]) -> str:
    """``{"Medium": 0.5, "Easy": 0.93}`` -> ``"Easy 0.930, Medium 0.500"`` (in ``levels``' order, others after)."""
    order = [lv for lv in levels if lv in by_level] + [lv for lv in by_level if lv not in levels]
    return ", ".join(f"{lv} {by_level[lv]:.3f}" for lv in order)


def passes_text(hist: dict) -> str:
    """``{3: 10, 5: 2}`` -> ``"3 (10 puzzles), 5 (2 puzzles)"``: how many puzzles took each count of passes."""
    return ", ".join(f"{p} ({counted(n, 'puzzle')})" for p, n in sorted(hist.items(), key=lambda kv: int(kv[0])))


def report(rows: list[dict], budgets: list[int], levels: list[str]) -> str:
    out = []
    ceiling = next((r for r in rows if r["sampler"] == "sequential"), None)
    if ceiling is not None:
        by_level = f"; by level {by_level_text(ceiling['by_level'], levels)}" if ceiling["by_level"] else ""
        line = (f"Reference: sequential (one cell per pass) solves {ceiling['accuracy']:.3f} in "
                f"{ceiling['mean_passes']:.1f} passes{by_level}.")
        out += [line, ""]
    for t in budgets:
        table = [r for r in rows if r.get("T") == t] + [r for n in ("eb", "mi") if (r := matched(rows, n, t))]
        table = [dict(r, **{f"lvl_{k}": v for k, v in r["by_level"].items()}) for r in table]
        cols = [("sampler", "sampler"), ("params", "params"), ("accuracy", "solved")]
        cols += [(f"lvl_{lv}", lv) for lv in levels] + [("mean_passes", "mean passes")]
        out += [f"### T = {t}", "", markdown_table(table, cols), ""]
        margin = next(r for r in rows if r.get("T") == t and r["sampler"] == "top_margin" and not r.get("matched"))
        for name, mode in (("learned", "threshold"), ("learned", "paced"), ("learned_mi", None)):
            learned = next((r for r in rows if r.get("T") == t and r["sampler"] == name
                            and r["params"].get("mode") == mode), None)
            if learned is not None:
                label = f"{name} ({mode})" if mode else name
                out.append(f"{label} passes used: {passes_text(learned['passes_hist'])}")
                out += goal_lines(margin, learned, label, levels)
        out.append("")
    return "\n".join(out)


@dataclass
class SudokuOrderBench:
    """``bench-order sudoku``: puzzles per level of a graded file."""

    puzzles: Path = option(None, "puzzle file", required=True)
    per_level: int = option(100, "puzzles per level", range=(1, 1_000_000))
    paced_threshold: float = option(0.9, "threshold of learned's paced mode (0.9: chosen on puzzles 101-200 of "
                                    "each Kaggle level, not the benchmark's first 100)", range=(0, 1))
    learned_mi_gammas: str = option(",".join(f"{t}:{g:g}" for t, g in LEARNED_MI_GAMMAS.items()),
                                    "T:GAMMA budgets of learned_mi (the selector's risk plus MI; default chosen on "
                                    "puzzles 101-200 of each level); empty: skip it")
    # fp32 as in every other command (bf16 is emulated, 5-18x slower, on CPUs without it); recorded lines hold --no-bf16
    bf16: bool = option(False, "bf16 autocast for the model passes (faster on CPUs with AMX; default: fp32)",
                        negatable=True)
    estimator: Path | None = option(None, "MI estimator of the mi and learned_mi rows (default: the one trained on "
                                    "--model's weights, shipped; none: those rows are skipped)")


options = SudokuOrderBench


def budget_configs(t: int, args, mi_gammas: dict) -> list[tuple[str, dict]]:
    """The step-budget samplers at ``steps=t`` (top_margin at learned's mean passes is added after them)."""
    configs = [("random", {"steps": t}), ("top_prob", {"steps": t}), ("top_margin", {"steps": t}),
               ("learned", {"steps": t, "mode": "threshold"}),
               ("learned", {"steps": t, "mode": "paced", "threshold": args.paced_threshold}),
               ("learned", {"steps": t, "mode": "sample"})][:None if args.selector is not None else 3]
    return configs + ([("learned_mi", {"steps": t, "gamma": mi_gammas[t]})] if t in mi_gammas else [])


def budget_rows(model, records, args, t: int, mi_gammas: dict, done) -> list[dict]:
    """Every step-budget sampler at ``steps=t``, then top_margin at learned's own mean passes (it may stop early)."""
    rows = [run(model, records, args, done, name, params, T=t) for name, params in budget_configs(t, args, mi_gammas)]
    if args.selector is None:  # no learned rows, so no passes of theirs to match
        return rows
    used = next(r for r in rows if r["params"].get("mode") == "threshold")["mean_passes"]
    rows.append(run(model, records, args, done, "top_margin", {"steps": max(1, round(used))}, T=t, matched=True))
    return rows


def run_bench(args, domain) -> int:
    args.model = args.model or Path(domain.default_file("model"))
    budgets = args.budgets
    gammas = gammas_of(args, GAMMAS)
    mi_gammas = parse_gamma_map(args.learned_mi_gammas)
    if mi_gammas and (missing := [t for t in budgets if t not in mi_gammas]):
        print(f"note: --learned-mi-gammas {args.learned_mi_gammas} has no gamma for budget(s) "
              f"{', '.join(map(str, missing))}: learned_mi is left out there (give T:GAMMA for each)", file=sys.stderr)
    device = pick_device(args.device, args.threads)
    warn_if_slow_bf16(device, args.bf16)
    model = load_sudoku_mdm(args.model, device)
    args.selector = selector_or_skip(args, domain, model)  # None: no learned rows (a user's own model, no --selector)
    if args.selector is None:
        mi_gammas = {}
    args.estimator = estimator_of(args.estimator, domain, model)
    if args.estimator is None and (gammas or mi_gammas):
        print(f"note: no MI estimator was trained on {args.model}: the mi and learned_mi rows are skipped "
              "(give --estimator PATH)", file=sys.stderr)
        mi_gammas = {}
    records = pick_records(args.puzzles, args.per_level)
    levels = sorted(dict.fromkeys(r.level for r in records if r.level),
                    key=lambda v: (v not in LEVELS, LEVELS.index(v) if v in LEVELS else 0, v))
    grid = [("eb", {"gamma": g}) for g in gammas]
    if args.estimator is not None:
        grid += [("mi", {"gamma": g}) for g in gammas]
        grid += [("mi", {"gamma": g, "lam": 0.5, "relative": True}) for g in gammas]  # the sweeps' best MI cost
    grid.append(("sequential", {}))
    total = sum(len(budget_configs(t, args, mi_gammas)) + (args.selector is not None) for t in budgets) + len(grid)
    with row_bar(total, args) as done:
        rows = [row for t in budgets for row in budget_rows(model, records, args, t, mi_gammas, done)]
        rows += [run(model, records, args, done, name, params) for name, params in grid]
    recorded = decode.model_fields(model, args)
    rows = [row | recorded for row in rows]
    estimator = display_path(args.estimator) if args.estimator else "none (no mi rows)"
    write_report(args, rows, f"{len(records)} puzzles of {args.puzzles.name} ({args.per_level} per level), "
                 f"selector {args.selector or 'none (no learned rows)'}, MI estimator {estimator}, "
                 f"{'bf16' if args.bf16 else 'fp32'} forward passes\n\n"
                 + report(rows, budgets, levels), echo=True)
    return 0
