"""Decoding, step by step: two strategies from the registry on the same puzzle, side by side, frame by frame."""

import streamlit as st

from mi_lens_app import (
    decode_views,
    exports,
    frame,
    links,
    support,
    texts,
    widgets,
)
from mi_lens_app.domains import bench_domain_options, named

SPEEDS = {"slow": 1.5, "normal": 0.8, "fast": 0.35}
# the setting BENCHMARKS.md scores: MI-guided decoding solved 99.0% of 500 Kaggle puzzles and 90.2% of 500 top1465
# ones with 32 decodes at most (85.6% and 49.6% with 1); a top1465 puzzle that never passes takes 32 decodes, about
# 16 CPU-seconds a strategy in the app (one thread; the page decodes two), once per link: the trace is cached
MAX_DECODES = 32
# presentation mode on a 1024 x 768 projector: the heading below Streamlit's header bar (3.75rem), one row of
# toggles, settings and Play, one row of step buttons and slider, then both grids, sized to what is left of
# the screen's height (they were 520 px and started at y = 644). The grids' top is measured in the browser
# (PRESENT_FIT): a strategy heading or a line of numbers that wraps once more moves the grids down, and a height
# of the screen's less a fixed 322 px put their bottom row below the screen's edge (2 px at 1024 x 768 zoomed to
# 150%). 38 px stay below them at 100%: the legend's first line
PRESENT_CSS = """<style>
[data-testid="stMainBlockContainer"] { padding: 4rem 1rem 1rem; max-width: 100%; }
[data-testid="stMainBlockContainer"] h1 { font-size: 1.6rem; padding: 0 0 0.6rem; line-height: 1.25; }
[data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"] p { font-size: 1.15rem; line-height: 1.4; }
[data-testid="stMainBlockContainer"] [data-testid="stVerticalBlock"] { gap: 0.45rem; }
[class*="st-key-frame_nums"] { min-height: 3.3rem; }  /* two lines kept: the grids below do not jump */
[class*="st-key-budget"] [data-testid="stCaptionContainer"] { font-size: 1rem; }
.mi-grid svg { height: min(calc(100vh - var(--mi-grid-top, 284px) - 38px), 540px) !important; width: auto !important;
               max-width: 100%; }
@media (max-height: 640px) {  /* a zoomed projector: 150% of 1024 x 768 is 683 x 512, of 1280 x 800 853 x 533 */
  [data-testid="stMainBlockContainer"] { padding-top: 3rem; }
  [data-testid="stMainBlockContainer"] h1 { display: none; }  /* the heading goes */
  /* text at 1rem (24 px on the screen at 150%, more than 1.15rem at 100%), so Play and the speed share the
     first row with the mode and the settings (they took three rows) and the grids get the height */
  [data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"] p { font-size: 1rem; line-height: 1.35; }
  [class*="st-key-frame_nums"] { min-height: 2.75rem; }
  .st-key-present_bar { gap: 0.75rem; }
  .st-key-present_bar kbd { display: none; }  /* "Space": Play's tooltip and the page's caption say it */
  /* the grids' bottom row on the screen's edge, the legend below it: 6 px of the screen stay below them */
  .mi-grid svg { height: max(calc(100vh - var(--mi-grid-top, 330px) - 6px), 160px) !important; }
}
@media (max-height: 640px) and (max-width: 760px) {  /* 683 px wide: the settings by their icon (and name, to a
  screen reader and in the pop-up's title) */
  .st-key-present_bar [data-testid="stPopoverButton"] [data-testid="stMarkdownContainer"] {
    position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
}
</style>"""
# where the grids start, in the page (px from the top of its content), as a CSS variable for PRESENT_CSS: measured
# again whenever the page changes (a step redraws the headers above the grids) or the window is resized
PRESENT_FIT = """<script>
if (!window.miLensGridFit) {
  window.miLensGridFit = true;
  let queued = false;
  const fit = () => {
    queued = false;
    const grid = document.querySelector(".mi-grid svg");
    const page = document.querySelector('[data-testid="stMainBlockContainer"]');
    if (!grid || !page) return;
    const top = `${Math.round(grid.getBoundingClientRect().top - page.getBoundingClientRect().top)}px`;
    const root = document.documentElement;
    if (root.style.getPropertyValue("--mi-grid-top") !== top) root.style.setProperty("--mi-grid-top", top);
  };
  const queue = () => { if (!queued) { queued = true; requestAnimationFrame(fit); } };
  new MutationObserver(queue).observe(document.body, {childList: true, subtree: true, characterData: true});
  window.addEventListener("resize", queue);
  queue();
}
</script>"""
# two lines of numbers kept, so the grids do not jump as the line wraps and unwraps while stepping
NORMAL_CSS = """<style>[class*="st-key-frame_nums"] { min-height: 3.2rem; }</style>"""


def settings(domain, present: bool = False, positions: int | None = None):
    cols = st.columns(2)
    picked = []
    for col, side, default in zip(cols, ("a", "b"), ("mi", "eb")):
        with col, st.container(border=True):
            picked.append(widgets.strategy_picker(side, default, domain, brief=present, positions=positions))
    for note in dict.fromkeys(support.unavailable_strategies(domain).values()):
        st.caption(note)
    c1, c2, c3, _ = st.columns(4)
    links.clamp_number("temp", 0.0, 5.0)
    links.clamp_number("dseed", 0, links.APP_SEED_MAX, integer=True)
    temperature = c1.number_input("Temperature (0: argmax)", min_value=0.0, max_value=5.0, value=0.0, step=0.1,
                                  format="%g", key="temp", bind=links.bound("temp"))
    seed = c2.number_input("Seed", min_value=0, max_value=links.APP_SEED_MAX, value=0, step=1, key="dseed",
                           bind=links.bound("dseed"), help=links.SEED_HELP)
    if domain.key == "protein" and temperature == 0 and support.runs_small_protein_mdm(domain):
        st.caption(texts.PROTEIN_ARGMAX)
    return picked, float(temperature), int(seed), decodes_at_most(domain, c3)


def decodes_at_most(domain, where) -> int:
    """How many decodes a result may take (1 for a domain that cannot check its rules or has no symmetric views:
    the input is not shown there)."""
    if domain.symmetries is None or domain.verify is None:
        return 1
    links.clamp_number("attempts", 1, MAX_DECODES, integer=True)
    return int(where.number_input(
        "Decodes at most", min_value=1, max_value=MAX_DECODES, value=1, step=1, key="attempts",
        bind=links.bound("attempts"),
        help="while a decoded grid breaks a rule of Sudoku (checked from the grid, not the answer), decode the "
             "puzzle again in another symmetric view: bands, rows and columns permuted, maybe transposed, digits "
             "relabelled; the result is shown mapped back to the puzzle"))


def run(domain, pz, name, params, temperature, seed, attempts):
    missing = support.missing_mi_source(name, domain)
    if missing:
        st.warning(missing, icon=":material/hourglass:")
        return None
    for note in (support.probe_fallback_note(name, domain), support.selector_caution(name, domain)):
        if note:
            st.caption(note)
    return support.attempt(support.decode_trace, domain.key, pz.text, pz.solution_text, name,
                           tuple(sorted(params.items())), temperature, seed, support.version(domain), attempts,
                           what=f"Cannot decode with {name}")


def _play_pause(count: int) -> None:
    """Play or pause; at the last of ``count`` frames (this run's: the button is drawn after the decodings),
    Play starts again from the first."""
    playing = not st.session_state.get("play", False)
    if playing and int(st.session_state.get("step", 0) or 0) >= count - 1:
        st.session_state["step"] = 0  # play again from the start
        links.set_by_click("step")
    st.session_state["play"] = playing


def _presenting() -> bool:
    """Presentation mode, read before the page is set up (it folds the sidebar): the toggle's last value, or the
    link's. On Back or Forward the session still holds the mode of the entry left: the entry's is in the URL, and
    the toggle reads it again."""
    if links.history_navigation():
        st.session_state.pop("present", None)
    if "present" in st.session_state:
        return bool(st.session_state["present"])
    return str(st.query_params.get("present", "")).lower() == "true"


def play_button(count: int, where) -> None:
    playing = bool(st.session_state.get("play", False))
    where.button("Pause" if playing else "Play", key="play_button", on_click=_play_pause, args=(count,),
                 icon=":material/pause:" if playing else ":material/play_arrow:", shortcut="Space",
                 help="play or pause (Space); it stops at the last frame")


def speed_picker(where) -> float:
    speed = where.segmented_control("Speed", list(SPEEDS), key="speed", default="normal",
                                    label_visibility="collapsed") or "normal"
    return SPEEDS[speed]


def sequence_page_text(domain, length: int) -> str:
    """The Decoding page's note on the strip, saying that a red bar also marks a broken rule where the domain has
    rules (a blank typed with no original value is scored by them)."""
    text = texts.worded(texts.SEQUENCE_DECODE_PAGE, domain)
    return text.replace("(the one\ngiven before masking)", "(the one\ngiven before masking) or breaks a rule of the "
                        "domain") if domain.rules(length).any() else text


def legend(domain, length: int) -> None:
    if domain.layout != "sequence":
        st.markdown(texts.DECODE_LEGEND)
        return
    text = texts.worded(texts.SEQUENCE_LEGEND, domain)  # a blank with no original is marked where it breaks a rule
    st.markdown(text.replace(" · colour:", " or breaks a rule · colour:") if domain.rules(length).any() else text)


def settings_bar(domain, present: bool, positions: int):
    """One row above the grids: the mode's toggle, Play and the speed (and, presenting, the settings' popover);
    the settings fold away (a popover, else an expander under the row), so the grids start high on a 768-px
    screen and their headings name each strategy and its settings. Returns ``(picked, temperature, seed,
    decodes at most, stacked, seconds between frames, the place for Play, the fold)``: Play is drawn once the
    decodings give the frame count."""
    # a row of controls at their own widths, wrapping where the page is narrow (the sidebar opened while
    # presenting), so no label is cut short
    row = st.container(horizontal=True, vertical_alignment="center", gap="medium", key="present_bar")
    row.toggle("Presentation mode", key="present", bind="query-params",
               help="off: the sidebar and the full page" if present else
               "for a projector: the sidebar folded, large grids and fonts; Space plays and pauses")
    fold = row.popover("Strategies and settings", icon=":material/tune:") if present else None
    play_at = row.empty()
    interval = speed_picker(row)
    fold = fold or st.expander("Strategies and settings", icon=":material/tune:")
    with fold:
        picked, temperature, seed, attempts = settings(domain, present, positions)
        stacked = st.toggle("One strategy per row", key="stack", bind="query-params", value=False,
                            help="the two decodings one above the other, each as wide as the page (narrow screens "
                                 "stack them anyway)")
        if present and any(support.uses_selector(name) for name, _ in picked):
            st.toggle("P(unmask) in place of the grid", key=decode_views.SWAP_KEY, bind="query-params", value=False,
                      help="a strategy that runs the order selector shows its P(unmask) board where its grid is, "
                           "so both stay on a projector's screen (off: the board is below the grid)")
        else:
            links.needs(decode_views.SWAP_KEY, decode_views.swap_needs(domain, present))
    return picked, temperature, seed, attempts, stacked, interval, play_at, fold


def strip_colour(domain) -> None:
    st.segmented_control("Strip colour", ["step", "entropy"], key="color", bind="query-params", default="step",
                         help=f"colour {texts.plural(domain.nouns[0])} by the step that filled them, or by their entropy before "
                              "each step")


def main():
    present = _presenting()
    frame.page("Decoding, step by step", sidebar="collapsed" if present else "auto")
    domain, pz = widgets.domain_and_puzzle(models=True)
    if pz is None:
        widgets.no_input(domain, "to decode it")
        st.markdown(texts.worded(texts.SEQUENCE_DECODE_PAGE, domain) if domain.layout == "sequence"
                    else texts.DECODE_PAGE)
        return
    st.html(PRESENT_CSS if present else NORMAL_CSS)
    if present:  # in the sidebar (folded): in the page its element took a gap, and the grids started 7 px lower
        st.sidebar.html(PRESENT_FIT, unsafe_allow_javascript=True)
    picked, temperature, seed, attempts, stacked, interval, play_at, fold = settings_bar(domain, present, pz.length)
    traces = [run(domain, pz, name, params, temperature, seed, attempts) for name, params in picked]
    if not any(traces):
        return
    count = max(len(t.steps) for t in traces if t is not None)
    play_button(count, play_at)
    view = None
    if domain.layout == "sequence":  # presenting, its controls fold away: the two strips get the screen's height
        with fold if present else st.container():
            strip_colour(domain)
            # 60 residues: the strip's letters at 120 were too small to read at 1024 px
            view = widgets.window_picker(pz.length, masked=pz.blanks)
    playing = bool(st.session_state.get("play", False))
    player = st.fragment(decode_views.player, run_every=interval if playing else None)
    player(domain, pz, traces, count, view, present, stacked)
    legend(domain, pz.length)
    views = getattr(support.model(domain), "views", 1)  # a model read in symmetric views
    st.caption("Arrow keys step, Space plays and pauses (click the page first). "
               + (sequence_page_text(domain, pz.length) if domain.layout == "sequence"
                  else texts.DECODE_PAGE)
               + (f" This model reads each grid in {views} symmetric views, so a pass here runs it {views} times."
                  if views > 1 else ""))
    row, about = widgets.button_row(), support.model_info(domain)
    for side, trace in zip(("a", "b"), traces):
        if trace is not None:
            row.download_button(f"Trace {side.upper()} ({trace.strategy}) as JSON",
                                lambda t=trace: exports.trace_json(
                                    t, pz.text, labels=pz.labels(), temperature=temperature, seed=seed,
                                    **named(domain.key), model_description=about, known=exports.known_state(domain, pz),
                                    command=exports.bench_command(t, temperature, seed, bench_domain_options(domain.key))
                                    if domain.layout == "grid" else None),
                                f"trace_{trace.strategy}.json", "application/json", on_click="ignore")
    shown = [t for t in traces if t is not None]
    row.download_button("Animation (HTML player)", lambda: exports.decoding_player_html(
        shown, pz.text, pz.givens.tolist(), domain.alphabet, domain.geometry.box if domain.geometry else None,
        native=texts.worded("native", domain)),
        "decoding.html", "text/html", on_click="ignore",
        help="one self-contained HTML file that plays this decoding (Space, arrow keys), for slides or a browser "
             "with no network")


main()
frame.link_note()
