"""Sudoku state samplers: partially decoded states for the estimator's data and its evaluation.

Three sources (:data:`SOURCES`): a solved grid masked uniformly at a random rate, a puzzle's own clue
pattern, and an intermediate state of a top-k decoding run. They sit with decoding (they run the decode
loop) so that both ``mi_core.train`` and ``mi_core.bench`` can use them without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mi_core.decoding import decode, make_strategy
from mi_core.domains.sudoku import MASK_ID
from mi_core.domains.sudoku_gen import random_transform

SOURCES = ("uniform", "puzzle", "decode")


@dataclass(frozen=True)
class StateMix:
    """Relative weights of the three state sources (need not sum to 1)."""

    uniform: float = 0.4
    puzzle: float = 0.2
    decode: float = 0.4

    def __post_init__(self):
        weights = self.weights()
        if (weights < 0).any() or weights.sum() <= 0:
            raise ValueError(f"state mix weights must be >= 0 and not all 0, got {self.as_text()}")

    def weights(self) -> np.ndarray:
        return np.array([self.uniform, self.puzzle, self.decode], dtype=float)

    def as_text(self) -> str:
        return ",".join(f"{w:g}" for w in self.weights())

    @classmethod
    def parse(cls, text: str) -> StateMix:
        """``"0.4,0.2,0.4"`` (uniform, puzzle, decode) -> StateMix; ValueError on anything else."""
        parts = text.split(",")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = []
        if len(values) != 3:
            raise ValueError(f"--mix expects three numbers 'uniform,puzzle,decode', got {text!r}")
        return cls(*values)


def ensure_masked(mask: np.ndarray, minimum: int, rng: np.random.Generator) -> np.ndarray:
    """``(N,)`` bool mask with extra random cells masked until at least ``minimum`` are."""
    mask = mask.copy()
    short = minimum - int(mask.sum())
    if short > 0:
        mask[rng.choice(np.flatnonzero(~mask), size=short, replace=False)] = True
    return mask


def uniform_state(solution: np.ndarray, rng: np.random.Generator, minimum: int) -> np.ndarray:
    """A solved grid ``(N,)`` with each cell masked (0) at a rate t ~ U(0, 1)."""
    mask = ensure_masked(rng.random(solution.shape) < rng.random(), minimum, rng)
    return np.where(mask, MASK_ID, solution)


def decode_states(model, starts: np.ndarray, rng: np.random.Generator, minimum: int, device) -> np.ndarray:
    """One random intermediate state ``(B, N)`` of a decoding run from each start ``(B, N)``.

    The run uses the top-k lowest-entropy strategy with k in {1, 2, 3, 4} and temperature 0 or 1, drawn
    once for the batch; each row's state is drawn uniformly from the steps that still leave ``minimum``
    cells masked (the start itself when none does).
    """
    strategy = make_strategy("topk", k=int(rng.integers(1, 5)))
    temperature = float(rng.choice([0.0, 1.0]))
    tokens = torch.as_tensor(starts, device=device)
    steps = decode(model, tokens, strategy, temperature=temperature, seed=int(rng.integers(2**31)))
    frames = [f.tokens.cpu().numpy() for f in steps]
    out = starts.copy()
    for b in range(len(starts)):
        options = [f[b] for f in frames if (f[b] == model.mask_id).sum() >= minimum]
        if options:
            out[b] = options[int(rng.integers(len(options)))]
    return out


def draw_states(model, puzzles: np.ndarray, solutions: np.ndarray, n: int, mix: StateMix,
                rng: np.random.Generator, *, transform: bool, minimum: int = 2,
                device="cpu") -> tuple[np.ndarray, np.ndarray]:
    """``n`` states drawn from ``(P, N)`` puzzles and their solutions (0 = blank).

    Returns ``(tokens (n, N) int64, source (n,) int64)`` with ``source`` indexing :data:`SOURCES`.
    With ``transform`` each state's (puzzle, solution) gets a fresh random validity-preserving transform.
    """
    source = rng.choice(len(SOURCES), size=n, p=mix.weights() / mix.weights().sum())
    pick = rng.integers(len(puzzles), size=n)
    pairs = np.stack([puzzles[pick], solutions[pick]], 1).reshape(2 * n, -1)
    if transform and n:
        pairs = random_transform(pairs, rng, pair=2)
    pairs = pairs.reshape(n, 2, -1)
    tokens = pairs[:, 0].copy()
    for s in np.flatnonzero(source == 0):
        tokens[s] = uniform_state(pairs[s, 1], rng, minimum)
    dec = np.flatnonzero(source == 2)
    if len(dec):
        tokens[dec] = decode_states(model, pairs[dec, 0], rng, minimum, device)
    return tokens.astype(np.int64), source.astype(np.int64)
