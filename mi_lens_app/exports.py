"""Downloads: MI matrices as CSV and JSON, decoding traces as JSON, figures as standalone HTML.

Pure functions over the app's results (no streamlit, no torch); each returns the file's text.
"""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import plotly.graph_objects as go


def _clean(value):
    """JSON-ready: numpy to lists and numbers, NaN and inf to None."""
    if isinstance(value, np.ndarray):
        return _clean(value.tolist())
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def mi_csv(mi: np.ndarray, labels: list[str]) -> str:
    """An ``(N, N)`` matrix as CSV with cell labels as the header row and first column."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["cell", *labels])
    for label, row in zip(labels, np.asarray(mi, float)):
        writer.writerow([label, *(f"{v:.8g}" for v in row)])
    return buf.getvalue()


def mi_json(mi_map, puzzle: str, domain: str, labels: list[str]) -> str:
    """An :class:`~mi_lens_app.core.MIMap` (or anything with the same fields) as JSON."""
    return json.dumps(_clean({
        "domain": domain, "puzzle": puzzle, "source": mi_map.source, "passes": mi_map.passes,
        "seconds": mi_map.seconds, "labels": labels, "masked": mi_map.masked, "entropy": mi_map.entropy,
        "marginals": mi_map.marginals, "mi": mi_map.mi,
    }))


def trace_json(trace, puzzle: str, domain: str, labels: list[str], temperature: float, seed: int,
               values: tuple[str, ...] | None = None) -> str:
    """A :class:`~mi_lens_app.core.Trace` as JSON: one entry per frame, unmasked cells with their entropies.

    ``values``: the name of each value (token ``v + 1``), e.g. amino-acid letters; default the digits
    themselves. Blanks are ``.``."""
    name = (lambda t: str(int(t))) if values is None else (lambda t: values[int(t) - 1])
    steps = []
    for s in trace.steps:
        chosen = np.flatnonzero(s.chosen)
        steps.append({
            "step": s.step, "grid": "".join("." if t == 0 else name(t) for t in s.tokens),
            "unmasked": [{"cell": labels[c], "index": int(c), "digit": int(s.tokens[c]), "value": name(s.tokens[c]),
                          "entropy": s.entropy[c], "confidence": s.confidence[c]} for c in chosen],
            "remasked": [labels[c] for c in np.flatnonzero(s.remasked)], "passes": s.passes,
            "extra_passes": s.extra_passes, "budget_spent": s.budget_spent, "mi_among": s.mi_among,
            "errors": [labels[c] for c in np.flatnonzero(s.errors)], "info": s.info,
            **({"per_position": s.maps} if s.maps else {}),  # e.g. the order selector's select_prob, (N,) each
        })
    return json.dumps(_clean({
        "domain": domain, "puzzle": puzzle, "strategy": trace.strategy, "params": trace.params,
        "temperature": temperature, "seed": seed, "mi_source": trace.mi_source, "solved": trace.solved,
        "stopped": trace.stopped, "seconds": trace.seconds, "steps": steps,
    }))


def figure_html(fig: go.Figure) -> str:
    """A standalone HTML page with plotly.js inlined (opens offline)."""
    return fig.to_html(full_html=True, include_plotlyjs=True)
