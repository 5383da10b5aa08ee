"""Decode a set of Sudoku puzzles with one sampler and score the results."""

from __future__ import annotations

import numpy as np
import torch

from mi_core.bench import decode
from mi_core.bench.metrics import SolvedMetric
from mi_core.domains.sudoku import PuzzleRecord, parse_grid, solutions_for  # noqa: F401  (solutions_for re-exported)
from mi_core.mi.estimator import SHIPPED


def with_default_estimator(strategy, path: str = SHIPPED):
    """Point a strategy that reads an MI estimator (``estimator`` left unset) at ``path`` (by default the shipped
    estimator of the model it decodes with)."""
    if decode.lacks_mi_source(strategy):
        strategy.estimator = path
    return strategy


def warm_up(model, records: list[PuzzleRecord], strategy, device, bf16: bool = False) -> None:
    """Decode the first puzzle once, untimed, so no timed run pays one-off start-up costs."""
    evaluate(model, records[:1], strategy, batch_size=1, device=device, bf16=bf16)


def evaluate(model, records: list[PuzzleRecord], strategy, *, batch_size: int = 256, temperature: float = 0.0,
             seed: int = 0, device: torch.device | str = "cpu", progress=None, bf16: bool = False) -> dict:
    """Decode every puzzle and score it against its unique solution (:class:`SolvedMetric`): ``n``,
    ``accuracy``, ``cell_accuracy`` (over blank cells), ``mean_passes``, ``seconds``, ``passes`` (per puzzle)
    and, when records carry levels, ``by_level``. Each puzzle has its own seed, whatever ``batch_size``."""
    solutions = solutions_for(records)
    templates = [np.asarray(parse_grid(r.puzzle, None)) for r in records]
    metric = SolvedMetric([parse_grid(s, None) for s in solutions], [r.level for r in records], model.mask_id)
    result, gen = decode.evaluate(model, templates, strategy, metric, batch_size=batch_size, temperature=temperature,
                                  seed=seed, device=device, progress=progress, bf16=bf16)
    by_level = result.pop("by_level", None)
    result.update(seconds=gen.seconds, passes=gen.passes)
    return result if by_level is None else {**result, "by_level": by_level}
