"""Train an order selector: ``python -m mi_core train-order DOMAIN ...`` (``train-order DOMAIN -h`` for its options).

Each update draws start states with their clean sequences and one budget T (cycling through
``--steps-budget``), rolls out K posterior schedules per state against the MDM, and takes an Adam step on
:func:`mi_core.order.elbo.order_loss`. The MDM is frozen unless ``--finetune``. Every ``--eval-every``
updates it validates ``learned`` against ``top_margin`` at each budget, logs a JSON line and writes the
selector (``--out``: best mean validation score; ``*_last``) and the posterior beside it (``*_posterior``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path

from mi_core.decoding.base import MAX_COUNT
from mi_core.decoding.budgets import budgets_text, default_budgets
from mi_core.device import pick_device, use_bf16
from mi_core.domain import Domain, get_domain
from mi_core.io import check_output, check_weights_output, check_writable, default_run_path, run_lock
from mi_core.models.loading import other_domain
from mi_core.options import SKIP, Device, Force, from_options, group_fields, option
from mi_core.order.loop import OrderTrainConfig, load_nets, resume_state
from mi_core.scale import distributed


@dataclass
class OrderRun:
    model: Path | None = option(None, "the frozen MDM (default: the shipped one)",
                               default_for=lambda d: d.default_file("model"))
    out: Path | None = option(None, "selector weights (default: runs/<domain>_order_selector_<date-time>.safetensors)")
    log: Path | None = option(None, "JSON-lines log (default: OUT with _log.jsonl)")
    steps_budget: str | None = option(None, "budget(s) T, comma-separated; one selector conditioned on T is trained "
                                      "over all of them; by default the domain's own, else round(k n / 16) for k = "
                                      "1..4, below n, the most positions a state has to fill",
                                      default_for=lambda d: budgets_text(default_budgets(d)))
    eval_every: int = option(50, "updates between validations", range=(1, 1_000_000_000))
    init: Path | None = option(None, "warm-start from this selector (and its *_posterior file beside it): a new run "
                               "from those weights, with a fresh optimizer and data stream")
    resume: bool = option(False, "continue the run at --out from OUT.ckpt (written at each validation) as if it had "
                          "not stopped; give its options again (--updates and --time-budget may change)")


TRAIN_OPTIONS = (OrderTrainConfig, {"budgets": SKIP, "clip": SKIP})  # budgets come from --steps-budget


# why a domain serves() refuses cannot run this command (the command line says it)
UNSERVED = "has no order task (a Domain's order_task)"


def serves(domain: Domain) -> bool:
    return domain.order_task is not None


def options(domain: Domain) -> list:
    return [OrderRun, Force, TRAIN_OPTIONS, Device, domain.part("order_task").options]


def steps_budgets(text: str) -> tuple[int, ...]:
    """The budgets T of ``--steps-budget`` ``"5,10"``; ValueError unless each is 1..MAX_COUNT, the most steps the
    ``learned`` sampler takes."""
    try:
        budgets = tuple(int(b) for b in text.split(","))
    except ValueError:
        raise ValueError(f"--steps-budget must be integers separated by commas, got {text!r}") from None
    outside = [t for t in budgets if not 1 <= t <= MAX_COUNT]
    if outside:
        raise ValueError(f"--steps-budget {text}: {outside[0]} is outside 1..{MAX_COUNT}, the budgets the learned "
                         "sampler takes")
    return budgets


def main(args) -> None:
    domain = get_domain(args.domain)
    budgets = () if args.steps_budget is None else steps_budgets(args.steps_budget)  # (): derived from the states
    cfg = from_options(OrderTrainConfig, args, [f.name for f in group_fields(TRAIN_OPTIONS)], budgets=budgets)
    if args.init is not None:
        load_nets(args.init)  # fails before the data are built
        trained = other_domain(args.init, domain)
        if trained is not None:
            raise ValueError(f"--init {args.init} is a selector trained on {trained.cli_name}, not "
                             f"{domain.cli_name}: start from a {domain.cli_name} selector, or from none")
    device = distributed.setup(pick_device(args.device, args.threads))
    say = (lambda m: print(m, file=sys.stderr)) if distributed.is_main() else (lambda m: None)
    cfg = replace(cfg, bf16=use_bf16(cfg.bf16, device, say))
    beside = tuple(f"{part}{last}.{ext}" for part in ("", "_posterior", "_denoiser") for last in ("", "_last")
                   for ext in ("safetensors", "json") if part or last)  # the selector's best is --out itself
    if args.resume:  # the run's own files are continued, its checkpoint read (and its settings checked) first
        if args.out is None:
            raise ValueError("--resume needs the --out of the run to continue")
        out = check_writable(args.out)  # before the data are built and the run goes on: it writes beside --out
        log_path = check_writable(args.log or out.with_name(out.stem + "_log.jsonl"), "--log")
        model_file = args.model if args.model is not None and Path(args.model).is_file() else None  # else: run() checks
        resume_state(out, args, device, model_file)
    else:
        out = check_weights_output(args.out or default_run_path(f"{domain.cli_name}_order_selector"), args.force,
                                   beside + (".ckpt",) + (() if args.log else ("_log.jsonl",)))
        log_path = check_output(args.log, args.force, "--log", in_place=True) or out.with_name(out.stem + "_log.jsonl")
    if any(log_path.resolve() == out.with_name(out.stem + tail).resolve() for tail in (".json", ".ckpt", *beside)):
        raise ValueError(f"--log {log_path} is a file this run writes beside --out {out}: give the log another name")
    with run_lock(out):  # a second run of this --out, begun before the first wrote a file, stops here
        domain.part("order_task").run(args, cfg, args.model, out, log_path, device)
    distributed.teardown()

