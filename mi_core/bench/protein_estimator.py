"""``python -m mi_core eval-estimator protein --model PATH --estimator PATH --fasta PATH --states N --json OUT``.

Held-out states are drawn, seeded, from the FASTA file's ``val`` split exactly as the training data is
drawn from its ``train`` split (windows of 50-100 residues; uniform masking and intermediate states of
temperature-1 decodes, see :class:`mi_core.decoding.protein_states.ProteinStates`), so the estimator never saw them.
The exact probe and the estimator (one MDM pass + the head) run on every state, one at a time, in the same
process. The report gives Spearman and Pearson correlation over masked x masked pairs (pooled and median
per state), MAE, top-k edge precision, results by mask ratio, by source and by sequence separation, and
the seconds per state both ways. Writes JSON (``--json``) and the ``eval-estimator-protein`` section of
``--markdown`` (default ``BENCHMARKS.md``).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import numpy as np
import torch
from scipy import stats

from mi_core.bench.estimator_common import HEADLINE, _fid_row, _fmt, grouped, json_ready, ratio_label
from mi_core.bench.report import update_section
from mi_core.bench.scale import protein_probes_on_engine
from mi_core.decoding.protein_states import (
    DEFAULT_FASTA,
    SOURCES,
    ProteinDataConfig,
    draw_state,
    parse_mix,
    sequence_pool,
)
from mi_core.device import pick_device, timed
from mi_core.io import atomic_write_json, check_output
from mi_core.mi.estimator import check_model_match, estimate_mi, load_estimator, load_estimator_meta
from mi_core.mi.fidelity import fidelity
from mi_core.mi.probe import probe_by_length
from mi_core.options import add_force
from mi_core.scale.engine import add_engine_options, engine_from_args

SECTION = "eval-estimator-protein"  # BENCHMARKS.md section
SEPARATION_BANDS = ((1, 4), (5, 11), (12, 23), (24, 10**6))  # |i - j|: local, short, medium, long range


def padded(mats: list[np.ndarray], width: int) -> np.ndarray:
    """``(N_s, N_s)`` matrices (or ``(N_s,)`` vectors) -> one zero-padded ``(S, width[, width])`` array."""
    out = np.zeros((len(mats),) + (width,) * mats[0].ndim, dtype=mats[0].dtype)
    for s, m in enumerate(mats):
        out[(s, *(slice(0, n) for n in m.shape))] = m
    return out


def by_separation(pred: np.ndarray, exact: np.ndarray, masked: np.ndarray) -> dict:
    """Pooled Spearman, Pearson and MAE over masked x masked pairs in each band of :data:`SEPARATION_BANDS`."""
    n = masked.shape[1]
    iu, ju = np.triu_indices(n, k=1)
    sep = ju - iu
    keep = masked[:, iu] & masked[:, ju]  # (S, P)
    out = {}
    for lo, hi in SEPARATION_BANDS:
        sel = keep & ((sep >= lo) & (sep <= hi))[None]
        p, e = pred[:, iu, ju][sel], exact[:, iu, ju][sel]
        ok = len(p) >= 3 and np.ptp(p) > 0 and np.ptp(e) > 0
        name = f"{lo}-{hi}" if hi < 10**6 else f">={lo}"
        out[name] = {"n_pairs": len(p), "mean_exact": float(e.mean()) if len(e) else float("nan"),
                     "spearman": float(stats.spearmanr(p, e)[0]) if ok else float("nan"),
                     "pearson": float(stats.pearsonr(p, e)[0]) if ok else float("nan"),
                     "mae": float(np.abs(p - e).mean()) if len(p) else float("nan")}
    return out


def run_states(model, estimator, states: list[np.ndarray], eps: float, max_batch: int, device, probes=None) -> dict:
    """Exact and estimated MI of each state (lists of ``(N_s, N_s)``) with their wall seconds and passes.

    The exact MI comes from :func:`probe_by_length` (one batched :func:`probe_many` call per distinct
    length; a state's seconds is its group's time over the group's size), the estimate from one call per
    state. Warm-up calls are excluded and the device is synchronized before each clock reading.
    ``probes``: the states' probe results when already computed (``--engine ray``).
    """
    tensors = [torch.as_tensor(t, device=device) for t in states]
    estimate_mi(model, estimator, tensors[0])  # warm-up
    if probes is None:
        probe_by_length(model, tensors[:1], eps=eps, max_batch=max_batch)  # warm-up
        probes = probe_by_length(model, tensors, eps=eps, max_batch=max_batch)
    exact, pred, est_s = [], [], []
    for t, res in zip(tensors, probes):
        exact.append(res.mi.numpy())
        est, sec = timed(lambda t=t: estimate_mi(model, estimator, t), device)
        est_s.append(sec)
        pred.append(est.mi[0].double().cpu().numpy())
    return {"exact": exact, "pred": pred, "exact_s": [r.seconds for r in probes], "est_s": est_s,
            "passes": [r.passes for r in probes]}


def run_eval(model, estimator, args, device, log=print) -> dict:
    """The whole evaluation as a JSON-ready dict (see the module docstring)."""
    cfg = ProteinDataConfig(fasta=str(args.fasta), split="val", min_len=args.min_len, max_len=args.max_len,
                            min_masked=args.min_masked, mix=parse_mix(args.mix))
    pool = sequence_pool(args.fasta, "val", cfg.min_len)
    rng = np.random.default_rng(args.seed)
    drawn = [draw_state(model, pool, cfg, rng, device) for _ in range(args.states)]
    states, source = [t for t, _ in drawn], [s for _, s in drawn]
    engine = getattr(args, "engine_cfg", None)  # --engine ray: chunks of states probed on Ray actors
    probes = protein_probes_on_engine(probe_by_length, states, args, engine) if engine and engine.engine == "ray" else None
    runs = run_states(model, estimator, states, args.eps, args.max_batch, device, probes)
    width = max(len(t) for t in states)
    masked = padded([t == model.mask_id for t in states], width)
    pred, exact = padded(runs["pred"], width), padded(runs["exact"], width)
    exact_s, est_s = runs["exact_s"], runs["est_s"]
    log(f"probe {sum(exact_s):.1f} s, estimator {sum(est_s):.3f} s over {len(states)} states")
    res = fidelity(pred, exact, masked, args.threshold)
    res.update({
        "exact_seconds_per_state": float(np.mean(exact_s)), "estimator_seconds_per_state": float(np.mean(est_s)),
        "exact_median_seconds": float(np.median(exact_s)), "estimator_median_seconds": float(np.median(est_s)),
        "exact_seconds": float(sum(exact_s)), "estimator_seconds": float(sum(est_s)),
        "speedup": float(sum(exact_s) / sum(est_s)), "speedup_median": float(np.median(exact_s) / np.median(est_s)),
        "exact_passes": int(sum(runs["passes"])), "estimator_passes": len(states),
        "timing": "exact: probe_many per distinct length, its time split over the group; warm-up calls excluded; "
                  "the device is synchronized before each clock reading",
        "by_mask_ratio": grouped(pred, exact, masked, [ratio_label(m.sum() / len(t)) for m, t in zip(masked, states)],
                                 args.threshold),
        "by_source": grouped(pred, exact, masked, [SOURCES[s] for s in source], args.threshold),
        "by_separation": by_separation(pred, exact, masked),
        "exact_max_mi": float(exact.max()), "exact_median_mi": float(np.median(exact[pair_keep(masked)])),
        "mean_masked": float(masked.sum(1).mean()), "mean_length": float(np.mean([len(t) for t in states])),
        "fasta": str(args.fasta), "split": "val", "seed": args.seed, "mix": args.mix, "eps": args.eps,
        "min_len": cfg.min_len, "max_len": cfg.max_len, "min_masked": cfg.min_masked,
        "model": str(args.model), "estimator": str(args.estimator), "estimator_params": estimator.num_params(),
        "estimator_config": estimator.cfg.__dict__, "training": training_summary(load_estimator_meta(args.estimator)),
        "device": str(device), "host": platform.processor() or platform.machine(), "threads": torch.get_num_threads(),
    })
    return res


def pair_keep(masked: np.ndarray) -> np.ndarray:
    """``(S, N, N)`` bool: masked x masked pairs with i < j."""
    return masked[:, :, None] & masked[:, None, :] & np.triu(np.ones(masked.shape[1:] * 2, dtype=bool), 1)


def training_summary(meta: dict) -> dict:
    """The estimator's training data and variants, from the JSON beside its weights (None where absent)."""
    data = meta.get("data", {})
    out = {k: data.get(k) for k in ("states", "mean_length", "mean_masked", "passes", "probe_seconds")}
    return {**out, "data_command": data.get("command"), "command": meta.get("command"), "chosen": meta.get("chosen"),
            "train_states": meta.get("train_states"), "val_states": meta.get("val_states"),
            "variants": [{k: v.get(k) for k in ("variant", "val_spearman", "params", "seconds")}
                         | {k: v.get("val", {}).get(k) for k in ("spearman_median", "pearson", "mae", "topk_precision")}
                         for v in meta.get("variants", [])]}


def training_markdown(t: dict) -> list[str]:
    """Lines on the estimator's training data and the variants compared on its validation states."""
    if t["states"] is None or not t["variants"]:
        return []
    data = (f"Training data: {t['states']} states from the train split ({t['mean_length']:.1f} residues and "
            f"{t['mean_masked']:.1f} masked on average); the exact probe took {t['passes']:,} passes and "
            f"{t['probe_seconds']:.0f} s: `{t['data_command']}`.")
    train = (f"Trained with `{t['command']}` ({t['train_states']} training, {t['val_states']} validation states); "
             f"kept: **{t['chosen']}** (best validation Spearman).")
    header = ("| variant (loss : bound/free [: no separation feature]) | val Spearman | val Spearman (median) "
              "| val Pearson | val MAE | val top-k precision | parameters | seconds |")
    lines = [data, "", train, "", header, "|---|---|---|---|---|---|---|---|"]
    for v in t["variants"]:
        lines.append(f"| {v['variant']} | {_fmt(v['val_spearman'])} | {_fmt(v['spearman_median'])} | "
                     f"{_fmt(v['pearson'])} | {_fmt(v['mae'], '.2e')} | {_fmt(v['topk_precision'])} | "
                     f"{_fmt(v['params'], ',')} | {_fmt(v['seconds'], '.0f')} |")
    return [*lines, ""]


def separation_markdown(res: dict) -> list[str]:
    lines = ["| separation \\|i - j\\| | pairs | mean exact MI | Spearman | Pearson | MAE (nats) |",
             "|---|---|---|---|---|---|"]
    return lines + [f"| {name} | {b['n_pairs']} | {_fmt(b['mean_exact'], '.2e')} | {_fmt(b['spearman'])} | "
                    f"{_fmt(b['pearson'])} | {_fmt(b['mae'], '.2e')} |" for name, b in res["by_separation"].items()]


def markdown(res: dict) -> str:
    """The BENCHMARKS.md section for a result of :func:`run_eval`."""
    command = (f"python -m mi_core eval-estimator protein --model {res['model']} --estimator {res['estimator']} "
               f"--fasta {res['fasta']} --states {res['n_states']} --seed {res['seed']}")
    intro = (f"`{command}`: {res['estimator_params']:,}-parameter estimator, {res['device']} ({res['host']}, "
             f"{res['threads']} threads). Held-out states: windows of {res['min_len']}-{res['max_len']} residues of "
             f"val-split sequences ({res['mean_length']:.1f} residues, {res['mean_masked']:.1f} masked on average; "
             f"mix {','.join(SOURCES)} = {res['mix']}); exact probe eps = {res['eps']:g}. Pairs: masked x masked, "
             f"i < j; exact MI median {res['exact_median_mi']:.2e}, max {res['exact_max_mi']:.3f} nats. Top-k: per "
             f"state, k = exact pairs above {res['edge_threshold']:g} nats (total k in brackets).")
    header = "| | states | pairs | Spearman | Spearman (median/state) | Pearson | MAE (nats) | top-k precision (k) |"
    timing = (f"Seconds per state, same run and machine ({res.get('timing', 'warm-up included, no device sync')}): "
              f"exact probe **{res['exact_seconds_per_state']:.2f} s** "
              f"({res['exact_passes'] / res['n_states']:.0f} passes on average), estimator "
              f"**{1e3 * res['estimator_seconds_per_state']:.1f} ms** (1 pass + head): **{res['speedup']:.0f}x** "
              f"faster (median per state: {res['exact_median_seconds']:.2f} s vs "
              f"{1e3 * res['estimator_median_seconds']:.1f} ms, {res['speedup_median']:.0f}x).")
    lines = ["## Protein MI estimator vs exact probe (`python -m mi_core eval-estimator protein`)", ""]
    lines += training_markdown(res["training"]) + [intro, "", header, "|---|---|---|---|---|---|---|---|"]
    lines += [_fid_row("all", res)] + [_fid_row(f"mask ratio {name}", f) for name, f in res["by_mask_ratio"].items()]
    lines += [_fid_row(f"source: {name}", f) for name, f in res["by_source"].items()]
    return "\n".join([*lines, "", *separation_markdown(res), "", timing])


def add_options(p: argparse.ArgumentParser, domain=None) -> None:
    """The protein options of ``eval-estimator protein``."""
    d = ProteinDataConfig()
    p.add_argument("--model", type=Path, default=Path("assets/protein_mdm.safetensors"))
    p.add_argument("--estimator", type=Path, default=Path("assets/protein_mi_estimator.safetensors"))
    p.add_argument("--fasta", type=Path, default=DEFAULT_FASTA, help="states come from its val split, never train")
    p.add_argument("--states", type=int, default=40, help="held-out states to compare on")
    p.add_argument("--min-len", type=int, default=d.min_len)
    p.add_argument("--max-len", type=int, default=d.max_len)
    p.add_argument("--min-masked", type=int, default=d.min_masked)
    p.add_argument("--mix", default=",".join(f"{w:g}" for w in d.mix), help=f"weights of {','.join(SOURCES)}")
    p.add_argument("--threshold", type=float, default=1e-3,
                   help="exact MI (nats) above which a pair is an edge (protein MI is smaller than Sudoku's)")
    p.add_argument("--eps", type=float, default=0.0, help="exact probe pruning (0: exact)")
    p.add_argument("--max-batch", type=int, default=d.max_batch)
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    p.add_argument("--markdown", type=Path, default=Path("BENCHMARKS.md"), help="section updated in this file")
    p.add_argument("--no-markdown", dest="write_markdown", action="store_false")
    add_force(p)
    add_engine_options(p)


def main(args) -> int:
    """``eval-estimator protein`` with its parsed arguments (see :func:`add_options`)."""
    check_output(args.json, args.force)
    args.engine_cfg = engine_from_args(args)  # Ray missing or a bad setting: one line before any work
    if args.threads:
        torch.set_num_threads(args.threads)
    from mi_core.models.protein_mdm import load_protein_mdm

    device = pick_device(args.device)
    model = load_protein_mdm(args.model, device)
    estimator = load_estimator(args.estimator, device)
    check_model_match(model, estimator, f"the model {args.model}", f"the estimator {args.estimator}")
    res = json_ready(run_eval(model, estimator, args, device, log=lambda m: print(m, file=sys.stderr, flush=True)))
    if args.json is not None:
        atomic_write_json(args.json, res)
    if args.write_markdown:
        update_section(SECTION, markdown(res), args.markdown)
    keys = ("n_states", *HEADLINE, "exact_seconds_per_state", "estimator_seconds_per_state", "speedup")
    print(json.dumps({k: res[k] for k in keys}, indent=2))
    return 0
