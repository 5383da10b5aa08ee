"""Entropies in nats, always computed in float32 or wider (bf16 keeps about 3 significant digits)."""

from __future__ import annotations

import torch


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Shannon entropy (nats) over the last axis: ``(..., V)`` logits -> ``(...)`` float32 (a ``-inf`` logit, an
    impossible value, adds 0)."""
    logp = logits.float().log_softmax(-1)
    return -torch.where(logp > float("-inf"), logp.exp() * logp, 0.0).sum(-1)


def entropy(probs: torch.Tensor) -> torch.Tensor:
    """Shannon entropy (nats) over the last axis of probabilities ``(..., V)`` (0 log 0 = 0)."""
    p = probs.double() if probs.dtype == torch.float64 else probs.float()
    return -torch.special.xlogy(p, p).sum(-1)
