"""A class opening the teacher's link at once: N sessions, the time each waits for its first MI map, and the
server's peak memory.

    python scripts/load_test.py [--sessions 30] [--link "/MI_maps?preset=hard+%C2%B7+26+clues&cell=r5c4"]
        [--client chromium|protocol] [--url http://127.0.0.1:8501] [--json assets/benchmarks/load_test.json]

``--client chromium`` (the default): headless Chromium sessions that draw the page, on this machine.
``--client protocol``: sessions that speak Streamlit's websocket protocol as its frontend does but draw
nothing, so the figures are the server's alone (as in a classroom, where each browser draws on its own
machine); ``first_map_s`` is then when the server has sent the page's first plotly chart.

Without ``--url`` it starts the app with the README's launcher (``python -m mi_lens_app.serve``, which warms the
models as the server starts) on a free port, waits until the server says its models are warm, and stops it at
the end; with ``--url`` it measures a running server (its memory only when ``--pid`` names its process).

Each session is its own browser context (own cookies, own Streamlit session), all opened together in one
Chromium. ``first_map_s``: from the session's navigation start until a plotly chart of the page has drawn
(``[data-testid="stPlotlyChart"] .main-svg``); ``connected_s``: until the page's frontend has loaded and opened
its session with the server. The server's memory is the resident set of its process and
its children, read from ``/proc`` every 0.2 s (``server_peak_rss_mb``). Chromium runs on the same machine and
takes CPU from the server: on a small machine the figures are an upper bound.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"]
FIRST_MAP = '[data-testid="stPlotlyChart"] .main-svg'
CONNECTED = '[data-testid="stApp"][data-test-connection-state="CONNECTED"]'  # the page's script has its session
TEACHER_LINK = "/MI_maps?preset=hard+%C2%B7+26+clues&cell=r5c4"
READY_LINE = "MI Lens: models loaded and warm"
CTX_WARNING = "missing ScriptRunContext"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (from each process's parent id in ``/proc``)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds the processes ``pids`` have used so far (from ``/proc/<pid>/stat``)."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            continue
    return total / tick


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants, in MiB (0 when it is gone)."""
    total = 0
    for p in [pid, *_children(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


class MemoryWatch:
    """Polls :func:`rss_mb` of ``pid`` in a thread; ``peak`` is the largest reading. It also keeps the CPU
    seconds of the server (``pid`` and its children) and of this script's own children other than the server
    (Chromium), as last read: ``server_cpu`` and ``browser_cpu``."""

    def __init__(self, pid: int | None, every: float = 0.2):
        self.pid, self.every, self.peak, self.first = pid, every, 0.0, None
        self.server_cpu = self.browser_cpu = 0.0
        self._cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            now = rss_mb(self.pid)
            self.first = now if self.first is None else self.first
            self.peak = max(self.peak, now)
            server = {self.pid, *_children(self.pid)}
            for p in server | set(_children(os.getpid())):  # a process's last reading stays after it exits
                used = cpu_s([p])
                self._cpu[p] = max(used, self._cpu.get(p, 0.0))
            self.server_cpu = sum(v for p, v in self._cpu.items() if p in server)
            self.browser_cpu = sum(v for p, v in self._cpu.items() if p not in server)
            self._stop.wait(self.every)

    def __enter__(self):
        if self.pid is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def start_server(log_path: Path, env_extra: dict[str, str], timeout: float = 300) -> tuple[subprocess.Popen, str]:
    """The README's launcher on a free port; returns once it is healthy and says its models are warm."""
    port = free_port()
    env = {**os.environ, **env_extra}
    log = open(log_path, "w")
    proc = subprocess.Popen([sys.executable, "-m", "mi_lens_app.serve", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + timeout
    while True:
        try:
            healthy = urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok"
        except OSError:
            healthy = False
        if healthy and READY_LINE in log_path.read_text():
            return proc, url
        if proc.poll() is not None or time.time() > deadline:
            proc.terminate()
            raise RuntimeError(f"the server did not start and warm up: {log_path.read_text()[-2000:]}")
        time.sleep(0.5)


async def one_session(browser, url: str, timeout_s: float, viewport: dict) -> dict:
    context = await browser.new_context(viewport=viewport)
    page = await context.new_page()
    start, connected = time.perf_counter(), None
    try:
        await page.goto(url, wait_until="commit", timeout=timeout_s * 1000)
        await page.wait_for_selector(CONNECTED, timeout=timeout_s * 1000)
        connected = time.perf_counter() - start
        await page.wait_for_selector(FIRST_MAP, timeout=timeout_s * 1000)
        seconds, error = time.perf_counter() - start, None
        errors = await page.locator('[data-testid="stException"]').count()
    except Exception as err:  # noqa: BLE001  (a timeout or a crashed page is a result: it is counted)
        seconds, error, errors = None, f"{type(err).__name__}: {str(err).splitlines()[0][:200]}", 0
    finally:
        await context.close()
    return {"first_map_s": None if seconds is None else round(seconds, 2),
            "connected_s": None if connected is None else round(connected, 2), "error": error, "exceptions": errors}


async def one_protocol_session(url: str, timeout_s: float) -> dict:
    """A session that speaks Streamlit's own protocol (its websocket and protobuf messages), as the browser's
    frontend does, without drawing: ``first_map_s`` is when the server has sent the page's first plotly chart,
    ``connected_s`` when its session answered."""
    from urllib.parse import urlsplit

    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.asyncio.client import connect

    parts = urlsplit(url)
    start, connected, seconds, error = time.perf_counter(), None, None, None
    try:
        ws = await asyncio.wait_for(connect(f"ws://{parts.netloc}/_stcore/stream", subprotocols=["streamlit"],
                                            max_size=None, origin=f"http://{parts.netloc}"), timeout_s)
        msg = BackMsg()
        msg.rerun_script.query_string = parts.query
        msg.rerun_script.page_name = parts.path.strip("/")
        await ws.send(msg.SerializeToString())
        while seconds is None:
            data = await asyncio.wait_for(ws.recv(), timeout_s - (time.perf_counter() - start))
            forward = ForwardMsg()
            forward.ParseFromString(data)
            kind = forward.WhichOneof("type")
            if kind == "new_session" and connected is None:
                connected = time.perf_counter() - start
            elif kind == "delta" and forward.delta.WhichOneof("type") == "new_element":
                if forward.delta.new_element.WhichOneof("type") == "plotly_chart":
                    seconds = time.perf_counter() - start
            elif kind == "script_finished" and forward.script_finished == 0 and connected is not None:
                raise RuntimeError("the page's script finished without a chart")
        await ws.close()
    except Exception as err:  # noqa: BLE001  (a timeout or a closed session is a result: it is counted)
        error = f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"
    return {"first_map_s": None if seconds is None else round(seconds, 2),
            "connected_s": None if connected is None else round(connected, 2), "error": error, "exceptions": 0}


async def run_protocol_sessions(url: str, sessions: int, timeout_s: float) -> list[dict]:
    return list(await asyncio.gather(*(one_protocol_session(url, timeout_s) for _ in range(sessions))))


async def run_sessions(url: str, sessions: int, timeout_s: float, viewport: dict) -> list[dict]:
    from playwright.async_api import async_playwright

    exe = shutil.which("chromium")
    if exe is None:
        raise RuntimeError("Chromium is not installed (apt-get install -y chromium)")
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=exe, args=FLAGS)
        try:
            return list(await asyncio.gather(*(one_session(browser, url, timeout_s, viewport)
                                               for _ in range(sessions))))
        finally:
            await browser.close()


def summary(results: list[dict], goal_s: float) -> dict:
    times = [r["first_map_s"] for r in results if r["first_map_s"] is not None]
    return {"drawn": len(times), "failed": len(results) - len(times),
            "first_map_median_s": round(statistics.median(times), 2) if times else None,
            "first_map_max_s": max(times) if times else None, "first_map_min_s": min(times) if times else None,
            f"within_{goal_s:g}_s": sum(t <= goal_s for t in times)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int, default=30, help="browser sessions opened at once (default 30)")
    p.add_argument("--link", default=TEACHER_LINK, help="the page and query string every session opens")
    p.add_argument("--url", default=None, help="a running server (default: start one)")
    p.add_argument("--pid", type=int, default=None, help="the running server's process id, for its memory")
    p.add_argument("--timeout", type=float, default=180.0, help="seconds a session may wait for its map")
    p.add_argument("--goal", type=float, default=30.0, help="seconds each first map should take at most")
    p.add_argument("--viewport", default="1280x800", help="WIDTHxHEIGHT of each session's window")
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    p.add_argument("--client", choices=["chromium", "protocol"], default="chromium",
                   help="chromium: each session a browser context that draws the page; protocol: each session "
                        "speaks Streamlit's websocket protocol without drawing (the server's side alone, as when "
                        "every student's browser runs on their own machine)")
    args = p.parse_args(argv)
    if args.sessions < 1:
        p.error("--sessions must be at least 1")
    width, height = (int(v) for v in args.viewport.lower().split("x"))
    proc, log_path = None, Path(os.environ.get("TMPDIR", "/tmp")) / f"mi_lens_load_{os.getpid()}.log"
    started = time.perf_counter()
    if args.url is None:
        proc, base = start_server(log_path, {"MI_LENS_WARM": "1"})
        pid = proc.pid
    else:
        base, pid = args.url.rstrip("/"), args.pid
    warm_s = time.perf_counter() - started if proc else None
    try:
        server_cpu_before = cpu_s([pid, *_children(pid)]) if pid else 0.0
        with MemoryWatch(pid) as memory:
            at_start = rss_mb(pid) if pid else None
            wall = time.perf_counter()
            if args.client == "protocol":
                results = asyncio.run(run_protocol_sessions(base + args.link, args.sessions, args.timeout))
            else:
                results = asyncio.run(run_sessions(base + args.link, args.sessions, args.timeout,
                                                   {"width": width, "height": height}))
            wall = time.perf_counter() - wall
            time.sleep(0.5)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    log = log_path.read_text() if proc is not None else ""
    out = {
        "sessions": args.sessions, "client": args.client, "link": args.link, "viewport": args.viewport, "goal_s": args.goal,
        **summary(results, args.goal), "wall_s": round(wall, 1),
        "server_started_here": proc is not None, "server_warm_s": None if warm_s is None else round(warm_s, 1),
        "server_rss_before_mb": None if at_start is None else round(at_start), "server_peak_rss_mb":
            round(memory.peak) if pid else None,
        "server_cpu_s": round(memory.server_cpu - server_cpu_before, 1) if pid else None,
        "browser_cpu_s": round(memory.browser_cpu, 1),
        "missing_script_run_context_warnings": log.count(CTX_WARNING) if proc is not None else None,
        "per_session": results,
        "machine": {"cpus": os.cpu_count(), "load_avg_after": [round(v, 2) for v in os.getloadavg()],
                    "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    text = json.dumps(out, indent=1)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "per_session"}, indent=1))
    return 0 if out["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
