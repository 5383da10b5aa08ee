"""Train an order selector: ``python -m mi_core train-order DOMAIN ...`` (``train-order DOMAIN -h`` for its options).

Each update draws a batch of start states with their clean sequences (Sudoku: generated puzzles;
proteins: all-mask windows of training sequences, :mod:`mi_core.domains.protein.order`) and one budget T
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

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from mi_core.device import pick_device, slow_bf16
from mi_core.domain import Domain, add_domain_parsers, get_domain
from mi_core.io import check_output, default_run_path
from mi_core.options import ArgumentParser, add_force
from mi_core.order.loop import OrderTrainConfig, load_nets, train_order  # noqa: F401  (re-exported)
from mi_core.scale import distributed


def options(parser: argparse.ArgumentParser, domain: Domain) -> None:
    default = domain.default_file("model")
    parser.add_argument("--model", type=Path, default=Path(default), help="the frozen MDM (default: the shipped one)")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"selector weights (default: runs/{domain.cli_name}_order_selector_<date-time>.safetensors)")
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
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True,
                        help="bf16 autocast for the MDM passes where it is fast (CUDA, CPUs with native bf16; elsewhere fp32)")
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
    domain.part("order_task").add_arguments(parser)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="python -m mi_core train-order", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    add_domain_parsers(parser, options, needs="order_task")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    domain = get_domain(args.domain)
    try:
        budgets = tuple(int(b) for b in args.steps_budget.split(","))
    except ValueError:
        raise ValueError(f"--steps-budget must be integers separated by commas, got {args.steps_budget!r}") from None
    names = ("seed", "updates", "batch", "samples", "tau", "lr", "width", "bf16", "time_budget", "finetune",
             "denoiser_lr", "kl_weight")
    cfg = OrderTrainConfig(budgets=budgets, **{k: getattr(args, k) for k in names})
    if args.init is not None:
        load_nets(args.init)  # a missing or wrong --init fails now, before the data are built
    device = distributed.setup(pick_device(args.device, args.threads))  # joins the process group under torchrun
    if cfg.bf16 and slow_bf16(device):  # bf16 only where it is fast: CUDA or a CPU with native bf16
        if distributed.is_main():
            print(f"{slow_bf16(device)}: training in fp32", file=sys.stderr)
        cfg = replace(cfg, bf16=False)
    out = check_output(args.out or default_run_path(f"{domain.cli_name}_order_selector"), args.force, "--out")
    log_path = args.log or out.with_name(out.stem + "_log.jsonl")
    domain.part("order_task").run(args, cfg, args.model, out, log_path, device)
    distributed.teardown()


__all__ = ["OrderTrainConfig", "train_order"]
