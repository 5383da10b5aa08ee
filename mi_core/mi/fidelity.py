"""How faithful a predicted MI matrix is to the exact one, and how well an MI graph recovers known rules.

All functions take numpy arrays and look only at *masked x masked* pairs ``i < j`` (given positions carry no
MI by definition). States are stacked: ``pred``/``exact`` ``(S, N, N)``, ``masked`` ``(S, N)`` bool.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def pair_values(mi: np.ndarray, masked: np.ndarray) -> np.ndarray:
    """``(P,)`` the upper-triangle masked x masked entries of one ``(N, N)`` matrix, row-major."""
    iu, ju = np.triu_indices(mi.shape[0], k=1)
    keep = masked[iu] & masked[ju]
    return mi[iu[keep], ju[keep]]


def correlation(fn, x: np.ndarray, y: np.ndarray) -> float:
    """``fn`` (``stats.spearmanr``, ``stats.pearsonr``), NaN for fewer than 3 pairs or a constant side."""
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(fn(x, y)[0])


def _finite(stat, values: list[float]) -> float:
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr)]
    return float(stat(arr)) if len(arr) else float("nan")


def topk_hits(pred: np.ndarray, exact: np.ndarray, threshold: float) -> tuple[int, int]:
    """``(hits, k)``: k exact pairs above ``threshold``, of which ``hits`` are among the k highest predicted."""
    k = int((exact > threshold).sum())
    if k == 0:
        return 0, 0
    top = np.argsort(-pred, kind="stable")[:k]
    return int((exact[top] > threshold).sum()), k


def fidelity(pred: np.ndarray, exact: np.ndarray, masked: np.ndarray, threshold: float = 1e-2) -> dict:
    """Agreement of predicted and exact MI: pooled ``spearman``/``pearson``, their per-state medians, ``mae``
    and ``topk_precision`` (total :func:`topk_hits` over total k)."""
    p_list = [pair_values(p, m) for p, m in zip(pred, masked)]
    e_list = [pair_values(e, m) for e, m in zip(exact, masked)]
    p_all, e_all = np.concatenate(p_list), np.concatenate(e_list)
    hits = np.array([topk_hits(p, e, threshold) for p, e in zip(p_list, e_list)]).reshape(-1, 2)
    k_total = int(hits[:, 1].sum())
    return {"n_states": len(p_list), "n_pairs": len(p_all), "spearman": correlation(stats.spearmanr, p_all, e_all),
            "spearman_median": _finite(np.median, [correlation(stats.spearmanr, p, e) for p, e in zip(p_list, e_list)]),
            "pearson": correlation(stats.pearsonr, p_all, e_all),
            "pearson_median": _finite(np.median, [correlation(stats.pearsonr, p, e) for p, e in zip(p_list, e_list)]),
            "mae": float(np.abs(p_all - e_all).mean()) if len(p_all) else float("nan"),
            "topk_precision": float(hits[:, 0].sum() / k_total) if k_total else float("nan"),
            "topk_k": k_total, "edge_threshold": threshold}


def rule_recovery(mi: np.ndarray, masked: np.ndarray, rules: np.ndarray, threshold: float = 1e-2) -> dict:
    """How well one state's strongest MI edges recover ``rules`` ``(N, N)`` bool: ``rule_pairs`` K,
    ``r_precision`` (rule pairs among the K strongest), and ``precision``/``recall`` of the ``edges`` above
    ``threshold``."""
    scores, is_rule = pair_values(mi, masked), pair_values(rules, masked).astype(bool)
    k = int(is_rule.sum())
    top = np.argsort(-scores, kind="stable")[:k]
    edges = scores > threshold
    n_edges = int(edges.sum())
    return {"rule_pairs": k, "r_precision": float(is_rule[top].mean()) if k else float("nan"), "edges": n_edges,
            "precision": float((edges & is_rule).sum() / n_edges) if n_edges else float("nan"),
            "recall": float((edges & is_rule).sum() / k) if k else float("nan")}


def mean_recovery(rows: list[dict]) -> dict:
    """:func:`rule_recovery` results averaged over states (NaNs skipped), with ``n_states``."""
    keys = ("rule_pairs", "r_precision", "edges", "precision", "recall")
    out = {key: _finite(np.mean, [r[key] for r in rows]) for key in keys}
    out["n_states"] = len(rows)
    return out
