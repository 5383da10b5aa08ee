"""Pieces of the estimator evaluation shared by both domains (``eval-estimator sudoku|protein``): the
headline fidelity metrics, grouping by label, mask-ratio bins and the JSON and table formatting.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from mi_core.mi.fidelity import fidelity

RATIO_BINS = (0.0, 0.25, 0.5, 0.75, 1.0)
HEADLINE = ("spearman", "spearman_median", "pearson", "pearson_median", "mae", "topk_precision")



def ratio_label(ratio: float) -> str:
    for lo, hi in itertools.pairwise(RATIO_BINS):
        if ratio <= hi:
            return f"{lo:.2f}-{hi:.2f}"
    raise ValueError(f"mask ratio {ratio} is above 1")


def grouped(pred, exact, masked, labels: list[str], threshold: float) -> dict:
    """:func:`fidelity` per distinct label (sorted), over the states carrying it."""
    labels = np.asarray(labels)
    return {lab: fidelity(pred[labels == lab], exact[labels == lab], masked[labels == lab], threshold)
            for lab in sorted(set(labels.tolist()))}


def _fmt(x, spec: str = ".3f") -> str:
    return "n/a" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def _fid_row(name: str, f: dict) -> str:
    return (f"| {name} | {f['n_states']} | {f['n_pairs']} | {_fmt(f['spearman'])} | {_fmt(f['spearman_median'])} | "
            f"{_fmt(f['pearson'])} | {_fmt(f['mae'], '.2e')} | {_fmt(f['topk_precision'])} ({f['topk_k']}) |")


def json_ready(obj):
    """NaN and infinity become None (JSON has no NaN); numpy scalars become Python numbers."""
    if isinstance(obj, dict):
        return {k: json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(v) for v in obj]
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    return obj
