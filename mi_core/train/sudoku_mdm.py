"""Train the Sudoku MDM: ``python -m mi_core train sudoku --out runs/sudoku_mdm/model.safetensors ...``.

Masked-diffusion cross-entropy on masked cells (plain mean, no 1/t weighting: it trained faster here),
AdamW with warm-up and cosine decay, bf16 autocast. Data (``mi_core.train.sudoku_data``): cached pools of
solved grids and graded puzzles (hard ones drawn more often), on-policy states from the model's own
sequential decoding, all held and transformed on the device. The loss is read back every ``log_every``
steps only. A periodic validation decodes held-out generated puzzles (graded like the training ones)
sequentially. ``--resume`` continues a run from ``<out>.ckpt`` (model, optimiser, step, elapsed time,
the random generator and the on-policy buffer), so a stopped run goes on as if it had not stopped;
``--init`` starts from another model's weights.
"""

from __future__ import annotations

import argparse
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
from mi_core.models.sudoku_mdm import SudokuMDM, SudokuMDMConfig, load_sudoku_mdm, masked_ce, save_sudoku_mdm
from mi_core.options import ArgumentParser, add_force
from mi_core.scale import distributed
from mi_core.train.onpolicy import onpolicy_states
from mi_core.train.schedule import lr_at, progress
from mi_core.train.sudoku_data import POOL_DIR, DeviceBatches, PoolSpec, build_graded_pool, load_or_build_pools

# ranges of this trainer's own options (the shared ones are in mi_core.options.RANGES)
TRAIN_RANGES = {"max_harden": (0, 100_000), "hard_power": (0, 10), "onpolicy_frac": (0, 1), "onpolicy_every": (0, 10**9),
                "onpolicy_puzzles": (1, 100_000), "onpolicy_per_puzzle": (1, 1000), "log_every": (1, 10**9),
                "loops": (1, 64), "eval_puzzles": (0, 10_000_000)}


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
    puzzle_pool: int = 4000
    max_harden: int = 500  # hill-climb moves towards hard puzzles, drawn per puzzle from 0..max_harden
    hard_power: float = 1.0  # puzzle weight (1 + grade) ** hard_power
    puzzle_frac: float = 0.4
    onpolicy_frac: float = 0.2
    onpolicy_every: int = 100  # steps between on-policy collections (0: none)
    onpolicy_puzzles: int = 128
    onpolicy_per_puzzle: int = 4
    eval_every: int = 500
    eval_puzzles: int = 200
    log_every: int = 50
    bf16: bool = True
    time_budget: float = 0.0  # seconds; > 0 runs the schedule by elapsed time and stops when it is spent

    def __post_init__(self):
        for name in ("puzzle_frac", "onpolicy_frac"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.puzzle_frac + self.onpolicy_frac > 1:
            raise ValueError("puzzle_frac + onpolicy_frac must be at most 1")
        if min(self.steps, self.batch, self.grid_pool, self.puzzle_pool, self.eval_every, self.log_every) < 1:
            raise ValueError("steps, batch, grid_pool, puzzle_pool, eval_every and log_every must be positive")
        if min(self.max_harden, self.onpolicy_every, self.eval_puzzles, self.hard_power, self.time_budget) < 0:
            raise ValueError("max_harden, onpolicy_every, eval_puzzles, hard_power and time_budget must be >= 0")

    def pool_spec(self) -> PoolSpec:
        return PoolSpec(self.seed, self.grid_pool, self.puzzle_pool, self.max_harden)


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


def checkpoint_path(out: Path) -> Path:
    return out.with_suffix(".ckpt")


def _save_checkpoint(path: Path, model, opt, data: DeviceBatches, gen: torch.Generator, step: int, elapsed: float,
                     curve: list, best: float, cfg: TrainConfig) -> None:
    state = {"model": model.state_dict(), "opt": opt.state_dict(), "data": data.state_dict(), "gen": gen.get_state(),
             "torch_rng": torch.get_rng_state(),
             "step": step, "elapsed": elapsed, "best": best, "curve": json.dumps(curve), "cfg": json.dumps(asdict(cfg)),
             "model_cfg": json.dumps(asdict(model.cfg))}
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    tmp.replace(path)


def _collect(model, data: DeviceBatches, cfg: TrainConfig, gen: torch.Generator) -> float:
    """Add on-policy states from ``cfg.onpolicy_puzzles`` hard-weighted pool puzzles; their solve rate."""
    puzzles, solutions = data.sample_puzzles(cfg.onpolicy_puzzles, gen)
    states, sols, solved = onpolicy_states(model, puzzles, solutions, cfg.onpolicy_per_puzzle, gen, cfg.bf16)
    data.add_states(states, sols)
    return solved.float().mean()


def train(model_cfg: SudokuMDMConfig, cfg: TrainConfig, out: Path, device: torch.device, log=print,
          init: Path | None = None, resume: bool = False, exclude: set[str] = frozenset(), stop_after: int = 0,
          pool_dir: Path = POOL_DIR) -> dict:
    """Train (or continue) a run writing ``out`` (best by validation), ``<out>_last`` and ``<out>.ckpt``.

    ``stop_after`` > 0 stops after that many steps of this call (to test resuming).
    """
    torch.manual_seed(cfg.seed)
    t0 = time.time()
    with distributed.main_first():  # under torchrun rank 0 builds the cached pools, the others read them
        pools = load_or_build_pools(cfg.pool_spec(), root=pool_dir, exclude=exclude, log=log)
    val_puz, _ = build_graded_pool(10_000 + cfg.seed, cfg.eval_puzzles, cfg.max_harden, workers=1) if cfg.eval_puzzles else (None, None)
    log(f"pools ready in {time.time() - t0:.0f}s: {len(pools['grids'])} grids, {len(pools['puzzles'])} puzzles "
        f"(grade median {np.median(pools['grades']):.0f}), {cfg.eval_puzzles} validation")
    model = (load_sudoku_mdm(init) if init else SudokuMDM(model_cfg)).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.98), weight_decay=cfg.weight_decay)
    data = DeviceBatches(pools, device, cfg.puzzle_frac, cfg.onpolicy_frac, cfg.hard_power)
    gen = torch.Generator(device=device).manual_seed(distributed.rank_seed(cfg.seed))  # each rank its own data
    step, elapsed0, curve, best = 0, 0.0, [], -1.0
    ckpt = checkpoint_path(out)
    if resume:
        state = torch.load(ckpt, map_location=device, weights_only=True)
        model = SudokuMDM(SudokuMDMConfig(**json.loads(state["model_cfg"]))).to(device).train()
        model.load_state_dict(state["model"])
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.98), weight_decay=cfg.weight_decay)
        opt.load_state_dict(state["opt"])
        data.load_state_dict(state["data"])
        gen.set_state(state["gen"].cpu())  # generator states are CPU byte tensors on every device
        torch.set_rng_state(state["torch_rng"].cpu())  # dropout draws from the global generator
        step, elapsed0, best, curve = state["step"], state["elapsed"], state["best"], json.loads(state["curve"])
        if not distributed.is_main():  # the checkpoint holds rank 0's generator: the others draw afresh
            gen.manual_seed(distributed.rank_seed(cfg.seed + step))
        log(f"resumed {ckpt} at step {step} ({elapsed0:.0f}s trained)")
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if cfg.bf16 else contextlib.nullcontext()
    start = time.time() - elapsed0
    loss_sum, loss_count, onpolicy_solved, steps_here = torch.zeros((), device=device), 0, [], 0
    net = distributed.wrap(model)  # DistributedDataParallel under torchrun
    while (frac := distributed.from_main(progress(step, time.time() - start, cfg))) < 1:
        if cfg.onpolicy_every and cfg.onpolicy_frac and step % cfg.onpolicy_every == 0:
            onpolicy_solved.append(_collect(model, data, cfg, gen))
        lr = lr_at(step, frac, cfg)
        for group in opt.param_groups:
            group["lr"] = lr
        inputs, targets = data.sample(cfg.batch, gen)
        with autocast:
            logits = net(inputs).logits
        loss = masked_ce(logits, targets - 1, inputs == model.mask_id)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        opt.step()
        loss_sum += loss.detach()
        loss_count += 1
        step += 1
        steps_here += 1
        finished = distributed.from_main(progress(step, time.time() - start, cfg)) >= 1 or steps_here == stop_after
        if step % cfg.log_every == 0 or step % cfg.eval_every == 0 or finished:
            point = {"step": step, "examples": step * cfg.batch, "seconds": round(time.time() - start, 1),
                     "train_loss": loss_sum.item() / loss_count, "lr": lr}
            if onpolicy_solved:
                point["onpolicy_solved"] = round(torch.stack(onpolicy_solved).mean().item(), 4)
            loss_sum.zero_()
            loss_count = 0
            onpolicy_solved = []
            if (step % cfg.eval_every == 0 or finished) and distributed.is_main():  # rank 0 validates, writes
                if val_puz is not None:
                    point.update(validate(model, val_puz, device))
                summary = {"train": asdict(cfg), "params": model.num_params(), "init": str(init) if init else None,
                           "curve": curve + [point]}
                save_sudoku_mdm(model, out.with_name(out.stem + "_last.safetensors"), summary)
                if point.get("val_accuracy", 0.0) >= best:
                    best = point.get("val_accuracy", 0.0)
                    save_sudoku_mdm(model, out, summary)
            curve.append(point)
            log(json.dumps(point))
            if (step % cfg.eval_every == 0 or finished) and distributed.is_main():
                _save_checkpoint(ckpt, model, opt, data, gen, step, time.time() - start, curve, best, cfg)
        if finished and steps_here == stop_after:
            break
    return {"params": model.num_params(), "curve": curve, "best_val_accuracy": best, "step": step}


RESUMABLE = ("steps", "time_budget")  # settings a resumed run may change (it runs longer or shorter)


def resume_configs(out: Path, given: dict, defaults: dict) -> tuple[SudokuMDMConfig, TrainConfig]:
    """The model and training configs a run at ``out`` was started with, for ``--resume``.

    ``given``/``defaults``: the parsed options and the parser's defaults. A setting given on the command
    line that differs from the run's own is refused (except ``steps`` and ``time_budget``).
    """
    path = checkpoint_path(out)
    if not path.is_file():
        raise ValueError(f"--resume: no checkpoint {path} to continue")
    state = torch.load(path, map_location="cpu", weights_only=True)
    saved = {**json.loads(state["model_cfg"]), **json.loads(state["cfg"])}
    for name, value in saved.items():
        if name in given and given[name] != defaults[name] and given[name] != value and name not in RESUMABLE:
            flag = "--" + name.replace("_", "-")
            raise ValueError(f"--resume continues the run's own settings: {flag} {given[name]} differs from its {value}")
    model_cfg = SudokuMDMConfig(**json.loads(state["model_cfg"]))
    run = json.loads(state["cfg"])
    run.update({k: given[k] for k in RESUMABLE if given[k] != defaults[k]})
    return model_cfg, TrainConfig(**run)


def _read_exclude(paths: list[Path]) -> set[str]:
    """Puzzle strings (0 for blank) of every evaluation file given, never to be trained on."""
    from mi_core.domains.sudoku import read_puzzles

    return {"".join("0" if c in ".0" else c for c in rec.puzzle) for p in paths for rec in read_puzzles(p)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``train sudoku``."""
    parser.add_argument("--out", type=Path, default=None,
                        help="weights (+ .json config beside them); default runs/sudoku_mdm_<date-time>.safetensors")
    add_force(parser)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    parser.add_argument("--init", type=Path, help="start from this model's weights (its own config)")
    parser.add_argument("--resume", action="store_true", help="continue the run from <out>.ckpt")
    parser.add_argument("--pool-dir", type=Path, default=POOL_DIR, help="where data pools are cached (default %(default)s)")
    parser.add_argument("--exclude", type=Path, action="append", default=[],
                        help="puzzle files (evaluation sets) whose puzzles must not be trained on; repeatable")
    for f in list(SudokuMDMConfig.__dataclass_fields__.values()) + list(TrainConfig.__dataclass_fields__.values()):
        kind = type(f.default)
        if kind is bool:
            parser.add_argument(f"--{f.name.replace('_', '-')}", action=argparse.BooleanOptionalAction, default=f.default)
        else:
            parser.add_argument(f"--{f.name.replace('_', '-')}", type=kind, default=f.default, bounds=TRAIN_RANGES.get(f.name))


def main(argv: list[str] | None = None) -> None:
    parser = ArgumentParser(prog="python -m mi_core train sudoku", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    run(parser.parse_args(argv), parser)


def run(namespace: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """``train sudoku`` with its parsed options (``parser``: the one that parsed them, for its defaults)."""
    args = {k: v for k, v in vars(namespace).items() if k != "domain"}
    force = args.pop("force")
    if args["resume"]:
        if args["out"] is None:
            raise ValueError("--resume needs the --out of the run to continue")
    else:
        args["out"] = check_output(args["out"] or default_run_path("sudoku_mdm"), force, "--out")
    if args["threads"]:
        # on a shared 2-core machine one thread is far faster than two that wait on each other
        torch.set_num_threads(args["threads"])
    if args["resume"]:
        model_cfg, cfg = resume_configs(args["out"], args, {a.dest: a.default for a in parser._actions})
    else:
        model_cfg = SudokuMDMConfig(**{k: args[k] for k in SudokuMDMConfig.__dataclass_fields__})
        cfg = TrainConfig(**{k: args[k] for k in TrainConfig.__dataclass_fields__})
    device = distributed.setup(pick_device(args["device"]))  # joins the process group under torchrun
    result = train(model_cfg, cfg, args["out"], device, log=lambda m: print(m, flush=True) if distributed.is_main() else None,
                   init=args["init"], resume=args["resume"], exclude=_read_exclude(args["exclude"]),
                   pool_dir=args["pool_dir"])
    main_rank = distributed.is_main()
    distributed.teardown()
    if main_rank:
        print(json.dumps({"best_val_accuracy": result["best_val_accuracy"], "params": result["params"], "step": result["step"]}))


if __name__ == "__main__":
    main()
