"""The MDM trainer of every domain: ``python -m mi_core train DOMAIN [options]`` (``train DOMAIN --help`` lists
the domain's options; weights go to ``runs/<domain>_mdm_<time>.safetensors`` unless ``--out`` is given).

One loop serves all domains: masked-diffusion cross-entropy over the positions a batch scores (a plain
mean, no 1/t weighting), AdamW with warm-up and cosine decay by steps or by elapsed time, bf16 autocast,
gradient clipping, and DistributedDataParallel under torchrun (rank 0 validates and writes). The best
weights by validation go to ``--out``, the latest to ``<out>_last``, and a checkpoint ``<out>.ckpt`` lets
``--resume`` continue a stopped run as if it had not stopped.

A domain's trainer (``Domain.trainer``) is a *task* class: its model and training configs (each field is
a command-line option), how a model is built, its batches, its validation and the validation figure that
picks the best weights.
"""

from __future__ import annotations

import copy
import json
import math
import sys
import time
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path

import torch

from mi_core.device import bf16_autocast, pick_device, use_bf16
from mi_core.domain import Domain, get_domain
from mi_core.io import (
    check_weights_output,
    check_writable,
    default_run_path,
    note_checkpoint,
    read_checkpoint,
    run_lock,
    write_checkpoint,
)
from mi_core.models.base import masked_ce
from mi_core.options import SEED_MAX, Device, Force, from_options, option
from mi_core.scale import distributed


@dataclass(frozen=True)
class LoopConfig:
    """What :func:`train`'s loop reads of a trainer task's ``train_config``, which extends it (its own defaults with
    :func:`~mi_core.options.redefault`, then the fields of its data)."""

    seed: int = option(0, "random seed", range=(0, SEED_MAX))
    steps: int = option(20000, "optimizer steps: the run and its cosine end there (with --time-budget, at whichever "
                        "comes first)", range=(1, 1_000_000_000))
    batch: int = option(64, "examples per step", range=(1, 65536))
    lr: float = option(1e-3, "peak learning rate (AdamW)", range=(1e-12, 10))
    warmup: int = option(100, "steps of linear warm-up", range=(0, 1_000_000_000))
    weight_decay: float = option(0.01, "AdamW weight decay", range=(0, 10))
    clip: float = option(1.0, "gradient-norm clip (0: none)", range=(0, 1e6))
    eval_every: int = option(500, "steps between validations", range=(1, 1_000_000_000))
    log_every: int = option(500, "steps between log lines", range=(1, 1_000_000_000))
    bf16: bool = option(True, "bf16 autocast where it is fast (CUDA or a CPU with native bf16; elsewhere fp32)",
                        negatable=True)
    time_budget: float = option(0.0, "seconds; > 0 runs the schedule by elapsed time and stops when it is spent, or at "
                                "--steps if sooner (give a large --steps to train by time alone)", range=(0, 1e8))


RESUMABLE = ("steps", "time_budget")  # settings a resumed run may change (it runs longer or shorter)


def progress(step: int, elapsed: float, cfg) -> float:
    """Fraction of the run done: by steps, or by time when a time budget is set (whichever is further)."""
    frac = step / cfg.steps
    return max(frac, elapsed / cfg.time_budget) if cfg.time_budget > 0 else frac


def lr_at(step: int, frac: float, cfg) -> float:
    """Linear warm-up over ``cfg.warmup`` steps, then cosine decay to 5% of the peak at ``frac = 1``."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    return cfg.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))


BESIDE = ("_last.safetensors", "_last.json", ".ckpt")  # what a run writes beside its --out


def checkpoint_path(out: Path) -> Path:
    return out.with_suffix(".ckpt")


def save_checkpoint(path: Path, model, opt, task, step: int, elapsed: float, curve: list, best: float,
                    ema=None, cpu: float = 0.0, stretch: int = 1, cpu_clock: bool = False,
                    default_out: Path | None = None) -> None:
    state = {"model": model.state_dict(), "opt": opt.state_dict(), "task": task.state_dict(),
             "torch_rng": torch.get_rng_state(), "step": step, "elapsed": elapsed, "best": best,
             "cpu_seconds": cpu, "stretch": stretch, "trainer": task.name, "cpu_clock": cpu_clock,
             "curve": json.dumps(curve), "cfg": json.dumps(asdict(task.cfg)), "model_cfg": json.dumps(asdict(model.cfg))}
    if ema is not None:
        state["ema"] = ema.model.state_dict()
    write_checkpoint(path, state, f"step {step}", default_out)


class EMA:
    """An exponential moving average of a model's floating-point weights (``decay`` per step)."""

    def __init__(self, model, decay: float):
        self.decay = decay
        self.model = copy.deepcopy(model).eval().requires_grad_(False)

    @torch.no_grad()
    def update(self, model) -> None:
        for mine, theirs in zip(self.model.state_dict().values(), model.state_dict().values()):
            if mine.is_floating_point():
                mine.lerp_(theirs, 1 - self.decay)


def optimizer(model, cfg) -> torch.optim.Optimizer:
    """AdamW; parameters named in ``model.lr_scales`` (name -> factor) learn at that multiple of the rate."""
    scales = getattr(model, "lr_scales", {})
    plain = [p for n, p in model.named_parameters() if n not in scales]
    groups = [{"params": plain, "lr_scale": 1.0}]
    groups += [{"params": [p], "lr_scale": scales[n], "weight_decay": 0.0} for n, p in model.named_parameters() if n in scales]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.98), weight_decay=cfg.weight_decay)


CHECKPOINT_KEYS = ("model", "opt", "torch_rng", "step", "elapsed", "best", "curve", "cfg", "model_cfg")


def _resume(ckpt: Path, device, model, opt, task, ema, log) -> tuple:
    """Load the checkpoint ``ckpt`` into the run; its ``(step, elapsed, best, curve, cpu seconds, stretch)``, the
    stretch counting this one."""
    state = read_checkpoint(ckpt, CHECKPOINT_KEYS, device)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    if ema is not None:
        ema.model.load_state_dict(state.get("ema", state["model"]))
    torch.set_rng_state(state["torch_rng"].cpu())  # dropout draws from the global generator
    task.load_state_dict(state.get("task", state), state["step"])
    log(f"resumed {ckpt} at step {state['step']} ({state['elapsed']:.0f}s trained, stretch {state.get('stretch', 1)})")
    note_checkpoint(ckpt, f"step {state['step']}")
    return (state["step"], state["elapsed"], state["best"], json.loads(state["curve"]),
            float(state.get("cpu_seconds", state["elapsed"])), int(state.get("stretch", 1)) + 1)


def train(task, out: Path, device: torch.device, log=print, resume: bool = False, stop_after: int = 0,
          checkpoint_every: float = 0.0, cpu_clock: bool = False, out_given: bool = True) -> dict:
    """Train (or continue) ``task``'s run writing ``out`` (best by validation), ``<out>_last`` and ``<out>.ckpt``.

    ``stop_after`` > 0 stops after that many steps of this call; ``checkpoint_every`` > 0 also writes the
    checkpoint every that many seconds. ``cpu_clock``: the time budget counts this process's CPU seconds over
    every stretch (a resumed run is stretch 2, ...), not wall seconds. With ``cfg.ema`` > 0 the validated and
    saved weights are the EMA of the trained ones. ``out_given``: the command named ``out`` (else a stopped run's
    line names it, as ``--resume`` needs it).
    """
    cfg = task.cfg
    torch.manual_seed(cfg.seed)
    model = task.build_model(fresh=resume).to(device).train()  # a resumed run loads its checkpoint below
    opt = optimizer(model, cfg)
    ema = EMA(model, cfg.ema) if getattr(cfg, "ema", 0) else None
    step, elapsed0, curve, cpu0, stretch = 0, 0.0, [], 0.0, 1
    best = float("-inf") if task.higher else float("inf")
    ckpt = checkpoint_path(out)
    if resume:
        step, elapsed0, best, curve, cpu0, stretch = _resume(ckpt, device, model, opt, task, ema, log)
    autocast = bf16_autocast(device, use_bf16(cfg.bf16, device, log))
    start, cpu_start, saved_at = time.time() - elapsed0, time.process_time(), time.time()
    loss_sum, loss_count, steps_here = torch.zeros((), device=device), 0, 0
    net = distributed.wrap(model)

    def clock() -> float:
        return cpu0 + time.process_time() - cpu_start if cpu_clock else time.time() - start

    # the loop ends only at a step it has validated and checkpointed: a budget that runs out while a step is logged
    # (after ``finished`` was read) costs one more step, never the steps since the last validation
    finished = distributed.from_main(progress(step, clock(), cfg)) >= 1  # a resumed run that had ended
    while not finished:
        frac = distributed.from_main(progress(step, clock(), cfg))
        task.before_step(model, step)
        lr = lr_at(step, frac, cfg)
        loss = _update(task, net, model, opt, ema, lr, autocast)
        loss_sum += loss.detach()
        loss_count += 1
        step += 1
        steps_here += 1
        finished = distributed.from_main(progress(step, clock(), cfg)) >= 1 or steps_here == stop_after
        evaluate = (step % cfg.eval_every == 0 or finished) and distributed.is_main()  # rank 0 validates, writes
        if step % cfg.log_every == 0 or step % cfg.eval_every == 0 or finished:
            point = {"step": step, "examples": step * cfg.batch, "seconds": round(time.time() - start, 1),
                     "cpu_seconds": round(cpu0 + time.process_time() - cpu_start, 1), "stretch": stretch,
                     "train_loss": loss_sum.item() / loss_count, "lr": lr, **task.point()}
            loss_sum.zero_()
            loss_count = 0
            if evaluate:
                best = _validate_and_save(task, ema.model if ema else model, out, point, curve, best, step)
            curve.append(point)
            log(json.dumps(point))
        if evaluate or (checkpoint_every and time.time() - saved_at > checkpoint_every and distributed.is_main()):
            spent = cpu0 + time.process_time() - cpu_start  # the validation's seconds too, as the clock counts them
            save_checkpoint(ckpt, model, opt, task, step, time.time() - start, curve, best, ema, spent, stretch,
                            cpu_clock, default_out=None if out_given else out)
            saved_at = time.time()
        if step % cfg.eval_every == 0 and not finished:  # a validation may spend the rest: stop at this saved step
            finished = distributed.from_main(progress(step, clock(), cfg)) >= 1
    return {"params": model.num_params(), "curve": curve, f"best_{task.best_key}": best, "step": step}


def _update(task, net, model, opt, ema, lr: float, autocast) -> torch.Tensor:
    for group in opt.param_groups:
        group["lr"] = lr * group.get("lr_scale", 1.0)
    inputs, values, scored = task.batch()
    with autocast:
        if hasattr(task, "loss"):  # e.g. deep supervision over a recurrent model's iterations
            loss = task.loss(net, inputs, values, scored)
        else:
            loss = masked_ce(net(inputs).logits, values, scored)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if task.cfg.clip > 0:  # 0: no clipping (a max norm of 0 would zero every gradient)
        torch.nn.utils.clip_grad_norm_(model.parameters(), task.cfg.clip)
    opt.step()
    if ema is not None:
        ema.update(model)
    return loss


def _validate_and_save(task, model, out: Path, point: dict, curve: list, best: float, step: int) -> float:
    """Validate ``model`` into ``point``, write ``<out>_last`` and, when it is the best so far, ``out``."""
    point.update(task.validate(model))
    summary = {"train": asdict(task.cfg), "params": model.num_params(), **task.summary(), "curve": curve + [point]}
    task.save(model, out.with_name(out.stem + "_last.safetensors"), summary)
    score = point.get(task.best_key, 0.0)
    if (score >= best) if task.higher else (score <= best):
        best = score
        task.save(model, out, {**summary, "best_step": step})
    return best


def resume_configs(task_cls, out: Path, given: dict, cpu_clock: bool = False) -> tuple:
    """The model and training configs a run at ``out`` was started with, and what its task recorded of it (the text
    entries of its checkpoint's task state: the options and data files it ran with, for the task to check before it
    builds its data); a ``given`` option that differs is refused, except those in :data:`RESUMABLE`, and so is a
    checkpoint of another task or clock (``cpu_clock``: this stretch's ``--cpu-clock``)."""
    path = checkpoint_path(out)
    if not path.is_file():
        raise ValueError(f"--resume: no checkpoint {path} to continue")
    state = read_checkpoint(path, CHECKPOINT_KEYS)
    model_cfg, run = json.loads(state["model_cfg"]), json.loads(state["cfg"])
    trainer = state.get("trainer")  # older checkpoints: none recorded, their configs' fields tell
    foreign = sorted(set(model_cfg) - set(task_cls.model_config.__dataclass_fields__))
    if trainer not in (None, task_cls.name):
        raise ValueError(f"--resume: {path} is the checkpoint of a {trainer} run, not of {task_cls.name}")
    if foreign:
        raise ValueError(f"--resume: {path} holds a model with settings {task_cls.name} does not take "
                         f"({', '.join(foreign)}): another kind of model, or one of another version")
    if "cpu_clock" in state and bool(state["cpu_clock"]) != cpu_clock:
        raise ValueError("--resume: this run's --time-budget counts " + ("CPU seconds: give --cpu-clock" if
                         state["cpu_clock"] else "wall seconds: leave out --cpu-clock") + " (its schedule goes on "
                         "from the seconds it has spent)")
    defaults = {f.name: f.default for f in fields(task_cls.model_config) if f.default is not MISSING}
    for name, value in {**defaults, **model_cfg, **run}.items():  # a field newer than the checkpoint: its default
        if name in given and given[name] != value and name not in RESUMABLE:
            flag = "--" + name.replace("_", "-")
            its = "none (it was left out)" if value in ("", None) else value  # an empty --init printed as nothing
            raise ValueError(f"--resume continues the run's own settings: {flag} {given[name]} differs from its {its}")
    run.update({k: given[k] for k in RESUMABLE if k in given})
    task_state = state.get("task")
    recorded = {k: v for k, v in task_state.items() if isinstance(v, str)} if isinstance(task_state, dict) else {}
    return task_cls.model_config(**model_cfg), task_cls.train_config(**run), recorded


@dataclass
class TrainRun:
    out: Path | None = option(None, "weights (+ .json config beside them); default runs/<domain>_mdm_<date-time>"
                              ".safetensors")
    resume: bool = option(False, "continue the run from <out>.ckpt")
    checkpoint_minutes: float = option(0.0, "also write <out>.ckpt every this many minutes between validations "
                                       "(0: at validations only)", range=(0, 10**6))
    cpu_clock: bool = option(False, "--time-budget counts the process's CPU seconds over all stretches, not wall "
                             "seconds")


# why a domain serves() refuses cannot run this command (the command line says it)
UNSERVED = "has no trainer (a Domain's trainer)"


def serves(domain: Domain) -> bool:
    return domain.trainer is not None


def describe(domain: Domain) -> str:
    return f"{sys.modules[domain.trainer.__module__].__doc__}\n\n{__doc__}"


def options(domain: Domain) -> list:
    task_cls = domain.part("trainer")
    return [TrainRun, Force, Device, task_cls.options, task_cls.model_config, task_cls.train_config]


def main(namespace) -> int:
    task_cls = get_domain(namespace.domain).part("trainer")
    args = {k: v for k, v in vars(namespace).items() if k not in ("domain", "argv")}
    force = args.pop("force")
    given = {k: args[k] for k in args.pop("given", ()) if k in args}
    args["given"] = frozenset(given)  # the options named on the command line (a task may check their pairing)
    if args["resume"]:
        if args["out"] is None:
            raise ValueError("--resume needs the --out of the run to continue")
        check_writable(args["out"])  # before the pools are built and the run goes on: it writes beside --out
        model_cfg, cfg, args["recorded"] = resume_configs(task_cls, args["out"], given, args["cpu_clock"])
    else:
        args["out"] = check_weights_output(args["out"] or default_run_path(task_cls.name), force, BESIDE)
        model_cfg = from_options(task_cls.model_config, args)
        args["model_given"] = {k: v for k, v in given.items() if k in task_cls.model_config.__dataclass_fields__}
        cfg = from_options(task_cls.train_config, args)
    with run_lock(args["out"]):  # a second run of this --out, begun before the first wrote a file, stops here
        return _run(task_cls, model_cfg, cfg, args, given)


def _run(task_cls, model_cfg, cfg, args: dict, given: dict) -> int:
    device = distributed.setup(pick_device(args["device"], args["threads"]))
    main_rank = distributed.is_main()
    log = (lambda m: print(m, flush=True)) if main_rank else (lambda m: None)
    task = task_cls(model_cfg, cfg, device, args, log)
    result = train(task, args["out"], device, log=log, resume=args["resume"],
                   checkpoint_every=60 * args["checkpoint_minutes"], cpu_clock=args["cpu_clock"],
                   out_given="out" in given)
    key = f"best_{task.best_key}"
    del task  # its DDP model holds the process group: teardown frees it before the group goes
    distributed.teardown()
    if main_rank:
        print(json.dumps({key: result[key], "params": result["params"], "step": result["step"]}))
    return 0
