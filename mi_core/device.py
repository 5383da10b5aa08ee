"""Device choice, made once and passed down."""

from __future__ import annotations

import contextlib
import sys
import time

import torch

from mi_core.options import device_problem


def pick_device(name: str | None = None, threads: int | None = None) -> torch.device:
    """``torch.device(name)`` (``auto``: CUDA when present), after setting torch's CPU ``threads`` (0: torch's
    choice); ValueError on another name, or CUDA on a machine without it."""
    if threads:
        torch.set_num_threads(threads)
    if name in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if problem := device_problem(name):
        raise ValueError(problem)
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} requested but CUDA is not available on this machine")
    return device


def bf16_autocast(device, on: bool):
    """bf16 autocast on ``device``'s type when ``on``; else a context that leaves the caller's precision as it is
    (``torch.autocast(enabled=False)`` would turn off an autocast the caller is in)."""
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16) if on else contextlib.nullcontext()


def cpu_flags() -> set[str] | None:
    """The CPU's feature flags from ``/proc/cpuinfo`` (Linux x86), or None where they cannot be read."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), None)
    except OSError:
        return None


def slow_bf16(device) -> str | None:
    """A warning when bf16 autocast on ``device`` is emulated, on a CPU without ``avx512_bf16`` or ``amx_bf16``
    (5-9x slower than fp32); None otherwise."""
    if torch.device(device).type != "cpu":
        return None
    flags = cpu_flags()
    if flags is None or {"avx512_bf16", "amx_bf16"} & flags:
        return None
    return "warning: bf16 autocast on this CPU (no avx512_bf16 or amx_bf16) is emulated and much slower than fp32"


def use_bf16(bf16: bool, device, log=print) -> bool:
    """``bf16``, except where it is emulated (:func:`slow_bf16`): then False, with a line to ``log``."""
    if bf16 and (note := slow_bf16(device)):
        log(f"{note}: training in fp32")
        return False
    return bool(bf16)


def warn_if_slow_bf16(device, bf16: bool, hint: str = "leave out --bf16") -> None:
    """Print :func:`slow_bf16`'s warning and ``hint`` on stderr when ``bf16`` is slow here."""
    if bf16 and (note := slow_bf16(device)):
        print(f"{note}: {hint}", file=sys.stderr)


def synchronize(device) -> None:
    """Wait for queued work on ``device`` (a no-op off CUDA)."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, device):
    """``(fn(), seconds)``, the device synchronized around the clock."""
    synchronize(device)
    start = time.perf_counter()
    out = fn()
    synchronize(device)
    return out, time.perf_counter() - start
