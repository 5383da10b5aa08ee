"""Train the neural MI estimator on exact-probe shards.

``python -m mi_core train-estimator --data runs/estimator_data/NAME --out assets/sudoku_mi_estimator.safetensors``

Each *variant* (loss, ``min(H_i, H_j)`` bound, position embeddings, separation feature) is trained with the
same seed and steps on the same states; the one with the best pooled validation Spearman is saved, with
every variant's scores and the data's summary in the JSON beside it. Variable-length (protein) shards train
with no position embeddings and, unless a variant says ``:nosep``, the bucketed sequence separation feature.
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch

from mi_core.device import pick_device
from mi_core.domain import get_domain
from mi_core.io import check_weights_output, default_run_path, display_path, json_ready, note_on_stop
from mi_core.mi.estimator import LOSSES, EstimatorConfig, MIEstimator, estimator_loss, save_estimator
from mi_core.mi.fidelity import fidelity
from mi_core.options import SKIP, Device, Force, check_ranges, from_options, option, seed
from mi_core.scale import distributed
from mi_core.train.mdm import lr_at

DEFAULT_OUT = "{domain}_mi_estimator"  # runs/<name>_<date-time>.safetensors
DEFAULT_VARIANTS = "log:free,log:bound,sqrt:bound,mse:bound,log:free:nopos"
VARIABLE_LENGTH_VARIANTS = "log:free,log:bound,sqrt:bound,log:free:nosep"
SEQUENCE_REL_BUCKETS = 16  # variable-length data: separations up to 181 get their own buckets


@dataclass(frozen=True)
class TrainConfig:
    seed: int = seed()
    loss: str = option("log", "training loss", choices=LOSSES)
    floor: float = option(1e-5, "nats inside the loss's sqrt/log", range=(1e-12, 1))
    steps: int = option(1200, "AdamW steps", range=(1, 1_000_000_000))
    batch: int = option(16, "states per batch", range=(1, 65_536))
    lr: float = option(3e-3, "peak learning rate", range=(1e-12, 10))
    weight_decay: float = option(1e-4, "AdamW weight decay", range=(0, 10))
    warmup: int = option(50, "warm-up steps", range=(0, 1_000_000_000))
    val_frac: float = option(0.15, "share of states held out for validation (by state: two states of one puzzle "
                             "may fall on both sides)", range=(1e-6, 1 - 1e-6))
    eval_every: int = option(100, "steps between validations", range=(1, 1_000_000_000))
    clip: float = option(1.0, "gradient-norm clip", range=(0, 1e6))

    def __post_init__(self):
        if self.loss not in LOSSES:
            raise ValueError(f"unknown loss {self.loss!r}; choose one of {', '.join(LOSSES)}")
        check_ranges(self)


@dataclass(frozen=True)
class Variant:
    """What the variants compare (each feature only where the data's estimator config has it)."""

    loss: str
    bound: bool
    positions: bool = True
    separation: bool = True
    rules: bool = False

    @classmethod
    def parse(cls, item: str) -> Variant:
        """``"log:bound"``, ``"mse:free"``, ``"log:free:nopos"``, ``"log:free:nosep"``, ``"log:free:rules"`` -> Variant."""
        parts = item.strip().split(":")
        flags = parts[2:]
        if len(parts) < 2 or parts[0] not in LOSSES or parts[1] not in ("bound", "free") or (
                not set(flags) <= {"nopos", "nosep", "rules"} or len(set(flags)) != len(flags)):
            raise ValueError(f"a variant is LOSS:bound or LOSS:free, optionally with :nopos, :nosep and/or :rules, "
                             f"with LOSS in {', '.join(LOSSES)}; got {item!r}")
        return cls(parts[0], parts[1] == "bound", "nopos" not in flags, "nosep" not in flags, "rules" in flags)

    def __str__(self) -> str:
        return (f"{self.loss}:{'bound' if self.bound else 'free'}" + ("" if self.positions else ":nopos")
                + ("" if self.separation else ":nosep") + (":rules" if self.rules else ""))


def parse_variants(text: str) -> list[Variant]:
    return [Variant.parse(item) for item in text.split(",")]


def checked_variants(text: str) -> str:
    """``--variants`` as given, once every item parses (so a bad or empty list fails before any work)."""
    parse_variants(text)
    return text


def split(n: int, val_frac: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(train, val)`` state indices: a seeded permutation, at least one state on each side."""
    if n < 2:
        raise ValueError(f"need at least 2 states to hold some out for validation, got {n}")
    order = np.random.default_rng(seed).permutation(n)
    n_val = min(n - 1, max(1, round(n * val_frac)))
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def to_device(data: dict[str, torch.Tensor], device) -> dict[str, torch.Tensor]:
    keys = ("hidden", "probs", "entropy", "masked", "mi")
    return {k: (v.to(device) if k in keys else v) for k, v in data.items()}


def batch_of(data: dict[str, torch.Tensor], idx) -> tuple[torch.Tensor, ...]:
    """``(hidden, probs, entropy, masked, mi)`` of the states ``idx``."""
    return tuple(data[k][idx] for k in ("hidden", "probs", "entropy", "masked", "mi"))


@torch.no_grad()
def predict(estimator: MIEstimator, data: dict[str, torch.Tensor], idx, chunk: int = 64) -> np.ndarray:
    """Predicted MI ``(len(idx), N, N)`` float64 for the states ``idx``."""
    estimator.eval()
    out = []
    for lo in range(0, len(idx), chunk):
        hidden, probs, entropy, masked, _ = batch_of(data, idx[lo : lo + chunk])
        out.append(estimator(hidden, probs, entropy, masked).double().cpu().numpy())
    return np.concatenate(out)


def edge_threshold(domain: str | None) -> float:
    """The nats above which eval-estimator counts a pair of ``domain`` (a data manifest's key) as an edge: 1e-2
    for data of no domain or of one not registered here."""
    try:
        return get_domain(domain).part("states").eval_defaults["threshold"] if domain else 1e-2
    except ValueError:  # a plugin's domain whose module is not loaded: its data still trains
        return 1e-2


def validate(estimator: MIEstimator, data: dict[str, torch.Tensor], idx, threshold: float = 1e-2) -> dict:
    """:func:`~mi_core.mi.fidelity.fidelity` on states ``idx``; ``threshold``: the nats above which a pair is an
    edge of the top-k precision (the domain's, as eval-estimator takes it)."""
    return fidelity(predict(estimator, data, idx), data["mi"][idx].double().cpu().numpy(),
                    data["masked"][idx].cpu().numpy(), threshold)


def train_one(est_cfg: EstimatorConfig, cfg: TrainConfig, data: dict[str, torch.Tensor], train_idx, val_idx,
              log=print, rules: np.ndarray | None = None, threshold: float = 1e-2) -> tuple[MIEstimator, dict]:
    """Train one estimator on the device of ``data``; the best checkpoint by validation Spearman (on the CPU)
    and its record (``val``: that checkpoint's :func:`validate`, taken on the data's device before the estimator
    leaves it). Losses are read back only at evaluations, so the hot loop never waits for the host.
    ``rules``: the domain's ``(N, N)`` table for an estimator with ``cfg.rules``."""
    torch.manual_seed(cfg.seed)
    gen = np.random.default_rng(distributed.rank_seed(cfg.seed))  # under torchrun: each rank its own batches
    estimator = MIEstimator(est_cfg).to(data["hidden"].device)
    if est_cfg.rules:
        n = est_cfg.n_positions
        if rules is None or tuple(np.shape(rules)) != (n, n):
            raise ValueError(f"an estimator with the rules feature needs the domain's ({n}, {n}) rules table, got "
                             f"{None if rules is None else tuple(np.shape(rules))}")
        estimator.rule_pairs.copy_(torch.as_tensor(rules, dtype=torch.float32))
    model = distributed.wrap(estimator)
    opt = torch.optim.AdamW(estimator.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    best, best_state, curve, losses, start = -math.inf, None, [], [], time.time()
    for step in range(cfg.steps):
        estimator.train()
        for group in opt.param_groups:
            group["lr"] = lr_at(step, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup), cfg)  # decay after warm-up
        hidden, probs, entropy, masked, target = batch_of(data, gen.choice(train_idx, size=cfg.batch))
        loss = estimator_loss(model(hidden, probs, entropy, masked), target, masked, cfg.loss, cfg.floor)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(estimator.parameters(), cfg.clip)
        opt.step()
        losses.append(loss.detach())
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
            val = validate(estimator, data, val_idx, threshold)
            train_loss = float(torch.stack(losses).double().mean())
            point = {"step": step + 1, "seconds": round(time.time() - start, 1), "train_loss": train_loss,
                     **{k: val[k] for k in ("spearman", "spearman_median", "pearson", "mae", "topk_precision")}}
            curve.append(point)
            losses = []
            log(json.dumps(json_ready(point)))
            score = val["spearman"] if np.isfinite(val["spearman"]) else -math.inf
            if score > best or best_state is None:
                best, best_state = score, {k: v.clone() for k, v in estimator.state_dict().items()}
    estimator.load_state_dict(best_state)
    val = validate(estimator, data, val_idx, threshold)  # on the data's device, before the estimator leaves it
    estimator.cpu().eval()
    return estimator, {"train": asdict(cfg), "estimator": asdict(est_cfg), "curve": curve,
                       "best_val_spearman": best if math.isfinite(best) else None,
                       "seconds": round(time.time() - start, 1), "val": val}


def train_variants(data: dict[str, torch.Tensor], est_cfg: EstimatorConfig, cfg: TrainConfig,
                   variants: list[Variant], log=print, rules: np.ndarray | None = None,
                   threshold: float = 1e-2) -> tuple[MIEstimator, dict]:
    """Train every variant on one split; return the best by validation Spearman and a summary of all."""
    train_idx, val_idx = split(len(data["mi"]), cfg.val_frac, cfg.seed)
    results, best = [], None
    for variant in variants:
        log(f"variant {variant}")
        v_cfg = replace(est_cfg, bound=variant.bound, rules=variant.rules,
                        n_positions=est_cfg.n_positions if variant.positions or variant.rules else 0,
                        d_pos=est_cfg.d_pos if variant.positions else 0,
                        rel_buckets=est_cfg.rel_buckets if variant.separation else 0)
        estimator, record = train_one(v_cfg, replace(cfg, loss=variant.loss), data, train_idx, val_idx, log, rules,
                                     threshold)
        results.append({"variant": str(variant), **asdict(variant), "val_spearman": record["best_val_spearman"],
                        "val": record.pop("val"), "params": estimator.num_params(), "seconds": record["seconds"]})
        score = record["best_val_spearman"] if record["best_val_spearman"] is not None else -math.inf
        if best is None or score > best[3]:
            best = (estimator, variant, record, score)
    summary = {"variants": results, "chosen": str(best[1]), "record": best[2], "train_states": len(train_idx),
               "val_states": len(val_idx)}
    return best[0], summary


@dataclass
class EstimatorRun:
    data: Path = option(None, "shard directory written by make-estimator-data", required=True)
    out: Path | None = option(None, f"default runs/{DEFAULT_OUT}_<date-time>.safetensors")
    variants: str | None = option(None, "comma list of LOSS:bound|free[:nopos][:nosep][:rules] to compare (nopos: "
                                  "no position embeddings; nosep: no separation feature; rules: a pair feature, 1 "
                                  "where the domain's rules tie the two positions); default "
                                  f"{DEFAULT_VARIANTS} (variable-length data: {VARIABLE_LENGTH_VARIANTS})",
                                  parse=checked_variants)
    rel_buckets: int = option(SEQUENCE_REL_BUCKETS, "separation buckets of the pair feature (variable-length data "
                              "only; 0: none)", range=(0, 4096))


@dataclass
class ShapeOptions:
    d_pos: int = option(EstimatorConfig.d_pos, "learned position embedding size (0: none)", range=(0, 8192))
    d_node: int = option(EstimatorConfig.d_node, "per-position MLP width", range=(1, 8192))
    d_proj: int = option(EstimatorConfig.d_proj, "size of each position's projection", range=(1, 8192))
    d_pair: int = option(EstimatorConfig.d_pair, "pair MLP width", range=(1, 8192))


OPTIONS = (EstimatorRun, (TrainConfig, {"loss": SKIP}), ShapeOptions, Device, Force)


def main(namespace) -> int:
    from mi_core.train.estimator_data import load_shards

    args = vars(namespace)
    check_weights_output(args["out"], args["force"])
    cfg = from_options(TrainConfig, args, [k for k in TrainConfig.__dataclass_fields__ if k != "loss"])
    device = distributed.setup(pick_device(args["device"], args["threads"]))
    data, manifest = load_shards(args["data"])
    domain = manifest.get("domain")
    variable = "length" in data  # padded states of varying length: no position embeddings, separations
    given = args["variants"]
    variants = parse_variants(given if given is not None else VARIABLE_LENGTH_VARIANTS if variable else DEFAULT_VARIANTS)
    rules = None
    if any(v.rules for v in variants):
        if variable or not domain:
            raise ValueError(f"{args['data']}: a :rules variant needs fixed-length states of a registered domain")
        rules = get_domain(domain).rules(data["hidden"].shape[1])
        if not rules.any():
            raise ValueError(f"the {domain} domain declares no rules (Domain.rules is all zero): drop :rules")
    args["out"] = args["out"] or default_run_path(DEFAULT_OUT.format(domain=domain) if domain else "mi_estimator")
    est_cfg = EstimatorConfig(d_in=data["hidden"].shape[-1], n_values=data["probs"].shape[-1],
                              n_positions=0 if variable else data["hidden"].shape[1], d_pos=args["d_pos"],
                              d_node=args["d_node"], d_proj=args["d_proj"], d_pair=args["d_pair"],
                              rel_buckets=args["rel_buckets"] if variable else 0)
    log = (lambda m: print(m, file=sys.stderr, flush=True)) if distributed.is_main() else (lambda m: None)
    held, planned = manifest["summary"]["states"], manifest.get("config", {}).get("states")
    log(f"{held} states from {args['data']}: {json.dumps(manifest['summary'])}")
    if isinstance(planned, int) and held < planned:
        log(f"warning: {args['data']} holds {held} of the {planned} states its "
            f"make-estimator-data run planned (it was stopped early); the same command resumes it: "
            f"{manifest.get('command') or 'make-estimator-data'}")
    threshold = edge_threshold(domain)
    note_on_stop(f"nothing is kept: {args['out']} is written when training ends; the same command starts again")
    estimator, summary = train_variants(to_device(data, device), est_cfg, cfg, variants, log, rules, threshold)
    extra = {"params": estimator.num_params(), "domain": domain,
             "mdm": display_path(manifest["model"]) if manifest["model"] else None, "mdm_sha256": manifest["model_sha256"],
             "data": {"dir": display_path(args["data"]), "command": manifest.get("command"), "config": manifest["config"],
                      **manifest["summary"]},
             "command": "python -m mi_core train-estimator " + " ".join(args["argv"]), **summary}
    if not distributed.is_main():  # one checkpoint, by rank 0
        distributed.teardown()
        return 0
    save_estimator(estimator, args["out"], extra)
    distributed.teardown()
    brief = [{k: v[k] for k in ("variant", "val_spearman", "seconds")} for v in summary["variants"]]
    print(json.dumps({"out": str(args["out"]), "params": extra["params"], "chosen": summary["chosen"],
                      "variants": brief}, indent=2))
    return 0
