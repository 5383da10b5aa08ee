"""Decode metrics, used torchmetrics-style: ``update`` with each decoded sequence, then ``compute`` a
JSON-ready dict. A domain names its metric (``Domain.metric``)."""

from __future__ import annotations

from abc import abstractmethod
from collections import defaultdict

import numpy as np

PASS_KEYS = ("mean_passes", "passes_min", "passes_median", "passes_max", "mean_extra_passes")  # of pass_stats


def pass_stats(passes: list[int], extra: list[int]) -> dict:
    """The :data:`PASS_KEYS` of each input's passes and its passes a strategy spent on its own (``extra``)."""
    p = np.asarray(passes)
    return {"mean_passes": float(p.mean()), "passes_min": int(p.min()), "passes_median": float(np.median(p)),
            "passes_max": int(p.max()), "mean_extra_passes": float(np.mean(extra))}


class SolvedMetric:
    """Solved when every position matches the one solution; also the accuracy over the masked positions, and
    per level when known. ``solutions[i]``: token ids of input ``i``'s solution; ``levels[i]``: its label. The passes a
    strategy spent on its own (``mi_exact``'s probe) are ``mean_extra_passes``, reported where any were spent."""

    needs_solution = True

    def __init__(self, solutions, levels=None, mask_id: int = 0):
        self.solutions = [np.asarray(s) for s in solutions]
        self.levels = list(levels) if levels is not None else [None] * len(self.solutions)
        self.mask_id = mask_id
        self.rows: list[tuple] = []  # (level, solved, right blanks, blanks, passes, extra passes)

    def update(self, index: int, start: np.ndarray, final: np.ndarray, passes: int, extra: int = 0) -> None:
        target = self.solutions[index]
        blank = np.asarray(start) == self.mask_id
        right = (np.asarray(final) == target) & blank
        self.rows.append((self.levels[index], bool((final == target).all()), int(right.sum()), int(blank.sum()),
                          int(passes), int(extra)))

    @staticmethod
    def _summary(rows: list[tuple]) -> dict:
        n, blanks = len(rows), sum(r[3] for r in rows)
        return {"n": n, "accuracy": sum(r[1] for r in rows) / n,
                "cell_accuracy": sum(r[2] for r in rows) / blanks if blanks else 1.0,  # no blank: none wrong
                "mean_passes": sum(r[4] for r in rows) / n,
                **({"mean_extra_passes": sum(r[5] for r in rows) / n} if any(r[5] for r in rows) else {})}

    def compute(self) -> dict:
        result = self._summary(self.rows)
        if {r[0] for r in self.rows} != {None}:
            groups = defaultdict(list)
            for r in self.rows:
                groups[r[0] or "unlabelled"].append(r)
            result["by_level"] = {level: self._summary(group) for level, group in groups.items()}
        return result


class VerifiedMetric:
    """Right when :meth:`verify` accepts the decode: a domain's rule check needs no solution. A domain with a
    ``Domain.verify`` subclasses this with ``verify = staticmethod(its_verify)`` and gives the subclass as its
    ``metric``; ``compute`` gives ``n``, ``accuracy`` and :func:`pass_stats`."""

    needs_solution = False

    @staticmethod
    @abstractmethod
    def verify(start: np.ndarray, final: np.ndarray) -> bool:
        """``start``, ``final`` ``(N,)`` token ids -> whether ``final`` keeps ``start``'s givens and the rules."""
        raise NotImplementedError

    def __init__(self, solutions=None, levels=None, mask_id: int = 0):
        self.right: list[bool] = []
        self.passes: list[int] = []
        self.extra: list[int] = []

    def update(self, index: int, start, final, passes: int, extra: int = 0) -> None:
        self.right.append(bool(self.verify(np.asarray(start), np.asarray(final))))
        self.passes.append(int(passes))
        self.extra.append(int(extra))

    def compute(self) -> dict:
        return {"n": len(self.right), "accuracy": float(np.mean(self.right)), **pass_stats(self.passes, self.extra)}
