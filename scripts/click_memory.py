"""The server's memory while visitors click through the MI map's cells: every blank cell of every 9x9 preset under
each colour scale (6 presets, 325 cells, 3 scales: 975 views), each opened by a session that speaks Streamlit's
protocol (``scripts/load_test.py --client protocol``), one after another; the server's resident memory is read
every ``--every`` views.

    python scripts/click_memory.py [--cells 975] [--every 65] [--url URL --pid PID] [--json out.json]

Without ``--url`` it starts the app with the README's launcher on a free port and stops it at the end. Every view
builds the figures of its cell (the 81 x 81 heatmap, the grid and the dependency graph), which the server keeps in
its figure cache (``figure_cache.figure``) for every session: the figures stop growing the memory once that cache is
full.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # noqa: E402  (run as a script from anywhere)
from scripts.load_test import rss_mb, start_server  # noqa: E402

SCALES = ("linear", "log", "percentile")


def views() -> list[str]:
    """The query strings of the click-through: each preset's blank cells, under each scale."""
    from mi_lens_app.domains import load_presets

    out = []
    for scale in SCALES:
        for preset in load_presets()["sudoku9"]:
            for cell, char in enumerate(preset.puzzle):
                if char in ".0":
                    query = {"preset": preset.name, "cell": f"r{cell // 9 + 1}c{cell % 9 + 1}", "scale": scale}
                    out.append(urllib.parse.urlencode(query))
    return out


async def open_view(base: str, query: str, timeout_s: float) -> None:
    """One session opens MI maps at ``query`` and waits until its script has finished."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.asyncio.client import connect

    netloc = urllib.parse.urlsplit(base).netloc
    async with connect(f"ws://{netloc}/_stcore/stream", subprotocols=["streamlit"], max_size=None,
                       origin=f"http://{netloc}") as ws:
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = "MI_maps"
        await ws.send(msg.SerializeToString())
        while True:
            forward = ForwardMsg()
            forward.ParseFromString(await asyncio.wait_for(ws.recv(), timeout_s))
            if forward.WhichOneof("type") == "script_finished":
                return


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cells", type=int, default=975, help="views opened (default 975: all of them)")
    p.add_argument("--every", type=int, default=65, help="read the memory after this many views")
    p.add_argument("--url", default=None, help="a running server (default: start one)")
    p.add_argument("--pid", type=int, default=None, help="the running server's process id (with --url)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds one view may take")
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    args = p.parse_args(argv)
    if args.cells < 1 or args.every < 1:
        p.error("--cells and --every must be at least 1")
    if (args.url is None) != (args.pid is None):
        p.error("--url and --pid go together")
    proc = None
    if args.url is None:
        proc, base = start_server(Path("/tmp") / f"mi_lens_clicks_{time.time_ns()}.log", {"MI_LENS_WARM": "1"})
        pid = proc.pid
    else:
        base, pid = args.url.rstrip("/"), args.pid
    todo = views()[:args.cells]
    readings, started = [(0, round(rss_mb(pid)))], time.perf_counter()
    try:
        for done, query in enumerate(todo, 1):
            asyncio.run(open_view(base, query, args.timeout))
            if done % args.every == 0 or done == len(todo):
                time.sleep(1.0)  # the closed sessions' state let go
                readings.append((done, round(rss_mb(pid))))
                print(f"{done} views: server RSS {readings[-1][1]} MB", flush=True)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    out = {"views": len(todo), "rss_mb": readings, "wall_s": round(time.perf_counter() - started, 1),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    print(json.dumps(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
