"""Training under ``torchrun`` with DistributedDataParallel: the few helpers every trainer shares.

A trainer calls :func:`setup` once, wraps the network with :func:`wrap`, seeds its data with
:func:`rank_seed`, writes only where :func:`is_main` holds and calls :func:`teardown` at the end. Gradients
are averaged over ranks (a K-times larger global batch). Without torchrun every helper is a no-op.
"""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager

import numpy as np
import torch
import torch.distributed as dist


def launched() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def active() -> bool:
    return dist.is_available() and dist.is_initialized()


def rank() -> int:
    return dist.get_rank() if active() else 0


def world_size() -> int:
    return dist.get_world_size() if active() else 1


def is_main() -> bool:
    return rank() == 0


def setup(device: torch.device | str = "cpu") -> torch.device:
    """Join the process group under torchrun; the device this rank trains on (``cuda:LOCAL_RANK`` on CUDA)."""
    device = torch.device(device)
    if launched() and not active():
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    if device.type != "cuda" or not launched():
        return device
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    return torch.device("cuda", local)


def teardown() -> None:
    """Leave the process group once every rank is here: a rank that left while rank 0 still validated or wrote
    closed its sockets under rank 0's gloo threads, which could then abort it (seen once in CI, 1 run in ~20)."""
    if active():
        gc.collect()  # DDP modules the caller dropped still hold the group: free them now, not at interpreter exit
        dist.barrier()
        dist.destroy_process_group()


PEER_GONE = ("Connection closed by peer", "Connection reset by peer", "Broken pipe")  # gloo's words for it


def peer_failure(err: BaseException) -> str | None:
    """One line when ``err`` is this rank's collective failing because another rank of the torchrun job stopped
    (its own error, printed by that rank, is the cause), else None."""
    if not launched() or not isinstance(err, RuntimeError):  # torch.distributed.DistError is a RuntimeError
        return None
    said = next((words for words in PEER_GONE if words in str(err)), None)
    if said is None:
        return None
    return (f"rank {os.environ.get('RANK')}: another rank of this torchrun job stopped ({said}); its own error "
            "line above, or torchrun's exit code for it below, is the cause")


def rank_seed(seed: int, r: int | None = None) -> int:
    """The data seed of rank ``r`` (default: this rank): ``seed`` itself on rank 0, so one rank reproduces a
    run without torchrun, else one derived from ``(seed, r)``."""
    r = rank() if r is None else r
    if r == 0:
        return seed
    return int(np.random.SeedSequence([seed, r]).generate_state(1, dtype=np.uint64)[0] >> 1)


def wrap(module: torch.nn.Module, **kwargs) -> torch.nn.Module:
    if not active():
        return module
    from torch.nn.parallel import DistributedDataParallel

    device = next(module.parameters()).device
    return DistributedDataParallel(module, device_ids=[device.index] if device.type == "cuda" else None, **kwargs)


@contextmanager
def main_first():
    """Run the block on rank 0 first, then on the other ranks (e.g. build a cache rank 0 writes)."""
    if active() and not is_main():
        dist.barrier()
    yield
    if active() and is_main():
        dist.barrier()


def from_main(value: float) -> float:
    """Rank 0's ``value`` on every rank (e.g. a time-based progress, so every rank stops at the same step)."""
    if not active():
        return value
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else "cpu"
    t = torch.tensor([float(value)], dtype=torch.float64, device=device)
    dist.broadcast(t, 0)
    return float(t.item())


def broadcast_parameters(params) -> None:
    if not active():
        return
    for p in params:
        dist.broadcast(p.data, 0)


def average_gradients(params) -> None:
    """Average the gradients of ``params`` over ranks, for a loop whose networks run several times per update
    (which DDP's hooks do not allow)."""
    if not active():
        return
    n = world_size()
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        dist.all_reduce(p.grad)
        p.grad.div_(n)
