"""Dyck-2 words over ( ) [ ]: tokens, a uniform generator, a checker and a held-out split by hash."""

from __future__ import annotations

import hashlib
from functools import lru_cache

import numpy as np

ALPHABET = ("(", ")", "[", "]")
MASK_ID, PAD_ID = 0, 5  # tokens 1..4 are ( ) [ ]
OPEN, CLOSE = {1: 2, 3: 4}, {2: 1, 4: 3}
MIN_LEN, MAX_LEN = 8, 16


@lru_cache(maxsize=None)
def paths(rest: int, height: int) -> int:
    """Number of bracket shapes of ``rest`` more symbols from ``height`` open brackets down to 0."""
    if height < 0 or height > rest:
        return 0
    if rest == 0:
        return 1
    return paths(rest - 1, height + 1) + paths(rest - 1, height - 1)


def random_word(n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniform Dyck-2 word of even length ``n`` (token ids)."""
    out, stack = [], []
    for i in range(n):
        rest, h = n - i, len(stack)
        p_open = paths(rest - 1, h + 1) / paths(rest, h)
        if rng.random() < p_open:
            t = 1 if rng.random() < 0.5 else 3
            stack.append(t)
            out.append(t)
        else:
            out.append(OPEN[stack.pop()])
    return np.array(out, dtype=np.int64)


def is_dyck(tokens) -> bool:
    stack = []
    for t in np.asarray(tokens).tolist():
        if t in OPEN:
            stack.append(t)
        elif t in CLOSE:
            if not stack or stack.pop() != CLOSE[t]:
                return False
        else:
            return False  # a mask or padding left
    return not stack


def completable(tokens) -> bool:
    """Whether some well-nested word keeps every given bracket of ``tokens`` (``MASK_ID``: any bracket)."""
    tokens = tuple(np.asarray(tokens).tolist())

    @lru_cache(maxsize=None)
    def fits(i: int, stack: tuple) -> bool:
        if len(stack) > len(tokens) - i:  # too many open to close in time
            return False
        if i == len(tokens):
            return not stack
        for t in (1, 2, 3, 4) if tokens[i] == MASK_ID else (tokens[i],):
            if t in OPEN and fits(i + 1, (*stack, t)):
                return True
            if t in CLOSE and stack and stack[-1] == CLOSE[t] and fits(i + 1, stack[:-1]):
                return True
        return False

    return fits(0, ())


def matching(tokens) -> list[tuple[int, int]]:
    """(i, j) of each matched pair of a well-nested word."""
    stack, pairs = [], []
    for j, t in enumerate(np.asarray(tokens).tolist()):
        if t in OPEN:
            stack.append(j)
        else:
            pairs.append((stack.pop(), j))
    return pairs


def held_out(tokens) -> bool:
    """A tenth of all words (by a hash of the word) are never trained on."""
    return hashlib.sha256(bytes(np.asarray(tokens, dtype=np.uint8))).digest()[0] < 26


def draw_word(rng: np.random.Generator, split: str, lengths=(MIN_LEN, MAX_LEN)) -> np.ndarray:
    """A uniform word of a random even length in ``lengths`` from ``split`` (train or heldout)."""
    lo, hi = lengths
    while True:
        n = 2 * int(rng.integers(lo // 2, hi // 2 + 1))
        w = random_word(n, rng)
        if held_out(w) == (split == "heldout"):
            return w

