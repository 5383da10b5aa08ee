"""The frame every page sits in: its config and title, the links to the other views (they carry the state the pages
share), the note on what of a link was not understood, the layout's CSS, and the page a link named that the app does
not have. A page calls :func:`page` first and :func:`link_note` last.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from mi_core.domain import PLUGIN_PROBLEMS, load_builtin
from mi_lens_app import links, warm


@dataclass(frozen=True)
class View:
    path: str
    title: str
    icon: str
    blurb: str


VIEWS = [
    View("app.py", "Home", ":material/home:", "What MI Lens is."),
    View("pages/1_MI_maps.py", "MI maps", ":material/grid_on:",
         "The MI of every pair of positions (Sudoku cells, residues) as a heatmap, on the grid or sequence and as a "
         "dependency graph."),
    View("pages/2_Exact_vs_estimated.py", "Exact vs estimated", ":material/compare:",
         "The estimator against the exact probe: agreement, asymmetry and what pruning saves."),
    View("pages/3_Decoding.py", "Decoding", ":material/play_circle:",
         "Two decoding strategies side by side, frame by frame: what each unmasks together."),
    View("pages/4_What_if.py", "What-if", ":material/science:",
         "Clamp a position to a token (a cell to a digit, a residue to an amino acid) and watch marginals, entropies "
         "and MI change."),
    View("pages/5_Benchmarks.py", "Benchmarks", ":material/monitoring:",
         "Quality against forward passes for every sampler on the shipped sets (Sudoku accuracy, distance from real "
         "proteins)."),
    View("pages/6_About.py", "About", ":material/school:",
         "What MI, MDMs and parallel decoding are, with the formulas."),
]


# the browser's own address is the link: it holds every widget bound to the URL as it is now. The clipboard API
# needs a secure context (https or localhost); elsewhere a hidden text area and execCommand copy it.
# in the theme's colours: a white button took the dark theme's white text (1:1, a blank button)
COPY_LINK = """<button class="mi-copy-link" title="Copy the address of this view, with its settings"
style="width:100%;padding:0.4rem;border:1px solid color-mix(in srgb,currentColor 30%,transparent);border-radius:0.5rem;
background:transparent;color:inherit;cursor:pointer;font-size:0.95rem">Copy link to this view</button>
<script>
document.querySelectorAll("button.mi-copy-link:not([data-ready])").forEach((b) => {
  b.dataset.ready = "1";
  b.addEventListener("click", () => {
    const u = window.location.href;
    const done = () => { b.dataset.copied = u; b.textContent = "Link copied";
                         setTimeout(() => { b.textContent = "Copy link to this view"; }, 1500); };
    const fallback = () => { const t = document.createElement("textarea"); t.value = u; document.body.appendChild(t);
                             t.select(); document.execCommand("copy"); t.remove(); done(); };
    if (navigator.clipboard && window.isSecureContext) { navigator.clipboard.writeText(u).then(done, fallback); }
    else { fallback(); }
  });
});
</script>"""


# One entry in the browser's history per change a visitor makes: a page change, or a widget bound to the URL set
# anew. Streamlit pushes several entries as a view opens from a link (the parameters it drops from the page left,
# its corrections, this app's restoring them, the new page's path), and writes a widget's change over the entry of
# the view before it, its run's corrections then pushing one. From a click on a link to another view, or a widget's
# change, until the first run after it ends, the change has one entry of its own and every further push replaces
# it, however slow the server (a busy classroom server answers a page change seconds late). Streamlit replaces the
# entry for a widget's change with a whole URL and for its own corrections on Back or Forward with a path: only the
# first is a visitor's change.
ONE_HISTORY_ENTRY = """<script>
if (!window.miLensOneHistoryEntry) {
  window.miLensOneHistoryEntry = true;
  const push = history.pushState.bind(history), replace = history.replaceState.bind(history);
  // a change under way: when it began, whether it has its entry yet, and whether its run has begun (Streamlit
  // handles every click on a page link in this tab, modifier keys or not; a link to the page shown changes no
  // page and is left alone)
  let began = 0, pushed = false, ran = false;
  const reset = () => { began = 0; pushed = false; ran = false; };
  document.addEventListener("click", (e) => {
    const link = e.target.closest('[data-testid="stPageLink"] a');
    if (link && new URL(link.href, location.href).pathname !== location.pathname) { reset(); began = Date.now(); }
  }, true);
  window.addEventListener("popstate", reset);  // Back or Forward: the entries are the browser's again
  // the visitor's next key or press begins another change: the last one's run may have ended unseen (its state never
  // reached the element), and the next run's own write (a short paste after a long one, which the address left
  // out) then replaced the last change's entry, so Back skipped it
  for (const type of ["keydown", "pointerdown"]) { document.addEventListener(type, reset, true); }
  // a record's state before the change is its old value: a run that begins and ends before the records are read
  // shows as running only there
  const isRun = (state) => state === "running" || state === "rerunRequested";
  new MutationObserver((changes) => changes.forEach((c) => {  // the app's element may be drawn anew: watch them all
    if (!began) { return; }
    const now = isRun(c.target.getAttribute("data-test-script-state"));
    if (now || isRun(c.oldValue)) { ran = true; }
    if (!now && ran) { reset(); }  // the first run ended (or failed)
  })).observe(document.body, {attributes: true, attributeOldValue: true, subtree: true,
                              attributeFilter: ["data-test-script-state"]});
  const over = () => {  // a run not begun in 60 s, or a change not seen to end in 300
    const age = Date.now() - began;
    return (!ran && age > 60000) || age > 300000;
  };
  history.pushState = (state, title, url) => {
    if (began && over()) { reset(); }
    if (began) {
      if (pushed) { return replace(state, title, url); }
      pushed = true;
    }
    return push(state, title, url);
  };
  history.replaceState = (state, title, url) => {
    // a widget the visitor set (a whole URL, another query): the view before it keeps its entry
    if (typeof url === "string" && /^[a-z][a-z0-9+.-]*:/i.test(url)
        && new URL(url).search !== location.search) {
      reset(); began = Date.now(); pushed = true;
      return push(state, title, url);
    }
    return replace(state, title, url);
  };
}
</script>"""

# Space on a focused button, link, switch or radio does what the keyboard says, that element's action only: the
# decoding page's Space shortcut (Play) fired too, so stepping with Tab and Space on "next" also started playback.
# The keydown is stopped at <body>, after the page's own handlers and before Streamlit's shortcuts on the
# document; with the focus on the page itself, Space still plays.
# A control clicked with the mouse (or a finger) gives the focus back to the page: a teacher clicked "Presentation
# mode" or a speed and then pressed the keys the page names, and the arrows moved the focus along the speeds (or did
# nothing) while Space switched presentation mode off again or picked another speed. A click from the keyboard
# (Space, Enter: detail 0) keeps the focus where the keyboard user put it; a pop-up's or fold's trigger keeps it too.
SPACE_ON_A_CONTROL = """<script>
if (!window.miLensSpaceOnAControl) {
  window.miLensSpaceOnAControl = true;
  document.body.addEventListener("keydown", (e) => {
    if (e.key === " " && e.target.closest &&
        e.target.closest('button, summary, a, [role="switch"], [role="radio"], [role="checkbox"]')) {
      e.stopPropagation();
    }
  });
  document.addEventListener("click", (e) => {
    const control = e.detail > 0 && e.target.closest && e.target.closest(
      'button, label:has(input[type="checkbox"], input[type="radio"]), [role="switch"], [role="radio"]');
    if (!control || control.matches('[aria-haspopup], [aria-expanded]')) return;
    setTimeout(() => {
      const focused = document.activeElement;
      if (focused && focused !== document.body && (control === focused || control.contains(focused))) focused.blur();
    }, 0);
  }, true);
}
</script>"""


# one chart a row below 1,200 px (a projector's 1024 px with the sidebar open leaves ~700 px for the page: three
# heatmaps a row were 60 px each), less padding there, and rows of metrics that wrap instead of cutting labels.
# The Decoding page's two frames (a container keyed SIDE_BY_SIDE) stay side by side: comparing them is the page
SIDE_BY_SIDE = "side_by_side"
LAYOUT_CSS = """<style>
@media (max-width: 1200px) {
  [data-testid="stMainBlockContainer"] { padding-left: 1.5rem; padding-right: 1.5rem; }
  [data-testid="stHorizontalBlock"]:has([data-testid="stPlotlyChart"]):not(.st-key-side_by_side *) {
    flex-direction: column; }
  [data-testid="stHorizontalBlock"]:has([data-testid="stPlotlyChart"]):not(.st-key-side_by_side *)
    > [data-testid="stColumn"] { width: 100% !important; flex: 1 1 auto !important; min-width: 100%; }
}
[data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] [data-testid="stMetric"]) { flex-wrap: wrap; }
[data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] [data-testid="stMetric"]) > [data-testid="stColumn"] {
  min-width: 10rem; }
[data-testid="stMetricLabel"] p { white-space: normal; }
/* code in a caption (a set id, a model's file) was 10.5 px, 0.75 of the caption's 14 px: 0.85 makes it 11.9 */
[data-testid="stCaptionContainer"] code { font-size: 0.85em; }
/* a touch screen has no keys to press: without the buttons' key hints (Space, arrows) the four step buttons fit
   one row of a 390-px phone */
@media (hover: none) { [data-testid^="stBaseButton"] kbd { display: none; } }
/* a touch screen shows plotly's tool bar at all times (a mouse, only on hover): over a chart's title it hid the
   title's words on a phone; there the bar sits in a strip above the chart */
@media (hover: none) {
  [data-testid="stElementContainer"]:has([data-testid="stPlotlyChart"]) { overflow: visible; margin-top: 1.75rem; }
  [data-testid="stPlotlyChart"] .js-plotly-plot { overflow: visible !important; }
  [data-testid="stPlotlyChart"] .modebar-container { top: -1.75rem !important; }
}
""" + """/* keyboard focus in the text's own colour: Streamlit's ring was 2.2:1 on white, and a focused link, radio or
   switch only turned its background grey (1.1:1), as the current page's link is */
:is(a, button, summary):focus-visible, label:has(input:focus-visible),
[data-testid="stSlider"] div:has(> div > input:focus-visible) {
  outline: 2px solid currentColor !important; outline-offset: 2px; }
/* captions, a button's keyboard shortcut (Space, arrows) and the menu's "Made with Streamlit" at 0.6 opacity were
   3.9:1 on the light theme's white (#828180); at 0.72 they are 5.6:1 (5.3 on a hovered button) */
[data-testid="stCaptionContainer"], [data-testid^="stBaseButton"] kbd,
[data-testid="stMainMenuPopover"] span:has(+ .stMenuVersionCopyButton) { opacity: 0.72; }
/* a selected segment's or pill's label and a slider's value are in the theme's primary: 4.5:1 (4.48) on the
   selected segment's tint on the light theme, 3.6:1 on the dark theme's (3.9 on its page, 3.5 in its sidebar). Here
   they take a tenth of black (light) or a quarter of white (dark): 5.3 and 5.3:1, >= 5.2 on any page. The theme
   config cannot do it: a lighter dark primary puts a multiselect's white tags under 4.5:1 (4.6 now), and a
   [theme.light] or [theme.dark] section makes Streamlit ignore theme.base (a --theme.base dark server opened light) */
:is([data-testid="stButtonGroup"] button:is([aria-checked="true"], [aria-pressed="true"]),
    [data-testid="stSliderThumbValue"]) > div {
  color: light-dark(color-mix(in srgb, currentColor 90%, black), color-mix(in srgb, currentColor 75%, white)); }
</style>"""


def navigation() -> None:
    """The links to every view at the top of the sidebar (Streamlit's own list is off in .streamlit/config.toml;
    :func:`link_note` draws them again once the page's widgets have run, so they carry the puzzle the page shows),
    and a button that copies the link to the view as it is now."""
    slot = st.session_state["_nav_slot"] = st.sidebar.empty()
    with slot.container():  # for now, so a long decode or probe keeps them; :func:`draw_navigation` replaces them
        for view in VIEWS:
            view_link(view.path, view.title, view.icon)
    with st.sidebar:
        st.html(COPY_LINK + ONE_HISTORY_ENTRY + SPACE_ON_A_CONTROL, unsafe_allow_javascript=True)
    st.sidebar.divider()


def view_params(path: str) -> dict[str, str]:
    """The query parameters a link to the view at ``path`` carries: the state shared by every page (domain,
    puzzle, sequence and mask, colour scale) as the last page left it, and the selected cell where the view
    has one and the model where the view picks one (``links.carried``)."""
    return links.carried({key for key, views in (("cell", CELL_VIEWS), ("model", MODEL_VIEWS)) if path not in views})


CELL_VIEWS = frozenset({"pages/1_MI_maps.py", "pages/2_Exact_vs_estimated.py", "pages/4_What_if.py"})
CELL_TITLES = frozenset({"MI maps", "Exact versus estimated", "What-if"})  # the titles of CELL_VIEWS
MODEL_VIEWS = frozenset({"pages/1_MI_maps.py", "pages/3_Decoding.py"})  # the views with the model picker
MODEL_TITLES = frozenset({"MI maps", "Decoding, step by step"})


def view_link(path: str, label: str, icon: str, where=None) -> None:
    """``st.page_link`` to another view that keeps the shared state (a teacher's link survives a page change)."""
    (where or st).page_link(path, label=label, icon=icon, query_params=view_params(path))


def draw_navigation() -> None:
    slot = st.session_state.get("_nav_slot")
    if slot is None:
        return
    links.remember(bool(st.session_state.pop("_pickers_drawn", False)))
    with slot.container():
        for view in VIEWS:
            view_link(view.path, view.title, view.icon)


HOME_TITLE = "MI Lens"  # app.py's title; Streamlit runs app.py for a page it does not have


def page_addresses() -> dict[str, str]:
    """``{title: address}`` of the views but the home page: the path Streamlit serves each at (``/MI_maps``, the
    file's name without its number)."""
    return {view.title: "/" + Path(view.path).stem.split("_", 1)[1] for view in VIEWS[1:]}


def browser_url() -> str | None:
    """The address the browser asked for, without its query (None outside a browser)."""
    return st.context.url


_MISSING = "_missing_page"  # (the page a link named that the app does not have, whether its note still shows)


def missing_page() -> None:
    """On the home page: a link to a page the app does not have (``/nosuch``, ``/mi_maps``) says so in the link's
    note, with the pages there are, and Streamlit's own pop-up ("Page not found", which named neither) closes.
    Streamlit then writes the home page's address, so the run after any click found no page named and the note
    went while the visitor read it: the session keeps it until the visitor dismisses it (:func:`link_note`) or
    opens another page."""
    name = links.page_name(browser_url(), st.get_option("server.baseUrlPath") or "")
    if name and st.session_state.get(_MISSING, ("",))[0] != name:
        st.session_state[_MISSING] = (name, True)
        st.sidebar.html(CLOSE_PAGE_NOT_FOUND, unsafe_allow_javascript=True)
    name, shown = st.session_state.get(_MISSING, ("", False))
    if shown:
        links.missing_page(name, page_addresses())


def dismiss_missing_page() -> None:
    """The visitor closed the note of a link to a page the app does not have: it stays closed."""
    st.session_state[_MISSING] = (st.session_state.get(_MISSING, ("",))[0], False)


# Streamlit's pop-up for a page it does not have: closed (with its own button) once the note says more
CLOSE_PAGE_NOT_FOUND = """<script>
(() => {
  let tries = 0;
  const close = () => {
    for (const box of document.querySelectorAll('[role="dialog"]')) {
      const title = box.querySelector("h2");
      if (title && title.textContent.trim() === "Page not found") {
        box.querySelector('button[aria-label="Close"]')?.click();
        return;
      }
    }
    if (++tries < 50) { setTimeout(close, 100); }
  };
  close();
})();
</script>"""


FAVICON = Path(__file__).with_name("favicon.png")  # served by the app itself: a Material icon is fetched from Google


def page(title: str, sidebar: str = "auto") -> None:
    """Page config, the navigation and the title; every page calls this first (and :func:`link_note` last)."""
    st.set_page_config(page_title=f"{title} · MI Lens", page_icon=str(FAVICON), layout="wide",
                       initial_sidebar_state=sidebar)
    links.start(title, selects_cell=title in CELL_TITLES, picks_model=title in MODEL_TITLES)
    links.explain("page", lambda raw: "a page is named by the address's path: " + ", ".join(page_addresses().values()))
    if title == HOME_TITLE:
        missing_page()
    else:  # another page opened: a link's unknown page is no longer why this one shows
        st.session_state.pop(_MISSING, None)
    warm.warm_up()
    st.html(LAYOUT_CSS)
    navigation()
    st.title(title)
    load_builtin()  # the plugin lists fill as the registry loads, on its first lookup: maybe not yet on a fresh server
    for problem in PLUGIN_PROBLEMS:  # a domain module named by the environment that failed: its domain is absent
        st.warning(problem[0].upper() + problem[1:], icon=":material/extension_off:")
    st.session_state["_link_slot"] = st.empty()


def link_note() -> None:
    """One line at the top of the page saying what of the link was not understood or was clamped, and the
    navigation links (drawn last: they carry what the page's widgets hold now)."""
    draw_navigation()
    text = links.note()
    slot = st.session_state.get("_link_slot")
    if text and slot is not None:
        with slot.container():
            st.warning(text[0].upper() + text[1:], icon=":material/link_off:")
            if st.session_state.get(_MISSING, ("", False))[1]:
                st.button("Dismiss this note", key="dismiss_missing_page", type="tertiary",
                          icon=":material/close:", on_click=dismiss_missing_page)
