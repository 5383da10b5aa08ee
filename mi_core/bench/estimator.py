"""``python -m mi_core eval-estimator DOMAIN [options]``: the neural MI estimator against the exact probe.

Held-out states come from the domain's state source in its held-out form (``held_out``), drawn as the
estimator's training states are, so the estimator never saw them. The exact probe (on Ray actors with
``--engine ray``) and the estimator run on every state. The report: correlations over masked x masked pairs,
MAE, top-k edge precision, results by mask ratio, source, sequence separation and rule recovery, and wall
times. Writes JSON (``--json``) and optionally the domain's section of a Markdown file (``--markdown``).
"""

from __future__ import annotations

import itertools
import json
import math
import platform
import re
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
from scipy import stats

from mi_core.bench.decode import length_batches
from mi_core.bench.report import (
    Kept,
    MarkdownOut,
    Resume,
    check_partial,
    command_line,
    drop_partial,
    keep_stopped,
    run_identity,
    stopped_fields,
    stopped_line,
    table,
    update_section,
)
from mi_core.bench.scale import chunks_on_engine
from mi_core.device import pick_device, timed
from mi_core.domain import Domain, get_domain
from mi_core.io import atomic_write_json, check_output, json_ready
from mi_core.mi.estimator import (
    EstimatorInputError,
    absent_own_estimator,
    check_model_match,
    estimate_mi,
    load_estimator,
    model_hint,
)
from mi_core.mi.fidelity import correlation, fidelity, mean_recovery, pair_values, rule_recovery
from mi_core.mi.probe import probe, probe_by_length
from mi_core.models.base import load_meta, trained_on_mismatch
from mi_core.models.loading import load_model
from mi_core.options import Device, Force, JsonOut, option, seed, under_one
from mi_core.scale.engine import EngineConfig, engine_from_args

RATIO_BINS = (0.0, 0.25, 0.5, 0.75, 1.0)
HEADLINE = ("spearman", "spearman_median", "pearson", "pearson_median", "mae", "topk_precision")
SEPARATION_BANDS = ((1, 4), (5, 11), (12, 23), (24, 10**6))  # |i - j|: local, short, medium, long range
TIMING_NOTE = "warm-up calls excluded; the device is synchronized before each clock reading"


def section_of(domain: Domain) -> str:
    return getattr(domain.part("states"), "section", None) or f"eval-estimator-{domain.cli_name}"


# -- the runs ------------------------------------------------------------------------------------------------
def exact_chunk(model, device, states: list[np.ndarray], start: int, eps: float, max_batch: int,
                timing_states: int) -> tuple[list, list[float]]:
    """Probe results of ``states`` (``states[0]`` is state ``start`` of the run), and the seconds of probing
    each of the run's first ``timing_states`` states alone."""
    tensors = [torch.as_tensor(t, device=device) for t in states]
    probe_by_length(model, tensors[:1], eps=eps, max_batch=max_batch)  # warm-up
    probes = probe_by_length(model, tensors, eps=eps, max_batch=max_batch)
    alone = [timed(lambda t=t: probe(model, t, eps=eps, max_batch=max_batch), device)[1]
             for t in tensors[: max(0, timing_states - start)]]
    return probes, alone


EXACT_CHUNK = 8  # states probed together here, as in one Ray task: a stop keeps the chunks finished


def run_exact(model, states: list[np.ndarray], args, device, engine=None, kept: tuple[list, list] | None = None,
              save=lambda: None) -> tuple[list, list[float]]:
    """:func:`exact_chunk` of all states, here in chunks of :data:`EXACT_CHUNK` or on Ray actors (``engine``);
    ``kept``: the two lists returned, filled as the states finish (a stop leaves those finished there; on Ray, the
    chunks that came back before the first still out), and holding a stopped run's, whose states are not probed
    again; ``save()`` after each chunk and timing."""
    probes, alone = kept if kept is not None else ([], [])
    if engine is not None and engine.engine == "ray":
        back, first = {}, 0  # chunks back before one ahead of them, by index; the first not yet kept

        def keep(index: int, part: tuple[list, list[float]]) -> None:  # in state order: kept states are a prefix
            nonlocal first
            back[index] = part
            while first in back:
                chunk_probes, chunk_alone = back.pop(first)
                probes.extend(chunk_probes)
                alone.extend(chunk_alone)
                first += 1
                save()

        chunks_on_engine(exact_chunk, states[len(probes):], args, engine, args.eps, args.max_batch, args.timing_states,
                         chunk=EXACT_CHUNK, done=keep, start=len(probes))
        return probes, alone
    tensors = [torch.as_tensor(t, device=device) for t in states]
    probe_by_length(model, tensors[:1], eps=args.eps, max_batch=args.max_batch)  # warm-up
    for lo in range(len(probes), len(tensors), EXACT_CHUNK):
        probes += probe_by_length(model, tensors[lo:lo + EXACT_CHUNK], eps=args.eps, max_batch=args.max_batch)
        save()
    for t in tensors[len(alone):args.timing_states]:
        alone.append(timed(lambda t=t: probe(model, t, eps=args.eps, max_batch=args.max_batch), device)[1])
        save()
    return probes, alone


def run_estimator(model, estimator, states: list[np.ndarray], device) -> tuple[list[np.ndarray], list[float], float]:
    """Estimated MI of each state ``[(N_s, N_s)]``, its seconds alone, and the seconds of all states batched."""
    tensors = [torch.as_tensor(t, device=device)[None] for t in states]
    estimate_mi(model, estimator, tensors[0])  # warm-up
    mi, seconds = [], []
    for t in tensors:
        est, sec = timed(lambda t=t: estimate_mi(model, estimator, t), device)
        mi.append(est.mi[0].double().cpu().numpy())
        seconds.append(sec)
    groups = length_batches([t.shape[1] for t in tensors], len(tensors))  # one batch per distinct length
    batched = sum(timed(lambda g=g: estimate_mi(model, estimator, torch.cat([tensors[i] for i in g])), device)[1]
                  for g in groups)
    return mi, seconds, batched


# -- the metrics ---------------------------------------------------------------------------------------------
def padded(mats: list[np.ndarray], width: int) -> np.ndarray:
    """``(N_s, N_s)`` matrices (or ``(N_s,)`` vectors) -> one zero-padded ``(S, width[, width])`` array."""
    out = np.zeros((len(mats),) + (width,) * mats[0].ndim, dtype=mats[0].dtype)
    for s, m in enumerate(mats):
        out[(s, *(slice(0, n) for n in m.shape))] = m
    return out


def ratio_label(ratio: float) -> str:
    for lo, hi in itertools.pairwise(RATIO_BINS):
        if ratio <= hi:
            return f"{lo:.2f}-{hi:.2f}"
    raise ValueError(f"mask ratio {ratio} is above 1")


def grouped(pred, exact, masked, labels: list[str], threshold: float) -> dict:
    labels = np.asarray(labels)
    return {lab: fidelity(pred[labels == lab], exact[labels == lab], masked[labels == lab], threshold)
            for lab in sorted(set(labels.tolist()))}


def by_separation(pred: np.ndarray, exact: np.ndarray, masked: np.ndarray) -> dict:
    """Pooled Spearman, Pearson and MAE over masked x masked pairs in each band of :data:`SEPARATION_BANDS`."""
    iu, ju = np.triu_indices(masked.shape[1], k=1)
    sep = ju - iu
    keep = masked[:, iu] & masked[:, ju]  # (S, P)
    out = {}
    for lo, hi in SEPARATION_BANDS:
        sel = keep & ((sep >= lo) & (sep <= hi))[None]
        p, e = pred[:, iu, ju][sel], exact[:, iu, ju][sel]
        name = f"{lo}-{hi}" if hi < 10**6 else f">={lo}"
        out[name] = {"n_pairs": len(p), "mean_exact": float(e.mean()) if len(e) else float("nan"),
                     "spearman": correlation(stats.spearmanr, p, e), "pearson": correlation(stats.pearsonr, p, e),
                     "mae": float(np.abs(p - e).mean()) if len(p) else float("nan")}
    return out


def has_rules(domain: Domain) -> bool:
    """Whether the domain's rules tie any pair together (a fixed-length domain's: Sudoku's peers)."""
    return domain.length is not None and bool(domain.rules(domain.length).any())


def rules_report(model, estimator, domain: Domain, pred, exact, masked, source: list[str], args,
                 all_masked: bool = True) -> dict:
    """Rule recovery of the estimator and the exact probe over the held-out states, by source, and (``all_masked``)
    over the all-masked state, probed exactly here: the slowest state of all, left out of a stopped run's figures."""
    rules, groups = domain.rules(domain.length), {}
    if all_masked:
        empty = torch.full((1, domain.length), model.mask_id, dtype=torch.long, device=model.device)
        e_pred = estimate_mi(model, estimator, empty).mi[0].double().cpu().numpy()
        e_exact = probe_by_length(model, list(empty), eps=args.eps, max_batch=args.max_batch)[0].mi.numpy()
        groups["all masked"] = ([e_pred], [e_exact], [np.ones(domain.length, dtype=bool)])
    source = np.asarray(source)
    groups |= {f"source: {name}": tuple(x[source == name] for x in (pred, exact, masked)) for name in sorted(set(source))}
    groups["all held-out states"] = (pred, exact, masked)
    return {name: {side: mean_recovery([rule_recovery(x, m, rules, args.threshold) for x, m in zip(xs, ms)])
                   for side, xs in (("estimator", p), ("exact", e))}
            for name, (p, e, ms) in groups.items()}


def one_state_timing(exact_alone: list[float], est_alone: list[float]) -> dict:
    """The median seconds of one state at a time, exact and estimated, and their ratio, over the same states: the
    exact probe times only the run's first ``len(exact_alone)`` states alone, so the estimator's median is taken
    over those states too (over all of them it would compare different states, and the ratio recorded would not
    be that of the two medians recorded beside it)."""
    if not exact_alone:  # a run stopped before its timing: none timed
        return {"exact_median_seconds": None, "estimator_median_seconds": None, "speedup_median": None}
    exact, est = float(np.median(exact_alone)), float(np.median(est_alone[: len(exact_alone)]))
    return {"exact_median_seconds": exact, "estimator_median_seconds": est, "speedup_median": exact / est}


def run_eval(model, estimator, domain: Domain, held_out, args, device, engine=None, log=print,
             kept: dict | None = None, save=lambda: None) -> dict:
    """The report of ``args.states`` held-out states; ``kept``: a dict given its ``states``, ``source``, ``probes``
    and ``alone`` (:func:`run_exact`'s lists, and ``save``) as they come, so a stopped run's :func:`figures` can be
    taken over the states probed; given ``probes`` and ``alone``, a stopped run's, it goes on from them."""
    rng = np.random.default_rng(args.seed)
    states, kinds = held_out.draw(model, rng, args.states, device)
    source = [held_out.sources[k] for k in kinds]
    passes = sum(1 + int((np.asarray(t) == model.mask_id).sum()) * model.n_values for t in states)
    pruned = f" (pruning at eps {args.eps:g} skips some)" if args.eps > 0 else ""
    timed_first = min(args.timing_states, len(states))
    log(f"exact probe of {len(states)} states: {passes:,} model passes at most{pruned}, then the first "
        f"{timed_first} alone again for the timing; the slow part")
    kept = {"probes": [], "alone": []} if kept is None else kept
    kept.update(states=states, source=source)
    probes, exact_alone = run_exact(model, states, args, device, engine, (kept["probes"], kept["alone"]), save)
    return figures(model, estimator, domain, held_out, states, source, probes, exact_alone, args, device, log)


def figures(model, estimator, domain: Domain, held_out, states: list[np.ndarray], source: list[str], probes: list,
            exact_alone: list[float], args, device, log=print, all_masked: bool = True) -> dict:
    """The report over ``states`` and their exact ``probes`` (the first ``len(exact_alone)`` timed alone): the
    estimator is run on them here (``all_masked``: and both on the all-masked state, for the rules' report)."""
    pred_list, est_alone, est_batched = run_estimator(model, estimator, states, device)
    width = max(len(t) for t in states)
    masked = padded([np.asarray(t) == model.mask_id for t in states], width)
    pred, exact = padded(pred_list, width), padded([r.mi.numpy() for r in probes], width)
    exact_total = float(sum(r.seconds for r in probes))
    log(f"probe {exact_total:.2f} s, estimator {est_batched:.3f} s over {len(states)} states (batched)")
    res = fidelity(pred, exact, masked, args.threshold)
    lengths = np.array([len(t) for t in states])
    res.update({
        "estimator_seconds": est_batched, "exact_seconds": exact_total, "speedup": exact_total / est_batched,
        "exact_seconds_per_state": exact_total / len(states), "estimator_seconds_per_state": est_batched / len(states),
        **one_state_timing(exact_alone, est_alone), "timed_states": len(exact_alone),
        "exact_passes": int(sum(r.passes for r in probes)), "estimator_passes": len(states), "timing": TIMING_NOTE,
        "by_mask_ratio": grouped(pred, exact, masked, [ratio_label(r) for r in masked.sum(1) / lengths], args.threshold),
        "by_source": grouped(pred, exact, masked, source, args.threshold),
        "exact_max_mi": float(exact.max()),
        "exact_median_mi": float(np.median(np.concatenate([pair_values(e, m) for e, m in zip(exact, masked)]))),
        "mean_masked": float(masked.sum(1).mean()), "mean_length": float(lengths.mean()),
        **held_out.info(), "domain": domain.cli_name, "seed": args.seed, "eps": args.eps,
        "model": str(args.model), "estimator": str(args.estimator), "estimator_params": estimator.num_params(),
        "estimator_config": estimator.cfg.__dict__, "training": training_summary(load_meta(args.estimator)),
        "device": str(device), "host": platform.processor() or platform.machine(), "threads": torch.get_num_threads(),
    })
    if domain.layout == "sequence":
        res["by_separation"] = by_separation(pred, exact, masked)
    if has_rules(domain):
        res["rules"] = rules_report(model, estimator, domain, pred, exact, masked, source, args, all_masked)
    return res


def training_summary(meta: dict) -> dict:
    data = meta.get("data", {})
    keep = ("states", "by_source", "mean_length", "mean_masked", "passes", "probe_seconds", "command")
    variants = [{k: v.get(k) for k in ("variant", "val_spearman", "params", "seconds")}
                | {k: v.get("val", {}).get(k) for k in ("spearman_median", "pearson", "mae", "topk_precision")}
                for v in meta.get("variants", [])]
    return {"data": {k: data.get(k) for k in keep} | {"eps": data.get("config", {}).get("eps", 0.0)},
            "command": meta.get("command"), "mdm": meta.get("mdm"),
            "chosen": meta.get("chosen"), "variants": variants, "train_states": meta.get("train_states"),
            "val_states": meta.get("val_states")}


# -- the report ----------------------------------------------------------------------------------------------
def _fmt(x, spec: str = ".3f") -> str:
    return "n/a" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def _fid_cells(name: str, f: dict) -> list:
    return [name, f["n_states"], f["n_pairs"], _fmt(f["spearman"]), _fmt(f["spearman_median"]), _fmt(f["pearson"]),
            _fmt(f["mae"], ".2e"), f"{_fmt(f['topk_precision'])} ({f['topk_k']})"]


def training_markdown(t: dict) -> list[str]:
    d = t["data"]
    if not t["variants"] or d.get("states") is None:
        return []
    parts = [", ".join(f"{k} {v}" for k, v in (d.get("by_source") or {}).items()),
             d.get("mean_length") and f"{d['mean_length']:.1f} positions",
             d.get("mean_masked") is not None and f"{d['mean_masked']:.1f} masked on average"]
    probe = f"the probe, pruned at eps {d['eps']:g}," if d.get("eps") else "the exact probe"
    data = (f"Training data: {d['states']} states ({'; '.join(p for p in parts if p)}); {probe} took "
            f"{d['passes']:,} passes and {d['probe_seconds']:.0f} s" + (f": `{d['command']}`." if d.get("command") else "."))
    train = (f"Trained with `{t['command']}` ({t['train_states']} training, {t['val_states']} validation states); "
             f"kept: **{t['chosen']}** (best validation Spearman).")
    header = ("| variant | val Spearman | val Spearman (median) | val Pearson | val MAE | val top-k precision "
              "| parameters | seconds |")
    rows = [[v["variant"], _fmt(v["val_spearman"]), _fmt(v["spearman_median"]), _fmt(v["pearson"]),
             _fmt(v["mae"], ".2e"), _fmt(v["topk_precision"]), _fmt(v["params"], ","), _fmt(v["seconds"], ".0f")]
            for v in t["variants"]]
    return [data, "", train, "", *table(header, rows), ""]


def fidelity_markdown(res: dict) -> list[str]:
    intro = (f"`{res['command']}`: model `{res['model']}`, estimator `{res['estimator']}` "
             f"({res['estimator_params']:,} parameters), {res['device']} ({res['host']}, {res['threads']} threads). "
             f"Held-out states {res['about']}: {res['mean_length']:.1f} positions and {res['mean_masked']:.1f} masked "
             f"on average; exact probe eps = {res['eps']:g}. Pairs: masked x masked, i < j; exact MI median "
             f"{res['exact_median_mi']:.2e}, max {res['exact_max_mi']:.3f} nats. Top-k: per state, k = exact pairs "
             f"above {res['edge_threshold']:g} nats (total k in brackets).")
    header = "| | states | pairs | Spearman | Spearman (median/state) | Pearson | MAE (nats) | top-k precision (k) |"
    rows = [_fid_cells("all", res), *(_fid_cells(f"mask ratio {name}", f) for name, f in res["by_mask_ratio"].items()),
            *(_fid_cells(f"source: {name}", f) for name, f in res["by_source"].items())]
    return [intro, "", *table(header, rows)]


def separation_markdown(res: dict) -> list[str]:
    if "by_separation" not in res:
        return []
    rows = [[name, b["n_pairs"], _fmt(b["mean_exact"], ".2e"), _fmt(b["spearman"]), _fmt(b["pearson"]),
             _fmt(b["mae"], ".2e")] for name, b in res["by_separation"].items()]
    return ["", *table("| separation \\|i - j\\| | pairs | mean exact MI | Spearman | Pearson | MAE (nats) |", rows)]


def timing_markdown(res: dict) -> list[str]:
    est_ms = None if res["estimator_median_seconds"] is None else 1e3 * res["estimator_median_seconds"]
    return ["", f"Wall time, same run and machine ({res['timing']}): all {res['n_states']} states batched per length "
            f"(the exact probe {EXACT_CHUNK} states a call), exact probe **{res['exact_seconds']:.2f} s** "
            f"({res['exact_passes']:,} passes), estimator **{res['estimator_seconds']:.3f} s** (1 pass + head per "
            f"state): **{res['speedup']:.0f}x** faster. One state at a time (median over the first "
            f"{res['timed_states']} states): exact {_fmt(res['exact_median_seconds'])} s, estimator "
            f"{_fmt(est_ms, '.1f')} ms, {_fmt(res['speedup_median'], '.0f')}x."]


def rules_markdown(res: dict) -> list[str]:
    if "rules" not in res:
        return []
    intro = (f"Rule recovery (pairs the domain's rules tie together, e.g. Sudoku's row/column/box peers). R-precision: "
             f"share of the K strongest masked pairs that share a rule, K = masked rule pairs (precision = recall "
             f"there); precision/recall: edges above {res['edge_threshold']:g} nats.")
    rows = [[f"{name} ({r['n_states']})", side, _fmt(r["r_precision"]), _fmt(r["precision"]), _fmt(r["recall"]),
             _fmt(r["edges"], ".0f"), _fmt(r["rule_pairs"], ".0f")]
            for name, sides in res["rules"].items() for side, r in sides.items()]
    return ["", intro, "", *table("| states | MI | R-precision | precision | recall | edges | rule pairs |", rows)]


def markdown(res: dict, label: str) -> str:
    lines = [f"## Neural MI estimator vs exact probe: {label} (`python -m mi_core eval-estimator`)", ""]
    lines += [stopped_line(res["stopped"]), ""] if "stopped" in res else []
    lines += training_markdown(res["training"]) + fidelity_markdown(res) + separation_markdown(res)
    return "\n".join(lines + timing_markdown(res) + rules_markdown(res))


# -- the command ---------------------------------------------------------------------------------------------
def overlap(held_out, estimator: Path) -> str | None:
    """What the held-out source's ``overlap`` (optional, :class:`mi_core.domain.HeldOutStates`) says of the data config
    the estimator's JSON records; None when the source has no such check or the file cannot be read (the estimator's
    own loading names a bad file)."""
    check = getattr(held_out, "overlap", None)
    if check is None:
        return None
    try:
        trained = load_meta(estimator).get("data", {}).get("config")
    except ValueError:
        return None
    return check(trained) if isinstance(trained, dict) else None


def eval_default(key: str):
    return lambda domain: domain.part("states").eval_defaults[key]


@dataclass
class EvalOptions:
    states: int = option(60, "held-out states to compare on", range=(1, 1_000_000), default_for=eval_default("states"))
    threshold: float = option(1e-2, "exact MI (nats) above which a pair is an edge", range=(0, 100),
                              default_for=eval_default("threshold"))
    eps: float = option(0.0, "exact probe pruning (0: exact; under 1)", range=(0, 1), check=under_one)
    max_batch: int = option(512, "most sequences per forward pass", range=(1, 65_536),
                            default_for=eval_default("max_batch"))
    timing_states: int = option(20, "states probed one at a time for the per-state time", range=(1, 1_000_000))
    model: Path | None = option(None, "the frozen model (default: the domain's shipped one)",
                               default_for=lambda d: d.default_file("model"))
    estimator: Path | None = option(None, "the estimator (default: the domain's shipped one)",
                                   default_for=lambda d: d.default_file("estimator"))
    transfer: bool = option(False, "take a --model the estimator was not trained on (to measure how it transfers)")
    seed: int = seed()


@dataclass
class SectionOut(MarkdownOut):
    section: str | None = option(None, "the section of --markdown to write (letters, digits, - or _)",
                                 default_for=section_of)


# why a domain serves() refuses cannot run this command (the command line says it)
UNSERVED = "has no held-out states (a Domain's states with held_out)"


def serves(domain: Domain) -> bool:
    return domain.states is not None and hasattr(domain.states, "held_out")


def options(domain: Domain) -> list:
    return [domain.part("states").eval_options, EvalOptions, Device, JsonOut, Resume, SectionOut, Force, EngineConfig]


def main(args) -> int:
    if not re.fullmatch(r"[A-Za-z0-9_-]+", args.section):
        raise ValueError(f"--section must be letters, digits, '-' or '_', got {args.section!r}")
    check_partial(args, "eval-estimator", "states")
    check_output(args.markdown, True, "--markdown")  # a report file: its own section is replaced
    engine = engine_from_args(args)
    domain = get_domain(args.domain)
    if args.estimator is None:
        raise ValueError(f"the {domain.label} domain ships no MI estimator: give --estimator FILE")
    if "estimator" not in args.given and (absent := absent_own_estimator(domain)):
        raise ValueError(f"{absent}; or give --estimator FILE")
    held_out = domain.part("states").held_out(args)  # checked before the model loads
    problem = overlap(held_out, args.estimator)
    if problem:  # the estimator was fitted on them: its scores there would not be held-out figures
        raise ValueError(f"--estimator {args.estimator} was trained on states of these held-out data: {problem}")
    device = pick_device(args.device, args.threads)
    model, estimator = load_checked(args, domain, device)
    store, kept = kept_probes(args, model)  # the states' probes as they come: a stop keeps those, and their figures
    try:
        res = run_eval(model, estimator, domain, held_out, args, device, engine, kept=kept,
                       save=partial(save_probes, store, kept), log=lambda m: print(m, file=sys.stderr, flush=True))
    except KeyboardInterrupt:
        keep_stopped_eval(kept, model, estimator, domain, held_out, args, device)
        raise
    res = write_report(res, args, domain)
    drop_partial(args.json)
    keys = ("n_states", *HEADLINE, "exact_seconds_per_state", "estimator_seconds_per_state", "speedup",
            "exact_median_seconds", "estimator_median_seconds", "speedup_median")  # batched, then one at a time
    print(json.dumps({k: res[k] for k in keys}, indent=2))
    return 0


def load_checked(args, domain: Domain, device):
    """``(model, estimator)`` of --model and --estimator, the estimator checked against the model."""
    model = load_model(None if args.model is None else str(args.model), device, domain=domain)
    estimator = load_estimator(args.estimator, device)
    try:
        check_model_match(model, estimator, f"the model {args.model}", f"the estimator {args.estimator}")
    except EstimatorInputError as err:
        hint = (model_hint(args.estimator, model) if "estimator" in args.given else
                " (--estimator FILE; python -m mi_core train-estimator makes one)")
        raise ValueError(f"{err}{hint}") from None
    problem = None if args.transfer else trained_on_mismatch(model, args.estimator)
    if problem:  # another model of its width fits every shape, and misleads
        raise ValueError(f"--estimator {args.estimator} {problem}: give --estimator trained on this model, or "
                         "--transfer to measure how it does on it")
    return model, estimator


def kept_probes(args, model) -> tuple[Kept, dict]:
    """The record of a run's exact probes in --json's .partial file, and :func:`run_eval`'s ``kept`` holding those
    a stopped run kept there (:func:`save_probes`): state I's ``[MI (N, N), passes, seconds]`` as ``I``, its seconds
    alone as ``alone I`` (earlier versions: one list, ``alone``)."""
    store = Kept(args, "eval-estimator", run_identity(args, timed=True, threads=torch.get_num_threads(),
                                                      model=getattr(model, "weights_path", None) or args.model),
                 "states", valid=lambda value: isinstance(value, (list, int, float)))
    done = store.done
    try:  # a record of other keys or shapes (edited, damaged) is named, not a traceback
        done.update({f"alone {i}": t for i, t in enumerate(done.pop("alone", []))})
        count, timed_count = sum(key.isdigit() for key in done), sum(key.startswith("alone ") for key in done)
        if set(done) != {*map(str, range(count)), *(f"alone {i}" for i in range(timed_count))}:
            raise ValueError
        probes = [SimpleNamespace(mi=torch.tensor(mi, dtype=torch.float64), passes=passes, seconds=seconds)
                  for mi, passes, seconds in (done[str(i)] for i in range(count))]
        if any(p.mi.ndim != 2 or p.mi.shape[0] != p.mi.shape[1] or not isinstance(p.passes + p.seconds, (int, float))
               for p in probes):
            raise ValueError
        return store, {"probes": probes, "alone": [float(done[f"alone {i}"]) for i in range(timed_count)]}
    except (ValueError, TypeError, RuntimeError):
        raise store.unreadable() from None


def save_probes(store: Kept, kept: dict) -> None:
    """The states probed and timed alone since the last save, kept in ``store``."""
    new = {str(i): [r.mi.tolist(), r.passes, r.seconds] for i, r in enumerate(kept["probes"]) if str(i) not in store}
    store.keep(new | {f"alone {i}": t for i, t in enumerate(kept["alone"]) if f"alone {i}" not in store})


def write_report(res: dict, args, domain: Domain) -> dict:
    """``res`` with its command, written to ``--json`` and ``--markdown``'s section where given; returned."""
    res = json_ready(res | {"command": command_line(args, "eval-estimator")})
    if args.json is not None:
        atomic_write_json(args.json, res)
    if args.write_markdown and args.markdown is not None:
        update_section(args.section, markdown(res, domain.label), args.markdown)
    return res


def keep_stopped_eval(kept: dict, model, estimator, domain: Domain, held_out, args, device) -> None:
    """:func:`~mi_core.bench.report.keep_stopped` of a run stopped with ``kept`` (:func:`run_eval`'s): the report over
    the states probed, marked partial."""
    # resumed and stopped before its states were drawn again: the probes read back are not yet this run's (the
    # .partial keeps them); figures over them would need the states
    done = len(kept.get("probes", ())) if "states" in kept else 0
    total = len(kept.get("states", ())) or args.states
    caveat = stop_caveat(done, total, len(kept.get("alone", ())), min(args.timing_states, total), has_rules(domain))

    def result() -> dict:  # the estimator alone runs here: no exact probe, so a stop ends in seconds
        res = figures(model, estimator, domain, held_out, kept["states"][:done], kept["source"][:done],
                      kept["probes"], kept["alone"], args, device, log=lambda m: None, all_masked=False)
        return res | stopped_fields(done, total, "state", caveat)

    markdown_file = args.markdown if args.write_markdown else None
    keep_stopped(done, total, "state", [(args.json, None), (markdown_file, args.section)], result,
                 lambda res: write_report(res, args, domain), caveat)


def stop_caveat(done: int, total: int, timed: int, to_time: int, rules: bool) -> str:
    """What a stop after ``done`` of ``total`` states probed cut besides the states left: the timing of ``to_time``
    states one at a time (``timed`` of them done) once all were probed, and the rules' all-masked state."""
    cut = []
    if done == total and timed < to_time:
        cut.append(f"the exact probe finished all {total}; only its timing of states one at a time was cut, after "
                   f"{timed} of {to_time}")
    if rules:
        cut.append("rule recovery on the all-masked state is left out (its exact probe is not run on a stop)")
    return "; ".join(cut)
