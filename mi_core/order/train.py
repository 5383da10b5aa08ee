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

from pathlib import Path

import torch

from mi_core.device import pick_device
from mi_core.io import check_output, default_run_path
from mi_core.options import ArgumentParser, add_force, parse_lengths
from mi_core.order.loop import OrderTrainConfig, load_nets, run_logged, train_order  # noqa: F401  (re-exported)
from mi_core.scale import distributed

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
    device = distributed.setup(pick_device(args.device))  # joins the process group under torchrun
    model_path = args.model or DEFAULTS[args.domain][0]
    out = check_output(args.out or default_run_path(f"{args.domain}_order_selector"), args.force, "--out")
    log_path = args.log or out.with_name(out.stem + "_log.jsonl")
    if args.domain == "sudoku":
        from mi_core.order.sudoku import run_sudoku

        run_sudoku(model_path, out, log_path, cfg, args.puzzle_pool, args.eval_every, args.eval_puzzles, args.init,
                   device=device)
    else:
        from mi_core.order.protein import run_protein

        run_protein(model_path, args.fasta, out, log_path, cfg, parse_lengths(args.lengths), args.eval_every,
                    args.eval_per_length, args.init, device=device)
    distributed.teardown()


__all__ = ["OrderTrainConfig", "train_order"]
