"""End to end in a real headless Chromium (Debian's, driven by Playwright): start the app with the README's
launcher on a tiny random model (it must warm the models before any page is opened), open every page, step a
decoding, reopen a shared URL, and serve eight browser contexts at once.

Skipped with a reason when Chromium or Playwright is missing, except under ``CI=true``, where they must run.
"""

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from mi_core.decoding.selector import make_order_nets, save_order_net
from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig, save_sudoku_mdm
from mi_core.mi.estimator import EstimatorConfig, MIEstimator, save_estimator
from mi_lens_app.domains import load_presets
from mi_lens_app.serve import READY_LINE

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"]
# (navigation link, charts that must draw: plotly charts, or the decoding frames' SVG grids); pages are reached by
# their links, as a visitor does
PAGES = [("Home", 1), ("MI maps", 3), ("Exact vs estimated", 1), ("Decoding", 2), ("What-if", 8),
         ("Benchmarks", 1), ("About", 0)]
VIEW = {"width": 1400, "height": 4000}  # tall: plotly charts below the fold are not drawn
READY = '[data-testid="stApp"][data-test-connection-state="CONNECTED"][data-test-script-state="notRunning"]'


def unavailable(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the browser tests must run; .ci/run installs Chromium and Playwright)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def chromium():
    exe = shutil.which("chromium")
    if exe is None:
        unavailable("Chromium is not installed (apt-get install -y chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed (pip install playwright)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=FLAGS)
        yield browser
        browser.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """The app served on a free port, on a tiny random model and estimator."""
    root = tmp_path_factory.mktemp("browser_models")
    torch.manual_seed(0)
    save_sudoku_mdm(SudokuMDM(SudokuMDMConfig(box=3, d_model=32, n_layers=1, n_heads=2, d_ff=64)),
                    root / "mdm.safetensors")
    save_estimator(MIEstimator(EstimatorConfig(d_in=32, n_values=9, d_node=16, d_proj=8, d_pair=8)),
                   root / "est.safetensors")
    save_order_net(make_order_nets(32, width=16)[1], root / "sel.safetensors", {"denoiser": str(root / "mdm.safetensors")})
    port = free_port()
    env = {**os.environ, "MI_LENS_SUDOKU_MODEL": str(root / "mdm.safetensors"), "MI_LENS_DEVICE": "cpu",
           "MI_LENS_SUDOKU_ESTIMATOR": str(root / "est.safetensors"),
           "MI_LENS_SUDOKU_SELECTOR": str(root / "sel.safetensors"),
           "MI_LENS_BENCHMARKS": str(ROOT / "tests" / "fixtures"), "MI_LENS_WARM": "1"}
    url = f"http://127.0.0.1:{port}"
    log_path = root / "streamlit.log"
    with open(log_path, "w") as log:  # the README's command: the launcher warms the models as the server starts
        proc = subprocess.Popen([sys.executable, "-m", "mi_lens_app.serve", "--server.headless", "true",
                                 "--server.port", str(port), "--server.address", "127.0.0.1",
                                 "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 90
        while True:
            try:
                up = urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok"
            except OSError:
                up = False
            # no page has been opened yet: the models must get warm from the server's start alone
            if up and READY_LINE in log_path.read_text():
                break
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"streamlit did not start and warm up: {log_path.read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def wait_ready(page, timeout: float = 90_000) -> None:
    """Wait until the script has finished its run (checked twice: a rerun can start right after one ends)."""
    for _ in range(2):
        page.wait_for_timeout(250)
        page.wait_for_selector(READY, timeout=timeout)


DRAWN = '[data-testid="stPlotlyChart"] .main-svg, .mi-grid svg'  # a drawn plotly chart, or a frame's grid


def charts_drawn(page) -> int:
    return page.locator('[data-testid="stPlotlyChart"]:has(.main-svg), .mi-grid:has(svg)').count()


def check_page(page, charts: int) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, page.url
    if charts:
        page.wait_for_function("(sel) => document.querySelectorAll(sel).length > 0", arg=DRAWN)
        deadline = time.time() + 30
        while charts_drawn(page) < charts and time.time() < deadline:
            page.wait_for_timeout(200)
        assert charts_drawn(page) >= charts, (page.url, charts_drawn(page))


def navigate(page, title: str) -> None:
    # as long as wait_ready allows: eight browsers on a shared 2-core machine took over 30 s to lay out a link
    page.locator('[data-testid="stSidebar"]').get_by_role("link", name=title, exact=True).click(timeout=90_000)


def test_every_page_renders_and_its_charts_draw(chromium, app_url):
    page = chromium.new_page(viewport=VIEW)
    here = urllib.parse.urlsplit(app_url).netloc
    outside = []  # a classroom may be offline: nothing may be fetched from elsewhere (a Material favicon was)
    page.on("request", lambda r: outside.append(r.url)
            if r.url.startswith("http") and urllib.parse.urlsplit(r.url).netloc != here else None)
    page.goto(app_url)
    for title, charts in PAGES:
        navigate(page, title)
        wait_ready(page)
        check_page(page, charts)
        assert page.locator("h1").count() >= 1
        if title == "Exact vs estimated":  # the exact probe runs on demand: estimated | exact | difference, asymmetry
            page.get_by_text("Run the exact probe").click()
            wait_ready(page)
            check_page(page, 4)
            assert "exact=true" in page.url
    assert outside == []
    page.close()


def step_value(page) -> str:
    """The step of strategy A's frame, from its line of numbers (``step 3 / 15 · passes 3 · ...``)."""
    line = page.locator('[data-testid="stMarkdownContainer"] p', has_text=re.compile(r"^step\s\d")).first
    return line.locator("strong").first.inner_text().replace("\xa0", " ")  # an item's spaces do not break


def test_decoding_steps_forward_and_back(chromium, app_url):
    page = chromium.new_page(viewport=VIEW)
    page.goto(f"{app_url}/Decoding?a=topk&a_topk_k=4")
    wait_ready(page)
    check_page(page, 2)
    assert step_value(page) == "0 / 15"
    page.get_by_role("button", name="next").click()
    wait_ready(page)
    assert step_value(page) == "1 / 15"
    # the frames are SVG grids (st.markdown keeps SVG; st.html's sanitizer would drop it): the browser draws
    # their titles, the given digits, the four cells topk unmasked outlined, and a tooltip on every cell
    assert page.locator(".mi-grid .mi-grid-title").all_text_contents() == ["topk: step 1", "eb: step 1"]
    first = page.locator(".mi-grid").first
    assert first.locator("text.given").count() == 81 - 58 and first.locator("rect.chosen").count() == 4
    assert first.locator("rect > title").count() == 81 and first.bounding_box()["width"] > 300
    page.locator("h1").first.click()  # focus the page so the arrow-key shortcut reaches it
    page.keyboard.press("ArrowRight")
    wait_ready(page)
    assert step_value(page) == "2 / 15"
    page.get_by_role("button", name="prev").click()
    wait_ready(page)
    assert step_value(page) == "1 / 15"
    assert "step=1" in page.url  # the frame is part of the shareable URL
    check_page(page, 2)
    page.close()


def test_space_on_a_focused_button_does_only_what_the_button_does(chromium, app_url):
    """A keyboard user steps with Tab and Space on "next": Space also fired the page's Play shortcut, and the frames
    started playing. With the focus on the page itself, Space still plays."""
    page = chromium.new_page(viewport=VIEW)
    page.goto(f"{app_url}/Decoding?a=topk&a_topk_k=4")
    wait_ready(page)
    page.get_by_role("button", name="next").focus()
    page.keyboard.press("Space")
    wait_ready(page)
    page.wait_for_timeout(2500)  # playing, three frames would have passed
    wait_ready(page)
    assert step_value(page) == "1 / 15"
    page.locator("h1").first.click()
    page.keyboard.press("Space")
    page.wait_for_function("() => /step=[3-9]|step=1[0-5]/.test(location.search)", timeout=30_000)
    page.locator("h1").first.click()
    page.keyboard.press("Space")  # pause
    wait_ready(page)
    page.close()


def test_the_keys_step_and_play_after_a_click_on_a_switch_or_the_speed(chromium, app_url):
    """A teacher clicks "Presentation mode", or picks the speed, then presses the keys the page names: the clicked
    control kept the focus, so the arrows moved the focus along the speeds (or did nothing on the switch) and
    Space switched presentation mode off again or picked another speed, instead of stepping and playing."""
    page = chromium.new_page(viewport={"width": 1366, "height": 768})
    page.goto(f"{app_url}/Decoding?a=topk&a_topk_k=4&b=topk&b_topk_k=8")
    wait_ready(page)
    page.get_by_text("Presentation mode").first.click()
    page.wait_for_function("() => location.search.includes('present=true')")
    wait_ready(page)
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => location.search.includes('step=1')", timeout=30_000)
    wait_ready(page)
    assert step_value(page) == "1 / 15" and "present=true" in page.url
    speeds = page.locator('[data-testid="stButtonGroup"]').filter(has=page.get_by_text("fast", exact=True))
    speeds.get_by_text("fast", exact=True).click()
    wait_ready(page)
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => location.search.includes('step=2')", timeout=30_000)
    wait_ready(page)
    page.keyboard.press("Space")  # plays, at the speed picked
    page.wait_for_function("() => /step=([4-9]|1[0-5])/.test(location.search)", timeout=30_000)
    page.keyboard.press("Space")  # pause
    wait_ready(page)
    assert speeds.locator('button[aria-checked="true"], button[aria-pressed="true"]').inner_text() == "fast"
    assert "present=true" in page.url
    page.close()


def test_keyboard_focus_is_outlined(chromium, app_url):
    """Streamlit's focus ring was 2.2:1 on white, and a focused page link or radio only turned grey (1.1:1)."""
    page = chromium.new_page(viewport=VIEW)
    page.goto(f"{app_url}/Decoding")
    wait_ready(page)
    # the walk starts once the sidebar is drawn (on a busy machine it was not yet, and Tab went to the page)
    page.wait_for_selector('[data-testid="stSidebar"] input[type="radio"]', state="attached", timeout=60_000)
    page.wait_for_selector("button.mi-copy-link", state="attached", timeout=60_000)
    # a radio's or switch's input is hidden: its label carries the ring (a select box draws its own dark border)
    ring = "() => { const e = document.activeElement, box = e.type === 'radio' || e.type === 'checkbox'; " \
           "const s = getComputedStyle(box ? e.closest('label') : e); " \
           "return [box ? 'radio' : e.tagName, s.outlineStyle, parseFloat(s.outlineWidth)]; }"
    seen = []
    for _ in range(40):  # the skip link, the page links, the copy-link button, the domain radio (the order
        page.keyboard.press("Tab")  # of the sidebar and the page's own controls varies with the load)
        kind, style, width = page.evaluate(ring)
        seen.append(kind)
        if kind in ("A", "BUTTON", "radio"):
            assert style == "solid" and width >= 2, (kind, style, width)
        if {"A", "BUTTON", "radio"} <= set(seen):
            break
    assert {"A", "BUTTON", "radio"} <= set(seen), seen
    page.close()


# the contrast of each selected segment's label and each slider's value on what lies under it (a segment's tint over
# the page); colours come as rgb() or, once mixed by CSS, as color(srgb 0-1)
PRIMARY_LABEL_CONTRAST = """() => {
  const rgba = s => { const f = s.startsWith('color(') ? 255 : 1, v = s.replace('color(srgb', '').match(/[\\d.]+/g);
                      return [v[0] * f, v[1] * f, v[2] * f, v.length > 3 ? +v[3] : 1]; };
  const over = (a, b) => [0, 1, 2].map(i => a[i] * a[3] + b[i] * (1 - a[3]));
  const lum = c => c.map(v => v / 255).map(v => v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
                    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const app = document.querySelector('[data-testid="stApp"]');
  const page = over(rgba(getComputedStyle(app).backgroundColor), [255, 255, 255]);
  return [...document.querySelectorAll('[data-testid="stMain"] :is([data-testid="stButtonGroup"] ' +
                                       'button[aria-checked="true"], [data-testid="stSliderThumbValue"]) p')].map(p => {
    const button = p.closest('button');
    const under = button ? over(rgba(getComputedStyle(button).backgroundColor), page) : page;
    const [a, b] = [lum(over(rgba(getComputedStyle(p).color), under)), lum(under)];
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  });
}"""


def test_a_selected_segment_and_the_step_slider_read_on_both_themes(chromium, app_url):
    """Both in Streamlit's primary colour: the selected speed (a segmented control) was 3.6:1 on its tint on the dark
    theme (4.48 on the light one), the step slider's value 3.9:1 on the dark page."""
    for scheme in ("light", "dark"):  # the theme "Use system setting" follows, as a projector's laptop sets it
        context = chromium.new_context(viewport=VIEW, color_scheme=scheme)
        page = context.new_page()
        page.goto(f"{app_url}/Decoding")
        wait_ready(page)
        page.wait_for_selector('[data-testid="stSliderThumbValue"] p', timeout=60_000)
        ratios = page.evaluate(PRIMARY_LABEL_CONTRAST)
        assert len(ratios) >= 2 and all(r >= 4.5 for r in ratios), (scheme, ratios)
        context.close()


def test_back_from_the_last_frame_lets_the_buttons_step_again(chromium, app_url):
    """Back showed the frame before the last, with next and end still greyed out and the arrow key dead: the
    buttons read the session's frame before the slider had taken the URL's."""
    page = chromium.new_page(viewport=VIEW)
    page.goto(f"{app_url}/Decoding?a=topk&a_topk_k=4")
    wait_ready(page)
    page.get_by_role("button", name="next").click()
    wait_ready(page)
    page.get_by_role("button", name="end").click()
    wait_ready(page)
    assert step_value(page) == "15 / 15" and page.get_by_role("button", name="next").is_disabled()
    page.go_back()
    wait_ready(page)
    assert step_value(page) == "1 / 15"
    assert page.get_by_role("button", name="next").is_enabled() and page.get_by_role("button", name="end").is_enabled()
    page.get_by_role("button", name="next").click()
    wait_ready(page)
    assert step_value(page) == "2 / 15"
    check_page(page, 2)
    page.close()


def selected(page, label: str) -> str:
    """The shown value of the selectbox whose label starts with ``label``."""
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text=label)
    return box.evaluate("e => { const i = e.querySelector('input'); "
                        "return (i && i.value) || e.querySelector('[value]')?.getAttribute('value') || e.innerText }")


def test_a_shared_url_reopens_the_same_view(chromium, app_url):
    first = chromium.new_context(viewport=VIEW)
    page = first.new_page()
    page.goto(f"{app_url}/MI_maps?preset=hard+%C2%B7+26+clues&cell=r5c4")
    wait_ready(page)
    check_page(page, 3)
    page.get_by_role("radio", name="entropy").click()  # a layer of the segmented control
    wait_ready(page)
    shared = page.url
    assert "layer=entropy" in shared and "cell=r5c4" in shared and "preset=hard" in shared
    first.close()
    second = chromium.new_context(viewport=VIEW)
    page = second.new_page()
    page.goto(shared)
    wait_ready(page)
    check_page(page, 3)
    assert selected(page, "Selected cell") == "r5c4"
    assert selected(page, "Preset") == "hard · 26 clues"
    assert page.locator(".gtitle", has_text="entropy").count() == 1  # the grid's title names its layer
    second.close()


def test_eight_browser_contexts_at_once(chromium, app_url):
    # an ordinary window: the charts above the fold must draw in each of the eight
    contexts = [chromium.new_context(viewport={"width": 1280, "height": 900}) for _ in range(8)]
    pages = [c.new_page() for c in contexts]
    try:
        for page in pages:
            page.goto(app_url, wait_until="commit")
        for title, charts in PAGES:
            for page in pages:  # start all eight before waiting on any: the server serves them together
                wait_ready(page)
                navigate(page, title)
            for page in pages:
                wait_ready(page)
                check_page(page, min(charts, 1))
                assert page.locator("h1").first.inner_text()
    finally:
        for c in contexts:
            c.close()


EASY = "..9.7.1.....2.8...2...3...4.9.........8....311.6...52.....6327.....9.6...1...7.5."


def test_an_uploaded_puzzle_put_in_the_link_reopens_in_a_fresh_browser(chromium, app_url, tmp_path):
    first = chromium.new_context(viewport=VIEW)
    first.grant_permissions(["clipboard-read", "clipboard-write"])
    page = first.new_page()
    page.goto(f"{app_url}/MI_maps?src=upload")
    wait_ready(page)
    (tmp_path / "p.txt").write_text(EASY + "\n")
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(tmp_path / "p.txt"))
    wait_ready(page)
    page.get_by_role("button", name="Put this puzzle in the link").click()
    wait_ready(page)
    assert "src=paste" in page.url and f"puzzle={EASY}" in page.url  # the puzzle itself, not only the source
    page.get_by_role("button", name="Copy link to this view").click()
    page.wait_for_timeout(300)
    shared = page.evaluate("navigator.clipboard.readText()")
    assert shared == page.url
    first.close()
    second = chromium.new_context(viewport=VIEW)
    page = second.new_page()
    page.goto(shared)
    wait_ready(page)
    check_page(page, 3)
    assert page.locator('[data-testid="stTextArea"] textarea').input_value() == EASY
    second.close()


def test_a_crafted_link_is_clamped_with_a_one_line_note(chromium, app_url):
    page = chromium.new_page(viewport=VIEW)
    page.goto(f"{app_url}/Decoding?domain=banana&step=-3&a=mask_predict&a_mask_predict_steps=100000000&zz=1")
    wait_ready(page)
    check_page(page, 2)
    note = page.locator('[data-testid="stAlert"]', has_text="this link").first.inner_text()
    assert "not understood: domain=banana (one of: 9x9, 4x4, protein, antibody), zz=1" in note
    assert "a_mask_predict_steps=100000000 → 1000" in note
    assert "a_mask_predict_steps=1000" in page.url  # the address says what the page shows
    page.get_by_role("button", name="next").click()  # the next run binds the widget to the URL again
    wait_ready(page)
    assert "a_mask_predict_steps=1000" in page.url and "step=1" in page.url
    page.get_by_text("Strategies and settings").click()  # the settings are folded
    assert page.get_by_role("spinbutton", name="steps").first.input_value() == "1000"
    page.close()


def test_a_link_to_a_page_the_app_does_not_have_names_it_in_one_note(chromium, app_url):
    """Streamlit runs the home page for an address it has no page for, under a pop-up ("Page not found") that named
    neither the page asked for nor the app's: the note names both, the pop-up closes, the note stays over reruns (it
    went at the first, as Streamlit writes the home page's address) until dismissed, and the link's settings go on
    to the page picked from the sidebar."""
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/Decodng?domain=4x4")
    wait_ready(page)
    note = page.locator('[data-testid="stAlert"]').filter(has_text="no page")
    note.wait_for()
    text = note.inner_text()
    assert 'MI Lens has no page "Decodng", so the home page opened (did you mean /Decoding?)' in text, text
    assert all(f"({a})" in text for a in ("/MI_maps", "/Exact_vs_estimated", "/Decoding", "/What_if", "/Benchmarks",
                                          "/About")), text
    assert page.locator('[data-testid="stAlert"]').count() == 1
    page.wait_for_function("() => !document.querySelector('[role=\"dialog\"]')", timeout=10_000)  # Streamlit's pop-up
    page.locator("h1").click()
    page.keyboard.press("r")  # a rerun (as any click's): Streamlit has written the home page's address by then
    wait_ready(page)
    assert note.count() == 1 and urllib.parse.urlparse(page.url).path == "/", page.url  # it stays
    page.get_by_role("button", name="Dismiss this note").click()
    wait_ready(page)
    assert page.locator('[data-testid="stAlert"]').count() == 0
    navigate(page, "Decoding")
    wait_ready(page)
    assert "/Decoding?" in page.url and "domain=4x4" in page.url, page.url
    assert page.locator('[data-testid="stAlert"]').filter(has_text="no page").count() == 0
    page.close()


def test_presentation_mode_on_a_projector_plays_with_space(chromium, app_url):
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/Decoding?a=topk&a_topk_k=4&b=topk&b_topk_k=8&present=true")
    wait_ready(page)
    check_page(page, 2)
    sidebar = page.locator('[data-testid="stSidebar"]').bounding_box()
    assert sidebar is None or sidebar["x"] + sidebar["width"] <= 1 or sidebar["width"] < 50, sidebar  # folded
    page.wait_for_function("document.querySelectorAll('.mi-grid svg').length == 2 && "
                           "document.querySelector('h1').getBoundingClientRect().height < 60")  # its style applied
    wait_ready(page)
    boxes = [c.bounding_box() for c in page.locator(".mi-grid svg").all()]
    widths = [box["width"] for box in boxes if box]
    assert len(widths) == 2 and min(widths) > 300, widths  # not the 140 px grids of a 1024 px screen with the sidebar open
    assert max(box["y"] + box["height"] for box in boxes) <= 768, boxes  # both grids whole on the first screen
    play = page.get_by_role("button", name="Play", exact=False).first.bounding_box()
    assert play["y"] + play["height"] <= 768 and page.get_by_role("button", name="next").first.bounding_box()["y"] < 768
    header = page.locator('[data-testid="stHeader"]').bounding_box()
    assert page.locator("h1").first.bounding_box()["y"] >= header["y"] + header["height"] - 1  # not under the bar
    page.locator("h1").first.click()
    page.keyboard.press("Space")
    page.wait_for_timeout(2500)
    page.keyboard.press("Space")  # pause
    # under load the pause's run can queue behind a frame's: wait for the button it redraws, then read the step
    page.get_by_role("button", name="Play", exact=False).first.wait_for(timeout=30_000)
    wait_ready(page)
    reached = int(step_value(page).split(" / ")[0])
    assert reached >= 1
    page.wait_for_timeout(1500)
    assert int(step_value(page).split(" / ")[0]) == reached  # paused
    page.goto(f"{app_url}/Decoding?a=topk&a_topk_k=4&b=topk&b_topk_k=8&present=true&step=13")
    wait_ready(page)
    page.get_by_role("button", name="Play", exact=False).first.click()
    page.wait_for_timeout(4000)  # two frames to the end, then the next tick stops the timer
    wait_ready(page)
    assert step_value(page) == "15 / 15"
    assert page.get_by_role("button", name="Play", exact=False).first.is_visible()  # not "Pause": it stopped
    page.close()


GRID_DIGITS = """() => [...document.querySelectorAll('.mi-grid svg')].map(svg => {
  const box = svg.getBoundingClientRect(), digit = svg.querySelector('text.given');
  return [box.top, box.bottom, parseFloat(digit.getAttribute('font-size')) * box.width / svg.viewBox.baseVal.width];
})"""


@pytest.mark.parametrize("screen, scale", [((1024, 768), 1.5), ((1280, 800), 1.5)])
@pytest.mark.parametrize("strategies", ["a=mi&b=eb", "a=sequential&b=mi_exact"])
def test_presenting_on_a_zoomed_projector_fits_both_grids_with_large_digits(chromium, app_url, screen, scale,
                                                                              strategies):
    """1024 x 768 zoomed to 150% (683 x 512 CSS px): the controls took three rows, the grids 182 px (digits 16 px on
    the screen, smaller than the 22.5 of the page outside presentation mode), and where a strategy heading took two
    lines (mi_exact's) the grids' bottom row fell 2 px below the screen's edge. Now two rows of controls, and the
    grids fill the height left, whatever wraps above them."""
    page = chromium.new_page(viewport={"width": round(screen[0] / scale), "height": round(screen[1] / scale)},
                             device_scale_factor=scale)
    page.goto(f"{app_url}/Decoding?{strategies}&present=true")
    wait_ready(page)
    check_page(page, 2)
    page.wait_for_timeout(300)  # the grids' height follows their measured top a frame later
    height = page.viewport_size["height"]
    grids = page.evaluate(GRID_DIGITS)
    assert len(grids) == 2, grids
    for top, bottom, digit in grids:
        assert bottom <= height, (grids, height)  # whole on the screen, without scrolling
        assert digit * scale >= 22.5, grids  # screen px: at least as large as outside presentation mode
        assert bottom >= height - 12, (grids, height)  # the grids take the height there is
    toggle = page.get_by_role("switch", name="Presentation mode").locator("xpath=ancestor::label").bounding_box()
    play = page.get_by_role("button", name="Play", exact=False).first.bounding_box()
    speed = page.get_by_role("radiogroup", name="Speed").bounding_box()
    step = page.get_by_role("button", name="next").first.bounding_box()
    middle = toggle["y"] + toggle["height"] / 2
    for box in (play, speed):  # one row: the mode, the settings, Play and the speed
        assert box["y"] <= middle <= box["y"] + box["height"], (toggle, box)
    assert step["y"] >= play["y"] + play["height"] and step["y"] + step["height"] <= min(top for top, _, _ in grids)
    settings = page.get_by_role("button", name="Strategies and settings")  # by its icon at 683 px, named still
    settings.click()
    page.get_by_role("combobox", name="Strategy A").wait_for(state="visible")
    page.close()


MAP_AND_BAR = """([height, titles]) => {  // each map with a colour bar whose title matches the pattern ``titles``: its
  // title, plot height, and the height of plot and bar
  const room = height - document.querySelector('[data-testid="stHeader"]').getBoundingClientRect().bottom;
  return [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].filter(c => c.querySelector('.colorbar'))
    .map(c => [(c.querySelector('.gtitle') || {}).textContent || '', c.querySelector('.nsewdrag').getBoundingClientRect(),
               c.querySelector('.colorbar').getBoundingClientRect()])
    .filter(([title]) => new RegExp(titles).test(title))
    .map(([title, p, b]) => [title, p.height, Math.max(p.bottom, b.bottom) - Math.min(p.top, b.top), room]);
}"""


@pytest.mark.parametrize("screen", [(1280, 720), (1024, 768)])
def test_an_mi_maps_colour_bar_fits_a_zoomed_projectors_screen_beside_its_map(chromium, app_url, screen):
    """A teacher's projector zoomed to 150% (853 x 480 or 683 x 512 CSS px, 420-452 below the header bar): a protein's
    map was 457 px tall and its colour bar 498, so the audience saw the map without its scale's ends. Every MI map
    and its colour bar now fit one screen, and an antibody's map keeps its size (237 px at a flat chart height)."""
    scale, height = 1.5, round(screen[1] / 1.5)
    page = chromium.new_page(viewport={"width": round(screen[0] / scale), "height": 4000},  # tall: every chart draws
                             device_scale_factor=scale)
    for domain, maps in (("9x9", 2), ("protein", 2), ("antibody", 2)):
        page.goto(f"{app_url}/MI_maps?domain={domain}&present=true")
        wait_ready(page)
        check_page(page, 3)
        page.wait_for_function("(n) => document.querySelectorAll('[data-testid=\"stPlotlyChart\"] .colorbar').length >= n",
                               arg=maps)
        found = page.evaluate(MAP_AND_BAR, [height, "^(MI|Contact)"])
        assert len(found) == maps, (domain, found)
        for title, plot, span, room in found:
            assert span <= room, (domain, title, span, room)  # the map and its whole colour bar on one screen
            assert plot >= 300, (domain, title, plot)
    page.close()


@pytest.mark.parametrize("screen, scale", [((1280, 720), 1.5), ((1024, 768), 1.5), ((1024, 768), 1)])
def test_exact_and_what_if_maps_fit_a_projectors_screen_with_a_plain_proteins_plot(chromium, app_url, screen, scale):
    """Exact vs estimated and What-if drew a sequence's maps 420-480 px tall: an antibody's title line, CDR bands and
    labels such as ``_101·H3`` left the plot 217-277 px. Each map now keeps MI maps' plot (337 px, 326 where a
    1280-px screen at 150% with the sidebar open narrows it) and fits one screen with its colour bar."""
    height = round(screen[1] / scale)
    page = chromium.new_page(viewport={"width": round(screen[0] / scale), "height": 4000},  # tall: every chart draws
                             device_scale_factor=scale)
    for path, maps in (("Exact_vs_estimated?", 1), ("Exact_vs_estimated?exact=true&", 4), ("What_if?", 3)):
        for domain in ("protein", "antibody"):
            page.goto(f"{app_url}/{path}domain={domain}")
            wait_ready(page)
            check_page(page, maps)
            page.wait_for_function("(n) => document.querySelectorAll('[data-testid=\"stPlotlyChart\"] .colorbar')"
                                   ".length >= n", arg=maps)
            found = page.evaluate(MAP_AND_BAR, [height, "^(?!Marginals)"])  # What-if's marginals strip is no map
            assert len(found) == maps, (path, domain, found)
            for title, plot, span, room in found:
                assert span <= room, (path, domain, title, span, room)  # the map and its whole colour bar
                assert plot >= 320, (path, domain, title, plot)
    page.close()


# the chart titled to match ``titles``: its height, the height of its plots and colour bar together, the room below
# the header bar, and its tick labels: the least font size and, of single capitals (the amino acids), the spacing
STRIP_AND_TICKS = """([titles]) => {
  const room = innerHeight - document.querySelector('[data-testid="stHeader"]').getBoundingClientRect().bottom;
  const chart = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
    .find(c => new RegExp(titles).test((c.querySelector('.gtitle') || {}).textContent || ''));
  const boxes = [...chart.querySelectorAll('.nsewdrag, .colorbar')].map(e => e.getBoundingClientRect());
  const ticks = [...chart.querySelectorAll('[class$="tick"] text')];
  const letters = ticks.filter(t => /^[A-Z]$/.test(t.textContent)).map(t => t.getBoundingClientRect().top);
  const gaps = letters.slice(1).map((top, i) => top - letters[i]).filter(gap => gap > 0);
  return [chart.querySelector('.main-svg').getBoundingClientRect().height,
          Math.max(...boxes.map(b => b.bottom)) - Math.min(...boxes.map(b => b.top)), room,
          Math.min(...ticks.map(t => parseFloat(t.style.fontSize))), letters.length, Math.min(...gaps)];
}"""


def drawn_chart(page, titles: str) -> None:
    """Scroll the chart whose title matches ``titles`` into view until plotly has drawn it."""
    chart = page.locator('[data-testid="stPlotlyChart"]').filter(has=page.locator(".gtitle", has_text=re.compile(titles)))
    deadline = time.time() + 60
    while chart.count() == 0 and time.time() < deadline:  # drawn once near the screen: go down the page
        page.locator('[data-testid="stPlotlyChart"]').last.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
    chart.first.scroll_into_view_if_needed()
    page.wait_for_timeout(500)  # the strip takes its height from its container a frame later


@pytest.mark.parametrize("screen, scale", [((1280, 720), 1.5), ((1024, 768), 1.5), ((1366, 768), 1)])
def test_a_marginal_strip_fits_a_zoomed_projectors_screen_in_letters_as_large_as_the_maps(chromium, app_url, screen,
                                                                                          scale):
    """A projector zoomed to 150% leaves 420-452 px below the header bar: the MI maps page's per-residue strip took
    473-556 px of plot and colour bar, What-if's "Marginals after" 523-577, so a teacher could not show the whole
    strip. Now each fits there, its 20 amino acids in letters as large as the maps' tick labels and further apart
    than their size; a 1366 x 768 laptop at 100% keeps the strip's full 680 px."""
    page = chromium.new_page(viewport={"width": round(screen[0] / scale), "height": round(screen[1] / scale)},
                             device_scale_factor=scale)  # the real height: the strip sizes itself to the screen
    for path, strip in (("MI_maps", "^Per-residue"), ("What_if", "^Marginals after")):
        for domain in ("protein", "antibody"):
            page.goto(f"{app_url}/{path}?domain={domain}")
            wait_ready(page)
            check_page(page, 1)
            drawn_chart(page, "^MI")
            map_px = page.evaluate(STRIP_AND_TICKS, ["^MI"])[3]
            drawn_chart(page, strip)
            chart, span, room, letter_px, letters, gap = page.evaluate(STRIP_AND_TICKS, [strip])
            where = (path, domain, chart, span, room, letter_px, gap)
            assert span <= room, where  # plots and colour bar on one screen
            assert letters == 20 and letter_px >= map_px >= 14 and gap >= letter_px, where
            if scale == 1:
                assert chart == 300 + 19 * 20, where  # the strip's full height, where the screen has room for it
    page.close()


DIGIT_IN_CELL = """() => [...document.querySelectorAll('.mi-grid svg')].map(svg => {
  const digit = svg.querySelector('text.given, text.filled, text.wrong'), cell = svg.querySelector('rect');
  return parseFloat(digit.getAttribute('font-size')) / parseFloat(cell.getAttribute('width'));
})"""


@pytest.mark.parametrize("domain", ["4x4", "9x9"])
def test_presenting_a_grid_sizes_its_digits_to_its_cells(chromium, app_url, domain):
    """Presenting, a 4x4's digits were the 9x9's 30 px in cells of 125: a quarter of the cell, where a 9x9's fill
    over half of theirs."""
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/Decoding?domain={domain}&present=true&step=3")
    wait_ready(page)
    check_page(page, 2)
    shares = page.evaluate(DIGIT_IN_CELL)
    assert len(shares) == 2 and all(0.5 <= share <= 0.6 for share in shares), shares
    page.close()


def test_the_exported_player_plays_offline(chromium):
    from mi_lens_app import core, exports, traces
    from mi_lens_app.domains import DOMAINS, load_presets

    domain = DOMAINS["sudoku4"]
    puzzle = load_presets()["sudoku4"][0].puzzle
    model = core.load_domain_model(domain, core.app_device())[0]
    trace = traces.decode_trace(model, None, domain, puzzle, None, "sequential", {})
    html = exports.decoding_player_html([trace], puzzle, [c != "." for c in puzzle], domain.alphabet, 2)
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.set_content(html)
    assert page.locator("#label").inner_text() == f"step 0 of {len(trace.steps) - 1}"
    assert page.locator(".grid div").count() == 16
    page.keyboard.press("Space")
    page.wait_for_timeout(2000)
    page.keyboard.press("Space")
    shown = int(page.locator("#label").inner_text().split()[1])
    assert shown >= 1
    assert page.locator(".grid div.filled").count() == shown  # one digit written per step of sequential
    page.close()


def test_the_exported_players_legend_keeps_its_colon_clear_of_the_orange_sample(chromium):
    """The legend's "orange outline" sample box is drawn 3 px outside its text: it covered the colon after it."""
    from mi_lens_app import exports

    puzzle = "1.3." * 4
    trace = SimpleNamespace(strategy="sequential", steps=[SimpleNamespace(
        step=0, tokens=[int(c) if c != "." else 0 for c in puzzle], passes=0, extra_passes=0,
        chosen=np.zeros(16, bool), errors=np.zeros(16, bool))])
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.set_content(exports.decoding_player_html([trace], puzzle, [c != "." for c in puzzle], ("1", "2", "3", "4"), 2))
    sample_right, colon_left = page.evaluate("""() => {
      const span = [...document.querySelectorAll('.legend span')].find(s => s.textContent === 'orange outline');
      const style = getComputedStyle(span), colon = document.createRange();
      colon.setStart(span.nextSibling, 0); colon.setEnd(span.nextSibling, 1);
      return [span.getBoundingClientRect().right + parseFloat(style.outlineWidth) + parseFloat(style.outlineOffset),
              colon.getBoundingClientRect().left];
    }""")
    assert page.evaluate("() => [...document.querySelectorAll('.legend span')].find(s => s.textContent === "
                         "'orange outline').nextSibling.textContent.startsWith(':')")
    assert colon_left >= sample_right + 1, (sample_right, colon_left)
    page.close()


PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 3, "is_mobile": True, "has_touch": True}
PHONE_AGENT = ("Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0 "
               "Mobile Safari/537.36")


def test_the_exported_player_fits_a_phone(chromium):
    """A student opens the downloaded player on a phone: without a viewport tag the phone laid it out 980 px wide
    and shrank it to 40%, its text to about 7 px and its buttons to 14 px."""
    from mi_lens_app import exports

    puzzle = "1.3." * 4
    trace = SimpleNamespace(strategy="sequential", steps=[SimpleNamespace(
        step=0, tokens=[int(c) if c != "." else 0 for c in puzzle], passes=0, extra_passes=0,
        chosen=np.zeros(16, bool), errors=np.zeros(16, bool))])
    html = exports.decoding_player_html([trace], puzzle, [c != "." for c in puzzle], ("1", "2", "3", "4"), 2)
    context = chromium.new_context(**PHONE)
    page = context.new_page()
    page.set_content(html)
    assert page.evaluate("document.documentElement.clientWidth") == 390
    grid = page.locator(".grid").bounding_box()
    assert grid["x"] + grid["width"] <= 390 and grid["width"] >= 250, grid
    assert page.locator("#next").bounding_box()["height"] >= 24  # a button a finger can hit
    context.close()


def test_a_click_on_a_heatmap_cell_selects_the_pair(chromium, app_url):
    page = chromium.new_page(viewport=VIEW)
    page.goto(f"{app_url}/MI_maps")
    wait_ready(page)
    check_page(page, 3)
    cell = selected(page, "Selected cell")  # the most uncertain blank: its row and column are masked pairs
    row, col = (int(v) for v in cell[1:].split("c"))
    index = (row - 1) * 9 + (col - 1)
    chart = page.locator('[data-testid="stPlotlyChart"]').filter(has=page.locator(".gtitle", has_text="MI, "))
    box = chart.locator(".nsewdrag").first.bounding_box()
    x = box["x"] + (index + 0.5) * box["width"] / 81
    y = box["y"] + (index + 0.5) * box["height"] / 81
    page.mouse.click(x, y)
    wait_ready(page)
    caption = page.get_by_text("Clicked pair").first.inner_text()
    assert caption.startswith(f"Clicked pair {cell} · {cell}: MI = ")
    # clicks on two other blanks: the cell the first wrote into the URL, still there as the second's rerun starts,
    # is the page's own, not a link's (it said "part of this link was not understood: cell=...")
    blanks = [i for i, ch in enumerate(load_presets()["sudoku9"][0].puzzle) if ch == "."]  # the preset it opens on
    for other in [i for i in blanks if i != index][:2]:
        page.mouse.click(box["x"] + (other + 0.5) * box["width"] / 81, box["y"] + (other + 0.5) * box["height"] / 81)
        wait_ready(page)
        assert selected(page, "Selected cell") == f"r{other // 9 + 1}c{other % 9 + 1}"
        assert page.get_by_text("not understood").count() == 0
    page.close()


# records whether the element container holding the chart titled ``prefix`` is ever marked stale (Streamlit marks
# the elements of a page while its script reruns; a fragment's rerun leaves the elements outside it alone)
WATCH_STALE = """(prefix) => {
  const box = [...document.querySelectorAll('[data-testid="stElementContainer"]')].find(
    e => e.querySelector('[data-testid="stPlotlyChart"]') && [...e.querySelectorAll('.gtitle')].some(
      t => t.textContent.startsWith(prefix)));
  window.__stale = false;
  new MutationObserver(() => { if (box.getAttribute('data-stale') === 'true') window.__stale = true; })
    .observe(box, {attributes: true, attributeFilter: ['data-stale']});
}"""


def test_a_new_grid_layer_reruns_the_grid_alone(chromium, app_url):
    page = chromium.new_page(viewport=VIEW)
    page.goto(f"{app_url}/MI_maps")
    wait_ready(page)
    check_page(page, 3)
    page.evaluate(WATCH_STALE, "MI, ")
    page.get_by_role("radio", name="entropy", exact=True).click()
    page.wait_for_function("[...document.querySelectorAll('.gtitle')].some(t => t.textContent === 'entropy')")
    wait_ready(page)
    assert not page.evaluate("window.__stale")  # the 81 x 81 heatmap was not rerun with the page
    page.evaluate(WATCH_STALE, "MI, ")
    page.get_by_text("Box-major order").click()  # a setting of the heatmap: the whole page reruns, and it shows
    wait_ready(page)
    assert page.evaluate("window.__stale")
    check_page(page, 3)
    page.close()


def test_a_decoding_step_reruns_the_frames_alone(chromium, app_url):
    page = chromium.new_page(viewport=VIEW)
    page.goto(f"{app_url}/Decoding?a=topk&a_topk_k=4")
    wait_ready(page)
    check_page(page, 2)
    # the settings sit in a folded expander: textContent, since innerText is empty where nothing is drawn
    settings = """() => [...document.querySelectorAll('[data-testid="stElementContainer"]')]
      .find(e => e.querySelector('[data-testid="stSelectbox"]') && e.textContent.includes('Strategy A'))"""
    page.wait_for_function(settings)  # a rerun the link's bound widgets start can redraw it just then
    wait_ready(page)
    page.evaluate("""() => { const box = [...document.querySelectorAll('[data-testid="stElementContainer"]')]
      .find(e => e.querySelector('[data-testid="stSelectbox"]') && e.textContent.includes('Strategy A'));
      window.__stale = false;
      new MutationObserver(() => { if (box.getAttribute('data-stale') === 'true') window.__stale = true; })
        .observe(box, {attributes: true, attributeFilter: ['data-stale']}); }""")
    page.get_by_role("button", name="next").click()
    wait_ready(page)
    assert step_value(page) == "1 / 15"
    assert not page.evaluate("window.__stale")  # the strategies and settings were not rerun
    page.close()


def test_a_shared_link_keeps_its_puzzle_across_page_changes(chromium, app_url):
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/MI_maps?preset=hard+%C2%B7+26+clues&cell=r5c4")
    wait_ready(page)
    page.wait_for_function("document.querySelectorAll('[data-testid=\"stSidebar\"] [data-testid=\"stPageLink\"]')"
                           ".length >= 7")
    for title in ("Decoding", "About", "What-if", "MI maps"):
        navigate(page, title)
        wait_ready(page)
        assert "preset=hard" in page.url, (title, page.url)  # the address still names the puzzle
        if title != "About":
            assert selected(page, "Preset") == "hard · 26 clues", title
    assert selected(page, "Selected cell") == "r5c4"  # carried through the pages that have no selected cell
    page.close()


def slowed_server(page) -> Callable:
    """Route the page's connection to the app through a gate; the returned ``slowly(seconds, action)`` does
    ``action()`` and keeps what the page sends to the server meanwhile from it for ``seconds``, as a busy server
    would answer late."""
    gate = {"held": None, "server": None}

    def connect(ws):
        server = gate["server"] = ws.connect_to_server()
        ws.on_message(lambda m: gate["held"].append(m) if gate["held"] is not None else server.send(m))

    page.route_web_socket(re.compile(r".*/_stcore/stream"), connect)

    def slowly(seconds: float, action: Callable) -> None:
        gate["held"] = []
        action()
        page.wait_for_timeout(seconds * 1000)
        held, gate["held"] = gate["held"], None
        for message in held:
            gate["server"].send(message)

    return slowly


@pytest.mark.parametrize("server_seconds", [0, 7])
def test_the_back_button_returns_to_the_view_with_its_puzzle(chromium, app_url, server_seconds):
    """Back from another page, one press a page: Streamlit pushed several history entries as a view opened (the
    parameters it drops from the page left, its corrections, their restoring), so Back needed two or three
    presses; and restoring history it reset a widget whose parameter was missing, so the view came back on the
    showcase, calling the preset "not understood". ``server_seconds``: the server answers a page change that late
    (a 5 s limit in the script let each page change add 3-4 entries then)."""
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    slowly = slowed_server(page)
    page.goto(f"{app_url}/MI_maps?preset=hard+%C2%B7+26+clues&cell=r5c4")
    wait_ready(page)
    entries = page.evaluate("history.length")
    for title, path in (("Decoding", "Decoding"), ("What-if", "What_if")):
        slowly(server_seconds, lambda: navigate(page, title))
        page.wait_for_url(f"**/{path}?*preset=hard*")
        wait_ready(page)
    page.wait_for_timeout(1000)
    wait_ready(page)
    assert page.evaluate("history.length") == entries + 2  # one entry a page change
    for path in ("/Decoding", "/MI_maps"):
        page.go_back()
        wait_ready(page)
        assert path in page.url and "preset=hard" in page.url, page.url
        assert page.locator('[data-testid="stAlertContentWarning"]').count() == 0, page.url  # no "not understood"
    assert selected(page, "Preset") == "hard · 26 clues" and selected(page, "Selected cell") == "r5c4"
    page.close()


def test_back_several_entries_at_once_into_another_page_brings_that_entrys_settings(chromium, app_url):
    """Two or more entries back at once (a quick double Back, ``history.go(-3)``) into another page's entry: the page
    reopened with the shared settings of the page left (4x4, chosen on What-if, over the Decoding entry's 9x9
    preset); one Back at a time was right. And the jump forward again brings the 4x4 back."""
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/Decoding?preset=hard+%C2%B7+26+clues")
    wait_ready(page)
    for title, path in (("MI maps", "MI_maps"), ("What-if", "What_if")):
        navigate(page, title)
        page.wait_for_url(f"**/{path}?*preset=hard*")
        wait_ready(page)
    page.locator('[data-testid="stSidebar"]').get_by_text("4x4", exact=True).first.click()
    page.wait_for_function("location.search.includes('domain=4x4')", polling=250, timeout=30_000)
    wait_ready(page)
    page.evaluate("history.go(-3)")
    page.wait_for_url("**/Decoding?*")
    wait_ready(page)
    page.wait_for_timeout(1000)
    wait_ready(page)
    assert "preset=hard" in page.url and "domain=" not in page.url, page.url
    assert checked(page, "Domain") == "9x9" and selected(page, "Preset") == "hard · 26 clues", page.url
    page.evaluate("history.go(3)")
    page.wait_for_url("**/What_if?*")
    wait_ready(page)
    page.wait_for_timeout(1000)
    wait_ready(page)
    assert "domain=4x4" in page.url and checked(page, "Domain") == "4x4", page.url
    page.close()


# the views model's label where MI_LENS_SUDOKU_MODEL names the app's model (the server's tiny one): the file and the
# variable, not the shipped model's "default, 4 symmetric views", which would describe another model
VIEWS_LABEL = "mdm.safetensors, 4 symmetric views (MI_LENS_SUDOKU_MODEL)"


def test_the_chosen_model_goes_with_a_page_change_to_the_views_that_pick_one(chromium, app_url):
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/MI_maps")
    wait_ready(page)
    page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').filter(has_text="Model").click()
    page.get_by_role("option", name=VIEWS_LABEL).click()
    wait_ready(page)
    page.wait_for_function("document.querySelectorAll('[data-testid=\"stSidebar\"] [data-testid=\"stPageLink\"]')"
                           ".length >= 7")
    navigate(page, "Decoding")
    wait_ready(page)
    assert selected(page, "Model") == VIEWS_LABEL, page.url
    sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
    assert "read in 4 symmetric views" in sidebar  # the decodings run the chosen model
    navigate(page, "What-if")  # no model picker: the link leaves the model out
    wait_ready(page)
    assert "model=" not in page.url
    page.close()


def test_a_link_that_names_the_model_by_its_id_keeps_it_in_the_address_and_on_a_page_change(chromium, app_url):
    """``model=views`` selects the views model; the address then names it as the select does (the widget dropped
    the id from it, so a link copied from the page lost the model), and the next view keeps it."""
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/MI_maps?model=views")
    wait_ready(page)
    page.wait_for_function("location.search.includes('model=mdm.safetensors')", timeout=30_000)
    assert selected(page, "Model") == VIEWS_LABEL, page.url
    assert "not understood" not in page.locator("body").inner_text()
    page.wait_for_function("document.querySelectorAll('[data-testid=\"stSidebar\"] [data-testid=\"stPageLink\"]')"
                           ".length >= 7")
    navigate(page, "Decoding")
    wait_ready(page)
    assert selected(page, "Model") == VIEWS_LABEL, page.url
    page.close()


def test_a_domain_switch_leaves_no_stale_preset_for_the_next_page(chromium, app_url):
    """9x9 -> protein (no Sudoku preset) -> 4x4 left the 9x9 preset's name in the address; the next page took it
    for a link's and said "not understood", though no link was opened."""
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/MI_maps")
    wait_ready(page)
    sidebar = page.locator('[data-testid="stSidebar"]')
    for name in ("protein", "4x4"):
        sidebar.get_by_text(name, exact=True).first.click()
        wait_ready(page)
    page.wait_for_function("document.querySelectorAll('[data-testid=\"stSidebar\"] [data-testid=\"stPageLink\"]')"
                           ".length >= 7")
    navigate(page, "What-if")
    wait_ready(page)
    body = page.locator("body").inner_text()
    assert "not understood" not in body and "4x4" in page.url, (page.url, body[:300])
    page.close()


def checked(page, label: str) -> str:
    """The chosen option of the radio group ``label`` in the sidebar."""
    group = page.locator('[data-testid="stSidebar"] [data-testid="stRadio"]').filter(has_text=label).first
    return group.locator('label:has(input:checked)').inner_text().strip()


def test_back_undoes_a_new_colour_scale_and_each_domain_switch_one_press_each(chromium, app_url):
    """A widget's change wrote over the entry of the view before it and its run pushed another: after 9x9 ->
    protein -> 4x4, Back showed 4x4 again and the next Back left the app. And the 4x4 view took 9x9's preset
    into its address, so its next run said "part of this link was not understood"."""
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/MI_maps")
    wait_ready(page)
    entries = page.evaluate("history.length")
    page.get_by_role("radio", name="log", exact=True).click()  # the heatmap's colour scale
    page.wait_for_function("location.search.includes('scale=log')", polling=250, timeout=30_000)
    wait_ready(page)
    sidebar = page.locator('[data-testid="stSidebar"]')
    for name in ("protein", "4x4"):
        sidebar.get_by_text(name, exact=True).first.click()
        page.wait_for_function(f"location.search.includes('domain={name}')", polling=250, timeout=30_000)
        wait_ready(page)
    page.wait_for_timeout(1000)
    wait_ready(page)
    assert "preset=" not in page.url and selected(page, "Preset").startswith("empty"), page.url  # 4x4's first
    assert page.evaluate("history.length") == entries + 3  # one entry a change
    page.get_by_role("radio", name="entropy", exact=True).click()  # a run more: nothing in the address is stale
    wait_ready(page)
    assert page.locator('[data-testid="stAlertContentWarning"]').count() == 0, page.url
    for domain in ("4x4", "protein", "9x9"):
        page.go_back()
        wait_ready(page)
        assert checked(page, "Domain") == domain, page.url
    assert "scale=log" in page.url and "domain=" not in page.url, page.url
    page.go_back()
    wait_ready(page)
    assert "scale=" not in page.url, page.url
    page.go_forward()
    wait_ready(page)
    assert "scale=log" in page.url, page.url
    page.close()


def test_the_colour_scale_goes_in_the_address_after_a_domain_switch(chromium, app_url):
    """The MI maps drew the colour picker beside the cell on a grid and in a row of its own on a protein: moved to
    another parent by a domain switch, the widget lost its place in the address (a copied link left it out)."""
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/MI_maps")
    wait_ready(page)
    for name, scale in (("protein", "log"), ("9x9", "linear")):
        page.locator('[data-testid="stSidebar"]').get_by_text(name, exact=True).first.click()
        wait_ready(page)
        page.get_by_role("radio", name=scale, exact=True).click()
        page.wait_for_function(f"location.search.includes('scale={scale}')", polling=250, timeout=30_000)
        wait_ready(page)
    page.close()


def test_back_from_presentation_mode_brings_back_the_full_page(chromium, app_url):
    """The run restoring the entry before presentation mode read the mode from the session, still on: the toggle
    showed off on the presentation layout, the sidebar folded and the settings in a popover."""
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/Decoding")
    wait_ready(page)
    page.get_by_text("Presentation mode", exact=True).click()
    page.wait_for_function("location.search.includes('present=true')", polling=250, timeout=30_000)
    wait_ready(page)
    assert page.locator('[data-testid="stPopover"]').count() == 1  # the settings folded into a popover
    page.go_back()
    wait_ready(page)
    assert "present=" not in page.url, page.url
    page.wait_for_selector('[data-testid="stExpander"]', timeout=30_000)  # the settings under the row again
    assert page.locator('[data-testid="stPopover"]').count() == 0
    sidebar = page.locator('[data-testid="stSidebar"]').bounding_box()
    assert sidebar is not None and sidebar["width"] > 200, sidebar  # open
    page.close()


def test_a_change_whose_run_ends_before_its_records_are_read_still_ends(chromium, app_url):
    """A quick run began and ended before the page's script read the records of its state, which it read from the
    element (both said "notRunning"): the change stayed open, and the next widget change wrote over its entry, so
    one Back undid two changes. Two changes, each with a run that flips the state at once, give two entries."""
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/About")
    wait_ready(page)
    entries = page.evaluate("history.length")
    change = """(value) => history.replaceState({}, "", location.origin + location.pathname + "?x=" + value)"""
    for value in (1, 2):
        page.evaluate(change, value)  # as Streamlit writes a widget's change: a whole URL
        page.evaluate("""() => {
            const app = document.querySelector("[data-test-script-state]");
            app.setAttribute("data-test-script-state", "running");
            app.setAttribute("data-test-script-state", "notRunning");
        }""")
        page.wait_for_timeout(200)
    assert page.evaluate("history.length") == entries + 2
    page.evaluate(change, 3)  # a change while another's run goes on: an entry of its own too
    page.evaluate(change, 4)
    assert page.evaluate("history.length") == entries + 4
    page.evaluate("""() => history.replaceState({}, "", location.pathname + "?x=5")""")  # Streamlit's correction
    assert page.evaluate("history.length") == entries + 4
    page.close()


def test_a_change_whose_run_was_never_seen_leaves_its_entry_to_the_next_change(chromium, app_url):
    """A long paste's run ended unseen (its state never reached the element): the next paste's run, whose write was
    the only change of the address (the box was out of it), replaced the long paste's entry, so Back to it went one
    further, to an empty box (1 of 14 runs of the two long pastes' test). A key or press of the visitor's is a new
    change: the run's write after it gets an entry of its own."""
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/About")
    wait_ready(page)
    entries = page.evaluate("history.length")
    page.evaluate("""() => history.replaceState({}, "", location.origin + location.pathname + "?x=1")""")
    page.keyboard.press("Control+Enter")  # the next change; then its run writes the address (Streamlit pushes)
    page.evaluate("""() => history.pushState({}, "", location.pathname + "?x=1&y=2")""")
    assert page.evaluate("history.length") == entries + 2
    page.close()


def test_a_projector_shows_both_decodings_side_by_side_with_the_selector_chart(chromium, app_url):
    """At 1024 px with the sidebar open, the two frames stay side by side when one of them holds learned's P(unmask)
    board (from step 1; as a plotly chart, the layout rule that stacks rows of charts below 1,200 px stacked them)."""
    page = chromium.new_page(viewport={"width": 1024, "height": 3000})
    page.goto(f"{app_url}/Decoding?a=mi&b=learned")
    wait_ready(page)
    page.get_by_role("button", name="next").click()
    wait_ready(page)
    page.wait_for_selector(P_BOARD, timeout=30_000)  # the selector's P(unmask) board
    frames = [page.locator(".mi-grid").nth(i).bounding_box() for i in range(2)]
    assert frames[1]["x"] > frames[0]["x"] + frames[0]["width"] - 1, frames  # B right of A, not below it
    assert abs(frames[1]["y"] - frames[0]["y"]) < 100, frames
    page.close()


P_BOARD = '.mi-grid svg[aria-label*="P(unmask)"], [data-testid="stPlotlyChart"]:has(.gtitle)'
# the heights of the P(unmask) board's numbers (.95, 0, 1), as the browser draws them: an SVG's texts or a chart's
P_NUMBERS = """() => [...document.querySelectorAll(
  '.mi-grid svg[aria-label*="P(unmask)"] text, [data-testid="stPlotlyChart"] .textpoint text')]
  .filter(t => /^(\\.\\d\\d|0|1)$/.test(t.textContent)).map(t => t.getBoundingClientRect().height)"""


@pytest.mark.parametrize("device", [{"viewport": {"width": 1024, "height": 768}},
                                    {"viewport": {"width": 683, "height": 512}, "device_scale_factor": 1.5},
                                    {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}])
def test_the_selectors_p_unmask_numbers_are_readable_on_a_projector_and_fit_a_phone(chromium, app_url, device):
    """The numbers of learned's P(unmask) board were 11-px text (7 px tall) in a plotly chart at 1024 px with the
    sidebar open; on a 1024 x 768 projector zoomed to 150% and on a phone they are as large as the digits, and the
    page does not scroll sideways."""
    context = chromium.new_context(**device)
    page = context.new_page()
    page.goto(f"{app_url}/Decoding?a=learned&b=mi&step=1")
    wait_ready(page)
    page.wait_for_selector(P_BOARD, timeout=30_000)
    page.wait_for_timeout(300)
    heights = page.evaluate(P_NUMBERS)
    assert len(heights) > 20 and min(heights) >= 16, heights  # ~14-px type or more
    assert page.evaluate("document.documentElement.scrollWidth") <= device["viewport"]["width"]
    context.close()


def plot_widths(page) -> dict[str, float]:
    """The plot area's width of every drawn plotly chart, by its title."""
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
      .filter(c => c.querySelector('.nsewdrag')).map(c => [(c.querySelector('.gtitle') || {}).textContent || '',
        c.querySelector('.nsewdrag').getBoundingClientRect().width]))""")


def cut_texts(page) -> list[str]:
    """Metric labels and values whose text does not fit (an ellipsis on the screen)."""
    return page.evaluate("""() => [...document.querySelectorAll('[data-testid="stMetricLabel"] p, '
      + '[data-testid="stMetricValue"] div')].filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)""")


@pytest.mark.parametrize("path, heatmaps", [
    ("/MI_maps", ["MI of ", "MI, "]),
    ("/Exact_vs_estimated?exact=true", ["Estimated", "Exact probe", "Estimated − exact", "Asymmetry"]),
    ("/What_if", ["Before", "After ", "Entropy change", "MI before", "MI after", "After − before"]),
])
def test_a_projector_with_the_sidebar_open_gets_charts_of_300_px_and_whole_metrics(chromium, app_url, path, heatmaps):
    page = chromium.new_page(viewport={"width": 1024, "height": 3600})  # tall: charts below the fold draw too
    page.goto(app_url + path)
    wait_ready(page)
    check_page(page, len(heatmaps))
    sidebar = page.locator('[data-testid="stSidebar"]').bounding_box()
    assert sidebar and sidebar["x"] >= 0 and sidebar["width"] > 200, sidebar  # open, as on a teacher's laptop
    widths, deadline = plot_widths(page), time.time() + 30
    while not all(any(t.startswith(p) for t in widths) for p in heatmaps) and time.time() < deadline:
        page.wait_for_timeout(200)  # under load the charts named may draw after others the page has
        widths = plot_widths(page)
    for prefix in heatmaps:
        found = [w for t, w in widths.items() if t.startswith(prefix)]
        assert found and min(found) >= 300, (prefix, widths)
    assert cut_texts(page) == []
    if path == "/What_if":  # every digit of the picker can be clicked
        # the digit pills by their label: the heatmap colour control below them is a button group too
        group = page.locator('[data-testid="stElementContainer"]').filter(
            has=page.locator('[data-testid="stWidgetLabel"]', has_text=re.compile(r"^Digit$"))).locator(
            '[data-testid="stButtonGroup"]')
        assert group.count() == 1, group.count()
        pills = [group.get_by_text(str(d), exact=True).first for d in range(1, 10)]
        assert all(b.count() == 1 for b in pills), [b.count() for b in pills]
        assert all(b.is_visible() and b.bounding_box()["x"] + b.bounding_box()["width"] <= 1024 for b in pills)
    page.close()


def cut_buttons(page) -> list[str]:
    """Buttons whose label does not fit (Streamlit ends it with an ellipsis)."""
    return page.evaluate("""() => [...document.querySelectorAll('button')].filter(b => [...b.querySelectorAll('*')]
      .some(e => getComputedStyle(e).textOverflow === 'ellipsis' && e.scrollWidth > e.clientWidth + 1))
      .map(b => b.textContent)""")


@pytest.mark.parametrize("path", ["/MI_maps", "/Exact_vs_estimated?exact=true", "/Decoding"])
def test_download_buttons_keep_their_whole_label_on_a_zoomed_projector(chromium, app_url, path):
    """A 1280 x 720 projector zoomed to 150% (853 CSS px) with the sidebar open: the download buttons sat in
    columns and Streamlit cut their labels to "Heatmap as ...", "Difference map as H..." and "Animation (HTML pl..."."""
    page = chromium.new_page(viewport={"width": 853, "height": 3600}, device_scale_factor=1.5)
    page.goto(app_url + path)
    wait_ready(page)
    check_page(page, 1)
    buttons = page.locator('[data-testid="stDownloadButton"] button')
    page.wait_for_function("() => document.querySelectorAll('[data-testid=\"stDownloadButton\"] button').length >= 3")
    assert buttons.count() >= 3
    assert cut_buttons(page) == []
    page.close()


def test_hovering_the_estimated_map_shows_the_exact_value_too(chromium, app_url):
    page = chromium.new_page(viewport=VIEW)
    page.goto(f"{app_url}/Exact_vs_estimated?exact=true&preset=hard+%C2%B7+26+clues")
    wait_ready(page)
    check_page(page, 4)
    chart = page.locator('[data-testid="stPlotlyChart"]').filter(
        has=page.locator(".gtitle", has_text=re.compile(r"^Estimated$")))
    box = chart.locator(".nsewdrag").first.bounding_box()
    found = ""  # along the first row of the map: the pairs of its masked cells carry the hover
    for col in range(81):
        page.mouse.move(box["x"] + (col + 0.5) * box["width"] / 81, box["y"] + 0.5 * box["height"] / 81)
        page.wait_for_timeout(120)
        found = " ".join(page.locator(".hoverlayer .hovertext").all_text_contents())
        if "exact" in found:
            break
    assert re.search(r"MI \(nats\) [-\d.e]+.*exact [-\d.e]+", found), found
    page.close()


def test_the_decoding_grids_start_above_a_768_px_fold(chromium, app_url):
    """Outside presentation mode too: the settings fold into an expander that opens on a click."""
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/Decoding")
    wait_ready(page)
    grid = page.locator(".mi-grid").first.bounding_box()
    assert grid["y"] + 200 < 768, grid  # at least half of a 400-px grid shows without scrolling
    assert not page.get_by_role("combobox", name="Strategy A").is_visible()  # folded
    page.get_by_text("Strategies and settings").click()
    page.get_by_role("combobox", name="Strategy A").wait_for(state="visible")  # the box the fold hid
    page.close()


GRID_OVERLAPS = """() => [...document.querySelectorAll('.mi-grid svg')].map(svg => {
  const box = svg.closest('[data-testid="stElementContainer"]'), next = box.nextElementSibling;
  return [svg.getBoundingClientRect().bottom, box.getBoundingClientRect().bottom,
          next ? next.getBoundingClientRect().top : null, next ? next.innerText.slice(0, 40) : ''];
})"""


@pytest.mark.parametrize("present", ["true", "false"])
def test_no_caption_lies_on_the_bottom_of_a_decoding_grid(chromium, app_url, present):
    """Streamlit pulls a markdown element's end up by 1rem (for a paragraph's margin): the grid's SVG has none, so
    its last 16 px ran under the next element. Presenting (gaps of 0.45rem), the selector's caption or "Budget
    spent at this step" lay 9 px over the grid's bottom row."""
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/Decoding?a=learned&b=learned_mi&present={present}")
    wait_ready(page)
    check_page(page, 2)
    grids = page.evaluate(GRID_OVERLAPS)
    assert len(grids) == 2, grids
    for svg_bottom, box_bottom, next_top, text in grids:
        assert box_bottom >= svg_bottom - 0.5, grids  # the grid inside its own element
        assert next_top is not None and next_top >= svg_bottom - 0.5, (text, grids)  # the caption below it
    page.close()


LETTER_ROWS = """(charts) => charts.map(chart => {  // the letters' spacing and size in each chart
  const rows = {};
  for (const t of chart.querySelectorAll(':is(.heatmap-label, .textpoint) text')) {
    if (!/^[A-Z_]$/.test(t.textContent)) continue;
    const b = t.getBoundingClientRect();
    (rows[Math.round(b.top + b.height / 2)] ??= []).push([b.left + b.width / 2, parseFloat(getComputedStyle(t).fontSize)]);
  }
  let pitch = Infinity, size = 0;  // the letters' spacing along a row (plotly rounds each to a whole pixel)
  for (const row of Object.values(rows)) {
    row.sort((a, b) => a[0] - b[0]);
    if (row.length > 1) pitch = Math.min(pitch, (row[row.length - 1][0] - row[0][0]) / (row.length - 1));
    for (const [, px] of row) size = Math.max(size, px);
  }
  return [pitch, size];
})"""


@pytest.mark.parametrize("screen, scale", [((1024, 768), 1.0), ((1024, 768), 1.5), ((1280, 800), 1.5)])
@pytest.mark.parametrize("present", ["true", "false"])
def test_residue_letters_do_not_run_together_on_a_zoomed_projector(chromium, app_url, screen, scale, present):
    """The strip's letters are sized for a window of 60 on a 1024-px screen: on a 1024 x 768 projector zoomed to
    150% (683 CSS px) they were 19 px at 8.6 px apart, letters on letters. Capped to the width the browser gives
    them, neighbours stay :data:`protein_figures.LETTER_WIDTH` ems apart (they do not touch); 1280 x 800 at 150% with
    the sidebar open leaves the strip 375 px: 8-px letters, where a narrower window reads better."""
    from mi_lens_app import protein_figures
    page = chromium.new_page(viewport={"width": round(screen[0] / scale), "height": round(screen[1] / scale)},
                             device_scale_factor=scale)
    page.goto(f"{app_url}/Decoding?domain=protein&step=1&present={present}")
    wait_ready(page)
    check_page(page, 2)
    page.wait_for_function("document.querySelectorAll('.heatmap-label text').length > 100")
    strips = page.locator('[data-testid="stPlotlyChart"]').evaluate_all(LETTER_ROWS)
    assert len(strips) == 2, strips
    for pitch, size in strips:
        assert size * protein_figures.LETTER_WIDTH <= pitch, strips
        assert size >= 7, strips  # not below the strip's own smallest letters
    if present == "false":  # the arc graph's residues too (14 px, 9.3 apart at 1024 px with the sidebar open)
        page.goto(f"{app_url}/MI_maps?domain=protein")
        wait_ready(page)
        arcs = page.locator('[data-testid="stPlotlyChart"]').filter(has=page.locator(".gtitle", has_text="Arc graph"))
        arcs.scroll_into_view_if_needed()
        arcs.locator(".textpoint text").first.wait_for(state="attached")
        pitch, size = arcs.evaluate_all(LETTER_ROWS)[0]
        assert size * protein_figures.LETTER_WIDTH <= pitch and size >= 7, (pitch, size)
    page.close()


@pytest.mark.parametrize("screen, scale", [((1024, 768), 1.0), ((1280, 800), 1.5)])
def test_a_decoding_strip_beside_the_open_sidebar_has_letters_of_12_px(chromium, app_url, screen, scale):
    """With the sidebar open, a 1280 x 800 projector zoomed to 150% left a decode strip 505 px for 58 letters a row:
    7.9-px letters (12 at 1024 x 768). The window wraps into two strips of 29, whose letters are 12 px or more."""
    page = chromium.new_page(viewport={"width": round(screen[0] / scale), "height": round(screen[1] / scale)},
                             device_scale_factor=scale)
    page.goto(f"{app_url}/Decoding?domain=protein&step=1")
    wait_ready(page)
    check_page(page, 2)
    sidebar = page.locator('[data-testid="stSidebar"]').bounding_box()
    assert sidebar and sidebar["x"] >= 0 and sidebar["width"] > 200, sidebar  # open
    page.wait_for_function("document.querySelectorAll('.heatmap-label text').length > 100")
    page.wait_for_timeout(300)  # the container query's size, after the chart's own
    strips = page.locator('[data-testid="stPlotlyChart"]').evaluate_all(LETTER_ROWS)
    assert len(strips) == 2, strips
    for pitch, size in strips:
        assert size >= 12 and size * 0.75 <= pitch, strips
    page.close()


@pytest.mark.parametrize("screen, scale", [((1024, 768), 1.0), ((1280, 800), 1.5)])
def test_the_arc_graph_beside_the_open_sidebar_has_letters_of_12_px_and_all_its_arcs(chromium, app_url, screen, scale):
    """With the sidebar open, a 1280 x 800 projector zoomed to 150% left an antibody's arc graph 505 px for 60
    letters on a line: 7.7-px letters (11.5 at 1024 x 768). They alternate between two lines of 30, 12 px or more,
    apart; the graph keeps its height and draws all 55 arcs."""
    page = chromium.new_page(viewport={"width": round(screen[0] / scale), "height": round(screen[1] / scale)},
                             device_scale_factor=scale)
    page.goto(f"{app_url}/MI_maps?domain=antibody")
    wait_ready(page)
    sidebar = page.locator('[data-testid="stSidebar"]').bounding_box()
    assert sidebar and sidebar["x"] >= 0 and sidebar["width"] > 200, sidebar  # open
    arcs = page.locator('[data-testid="stPlotlyChart"]').filter(has=page.locator(".gtitle", has_text="Arc graph"))
    arcs.scroll_into_view_if_needed()
    arcs.locator(".textpoint text").first.wait_for(state="attached")
    page.wait_for_timeout(300)  # the container query's size, after the chart's own
    pitch, size = arcs.evaluate_all(LETTER_ROWS)[0]
    assert size >= 12 and size * 0.75 <= pitch, (pitch, size)
    lines = arcs.evaluate("c => new Set([...c.querySelectorAll('.textpoint text')].map(t => "
                          "Math.round(t.getBoundingClientRect().top))).size")
    tops = arcs.evaluate("c => c.querySelectorAll('.scatterlayer .points path').length")
    assert lines == 2 and tops == 55 and "all 55 pairs" in arcs.locator(".gtitle").text_content(), (lines, tops)
    assert arcs.bounding_box()["height"] <= 430
    page.close()


TITLES_PAST_THEIR_CHART = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].flatMap(c => {
  const svg = c.querySelector('.main-svg'), title = c.querySelector('.gtitle');
  if (!svg || !title) return [];  // each line of a title (plotly draws a line a tspan) against the chart's SVG
  const box = svg.getBoundingClientRect(), lines = title.querySelectorAll('tspan.line');
  return [...(lines.length ? lines : [title])].map(l => [l.textContent, l.getBoundingClientRect()])
    .filter(([, b]) => b.right > box.right + 0.5 || b.left < box.left - 0.5)
    .map(([text, b]) => [text, Math.round(Math.max(b.right - box.right, box.left - b.left))]);
})"""


@pytest.mark.parametrize("path, charts", [("MI_maps?domain=antibody", 4), ("MI_maps?domain=protein", 4),
                                          ("What_if?domain=antibody", 7), ("What_if?domain=protein", 7)])
def test_no_chart_title_runs_past_its_chart_beside_the_open_sidebar_on_a_zoomed_projector(chromium, app_url, path,
                                                                                         charts):
    """A 1280 x 800 projector zoomed to 150% (853 x 533 CSS px) with the sidebar open leaves a chart 505 px: titles
    wrapped at 60 characters for a 1024-px screen ran past it, "Arc graph: all 55 pairs; residues 61-120 of 120 shown"
    by 2 px, "Per-residue entropy and marginals (residues 61-120 of 120)" by 62 and What-if's "Entropy of every masked
    residue, before and after _100 = G" by 65 (plotly does not wrap a title: the ends were cut)."""
    page = chromium.new_page(viewport={"width": 853, "height": 533}, device_scale_factor=1.5)
    page.goto(f"{app_url}/{path}")
    wait_ready(page)
    sidebar = page.locator('[data-testid="stSidebar"]').bounding_box()
    assert sidebar and sidebar["x"] >= 0 and sidebar["width"] > 200, sidebar  # open
    deadline = time.time() + 60
    while charts_drawn(page) < charts and time.time() < deadline:  # a chart below the fold draws when scrolled to
        for chart in page.locator('[data-testid="stPlotlyChart"]').all():
            chart.scroll_into_view_if_needed()
            page.wait_for_timeout(100)
    assert charts_drawn(page) >= charts, charts_drawn(page)
    page.wait_for_timeout(300)
    assert page.evaluate(TITLES_PAST_THEIR_CHART) == []
    page.close()


SMALLEST_LETTERS = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].map(chart => {
  const rows = {};  // the smallest letter and the letters' closest spacing along a row, of each chart with letters
  for (const t of chart.querySelectorAll(':is(.heatmap-label, .textpoint) text')) {
    if (!/^[A-Z_]$/.test(t.textContent)) continue;
    const b = t.getBoundingClientRect();
    (rows[Math.round(b.top + b.height / 2)] ??= []).push([b.left + b.width / 2, parseFloat(getComputedStyle(t).fontSize)]);
  }
  let pitch = Infinity, size = Infinity;
  for (const row of Object.values(rows)) {
    row.sort((a, b) => a[0] - b[0]);
    if (row.length > 1) pitch = Math.min(pitch, (row[row.length - 1][0] - row[0][0]) / (row.length - 1));
    for (const [, px] of row) size = Math.min(size, px);
  }
  return [pitch, size];
}).filter(([, size]) => size < Infinity)"""


def swipe(page, x: float, y: float, dx: float) -> None:
    """A finger's sideways swipe from ``(x, y)``, ``dx`` px (touch events: a synthesized gesture scrolls nothing in a
    headless Chromium)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    for k in range(1, 11):
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x + dx * k / 10, "y": y}]})
        page.wait_for_timeout(16)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    cdp.detach()


def swiped(page, key: str, scroller) -> float:
    """How far a finger's swipe on chart ``key`` scrolled its container: up to three swipes, as a loaded machine
    may still be drawing the chart (a redraw puts the strip back at 0) when the first lands."""
    for _ in range(3):
        plot = page.locator(f".st-key-{key} .nsewdrag").first.bounding_box()
        swipe(page, 300, plot["y"] + plot["height"] / 2, -150)
        page.wait_for_timeout(300)
        if (left := scroller.evaluate("e => e.scrollLeft")) > 50:
            break
    return left


@pytest.mark.parametrize("agent", [PHONE_AGENT, None])
def test_a_phones_60_residues_are_letters_of_10_px_in_a_strip_that_scrolls_sideways(chromium, app_url, agent):
    """On a 390 x 844 phone a window of 60 residues drew the arc graph's and the decoding strips' letters 4.2 px tall,
    capped to a chart of 342 px. The arc graph (an antibody's 120: 60 letters a line, as its 60 take two lines of 30)
    is now as wide as letters of 10 px need and scrolls sideways in its own container (the page does not), and a finger's swipe on the plot scrolls it (plotly's zoom took the touch); a
    decoding strip wraps the window into two strips of 29 letters, which need little or no scrolling. Also where the
    browser does not say it is a phone (``agent`` None: the server lays the page out for a larger screen)."""
    context = chromium.new_context(**PHONE, **({"user_agent": agent} if agent else {}))
    page = context.new_page()
    for path, key, charts in (("MI_maps?domain=antibody&win_size=120", "arcs_graph", 1),
                              ("Decoding?domain=protein&step=1&win_size=60", "frame_a", 2)):
        page.goto(f"{app_url}/{path}")
        wait_ready(page)
        page.locator(f".st-key-{key}").scroll_into_view_if_needed()
        page.locator(f".st-key-{key} :is(.heatmap-label, .textpoint) text").first.wait_for(state="attached")
        page.wait_for_timeout(300)  # the container query's size, after the chart's own
        found = page.evaluate(SMALLEST_LETTERS)
        assert len(found) == charts, (path, found)
        for pitch, size in found:
            assert size >= 10 and pitch >= size * 0.75, (path, found)  # readable, and apart
        assert page.evaluate("document.documentElement.scrollWidth") <= 390  # the strip scrolls, not the page
        if key == "frame_a":  # wrapped: 29 letters of 10 px a row and the step axis are about the phone's width
            assert page.locator(".st-key-frame_a g.subplot.x2y2").count() == 1
            continue
        scroller = page.locator(f".st-key-{key}_scroll")
        assert scroller.evaluate("e => e.scrollWidth > e.clientWidth + 50"), path
        assert page.locator(f".mi-swipe-{key}").is_visible(), path  # a line says the chart scrolls
        if agent:  # a phone's charts take no drag: the swipe scrolls
            assert swiped(page, key, scroller) > 50, path
    context.close()
    context = chromium.new_context(viewport={"width": 1280, "height": 800})  # a screen whose chart does not scroll
    page = context.new_page()
    page.goto(f"{app_url}/MI_maps?domain=protein&win_size=60")
    wait_ready(page)
    page.locator(".st-key-arcs_graph").scroll_into_view_if_needed()
    page.locator(".mi-swipe-arcs_graph").wait_for(state="attached")  # under load it came a moment after the run ended
    assert page.locator(".mi-swipe-arcs_graph").count() == 1 and not page.locator(".mi-swipe-arcs_graph").is_visible()
    context.close()


def test_a_phone_gets_the_step_buttons_in_one_row(chromium, app_url):
    """As four columns, the buttons stacked into four rows below 640 px (a phone, a laptop at 200% zoom)."""
    for device in (PHONE, {"viewport": {"width": 640, "height": 400}, "device_scale_factor": 2}):
        context = chromium.new_context(**device)
        page = context.new_page()
        page.goto(f"{app_url}/Decoding")
        wait_ready(page)
        check_page(page, 2)
        boxes = [page.get_by_role("button", name=name).bounding_box() for name in ("start", "prev", "next", "end")]
        assert max(b["y"] for b in boxes) - min(b["y"] for b in boxes) < 2, boxes
        assert max(b["x"] + b["width"] for b in boxes) <= device["viewport"]["width"], boxes
        context.close()


def titles_under_the_tool_bar(page) -> list[str]:
    """Titles of the drawn plotly charts whose box meets their tool bar's."""
    return page.evaluate("""() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].filter(c => {
      const t = c.querySelector('.gtitle'), m = c.querySelector('.modebar');
      if (!t || !m) return false;
      const a = t.getBoundingClientRect(), b = m.getBoundingClientRect();
      return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom; })
      .map(c => c.querySelector('.gtitle').textContent)""")


def test_on_a_phone_no_chart_title_lies_under_the_tool_bar(chromium, app_url):
    """A touch screen shows plotly's tool bar at all times: it covered 5 of the What-if page's 8 titles."""
    context = chromium.new_context(**dict(PHONE, viewport={"width": 390, "height": 6000}))  # tall: all charts draw
    page = context.new_page()
    page.goto(f"{app_url}/What_if")
    wait_ready(page)
    check_page(page, 8)
    assert page.evaluate("matchMedia('(hover: none)').matches")
    assert titles_under_the_tool_bar(page) == []
    context.close()


def test_code_in_a_caption_is_at_least_11_px(chromium, app_url):
    """The Benchmarks page's set id and the sidebar's model files are code in a caption: they were 10.5 px."""
    page = chromium.new_page(viewport=VIEW)
    page.goto(f"{app_url}/Benchmarks")
    wait_ready(page)
    sizes = page.evaluate("""() => [...document.querySelectorAll('[data-testid="stCaptionContainer"] code')]
      .map(c => parseFloat(getComputedStyle(c).fontSize))""")
    assert sizes and min(sizes) >= 11, sizes
    page.close()


def paste(page, text: str, shows: str | None = None) -> None:
    """Type ``text`` into the page's text box and run it (Ctrl+Enter); ``shows``: wait for the address to hold it."""
    box = page.locator('[data-testid="stTextArea"] textarea')
    before = page.evaluate("location.search")
    box.fill(text)
    box.press("Control+Enter")
    if shows:  # a new address (an earlier paste's cut=... may still be there): this paste's run has written it
        page.wait_for_function("([was, shows]) => location.search !== was && location.search.includes(shows)",
                               arg=[before, shows], polling=250, timeout=30_000)
    wait_ready(page)


def history_step(page, go) -> None:
    go()
    wait_ready(page)


def box_holds(page, text: str) -> str:
    """The text box's value once it holds ``text``, or after 30 s whatever it holds (on a loaded machine the run
    that restores an entry's text can start after the page first looks settled)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_function("(n) => { const b = document.querySelector('[data-testid=\"stTextArea\"] textarea');"
                               " return b !== null && b.value.length === n; }", arg=len(text), polling=250,
                               timeout=30_000)
    return page.locator('[data-testid="stTextArea"] textarea').input_value()


def test_back_across_a_paste_too_long_for_the_link_shows_each_entrys_text(chromium, app_url):
    """A paste over 20,000 characters stays out of the address. Back from it showed the earlier entry's address with
    the long text still in the box; and Back to it (after a short paste) emptied the box, the long text lost."""
    page = chromium.new_page(viewport=VIEW)
    page.goto(f"{app_url}/MI_maps?src=paste")
    wait_ready(page)
    long = "2" * 25_000
    paste(page, long, "cut=puzzle")
    assert "puzzle=" not in page.url
    history_step(page, page.go_back)
    assert "cut=" not in page.url and box_holds(page, "") == ""  # the empty box it opened on
    history_step(page, page.go_forward)
    assert "cut=puzzle" in page.url and box_holds(page, long) == long  # the long text is back
    paste(page, EASY, "puzzle=")
    history_step(page, page.go_back)
    assert "puzzle=" not in page.url and box_holds(page, long) == long
    history_step(page, page.go_forward)
    assert f"puzzle={EASY}" in page.url and box_holds(page, EASY) == EASY  # the entry's own text, not the long one
    page.close()


def test_back_from_another_page_to_a_paste_too_long_for_the_link_shows_its_text(chromium, app_url):
    """Back from another view to the entry of a paste left out of the address showed an empty box."""
    page = chromium.new_page(viewport=VIEW)
    page.goto(f"{app_url}/MI_maps?src=paste")
    wait_ready(page)
    long = "2" * 25_000
    paste(page, long, "cut=puzzle")
    navigate(page, "About")
    page.wait_for_url("**/About?*")
    wait_ready(page)
    history_step(page, page.go_back)
    assert "/MI_maps" in page.url and "cut=puzzle" in page.url and box_holds(page, long) == long, page.url
    page.close()


def test_back_to_the_first_of_two_long_pastes_shows_its_own_text(chromium, app_url):
    """Each long paste is its own entry: Back to the first of two (a short paste between them) showed the second.
    Two tries on fresh pages: on 2026-12-06 the box came back empty after the second Back in 1 of 5 full CI runs
    and in 1 of 14 runs of this test alone (a race among the runs a Back starts; that day's closing note names it)."""

    def walk() -> None:
        page = chromium.new_page(viewport=VIEW)
        try:
            page.goto(f"{app_url}/MI_maps?src=paste")
            wait_ready(page)
            first, second = "2" * 25_000, "3" * 26_000
            paste(page, first, "cut=puzzle")
            paste(page, EASY, "puzzle=")
            paste(page, second, "cut=puzzle")
            assert "puzzle=" not in page.url.replace("cut=puzzle", "")
            history_step(page, page.go_back)
            assert box_holds(page, EASY) == EASY
            history_step(page, page.go_back)
            assert box_holds(page, first) == first  # not the second, the latest left out
            history_step(page, page.go_forward)
            history_step(page, page.go_forward)
            assert box_holds(page, second) == second
        finally:
            page.close()

    try:
        walk()
    except AssertionError:
        walk()


def test_a_paste_too_long_for_the_link_follows_the_visitor_to_other_views(chromium, app_url):
    """Going on from a paste over 20,000 characters to another view showed an empty box there: the text went along
    in the address only. It follows within the session, through a view without the box (About), and Back and
    Forward still bring each entry's own text."""
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/MI_maps?src=paste")
    wait_ready(page)
    long = "2" * 25_000
    paste(page, long, "cut=puzzle")

    def go_on(title: str, path: str) -> None:
        navigate(page, title)
        page.wait_for_url(f"**/{path}?*")
        wait_ready(page)

    go_on("Decoding", "Decoding")
    assert "cut=puzzle" in page.url and "src=paste" in page.url and box_holds(page, long) == long, page.url
    go_on("About", "About")
    go_on("What-if", "What_if")
    assert box_holds(page, long) == long, page.url
    paste(page, EASY, "puzzle=")  # a short one goes by the address again
    go_on("MI maps", "MI_maps")
    assert f"puzzle={EASY}" in page.url and box_holds(page, EASY) == EASY, page.url
    history_step(page, page.go_back)  # What-if, the short paste
    assert box_holds(page, EASY) == EASY, page.url
    history_step(page, page.go_back)  # What-if, as it opened with the long one
    assert "/What_if" in page.url and box_holds(page, long) == long, page.url
    page.close()


def test_a_paste_longer_than_the_carried_limit_but_in_the_link_follows_too(chromium, app_url):
    """A paste of 4,000-20,000 characters stays in the address but is longer than what links to other views carry
    (4,000): the next view's box still holds it (a guard: a review feared it came empty; it did not)."""
    page = chromium.new_page(viewport={"width": 1024, "height": 768})
    page.goto(f"{app_url}/MI_maps?src=paste")
    wait_ready(page)
    medium = "3" * 6_000
    paste(page, medium, "puzzle=333")
    navigate(page, "Decoding")
    page.wait_for_url("**/Decoding?*")
    wait_ready(page)
    assert box_holds(page, medium) == medium, page.url
    page.close()


def test_a_proteins_json_downloads_name_the_native_residues_the_values_and_the_units(chromium, app_url, tmp_path):
    """A scientist's JSON of a protein's MI map held only the masked state ('___'), the marginals' 20 columns with
    no amino acid named, and no unit: the residues that were masked, what each column is and what the numbers
    measure were lost. Each JSON now carries ``native``, ``values`` and ``units``; the trace, the native sequence
    its ``errors`` are counted against."""
    page = chromium.new_page(viewport={"width": 1440, "height": 900})
    try:
        found = {}
        for path, label in (("MI_maps?domain=protein", "MI as JSON"),
                            ("Decoding?domain=protein", "Trace A (mi) as JSON")):
            page.goto(f"{app_url}/{path}")
            wait_ready(page)
            with page.expect_download() as download:
                page.get_by_role("button", name=label).first.click()
            target = tmp_path / f"{len(found)}.json"
            download.value.save_as(target)
            found[label] = json.loads(target.read_text())
    finally:
        page.close()
    data = found["MI as JSON"]
    state, native = data["puzzle"], data["native"]
    masked = [i for i, hidden in enumerate(data["masked"]) if hidden]
    assert len(native) == len(state) and masked and all(state[i] == "_" and native[i].isalpha() for i in masked)
    assert all(native[i] == state[i] for i in range(len(state)) if i not in masked)
    assert data["values"] == list("ACDEFGHIKLMNPQRSTVWY") and len(data["marginals"][0]) == 20
    assert data["units"]["mi"] == "nats" and data["units"]["entropy"] == "nats"
    assert found["Trace A (mi) as JSON"]["native"] == native


def test_the_frontiers_axis_title_stays_clear_of_its_set_name_at_1024_px(chromium, tmp_path):
    """Benchmarks on a 1024-px screen (a chart ~680 px wide): the protein set's title took three lines, the plot lost
    that height, and the vertical "dipeptide JSD to the reference (lower is better)" ran up over the set's name
    ("orders: protein CATH" read "rders: protein CATH"). A long axis title is now on two lines."""
    from mi_lens_app import benchmarks, charts, exports, screen

    metric = benchmarks.METRICS[1]
    rows = [{"sampler": s, "label": f"{s} (steps={k})", "mean_passes": float(k), metric.key: 0.006 + 0.0001 * k + i * 1e-4}
            for i, s in enumerate(["random", "top_prob", "mi", "eb", "learned"]) for k in (1, 2, 5, 10, 20)]
    title = f"{metric.name} vs passes (n=300 per seed, 3 seeds)<br><sup>orders: protein CATH</sup>"
    fig = charts.frontier_figure(rows, screen.wrap_title(title, 42), metric)  # 42: the app's at 1024 px
    path = tmp_path / "frontier.html"
    path.write_text(exports.figure_html(fig))
    page = chromium.new_page(viewport={"width": 680, "height": 700})
    try:
        page.goto(path.as_uri())
        page.wait_for_selector(".g-ytitle text")
        titles = [page.locator(".g-gtitle text").nth(i).bounding_box() for i in range(page.locator(".g-gtitle text").count())]
        axis = page.locator(".g-ytitle").bounding_box()
    finally:
        page.close()
    lowest = max(t["y"] + t["height"] for t in titles)
    assert axis["y"] >= lowest, (axis, titles)


@pytest.mark.parametrize("screen, pair", [((1024, 768), "a=learned&b=mask_predict"), ((390, 844), "a=learned&b=mi"),
                                          ((390, 844), "domain=protein&a=learned&b=mi")])
def test_a_grids_step_table_shows_every_column_without_a_sideways_scroll(chromium, app_url, screen, pair):
    """learned's table (cell, digit, entropy, p(digit), P(unmask), wrong) took 355 px of the 328 in half a 1024-px page
    with the sidebar open, and mask_predict's (masked again) 372: the last column was a sideways scroll away. On a
    390-px phone a protein's (residue, entropy, p, P(unmask), native, matches native) took 495 of 340."""
    page = chromium.new_page(viewport={"width": screen[0], "height": screen[1]})
    page.goto(f"{app_url}/Decoding?{pair}&step=1")
    wait_ready(page)
    tables = page.locator('[data-testid="stDataFrame"]')
    tables.first.wait_for(timeout=30_000)
    page.wait_for_timeout(500)
    sizes = page.evaluate("""() => [...document.querySelectorAll('[data-testid="stDataFrame"] .dvn-scroller')]
        .map(s => [s.scrollWidth, s.clientWidth])""")
    assert len(sizes) == 2 and all(scroll <= client for scroll, client in sizes), sizes
    page.close()
