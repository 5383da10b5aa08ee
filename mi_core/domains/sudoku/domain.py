"""The Sudoku 9x9 domain object: its shipped files and the engine parts it plugs in."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mi_core.bench.metrics import SolvedMetric
from mi_core.domain import Command
from mi_core.domains.sudoku import bench_order, bench_probe, diagnose, order, suite
from mi_core.domains.sudoku.data import symmetry_views
from mi_core.domains.sudoku.generator import follows_rules
from mi_core.domains.sudoku.grid import SUDOKU9, GridDomain, digits
from mi_core.domains.sudoku.mdm import load_sudoku_mdm
from mi_core.domains.sudoku.states import SudokuStates
from mi_core.domains.sudoku.train import SudokuTask
from mi_core.models.base import MaskedLM
from mi_core.models.views import with_views
from mi_core.options import counted


def load_sudoku(spec: str | Path | None, device) -> tuple[MaskedLM, str]:
    if not spec:
        raise ValueError("a Sudoku MDM needs a weights file (.safetensors)")
    path = Path(spec)
    model = load_sudoku_mdm(path, device)
    cfg = model.cfg
    shape = (f"{cfg.n_layers} layers" if cfg.loops == 1 else
             f"{counted(cfg.n_layers, 'block')} applied {cfg.loops} times")
    return model, f"Sudoku MDM ({shape}, d_model {model.hidden_size}; {path.name})"


VIEWS = 4  # chosen on Kaggle dev puzzles 501-1000 (BENCHMARKS.md, symmetric views)


def load_sudoku_views(spec: str | Path | None, device) -> tuple[MaskedLM, str]:
    """The Sudoku MDM averaged over :data:`VIEWS` symmetric views of each grid (a pass costs that many)."""
    model, description = load_sudoku(spec, device)
    return with_views(model, SUDOKU, VIEWS), f"{description}, read in {VIEWS} symmetric views"


SUDOKU = GridDomain(
    "sudoku9", "Sudoku 9x9 (trained MDM)", "9x9", digits(SUDOKU9), names=("sudoku", "sudoku9"), geometry=SUDOKU9,
    # the peer-recurrent model (one block applied 24 times), the estimator trained on it, the selector checked on it
    model_env="MI_LENS_SUDOKU_MODEL", model_default="assets/sudoku_peer_recurrent.safetensors",
    estimator_env="MI_LENS_SUDOKU_ESTIMATOR", estimator_default="assets/sudoku_mi_estimator_recurrent.safetensors",
    selector_env="MI_LENS_SUDOKU_SELECTOR", selector_default="assets/sudoku_order_selector_recurrent.safetensors",
    model_loader=load_sudoku, states=SudokuStates, metric=SolvedMetric, order_task=order.ORDER_TASK, trainer=SudokuTask,
    order_bench=bench_order,
    # the app's A/B, checked on the soup's tuning puzzles (hard_questions.py; BENCHMARKS.md, hard-questions-recurrent):
    # MI-guided at 1/5 of sequential's passes (Kaggle Hard tuning picked lam 2; on Expert lam 1 and 2 solve 79.0%
    # and 78.5%), and EB at gamma 0.5, about 3/4 of MI's passes, where unmasking dependent cells together shows
    # (at MI's passes EB's gamma is 0.2 and the two tie: question 2); the learned order at T = 15, chosen on step
    # 6,500, where it beat top-prob-margin on Kaggle Expert. The exact-MI decoder at MI's budget, its probe pruned at
    # eps 1e-4: on 40 tuning puzzles the same grids in the same passes as eps 0, at half the probe passes and 2.7x
    # less time (assets/benchmarks/mi_exact_eps_tune40_*.json)
    strategy_defaults=(("mi", "gamma", 0.6), ("mi", "lam", 1.0), ("eb", "gamma", 0.5), ("learned", "steps", 15),
                       ("mi_exact", "gamma", 0.6), ("mi_exact", "lam", 1.0), ("mi_exact", "eps", 1e-4)),
    symmetries=symmetry_views, verify=follows_rules,
    commands=(
        Command("bench-suite", "sequential and top-k on the shared puzzle sets (JSON rows; --markdown: a report section)", suite.main,
                suite.options),
        Command("diagnose", "why a parallel sampler fails where sequential succeeds: diagnose sudoku ...",
                diagnose.main, diagnose.options),
        Command("bench-probe", "measure forward throughput and the exact probe's speed", bench_probe.main,
                OPTIONS=bench_probe.OPTIONS),
    ),
)

# the 8-layer model with its own estimator and selector; not registered: the app offers it as a second 9x9 model
SUDOKU_8LAYER = dataclasses.replace(
    SUDOKU, key="sudoku9_8layer", label="Sudoku 9x9 (8-layer MDM, the previous default)", names=(),
    model_env="MI_LENS_SUDOKU_8LAYER_MODEL", model_default="assets/sudoku_mdm_hard.safetensors",
    estimator_env="MI_LENS_SUDOKU_8LAYER_ESTIMATOR", estimator_default="assets/sudoku_mi_estimator_hard.safetensors",
    selector_env="MI_LENS_SUDOKU_8LAYER_SELECTOR", selector_default="assets/sudoku_order_selector_hard.safetensors",
    strategy_defaults=(),  # the defaults above were tuned on the recurrent model
)

# the default model read in 4 symmetric views (same weights, estimator and selector); the app offers it as a model
SUDOKU_VIEWS = dataclasses.replace(
    SUDOKU, key="sudoku9_views", label=f"Sudoku 9x9 (trained MDM, {VIEWS} symmetric views)", names=(),
    model_loader=load_sudoku_views,
)
