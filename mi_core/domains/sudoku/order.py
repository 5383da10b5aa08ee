"""Sudoku side of ``train-order``: generated (or graded, from a pool file) puzzles as start states, validation against
top_margin."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mi_core.decoding import decode_final, make_strategy
from mi_core.device import bf16_autocast
from mi_core.domains.sudoku.generator import random_transform
from mi_core.domains.sudoku.mdm import load_sudoku_mdm, save_sudoku_mdm
from mi_core.domains.sudoku.pool import build_pool, hardest, read_pool_file
from mi_core.io import display_path
from mi_core.options import option
from mi_core.order.loop import OrderTask, OrderTrainConfig

TRAIN_SEED, EVAL_SEED = 30_000, 20_000  # away from the MDM's own pools (seeds 0, 1 and 10,000)


def puzzle_draw(pool: np.ndarray):
    """``draw(rng, batch)`` of freshly transformed ``(P, 2, 81)`` (puzzle, solution) pairs: ``(start token ids,
    solution value indices)``, ``(B, 81)`` each."""

    def draw(rng: np.random.Generator, batch: int):
        pairs = pool[rng.integers(len(pool), size=batch)].reshape(batch * 2, -1)
        pairs = random_transform(pairs, rng, pair=2).reshape(batch, 2, -1)
        return torch.from_numpy(pairs[:, 0]), torch.from_numpy(pairs[:, 1] - 1)

    return draw


@torch.no_grad()
def decode_score(model, pairs: np.ndarray, strategy, bf16: bool) -> dict:
    """Whole-grid and blank-cell accuracy, mean passes and the pass histogram of ``strategy`` on ``(P, 2, 81)``
    pairs."""
    device = model.device
    tokens, solution = torch.as_tensor(pairs[:, 0], device=device), torch.as_tensor(pairs[:, 1], device=device)
    with bf16_autocast(device, bf16):
        final = decode_final(model, tokens, strategy)
    passes, right, blank = final.passes.tolist(), final.tokens == solution, tokens == model.mask_id
    return {"accuracy": float(right.all(1).float().mean()),
            "cell_accuracy": (right & blank).sum().item() / blank.sum().item(), "mean_passes": float(np.mean(passes)),
            "passes_hist": {str(k): passes.count(k) for k in sorted(set(passes))}}


@dataclass
class OrderData:
    """``train-order sudoku``: the puzzles it trains and validates on (generated, or read from pool files)."""

    puzzle_pool: int = option(2000, "training puzzles generated", range=(1, 100_000_000))
    eval_puzzles: int = option(100, "validation puzzles", range=(1, 10_000_000))
    pool_file: Path | None = option(None, "train on the graded puzzles of this file of grow_pool_file (e.g. "
                                    "assets/sudoku_pools/train_graded.txt.gz) instead of --puzzle-pool generated ones")
    val_file: Path | None = option(None, "validate on the --eval-puzzles hardest puzzles (by grade) of this file of "
                                   "grow_pool_file, instead of generated ones")


def puzzles(args, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """``(training pairs, validation pairs, a line saying where they came from)``, ``(P, 2, 81)`` each."""
    if args.pool_file is None:
        pool, said = build_pool(TRAIN_SEED + seed, args.puzzle_pool, puzzles=True, workers=1), "generated"
    else:
        pool, said = read_pool_file(args.pool_file, "--pool-file")["puzzles"], f"from {args.pool_file}"
    if args.val_file is None:
        return pool, build_pool(EVAL_SEED + seed, args.eval_puzzles, puzzles=True, workers=1), f"{said}; validation generated"
    return pool, hardest(args.val_file, args.eval_puzzles, "--val-file"), f"{said}; validation: the hardest of {args.val_file}"


class SudokuOrderTask(OrderTask):
    options, domain = OrderData, "sudoku"
    budgets = (5, 10, 15, 20)  # the shipped selector's and its benchmark's (docs/learned_order.md)
    load, save_denoiser = staticmethod(load_sudoku_mdm), staticmethod(save_sudoku_mdm)

    def data(self, args, cfg: OrderTrainConfig, model) -> tuple:
        pool, val, said = puzzles(args, cfg.seed)

        def score(selector, steps: int) -> tuple[float, float]:
            """``learned`` (threshold mode) with ``selector``, else ``top_margin``."""
            strategy = (make_strategy("top_margin", steps=steps) if selector is None
                        else make_strategy("learned", steps=steps, net=selector))
            got = decode_score(model, val, strategy, cfg.bf16)
            return got["accuracy"], got["mean_passes"]

        header = f"{len(pool)} training puzzles and {len(val)} validation ones ({said})"
        files = {k: display_path(getattr(args, k)) for k in ("pool_file", "val_file") if getattr(args, k) is not None}
        return puzzle_draw(pool), score, header, {"puzzle_pool": len(pool), "eval_puzzles": len(val), **files}


ORDER_TASK = SudokuOrderTask()
