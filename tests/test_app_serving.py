"""Serving a class (issue 27, item 14): the warm-up thread does not fill the server log with Streamlit's
"missing ScriptRunContext" warnings; and item 13: the graph highlights the selected cell's edges, and a click
reuses the graph already built for the state."""

import logging
import threading

from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from mi_lens_app import figures, graph, support
from tests import test_app_pages
from tests.test_app_pages import assert_clean, run_page, specs

weights = test_app_pages.weights
env = test_app_pages.env


class Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def test_the_warm_up_thread_logs_no_missing_script_run_context_warnings():
    support.quiet_warm_thread()
    logger = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
    seen = Records()
    logger.addHandler(seen)
    try:
        warm = threading.Thread(target=get_script_run_ctx, name=support.WARM_THREAD)  # what a cached call does
        warm.start()
        warm.join()
        assert not [m for m in seen.messages if "missing ScriptRunContext" in m]
        other = threading.Thread(target=get_script_run_ctx, name="some-other-thread")
        other.start()
        other.join()
        assert any("missing ScriptRunContext" in m for m in seen.messages)  # elsewhere the warning stays
    finally:
        logger.removeHandler(seen)


# ---- views linked by the selected cell, and clicks that reuse what was computed (item 13) ----


def graph_spec(at) -> dict:
    return next(s for t, s in specs(at).items() if t.startswith("Dependency graph"))


def test_the_graph_highlights_the_selected_cells_edges_and_a_click_does_not_rebuild_it(env, monkeypatch):
    built = []
    real = graph.dependency_graph
    monkeypatch.setattr(graph, "dependency_graph", lambda *a, **k: built.append(1) or real(*a, **k))
    at = run_page("pages/1_MI_maps.py", cell="r1c1")
    assert_clean(at)
    first = len(built)
    assert first <= 1
    box = at.selectbox(key="cell")
    for other in box.options:
        if other != box.format_func(box.value):
            break
    box.select(other).run()
    assert_clean(at)
    shown = box.format_func(at.selectbox(key="cell").value)
    trace = next(d for d in graph_spec(at)["data"] if str(d.get("name", "")).startswith(figures.SELECTED_EDGES))
    assert f"({shown}: " in trace["name"]  # the graph names the cell the picker shows
    heat = next(s for t, s in specs(at).items() if t.startswith("MI, "))
    outlined = [sh for sh in heat["layout"]["shapes"] if sh.get("type") == "rect"]
    assert sum(sh["line"]["color"] == figures.SELECTED_COLOR for sh in outlined) == 2  # its row and column outlined
    assert len(outlined) == 4  # each over its black rim
    assert len(built) == first  # the click reused the graph of this state


def test_the_launchers_help_names_itself_and_starts_nothing(capsys):
    from mi_lens_app import serve

    assert serve.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m mi_lens_app.serve") and "streamlit run --help" in out
