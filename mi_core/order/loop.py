"""The order trainer's loop, shared by every domain: the ELBO updates (:func:`train_order`), validation
against ``top_margin`` (:func:`make_validator`) and :class:`OrderTask`, which runs both with a log and checkpoints."""

from __future__ import annotations

import json
import os
import sys
import time
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch

from mi_core.decoding.budgets import fit_budgets
from mi_core.decoding.selector import check_order_net_fits, load_order_net, make_order_nets, save_order_net
from mi_core.io import display_path, file_sha256, line_log, note_checkpoint, read_checkpoint, write_checkpoint
from mi_core.models.base import MaskedLM
from mi_core.options import check_ranges, option
from mi_core.options import seed as seed_option
from mi_core.order.elbo import order_loss, rollout
from mi_core.scale import distributed

RESUMABLE = ("updates", "time_budget")  # settings a resumed run may change (it runs longer or shorter)
NOT_SETTINGS = ("out", "log", "force", "resume", "device", "threads", "argv", "given")  # where and how, not what
STATE_KEYS = ("update", "elapsed", "curve", "posterior", "selector", "opt", "rng", "gen", "torch_rng", "best",
              "settings")


def checkpoint_path(out: Path) -> Path:
    """The checkpoint that ``--resume`` continues: ``<out>.ckpt``."""
    return out.with_suffix(".ckpt")


def input_files(args) -> dict[str, str]:
    """sha256 of each data file a setting names (a ``--pool-file``, ``--fasta``, ``--csv`` ...): a file changed under
    its name since a stop is another run's data, as a retrained ``--model`` (checked on its own) is another run's
    model. ``--init`` is left out: a resumed run's weights are its checkpoint's."""
    skip = {*NOT_SETTINGS, "model", "init"}
    named = {k: v for k, v in vars(args).items() if k not in skip and isinstance(v, (str, Path)) and str(v)}
    return {k: file_sha256(v) for k, v in sorted(named.items()) if Path(v).suffix and Path(v).is_file()}


def run_settings(args) -> dict:
    """The options that decide what a run computes (JSON-ready), which ``--resume`` must give alike."""
    return json.loads(json.dumps({k: v for k, v in sorted(vars(args).items()) if k not in NOT_SETTINGS}, default=str))


def resume_state(out: Path, args, device: torch.device, model_path: Path | None = None) -> dict:
    """The checkpoint of the run at ``out``; ValueError when there is none, when it was written on another kind of
    device than ``device``, when ``args`` asks for other settings than it was started with (except
    :data:`RESUMABLE`) or when the denoiser file ``model_path`` is not the one it trained against."""
    path = checkpoint_path(out)
    if not path.is_file():
        raise ValueError(f"--resume: no checkpoint {path} to continue (a run writes it at each validation)")
    state = read_checkpoint(path, STATE_KEYS)
    check_device(state, torch.device(device), path)
    ours, theirs = run_settings(args), json.loads(state["settings"])
    for name in sorted(set(ours) | set(theirs)):
        if name not in RESUMABLE and not same_setting(getattr(args, name, None), ours.get(name), theirs.get(name)):
            typed = name == "domain"  # DOMAIN, the argument before the options, is typed, never left out
            flag = "DOMAIN" if typed else f"--{name.replace('_', '-')}"
            raise ValueError("--resume continues the run's own settings: " + (
                f"{flag} {ours.get(name)} differs from its {theirs.get(name)}"
                if typed or name in getattr(args, "given", ())
                else f"{flag} left out is {ours.get(name)}, the run's {theirs.get(name)}: give its options again"))
    ran = state.get("mdm_sha256")  # checkpoints before 2026-12-08 record none
    if model_path is not None and ran is not None and ran != file_sha256(model_path):
        raise ValueError(f"--resume: {display_path(model_path)} is not the model this run trained against (sha256 "
                         f"{ran[:12]} then, {file_sha256(model_path)[:12]} now: retrained or replaced since): "
                         "restore that file, or start a new run")
    files = input_files(args)
    for name, sha in json.loads(state.get("files_sha256") or "{}").items():  # before 2026-12-08: no record
        now = files.get(name)
        if now is not None and now != sha:
            raise ValueError(f"--resume: --{name.replace('_', '-')} {display_path(getattr(args, name))} is not the "
                             f"file this run trained on (sha256 {sha[:12]} then, {now[:12]} now: changed since): "
                             "restore it, or start a new run")
    if int(state["update"]) >= args.updates:
        raise ValueError(f"--resume: {path} is at update {int(state['update'])} already: give --updates above it to "
                         "go on")
    return state


def same_setting(value, ours, theirs) -> bool:
    """A setting given alike: the same JSON, or (a path) the same file however spelled (``./x`` and ``/abs/x``)."""
    return ours == theirs or (isinstance(value, Path) and isinstance(theirs, str)
                              and Path(theirs).resolve() == value.resolve())


def check_device(state: dict, device: torch.device, path: Path) -> None:
    """ValueError when the checkpoint was written on another kind of device than ``device``: its random streams go on
    only there (a CUDA generator's state does not fit a CPU generator, nor the other way round)."""
    written = state.get("device")  # checkpoints of 2026-12-06 record none: their generator's state tells
    if (written or device.type) != device.type or state["gen"].numel() != torch.Generator(device).get_state().numel():
        raise ValueError(f"--resume: {path} was written by a run on {written or 'another kind of device'}, whose "
                         f"random streams cannot go on on {device.type}: resume it with that run's --device")


@dataclass(frozen=True)
class OrderTrainConfig:
    seed: int = seed_option()
    updates: int = option(100_000, "optimizer updates (unless --time-budget ends them first)", range=(1, 1_000_000_000))
    batch: int = option(16, "examples per update", range=(1, 65536))
    samples: int = option(4, "posterior trajectories per example (the leave-one-out baseline needs at least 2)", range=(2, 1_000_000))
    tau: float = option(0.1, "with alpha starting at log p(x0_i | x_t): a spread-out initial schedule", range=(1e-06, 100))
    lr: float = option(1e-3, "learning rate of the selector and posterior (Adam)", range=(1e-12, 10))
    clip: float = option(1.0, "gradient-norm clip (0: none)", range=(0, 1e6))
    width: int = option(64, "hidden width of the selector and posterior heads", range=(1, 8192))
    budgets: tuple[int, ...] = ()  # empty: OrderTask.run derives them from the states (mi_core.decoding.budgets)
    bf16: bool = option(True, "bf16 autocast where it is fast (CUDA or a CPU with native bf16; elsewhere fp32)", negatable=True)
    time_budget: float = option(0.0, "seconds; > 0 stops after the update that spends it", range=(0, 1e8))
    kl_weight: float = option(1.0, "beta: weight of KL(Q || P) in the objective (1: the ELBO)", range=(1e-06, 1))
    finetune: bool = option(False, "also train the denoiser on the denoising term (joint); else it is frozen", negatable=True)
    denoiser_lr: float = option(1e-5, "learning rate of the denoiser with --finetune", range=(1e-12, 10))

    def __post_init__(self):
        if self.budgets and min(self.budgets) < 1:
            raise ValueError(f"budgets must be steps >= 1, got {self.budgets}")
        check_ranges(self)


def train_order(model, draw: Callable, cfg: OrderTrainConfig, d_model: int, *, validate: Callable | None = None,
                eval_every: int = 0, checkpoint: Callable | None = None, log=print, nets: tuple | None = None,
                resume: dict | None = None):
    """The training loop; returns ``(posterior, selector, curve)``. ``model`` is frozen unless ``cfg.finetune``
    (then trained in place, in eval mode, at ``cfg.denoiser_lr``); ``nets``: a ``(posterior, selector)`` pair
    to warm-start from (default: fresh ones for ``d_model``); ``resume``: a checkpoint's ``state`` to continue
    exactly where it was written (nets, optimizer, random streams, update count and curve).

    ``draw(rng, batch) -> (start (B, N) token ids, target (B, N) value indices)``; ``validate(selector)
    -> dict`` and ``checkpoint(posterior, selector, curve, state)`` run every ``eval_every`` updates (0: never).
    Statistics are read back from the device once per evaluation window.
    """
    if not cfg.budgets:
        raise ValueError("train_order needs cfg.budgets, the step budgets T to train at")
    device = model.device
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(distributed.rank_seed(cfg.seed))
    gen = torch.Generator(device=device).manual_seed(distributed.rank_seed(cfg.seed))
    model.eval().requires_grad_(cfg.finetune)
    posterior, selector = nets if nets is not None else make_order_nets(d_model, cfg.width)
    posterior.to(device), selector.to(device)
    opt, params = _optimizer(model, posterior, selector, cfg)
    first, curve, window, start = 0, [], [], time.time()
    if resume is not None:
        first, curve, start = _restore(resume, model, posterior, selector, opt, rng, gen, cfg)
    distributed.broadcast_parameters(params)
    for update in range(first, cfg.updates):
        steps = cfg.budgets[update % len(cfg.budgets)]
        tokens, target = (x.to(device) for x in draw(rng, cfg.batch))
        ro = rollout(model, tokens, target, posterior, selector, steps, cfg.tau, cfg.samples, gen, cfg.bf16,
                     finetune=cfg.finetune)
        loss = order_loss(ro, cfg.samples, cfg.kl_weight)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        distributed.average_gradients(params)  # not DDP: a rollout calls the nets many times
        if cfg.clip > 0:  # 0: no clipping
            torch.nn.utils.clip_grad_norm_(params, cfg.clip)
        opt.step()
        scale = ro.n_masked.clamp_min(1).float()
        window.append((steps, torch.stack([(ro.elbo / scale).mean(), (ro.kl / scale).mean(),
                                           ro.steps_used.float().mean()]).detach()))
        done = update + 1 == cfg.updates or (cfg.time_budget > 0 and distributed.from_main(time.time() - start) >= cfg.time_budget)
        if eval_every and ((update + 1) % eval_every == 0 or done) and distributed.is_main():  # rank 0 validates, writes
            point = _summary(update + 1, time.time() - start, window)
            if validate is not None:
                point.update(validate(selector))
            window = []
            curve.append(point)
            log(json.dumps(point))
            if checkpoint is not None:
                checkpoint(posterior, selector, curve, _state(update + 1, start, curve, model, posterior, selector,
                                                              opt, rng, gen, cfg))
        if done:
            break
    return posterior, selector, curve


def _optimizer(model, posterior, selector, cfg: OrderTrainConfig) -> tuple[torch.optim.Adam, list]:
    """Adam over the posterior and selector at ``cfg.lr`` (and the denoiser at ``cfg.denoiser_lr`` with
    ``cfg.finetune``), and the parameters it updates."""
    groups = [{"params": list(posterior.parameters()) + list(selector.parameters()), "lr": cfg.lr}]
    if cfg.finetune:
        groups.append({"params": list(model.parameters()), "lr": cfg.denoiser_lr})
    return torch.optim.Adam(groups), [p for g in groups for p in g["params"]]


def _state(update: int, start: float, curve: list, model, posterior, selector, opt, rng, gen,
           cfg: OrderTrainConfig) -> dict:
    """What :func:`_restore` needs to go on after ``update`` updates as if the run had not stopped."""
    state = {"update": update, "elapsed": time.time() - start, "curve": json.dumps(curve),
             "posterior": posterior.state_dict(), "selector": selector.state_dict(), "opt": opt.state_dict(),
             "rng": json.dumps(rng.bit_generator.state), "gen": gen.get_state(), "torch_rng": torch.get_rng_state(),
             "device": gen.device.type}
    if cfg.finetune:
        state["model"] = model.state_dict()
    return state


def _restore(state: dict, model, posterior, selector, opt, rng, gen, cfg: OrderTrainConfig) -> tuple:
    """Load a :func:`_state` into the run; ``(first update, curve, start time)``."""
    posterior.load_state_dict(state["posterior"])
    selector.load_state_dict(state["selector"])
    if cfg.finetune:
        model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    torch.set_rng_state(state["torch_rng"].cpu())
    if distributed.is_main():  # the checkpoint holds rank 0's streams: the others draw afresh from this update on
        rng.bit_generator.state = json.loads(state["rng"])
        gen.set_state(state["gen"].cpu())
    else:
        rng.bit_generator.state = np.random.default_rng([distributed.rank_seed(cfg.seed), state["update"]]).bit_generator.state
        gen.manual_seed(distributed.rank_seed(cfg.seed) + state["update"])
    return state["update"], json.loads(state["curve"]), time.time() - state["elapsed"]


def load_nets(selector_path: Path) -> tuple:
    """``(posterior, selector)`` from a selector checkpoint and the ``*_posterior`` file beside it."""
    if not selector_path.is_file():
        raise FileNotFoundError(f"--init: no selector at {selector_path}")
    selector = load_order_net(selector_path)  # a posterior given here is named as one, not as lacking its own
    posterior_path = selector_path.with_name(selector_path.stem + "_posterior.safetensors")
    if selector_path.stem.endswith("_last"):
        posterior_path = selector_path.with_name(selector_path.stem[:-5] + "_posterior_last.safetensors")
    if not posterior_path.is_file():
        raise FileNotFoundError(f"--init: {selector_path} has no posterior beside it ({posterior_path.name}); "
                                "training needs both")
    return load_order_net(posterior_path, role="posterior"), selector


def make_validator(budgets: tuple[int, ...], score: Callable, frozen: bool) -> Callable:
    """``validate(selector) -> dict``: per budget T, ``score(selector, T) -> (value, mean passes)`` as ``val_T``
    and ``val_passes_T``, the ``top_margin`` baseline ``score(None, T)`` as ``margin_T`` (scored once if the
    denoiser is ``frozen``), and ``val_mean``."""

    def margins() -> dict:
        return {t: score(None, t)[0] for t in budgets}
    fixed = margins() if frozen else None

    def validate(selector) -> dict:
        baseline = fixed or margins()
        out = {}
        for t in budgets:
            value, passes = score(selector, t)
            out[f"val_T{t}"] = round(value, 4)
            out[f"val_passes_T{t}"] = round(passes, 2)
            out[f"margin_T{t}"] = round(baseline[t], 4)
        out["val_mean"] = round(float(np.mean([out[f"val_T{t}"] for t in budgets])), 4)
        return out

    return validate


# what a selector's JSON records for the engine (the training config, the denoiser, the curve): a task's record of
# its data may not replace them (a sequence task counts its sequences as "train"; bench-order reads the trained
# budgets from the config's)
RECORD_KEYS = ("config", "train", "denoiser_frozen", "domain", "denoiser", "mdm", "mdm_sha256", "curve", "init",
               "save_id")


def run_record(domain: str, model_path: Path, info: dict, finetune: bool) -> dict:
    """What a selector's JSON records beside the training config: the domain, the denoiser (and, frozen, its
    sha256) and ``info``, the task's record of its data, whose keys that name one of :data:`RECORD_KEYS`
    are kept as ``data_KEY``."""
    record = {f"data_{k}" if k in RECORD_KEYS else k: v for k, v in info.items()}
    record.update(domain=domain, denoiser=str(model_path))
    if not finetune:  # a fine-tuned selector records its own *_denoiser* file instead
        record["mdm_sha256"] = file_sha256(model_path)
    return record


class OrderTask:
    """``Domain.order_task``: a subclass sets ``options`` (a dataclass of its flags) and ``domain``, and gives
    :meth:`load`, :meth:`save_denoiser` and :meth:`data`; it may set ``budgets``, the step budgets T that
    ``train-order`` and ``bench-order`` take by default (empty: derived from the states' positions,
    :func:`~mi_core.decoding.budgets.derived_budgets`), and give :meth:`positions`, the n of the states that
    ``positions_of`` names in the budgets' notes."""

    options: type
    domain: str
    budgets: tuple[int, ...] = ()
    positions_of: str = "the longest start state"

    @abstractmethod
    def load(self, path: Path, device) -> MaskedLM:
        """The denoiser the selector learns orders for."""
        raise NotImplementedError

    @abstractmethod
    def save_denoiser(self, model: MaskedLM, path: Path, meta: dict) -> None:
        """Save the fine-tuned denoiser (``--finetune``) beside the selector."""
        raise NotImplementedError

    @abstractmethod
    def data(self, args, cfg: OrderTrainConfig, model) -> tuple[Callable, Callable, str, dict]:
        """``(draw, score, header, info)``: the batches of :func:`train_order`, the ``score`` of
        :func:`make_validator` on held-out data (``selector`` None: ``top_margin`` with ``steps=T``), a line
        describing the data and what the run records about them."""
        raise NotImplementedError

    def once(self, args, read: Callable[[], tuple]) -> tuple:
        """``read()`` kept for ``args``, so :meth:`positions` and :meth:`data` share one read of the states
        (:meth:`data` lets it go: ``self._read = None``)."""
        kept = getattr(self, "_read", None)
        if kept is None or kept[0] is not args:
            self._read = kept = (args, read())
        return kept[1]

    def positions(self, args, model: MaskedLM) -> int | None:
        """The most positions a start state of :meth:`data` has under ``args`` (default: the most the model takes;
        None: not known), against which the budgets are derived or checked."""
        try:
            return int(model.max_len)
        except (NotImplementedError, TypeError):  # a model that gives no length
            return None

    def run(self, args, cfg: OrderTrainConfig, model_path: Path, out: Path, log_path: Path, device) -> None:
        """:func:`train_order` with a JSON-lines log at ``log_path`` and checkpoints: ``out`` holds the selector
        with the best ``val_mean``, ``*_last`` the latest, ``*_posterior*`` the matching posteriors and, with
        ``cfg.finetune``, ``*_denoiser*`` the denoiser, ``<out>.ckpt`` what ``args.resume`` continues from.
        ``args.init``: a selector to warm-start from."""
        ckpt = checkpoint_path(out)
        resume = resume_state(out, args, device, model_path) if args.resume else None
        model = self.load(model_path, device)
        say = (lambda m: print(m, file=sys.stderr)) if distributed.is_main() else (lambda m: None)
        cfg = replace(cfg, budgets=fit_budgets(cfg.budgets or None, self.positions(args, model), "--steps-budget",
                                               self.positions_of, say))
        t0 = time.time()
        draw, score, header, info = self.data(args, cfg, model)
        validate = make_validator(cfg.budgets, score, frozen=not cfg.finetune)
        extra = run_record(self.domain, model_path, info, cfg.finetune)
        nets = load_nets(args.init) if args.init is not None else None
        if nets is not None:  # a warm start may come from a selector of other weights, not of another domain
            check_order_net_fits(nets[1], model, args.init, same_weights=False)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        best = [float("-inf") if resume is None else float(resume["best"])]
        # an existing log is replaced only with --force or --resume (order/train.py), which writes back the
        # points of its checkpoint; the other ranks of torchrun write none
        with line_log(log_path if distributed.is_main() else os.devnull) as write_log:
            for point in json.loads(resume["curve"]) if resume is not None else ():
                write_log(json.dumps(point))

            def log(line: str) -> None:
                if not distributed.is_main():
                    return
                print(line, flush=True)
                if line.startswith("{"):
                    write_log(line)

            def checkpoint(posterior, selector, curve, state) -> None:
                meta = {"train": asdict(cfg), "denoiser_frozen": not cfg.finetune, **extra, "curve": curve}
                if args.init is not None:
                    meta["init"] = str(args.init)
                score = curve[-1].get("val_mean", float("-inf"))
                for suffix in ("_last", "") if score >= best[0] else ("_last",):
                    paired = meta
                    if cfg.finetune:  # the selector pairs with this denoiser file, and checks it by its sha256
                        denoiser = out.with_name(out.stem + "_denoiser" + suffix + ".safetensors")
                        self.save_denoiser(model, denoiser, meta)
                        paired = {**meta, "mdm": display_path(denoiser), "mdm_sha256": file_sha256(denoiser)}
                    save_order_net(selector, out.with_name(out.stem + suffix + ".safetensors"), paired)
                    save_order_net(posterior, out.with_name(out.stem + "_posterior" + suffix + ".safetensors"), paired)
                best[0] = max(best[0], score)
                write_checkpoint(ckpt, {**state, "best": best[0], "settings": json.dumps(run_settings(args)),
                                        "mdm_sha256": file_sha256(model_path),  # --resume checks the files
                                        "files_sha256": json.dumps(input_files(args))},
                                 f"update {state['update']}", None if args.out is not None else out)

            log(f"{header} ({time.time() - t0:.0f}s); frozen denoiser {model_path}")
            if resume is not None:
                log(f"resumed {ckpt} at update {resume['update']} ({resume['elapsed']:.0f}s trained)")
                note_checkpoint(ckpt, f"update {resume['update']}")
            train_order(model, draw, cfg, model.hidden_size, validate=validate, eval_every=args.eval_every,
                        checkpoint=checkpoint, log=log, nets=nets, resume=resume)
            log(json.dumps({"done": True, "best_val_mean": best[0], "out": str(out)}))


def _summary(update: int, seconds: float, window: list[tuple]) -> dict:
    """The log point of an evaluation window: per update ``(budget T, tensor [elbo, kl, Q steps used])``, read
    back from the device in one transfer."""
    steps = np.array([t for t, _ in window])
    values = torch.stack([v for _, v in window]).double().cpu().numpy()
    point = {"update": update, "seconds": round(seconds, 1), "elbo": float(values[:, 0].mean()),
             "kl": float(values[:, 1].mean())}
    for t in sorted(set(steps.tolist())):
        rows = values[steps == t]
        point[f"elbo_T{t}"] = round(float(rows[:, 0].mean()), 4)
        point[f"q_steps_T{t}"] = round(float(rows[:, 2].mean()), 2)
    return point
