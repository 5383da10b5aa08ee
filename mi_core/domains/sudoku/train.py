"""The Sudoku task of the MDM trainer (:mod:`mi_core.train.mdm`): ``python -m mi_core train sudoku --out PATH``.

Data (``mi_core.domains.sudoku.data``): cached pools of solved grids and graded puzzles (hard ones drawn more
often), on-policy states from the model's own sequential decoding, all held and transformed on the device.
Validation decodes held-out generated puzzles (graded like the training ones) sequentially; the best
weights are those with the highest validation accuracy. ``--init`` starts from another model's weights
and shape, its loops too (``--loops``, ``--dropout``, ``--inject`` and ``--attention`` may change: the same weights
fit a looped stack);
``--exclude`` names evaluation files whose puzzles are never trained on.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from mi_core.decoding import make_strategy
from mi_core.device import use_bf16
from mi_core.domains.sudoku import read_puzzles
from mi_core.domains.sudoku.data import DeviceBatches, onpolicy_states, symmetry_views
from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig, load_sudoku_mdm, masked_ce, save_sudoku_mdm
from mi_core.domains.sudoku.order import decode_score
from mi_core.domains.sudoku.pool import POOL_DIR, PoolSpec, build_graded_pool, hardest, load_or_build_pools
from mi_core.io import check_output_dir, file_sha256, missing_file
from mi_core.models.views import Views
from mi_core.options import check_ranges, option, redefault
from mi_core.scale import distributed
from mi_core.train.mdm import LoopConfig


@dataclass(frozen=True)
class TrainConfig(LoopConfig):
    batch: int = redefault(LoopConfig, "batch", 256, "states per step")
    log_every: int = redefault(LoopConfig, "log_every", 50)
    grid_pool: int = option(20000, "solved grids generated for the data pool", range=(1, 100_000_000))
    puzzle_pool: int = option(4000, "graded puzzles generated for the data pool (unless --pool-file)", range=(1, 100_000_000))
    max_harden: int = option(500, "hill-climb moves towards hard puzzles, drawn per puzzle from 0..max_harden", range=(0, 100_000))
    hard_power: float = option(1.0, "puzzle weight (1 + grade) ** hard_power", range=(0, 10))
    puzzle_frac: float = option(0.4, "share of each batch drawn from puzzles (the rest from randomly masked grids)", range=(0, 1))
    onpolicy_frac: float = option(0.2, "share of each batch drawn from the model's own decoding states", range=(0, 1))
    onpolicy_every: int = option(100, "steps between on-policy collections (0: none)", range=(0, 1_000_000_000))
    onpolicy_puzzles: int = option(128, "puzzles decoded per on-policy collection", range=(1, 100_000))
    onpolicy_per_puzzle: int = option(4, "states kept per decoded puzzle", range=(1, 1000))
    eval_puzzles: int = option(200, "validation puzzles (0: no validation)", range=(0, 10_000_000))
    supervise: int = option(1, "deep supervision: the loss is the mean over the last this many iterations (all of "
                            "a step's when it runs fewer), at most --grad-iters", range=(1, 64))
    grad_iters: int = option(0, "iterations backpropagated through, the last ones (0: all)", range=(0, 64))
    min_loops: int = option(0, "> 0: each step runs a random number of iterations in [min_loops, loops]", range=(0, 64))
    ema: float = option(0.0, "> 0: validate and save an EMA of the weights with this decay per step", range=(0, 0.99999))

    def __post_init__(self):
        check_ranges(self)
        if self.puzzle_frac + self.onpolicy_frac > 1:
            raise ValueError("puzzle_frac + onpolicy_frac must be at most 1")
        if self.grad_iters and self.supervise > self.grad_iters:  # the loss reads the iterations with gradients
            raise ValueError(f"--supervise {self.supervise} is more than --grad-iters {self.grad_iters}: the loss "
                             "averages over iterations backpropagated through, at most --grad-iters of them")

    def pool_spec(self) -> PoolSpec:
        """The cached grid and puzzle pools this config trains on (also built by scripts/train_gpu.sh)."""
        return PoolSpec(self.seed, self.grid_pool, self.puzzle_pool, self.max_harden)


@torch.no_grad()
def validate(model: SudokuMDM, puzzles: np.ndarray, device: torch.device) -> dict:
    """Sequential-decoding accuracy on ``(P, 2, 81)`` (puzzle, solution) pairs, and masked CE."""
    model.eval()
    got = decode_score(model, puzzles, make_strategy("sequential"), bf16=False)
    tokens, solution = torch.as_tensor(puzzles[:, 0], device=device), torch.as_tensor(puzzles[:, 1], device=device)
    ce = masked_ce(model(tokens).logits, solution - 1, tokens == model.mask_id).item()
    model.train()
    return {"val_accuracy": got["accuracy"], "val_cell_accuracy": got["cell_accuracy"], "val_puzzle_ce": ce}


def _read_exclude(paths: list[Path]) -> set[str]:
    """Puzzle strings (0 for blank) of the evaluation files, never to be trained on."""
    return {rec.puzzle.replace(".", "0") for p in paths for rec in read_puzzles(p)}  # a record writes "." for blank


INIT_OVERRIDES = ("loops", "dropout", "inject", "attention")  # model options --init may change: the weights fit


def init_model(path: Path, given: dict) -> SudokuMDM:
    """The model at ``path`` with the model options given beside ``--init`` (``given``: name -> value): those
    in :data:`INIT_OVERRIDES` apply to the loaded weights, any other must equal the file's (else ValueError)."""
    model = load_sudoku_mdm(path)
    for name, value in given.items():
        if name not in INIT_OVERRIDES and getattr(model.cfg, name) != value:
            raise ValueError(f"--init {path} has {name} {getattr(model.cfg, name)}; --{name.replace('_', '-')} {value} "
                             f"cannot change it (only --{', --'.join(INIT_OVERRIDES)} apply to a warm start)")
    changes = {k: v for k, v in given.items() if k in INIT_OVERRIDES and getattr(model.cfg, k) != v}
    if not changes:
        return model
    looped = SudokuMDM(replace(model.cfg, **changes))
    missing, unexpected = looped.load_state_dict(model.state_dict(), strict=False)
    if unexpected or set(missing) - {"peer_gain"}:  # only the new peer bias may be absent; it starts at zero
        raise ValueError(f"--init {path}: its weights do not fit {changes}: missing {missing}, unexpected {unexpected}")
    return looped


def _validation(cfg: TrainConfig, val_file: Path | None, workers: int) -> np.ndarray | None:
    """``(eval_puzzles, 2, 81)`` validation pairs: the hardest of ``val_file`` by grade, else generated."""
    if not cfg.eval_puzzles:
        return None
    if val_file is None:
        return build_graded_pool(10_000 + cfg.seed, cfg.eval_puzzles, cfg.max_harden, workers=workers)[0]
    val = hardest(val_file, cfg.eval_puzzles, "--val-file")
    return val


def _without_validation(pools: dict, val: np.ndarray | None, pool_file: Path | None, log) -> dict:
    """``pools`` less the puzzles that are validation puzzles (a --val-file that shares puzzles with --pool-file)."""
    if val is None:
        return pools
    held = {p.astype(np.int64).tobytes() for p in val[:, 0]}
    keep = np.array([p.astype(np.int64).tobytes() not in held for p in pools["puzzles"][:, 0]], dtype=bool)
    if keep.all():
        return pools
    source = f"--pool-file {pool_file}" if pool_file else "the generated pool"
    if not keep.any():
        raise ValueError(f"every puzzle of {source} is a validation puzzle (--val-file): give a pool of other puzzles")
    log(f"dropped {int((~keep).sum())} puzzles of {source} that are validation puzzles: they are never trained on")
    return {**pools, "puzzles": pools["puzzles"][keep], "grades": pools["grades"][keep]}


@dataclass
class DataOptions:
    """``train sudoku``'s own options: where it starts and what it trains and validates on."""

    init: Path | None = option(None, "start from this model's weights and shape (--loops, --dropout, --inject and "
                               "--attention may differ from its own; other model options must match it)")
    pool_workers: int = option(2, "processes that build the data pools (0: one per CPU; default %(default)s)",
                               range=(0, 1024))
    pool_dir: Path = option(POOL_DIR, "where data pools are cached (default %(default)s; a --resume: the run's own)")
    pool_file: Path | None = option(None, "graded puzzles to train on (a file of grow_pool_file) instead of the "
                                    "generated --puzzle-pool")
    val_file: Path | None = option(None, "validate on the --eval-puzzles hardest puzzles (by grade) of this file of "
                                   "grow_pool_file, instead of freshly generated ones (never trained on)")
    exclude: list[Path] = option([], "puzzle files (evaluation sets) whose puzzles must not be trained on; "
                                 "repeatable", many=True)
    teacher: Path | None = option(None, "distil from this Sudoku MDM averaged over --teacher-views symmetric views "
                                  "of each state: the targets mix the solution with its probabilities (--distill)")
    teacher_views: int = option(4, "views the teacher reads each state in, the first as it is (default %(default)s)",
                                range=(1, 64))
    distill: float = option(0.5, "the teacher's share of each target, the solution's the rest (default %(default)s)",
                            range=(0, 1))


def data_files(args: dict) -> dict:
    """What a run's data are read from, by content (the same files under another path resume): ``--pool-file``,
    ``--val-file``, the ``--exclude`` set and the ``--teacher`` distilled from (a model trained again under its
    name is another teacher), as sha256 digests (None: not given)."""
    return {"pool_file": file_sha256(args["pool_file"]) if args.get("pool_file") else None,
            "val_file": file_sha256(args["val_file"]) if args.get("val_file") else None,
            "exclude": sorted(file_sha256(path) for path in args.get("exclude") or []),
            "teacher": file_sha256(args["teacher"]) if args.get("teacher") else None}


def check_data_files(args: dict) -> None:
    """Refuse a ``--pool-file``, ``--val-file`` or ``--exclude`` file that is not there or cannot be read, before
    the pools are built (minutes when they are not cached)."""
    named = [("--pool-file", args.get("pool_file")), ("--val-file", args.get("val_file")),
             *(("--exclude", path) for path in args.get("exclude") or [])]
    for flag, path in named:
        if path is None:
            continue
        path = Path(path)
        if path.is_dir():
            raise ValueError(f"{flag} {path} is a folder: give a puzzle file")
        if not path.is_file():
            raise ValueError(missing_file(path, f"{flag} not found"))
        try:
            with path.open("rb") as f:
                f.read(1)
        except OSError as err:
            raise ValueError(f"{flag} {path} cannot be read ({err.strerror or err})") from None


def check_same_files(was: dict, now: dict) -> None:
    """Refuse a resumed run whose data files (:func:`data_files`, ``now``) are not those it was trained with."""
    changed = [f"--{k.replace('_', '-')}" for k in was if was[k] != now.get(k)]
    if changed:
        raise ValueError(f"--resume: this run was trained with other {' and '.join(changed)} files than "
                         "these (by content; left out counts as other): give the same ones")


def run_pool_dir(args: dict, default: Path, log) -> Path:
    """This run's ``--pool-dir``: the one given, else a resumed run's own (its checkpoint records it: ``recorded``),
    else ``default``. A given one other than the recorded one wins, and is said."""
    recorded = (args.get("recorded") or {}).get("pool_dir")
    path = Path(args.get("pool_dir", default))
    if recorded is None:
        return path
    if "pool_dir" not in args.get("given", ()):
        return Path(recorded)
    if path.resolve() != Path(recorded).resolve():
        log(f"note: --pool-dir {path} is not this run's own {recorded}: its pools are read (or built) in {path}")
    return path


def run_init(args: dict) -> Path | None:
    """The weights the run began from: ``--init``, or on ``--resume`` the checkpoint's record of them (its saved
    JSON names them again); a ``--init`` that names other weights than the resumed run began from is refused."""
    init, recorded = args.get("init"), args.get("recorded") or {}
    if not args.get("resume") or "init" not in recorded:  # a new run; or a checkpoint before 2026-12-08: no record
        return init
    ran = Path(recorded["init"]) if recorded["init"] else None
    if init is not None and (ran is None or Path(init).resolve() != ran.resolve()):
        raise ValueError(f"--resume continues the run's own settings: --init {init} differs from its "
                         f"{ran or 'fresh weights (no --init)'}")
    return ran


class SudokuTask:
    """The Sudoku MDM's data, validation and best-weights rule for :func:`mi_core.train.mdm.train`."""

    name = "sudoku_mdm"
    model_config, train_config = SudokuMDMConfig, TrainConfig
    best_key, higher = "val_accuracy", True
    save = staticmethod(save_sudoku_mdm)
    options = DataOptions

    def __init__(self, model_cfg: SudokuMDMConfig, cfg: TrainConfig, device: torch.device, args: dict | None = None,
                 log=print, pool_dir: Path = POOL_DIR):
        args = args or {}
        self.init = run_init(args)
        # loaded first, so a bad --init fails before the pools are built; a resumed run's weights are its checkpoint's
        self.start = init_model(self.init, args.get("model_given", {})) if self.init and not args.get("resume") else None
        if self.start is not None:  # the file's shape (its loops too, unless given) is the model trained
            model_cfg = self.start.cfg
        if model_cfg.box != 3:
            given = f"--init {self.init} holds a {model_cfg.box ** 2}x{model_cfg.box ** 2} model" if self.start \
                else f"--box {model_cfg.box}"
            raise ValueError(f"{given}: train sudoku trains 9x9 grids (--box 3); the 4x4 domain reads its exact oracle "
                             "and needs no training")
        if cfg.min_loops > model_cfg.loops:
            raise ValueError(f"--min-loops {cfg.min_loops} is more than the model's {model_cfg.loops} loops (--loops): each "
                             "step runs a number of iterations from --min-loops to --loops")
        lone = sorted(k for k in ("distill", "teacher_views") if k in args.get("given", ()))
        if lone and not args.get("teacher"):
            raise ValueError(" and ".join(f"--{k.replace('_', '-')}" for k in lone) + (" need" if len(lone) > 1
                             else " needs") + " --teacher (the model whose views it distils)")
        self.pool_dir = run_pool_dir(args, pool_dir, log)
        check_output_dir(self.pool_dir, "--pool-dir")
        check_data_files(args)
        self.files = data_files(args)
        self.model_cfg, self.cfg, self.device = model_cfg, cfg, device
        self.bf16 = use_bf16(cfg.bf16, device, log=lambda m: None)  # the trainer itself says so
        self.teacher = load_sudoku_mdm(args["teacher"], device).eval().requires_grad_(False) \
            if args.get("teacher") else None
        if self.teacher is not None and self.teacher.cfg.box != model_cfg.box:
            raise ValueError(f"--teacher {args['teacher']}: its grids have boxes of {self.teacher.cfg.box}, this "
                             f"model's of {model_cfg.box}")
        self.args_teacher, self.teacher_views, self.distill = (args.get("teacher"), args.get("teacher_views", 4),
                                                               args.get("distill", 0.5))
        self.check_resumed(args.get("recorded") or {})  # a resumed run's files and teacher: before the pools, not after
        workers = args.get("pool_workers", 2) or os.cpu_count() or 1
        t0 = time.time()
        with distributed.main_first():  # under torchrun rank 0 builds the cached pools, the others read them
            pools = load_or_build_pools(cfg.pool_spec(), root=self.pool_dir, workers=workers,
                                        exclude=_read_exclude(args.get("exclude", [])), log=log,
                                        puzzle_file=args.get("pool_file"))
        self.val = _validation(cfg, args.get("val_file"), workers)
        pools = _without_validation(pools, self.val, args.get("pool_file"), log)
        log(f"pools ready in {time.time() - t0:.0f}s: {len(pools['grids'])} grids, {len(pools['puzzles'])} puzzles "
            f"(grade median {np.median(pools['grades']):.0f}), {0 if self.val is None else len(self.val)} validation")
        self.data = DeviceBatches(pools, device, cfg.puzzle_frac, cfg.onpolicy_frac, cfg.hard_power)
        self.gen = torch.Generator(device=device).manual_seed(distributed.rank_seed(cfg.seed))  # each rank its own data
        self.solved: list[torch.Tensor] = []

    def build_model(self, fresh: bool = False) -> SudokuMDM:
        return self.start if self.start is not None and not fresh else SudokuMDM(self.model_cfg)

    def before_step(self, model, step: int) -> None:
        cfg = self.cfg
        if cfg.onpolicy_every and cfg.onpolicy_frac and step % cfg.onpolicy_every == 0:
            puzzles, solutions = self.data.sample_puzzles(cfg.onpolicy_puzzles, self.gen)
            states, sols, solved = onpolicy_states(model, puzzles, solutions, cfg.onpolicy_per_puzzle, self.gen,
                                                   self.bf16)
            self.data.add_states(states, sols)
            self.solved.append(solved.float().mean())

    def loss(self, net, inputs: torch.Tensor, values: torch.Tensor, scored: torch.Tensor) -> torch.Tensor:
        """Masked CE averaged over the last ``supervise`` iterations, backpropagated through the last
        ``grad_iters``; with ``min_loops`` the iteration count is drawn per step."""
        cfg, loops = self.cfg, self.model_cfg.loops
        steps = loops
        if cfg.min_loops and cfg.min_loops < loops:
            steps = int(torch.randint(cfg.min_loops, loops + 1, (1,), generator=self.gen, device=self.device))
        grad = min(cfg.grad_iters or steps, steps)
        out = net(inputs, iterations=steps, keep=min(cfg.supervise, grad), no_grad=steps - grad)
        targets = values if self.teacher is None else self.soft_targets(inputs, values)
        return torch.stack([masked_ce(logits, targets, scored) for logits in out.per_iteration]).mean()

    def soft_targets(self, inputs: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """``(B, 81, 9)`` targets: the solution's one-hot mixed with the teacher's probabilities over views drawn
        afresh each step (the normalised mean of their log-probabilities, :class:`Views`): an ensemble the student
        learns to match in one view."""
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=self.gen, device=self.device))
        ensemble = Views(self.teacher, *symmetry_views(self.teacher_views, seed, self.model_cfg.box))
        with torch.no_grad():
            probs = ensemble(inputs).logits.float().softmax(-1)
        solution = torch.nn.functional.one_hot(values, probs.shape[-1]).float()
        return (1 - self.distill) * solution + self.distill * probs

    def batch(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        inputs, targets = self.data.sample(self.cfg.batch, self.gen)
        return inputs, targets - 1, inputs == SudokuMDM.mask_id

    def point(self) -> dict:
        """The on-policy solve rate since the last point."""
        out = {"onpolicy_solved": round(torch.stack(self.solved).mean().item(), 4)} if self.solved else {}
        self.solved = []
        return out

    def validate(self, model) -> dict:
        return validate(model, self.val, self.device) if self.val is not None else {}

    def summary(self) -> dict:
        return {"init": str(self.init) if self.init else None,
                **({"teacher": self.distilling()} if self.teacher is not None else {})}

    def distilling(self) -> dict | None:
        """What this run distils from (None: the solution alone), as its checkpoint records it."""
        return None if self.teacher is None else {"path": str(self.args_teacher), "views": self.teacher_views,
                                                  "share": self.distill}

    def state_dict(self) -> dict:
        return {"data": self.data.state_dict(), "gen": self.gen.get_state(), "teacher": json.dumps(self.distilling()),
                "files": json.dumps(self.files), "pool_dir": str(self.pool_dir.absolute()),  # --resume reuses it
                "init": str(Path(self.init).absolute()) if self.init else ""}  # and records it again

    def check_resumed(self, state: dict) -> None:
        """Refuse to resume a run (its checkpoint's task ``state``) with another teacher or other data files."""
        if "teacher" in state and json.loads(state["teacher"]) != self.distilling():  # older checkpoints: no record
            raise ValueError(f"--resume: this run distils {json.loads(state['teacher']) or 'nothing'}, not "
                             f"{self.distilling() or 'nothing'}: give the same --teacher, --teacher-views and --distill")
        if "files" in state:  # older checkpoints: no record
            check_same_files(json.loads(state["files"]), self.files)

    def load_state_dict(self, state: dict, step: int) -> None:
        self.check_resumed(state)  # the command checked before the pools; a caller building the task may not have
        self.data.load_state_dict(state["data"])
        self.gen.set_state(state["gen"].cpu())  # generator states are CPU byte tensors on every device
        if not distributed.is_main():  # the checkpoint holds rank 0's generator: the others draw afresh
            self.gen.manual_seed(distributed.rank_seed(self.cfg.seed + step))
