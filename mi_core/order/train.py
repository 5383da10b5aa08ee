"""Train an order selector: ``python -m mi_core train-order sudoku --model assets/sudoku_mdm.safetensors ...``.

Each update draws a batch of start states (puzzles) with their solutions and one budget T (cycling
through ``--steps-budget``), rolls out K posterior schedules per state against the frozen MDM, and takes
an Adam step on :func:`mi_core.order.elbo.order_loss`. Every ``--eval-every`` updates it decodes held-out
generated puzzles with the ``learned`` strategy and with ``top_margin`` at each budget, logs a JSON line,
and writes checkpoints: the selector (``--out``, best mean validation accuracy, and ``*_last``) and the
posterior beside it (``*_posterior``), each with its config, the training settings and the curve.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mi_core.order.elbo import order_loss, rollout
from mi_core.order.selector import make_order_nets


@dataclass(frozen=True)
class OrderTrainConfig:
    seed: int = 0
    updates: int = 100_000
    batch: int = 16
    samples: int = 4
    tau: float = 0.1  # with alpha starting at log p(x0_i | x_t): a spread-out initial schedule
    lr: float = 1e-3
    clip: float = 1.0
    width: int = 64
    budgets: tuple[int, ...] = (5, 10, 15, 20)
    bf16: bool = True
    time_budget: float = 0.0  # seconds; > 0 stops after the update that spends it

    def __post_init__(self):
        if min(self.updates, self.batch, self.width) < 1 or self.samples < 2:
            raise ValueError("updates, batch and width must be >= 1 and samples >= 2 (RLOO)")
        if not self.budgets or min(self.budgets) < 1:
            raise ValueError(f"budgets must be a non-empty list of steps >= 1, got {self.budgets}")
        if not self.tau > 0 or not self.lr > 0:
            raise ValueError(f"tau and lr must be > 0, got tau={self.tau}, lr={self.lr}")


def train_order(model, draw: Callable, cfg: OrderTrainConfig, d_model: int, *, validate: Callable | None = None,
                eval_every: int = 0, checkpoint: Callable | None = None, log=print, nets: tuple | None = None):
    """The training loop over a frozen ``model``; returns ``(posterior, selector, curve)``.

    ``nets``: a ``(posterior, selector)`` pair to train in place (default: fresh ones for ``d_model``).
    ``draw(rng, batch) -> (start (B, N) token ids, target (B, N) value indices)``; ``validate(selector)
    -> dict`` and ``checkpoint(posterior, selector, curve)`` run every ``eval_every`` updates (0: never).
    The curve holds one dict per evaluation with the mean training ELBO per masked position since the
    last one, overall and by budget.
    """
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    for p in model.parameters():
        p.requires_grad_(False)  # the denoiser is frozen
    posterior, selector = nets if nets is not None else make_order_nets(d_model, cfg.width)
    params = list(posterior.parameters()) + list(selector.parameters())
    opt = torch.optim.Adam(params, lr=cfg.lr)
    curve, window, start = [], [], time.time()
    for update in range(cfg.updates):
        steps = cfg.budgets[update % len(cfg.budgets)]
        tokens, target = draw(rng, cfg.batch)
        ro = rollout(model, tokens, target, posterior, selector, steps, cfg.tau, cfg.samples, gen, cfg.bf16)
        loss = order_loss(ro, cfg.samples)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.clip)
        opt.step()
        scale = ro.n_masked.clamp_min(1).float()
        window.append((steps, (ro.elbo / scale).mean().item(), (ro.kl / scale).mean().item(),
                       ro.steps_used.float().mean().item()))
        done = update + 1 == cfg.updates or (cfg.time_budget > 0 and time.time() - start >= cfg.time_budget)
        if eval_every and ((update + 1) % eval_every == 0 or done):
            point = _summary(update + 1, time.time() - start, window)
            if validate is not None:
                point.update(validate(selector))
            window = []
            curve.append(point)
            log(json.dumps(point))
            if checkpoint is not None:
                checkpoint(posterior, selector, curve)
        if done:  # the last window is evaluated and saved above, whether the updates or the time ran out
            break
    return posterior, selector, curve


def _summary(update: int, seconds: float, window: list[tuple]) -> dict:
    arr = np.asarray(window) if window else np.zeros((0, 4))
    point = {"update": update, "seconds": round(seconds, 1), "elbo": float(arr[:, 1].mean()) if len(arr) else None,
             "kl": float(arr[:, 2].mean()) if len(arr) else None}
    for t in sorted({int(s) for s in arr[:, 0]}):
        rows = arr[arr[:, 0] == t]
        point[f"elbo_T{t}"] = round(float(rows[:, 1].mean()), 4)
        point[f"q_steps_T{t}"] = round(float(rows[:, 3].mean()), 2)
    return point


def main(argv: list[str] | None = None) -> None:
    from mi_core.order.sudoku import run_sudoku

    parser = argparse.ArgumentParser(prog="python -m mi_core train-order", description=__doc__)
    parser.add_argument("domain", choices=["sudoku"], help="only sudoku for now (protein later)")
    parser.add_argument("--model", type=Path, default=Path("assets/sudoku_mdm.safetensors"))
    parser.add_argument("--out", type=Path, default=Path("assets/sudoku_order_selector.safetensors"))
    parser.add_argument("--log", type=Path, default=None, help="JSON-lines log (default: OUT with _log.jsonl)")
    parser.add_argument("--steps-budget", default="5,10,15,20", help="budget(s) T, comma-separated; one "
                        "selector conditioned on T is trained over all of them")
    parser.add_argument("--updates", type=int, default=OrderTrainConfig.updates)
    parser.add_argument("--batch", type=int, default=OrderTrainConfig.batch)
    parser.add_argument("--samples", type=int, default=OrderTrainConfig.samples, help="K schedules per state")
    parser.add_argument("--tau", type=float, default=OrderTrainConfig.tau)
    parser.add_argument("--lr", type=float, default=OrderTrainConfig.lr)
    parser.add_argument("--width", type=int, default=OrderTrainConfig.width)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bf16", type=lambda s: s.lower() in ("1", "true", "yes"), default=True)
    parser.add_argument("--time-budget", type=float, default=0.0, help="seconds (0: run all updates)")
    parser.add_argument("--puzzle-pool", type=int, default=2000, help="training puzzles generated")
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--eval-puzzles", type=int, default=100)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    args = parser.parse_args(argv)
    try:
        budgets = tuple(int(b) for b in args.steps_budget.split(","))
    except ValueError:
        raise ValueError(f"--steps-budget must be integers separated by commas, got {args.steps_budget!r}") from None
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = OrderTrainConfig(seed=args.seed, updates=args.updates, batch=args.batch, samples=args.samples,
                           tau=args.tau, lr=args.lr, width=args.width, budgets=budgets, bf16=args.bf16,
                           time_budget=args.time_budget)
    log_path = args.log or args.out.with_name(args.out.stem + "_log.jsonl")
    run_sudoku(args.model, args.out, log_path, cfg, args.puzzle_pool, args.eval_every, args.eval_puzzles)


__all__ = ["OrderTrainConfig", "train_order"]
