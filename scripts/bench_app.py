"""Measure the app's speed: the first MI map after a warm start, and estimator-only interactions.

    python scripts/bench_app.py [--model assets/sudoku_mdm.safetensors] \\
        [--estimator assets/sudoku_mi_estimator.safetensors] [--repeats 10] [--browser] \\
        [--json assets/benchmarks/app_speed.json] [--markdown BENCHMARKS.md]

"Warm start": a process that has imported Streamlit, torch and ``mi_core`` and run the landing page, with
nothing cached yet (no model loaded, no map computed), as a server is once its first visitor arrives.

- ``first_map_s``: the MI maps page's first script run (model and estimator load, one MDM pass plus the
  estimator head, or the pruned exact probe when no estimator is shipped, and every figure), timed with
  ``streamlit.testing.v1.AppTest``, which runs the script as the server does, without a browser.
- ``select_cell_s``: choosing another cell on that page (cached map; the figures are rebuilt).
- ``new_puzzle_s``: choosing another preset (one estimator pass on a new puzzle; the model is cached).
- ``decode_s``: the decoding page's first run on the first preset (mi with the estimator beside eb: two whole
  9x9 decodings, every frame, with the models loaded); ``step_s``: one "next" (median). ``views_decode_s`` and
  ``views_step_s``: the same on the model read in 4 symmetric views (``model=views``), whose first run loads it.
- ``shared_probe_s``: three sessions asking for the same 9x9 exact probe at once (three AppTests in threads of
  one process, as a server holds sessions); each one's wall time, against ``probe_s`` for one alone.
- with ``--browser``: the same in Debian's Chromium against a live server: from a click on "MI maps" on the
  loaded landing page until its first MI map (the heatmap or the grid) has drawn
  (``browser_first_chart_s``, the 1 s target) and until every chart has drawn (``browser_first_map_s``), and from a click on a grid
  layer until the rerun is over (``browser_interaction_s``); the first page load of a fresh browser context
  (``browser_first_load_s``); the decoding page (``browser_decode_s``) and one "next" there
  (``browser_step_s``, a rerun of the frames alone). The server is the README's launcher
  (``python -m mi_lens_app.serve``); ``server_warm_s``: from its launch until it says its models are loaded
  and warm, with no page opened.

Medians are reported for the repeated interactions. Writes the JSON and the section between
``<!-- app-speed:start -->`` and ``<!-- app-speed:end -->`` in the Markdown file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_FIRST_MAP_S = 1.0  # target: first MI map within 1 s of a warm page
TARGET_INTERACTION_S = 0.5
TARGET_STEP_S = 0.3
TARGET_DECODE_S = 3.0
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"]
READY = '[data-testid="stApp"][data-test-connection-state="CONNECTED"][data-test-script-state="notRunning"]'


def _timed_run(at) -> float:
    start = time.perf_counter()
    at.run()
    seconds = time.perf_counter() - start
    if at.exception:
        raise RuntimeError(f"the page raised: {at.exception[0].value}")
    return seconds


def _timed_steps(at, repeats: int) -> list[float]:
    """Times of ``repeats`` clicks on the decoding page's "next" (at the last frame, back to the start, untimed)."""
    steps = []
    for _ in range(repeats):
        if at.button(key="step_next").disabled:
            at.button(key="step_first").click().run()
        at.button(key="step_next").click()
        steps.append(_timed_run(at))
    return steps


def measure_apptest(repeats: int) -> dict:
    """Script-run times of the MI maps page under AppTest (see the module docstring)."""
    from streamlit.testing.v1 import AppTest

    from mi_lens_app import domains, support  # noqa: F401  (the imports a warm server has done)

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.run()  # the landing page
    at.switch_page("pages/1_MI_maps.py")
    first = _timed_run(at)
    if at.error:
        raise RuntimeError(f"the MI maps page shows an error: {at.error[0].value}")
    source = next((c.value.replace("**", "") for c in at.caption if c.value.startswith("MI source")), "")
    labels = domains.DOMAINS["sudoku9"].labels()
    select = []
    for label in list(at.selectbox(key="cell").options)[1:repeats + 1]:
        at.selectbox(key="cell").set_value(labels.index(label))
        select.append(_timed_run(at))
    presets = list(at.selectbox(key="preset").options)[1:]
    puzzles = []
    for name in presets:
        at.selectbox(key="preset").set_value(name)
        puzzles.append(_timed_run(at))
    at.switch_page("pages/3_Decoding.py")
    decode = _timed_run(at)
    steps = _timed_steps(at, repeats)
    return {"first_map_s": first, "source": source, "select_cell_s": statistics.median(select),
            "select_cell_runs": select, "new_puzzle_s": statistics.median(puzzles), "new_puzzle_runs": puzzles,
            "decode_s": decode, "step_s": statistics.median(steps), "step_runs": steps}


def measure_views(repeats: int) -> dict:
    """The decoding page on the model read in 4 symmetric views (``model=views``): its first run and one "next"."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.run()
    at.switch_page("pages/3_Decoding.py")
    at.query_params["model"] = "views"
    decode = _timed_run(at)
    if at.error:
        raise RuntimeError(f"the decoding page with model=views shows an error: {at.error[0].value}")
    steps = _timed_steps(at, repeats)
    return {"views_decode_s": decode, "views_step_s": statistics.median(steps), "views_step_runs": steps}


def measure_shared_probe(sessions: int = 3) -> dict:
    """Wall time of one exact probe alone (a fresh preset), then of ``sessions`` sessions asking for another at
    once: with the result shared, each waits about one probe, not ``sessions`` of them."""
    import threading

    from streamlit.testing.v1 import AppTest

    from mi_lens_app import domains

    names = [p.name for p in domains.load_presets()["sudoku9"]]

    def probe_run(preset: str, out: list) -> None:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)
        at.switch_page("pages/2_Exact_vs_estimated.py")
        at.query_params["preset"] = preset
        at.query_params["exact"] = "true"
        out.append(_timed_run(at))

    alone: list = []
    probe_run(names[-1], alone)
    together: list = []
    threads = [threading.Thread(target=probe_run, args=(names[-2], together)) for _ in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"probe_s": alone[0], "shared_probe_s": together, "sessions": sessions}


def _start_server(env: dict, port: int) -> tuple[subprocess.Popen, float | None]:
    """The app served by the README's launcher (``python -m mi_lens_app.serve``); returns the process and the
    seconds from the launch until it said its models were warm (None when the warm-up is off), with no page
    opened meanwhile."""
    import tempfile

    from mi_lens_app.serve import READY_LINE

    log = tempfile.NamedTemporaryFile("w+", prefix="mi_lens_bench_", suffix=".log", delete=False)
    launched = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "mi_lens_app.serve", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log)
    deadline, up, warm = time.time() + 120, False, None
    while time.time() < deadline and (not up or (warm is None and env.get("MI_LENS_WARM") != "0")):
        if warm is None and READY_LINE in Path(log.name).read_text():
            warm = time.perf_counter() - launched
        try:
            up = up or urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok"
        except OSError:
            pass
        time.sleep(0.1)
    if not up:
        proc.terminate()
        raise RuntimeError("streamlit did not start within 120 s")
    return proc, warm


def _idle(page) -> None:
    """Wait for the rerun an action started (if it was not already over) and for its end."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_selector('[data-testid="stApp"][data-test-script-state="running"]', timeout=1000)
    except PlaywrightTimeout:
        pass  # a fast rerun can be over before we look
    page.wait_for_selector(READY, timeout=600_000)


# true once strategy A's frame line reads ``step <arg> / ...`` and both grids' titles say ``step <arg>`` (a
# frame's grid is an SVG, ``.mi-grid``; a protein strip a plotly chart)
STEP_SHOWN = """(k) => {
  const line = [...document.querySelectorAll('[data-testid="stMarkdownContainer"] p')]
    .find(p => /^step\\s\\d/.test(p.innerText));
  const titles = [...document.querySelectorAll('.mi-grid .mi-grid-title, [data-testid="stPlotlyChart"] .gtitle')]
    .filter(t => t.textContent.endsWith(`: step ${k}`));
  return line && line.querySelector("strong").innerText.replace(/\\s+/g, " ").startsWith(`${k} /`) && titles.length >= 2;
}"""


# true once the MI maps grid's title names the layer ``arg`` ("entropy", or "MI of r1c2 with every cell"), on
# its first line (a recurrent model's title goes on with "iteration k of T" on a second)
LAYER_SHOWN = """(layer) => [...document.querySelectorAll('[data-testid="stPlotlyChart"] .gtitle')].some(
  t => layer === 'MI' ? /^MI of .* with every cell/.test(t.textContent)
                      : t.textContent === layer || t.textContent.startsWith(layer + 'iteration '))"""


# true once a chart of the MI maps page has drawn: a plotly title other than the landing page's 4x4 teaser
# (the heatmap "MI, <source>", or the grid's layer title)
MAP_DRAWN = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"] .gtitle')].some(
  t => t.textContent && t.textContent !== 'Exact MI of the empty 4x4 grid')"""

# true once ``arg`` charts other than the landing page's teaser have drawn their SVG
MAPS_DRAWN = """(n) => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].filter(
  c => c.querySelector('.main-svg') && c.querySelector('.gtitle')?.textContent !== 'Exact MI of the empty 4x4 grid'
).length >= n"""


def _step_lines(page):
    """The decodes' frame lines, "step k / N · ..." (the page writes no-break spaces)."""
    return page.locator('[data-testid="stMarkdownContainer"] p', has_text=re.compile(r"^step\s\d"))


def _step_of(line) -> tuple[int, int]:
    """``(k, N)`` of a frame line."""
    k, n = line.locator("strong").first.inner_text().replace("\xa0", " ").split(" / ")[:2]
    return int(k), int(n)


def _shortest(page) -> int:
    """The last step of the shorter of the decodes shown."""
    lines = _step_lines(page)
    return min(_step_of(lines.nth(i))[1] for i in range(lines.count()))


def _frame_step(page) -> int:
    return _step_of(_step_lines(page).first)[0]


def measure_browser(env: dict, port: int, repeats: int, read_s: float = 10.0) -> dict:
    """Wall times in Chromium against a live server (see the module docstring)."""
    from playwright.sync_api import sync_playwright

    exe = shutil.which("chromium")
    if exe is None:
        raise RuntimeError("--browser needs Chromium (apt-get install -y chromium)")
    proc, warm_s = _start_server(env, port)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=exe, args=FLAGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            page.goto(f"http://127.0.0.1:{port}/")
            _idle(page)  # warm start: the server has run the landing page, the browser has the app loaded
            page.wait_for_timeout(1000 * read_s)  # a visitor reads the landing page; the models warm up meanwhile
            start = time.perf_counter()
            page.get_by_role("link", name="MI maps").first.click()  # navigate as a visitor does
            page.wait_for_function(MAP_DRAWN, timeout=600_000)
            first_chart = time.perf_counter() - start
            page.wait_for_function(MAPS_DRAWN, arg=3, timeout=600_000)
            page.wait_for_selector(READY, timeout=600_000)  # not _idle: its 1 s wait for a rerun is over already
            first = time.perf_counter() - start
            clicks = []
            for i in range(repeats):
                layer = ("entropy", "MI")[i % 2]
                start = time.perf_counter()
                page.get_by_role("radio", name=layer, exact=True).click()
                # not _idle: a fast rerun (the grid's fragment) can end before _idle looks for it, and then it
                # waits out its 1 s: wait for the grid's new title, then for the app to be idle
                page.wait_for_function(LAYER_SHOWN, arg=layer, timeout=600_000)
                page.wait_for_selector(READY, timeout=600_000)
                clicks.append(time.perf_counter() - start)
            start = time.perf_counter()
            page.get_by_role("link", name="Decoding").first.click()
            page.wait_for_function(STEP_SHOWN, arg=0, timeout=600_000)  # both grids at step 0 (not the old page's)
            page.wait_for_selector(READY, timeout=600_000)
            decode = time.perf_counter() - start
            steps = []
            for _ in range(repeats):
                # the last frame of the shorter decode (a strong model may need only a few): rewind, untimed
                if page.get_by_role("button", name="next").is_disabled() or _frame_step(page) >= _shortest(page):
                    page.get_by_role("button", name="start").click()
                    _idle(page)
                before = _frame_step(page)
                start = time.perf_counter()
                page.get_by_role("button", name="next").click()
                # a fragment rerun need not flip the app's "running" state, so _idle would wait out its 1 s
                # timeout: wait for the next frame's number and both grids' titles instead
                page.wait_for_function(STEP_SHOWN, arg=before + 1, timeout=600_000)
                steps.append(time.perf_counter() - start)
                page.wait_for_selector(READY, timeout=600_000)
            fresh = browser.new_context(viewport={"width": 1400, "height": 1400}).new_page()
            start = time.perf_counter()
            fresh.goto(f"http://127.0.0.1:{port}/MI_maps")
            fresh.wait_for_function("document.querySelectorAll('[data-testid=\"stPlotlyChart\"] .main-svg').length >= 3",
                                    timeout=600_000)
            fresh.wait_for_selector(READY, timeout=600_000)
            load = time.perf_counter() - start
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"server_warm_s": warm_s, "browser_read_s": read_s, "browser_first_map_s": first,
            "browser_first_chart_s": first_chart,
            "browser_interaction_s": statistics.median(clicks),
            "browser_interaction_runs": clicks, "browser_decode_s": decode, "browser_step_s": statistics.median(steps),
            "browser_step_runs": steps, "browser_first_load_s": load}


BROWSER_NOTE = (" The server is started with the README's launcher (`python -m mi_lens_app.serve`), which loads and "
                "warms the three domains' models as the server starts; in Chromium the first click on the landing "
                "page waits the given seconds, as a reader would.")
BUSY_NOTE = " Other jobs shared the CPUs (load above half the CPU count): read the timings as ratios."
CRAFTED = "/Decoding?a=mask_predict&a_mask_predict_steps=100000000"  # once grew a server from 584 MB to 2.7 GB


def _rss_mb(pid: int) -> float:
    """Resident memory of process ``pid`` in MB (Linux ``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure_crafted_link(env: dict, port: int, watch_s: float = 60.0) -> dict:
    """Server memory under the crafted link: before, once the page is idle, and ``watch_s`` after the browser
    closed (the largest value seen while watching)."""
    from playwright.sync_api import sync_playwright

    proc, _ = _start_server(env, port)  # returns once the models are warm
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=FLAGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            page.goto(f"http://127.0.0.1:{port}/")
            _idle(page)
            before = _rss_mb(proc.pid)
            start = time.perf_counter()
            page.goto(f"http://127.0.0.1:{port}{CRAFTED}")
            _idle(page)
            idle_s = time.perf_counter() - start
            note = page.locator('[data-testid="stAlert"]', has_text="this link").first.inner_text()
            address = page.url.split(str(port), 1)[-1]  # the clamped value is written back into it
            during = _rss_mb(proc.pid)
            browser.close()
        peak, deadline = during, time.time() + watch_s
        while time.time() < deadline:
            peak = max(peak, _rss_mb(proc.pid))
            time.sleep(1)
        after = _rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"crafted_link": CRAFTED, "rss_before_mb": before, "rss_idle_mb": during, "rss_after_mb": after,
            "rss_peak_mb": peak, "crafted_idle_s": idle_s, "crafted_note": note.strip(), "crafted_address": address,
            "watch_s": watch_s}


def markdown(res: dict) -> str:
    def mark(value: float, target: float) -> str:
        return f"{value:.2f} s ({'meets' if value <= target else 'misses'} the {target:g} s target)"

    estimator_note = "present" if res["estimator_present"] else "absent: the map is the pruned exact probe"
    puzzle_what = "one estimator pass" if res["estimator_present"] else "the pruned probe"
    lines = [
        f"### App speed ({res['date']}, {res['machine']}, torch threads {res['torch_threads']})", "",
        f"`{res['command']}`", "",
        f"Model `{res['model']}`; estimator `{res['estimator']}` ({estimator_note}); {res['source']}.", "",
        "| measure | time |", "|---|---|",
        (f"| first MI map with no model loaded yet: model and estimator load in this run (script run; the served "
         f"app loads them at launch, see the Chromium rows) | {res['first_map_s']:.2f} s |"),
        (f"| select another cell (median of {len(res['select_cell_runs'])}) | "
         f"{mark(res['select_cell_s'], TARGET_INTERACTION_S)} |"),
        (f"| another preset: {puzzle_what} (median of {len(res['new_puzzle_runs'])}) | "
         f"{mark(res['new_puzzle_s'], TARGET_INTERACTION_S)} |"),
    ]
    if "decode_s" in res:
        lines += [
            (f"| decoding page, first run: mi (estimator) beside eb, two whole 9x9 decodings (script run) | "
             f"{mark(res['decode_s'], TARGET_DECODE_S)} |"),
            (f"| one decoding step, 'next' (script run, median of {len(res['step_runs'])}) | "
             f"{mark(res['step_s'], TARGET_STEP_S)} |"),
        ]
    if "views_decode_s" in res:
        lines += [
            (f"| the same decoding page on the model in 4 symmetric views (`model=views`), first run: its model "
             f"loads, two whole decodings at 4 forward passes a pass (script run) | {res['views_decode_s']:.2f} s |"),
            (f"| one decoding step there, 'next' (script run, median of {len(res['views_step_runs'])}) | "
             f"{mark(res['views_step_s'], TARGET_STEP_S)} |"),
        ]
    if "shared_probe_s" in res:
        each = ", ".join(f"{s:.1f}" for s in res["shared_probe_s"])
        lines.append(f"| 9x9 exact probe: one session alone / {res['sessions']} sessions on one state at once (each) | "
                     f"{res['probe_s']:.1f} s / {each} s |")
    if "browser_first_map_s" in res:
        runs = len(res["browser_interaction_runs"])
        lines += [
            *([(f"| first MI map in Chromium, {res.get('browser_read_s', 0):g} s after the landing page loaded: click on "
                "the page link to its first MI map drawn (heatmap or grid, whichever draws first) | "
                f"{mark(res['browser_first_chart_s'], TARGET_FIRST_MAP_S)} |")] if "browser_first_chart_s" in res else []),
            (f"| the same click to every chart of the page drawn (heatmap, grid, dependency graph) and idle | "
             f"{res['browser_first_map_s']:.2f} s |"),
            (f"| change the grid layer in Chromium, click to the new grid drawn and idle (median of {runs}) | "
             f"{mark(res['browser_interaction_s'], TARGET_INTERACTION_S)} |"),
            (f"| decoding page in Chromium, click on the link to both grids drawn | "
             f"{mark(res['browser_decode_s'], TARGET_DECODE_S)} |"),
            (f"| one decoding step in Chromium, 'next' to idle (median of {len(res['browser_step_runs'])}) | "
             f"{mark(res['browser_step_s'], TARGET_STEP_S)} |"),
            f"| a fresh browser context opening /MI_maps, to all charts drawn | {res['browser_first_load_s']:.2f} s |",
        ]
        if res.get("server_warm_s") is not None:
            lines.append(f"| server launch to models loaded and warm, no page opened (`python -m mi_lens_app.serve`) | "
                         f"{res['server_warm_s']:.2f} s |")
    if "rss_before_mb" in res:
        lines += ["", (f"Crafted link `{res['crafted_link']}` (it once grew server memory from 584 MB to 2.7 GB and "
                       f"kept growing after the browser closed): server RSS {res['rss_before_mb']:.0f} MB before, "
                       f"{res['rss_idle_mb']:.0f} MB when the page was idle ({res['crafted_idle_s']:.1f} s after "
                       f"opening it), at most {res['rss_peak_mb']:.0f} MB and {res['rss_after_mb']:.0f} MB "
                       f"{res['watch_s']:.0f} s after the browser closed. The page said: "
                       f"\"{res['crafted_note'].replace(chr(10), ' ').removeprefix('link_off').strip()}\""
                       + (f" The address then read `{res['crafted_address']}`." if res.get("crafted_address") else ""))]
    lines += ["", ("Script runs are timed with `streamlit.testing.v1.AppTest` in a process that has imported "
                   "Streamlit, torch and `mi_core` and run the landing page, with empty caches."
                   + (f" Machine load (1-minute average) at the start: {res['load']}" if res.get("load") else "")
                   + (f"; when the Chromium runs began: {res['browser_load']}" if res.get("browser_load") else "")
                   + ("." if res.get("load") else "")
                   + (BROWSER_NOTE if "browser_first_map_s" in res else "")
                   + (BUSY_NOTE if res.get("load_avg", 0) > (os.cpu_count() or 1) / 2 else ""))]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="assets/sudoku_peer_recurrent.safetensors")
    p.add_argument("--estimator", default="assets/sudoku_mi_estimator_recurrent.safetensors")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--browser", action="store_true", help="also time a real Chromium against a live server")
    p.add_argument("--no-shared-probe", action="store_true", help="skip the three-session exact probe")
    p.add_argument("--read-s", type=float, default=10.0,
                   help="seconds on the landing page before the first click in Chromium (a visitor reading it)")
    p.add_argument("--crafted-link", action="store_true",
                   help="with --browser: server memory under a link asking for 10^8 decoding steps")
    p.add_argument("--port", type=int, default=8599)
    p.add_argument("--json", type=Path, default=Path("assets/benchmarks/app_speed.json"))
    p.add_argument("--markdown", type=Path, default=Path("BENCHMARKS.md"), help="report file ('-' to skip)")
    args = p.parse_args(argv)
    if args.repeats < 1:
        raise SystemExit("error: --repeats must be >= 1")
    if not (ROOT / args.model).is_file() and not Path(args.model).is_file():
        raise SystemExit(f"error: model file not found: {args.model}")
    env = {**os.environ, "MI_LENS_SUDOKU_MODEL": str(args.model), "MI_LENS_SUDOKU_ESTIMATOR": str(args.estimator)}
    os.environ.update(env)
    import torch

    load_avg = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    load = f"{load_avg:.2f} on {os.cpu_count()} CPUs" if load_avg else ""
    env["MI_LENS_WARM"] = os.environ["MI_LENS_WARM"] = "0"  # AppTest times loads itself; the server warms up
    res = measure_apptest(args.repeats)
    res.update(measure_views(args.repeats))
    res["load"] = load
    res["load_avg"] = load_avg
    if not args.no_shared_probe:
        res.update(measure_shared_probe())
    env["MI_LENS_WARM"] = "1"
    if args.browser:
        res["browser_load"] = f"{os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else ""
        res.update(measure_browser(env, args.port, args.repeats, args.read_s))
        if args.crafted_link:
            res.update(measure_crafted_link(env, args.port))
    res.update({"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
                "torch_threads": torch.get_num_threads(), "model": str(args.model), "estimator": str(args.estimator),
                "estimator_present": (ROOT / args.estimator).is_file() or Path(args.estimator).is_file(),
                "command": "python scripts/bench_app.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                "targets": {"first_map_s": TARGET_FIRST_MAP_S, "interaction_s": TARGET_INTERACTION_S,
                            "step_s": TARGET_STEP_S, "decode_s": TARGET_DECODE_S}})
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(res, indent=2) + "\n")
    if str(args.markdown) != "-":
        from mi_core.bench.report import update_section

        update_section("app-speed", markdown(res), args.markdown)
    print(markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
