"""Exact-probe training data for the MI estimator, written as resumable shards.

``python -m mi_core make-estimator-data sudoku --model PATH --out runs/estimator_data/NAME [--states 600]``
(``make-estimator-data protein ...``: see :mod:`mi_core.train.protein_estimator_data`, same shard format)

States come from three sources, mixed per state (``StateMix``):
- ``uniform``: a solved grid with each cell masked at a rate t ~ U(0, 1);
- ``puzzle``: a unique puzzle's clue pattern;
- ``decode``: an intermediate state of a decoding run (top-k lowest entropy, k and temperature drawn per
  shard) started from a puzzle: the distribution the estimator meets when it guides a sampler.
Training draws from seeded *generated* puzzles (with a fresh validity-preserving transform per state);
``eval-estimator`` draws the same way from a puzzle file, so evaluation never sees training states.

Each shard ``shard_00000.safetensors`` holds, per state, the tokens, the estimator's inputs from one MDM
pass (hidden, probs, entropy, masked) and the exact probe's symmetric MI, passes and seconds. Shard ``i``
depends only on ``(seed, i)``, so an interrupted run resumes by skipping the shards already on disk.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from mi_core.decoding.sudoku_states import (  # noqa: F401  (re-exported: the samplers' old home)
    SOURCES,
    StateMix,
    decode_states,
    draw_states,
    ensure_masked,
    uniform_state,
)
from mi_core.device import pick_device
from mi_core.io import check_output_dir
from mi_core.mi.estimator import mdm_features
from mi_core.options import ArgumentParser
from mi_core.train import shards
from mi_core.train.shards import (  # noqa: F401  (re-exported: shared with the protein data)
    MANIFEST,
    file_sha256,
    load_shards,
    probe_state,
    probe_states,
    save_shard,
    shard_path,
    summarise,
)

DEFAULT_MODEL = Path("assets/sudoku_mdm.safetensors")


@dataclass(frozen=True)
class DataConfig:
    """``states`` in shards of ``shard_size``; ``pool``: generated (puzzle, solution) pairs to draw from;
    ``eps``: the probe's pruning threshold, 0 (exact) by default: on a Sudoku MDM checkpoint eps = 1e-4
    saved 4-40% of the passes but moved MI by up to 1e-3 nats, more than the median pair's MI (its error
    bound is stored per state); ``min_masked``: every state keeps at least this many masked cells."""

    seed: int = 0
    states: int = 600
    shard_size: int = 8
    pool: int = 400
    eps: float = 0.0
    max_batch: int = 512
    min_masked: int = 2
    mix: StateMix = StateMix()

    def __post_init__(self):
        if min(self.states, self.shard_size, self.pool, self.max_batch) < 1:
            raise ValueError("states, shard_size, pool and max_batch must be positive")
        if self.eps < 0:
            raise ValueError(f"eps must be >= 0, got {self.eps}")
        if self.min_masked < 2:
            raise ValueError(f"min_masked must be >= 2, got {self.min_masked}")

    @property
    def shards(self) -> int:
        return -(-self.states // self.shard_size)


def make_shard(model, puzzles: np.ndarray, solutions: np.ndarray, index: int, cfg: DataConfig, device,
               on_state=None) -> dict[str, torch.Tensor]:
    """Shard ``index``: its states (seeded by ``(cfg.seed, index)``), their MDM features and exact MI."""
    rng = np.random.default_rng([cfg.seed, index])
    n = min(cfg.shard_size, cfg.states - index * cfg.shard_size)
    tokens, source = draw_states(model, puzzles, solutions, n, cfg.mix, rng, transform=True,
                                 minimum=cfg.min_masked, device=device)
    tokens = torch.as_tensor(tokens, device=device)
    hidden, probs, entropy, masked = mdm_features(model, tokens)
    rows = probe_states(model, tokens, cfg.eps, cfg.max_batch)
    for row in rows if on_state else ():
        on_state(int(row["passes"]))
    shard = {"tokens": tokens, "hidden": hidden, "probs": probs, "entropy": entropy, "masked": masked,
             "source": torch.as_tensor(source)}
    shard.update({k: torch.stack([r[k] for r in rows]) for k in rows[0]})
    return {k: v.detach().cpu().contiguous() for k, v in shard.items()}


def command_line(cfg: DataConfig, model_path: Path, out: Path) -> str:
    """The ``make-estimator-data`` command that writes exactly these shards."""
    return (f"python -m mi_core make-estimator-data sudoku --model {model_path} --out {out} --states {cfg.states} "
            f"--shard-size {cfg.shard_size} --pool {cfg.pool} --eps {cfg.eps:g} --max-batch {cfg.max_batch} "
            f"--mix {cfg.mix.as_text()} --seed {cfg.seed}")


def training_pool(seed: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """``(puzzles, solutions)`` each ``(count, 81)``: generated unique puzzles (never a puzzle file)."""
    from mi_core.train.sudoku_data import build_pool

    pool = build_pool(seed, count, puzzles=True, workers=1)
    return pool[:, 0], pool[:, 1]


def write_manifest(out: Path, cfg, model_path: Path, model, command: str | None = None,
                   sources: tuple[str, ...] = SOURCES, domain: str = "sudoku") -> dict:
    """:func:`mi_core.train.shards.write_manifest` with the Sudoku :func:`command_line` by default."""
    return shards.write_manifest(out, cfg, model_path, model, command or command_line(cfg, model_path, out),
                                 sources, domain)


def run(model, model_path: Path, cfg: DataConfig, out: Path, device, log=print) -> dict:
    """Write every missing shard of ``cfg`` under ``out``; return the data summary."""
    write_manifest(out, cfg, model_path, model)
    todo = [i for i in range(cfg.shards) if not shard_path(out, i).is_file()]
    done_states = cfg.states - sum(min(cfg.shard_size, cfg.states - i * cfg.shard_size) for i in todo)
    log(f"{out}: {cfg.shards - len(todo)} of {cfg.shards} shards already written")
    if todo:
        puzzles, solutions = training_pool(cfg.seed + 7919, cfg.pool)
        with tqdm(total=cfg.states, initial=done_states, unit="state", desc="probe", file=sys.stderr) as bar:
            passes = 0

            def on_state(n: int) -> None:
                nonlocal passes
                passes += n
                bar.set_postfix(passes=passes, refresh=False)
                bar.update(1)

            for i in todo:
                save_shard(make_shard(model, puzzles, solutions, i, cfg, device, on_state), shard_path(out, i))
    return load_shards(out)[1]["summary"]


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="python -m mi_core make-estimator-data", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("domain", choices=["sudoku", "protein"], help="protein: see 'make-estimator-data protein -h'")
    p.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="the frozen MDM whose MI is learned")
    p.add_argument("--out", type=Path, required=True, help="shard directory (outside the repository's tracked files)")
    p.add_argument("--states", type=int, default=DataConfig.states)
    p.add_argument("--shard-size", type=int, default=DataConfig.shard_size)
    p.add_argument("--pool", type=int, default=DataConfig.pool, help="generated puzzles to draw states from")
    p.add_argument("--eps", type=float, default=DataConfig.eps, help="probe pruning threshold (0 = no pruning)")
    p.add_argument("--max-batch", type=int, default=DataConfig.max_batch)
    p.add_argument("--mix", default=StateMix().as_text(), help="weights of uniform,puzzle,decode states")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    return p


def config_from_args(args: argparse.Namespace) -> DataConfig:
    return DataConfig(seed=args.seed, states=args.states, shard_size=args.shard_size, pool=args.pool, eps=args.eps,
                      max_batch=args.max_batch, mix=StateMix.parse(args.mix))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["protein"]:
        from mi_core.train.protein_estimator_data import main as protein_main

        return protein_main(argv[1:])
    args = build_parser().parse_args(argv)
    check_output_dir(args.out)
    cfg = config_from_args(args)
    if args.threads:
        torch.set_num_threads(args.threads)
    from mi_core.models.sudoku_mdm import load_sudoku_mdm

    device = pick_device(args.device)
    model = load_sudoku_mdm(args.model, device)
    start = time.time()
    summary = run(model, args.model, cfg, args.out, device, log=lambda m: print(m, file=sys.stderr, flush=True))
    summary["wall_seconds_this_run"] = round(time.time() - start, 1)
    print(json.dumps(summary, indent=2))
    return 0
