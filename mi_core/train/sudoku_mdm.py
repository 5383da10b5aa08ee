"""Train the Sudoku MDM: ``python -m mi_core train sudoku --out assets/sudoku_mdm.safetensors ...``.

Masked-diffusion cross-entropy on masked cells (plain mean, no 1/t weighting: it trained faster here),
AdamW with warm-up and cosine decay, bf16 autocast on the CPU, and a periodic validation that decodes
held-out generated puzzles sequentially. Checkpoints and a JSON-lines log are written as it goes.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from mi_core.decoding import decode_final, make_strategy
from mi_core.device import pick_device
from mi_core.io import check_output, default_run_path
from mi_core.models.sudoku_mdm import SudokuMDM, SudokuMDMConfig, masked_ce, save_sudoku_mdm
from mi_core.options import ArgumentParser, add_force
from mi_core.train.schedule import lr_at, progress
from mi_core.train.sudoku_data import build_pool, sample_batch


@dataclass(frozen=True)
class TrainConfig:
    seed: int = 0
    steps: int = 20000
    batch: int = 256
    lr: float = 1e-3
    warmup: int = 100
    weight_decay: float = 0.01
    clip: float = 1.0
    grid_pool: int = 20000
    puzzle_pool: int = 20000
    puzzle_frac: float = 0.5
    eval_every: int = 500
    eval_puzzles: int = 200
    bf16: bool = True
    time_budget: float = 0.0  # seconds; > 0 runs the schedule by elapsed time and stops when it is spent

    def __post_init__(self):
        if not 0 <= self.puzzle_frac <= 1:
            raise ValueError(f"puzzle_frac must be in [0, 1], got {self.puzzle_frac}")
        if min(self.steps, self.batch, self.grid_pool, self.eval_every) < 1:
            raise ValueError("steps, batch, grid_pool and eval_every must be positive")


@torch.no_grad()
def validate(model: SudokuMDM, puzzles: np.ndarray, device: torch.device) -> dict:
    """Sequential-decoding accuracy on ``(P, 2, 81)`` (puzzle, solution) pairs, and masked CE."""
    model.eval()
    tokens = torch.as_tensor(puzzles[:, 0], device=device)
    solution = torch.as_tensor(puzzles[:, 1], device=device)
    final = decode_final(model, tokens, make_strategy("sequential"))
    blank = tokens == model.mask_id
    out = model(tokens)
    ce = masked_ce(out.logits, solution - 1, blank).item()
    model.train()
    return {
        "val_accuracy": (final.tokens == solution).all(1).float().mean().item(),
        "val_cell_accuracy": ((final.tokens == solution) & blank).sum().item() / blank.sum().item(),
        "val_puzzle_ce": ce,
    }


def train(model_cfg: SudokuMDMConfig, cfg: TrainConfig, out: Path, device: torch.device, log=print) -> dict:
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    t0 = time.time()
    grids = build_pool(cfg.seed, cfg.grid_pool, puzzles=False)
    puzzles = build_pool(cfg.seed + 1, cfg.puzzle_pool, puzzles=True) if cfg.puzzle_frac > 0 else grids[:0]
    val = build_pool(10_000 + cfg.seed, cfg.eval_puzzles, puzzles=True)
    log(f"pools built in {time.time() - t0:.0f}s: {len(grids)} grids, {len(puzzles)} puzzles, {len(val)} validation")
    model = SudokuMDM(model_cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.98), weight_decay=cfg.weight_decay)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if cfg.bf16 else contextlib.nullcontext()
    curve, start, best = [], time.time(), -1.0
    losses = []
    step = 0
    while (frac := progress(step, time.time() - start, cfg)) < 1:
        lr = lr_at(step, frac, cfg)
        for group in opt.param_groups:
            group["lr"] = lr
        inputs, targets = (t.to(device) for t in sample_batch(grids, puzzles, cfg.batch, cfg.puzzle_frac, rng))
        with autocast:
            logits = model(inputs).logits
        loss = masked_ce(logits, targets - 1, inputs == model.mask_id)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        opt.step()
        losses.append(loss.detach())  # read back once per evaluation, not per step
        step += 1
        if step % cfg.eval_every == 0 or progress(step, time.time() - start, cfg) >= 1:
            point = {"step": step, "examples": step * cfg.batch, "seconds": round(time.time() - start, 1),
                     "train_loss": float(torch.stack(losses).double().mean()), "lr": lr, **validate(model, val, device)}
            losses = []
            curve.append(point)
            log(json.dumps(point))
            summary = {"train": asdict(cfg), "params": model.num_params(), "curve": curve}
            save_sudoku_mdm(model, out.with_name(out.stem + "_last.safetensors"), summary)
            if point["val_accuracy"] >= best:
                best = point["val_accuracy"]
                save_sudoku_mdm(model, out, summary)
    return {"params": model.num_params(), "curve": curve, "best_val_accuracy": best}


def main(argv: list[str] | None = None) -> None:
    parser = ArgumentParser(prog="python -m mi_core train sudoku", description=__doc__)
    parser.add_argument("--out", type=Path, default=None,
                        help="weights (+ .json config beside them); default runs/sudoku_mdm_<date-time>.safetensors")
    add_force(parser)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    for f in list(SudokuMDMConfig.__dataclass_fields__.values()) + list(TrainConfig.__dataclass_fields__.values()):
        kind = type(f.default)
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=(lambda s: s.lower() in ("1", "true", "yes")) if kind is bool else kind, default=f.default)
    args = vars(parser.parse_args(argv))
    args["out"] = check_output(args["out"] or default_run_path("sudoku_mdm"), args.pop("force"), "--out")
    threads = args.pop("threads")
    if threads:
        # on a shared 2-core machine one thread is far faster than two that wait on each other
        torch.set_num_threads(threads)
    model_cfg = SudokuMDMConfig(**{k: args[k] for k in SudokuMDMConfig.__dataclass_fields__})
    cfg = TrainConfig(**{k: args[k] for k in TrainConfig.__dataclass_fields__})
    result = train(model_cfg, cfg, args["out"], pick_device(args["device"]), log=lambda m: print(m, flush=True))
    print(json.dumps({"best_val_accuracy": result["best_val_accuracy"], "params": result["params"]}))


if __name__ == "__main__":
    main()
