"""Batch construction speed: the device-side pipeline against the NumPy one it replaced (one CPU thread).

    PYTHONPATH=. python scripts/studies/bench_data.py --pool runs/pools/pool_<key>.npz --json assets/benchmarks/sudoku_data_speed.json

Builds batches of 256 and 512 training states both ways (uniform + puzzle-shaped + on-policy states for
the device pipeline; uniform + puzzle-shaped for the NumPy one, as the trainer had them) and reports
batches/s and examples/s. With ``--device cuda`` the device pipeline is timed there (synchronised).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from mi_core.domains.sudoku.data import DeviceBatches
from mi_core.domains.sudoku.generator import random_transform


def numpy_batch(grids, pairs, batch, rng):
    """The NumPy batch construction the trainer used before (transforms and masks on the host)."""
    n_puz = batch // 2
    n_uni = batch - n_puz
    uni = random_transform(grids[rng.integers(len(grids), size=n_uni)], rng)
    uni_mask = rng.random(uni.shape) < rng.random((n_uni, 1))
    sel = pairs[rng.integers(len(pairs), size=n_puz)]
    sel = random_transform(sel.reshape(n_puz * 2, 81), rng, pair=2).reshape(n_puz, 2, 81)
    puz_mask = (sel[:, 0] == 0) & (rng.random((n_puz, 81)) >= rng.random((n_puz, 1)))
    targets = np.concatenate([uni, sel[:, 1]])
    inputs = np.where(np.concatenate([uni_mask, puz_mask]), 0, targets)
    return torch.from_numpy(inputs), torch.from_numpy(targets)


def timed(fn, seconds: float, sync) -> float:
    fn()
    sync()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        n += 1
    sync()
    return n / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pool", type=Path, required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    with np.load(args.pool) as f:
        pools = {k: f[k] for k in ("grids", "puzzles", "grades")}
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    data = DeviceBatches(pools, device, 0.4, 0.2, 1.0)
    data.add_states(torch.as_tensor(pools["puzzles"][:2000, 0]), torch.as_tensor(pools["puzzles"][:2000, 1]))
    gen = torch.Generator(device=device).manual_seed(0)
    rng = np.random.default_rng(0)
    rows = []
    for batch in (256, 512):
        dev = timed(lambda: data.sample(batch, gen), args.seconds, sync)
        host = timed(lambda: numpy_batch(pools["grids"], pools["puzzles"], batch, rng), args.seconds, lambda: None)
        rows.append({"batch": batch, "device": str(device), "device_batches_per_s": round(dev, 1),
                     "device_examples_per_s": round(dev * batch), "numpy_batches_per_s": round(host, 1),
                     "numpy_examples_per_s": round(host * batch)})
        print(json.dumps(rows[-1]), flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"threads": 1, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
