"""Why does a parallel sampler fail where sequential decoding succeeds? ``python -m mi_core diagnose sudoku``.

Each sampler's first wrong step is classed ``alone`` (the only cell written: a plain model error),
``with_dependent`` (written with a cell of its row, column or box, the failure dependency-aware scheduling
should prevent; ``clash``: two such cells got the same digit) or ``with_independent``. Puzzles are
cross-tabulated against sequential decoding (``lost``, ``gained``, ``both_fail``).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from mi_core.bench.decode import PROGRESS_FORMAT, RowsDone
from mi_core.bench.report import command_line, markdown_table, update_section
from mi_core.bench.sweep import parse_grid_spec
from mi_core.decoding import decode, make_strategy
from mi_core.device import bf16_autocast, pick_device, warn_if_slow_bf16
from mi_core.domain import get_domain
from mi_core.domains.sudoku import SUDOKU9
from mi_core.domains.sudoku.bench import with_default_estimator
from mi_core.domains.sudoku.mdm import load_sudoku_mdm
from mi_core.io import atomic_write_json, check_output, display_path
from mi_core.options import Device, Force, markdown_option, naming, option, section_problem

CLASSES = ("alone", "with_dependent", "with_independent")


@torch.no_grad()
def trace(model, tokens: torch.Tensor, target: torch.Tensor, strategy, bf16: bool, progress=None) -> list[dict]:
    """Per puzzle: solved, passes, and the first wrong step's class, size and clash flag (None if solved);
    ``progress(x)`` as the puzzles fill (:class:`RowsDone`)."""
    same = torch.as_tensor(SUDOKU9.peers(), device=tokens.device)  # (81, 81): the cells share a row, column or box
    first: list[dict | None] = [None] * len(tokens)
    last = None
    report = RowsDone(progress, tokens, model.mask_id) if progress else None
    with bf16_autocast(tokens.device, bf16):
        for frame in decode(model, tokens, strategy):
            last = frame
            if report:
                report.step(frame)
            wrong = frame.chosen & (frame.tokens != target)
            for b in torch.nonzero(wrong.any(1))[:, 0].tolist():
                if first[b] is not None:
                    continue
                chosen = frame.chosen[b].nonzero()[:, 0]
                bad = wrong[b].nonzero()[:, 0]
                dependent = bool(same[bad][:, chosen].any())
                digits = frame.tokens[b, chosen]
                pair_same = same[chosen][:, chosen] & (digits[:, None] == digits[None])
                kind = "alone" if len(chosen) == 1 else ("with_dependent" if dependent else "with_independent")
                first[b] = {"class": kind, "step": frame.step, "step_size": len(chosen), "clash": bool(pair_same.any())}
    if report:
        report.end()
    final, passes = (tokens, torch.zeros(len(tokens))) if last is None else (last.tokens, last.passes)  # None: all full
    solved = (final == target).all(1)
    return [{"solved": bool(solved[b]), "passes": int(passes[b]), "first_error": first[b]} for b in range(len(tokens))]


def summarise(name: str, rows: list[dict], reference: list[dict]) -> dict:
    """Accuracy, passes, the cross-tab against ``reference`` and first-error classes."""
    n = len(rows)
    lost = [r for r, s in zip(rows, reference) if s["solved"] and not r["solved"]]
    gained = sum(1 for r, s in zip(rows, reference) if r["solved"] and not s["solved"])
    fails = [r for r in rows if not r["solved"]]

    def classes(group):
        errs = [r["first_error"] for r in group if r["first_error"]]
        out = {c: sum(e["class"] == c for e in errs) for c in CLASSES}
        out["clash"] = sum(e["clash"] for e in errs)
        return out

    return {"sampler": name, "n": n, "accuracy": sum(r["solved"] for r in rows) / n,
            "mean_passes": float(np.mean([r["passes"] for r in rows])), "lost": len(lost), "gained": gained,
            "both_fail": sum(1 for r, s in zip(rows, reference) if not r["solved"] and not s["solved"]),
            "lost_first_error": classes(lost), "all_first_error": classes(fails),
            "mean_first_error_step_size": float(np.mean([r["first_error"]["step_size"] for r in fails if r["first_error"]] or [0]))}


def parse_sampler(text: str):
    """``name`` or ``name:key=value;key=value`` (the ``sweep --grid`` syntax, one value each) -> (label, strategy)."""
    combos = parse_grid_spec(text, "--sampler")
    if len(combos) != 1:
        raise ValueError(f"--sampler {text!r} names {len(combos)} settings; give one value per parameter, "
                         "parameters apart by ';' (\"mi:gamma=1;lam=1\")")
    name, params = combos[0]
    with naming({}, fallback=f"--sampler {text}"):
        strategy = make_strategy(name, **params)
    return text, with_default_estimator(strategy)


@dataclass
class DiagnoseOptions:
    puzzles: Path = option(None, "puzzle file (.txt or .csv)", required=True)
    level: str | None = option(None, "keep one difficulty level of a graded CSV")
    limit: int = option(200, "use the first N puzzles", range=(1, 10_000_000))
    model: Path | None = option(None, "Sudoku MDM weights (default: the shipped one)",
                               default_for=lambda d: d.default_file("model"))
    sampler: list[str] = option(None, "sampler to diagnose, e.g. 'mi:gamma=0.3;lam=1' or 'eb:gamma=0.2' (repeat)",
                                many=True, required=True)
    bf16: bool = option(False, "bf16 autocast for the model passes")
    json: Path = option(None, "write the results here", required=True)
    section: str | None = option(None, "the name of the section written into --markdown (default: diagnose, the "
                                 "file's stem and level)", check=section_problem)
    markdown: Path | None = markdown_option("the file --section goes to (e.g. BENCHMARKS.md)")


def options(domain) -> list:
    return [DiagnoseOptions, Device, Force]


def main(args) -> int:
    check_output(args.json, args.force)
    check_output(args.markdown, True, "--markdown")  # a report file: its own section is replaced
    if args.section and args.markdown is None:
        raise ValueError("--section needs --markdown FILE (the file its section goes to)")
    templates, solutions, _ = get_domain(args.domain).read_inputs(args.puzzles, args.limit, args.level)
    samplers = [parse_sampler(s) for s in args.sampler]
    for i, (label, strategy) in enumerate(samplers):  # one setting however written: eb:gamma=1 and eb:gamma=1.0
        if first := next((other for other, earlier in samplers[:i] if earlier == strategy), None):
            raise ValueError(f"--sampler {label} is given twice{'' if first == label else f' (as {first})'}: it "
                             "would run twice")
    device = pick_device(args.device, args.threads)
    warn_if_slow_bf16(device, args.bf16)
    model = load_sudoku_mdm(args.model, device)
    for label, strategy in samplers:  # its estimator or selector read and checked now, not after the others ran
        try:
            strategy.prepare(model, device)
        except ValueError as err:
            raise ValueError(f"--sampler {label}: {err}") from None
    tokens = torch.tensor(np.stack(templates), device=device)
    target = torch.tensor(np.stack(solutions), device=device)
    start = time.perf_counter()

    def traced(label, strategy):  # a bar per sampler, counting a part-decoded puzzle by its share filled
        with tqdm(total=len(tokens), desc=label, unit="puzzle", file=sys.stderr, bar_format=PROGRESS_FORMAT) as bar:
            return trace(model, tokens, target, strategy, args.bf16, bar.update)

    reference = traced("sequential", make_strategy("sequential"))
    results = [summarise("sequential", reference, reference)]
    for label, strategy in samplers:
        results.append(summarise(label, traced(label, strategy), reference))
        print(json.dumps(results[-1]), flush=True)
    out = {"puzzles": display_path(args.puzzles), "level": args.level, "limit": args.limit, "model": display_path(args.model),
           "n": len(templates), "bf16": args.bf16, "seconds": round(time.perf_counter() - start, 1), "results": results}
    atomic_write_json(args.json, out)
    if args.markdown is not None:
        section = args.section or " ".join(filter(None, ("diagnose", args.puzzles.stem, args.level)))
        classes = "{alone} / {with_dependent} / {with_independent} ({clash})".format
        table = [{"sampler": r["sampler"], "accuracy": f"{100 * r['accuracy']:.1f}%", "passes": f"{r['mean_passes']:.1f}",
                  "lost": f"{r['lost']} / {r['gained']}", "lost_classes": classes(**r["lost_first_error"]),
                  "all_classes": classes(**r["all_first_error"])} for r in results]
        columns = [("sampler", "sampler"), ("accuracy", "solved"), ("passes", "mean passes"),
                   ("lost", "lost / gained vs sequential"),
                   ("lost_classes", "lost puzzles: first error alone / with dependent / with independent (clash)"),
                   ("all_classes", "all failures: alone / with dependent / with independent (clash)")]
        update_section(section, f"`{command_line(args, 'diagnose')}`\n\n{markdown_table(table, columns)}",
                       args.markdown)
    return 0
