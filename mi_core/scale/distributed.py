"""Training under ``torchrun`` with DistributedDataParallel: the few helpers every trainer shares.

``torchrun --nproc_per_node K -m mi_core train-estimator ...`` (or ``train sudoku``, ``train protein``,
``train-order``) starts K processes with ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` set. A trainer calls
:func:`setup` once (it joins the process group: NCCL on CUDA, gloo on the CPU, and gives each rank its own
GPU), wraps the network with :func:`wrap`, draws its data with :func:`rank_seed` (rank 0 keeps the plain
seed, so one rank reproduces a run without torchrun exactly), writes checkpoints only where
:func:`is_main` holds, and calls :func:`teardown` at the end. Without torchrun every helper is a no-op.

Gradients are averaged over ranks, so K ranks train on a K-times larger global batch per step.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import numpy as np
import torch
import torch.distributed as dist


def launched() -> bool:
    """True inside a process that torchrun started (``RANK`` and ``WORLD_SIZE`` set)."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def active() -> bool:
    return dist.is_available() and dist.is_initialized()


def rank() -> int:
    return dist.get_rank() if active() else 0


def world_size() -> int:
    return dist.get_world_size() if active() else 1


def is_main() -> bool:
    """True on rank 0 (and without torchrun): the process that writes checkpoints, logs and reports."""
    return rank() == 0


def setup(device: torch.device | str = "cpu") -> torch.device:
    """Join the process group when torchrun started this process, and return the device this rank trains on
    (``cuda:LOCAL_RANK`` when ``device`` is CUDA, else ``device``). Without torchrun: ``device`` unchanged."""
    device = torch.device(device)
    if not launched() or active():
        return _rank_device(device)
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend=backend)
    return _rank_device(device)


def _rank_device(device: torch.device) -> torch.device:
    if device.type != "cuda" or not launched():
        return device
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    return torch.device("cuda", local)


def teardown() -> None:
    if active():
        dist.destroy_process_group()


def rank_seed(seed: int, r: int | None = None) -> int:
    """The data seed of rank ``r`` (default: this rank): ``seed`` itself on rank 0, else a seed derived from
    ``(seed, r)`` (so ranks draw different data, and one rank draws what a run without torchrun draws)."""
    r = rank() if r is None else r
    if r == 0:
        return seed
    return int(np.random.SeedSequence([seed, r]).generate_state(1, dtype=np.uint64)[0] >> 1)


def wrap(module: torch.nn.Module, **kwargs) -> torch.nn.Module:
    """``module`` in DistributedDataParallel when a process group is active, else ``module`` itself."""
    if not active():
        return module
    from torch.nn.parallel import DistributedDataParallel

    ids = [module_device(module).index] if module_device(module).type == "cuda" else None
    return DistributedDataParallel(module, device_ids=ids, **kwargs)


def module_device(module: torch.nn.Module) -> torch.device:
    return next(module.parameters()).device


def barrier() -> None:
    if active():
        dist.barrier()


@contextmanager
def main_first():
    """Run the block on rank 0 first, then on the other ranks (e.g. build a cache rank 0 writes)."""
    if not is_main():
        barrier()
    yield
    if is_main():
        barrier()


def from_main(value: float) -> float:
    """Rank 0's ``value`` on every rank (e.g. a time-based progress fraction, so that every rank stops at
    the same step and none waits forever in a collective); ``value`` itself without torchrun."""
    if not active():
        return value
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else "cpu"
    t = torch.tensor([float(value)], dtype=torch.float64, device=device)
    dist.broadcast(t, 0)
    return float(t.item())


def broadcast_parameters(params) -> None:
    """Copy rank 0's values of ``params`` to every rank (start from identical weights)."""
    if not active():
        return
    for p in params:
        dist.broadcast(p.data, 0)


def average_gradients(params) -> None:
    """Average the gradients of ``params`` over ranks after ``backward()``: what DistributedDataParallel
    does, for a loop that calls its networks several times per update (a rollout), which DDP's hooks do not
    allow. No-op without torchrun."""
    if not active():
        return
    n = world_size()
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        dist.all_reduce(p.grad)
        p.grad.div_(n)
