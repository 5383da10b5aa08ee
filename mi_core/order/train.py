"""Train an order selector: ``python -m mi_core train-order sudoku|protein ...``.

Each update draws a batch of start states with their clean sequences (Sudoku: generated puzzles;
proteins: all-mask windows of training sequences, :mod:`mi_core.order.protein`) and one budget T
(cycling through ``--steps-budget``), rolls out K posterior schedules per state against the MDM, and
takes an Adam step on :func:`mi_core.order.elbo.order_loss`. The MDM is frozen unless ``--finetune``
(then it trains on the denoising term too and is saved as ``*_denoiser``); ``--kl-weight`` < 1 weighs the
KL down; ``--init`` continues from a saved selector and posterior. Every ``--eval-every`` updates it
validates ``learned`` against ``top_margin`` at each budget (Sudoku: puzzles solved; proteins:
teacher-forced log-likelihood per residue), logs a JSON line, and writes checkpoints: the selector
(``--out``, best mean validation score, and ``*_last``) and the posterior beside it (``*_posterior``),
each with its config, the training settings and the curve.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from mi_core.device import pick_device
from mi_core.io import check_output, default_run_path
from mi_core.options import ArgumentParser, add_force
from mi_core.order.elbo import order_loss, rollout
from mi_core.order.selector import load_order_net, make_order_nets, save_order_net


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
    kl_weight: float = 1.0  # beta: weight of KL(Q || P) in the objective (1: the ELBO)
    finetune: bool = False  # also train the denoiser on the denoising term (joint); else it is frozen
    denoiser_lr: float = 1e-5

    def __post_init__(self):
        if min(self.updates, self.batch, self.width) < 1 or self.samples < 2:
            raise ValueError("updates, batch and width must be >= 1 and samples >= 2 (RLOO)")
        if not self.budgets or min(self.budgets) < 1:
            raise ValueError(f"budgets must be a non-empty list of steps >= 1, got {self.budgets}")
        if not 0 < self.kl_weight <= 1:
            raise ValueError(f"kl_weight must be in (0, 1], got {self.kl_weight}")
        if not self.tau > 0 or not self.lr > 0 or not self.denoiser_lr > 0:
            raise ValueError(f"tau, lr and denoiser_lr must be > 0, got tau={self.tau}, lr={self.lr}, "
                             f"denoiser_lr={self.denoiser_lr}")


def train_order(model, draw: Callable, cfg: OrderTrainConfig, d_model: int, *, validate: Callable | None = None,
                eval_every: int = 0, checkpoint: Callable | None = None, log=print, nets: tuple | None = None):
    """The training loop; returns ``(posterior, selector, curve)``. ``model`` is frozen unless
    ``cfg.finetune``, in which case it is trained in place (eval mode: no dropout) at ``cfg.denoiser_lr``.

    ``nets``: a ``(posterior, selector)`` pair to train in place (default: fresh ones for ``d_model``).
    ``draw(rng, batch) -> (start (B, N) token ids, target (B, N) value indices)``; ``validate(selector)
    -> dict`` and ``checkpoint(posterior, selector, curve)`` run every ``eval_every`` updates (0: never).
    The curve holds one dict per evaluation with the mean training ELBO per masked position since the
    last one, overall and by budget. Everything runs on the model's device (the draws are moved there and
    the sampling generator lives there); the per-update statistics stay on the device and are read back
    once per evaluation window, so the hot loop never waits for the host between evaluations.
    """
    device = model.value_tokens.device
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    gen = torch.Generator(device=device).manual_seed(cfg.seed)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(cfg.finetune)
    posterior, selector = nets if nets is not None else make_order_nets(d_model, cfg.width)
    posterior.to(device), selector.to(device)
    params = list(posterior.parameters()) + list(selector.parameters())
    groups = [{"params": params, "lr": cfg.lr}]
    if cfg.finetune:
        groups.append({"params": list(model.parameters()), "lr": cfg.denoiser_lr})
    opt = torch.optim.Adam(groups)
    params = [p for g in groups for p in g["params"]]
    curve, window, start = [], [], time.time()
    for update in range(cfg.updates):
        steps = cfg.budgets[update % len(cfg.budgets)]
        tokens, target = (x.to(device) for x in draw(rng, cfg.batch))
        ro = rollout(model, tokens, target, posterior, selector, steps, cfg.tau, cfg.samples, gen, cfg.bf16,
                     finetune=cfg.finetune)
        loss = order_loss(ro, cfg.samples, cfg.kl_weight)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.clip)
        opt.step()
        scale = ro.n_masked.clamp_min(1).float()
        window.append((steps, torch.stack([(ro.elbo / scale).mean(), (ro.kl / scale).mean(),
                                           ro.steps_used.float().mean()]).detach()))
        done = update + 1 == cfg.updates or (cfg.time_budget > 0 and time.time() - start >= cfg.time_budget)
        if eval_every and ((update + 1) % eval_every == 0 or done):
            point = _summary(update + 1, time.time() - start, _to_host(window))
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


def run_logged(model, draw: Callable, cfg: OrderTrainConfig, validate: Callable, out: Path, log_path: Path,
               eval_every: int, header: str, extra: dict, init: Path | None = None,
               save_denoiser: Callable | None = None) -> None:
    """:func:`train_order` with a JSON-lines log and checkpoints: ``out`` holds the selector with the best
    ``val_mean`` so far (higher is better), ``*_last`` the latest, and ``*_posterior*`` the matching score
    networks; each JSON config carries the training settings, ``extra`` and the curve. ``init``: a
    selector saved by an earlier run (its ``*_posterior`` beside it) to continue from. With
    ``cfg.finetune``, ``save_denoiser(model, path, meta)`` writes the denoiser beside each selector
    checkpoint (``*_denoiser``)."""
    nets = load_nets(init) if init is not None else None
    log_path.parent.mkdir(parents=True, exist_ok=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    best = [float("-inf")]
    with log_path.open("a") as log_file:

        def log(line: str) -> None:
            print(line, flush=True)
            if line.startswith("{"):
                log_file.write(line + "\n")
                log_file.flush()

        def checkpoint(posterior, selector, curve) -> None:
            meta = {"train": asdict(cfg), "denoiser_frozen": not cfg.finetune, **extra, "curve": curve}
            if init is not None:
                meta["init"] = str(init)
            score = curve[-1].get("val_mean", float("-inf"))
            for suffix, keep in (("_last", True), ("", score >= best[0])):
                if not keep:
                    continue
                save_order_net(selector, out.with_name(out.stem + suffix + ".safetensors"), meta)
                save_order_net(posterior, out.with_name(out.stem + "_posterior" + suffix + ".safetensors"), meta)
                if cfg.finetune and save_denoiser is not None:
                    save_denoiser(model, out.with_name(out.stem + "_denoiser" + suffix + ".safetensors"), meta)
            best[0] = max(best[0], score)

        log(header)
        train_order(model, draw, cfg, model.cfg.d_model, validate=validate, eval_every=eval_every,
                    checkpoint=checkpoint, log=log, nets=nets)
        log(json.dumps({"done": True, "best_val_mean": best[0], "out": str(out)}))


def load_nets(selector_path: Path) -> tuple:
    """``(posterior, selector)`` from a selector checkpoint and the ``*_posterior`` file beside it."""
    if not selector_path.is_file():
        raise FileNotFoundError(f"--init: no selector at {selector_path}")
    posterior_path = selector_path.with_name(selector_path.stem + "_posterior.safetensors")
    if selector_path.stem.endswith("_last"):
        posterior_path = selector_path.with_name(selector_path.stem[:-5] + "_posterior_last.safetensors")
    if not posterior_path.is_file():
        raise FileNotFoundError(f"--init: {selector_path} has no posterior beside it ({posterior_path.name}); "
                                "training needs both")
    return load_order_net(posterior_path, role="posterior"), load_order_net(selector_path)


def _to_host(window: list[tuple]) -> list[tuple]:
    """``[(steps, (3,) device tensor)]`` -> ``[(steps, elbo, kl, steps_used)]`` floats, one host read."""
    if not window:
        return []
    values = torch.stack([v for _, v in window]).double().cpu().tolist()
    return [(steps, *row) for (steps, _), row in zip(window, values)]


def _summary(update: int, seconds: float, window: list[tuple]) -> dict:
    arr = np.asarray(window) if window else np.zeros((0, 4))
    point = {"update": update, "seconds": round(seconds, 1), "elbo": float(arr[:, 1].mean()) if len(arr) else None,
             "kl": float(arr[:, 2].mean()) if len(arr) else None}
    for t in sorted({int(s) for s in arr[:, 0]}):
        rows = arr[arr[:, 0] == t]
        point[f"elbo_T{t}"] = round(float(rows[:, 1].mean()), 4)
        point[f"q_steps_T{t}"] = round(float(rows[:, 3].mean()), 2)
    return point


DEFAULTS = {  # domain -> (denoiser, selector out)
    "sudoku": (Path("assets/sudoku_mdm.safetensors"), Path("assets/sudoku_order_selector.safetensors")),
    "protein": (Path("assets/protein_mdm.safetensors"), Path("assets/protein_order_selector.safetensors")),
}


def main(argv: list[str] | None = None) -> None:
    parser = ArgumentParser(prog="python -m mi_core train-order", description=__doc__)
    parser.add_argument("domain", choices=sorted(DEFAULTS), help="sudoku (generated puzzles) or protein "
                        "(all-mask windows of real sequences, --fasta)")
    parser.add_argument("--model", type=Path, default=None, help="the frozen MDM (default: the shipped one)")
    parser.add_argument("--out", type=Path, default=None, help="selector weights (default: runs/<domain>_order_selector_<date-time>.safetensors)")
    add_force(parser)
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
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    parser.add_argument("--kl-weight", type=float, default=OrderTrainConfig.kl_weight, help="beta in "
                        "D - beta KL (1: the ELBO; < 1 lets Q spread its schedule when P cannot follow)")
    parser.add_argument("--init", type=Path, default=None, help="continue from this selector (and its "
                        "*_posterior file beside it)")
    parser.add_argument("--finetune", action="store_true", help="train the denoiser jointly on the ELBO's "
                        "denoising term; it is saved beside the selector as *_denoiser")
    parser.add_argument("--denoiser-lr", type=float, default=OrderTrainConfig.denoiser_lr)
    sudoku = parser.add_argument_group("sudoku")
    sudoku.add_argument("--puzzle-pool", type=int, default=2000, help="training puzzles generated")
    sudoku.add_argument("--eval-puzzles", type=int, default=100)
    protein = parser.add_argument_group("protein")
    protein.add_argument("--fasta", type=Path, default=Path("../shared/data/protein/cath-dataset-nonredundant-S40.fa"),
                         help="FASTA read with the strict rule; training windows from its train split, validation from val")
    protein.add_argument("--lengths", default="50-100", help="LO-HI: window lengths drawn per batch")
    protein.add_argument("--eval-per-length", type=int, default=16, help="validation windows per length (4 lengths)")
    args = parser.parse_args(argv)
    try:
        budgets = tuple(int(b) for b in args.steps_budget.split(","))
    except ValueError:
        raise ValueError(f"--steps-budget must be integers separated by commas, got {args.steps_budget!r}") from None
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = OrderTrainConfig(seed=args.seed, updates=args.updates, batch=args.batch, samples=args.samples,
                           tau=args.tau, lr=args.lr, width=args.width, budgets=budgets, bf16=args.bf16,
                           time_budget=args.time_budget, finetune=args.finetune, denoiser_lr=args.denoiser_lr,
                           kl_weight=args.kl_weight)
    if args.init is not None:
        load_nets(args.init)  # a missing or wrong --init fails now, before the data are built
    device = pick_device(args.device)
    model_path = args.model or DEFAULTS[args.domain][0]
    out = check_output(args.out or default_run_path(f"{args.domain}_order_selector"), args.force, "--out")
    log_path = args.log or out.with_name(out.stem + "_log.jsonl")
    if args.domain == "sudoku":
        from mi_core.order.sudoku import run_sudoku

        run_sudoku(model_path, out, log_path, cfg, args.puzzle_pool, args.eval_every, args.eval_puzzles, args.init,
                   device=device)
    else:
        from mi_core.bench.protein import parse_lengths
        from mi_core.order.protein import run_protein

        run_protein(model_path, args.fasta, out, log_path, cfg, parse_lengths(args.lengths), args.eval_every,
                    args.eval_per_length, args.init, device=device)


__all__ = ["OrderTrainConfig", "train_order"]
