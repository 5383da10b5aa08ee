"""Command-line parsing with a checked range for every numeric option.

:class:`ArgumentParser` is ``argparse.ArgumentParser`` plus one rule: after parsing, every option whose
``type`` is ``int`` or ``float`` must hold a value inside its range (floats must also be finite), else the
parser exits with status 2 and one line naming the option, the value and the accepted range, before any
work starts. A range comes from ``add_argument(..., bounds=(lo, hi))``, else from :data:`RANGES` by the
option's destination name, else from :data:`DEFAULT_INT` / :data:`DEFAULT_FLOAT`. ``None`` (an unset
optional value) is always accepted.
"""

from __future__ import annotations

import argparse
import math

SEED_MAX = 2**63 - 1
DEFAULT_INT = (0, 2**31 - 1)
DEFAULT_FLOAT = (-1e12, 1e12)

RANGES: dict[str, tuple[float, float]] = {
    # shared
    "seed": (0, SEED_MAX), "split_seed": (0, SEED_MAX),
    "threads": (0, 1024),
    "limit": (1, 10_000_000), "limit_reference": (1, 10_000_000), "record": (1, 10_000_000),
    "batch_size": (1, 65_536), "batch": (1, 65_536), "max_batch": (1, 65_536),
    "samples": (1, 1_000_000), "states": (1, 1_000_000), "per_level": (1, 1_000_000), "n": (1, 10_000),
    "length": (1, 100_000), "min_len": (1, 100_000), "max_len": (1, 100_000), "min_masked": (1, 100_000),
    "temperature": (0, 100), "eps": (0, 1), "mask_rate": (0, 1), "threshold": (0, 100),
    "paced_threshold": (0, 1),
    # training
    "steps": (1, 1_000_000_000), "updates": (1, 1_000_000_000), "warmup": (0, 1_000_000_000),
    "eval_every": (1, 1_000_000_000), "log_every": (1, 1_000_000_000), "eval_puzzles": (1, 10_000_000), "eval_sequences": (1, 10_000_000),
    "eval_per_length": (1, 10_000_000), "puzzle_pool": (1, 100_000_000), "grid_pool": (1, 100_000_000),
    "pool": (1, 100_000_000), "shard_size": (1, 1_000_000),
    "lr": (1e-12, 10), "denoiser_lr": (1e-12, 10), "weight_decay": (0, 10), "clip": (0, 1e6),
    "time_budget": (0, 1e8), "tau": (1e-6, 100), "kl_weight": (1e-6, 1), "floor": (1e-12, 1),
    "val_frac": (1e-6, 1 - 1e-6), "puzzle_frac": (0, 1), "dropout": (0, 0.99),
    "min_seconds": (0, 86_400),
    # model shapes
    "box": (2, 3), "d_model": (1, 8192), "n_layers": (1, 256), "n_heads": (1, 256), "d_ff": (1, 65_536),
    "width": (1, 8192), "d_pos": (0, 8192), "d_node": (1, 8192), "d_proj": (1, 8192), "d_pair": (1, 8192),
    "rel_buckets": (0, 4096), "loops": (1, 64),
}


def format_range(lo, hi) -> str:
    return f"{lo:g}..{hi:g}" if isinstance(lo, float) or isinstance(hi, float) else f"{lo}..{hi}"


def range_error(option: str, value, lo, hi) -> str | None:
    """The one-line complaint about ``value`` of ``option`` outside ``lo..hi`` (None when it fits)."""
    if value is None:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"argument {option}: {value} is not a finite number; accepted range {format_range(lo, hi)}"
    if not lo <= value <= hi:
        return f"argument {option}: {value} is outside the accepted range {format_range(lo, hi)}"
    return None


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` that checks every int and float option against its range after parsing."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._bounds: dict[str, tuple[float, float]] = {}

    def add_argument(self, *args, bounds: tuple[float, float] | None = None, **kwargs):
        action = super().add_argument(*args, **kwargs)
        if bounds is not None:
            self._bounds[action.dest] = bounds
        return action

    def bounds_of(self, action: argparse.Action) -> tuple[float, float]:
        if action.dest in self._bounds:
            return self._bounds[action.dest]
        if action.dest in RANGES:
            return RANGES[action.dest]
        return DEFAULT_INT if action.type is int else DEFAULT_FLOAT

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        for action in self._actions:
            if action.type not in (int, float) or not hasattr(namespace, action.dest):
                continue
            option = action.option_strings[-1] if action.option_strings else action.dest
            problem = range_error(option, getattr(namespace, action.dest), *self.bounds_of(action))
            if problem:
                self.error(problem)
        return namespace, extras

    def error(self, message: str):
        """One ``error:`` line on stderr naming the command, and exit status 2 (no usage block)."""
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def add_force(parser: argparse.ArgumentParser) -> None:
    """``--force``: allow the command to overwrite its existing output files."""
    parser.add_argument("--force", action="store_true", help="overwrite existing output files")


def parse_lengths(spec: str) -> tuple[int, int]:
    """``"50-100"`` -> ``(50, 100)`` (inclusive); ``"80"`` -> ``(80, 80)``.

    Raises:
        ValueError: not ``N`` or ``LO-HI`` with ``1 <= LO <= HI``.
    """
    lo, sep, hi = str(spec).strip().partition("-")
    try:
        lo_n = int(lo)
        hi_n = int(hi) if sep else lo_n
    except ValueError:
        raise ValueError(f"--lengths expects N or LO-HI (e.g. 50-100), got {spec!r}") from None
    if lo_n < 1 or hi_n < lo_n:
        raise ValueError(f"--lengths {spec!r}: need 1 <= LO <= HI")
    return lo_n, hi_n


def parse_sets(pairs: list[str]) -> dict[str, str]:
    """``["k=4", "gamma=0.2"]`` -> ``{"k": "4", "gamma": "0.2"}``; raises ValueError on a malformed pair."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"--set expects key=value, got {pair!r}")
        params[key.strip()] = value.strip()
    return params
