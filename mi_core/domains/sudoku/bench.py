"""Decode Sudoku puzzle records with one sampler and score them (``bench-order sudoku`` and the study scripts)."""

from __future__ import annotations

import numpy as np

from mi_core.bench import decode
from mi_core.bench.metrics import SolvedMetric
from mi_core.domains.sudoku import PuzzleRecord, parse_grid, solutions_for
from mi_core.mi.estimator import SHIPPED

LEVELS = ["Beginner", "Easy", "Medium", "Hard", "Expert"]  # the Kaggle graded file's, easiest first


def with_default_estimator(strategy, estimator=SHIPPED):
    """Point a strategy that reads an MI estimator (``estimator`` left unset) at ``estimator``: by default the
    shipped estimator of the model it decodes with."""
    if decode.lacks_mi_source(strategy):
        strategy.estimator = estimator
    return strategy


def evaluate(model, records: list[PuzzleRecord], strategy, **run) -> dict:
    """Decode every puzzle (``run``: :func:`~mi_core.bench.decode.decode_all`'s keywords) and score it against its
    unique solution (:class:`SolvedMetric`): ``n``, ``accuracy``, ``cell_accuracy`` (over blank cells),
    ``mean_passes``, ``seconds``, ``passes`` (per puzzle) and, when records carry levels, ``by_level``."""
    templates = [np.asarray(parse_grid(r.puzzle, None)) for r in records]
    solutions = [parse_grid(s, None) for s in solutions_for(records)]
    metric = SolvedMetric(solutions, [r.level for r in records], model.mask_id)
    result, gen = decode.evaluate(model, templates, strategy, metric, **run)
    result |= {"seconds": gen.seconds, "passes": gen.passes}
    if "by_level" in result:
        result["by_level"] = result.pop("by_level")
    return result
