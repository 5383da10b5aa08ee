"""The README's tour of the app: start it on the shipped models and save one screenshot per view.

``python scripts/tour_screenshots.py [--out docs/screenshots] [--width 1280] [--view NAME=LINK[@HEIGHT] ...]``

``--mobile`` opens each view as a phone would (a touch screen and a user agent with "Mobi", which the app wraps
titles for; give ``--width 390``). ``--view`` (repeatable) captures those links instead of the tour, e.g. ``--view about=About@2000``; the
environment passes through to the app (``MI_LENS_DOMAINS=brackets PYTHONPATH=examples:.`` shows a plugin).

Needs Debian's Chromium (``apt-get install -y chromium``) and the ``playwright`` package. Each view is opened
by its link, as a visitor would, and captured once the page has finished running and its charts are drawn.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"]
# a phone's browser (Chrome on Android): the app reads "Mobi" in it (screen.title_chars)
MOBILE_AGENT = ("Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
                "Chrome/131.0.0.0 Mobile Safari/537.36")
READY = '[data-testid="stApp"][data-test-connection-state="CONNECTED"][data-test-script-state="notRunning"]'
HARDER = "preset=harder+%C2%B7+24+clues"  # the showcase and this one hold strong MI (0.89 and 0.94 nats at most)
# (file name, link, page height to capture)
VIEWS = [
    ("tour_mi_maps", "MI_maps?cell=r1c2", 900),
    ("tour_exact", f"Exact_vs_estimated?{HARDER}", 1100),
    ("tour_decoding", "Decoding?step=5", 1500),  # the showcase the app opens on, at MI's last step
    ("tour_whatif", "What_if?cell=r1c2", 1100),
    ("tour_benchmarks", "Benchmarks", 1000),
    ("tour_antibody", "MI_maps?domain=antibody", 1100),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(port: int, log_path: Path) -> subprocess.Popen:
    env = {**os.environ, "MI_LENS_DEVICE": "cpu"}
    log = open(log_path, "w")
    proc = subprocess.Popen([sys.executable, "-m", "mi_lens_app.serve", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 300
    while True:
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok":
                return proc
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            proc.terminate()
            raise SystemExit(f"error: the app did not start: {log_path.read_text()[-2000:]}")
        time.sleep(0.5)


def wait_ready(page) -> None:
    for _ in range(2):  # a rerun can start right after one ends
        page.wait_for_timeout(1500)
        page.wait_for_selector(READY, timeout=600_000)
    page.wait_for_timeout(2000)  # plotly draws after the script has finished


def capture(browser, url: str, path: Path, width: int, height: int, mobile: bool = False) -> None:
    phone = {"user_agent": MOBILE_AGENT, "is_mobile": True, "has_touch": True, "device_scale_factor": 1} if mobile else {}
    page = browser.new_page(viewport={"width": width, "height": height}, **phone)
    page.goto(url)
    wait_ready(page)
    if page.locator('[data-testid="stException"]').count():
        raise SystemExit(f"error: {url} shows an exception")
    page.screenshot(path=str(path))
    page.close()


def view(text: str) -> tuple[str, str, int]:
    """``NAME=LINK[@HEIGHT]`` -> (name, link, height; 768 when not given)."""
    name, sep, rest = text.partition("=")
    link, at, height = rest.rpartition("@")
    if not at:
        link, height = rest, ""
    if not sep or not name or not (height or "768").isdigit() or int(height or 768) < 1:
        raise argparse.ArgumentTypeError(f"expected NAME=LINK[@HEIGHT], got {text!r}")
    return name, link, int(height or 768)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    p.add_argument("--width", type=int, default=1280)
    p.add_argument("--mobile", action="store_true", help="open the views as a phone (a mobile user agent, touch)")
    p.add_argument("--view", type=view, action="append", help="NAME=LINK[@HEIGHT]: capture this link instead of the "
                   "tour (repeatable)")
    args = p.parse_args()
    exe = shutil.which("chromium")
    if exe is None:
        raise SystemExit("error: Chromium is not installed (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = serve(port, args.out / "tour_server.log")
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=exe, args=FLAGS)
            for name, link, height in args.view or VIEWS:
                path = args.out / f"{name}.png"
                capture(browser, f"http://127.0.0.1:{port}/{link}", path, args.width, height, args.mobile)
                print(path)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        (args.out / "tour_server.log").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
