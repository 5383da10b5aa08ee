"""Side experiments on the Sudoku order selector, quoted in docs/learned_order.md and BENCHMARKS.md.

1. ``paced``: the threshold of the learned sampler's paced mode, tuned on puzzles 101-200 of each level of
   the Kaggle graded set (the benchmark, ``bench-order``, uses puzzles 1-100), against threshold mode and
   top_margin at the same T.
2. ``learned_mi``: the budget gamma (and at T = 20 lam and the relative cost) of ``learned_mi`` on the same
   tuning puzzles; ``bench-order``'s default gammas per T are the best of these.
3. ``variants``: learned and learned_mi at T = 20 on the same tuning puzzles for the default selector and
   the variants trained in session 3 (tau 0.03, KL weight 0.1, KL weight 0.3 with seed 1: in ``runs/``,
   not shipped; KL weight 0.3 seed 0, shipped as ``assets/sudoku_order_selector_kl0.3.safetensors``); a
   missing selector is skipped. ``spread``: the same on the benchmark's puzzles 1-100 per level.
4. ``finetune``: what fine-tuning the denoiser on the ELBO's denoising term alone does to it. The shipped
   selector and posterior are frozen; the MDM takes Adam steps on -D (the log-likelihood of the true
   values at the positions Q unmasks, teacher-forced), and top_margin with T = 20 is scored on 100
   generated validation puzzles every 20 updates.

Writes (merges into) ``assets/benchmarks/order_experiments.json``. About 15 minutes on one CPU thread:
``python scripts/studies/order_experiments.py [paced] [learned_mi] [variants] [spread] [finetune]`` (all by default).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is scripts/studies/...)
sys.path.insert(0, str(ROOT))

from mi_core.decoding import make_strategy
from mi_core.domains.sudoku.bench import evaluate, with_default_estimator
from mi_core.domains.sudoku.bench_order import pick_records
from mi_core.domains.sudoku.mdm import load_sudoku_mdm
from mi_core.domains.sudoku.order import EVAL_SEED, TRAIN_SEED, decode_score, puzzle_draw
from mi_core.domains.sudoku.pool import build_pool
from mi_core.io import atomic_write_json
from mi_core.order.elbo import rollout
from mi_core.order.train import load_nets

MODEL = ROOT / "assets/sudoku_mdm.safetensors"
SELECTOR = ROOT / "assets/sudoku_order_selector.safetensors"
PUZZLES = ROOT / "../shared/data/sudoku/kaggle_graded_dev.csv"


def tuning_slice() -> list:
    """Puzzles 101-200 of each level (the benchmark takes the first 100)."""
    return pick_records(PUZZLES, 100, skip=100)


def tune(model, configs: list[tuple[int, str, dict]]) -> list[dict]:
    records = tuning_slice()
    rows = []
    for t, name, params in configs:
        extra = {"selector": str(SELECTOR)} if name.startswith("learned") else {}
        strategy = with_default_estimator(make_strategy(name, **params, **extra))
        res = evaluate(model, records, strategy, batch_size=256, bf16=True)
        rows.append({"T": t, "sampler": name, "params": params, "n": res["n"], "accuracy": res["accuracy"],
                     "mean_passes": res["mean_passes"]})
        print(rows[-1], flush=True)
    return rows


def paced(model) -> list[dict]:
    configs = []
    for t in (5, 10, 15, 20):
        configs += [(t, "top_margin", {"steps": t}), (t, "learned", {"steps": t, "mode": "threshold"})]
        configs += [(t, "learned", {"steps": t, "mode": "paced", "threshold": th}) for th in (0.6, 0.7, 0.8, 0.9)]
    return tune(model, configs)


def learned_mi(model) -> list[dict]:
    grid = {5: (4.0, 8.0, 16.0), 10: (1.0, 2.0, 4.0), 15: (1.0, 2.0, 4.0), 20: (0.5, 0.8, 1.0, 1.2, 1.5, 2.0)}
    configs = [(t, "learned_mi", {"steps": t, "gamma": g}) for t, gs in grid.items() for g in gs]
    configs += [(20, "learned_mi", {"steps": 20, "gamma": 1.0, "lam": lam, "relative": rel})
                for lam, rel in ((0.25, True), (1.0, True), (0.5, False), (1.0, False))]
    configs += [(None, "mi", {"gamma": g, "lam": 0.5, "relative": True}) for g in (0.5, 1.0, 2.0)]
    return tune(model, configs)


VARIANTS = {"default (beta 1, tau 0.1)": SELECTOR,
            "tau 0.03": ROOT / "runs/order_v2/tau003/selector.safetensors",
            "beta 0.3": ROOT / "assets/sudoku_order_selector_kl0.3.safetensors",
            "beta 0.1": ROOT / "runs/order_v3/kl01/selector.safetensors",
            "beta 0.3, seed 1": ROOT / "runs/order_v3/kl03s1/selector.safetensors"}


def variants(model, records=None) -> list[dict]:
    records = tuning_slice() if records is None else records
    rows = []
    for label, path in VARIANTS.items():
        if not path.is_file():
            print(f"skipped {label}: no {path}", flush=True)
            continue
        for name, params in (("learned", {"steps": 20}), ("learned_mi", {"steps": 20, "gamma": 1.0})):
            strategy = with_default_estimator(make_strategy(name, selector=str(path), **params))
            res = evaluate(model, records, strategy, batch_size=256, bf16=True)
            rows.append({"variant": label, "selector": str(path.relative_to(ROOT)), "sampler": name,
                         "params": params, "n": res["n"], "accuracy": res["accuracy"],
                         "mean_passes": res["mean_passes"]})
            print(rows[-1], flush=True)
    return rows


def spread(model) -> list[dict]:
    """The same selectors on the benchmark's puzzles (1-100 per level): how far apart trained selectors
    land, after the choice among them was made on the tuning puzzles."""
    return variants(model, pick_records(PUZZLES, 100))


def finetune(model, updates: int = 60, lr: float = 1e-5, every: int = 20) -> list[dict]:
    pool = build_pool(TRAIN_SEED, 500, puzzles=True, workers=1)
    val = build_pool(EVAL_SEED, 100, puzzles=True, workers=1)
    posterior, selector = load_nets(SELECTOR)
    for p in [*posterior.parameters(), *selector.parameters()]:
        p.requires_grad_(False)
    def score():
        return decode_score(model, val, make_strategy("top_margin", steps=20), True)["accuracy"]
    curve = [{"update": 0, "top_margin_T20": score()}]
    print(curve[-1], flush=True)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(True)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    draw, rng, gen = puzzle_draw(pool), np.random.default_rng(0), torch.Generator().manual_seed(0)
    for update in range(updates):
        tokens, target = draw(rng, 16)
        ro = rollout(model, tokens, target, posterior, selector, (5, 10, 15, 20)[update % 4], 0.1, 4, gen, True,
                     finetune=True)
        loss = -(ro.denoise_grad / ro.n_masked).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if (update + 1) % every == 0:
            curve.append({"update": update + 1, "denoise_loss_per_cell": loss.item(), "top_margin_T20": score()})
            print(curve[-1], flush=True)
    return curve


def main(argv: list[str]) -> None:
    torch.set_num_threads(1)
    parts = argv or ["paced", "learned_mi", "variants", "spread", "finetune"]
    path = ROOT / "assets/benchmarks/order_experiments.json"
    out = json.loads(path.read_text()) if path.is_file() else {}
    for part in parts:
        if part == "finetune":
            out[part] = {"lr": 1e-5, "batch": 16, "samples": 4, "curve": finetune(load_sudoku_mdm(MODEL))}
        elif part in ("paced", "learned_mi", "variants", "spread"):
            out[part] = globals()[part](load_sudoku_mdm(MODEL))
        else:
            raise SystemExit(f"unknown part {part!r}; choose from paced, learned_mi, variants, spread, finetune")
        atomic_write_json(path, out)


if __name__ == "__main__":
    main(sys.argv[1:])
