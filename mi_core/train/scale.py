"""Estimator data on the task engine (:mod:`mi_core.scale.engine`): one task per shard, a worker that loads
the model and the domain's state source once per process."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable

import torch

from mi_core.device import pick_device
from mi_core.domain import get_domain
from mi_core.models.loading import load_model
from mi_core.scale.engine import EngineConfig, Task, run_tasks
from mi_core.train.shards import save_shard, shard_path


@dataclass(frozen=True)
class ShardMaker:
    """Picklable worker factory: loads the model and the state source once; returns ``index -> shard``."""

    make_shard: Callable
    domain: str
    cfg: Any
    model: str | None
    device: str = "auto"

    def __call__(self) -> Callable[[int], dict[str, torch.Tensor]]:
        device = pick_device(self.device)
        domain = get_domain(self.domain)
        model = load_model(self.model, device, domain=self.domain)
        return local_maker(self.make_shard, model, domain.part("states")(self.cfg), device, domain.pad_id or 0)


def worker_device(device, engine: EngineConfig | None) -> str:
    """CUDA when the worker's actor has GPUs, else this process's device kind."""
    if engine is not None and engine.num_gpus > 0:
        return "cuda"
    return str(getattr(device, "type", device))


def local_maker(make_shard: Callable, model, source, device, pad_id: int) -> Callable[[int], dict]:
    return partial(make_shard, model, source, device=device, pad_id=pad_id)


def write_shards(maker: ShardMaker, local_worker: Callable[[int], dict], shards: int, out: Path,
                 engine: EngineConfig | None, log=None):
    """Write every missing shard under ``out`` (atomically, by this process); the engine's ``RunReport``."""
    Path(out).mkdir(parents=True, exist_ok=True)
    tasks = [Task(i, i, shard_path(out, i)) for i in range(shards)]
    return run_tasks(tasks, maker, engine, save=lambda task, shard: save_shard(shard, task.path),
                     local_worker=local_worker, desc="probe shards", unit="shard", log=log)
