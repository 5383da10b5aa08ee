"""Start MI Lens with its models loading as the server starts: ``python -m mi_lens_app.serve [streamlit options]``.

``streamlit run app.py`` runs nothing of the app until a visitor opens a page, so its first visitor waits for
the models. This launcher starts the warm-up thread (:func:`mi_lens_app.warm.warm_up`) and then runs
Streamlit's own command line in the same process: the pages import the same ``mi_lens_app.support``, so they
find the models in its ``st.cache_resource`` caches. Arguments after the module name go to ``streamlit run``
(``--server.port 8502``). ``MI_LENS_WARM=0`` starts the server without the warm-up.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app.py"
READY_LINE = "MI Lens: models loaded and warm"  # printed to stderr when the warm-up is done (tests wait for it)


def _say_warm(seconds: float) -> None:
    print(f"{READY_LINE} in {seconds:.1f} s", file=sys.stderr, flush=True)


def _warm_when_serving(wait_s: float = 120.0) -> None:
    """Start the warm-up once Streamlit's runtime exists (its caches then belong to the server; before it,
    Streamlit warns that it has none), at most ``wait_s`` seconds after the launch."""
    from streamlit.runtime import Runtime

    deadline = time.monotonic() + wait_s
    while not Runtime.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    from mi_lens_app import warm

    warm.warm_up(then=_say_warm)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "-h" in args or "--help" in args:  # Streamlit's own help would name a command that does not exist
        print("usage: python -m mi_lens_app.serve [streamlit run options, e.g. --server.port 8502]\n\n"
              "Starts MI Lens (app.py) with its models loading as the server starts. The options are those of\n"
              "`streamlit run` (`streamlit run --help` lists them); MI_LENS_WARM=0 skips the warm-up.")
        return 0
    # imported here, before the warm-up thread and the first page's thread can both import them: a page opened
    # as the server started met a half-initialised pandas inside plotly ("partially initialized module")
    import pandas  # noqa: F401
    import plotly.graph_objects  # noqa: F401
    from streamlit.web import cli

    threading.Thread(target=_warm_when_serving, name="mi-lens-warm-start", daemon=True).start()
    sys.argv = ["streamlit", "run", str(APP), *args]
    return cli.main()


if __name__ == "__main__":
    raise SystemExit(main())
