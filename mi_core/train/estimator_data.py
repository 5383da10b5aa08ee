"""Exact-probe training data for the MI estimator, for any domain, written as resumable shards.

``python -m mi_core make-estimator-data DOMAIN --model PATH --out runs/estimator_data/NAME [options]``

A domain brings its *state source* (``Domain.states``): a config with at least ``seed``, ``states``,
``shard_size``, ``eps`` and ``max_batch``, a ``sources`` tuple naming the kinds of state it draws, ``width``
(None when every state has the same length, else the length states are padded to), ``check(model)`` and
``draw(model, rng, count, device) -> (token arrays, source indices)``.

Each shard holds, per state, the tokens, the estimator's inputs from one MDM pass (hidden, probs, entropy,
masked) and the exact probe's MI, passes and seconds. Shard ``i`` depends only on ``(seed, i)``, so a run
resumes by skipping the shards on disk. Padded states (variable-length domains) carry a ``length`` tensor;
a padded position is never masked, so it takes part in no pair.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from mi_core.device import pick_device
from mi_core.domain import DOMAINS, Domain, get_domain
from mi_core.io import check_output_dir
from mi_core.mi.estimator import mdm_features
from mi_core.mi.probe import probe_by_length
from mi_core.models.loading import load_model
from mi_core.options import Device, option
from mi_core.scale.engine import EngineOptions, engine_from_args
from mi_core.train.scale import ShardMaker, local_maker, worker_device, write_shards
from mi_core.train.shards import load_shards, shard_path, write_manifest


def source_for(cfg) -> tuple[Domain, object]:
    for domain in DOMAINS.values():
        if domain.states is not None and isinstance(cfg, domain.part("states").config_cls):
            return domain, domain.part("states")(cfg)
    raise ValueError(f"no registered domain draws estimator states from a {type(cfg).__name__}")


def pad_state(row: dict[str, torch.Tensor], width: int, pad_id: int) -> dict[str, torch.Tensor]:
    """One state's tensors (leading axes of length N) padded to ``width``."""
    n = row["tokens"].shape[0]
    extra = width - n
    return row | {"tokens": F.pad(row["tokens"], (0, extra), value=pad_id),
                  "masked": F.pad(row["masked"], (0, extra), value=False), "entropy": F.pad(row["entropy"], (0, extra)),
                  "hidden": F.pad(row["hidden"], (0, 0, 0, extra)), "probs": F.pad(row["probs"], (0, 0, 0, extra)),
                  "mi": F.pad(row["mi"], (0, extra, 0, extra)), "length": torch.tensor(n)}


def state_rows(model, tokens: list[torch.Tensor], eps: float, max_batch: int) -> list[dict[str, torch.Tensor]]:
    """Per state: one MDM pass's features and the exact probe, both run once per distinct length."""
    rows: list[dict | None] = [None] * len(tokens)
    groups: dict[int, list[int]] = {}
    for s, t in enumerate(tokens):
        groups.setdefault(t.shape[0], []).append(s)
    probed = probe_by_length(model, tokens, eps=eps, max_batch=max_batch)
    for members in groups.values():
        features = mdm_features(model, torch.stack([tokens[s] for s in members]))
        for k, s in enumerate(members):
            hidden, probs, entropy, masked = (x[k].detach().cpu() for x in features)
            r = probed[s]
            rows[s] = {"tokens": tokens[s].cpu(), "hidden": hidden, "probs": probs, "entropy": entropy,
                       "masked": masked, "mi": r.mi.float(), "error_bound": r.error_bound.max().float(),
                       "passes": torch.tensor(r.passes), "seconds": torch.tensor(r.seconds)}
    return rows


def make_shard(model, source, index: int, device, pad_id: int = 0) -> dict[str, torch.Tensor]:
    """Shard ``index`` of ``source``: its states (seeded by ``(cfg.seed, index)``), features and exact MI."""
    cfg = source.cfg
    rng = np.random.default_rng([cfg.seed, index])
    count = min(cfg.shard_size, cfg.states - index * cfg.shard_size)
    drawn, kinds = source.draw(model, rng, count, device)
    tokens = [torch.as_tensor(np.asarray(t, dtype=np.int64), device=device) for t in drawn]
    rows = state_rows(model, tokens, cfg.eps, cfg.max_batch)
    for row, kind in zip(rows, kinds):
        row["source"] = torch.tensor(int(kind))
    if source.width is not None:
        rows = [pad_state(r, source.width, pad_id) for r in rows]
    return {k: torch.stack([r[k] for r in rows]).contiguous() for k in rows[0]}


def command_line(domain: Domain, source, model_path: Path, out: Path) -> str:
    model = "" if model_path is None else f"--model {model_path} "
    return f"python -m mi_core make-estimator-data {domain.cli_name} {model}--out {out} {source.options()}"


def run(model, model_path: Path, cfg, out: Path, device, log=print, engine=None) -> dict:
    """Write every missing shard of ``cfg`` (a domain's state config) under ``out``; return the summary."""
    domain, source = source_for(cfg)
    source.check(model)
    write_manifest(out, cfg, model_path, model, command_line(domain, source, model_path, out), source.sources,
                   domain.cli_name)
    todo = [i for i in range(cfg.shards) if not shard_path(out, i).is_file()]
    log(f"{out}: {cfg.shards - len(todo)} of {cfg.shards} shards already written")
    if todo:
        maker = ShardMaker(make_shard, domain.key, cfg, None if model_path is None else str(model_path),
                           device=worker_device(device, engine))
        write_shards(maker, local_maker(make_shard, model, source, device, domain.pad_id or 0), cfg.shards, out, engine)
    return load_shards(out)[1]["summary"]


@dataclass
class DataRun:
    model: Path | None = option(None, "the frozen MDM whose MI is learned", default_for=lambda d: d.default_file("model"))
    out: Path = option(None, "shard directory (outside the repository's tracked files)", required=True)


def serves(domain: Domain) -> bool:
    return domain.states is not None


def options(domain: Domain) -> list:
    return [DataRun, domain.part("states").data_options, Device, EngineOptions]


def config_from_args(args):
    return get_domain(args.domain).part("states").config_from_args(args)


def main(args) -> int:
    check_output_dir(args.out)
    engine = engine_from_args(args)
    cfg = config_from_args(args)
    device = pick_device(args.device, args.threads)
    model = load_model(None if args.model is None else str(args.model), device, domain=args.domain)
    start = time.time()
    summary = run(model, model.weights_path, cfg, args.out, device, log=lambda m: print(m, file=sys.stderr, flush=True),
                  engine=engine)
    summary["wall_seconds_this_run"] = round(time.time() - start, 1)
    print(json.dumps(summary, indent=2))
    return 0
