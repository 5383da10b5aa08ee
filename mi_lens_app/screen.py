"""The screen the app's page is on: a phone's or a touch screen's browser, and how wide a chart title's line may be
there (plotly does not wrap titles). Outside the app (an HTML file may be opened anywhere) it answers as for a phone.
"""

from __future__ import annotations

import re
import sys
import textwrap

TITLE_CHARS = 35  # characters of a chart title's line: ~330 px of the title font (21 px), what a 390-px phone's chart
# (~340 px) holds; a line of 42 was cut there (at 150% zoom on 1280 px a chart beside its notes is ~370 px wide)

WIDE_TITLE_CHARS = {False: 42, True: 50}  # a title's line on a larger screen: ~400 px of a chart beside another (445 px
# at 1366 px; ~370 beside its notes at 150% zoom on 1280), ~480 of one as wide as the page: 676 px at 1024, but 505 px
# beside the open sidebar on a 1280 x 800 projector zoomed to 150%, where a line of 54 characters (9.2-9.7 px each in
# Chromium) ran 2 px past the chart and one of 58 62 px


def extra_title_room(title: str | None) -> int:
    """Pixels of top margin a title needs beyond its first line: 22 for a second line, 54 for each further one.
    Plotly centres the title in the margin, so a line more moves its last line down by half the added margin plus
    a line (~27 px): at 22 px a line, a third line reached 12 px into the plot and a fourth 28 (measured in Chromium;
    a phone's chart wraps the Benchmarks title onto four)."""
    breaks = str(title or "").count("<br>")
    return 22 * min(breaks, 1) + 54 * max(breaks - 1, 0)


def wrap_title(title: str | None, chars: int | None = None) -> str:
    """``title`` with each line longer than ``chars`` (default :func:`title_chars`) broken at spaces: plotly does not
    wrap a title, and a chart on a 390-px phone (~340 px) cut a line of 52 characters after 36. A line in ``<sup>``
    (70% of the size) holds 1.4 times as many; a line with other markup is kept whole."""
    chars = chars or title_chars()

    def wrap(line: str) -> str:
        small = re.fullmatch(r"<sup>([^<]*)</sup>", line)
        if small:
            return "<br>".join(f"<sup>{part}</sup>" for part in _wrapped(small[1], int(chars * 1.4))) or line
        return line if "<" in line else "<br>".join(_wrapped(line, chars)) or line

    return "<br>".join(wrap(line) for line in str(title or "").split("<br>"))


KEPT = "\x00"  # a space inside a short aside: not a place to break a title's line


def _wrapped(line: str, chars: int) -> list[str]:
    """``line`` in lines of at most ``chars`` characters, broken at spaces but not inside a short aside in parentheses
    (at most half a line) nor around " = ": "(residues 61-120 of 120)" goes to the next line whole, not as
    "(residues 61-120" and "of 120)"."""
    kept = re.sub(r"\([^()]*\)", lambda m: m[0].replace(" ", KEPT) if len(m[0]) <= chars // 2 else m[0], line)
    kept = kept.replace(" = ", f"{KEPT}={KEPT}")  # "_1000 = G" whole: not "... after _1000 =" and "G"
    # at spaces only: "(hard-data model)" kept whole is one word, and a break at its hyphen left "hard- data"
    parts = textwrap.wrap(kept, chars, break_long_words=False, break_on_hyphens=False)
    return [part.replace(KEPT, " ") for part in parts]


def title_chars(wide: bool = False) -> int:
    """Characters of a title's line: :data:`TITLE_CHARS` outside the app (an HTML file may be opened anywhere) and on a
    phone (its browser says "Mobi"); on a larger screen :data:`WIDE_TITLE_CHARS` of a chart beside another, or of one
    as wide as the page (``wide``). Wrapped at 35 there, a title as wide as the page took four lines where it had two,
    and the plot lost their height (on a 1366-px laptop "Per-residue entropy"'s plot began 232 px down its chart, not
    124; the arc graph's 124, not 74)."""
    agent = browser_agent()
    return TITLE_CHARS if agent is None or "Mobi" in agent else WIDE_TITLE_CHARS[wide]


def on_phone() -> bool:
    """Whether the app's page runs in a phone's browser (its user agent says "Mobi"); False outside the app."""
    return "Mobi" in (browser_agent() or "")


# a colour bar under a phone's chart, across its width: beside the plot it took ~100 of the chart's ~340 px, and left
# the 81 x 81 MI map 181 px (2.2 px a cell) and 60 residues of the arc graph 3.8 px each. At the figure's bottom edge
# (container coordinates), below the axis labels; the figure keeps ``PHONE_COLORBAR_ROOM`` px of margin for it
PHONE_COLORBAR = {"orientation": "h", "yref": "container", "y": 0.0, "yanchor": "bottom", "x": 0.5, "xanchor": "center",
                  "len": 0.9, "thickness": 12, "title": {"side": "bottom"}}
PHONE_COLORBAR_ROOM = 80


def phone_colorbar(colorbar: dict) -> dict:
    """``colorbar`` (title, ticks) laid across the bottom of a phone's chart (:data:`PHONE_COLORBAR`)."""
    title = {**colorbar.get("title", {}), **PHONE_COLORBAR["title"]}
    return {**colorbar, **PHONE_COLORBAR, "title": title}


def browser_headers() -> dict[str, str]:
    """The headers of the request the app's page was opened with (keys in lower case); empty outside the app."""
    st = sys.modules.get("streamlit")  # not imported: not the app
    if st is None or st.runtime.scriptrunner.get_script_run_ctx(suppress_warning=True) is None:
        return {}
    return {key.lower(): value for key, value in st.context.headers.items()}


def browser_agent() -> str | None:
    """The user agent of the browser the app's page runs in; None outside the app or when the browser sent none."""
    return browser_headers().get("user-agent") or None


# a touch screen's browser in its user agent: a phone's "Mobi" (Mobile), an Android tablet's "Android" (Chrome on one
# says "Android" without "Mobile"), Firefox's "Tablet" on one, an iPad's "iPad" where its browser asks for mobile pages
TOUCH_AGENTS = ("Mobi", "Android", "Tablet", "iPad")


def touch_screen(agent: str | None, hints: dict[str, str] | None = None) -> bool:
    """Whether a browser with user agent ``agent`` and request headers ``hints`` (lower-case keys) runs on a touch
    screen, as far as they say: :data:`TOUCH_AGENTS`, or Client Hints of a mobile or an Android device
    (``Sec-CH-UA-Mobile: ?1``, ``Sec-CH-UA-Platform: "Android"``; Chromium sends them over HTTPS and to localhost,
    though not on the WebSocket request Streamlit's headers come from in the Chromium tested). iPadOS Safari says
    "Macintosh", as a Mac's does, and a Windows tablet says what its desktop says: both count as a mouse's."""
    hints = hints or {}
    return (any(token in (agent or "") for token in TOUCH_AGENTS) or hints.get("sec-ch-ua-mobile") == "?1"
            or hints.get("sec-ch-ua-platform", "").strip('"') == "Android")


def on_touch() -> bool:
    """Whether the app's page runs on a touch screen (:func:`touch_screen`): a phone, or a tablet that says so; False
    outside the app."""
    return touch_screen(browser_agent(), browser_headers())
