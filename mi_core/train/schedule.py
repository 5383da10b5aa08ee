"""The learning-rate schedule of the MDM trainers: warm-up, then cosine decay by steps or by time."""

from __future__ import annotations

import math


def progress(step: int, elapsed: float, cfg) -> float:
    """Fraction of the run done: by steps, or by time when a time budget is set (whichever is further)."""
    frac = step / cfg.steps
    return max(frac, elapsed / cfg.time_budget) if cfg.time_budget > 0 else frac


def lr_at(step: int, frac: float, cfg) -> float:
    """Linear warm-up over ``cfg.warmup`` steps, then cosine decay to 5% of the peak at ``frac = 1``."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    return cfg.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))
