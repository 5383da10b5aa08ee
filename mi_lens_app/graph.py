"""The MI dependency graph of one state (networkx; no streamlit, no torch).

Nodes are masked positions; an edge joins two masked positions whose MI passes a threshold or is among
the ``top_k`` strongest, with attributes ``mi`` (nats) and ``rule`` (the pair shares a known constraint,
for Sudoku the same row, column or box), so a page can show what the model learned beyond the rules.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

MAX_EDGES = 300  # edges drawn at most: 1,711 edges took 14 s to draw and read as a hairball


def dependency_graph(mi: np.ndarray, masked: np.ndarray, rules: np.ndarray, *, threshold: float | None = None,
                     top_k: int | None = None, cap: int | None = None) -> nx.Graph:
    """Build the graph from ``mi`` ``(N, N)``, ``masked`` ``(N,)`` bool and ``rules`` ``(N, N)`` bool.

    Give ``threshold`` (keep pairs with MI above it) or ``top_k`` (keep the k strongest pairs with MI > 0, and
    those tied with the k-th: a cut among equal pairs would keep an arbitrary few, lopsided on a symmetric
    state); ``cap`` keeps at most that many of them, the strongest. The graph's ``candidates`` attribute counts
    the pairs that passed before the cap, ``tied`` those kept beyond ``top_k`` for a tie, and ``tie_cut`` says
    that the ties were more than ``cap`` allows, so ``top_k`` of the equal pairs were kept, arbitrarily.

    Raises:
        ValueError: neither or both of threshold and top_k, or a negative one.
    """
    if (threshold is None) == (top_k is None):
        raise ValueError("give exactly one of threshold and top_k")
    if (threshold is not None and threshold < 0) or (top_k is not None and top_k < 0):
        raise ValueError("threshold and top_k must be >= 0")
    masked = np.asarray(masked, bool)
    iu, ju = np.triu_indices(mi.shape[0], k=1)
    keep = masked[iu] & masked[ju]
    iu, ju = iu[keep], ju[keep]
    w = np.asarray(mi, float)[iu, ju]
    tied, tie_cut = 0, False
    if threshold is not None:
        pick = np.flatnonzero(w > threshold)
    else:
        order = np.argsort(-w, kind="stable")
        if 0 < top_k < len(order):  # sorted, the pairs tied with the k-th follow it
            same = np.isclose(w[order[top_k:]], w[order[top_k - 1]], rtol=1e-6, atol=0.0)
            tied = len(same) if same.all() else int(np.argmin(same))
            if cap is not None and top_k + tied > cap:
                tied, tie_cut = 0, True
        order = order[:top_k + tied]
        pick = order[w[order] > 0]
        tied = max(0, len(pick) - top_k)
    candidates = len(pick)
    if cap is not None and len(pick) > cap:
        pick = pick[np.argsort(-w[pick], kind="stable")[:cap]]
    graph = nx.Graph(candidates=candidates, tied=tied, tie_cut=tie_cut)
    graph.add_nodes_from(int(c) for c in np.flatnonzero(masked))
    for e in pick:
        i, j = int(iu[e]), int(ju[e])
        graph.add_edge(i, j, mi=float(w[e]), rule=bool(rules[i, j]))
    return graph


def edge_list(graph: nx.Graph) -> list[tuple[int, int, float, bool]]:
    """``(i, j, mi, rule)`` for every edge, strongest first."""
    edges = [(i, j, d["mi"], d["rule"]) for i, j, d in graph.edges(data=True)]
    return sorted(edges, key=lambda e: -e[2])


def strength(graph: nx.Graph, cells: int) -> np.ndarray:
    """``(N,)`` weighted degree (sum of MI over a node's edges), 0 off the graph."""
    out = np.zeros(cells)
    for node, value in graph.degree(weight="mi"):
        out[node] = value
    return out


def summary(graph: nx.Graph) -> dict:
    """``edges``, ``rule_edges``, ``other_edges``, ``rule_fraction`` and ``components`` (of nodes with an edge)."""
    rule = sum(1 for *_, d in graph.edges(data=True) if d["rule"])
    total = graph.number_of_edges()
    linked = graph.subgraph([n for n, d in graph.degree() if d > 0])
    return {"edges": total, "rule_edges": rule, "other_edges": total - rule,
            "rule_fraction": rule / total if total else float("nan"),
            "components": nx.number_connected_components(linked) if linked.number_of_nodes() else 0}


def pair_rows(edges: list[tuple[int, int, float, bool | None]], labels: list[str],
              rule_name: str = "same row, column or box") -> dict[str, list]:
    """The pairs ``(i, j, mi, rule)`` (``edge_list``'s, strongest first) as a table's columns: what the graph and
    the heatmap show, for a screen reader (they read a chart as its tick labels) and for reading off values.
    ``rule`` None for every pair (a domain without rules): no rule column."""
    rows = {"pair": [f"{labels[i]} · {labels[j]}" for i, j, *_ in edges],
            "MI (nats)": [float(f"{w:.4g}") for _, _, w, _ in edges]}
    if any(r is not None for *_, r in edges):
        rows[rule_name] = ["yes" if r else "no" for *_, r in edges]
    return rows
