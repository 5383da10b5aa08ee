"""``python -m mi_core bench-probe``: on a Sudoku MDM, the peak forward throughput, the exact probe's passes per
second as a fraction of it, what pruning saves (and its error against the bound), and how far bf16 moves MI."""

from __future__ import annotations

import platform
import random
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from mi_core.bench.report import (
    Kept,
    MarkdownOut,
    Resume,
    check_partial,
    drop_partial,
    keep_stopped,
    run_identity,
    stopped_fields,
    stopped_line,
    table,
    update_section,
)
from mi_core.device import bf16_autocast, pick_device, synchronize, timed
from mi_core.domain import get_domain
from mi_core.domains.sudoku import MASK_ID, geometry_for_length
from mi_core.domains.sudoku.generator import random_grid
from mi_core.domains.sudoku.mdm import load_sudoku_mdm
from mi_core.io import atomic_write_json, check_output, display_path
from mi_core.mi.probe import probe, probe_many
from mi_core.options import Device, Force, counted, float_list, int_list, option, seed, under_one

TIMING = "an untimed warm-up probe first; the device is synchronized before each clock reading"
SECTION = "bench-probe"  # BENCHMARKS.md section, between <!-- bench-probe:start/end --> markers


def random_states(cells: int, masked: int, count: int, seed: int, device) -> list[torch.Tensor]:
    """``count`` states ``(cells,)``: a random solution grid with ``masked`` random cells masked."""
    if not 0 <= masked <= cells:
        raise ValueError(f"masked cells must be in 0..{cells}, got {masked}")
    rng = random.Random(seed)
    geom = geometry_for_length(cells)
    states = []
    for _ in range(count):
        grid = random_grid(rng, geom)
        for cell in rng.sample(range(cells), masked):
            grid[cell] = MASK_ID
        states.append(torch.tensor(grid, dtype=torch.long, device=device))
    return states


@torch.no_grad()
def forward_throughput(model, batch: torch.Tensor, *, autocast: bool = False, min_seconds: float = 0.5) -> float:
    """Sequences per second of ``model(batch)`` for a ``(B, N)`` batch (one warm-up, then >= min_seconds)."""
    with bf16_autocast(batch.device, autocast):
        model(batch)
        synchronize(batch.device)
        calls, start = 0, time.perf_counter()
        while calls == 0 or time.perf_counter() - start < min_seconds:
            model(batch)
            calls += 1
        synchronize(batch.device)
    return calls * batch.shape[0] / (time.perf_counter() - start)


def throughput_sweep(model, tokens: torch.Tensor, batch_sizes: list[int], **kw) -> list[dict]:
    """``[{"batch", "seq_per_s"}]`` for each batch size, batches cycled from the rows of ``tokens`` ``(S, N)``."""
    return [{"batch": size, "seq_per_s": forward_throughput(
        model, tokens[torch.arange(size, device=tokens.device) % len(tokens)], **kw)} for size in batch_sizes]


def max_abs(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max()) if a.numel() else 0.0


def bench_state(model, tokens: torch.Tensor, eps_list: list[float], max_batch: int, bf16: bool) -> dict:
    """Exact, pruned and (optionally) bf16 probes of one state, and how they compare."""
    exact = probe(model, tokens, max_batch=max_batch)
    row = {"passes": exact.passes, "seconds": exact.seconds, "pruned": []}
    for eps in eps_list:
        pruned = probe(model, tokens, eps=eps, max_batch=max_batch)
        err = max(max_abs(pruned.mi_directional, exact.mi_directional), max_abs(pruned.mi, exact.mi),
                  max_abs(pruned.mi_paper, exact.mi_paper))
        slack = min(float((pruned.error_bound - (pruned.mi_directional - exact.mi_directional).abs()).min()),
                    float((pruned.error_bound - (pruned.mi_paper - exact.mi_paper).abs()).min()))
        row["pruned"].append({"eps": eps, "passes": pruned.passes, "seconds": pruned.seconds, "max_error": err,
                              "max_bound": float(pruned.error_bound.max()), "within_bound": slack >= -1e-12})
    if bf16:
        low = probe(model, tokens, max_batch=max_batch, autocast=True)
        row["bf16"] = {"seconds": low.seconds, "mi_max_abs_diff": max_abs(low.mi, exact.mi),
                       "mi_max": float(exact.mi.max()) if exact.mi.numel() else 0.0}
    return row


def summarise(masked: int, rows: list[dict], peak: float, many: dict | None = None) -> dict:
    """Totals over the states with ``masked`` cells (``many``: the same states in one probe_many call)."""
    passes, seconds = sum(r["passes"] for r in rows), sum(r["seconds"] for r in rows)
    out = {"masked": masked, "states": len(rows), "passes": passes, "seconds": seconds,
           "passes_per_s": passes / seconds, "fraction_of_peak": passes / seconds / peak, "pruning": []}
    if many is not None:
        out["many"] = {**many, "passes_per_s": many["passes"] / many["seconds"],
                       "fraction_of_peak": many["passes"] / many["seconds"] / peak}
    for k, first in enumerate(rows[0]["pruned"]):
        runs = [r["pruned"][k] for r in rows]
        p_passes, p_seconds = sum(r["passes"] for r in runs), sum(r["seconds"] for r in runs)
        out["pruning"].append({
            "eps": first["eps"], "passes": p_passes, "seconds": p_seconds, "pass_reduction": passes / p_passes,
            "time_reduction": seconds / p_seconds, "max_error": max(r["max_error"] for r in runs),
            "max_bound": max(r["max_bound"] for r in runs), "within_bound": all(r["within_bound"] for r in runs),
        })
    if "bf16" in rows[0]:
        b_seconds = sum(r["bf16"]["seconds"] for r in rows)
        out["bf16"] = {"seconds": b_seconds, "speedup": seconds / b_seconds,
                       "mi_max_abs_diff": max(r["bf16"]["mi_max_abs_diff"] for r in rows),
                       "mi_max": max(r["bf16"]["mi_max"] for r in rows)}
    return out


def run_benchmark(model, device: torch.device, cfg, kept: Kept, progress=print) -> dict:
    """The whole benchmark as a JSON-ready dict. The peak is re-measured before each group of states and the
    largest kept, since the host's speed drifts. ``kept``: each part as it finishes (the sweep, each state, each
    group's all-at-once probe, the bf16 peak), so a stopped run's :func:`results` can be taken over those, and a
    resumed run runs only the parts it lacks."""
    cells = int(model.seq_len)
    sweep_states = torch.stack(random_states(cells, cells // 2, 64, cfg.seed, device))
    if "peak" not in kept:
        sweep = throughput_sweep(model, sweep_states, cfg.batch_sizes, min_seconds=cfg.min_seconds)
        best = dict(max(sweep, key=lambda r: r["seq_per_s"]))
        progress(f"peak forward: {best['seq_per_s']:.0f} seq/s at batch {best['batch']}")
        kept.keep({"sweep": sweep, "peak": best, "max_batch": cfg.max_batch or best["batch"]})
    best, max_batch = dict(kept.done["peak"]), kept.done["max_batch"]
    probe(model, random_states(cells, min(cfg.masked), 1, cfg.seed, device)[0], max_batch=max_batch)  # warm-up
    for masked in cfg.masked:
        if f"many {masked}" in kept:
            continue
        again = throughput_sweep(model, sweep_states, [best["batch"]], min_seconds=cfg.min_seconds)[0]
        best["seq_per_s"] = max(best["seq_per_s"], again["seq_per_s"])
        kept.keep({"peak": dict(best)})
        states = random_states(cells, masked, cfg.states, cfg.seed + masked, device)
        for i, s in enumerate(states):
            if f"state {masked} {i}" not in kept:
                kept.keep({f"state {masked} {i}": bench_state(model, s, cfg.eps, max_batch, cfg.bf16)})
        tokens = torch.stack(states)
        many, seconds = timed(lambda: probe_many(model, tokens, max_batch=max_batch), device)  # all in one call
        kept.keep({f"many {masked}": {"passes": int(many.passes.sum()), "seconds": seconds}})
        progress(f"{masked} masked: {sum(r['passes'] for r in group_rows(cfg, kept, masked))} passes probed")
    if cfg.bf16 and "peak_bf16" not in kept:
        kept.keep({"peak_bf16": throughput_sweep(model, sweep_states, [best["batch"]], autocast=True,
                                                 min_seconds=cfg.min_seconds)[0]})
    out = results(model, device, cfg, kept)
    for r in out["probe"]:
        progress(f"{r['masked']} masked: {r['passes_per_s']:.0f} passes/s ({100 * r['fraction_of_peak']:.0f}% of peak)")
    return out


def group_rows(cfg, kept: Kept, masked: int) -> list[dict]:
    """The rows of the states with ``masked`` cells that ``kept`` holds, in order."""
    return [kept.done[key] for key in (f"state {masked} {i}" for i in range(cfg.states)) if key in kept]


def results(model, device: torch.device, cfg, kept: Kept) -> dict:
    """The result over the parts in ``kept`` (:func:`run_benchmark`'s): the groups with a state finished."""
    loaded = getattr(model, "weights_path", None)  # the file read, also when --model was not given
    peak = kept.done["peak"]
    groups = [(masked, group_rows(cfg, kept, masked), kept.done.get(f"many {masked}")) for masked in cfg.masked]
    return {"date": time.strftime("%Y-%m-%d"), "device": str(device), "timing": TIMING,
            "host": platform.processor() or platform.machine(), "threads": torch.get_num_threads(),
            "model": display_path(loaded) if loaded else str(cfg.model), "seed": cfg.seed,
            "max_batch": kept.done["max_batch"], "sweep": kept.done["sweep"], "peak": peak,
            "probe": [summarise(masked, rows, peak["seq_per_s"], many) for masked, rows, many in groups if rows],
            **({"peak_bf16": kept.done["peak_bf16"]} if "peak_bf16" in kept else {})}


def all_at_once(m: dict | None) -> str:
    """The cells of a group's one ``probe_many`` call (``-`` each where it was not run)."""
    return f"{m['seconds']:.2f} | {m['passes_per_s']:.0f} | {100 * m['fraction_of_peak']:.0f}%" if m else "- | - | -"


def markdown(res: dict) -> str:
    """The BENCHMARKS.md section (between the markers) for a result of :func:`run_benchmark`."""
    peak = res["peak"]
    lines = ["## Exact probe (`python -m mi_core bench-probe`)", "",
             *([stopped_line(res["stopped"]), ""] if "stopped" in res else []),
             f"Measured {res['date']}: model `{res['model']}` on {res['device']} ({res['host']}, "
             f"{counted(res['threads'], 'thread')}), seed "
             f"{res['seed']}, probe batch {res['max_batch']}. States: random solution grids with random cells "
             "masked. Peak forward throughput "
             f"**{peak['seq_per_s']:.0f} seq/s** at batch {peak['batch']} (the largest of the sweep and of "
             "re-measurements before each group; sweep: "
             + ", ".join(f"{r['batch']}: {r['seq_per_s']:.0f}" for r in res["sweep"]) + ").", "",
             f"Timing: {res.get('timing', 'warm-up probe first; no device sync')}. One state at a time: `probe` per "
             "state; all at once: the group's states in one `probe_many` call (full batches across states).", "",
             *table("| masked | states | passes | seconds | passes/s | % of peak | all at once: seconds | passes/s "
                    "| % of peak |", [[r["masked"], r["states"], r["passes"], f"{r['seconds']:.2f}",
                                       f"{r['passes_per_s']:.0f}", f"{100 * r['fraction_of_peak']:.0f}%",
                                       all_at_once(r.get("many"))] for r in res["probe"]]),
             "", "Pruning (skip values with p < eps; error = max |pruned - exact| over the directional, symmetrised "
             "and paper MI; bound = largest rigorous bound h(s) + s log|V|):", "",
             *table("| masked | eps | passes | pass reduction | time reduction | max error | max bound "
                    "| within bound |", [[r["masked"], f"{p['eps']:g}", p["passes"], f"{p['pass_reduction']:.2f}x",
                      f"{p['time_reduction']:.2f}x", f"{p['max_error']:.2e}", f"{p['max_bound']:.2e}",
                      "yes" if p["within_bound"] else "NO"] for r in res["probe"] for p in r["pruning"]])]
    if "peak_bf16" in res:
        lines += ["", f"bf16 autocast forward passes: peak {res['peak_bf16']['seq_per_s']:.0f} seq/s at batch "
                  f"{res['peak_bf16']['batch']}.", "",
                  *table("| masked | bf16 probe speed-up | max abs MI change | max MI |",
                         [[r["masked"], f"{r['bf16']['speedup']:.2f}x", f"{r['bf16']['mi_max_abs_diff']:.2e}",
                           f"{r['bf16']['mi_max']:.3f}"] for r in res["probe"]])]
    return "\n".join(lines)


@dataclass
class ProbeBenchOptions:
    """Forward throughput, the exact probe's speed, pruning and bf16."""

    model: str | None = option(None, "Sudoku MDM weights (default: the shipped one)")
    masked: list[int] = option([20, 40, 60], "masked cells per state, comma-separated", parse=int_list,
                               range=(1, 81))
    states: int = option(3, "states per masked count", range=(1, 1_000_000))
    eps: list[float] = option([1e-4, 1e-3], "pruning thresholds, comma-separated (each under 1)", parse=float_list,
                              range=(0, 1), check=under_one)
    batch_sizes: list[int] = option([16, 64, 128, 256, 512, 1024], "throughput sweep", parse=int_list,
                                    range=(1, 65_536))
    max_batch: int = option(0, "probe batch size (0: the sweep's best)", range=(0, 65_536))
    min_seconds: float = option(0.5, "timing window per sweep point", range=(0, 86_400))
    bf16: bool = option(True, "skip the bf16 comparison", flags=("--no-bf16",))
    seed: int = seed()
    json: Path | None = option(None, "write the results here")


OPTIONS = (ProbeBenchOptions, Resume, MarkdownOut, Device, Force)


def main(cfg) -> int:
    check_partial(cfg, "bench-probe", "states")
    check_output(cfg.markdown, True, "--markdown")  # a report file: its own section is replaced
    device = pick_device(cfg.device, cfg.threads)
    model = load_sudoku_mdm(cfg.model or get_domain("sudoku9").default_file("model"), device)
    kept = Kept(cfg, "bench-probe", run_identity(cfg, timed=True, model=model.weights_path,
                                                 threads=torch.get_num_threads()), "states",  # timings: same threads
                valid=lambda value: isinstance(value, (dict, list, int)))  # a part's figures, the sweep, max_batch
    try:
        res = run_benchmark(model, device, cfg, kept)
    except KeyboardInterrupt:
        done, total = sum(key.startswith("state ") for key in kept.done), len(cfg.masked) * cfg.states
        caveat = "" if done < total else unfinished(cfg, kept)
        markdown_file = cfg.markdown if cfg.write_markdown else None
        keep_stopped(done, total, "state", [(cfg.json, None), (markdown_file, SECTION)],
                     lambda: results(model, device, cfg, kept) | stopped_fields(done, total, "state", caveat),
                     lambda res: write(cfg, res), caveat)
        raise
    write(cfg, res)
    drop_partial(cfg.json)
    return 0


def unfinished(cfg, kept: Kept) -> str:
    """What a run stopped after its last state left undone: the last group's all-at-once probe, the bf16 peak."""
    left = [f"the all-at-once probe of the {masked}-masked states" for masked in cfg.masked
            if f"many {masked}" not in kept]
    left += ["the bf16 peak forward throughput"] if cfg.bf16 and "peak_bf16" not in kept else []
    return "stopped before " + " and ".join(left) if left else ""


def write(cfg, res: dict) -> None:
    """``res`` to ``--json`` and ``--markdown``'s section, where given."""
    if cfg.json is not None:
        atomic_write_json(cfg.json, res)
    if cfg.write_markdown and cfg.markdown is not None:
        update_section(SECTION, markdown(res), cfg.markdown)
