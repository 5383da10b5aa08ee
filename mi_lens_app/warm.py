"""The warm-up: every domain's model, estimator and order selector loaded, and the pages' modules imported, in a
background thread as the server starts, so the first map or decoding a visitor asks for does not wait for them.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import time
from collections.abc import Callable

import numpy as np

from mi_lens_app import core
from mi_lens_app.domains import DOMAINS
from mi_lens_app.support import USER_ERRORS, estimator, model, selector

_warm_lock = threading.Lock()
_warm_started = False
WARM_THREAD = "mi-lens-warm-up"
# the logger of Streamlit's "missing ScriptRunContext!" warning, which every cached call of the warm-up thread
# (a thread outside any script run, on purpose) logged: a page of them at each server start
_CTX_LOGGER = "streamlit.runtime.scriptrunner_utils.script_run_context"


class _WarmThreadQuiet(logging.Filter):
    """Drops the missing-ScriptRunContext warning of the warm-up thread only (elsewhere it may mean a bug)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (threading.current_thread().name == WARM_THREAD and "missing ScriptRunContext" in record.msg)


def quiet_warm_thread() -> None:
    """Install :class:`_WarmThreadQuiet` on Streamlit's logger (once)."""
    logger = logging.getLogger(_CTX_LOGGER)
    if not any(isinstance(f, _WarmThreadQuiet) for f in logger.filters):
        logger.addFilter(_WarmThreadQuiet())


def warm_up(then: Callable[[float], None] | None = None) -> bool:
    """Start loading every domain's model, estimator and order selector in a background thread, once per
    process, so the first map or decoding does not wait for them: the launcher (``python -m mi_lens_app.serve``)
    calls it as the server starts, and every page calls it too (for ``streamlit run app.py``, where the first
    page view starts it). ``then(seconds)`` is called when it is done. ``MI_LENS_WARM=0`` turns it off (the tests
    swap models between runs). Returns whether this call started it."""
    global _warm_started
    if os.environ.get("MI_LENS_WARM", "1") == "0":
        return False
    with _warm_lock:
        if _warm_started:
            return False
        _warm_started = True
    quiet_warm_thread()
    threading.Thread(target=_warm_all, args=(then,), name=WARM_THREAD, daemon=True).start()
    return True


def _warm_all(then: Callable[[float], None] | None = None) -> None:
    start = time.perf_counter()
    _warm_domains()
    _warm_imports()
    if then is not None:
        then(time.perf_counter() - start)


def _warm_domains() -> None:
    for domain in DOMAINS.values():
        try:
            core.warm(model(domain), domain.cells if domain.geometry else 64)  # the first real pass is then quick
            estimator(domain)
            selector(domain)
        except USER_ERRORS:  # a missing file: the page that needs it says so
            continue


# what the pages import beyond the landing page: networkx (the dependency graph) took 0.1-0.2 s to import on the
# MI maps page's first view, plotly's colour scales 40 ms on the decoding page's, its frame views 10 ms
PAGE_MODULES = ("mi_lens_app.graph", "mi_lens_app.exports", "mi_lens_app.protein_figures", "mi_lens_app.strips",
                "mi_lens_app.grid_svg", "mi_lens_app.decode_views", "mi_lens_app.charts", "pandas")


def _warm_imports() -> None:
    """Import the pages' modules and build one small figure of each kind the MI maps page draws (plotly sets up
    a figure kind's validators on its first use: the first dependency graph took 0.34 s to build, the next
    ones 20 ms), so a page's first view does not wait for them."""
    for name in PAGE_MODULES:
        importlib.import_module(name)
    from mi_lens_app import figures, grid_svg

    four = DOMAINS["sudoku4"]
    digits, givens, mi = np.zeros(four.cells, int), np.zeros(four.cells, bool), np.zeros((four.cells, four.cells))
    labels = four.labels()
    figures.grid_figure(digits, givens, 2, layer=np.zeros(four.cells), hover=labels, selected=0).to_json()
    figures.mi_heatmap(mi, 2, labels, selected=0, clickable=True).to_json()
    figures.dependency_figure([(0, 1, 0.1, True), (0, 5, 0.1, False)], digits, givens, 2, labels,
                              strength=np.ones(four.cells)).to_json()
    grid_svg.colors(np.zeros(1), "Oranges", 0.0, 1.0)
