"""What a recurrent model (a weight-tied block applied ``T`` times, one head) thinks at each iteration."""

from __future__ import annotations

import numpy as np
import torch

from mi_core.models.base import MaskedLM, MDMOutput, Wrapped


def iterations_of(model) -> int:
    """The iterations ``model`` runs at inference (1 for a model that is not recurrent)."""
    return int(getattr(model, "iterations", 1) or 1)


def is_recurrent(model) -> bool:
    return iterations_of(model) > 1


def run_for(model, iterations: int) -> None:
    """Set the iterations per pass of a recurrent model the caller owns (a shared one: :class:`Truncated`)."""
    if not is_recurrent(model):
        raise ValueError(f"cannot run for {iterations} iterations: the model is not recurrent")
    model.iterations = int(iterations)


@torch.no_grad()
def per_iteration_logits(model, tokens: torch.Tensor) -> torch.Tensor:
    """``(T, B, N, V)`` float32 logits after each of the model's ``T`` iterations, from one pass."""
    return torch.stack(model(tokens, keep=iterations_of(model)).per_iteration).float()


def settle_iteration(argmax: np.ndarray) -> np.ndarray:
    """``(N,)`` the first iteration (1-based) from which each position's ``(T, N)`` argmax stays the same."""
    argmax = np.asarray(argmax)
    if argmax.ndim != 2 or argmax.shape[0] < 1:
        raise ValueError(f"argmax must be (T, N) with T >= 1, got shape {argmax.shape}")
    changed = argmax[:-1] != argmax[1:]  # (T-1, N)
    if not changed.size:
        return np.ones(argmax.shape[1], dtype=int)
    # the last change is between t and t+1 (0-based): the cell settles at iteration t+2 (1-based)
    last = np.where(changed.any(0), changed.shape[0] - 1 - np.argmax(changed[::-1], axis=0), -1)
    return last + 2


class Truncated(Wrapped):
    """``model`` run for its first ``iterations`` iterations only, without changing the shared model."""

    def __init__(self, model: MaskedLM, iterations: int):
        if not 1 <= int(iterations) <= 4 * iterations_of(model):
            raise ValueError(f"iterations must be 1 to {4 * iterations_of(model)}, got {iterations}")
        super().__init__(model)
        self.iterations = int(iterations)

    def forward(self, tokens: torch.Tensor) -> MDMOutput:
        return self.model(tokens, iterations=self.iterations)
