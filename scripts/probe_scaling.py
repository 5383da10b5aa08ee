"""``python -m scripts.probe_scaling``: probe and estimator throughput by the number of states per call.

For each model this measures (1) the peak batched forward throughput (sequences per second, best of a
sweep of batch sizes), then for batches of S states: (2) :func:`probe_many`'s states per second and its
passes per second as a fraction of that peak (the probe's physical limit is the peak divided by its
``1 + N|V|`` passes per state), and (3) the estimator's states per second (one MDM pass + the head, all S
states in one call). Models: the shipped Sudoku MDM and estimator; the shipped protein MDM and estimator
and, when the ``esm`` package is installed, a randomly initialised model of ESM-C 300M's size built from
the package's own classes (no weights needed; the head there is a fresh estimator of the shipped one's
shape, so its states/s is the cost a user with ESM-C weights and a trained head would see), each at
lengths 50, 100 and 300 by default.

Timing: an untimed warm-up forward precedes the probe points, each estimator point follows an untimed
call of its own shape, and the device is synchronized before each clock reading. ``--time-cap`` bounds
each model's share: batch sizes whose predicted time (from the previous size) would pass it are skipped
and reported as such.

Writes JSON (``--json``) and a section of ``--markdown`` (``probe-scaling-<device type>``).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch

from mi_core.bench.report import update_section
from mi_core.cli import USER_ERRORS
from mi_core.device import pick_device, timed
from mi_core.domain import get_domain
from mi_core.domains.sudoku.bench_probe import random_states, throughput_sweep
from mi_core.io import atomic_write_json
from mi_core.mi.estimator import EstimatorConfig, MIEstimator, estimate_mi, load_estimator
from mi_core.mi.probe import probe_many
from mi_core.options import int_list

TIMING = "untimed warm-up calls excluded; device synchronized before each clock reading"


def peak_forward(model, tokens: torch.Tensor, batch_sizes: list[int], min_seconds: float) -> dict:
    """``{"batch", "seq_per_s", "sweep"}``: the best forward throughput over ``batch_sizes`` (rows cycled)."""
    sweep = throughput_sweep(model, tokens, batch_sizes, min_seconds=min_seconds)
    best = max(sweep, key=lambda r: r["seq_per_s"])
    return {**best, "sweep": sweep}


def states_points(model, estimator, states: torch.Tensor, sizes: list[int], peak: float, max_batch: int,
                  time_cap: float, positions: torch.Tensor | None = None) -> list[dict]:
    """One row per batch size S: probe_many and estimator states/s on the first S of ``states``.

    ``positions`` ``(S_max, N)`` bool restricts the probe (default: every masked position)."""
    rows, spent, last = [], 0.0, None
    with torch.no_grad():
        model(states[:1])  # warm-up (the forward sweep before this warmed the larger shapes)
    for size in sizes:
        predicted = last[1] * size / last[0] if last else 0.0
        if size > len(states) or spent + predicted > time_cap:
            rows.append({"states": size, "skipped": "time cap" if size <= len(states) else "too few states"})
            continue
        sub = states[:size]
        pos = None if positions is None else positions[:size]
        many, seconds = timed(lambda: probe_many(model, sub, max_batch=max_batch, positions=pos), sub.device)
        passes = int(many.passes.sum())
        row = {"states": size, "probe_seconds": seconds, "probe_states_per_s": size / seconds, "passes": passes,
               "passes_per_s": passes / seconds, "fraction_of_peak": passes / seconds / peak,
               "passes_per_state": passes / size}
        if estimator is not None:
            estimate_mi(model, estimator, sub)  # warm-up at this batch shape
            _, est_seconds = timed(lambda: estimate_mi(model, estimator, sub), sub.device)
            row.update(estimator_seconds=est_seconds, estimator_states_per_s=size / est_seconds)
        rows.append(row)
        spent += seconds + row.get("estimator_seconds", 0.0)
        last = (size, seconds)
    return rows


def sudoku_block(device, args) -> dict:
    from mi_core.domains.sudoku.mdm import load_sudoku_mdm

    model = load_sudoku_mdm(args.sudoku_model, device)
    estimator = load_estimator(args.sudoku_estimator, device)
    sweep_states = torch.stack(random_states(81, 40, 64, args.seed, device))
    peak = peak_forward(model, sweep_states, args.peak_batches, args.min_seconds)
    states = torch.stack(random_states(81, args.masked, max(args.batch_sizes), args.seed + 1, device))
    max_batch = args.max_batch or peak["batch"]
    rows = states_points(model, estimator, states, args.batch_sizes, peak["seq_per_s"], max_batch, args.time_cap)
    return {"model": str(args.sudoku_model), "estimator": str(args.sudoku_estimator), "length": 81,
            "masked": args.masked, "max_batch": max_batch, "peak": peak, "points": rows}


def esmc_300m_random(device):
    """A randomly initialised ESM-C of the 300M release's shape, from the ``esm`` package's classes."""
    from mi_core.domains.protein.esmc import ESMCAdapter, build_esmc  # build_esmc: one clear line when esm is missing

    torch.manual_seed(0)
    esmc = build_esmc(960, 15, 30)
    return ESMCAdapter(esmc.to(device), "ESM-C 300M (random weights)")


def protein_models(device, args) -> list[tuple[str, object, object]]:
    """``[(name, model, estimator)]``: the shipped protein MDM, and the ESM-C-300M-sized model when possible."""
    from mi_core.domains.protein.mdm import load_protein_mdm

    out = [("protein MDM (shipped)", load_protein_mdm(args.protein_model, device),
            load_estimator(args.protein_estimator, device))]
    if args.esmc:
        try:
            model = esmc_300m_random(device)
        except ImportError as err:
            print(f"note: ESM-C 300M-sized model skipped: {err}")
        else:
            shipped = load_estimator(args.protein_estimator, "cpu").cfg
            torch.manual_seed(0)
            head = MIEstimator(EstimatorConfig(**{**shipped.__dict__, "d_in": 960})).to(device).eval()
            out.append(("ESM-C 300M size (random weights)", model, head))
    return out


def protein_states(length: int, count: int, masked: int, seed: int, device) -> torch.Tensor:
    """``(count, length)`` random residues with ``masked`` random positions masked (id 0)."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(1, 21, (count, length), generator=g)
    for row in tokens:
        row[torch.randperm(length, generator=g)[:masked]] = 0
    return tokens.to(device)


def protein_block(device, args) -> list[dict]:
    blocks = []
    for name, model, estimator in protein_models(device, args):
        esmc = name.startswith("ESM-C")
        sizes = args.esmc_batch_sizes if esmc else args.protein_batch_sizes
        limit = model.max_len
        for length in args.lengths:
            if limit is not None and length > limit:
                blocks.append({"model": name, "length": length, "skipped": f"the model takes at most {limit} residues"})
                continue
            masked = args.esmc_masked if esmc else max(2, round(args.protein_mask_rate * length))
            start = time.perf_counter()
            peak = peak_forward(model, protein_states(length, 8, length // 2, 1, device),
                                args.esmc_peak_batches if esmc else args.protein_peak_batches, args.min_seconds)
            states = protein_states(length, max(sizes), masked, args.seed, device)
            rows = states_points(model, estimator, states, sizes, peak["seq_per_s"], args.max_batch or peak["batch"],
                                 args.time_cap)
            blocks.append({"model": name, "length": length, "masked": masked, "peak": peak, "points": rows,
                           "seconds": time.perf_counter() - start})
            shares = ", ".join(f"S={r['states']}: {100 * r['fraction_of_peak']:.0f}%" for r in rows if "skipped" not in r)
            print(f"{name} L={length}: peak {peak['seq_per_s']:.1f} seq/s; {shares}", flush=True)
    return blocks


def _num(x: float) -> str:
    """Three significant digits below 1000 (slow models give small rates), whole numbers above."""
    return f"{x:.0f}" if x >= 1000 else f"{x:.3g}"


def _points_table(points: list[dict]) -> list[str]:
    lines = ["| states per call | probe states/s | passes/state | probe passes/s | % of peak | estimator states/s |",
             "|---|---|---|---|---|---|"]
    for r in points:
        if "skipped" in r:
            lines.append(f"| {r['states']} | skipped ({r['skipped']}) | | | | |")
            continue
        est = _num(r["estimator_states_per_s"]) if "estimator_states_per_s" in r else "-"
        lines.append(f"| {r['states']} | {_num(r['probe_states_per_s'])} | {r['passes_per_state']:.0f} | "
                     f"{_num(r['passes_per_s'])} | {100 * r['fraction_of_peak']:.0f}% | {est} |")
    return lines


def markdown(res: dict) -> str:
    dev = res["device"]
    lines = [f"## Probe and estimator throughput by states per call, {dev} (`python -m scripts.probe_scaling`)", "",
             *([f"`{res['command']}`", ""] if res.get("command") else []),
             f"Measured {res['date']} on {dev} ({res['host']}, {res['threads']} threads); {res['timing']}. "
             f"{res.get('note', '')}".rstrip(), "",
             "The probe's limit is the peak forward throughput divided by its passes per state (1 + masked x |V| "
             "at most); % of peak is its passes/s over that peak. The estimator is one MDM pass + the head "
             "for all the states of the call.", ""]
    s = res.get("sudoku")
    if s:
        lines += [f"Sudoku MDM `{s['model']}` and estimator, random solution grids with {s['masked']} cells masked; "
                  f"peak forward **{_num(s['peak']['seq_per_s'])} seq/s** at batch {s['peak']['batch']}; probe batch "
                  f"{s['max_batch']}.", "", *_points_table(s["points"]), ""]
    for b in res.get("protein", []):
        if "skipped" in b:
            lines += [f"{b['model']}, length {b['length']}: skipped ({b['skipped']}).", ""]
            continue
        lines += [f"{b['model']}, length {b['length']}, {b['masked']} masked: peak forward "
                  f"**{_num(b['peak']['seq_per_s'])} seq/s** at batch {b['peak']['batch']}.", "",
                  *_points_table(b["points"]), ""]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m scripts.probe_scaling", description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    p.add_argument("--sudoku-model", type=Path, default=Path(get_domain("sudoku9").default_file("model")))
    p.add_argument("--sudoku-estimator", type=Path, default=Path(get_domain("sudoku9").default_file("estimator")))
    p.add_argument("--protein-model", type=Path, default=Path("assets/protein_mdm.safetensors"))
    p.add_argument("--protein-estimator", type=Path, default=Path("assets/protein_mi_estimator.safetensors"))
    p.add_argument("--batch-sizes", type=int_list, default=[1, 4, 16, 64, 256], help="Sudoku states per call")
    p.add_argument("--peak-batches", type=int_list, default=[64, 256, 1024], help="Sudoku forward sweep")
    p.add_argument("--masked", type=int, default=40, help="Sudoku masked cells per state")
    p.add_argument("--lengths", type=int_list, default=[50, 100, 300], help="protein lengths")
    p.add_argument("--protein-batch-sizes", type=int_list, default=[1, 4, 16])
    p.add_argument("--protein-peak-batches", type=int_list, default=[16, 64])
    p.add_argument("--protein-mask-rate", type=float, default=0.1, help="protein MDM: share of positions masked")
    p.add_argument("--no-esmc", dest="esmc", action="store_false", help="skip the ESM-C 300M-sized model")
    p.add_argument("--esmc-batch-sizes", type=int_list, default=[1])
    p.add_argument("--esmc-peak-batches", type=int_list, default=[1, 4])
    p.add_argument("--esmc-masked", type=int, default=1, help="ESM-C-sized model: masked positions per state")
    p.add_argument("--no-sudoku", dest="sudoku", action="store_false")
    p.add_argument("--no-protein", dest="protein", action="store_false")
    p.add_argument("--max-batch", type=int, default=0, help="probe batch (0: the peak's batch size)")
    p.add_argument("--min-seconds", type=float, default=0.5, help="timing window per forward sweep point")
    p.add_argument("--time-cap", type=float, default=60.0, help="seconds per model and length for the points")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--note", default="", help="a sentence added to the report (e.g. the host's load)")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--markdown", type=Path, default=None,
                   help="update this result's section in this file (e.g. BENCHMARKS.md; default: none)")
    p.add_argument("--no-markdown", dest="write_markdown", action="store_false", help="write no section (the default)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return measure(args, argv)
    except USER_ERRORS as err:  # bad values, a missing or unfit model file: one line, as python -m mi_core says it
        print(f"error: {err}", file=sys.stderr)
        return 2


def measure(args, argv: list[str] | None) -> int:
    sizes = [*args.batch_sizes, *args.peak_batches, *args.protein_batch_sizes, *args.protein_peak_batches,
             *args.esmc_batch_sizes, *args.esmc_peak_batches, *args.lengths]
    if not args.batch_sizes or min(sizes) < 1 or not 0 <= args.masked <= 81 or args.time_cap <= 0:
        raise ValueError("batch sizes and lengths must be >= 1, --masked in 0..81 and --time-cap > 0")
    device = pick_device(args.device, args.threads)
    res = {"date": time.strftime("%Y-%m-%d"), "device": str(device), "host": platform.processor() or platform.machine(),
           "threads": torch.get_num_threads(), "timing": TIMING, "note": args.note,
           "command": "python -m scripts.probe_scaling " + " ".join(sys.argv[1:] if argv is None else argv)}
    if device.type == "cuda":
        res["gpu"] = torch.cuda.get_device_name(device)
    if args.sudoku:
        res["sudoku"] = sudoku_block(device, args)
        print(json.dumps({"sudoku": [{k: r.get(k) for k in ("states", "probe_states_per_s", "fraction_of_peak",
                                                              "estimator_states_per_s", "skipped")}
                                     for r in res["sudoku"]["points"]]}), flush=True)
    if args.protein:
        res["protein"] = protein_block(device, args)
    if args.json is not None:
        atomic_write_json(args.json, res)
    if args.write_markdown and args.markdown is not None:
        update_section(f"probe-scaling-{device.type}", markdown(res), args.markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
