"""``python -m mi_core eval-estimator sudoku --puzzles PATH [--limit N] --json OUT``: estimator vs exact probe.

Held-out states are drawn from the given puzzle file, seeded, as the training data is drawn from generated
puzzles (masked solutions at t ~ U(0, 1), clue patterns, intermediate states of decoding runs), so the
estimator never saw them. Both the exact probe and the estimator (one MDM pass + the head, one state at a
time) run on every state in the same process; the report gives Spearman and Pearson correlation over
masked x masked pairs (pooled and median per state), MAE, top-k edge precision, results by mask ratio
and by source, the wall times and their ratio, and how well the strongest edges recover the Sudoku
row/column/box constraint graph on the empty grid and on partly filled grids. Writes JSON (``--json``) and
replaces the section between the markers below in ``--markdown`` (default ``BENCHMARKS.md``).

``eval-estimator protein ...``: the same comparison on held-out protein states (:mod:`mi_core.bench.protein_estimator`).
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
from pathlib import Path

import numpy as np
import torch

from mi_core.bench.estimator_common import (  # noqa: F401  (re-exported)
    HEADLINE,
    RATIO_BINS,
    _fid_row,
    _fmt,
    grouped,
    json_ready,
    ratio_label,
)
from mi_core.bench.report import update_section
from mi_core.bench.scale import exact_on_engine
from mi_core.decoding.sudoku_states import SOURCES, StateMix, draw_states
from mi_core.device import pick_device, timed
from mi_core.domains.registry import add_domain_parsers
from mi_core.domains.sudoku import SUDOKU9, parse_grid, read_puzzles
from mi_core.io import atomic_write_json, check_output
from mi_core.mi.estimator import check_model_match, estimate_mi, load_estimator, load_estimator_meta
from mi_core.mi.fidelity import fidelity, mean_recovery, rule_recovery
from mi_core.mi.probe import probe, probe_many
from mi_core.options import ArgumentParser, add_force
from mi_core.scale.engine import add_engine_options, engine_from_args

SECTION = "eval-estimator"  # BENCHMARKS.md section, between <!-- eval-estimator:start/end --> markers
TIMING_NOTE = "warm-up call excluded; the device is synchronized before each clock reading"


def puzzle_arrays(path: Path, limit: int | None) -> tuple[np.ndarray, np.ndarray]:
    """``(puzzles, solutions)`` each ``(P, 81)`` from a puzzle file (solutions solved when absent)."""
    from mi_core.bench.sudoku import solutions_for

    records = read_puzzles(path, limit=limit)
    puzzles = np.array([parse_grid(r.puzzle, 81) for r in records], dtype=np.int64)
    solutions = np.array([parse_grid(s, 81) for s in solutions_for(records)], dtype=np.int64)
    return puzzles, solutions


def run_exact(model, tokens: torch.Tensor, eps: float, max_batch: int, timing_states: int = 20
              ) -> tuple[np.ndarray, list, list, float]:
    """Exact MI ``(S, N, N)`` of all states from one :func:`probe_many` call, with its passes per state and
    wall seconds, and the one-at-a-time seconds of :func:`probe` on the first ``timing_states`` states.

    Both timings follow a warm-up call (excluded) and synchronize the device before reading the clock.
    """
    probe_many(model, tokens[:1], eps=eps, max_batch=max_batch)  # warm-up
    many, batched = timed(lambda: probe_many(model, tokens, eps=eps, max_batch=max_batch), tokens.device)
    seconds = [timed(lambda t=t: probe(model, t, eps=eps, max_batch=max_batch), tokens.device)[1]
               for t in tokens[:timing_states]]
    return many.mi.cpu().numpy(), seconds, many.passes.tolist(), batched


def run_estimator(model, estimator, tokens: torch.Tensor) -> tuple[np.ndarray, list, float]:
    """Estimated MI ``(S, N, N)``: one state at a time (its wall seconds each), then all in one batch (seconds).

    A warm-up call is excluded; the device is synchronized before each clock reading."""
    estimate_mi(model, estimator, tokens[:1])  # warm-up
    mi, seconds = [], []
    for s in range(len(tokens)):
        est, sec = timed(lambda s=s: estimate_mi(model, estimator, tokens[s : s + 1]), tokens.device)
        seconds.append(sec)
        mi.append(est.mi[0].double().cpu().numpy())
    _, batched = timed(lambda: estimate_mi(model, estimator, tokens), tokens.device)
    return np.stack(mi), seconds, batched


def rules_report(model, estimator, pred, exact, masked, source, threshold, eps, max_batch) -> dict:
    """Rule recovery (Sudoku peers) of estimated and exact MI: empty grid, clue patterns, all held-out states."""
    peers = SUDOKU9.peers()
    empty = torch.zeros(1, model.seq_len, dtype=torch.long, device=model.device)
    e_pred = estimate_mi(model, estimator, empty).mi[0].double().cpu().numpy()
    e_exact = probe_many(model, empty, eps=eps, max_batch=max_batch).mi[0].cpu().numpy()
    all_masked = np.ones(model.seq_len, dtype=bool)
    groups = {"empty grid": ([e_pred], [e_exact], [all_masked]),
              "puzzle clue patterns": tuple(x[source == 1] for x in (pred, exact, masked)),
              "all held-out states": (pred, exact, masked)}
    out = {}
    for name, (p, e, m) in groups.items():
        if len(m) == 0:
            continue
        out[name] = {side: mean_recovery([rule_recovery(x, mm, peers, threshold) for x, mm in zip(xs, m)])
                     for side, xs in (("estimator", p), ("exact", e))}
    return out


def run_eval(model, estimator, puzzles, solutions, args, device, log=print) -> dict:
    """The whole evaluation as a JSON-ready dict (see the module docstring)."""
    rng = np.random.default_rng(args.seed)
    tokens, source = draw_states(model, puzzles, solutions, args.states, StateMix.parse(args.mix), rng,
                                 transform=False, device=device)
    tokens = torch.as_tensor(tokens, device=device)
    masked = (tokens == model.mask_id).cpu().numpy()
    engine = getattr(args, "engine_cfg", None)
    if engine is not None and engine.engine == "ray":  # chunks of states probed on Ray actors
        exact, exact_s, passes, exact_batched = exact_on_engine(run_exact, tokens, args, engine)
    else:
        exact, exact_s, passes, exact_batched = run_exact(model, tokens, args.eps, args.max_batch, args.timing_states)
    pred, est_s, batched_s = run_estimator(model, estimator, tokens)
    log(f"probe {exact_batched:.2f} s, estimator {batched_s:.3f} s over {len(tokens)} states (batched)")
    res = fidelity(pred, exact, masked, args.threshold)
    ratios = masked.mean(1)
    res.update({
        "estimator_seconds": batched_s, "exact_seconds": exact_batched, "speedup": exact_batched / batched_s,
        "estimator_median_seconds": float(np.median(est_s)), "exact_median_seconds": float(np.median(exact_s)),
        "speedup_median": float(np.median(exact_s) / np.median(est_s)), "timed_states": len(exact_s),
        "estimator_batched_seconds": batched_s, "exact_passes": int(sum(passes)), "estimator_passes": len(tokens),
        "timing": TIMING_NOTE,
        "by_mask_ratio": grouped(pred, exact, masked, [ratio_label(r) for r in ratios], args.threshold),
        "by_source": grouped(pred, exact, masked, [SOURCES[s] for s in source], args.threshold),
        "rules": rules_report(model, estimator, pred, exact, masked, source, args.threshold, args.eps, args.max_batch),
        "exact_max_mi": float(exact.max()), "mean_masked": float(masked.sum(1).mean()),
        "puzzles": str(args.puzzles), "limit": args.limit, "seed": args.seed, "mix": args.mix, "eps": args.eps,
        "model": str(args.model), "estimator": str(args.estimator), "estimator_params": estimator.num_params(),
        "estimator_config": estimator.cfg.__dict__, "training": training_summary(load_estimator_meta(args.estimator)),
        "device": str(device),
        "host": platform.processor() or platform.machine(), "threads": torch.get_num_threads(),
    })
    return res


def training_summary(meta: dict) -> dict:
    """What the estimator's JSON says about its training data and variants (empty parts when absent)."""
    keep = ("states", "by_source", "mean_masked", "passes", "probe_seconds", "command")
    variants = [{k: v.get(k) for k in ("variant", "val_spearman", "params", "seconds")}
                | {k: v.get("val", {}).get(k) for k in ("spearman_median", "topk_precision")}
                for v in meta.get("variants", [])]
    return {"data": {k: meta.get("data", {}).get(k) for k in keep}, "command": meta.get("command"),
            "mdm": meta.get("mdm"), "chosen": meta.get("chosen"), "variants": variants,
            "train_states": meta.get("train_states"), "val_states": meta.get("val_states")}


def training_markdown(t: dict) -> list[str]:
    """Lines on the estimator's training data and the variants compared on its validation states."""
    d = t["data"]
    if not t["variants"] or d.get("states") is None:
        return []
    sources = ", ".join(f"{k} {v}" for k, v in d["by_source"].items())
    data = (f"Training data: {d['states']} states ({sources}; {d['mean_masked']:.1f} masked cells on average) "
            f"drawn from generated puzzles; the exact probe took {d['passes']:,} passes and "
            f"{d['probe_seconds']:.0f} s" + (f": `{d['command']}`." if d.get("command") else "."))
    train = (f"Trained with `{t['command']}` ({t['train_states']} training, {t['val_states']} validation states); "
             f"kept: **{t['chosen']}** (best validation Spearman).")
    header = ("| variant (loss : bound/free [: no position embeddings]) | val Spearman | val Spearman (median) "
              "| val top-k precision | parameters | seconds |")
    lines = [data, "", train, "", header, "|---|---|---|---|---|---|"]
    for v in t["variants"]:
        lines.append(f"| {v['variant']} | {_fmt(v['val_spearman'])} | {_fmt(v['spearman_median'])} | "
                     f"{_fmt(v['topk_precision'])} | {_fmt(v['params'], ',')} | {_fmt(v['seconds'], '.0f')} |")
    return [*lines, ""]


def fidelity_markdown(res: dict) -> list[str]:
    """The run's settings and the fidelity table (all states, by mask ratio, by source)."""
    limit = f" --limit {res['limit']}" if res["limit"] else ""
    command = (f"python -m mi_core eval-estimator sudoku --puzzles {res['puzzles']}{limit} --states {res['n_states']} "
               f"--seed {res['seed']}")
    intro = (f"`{command}`: model `{res['model']}`, estimator `{res['estimator']}` ({res['estimator_params']:,} "
             f"parameters), {res['device']} ({res['host']}, {res['threads']} threads). Held-out states drawn from that "
             f"file (mix uniform,puzzle,decode = {res['mix']}), {res['mean_masked']:.1f} masked cells on average; "
             f"exact probe eps = {res['eps']:g}. Pairs: masked x masked, i < j. Top-k: per state, k = exact pairs "
             f"above {res['edge_threshold']:g} nats (total k in brackets).")
    header = "| | states | pairs | Spearman | Spearman (median/state) | Pearson | MAE (nats) | top-k precision (k) |"
    lines = [intro, "", header, "|---|---|---|---|---|---|---|---|", _fid_row("all", res)]
    lines += [_fid_row(f"mask ratio {name}", f) for name, f in res["by_mask_ratio"].items()]
    lines += [_fid_row(f"source: {name}", f) for name, f in res["by_source"].items()]
    return lines


def timing_markdown(res: dict) -> list[str]:
    text = (f"Wall time, same run and machine ({res.get('timing', 'warm-up included, no device sync')}): all "
            f"{res['n_states']} states in one batched call, exact probe (`probe_many`) "
            f"**{res['exact_seconds']:.2f} s** ({res['exact_passes']:,} passes), estimator "
            f"**{res['estimator_seconds']:.3f} s** (1 pass + head per state): **{res['speedup']:.0f}x** faster. "
            f"One state at a time (median; exact over the first {res.get('timed_states', res['n_states'])} "
            f"states): exact {res['exact_median_seconds']:.3f} s, estimator "
            f"{1e3 * res['estimator_median_seconds']:.1f} ms, {res['speedup_median']:.0f}x.")
    return [text]


def rules_markdown(res: dict) -> list[str]:
    intro = (f"Sudoku rule recovery (peers = the row/column/box constraint graph). R-precision: share of the K "
             f"strongest masked pairs that are peers, K = masked peer pairs (precision = recall there); "
             f"precision/recall: edges above {res['edge_threshold']:g} nats.")
    lines = [intro, "", "| states | MI | R-precision | precision | recall | edges | peer pairs |",
             "|---|---|---|---|---|---|---|"]
    for name, sides in res["rules"].items():
        for side, r in sides.items():
            lines.append(f"| {name} ({r['n_states']}) | {side} | {_fmt(r['r_precision'])} | {_fmt(r['precision'])} | "
                         f"{_fmt(r['recall'])} | {_fmt(r['edges'], '.0f')} | {_fmt(r['rule_pairs'], '.0f')} |")
    return lines


def markdown(res: dict) -> str:
    """The BENCHMARKS.md section (between the markers) for a result of :func:`run_eval`."""
    lines = ["## Neural MI estimator vs exact probe (`python -m mi_core eval-estimator`)", ""]
    lines += training_markdown(res["training"]) + fidelity_markdown(res) + [""] + timing_markdown(res) + [""]
    return "\n".join(lines + rules_markdown(res))


def sudoku_options(p: argparse.ArgumentParser, domain) -> None:
    p.add_argument("--puzzles", required=True, type=Path, help="held-out puzzles (.txt or .csv); never training data")
    p.add_argument("--limit", type=int, default=None, help="draw from the first N puzzles only")
    p.add_argument("--states", type=int, default=60, help="held-out states to compare on")
    p.add_argument("--mix", default=StateMix().as_text(), help="weights of uniform,puzzle,decode states")
    p.add_argument("--threshold", type=float, default=1e-2, help="exact MI (nats) above which a pair is an edge")
    p.add_argument("--eps", type=float, default=0.0, help="exact probe pruning (0: exact)")
    p.add_argument("--max-batch", type=int, default=512)
    p.add_argument("--timing-states", type=int, default=20, help="states probed one at a time for the per-state time")
    p.add_argument("--model", type=Path, default=Path(domain.default_file("model")))
    p.add_argument("--estimator", type=Path, default=Path(domain.default_file("estimator")))
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    p.add_argument("--markdown", type=Path, default=Path("BENCHMARKS.md"), help="section updated in this file")
    p.add_argument("--no-markdown", dest="write_markdown", action="store_false")
    p.add_argument("--section", default=SECTION, help="the section of --markdown to write (a name of letters, digits and -)")
    add_force(p)
    add_engine_options(p)


def build_parser() -> argparse.ArgumentParser:
    from mi_core.bench import protein_estimator

    p = ArgumentParser(prog="python -m mi_core eval-estimator", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_domain_parsers(p, lambda sub, d: (protein_estimator.add_options if d.key == "protein" else sudoku_options)(sub, d),
                       needs="states", when=lambda d: d.key in ("sudoku9", "protein"))
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.domain == "protein":
        from mi_core.bench.protein_estimator import main as protein_main

        return protein_main(args)
    if args.states < 1 or (args.limit is not None and args.limit < 1):
        raise ValueError("--states and --limit must be >= 1")
    if not re.fullmatch(r"[A-Za-z0-9_-]+", args.section):
        raise ValueError(f"--section must be letters, digits, '-' or '_', got {args.section!r}")
    if args.timing_states < 1:
        raise ValueError(f"--timing-states must be >= 1, got {args.timing_states}")
    check_output(args.json, args.force)
    args.engine_cfg = engine_from_args(args)  # Ray missing or a bad setting: one line before any work
    if args.threads:
        torch.set_num_threads(args.threads)
    from mi_core.models.sudoku_mdm import load_sudoku_mdm

    device = pick_device(args.device)
    puzzles, solutions = puzzle_arrays(args.puzzles, args.limit)
    model = load_sudoku_mdm(args.model, device)
    estimator = load_estimator(args.estimator, device)
    check_model_match(model, estimator, f"the model {args.model}", f"the estimator {args.estimator}")
    res = json_ready(run_eval(model, estimator, puzzles, solutions, args, device,
                              log=lambda m: print(m, file=sys.stderr, flush=True)))
    if args.json is not None:
        atomic_write_json(args.json, res)
    if args.write_markdown:
        update_section(args.section, markdown(res), args.markdown)
    keys = ("n_states", *HEADLINE, "estimator_seconds", "exact_seconds", "speedup")
    print(json.dumps({k: res[k] for k in keys}, indent=2))
    return 0
