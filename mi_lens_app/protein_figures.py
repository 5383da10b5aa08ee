"""Plotly figures for sequences (proteins). Builders take numpy arrays and return ``go.Figure``; no
streamlit, no torch.

Long sequences stay responsive: the L x L heatmap and the decoding strip show a window of positions, the
contact map and the arc graph draw at most a capped number of pairs (the title says how many of how many), and
the decoding strip keeps only the most recent steps.
"""

from __future__ import annotations

import math
import re

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from mi_core.options import plural
from mi_lens_app.cdr_marks import add_cdr_marks, cdr_spans  # noqa: F401  (pages mark CDRs with cdr_spans)
from mi_lens_app.figures import (
    CHOSEN_COLOR,
    ERROR_COLOR,
    FONT,
    MAP_HEIGHT,
    MUTED_COLOR,
    SELECTED_COLOR,
    click_layer,
    color_max,
    dark_fill,
    scale_title,
    scaled,
    selected_shapes,
)
from mi_lens_app.screen import PHONE_COLORBAR_ROOM, extra_title_room, phone_colorbar, title_chars, wrap_title

MAX_ARCS = 150  # arcs drawn in the arc graph
MAX_DOTS = 400  # pairs drawn in the contact map
WINDOW = 120  # positions shown at once in the heatmap and the decoding strip
MAX_STRIP_ROWS = 60  # decoding steps shown in the strip (the most recent ones)
# a residue's label and an amino acid's letter on a projector: at 11 px (9 px in the arc graph) they could not be read
# at 1024 px; plotly shows fewer residue labels where they do not fit, and the hover names each
LETTER_PX = 14
PHONE_PLOT_PX = 330  # the plot of a chart as wide as a 390-px phone's page, its colour bar below it
LETTER_WIDTH = 0.75  # a capital's width in ems, W and M rounded down: letters this far apart do not touch
# px: the smallest a residue letter is drawn where its window's own size is larger; a chart too narrow for letters
# this large scrolls sideways (on a 390-px phone a 60-residue window's letters were 4.2 px, not to be read)
MIN_LETTER_PX = 10


def letter_px(count: int, narrow: bool = False) -> int:
    """The font size of ``count`` residue letters in a row across a chart; ``narrow``: a phone's, where 60 letters
    of 14 px had 3.8 px each and ran together: as large as fits :data:`PHONE_PLOT_PX`, :data:`MIN_LETTER_PX` to
    :data:`LETTER_PX` px (more than fit scroll sideways, :func:`fit_letters_css`)."""
    if narrow:
        return int(np.clip(PHONE_PLOT_PX / count / LETTER_WIDTH, MIN_LETTER_PX, LETTER_PX))
    return LETTER_PX if count <= 60 else 12 if count <= 80 else 9 if count <= 160 else 7


# a touch screen's letter charts take no drag: plotly's zoom took every touch on the plot, so a swipe neither scrolled a
# strip too wide for the phone (:func:`fit_letters_css`) sideways nor the page down; a tap still shows the hover
SWIPE = {"dragmode": False}
# px of a sequence chart beside its plot (measured 134-157 with the step axis and a colour bar, 1024-1920 px screens)
LETTER_ROOM = 160
PHONE_ARC_ROOM = 40  # px of a phone's arc graph beside its plot (measured 24): its colour bar lies below the plot
PHONE_MAX_WIDTH = 640  # px: a page this narrow is a phone's (Streamlit stacks columns below it)


def letters_width(count: int, size: int, room: int = LETTER_ROOM) -> int:
    """The narrowest chart (px) whose ``count`` letters a row, drawn at ``size`` px with ``room`` px of the chart
    beside the plot, keep at least ``min(size, MIN_LETTER_PX)`` px :data:`LETTER_WIDTH` ems apart."""
    return math.ceil(room + count * LETTER_WIDTH * min(size, MIN_LETTER_PX))


PAGE_PADDING = 32  # px: a phone's page around its charts (Streamlit's 1rem a side)


def fit_letters_css(key: str, count: int, size: int, room: int = LETTER_ROOM) -> str:
    """A style capping the letters of the chart keyed ``key`` (``count`` a row, drawn at ``size`` px, ``room`` px of
    the chart beside its plot) to the width the browser gives them, :data:`LETTER_WIDTH` ems apart (a decode's strip,
    the arc graph's residues): plotly's text has a fixed size, chosen for a 1024-px screen, and on a narrower one (a
    1024-px projector zoomed to 150% is 683 px wide) a strip's 19-px letters stood 8.6 px apart, letters on letters.
    A container query reads the chart's width, which the server does not know. On a phone (a page at most
    :data:`PHONE_MAX_WIDTH` px wide) the chart is never narrower than :func:`letters_width`: its container
    (``{key}_scroll``, see ``widgets.letter_chart``) scrolls sideways, and the letters stay :data:`MIN_LETTER_PX` px (a
    390-px phone's 60 residues were 4.2 px); a wider page keeps the chart to its width (a projector's 8-px letters)."""
    least = letters_width(count, size, room)
    hint = min(PHONE_MAX_WIDTH, least + PAGE_PADDING)  # a page this narrow scrolls the chart: a line says so
    return (f"<style>.st-key-{key}_scroll {{ overflow-x: auto; }} .st-key-{key} {{ container-type: inline-size; }} "
            f"@media (max-width: {PHONE_MAX_WIDTH}px) {{ .st-key-{key} {{ min-width: {least}px; }} }} "
            f".mi-swipe-{key} {{ display: none; margin: 0; font-size: 0.875rem; opacity: 0.8; }} "
            f"@media (max-width: {hint}px) {{ .mi-swipe-{key} {{ display: block; }} }} "
            f".st-key-{key} :is(.heatmap-label, .textpoint) text {{ "
            f"font-size: min({size}px, calc((100cqw - {room}px) / {count * LETTER_WIDTH:g})) !important; }}</style>"
            f'<p class="mi-swipe-{key}">Swipe the chart sideways: its {count} letters a row are wider than the '
            "screen.</p>")


SCREEN_TOP = 64  # px of the screen above a fitted plot: Streamlit's header bar (3.75rem) and 4 px to spare


def fit_screen_css(key: str, height: int, chrome: int, least: int) -> str:
    """A style sizing the chart keyed ``key`` (built ``height`` px tall, ``chrome`` px of it outside its plot, see
    ``widgets.screen_chart``) so that its plot fits the screen below the header: ``height`` on a desktop screen, less
    on a short one (a 1280 x 720 projector zoomed to 150% leaves 420 px, where a marginal strip's plot took 527-577),
    but never a plot under ``least`` px, where its letters would run together. The server does not know the
    screen's height; the browser does, and plotly draws the chart to its container's height."""
    floor = min(height, least + chrome)
    # the container Streamlit sizes by its flex basis, not its height: ``flex: none`` lets the height rule
    return (f"<style>.st-key-{key}_fit {{ flex: none !important; height: clamp({floor}px, "
            f"calc(100vh - {SCREEN_TOP}px + {chrome}px), {height}px) !important; }}</style>")


# px of a decode strip's plot on a 1024-px screen: with the sidebar open, and the page's whole width (``wide``) less
# the step axis and the colour bar
STRIP_PLOT_PX = {False: 650, True: 820}


WRAP_AT = 30  # residues a decode strip's row holds beside the sidebar; a wider window wraps into two rows
WRAP_GAP = 56  # px between wrapped strips: the upper one's residue numbers, the lower one's CDR bands and names


def strip_rows(count: int, wide: bool = False) -> int:
    """The strips a decode's window of ``count`` residues is drawn in (``decode_strip``'s ``wrap``): beside the
    sidebar (a 1280 x 800 projector zoomed to 150% leaves the strip 505 px) a window of 60 drew letters of 7.7 px, so
    a window wider than :data:`WRAP_AT` wraps into two, one below the other (15 px there). Presenting (``wide``) the
    strip has the page's whole width, and two strategies' strips must fit one screen: one row."""
    return 1 if wide or count <= WRAP_AT else 2


def strip_letter_px(count: int, wide: bool = False) -> int:
    """The letters' size in a decode's strip of ``count`` positions (``wide``: the page's whole width)."""
    # letters sized to the window, as plotly sized them to one row's tall cells and they overlapped
    return int(np.clip(STRIP_PLOT_PX[wide] / count * 1.4, 7, 24 if wide else 16))


MASKED_COLOR = MUTED_COLOR  # still-masked positions (`_`, the contact map's diagonal marks)


def window(length: int, start: int = 0, size: int = WINDOW) -> tuple[int, int]:
    """``(first, end)`` of a window of at most ``size`` positions starting near ``start`` (clipped to fit)."""
    size = max(1, min(size, length))
    first = int(min(max(start, 0), length - size))
    return first, first + size


def window_note(title: str, noun: str, lo: int, hi: int, n: int) -> str:
    """``title`` with the window ``lo:hi`` of ``n`` positions it shows, if it shows fewer: " (residues 61-120 of 120)",
    or " (61-120 of 120)" where the title names them already ("Per-residue entropy and marginals"): beside the open
    sidebar on a 1280 x 800 projector zoomed to 150% (a chart of 505 px) the title that said "residue" twice was cut."""
    if hi - lo >= n:
        return title
    named = re.search(rf"\b{re.escape(noun)}", title, re.IGNORECASE)
    return f"{title} ({'' if named else plural(noun) + ' '}{lo + 1}-{hi} of {n})"


def _layout(fig: go.Figure, title: str, height: int, *, wide: bool = False, **kwargs) -> None:
    """``wide``: a chart as wide as the page (the sequence strips and arcs), whose title wraps only on a phone."""
    # on a phone a title such as "Arc graph: all 55 pairs; residues 61-120 of 120 shown" was cut
    title = wrap_title(title, title_chars(wide))
    kwargs.setdefault("showlegend", False)
    kwargs.setdefault("margin", {"l": 10, "r": 10, "t": 50 + extra_title_room(title), "b": 10})
    fig.update_layout(title={"text": title, "x": 0.02}, height=height, font=FONT, plot_bgcolor="white", **kwargs)
    # the margins grow to fit the tick labels: with a fixed 10 px margin "20" is drawn as "0" and "2.5" as "5"
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)


def sequence_heatmap(mi: np.ndarray, labels: list[str], *, noun: str = "residue", start: int = 0, size: int = WINDOW,
                     selected: int | None = None, zmin: float | None = 0.0, zmax: float | None = None,
                     zmid: float | None = None, colorscale: str = "Viridis", title: str = "",
                     value_name: str = "MI (nats)", height: int | None = None, scale: str = "linear",
                     clickable: bool | np.ndarray = False, also: tuple[str, np.ndarray] | None = None) -> go.Figure:
    """The ``(L, L)`` matrix as a heatmap with residue labels (``M1``, ``_7`` for masked), positions
    ``[start, start + size)`` only; under ``linear`` colours the range is the whole matrix's unless given, so
    windows compare (an all-zero matrix is drawn as zero); ``log`` and ``percentile`` colour the window's own pairs. The selected residue's row and column are outlined when they fall
    in the window. ``scale``: ``linear``, ``log`` or ``percentile`` colours (see ``figures.scaled``);
    ``clickable``: lay ``figures.click_layer`` over it, so a click selects the pair; ``also``: ``(name, (L, L)
    matrix)`` a second value in the click layer's hover. ``height``: by default :func:`map_height`."""
    z_all = np.asarray(mi, float)
    lo, hi = window(len(labels), start, size)
    if zmax is None and zmid is None and scale == "linear":
        zmax = color_max(z_all)
    raw = z_all[lo:hi, lo:hi]
    z, zmin, zmax, ticks = scaled(raw, scale, zmin, zmax) if zmid is None else (raw, zmin, zmax, None)
    names = labels[lo:hi]
    value = "%{z:.4g}" if z is raw else "%{customdata:.4g}"
    fig = go.Figure(go.Heatmap(z=z, x=names, y=names, colorscale=colorscale, zmin=zmin, zmax=zmax,
                               zmid=zmid, name=value_name, customdata=None if z is raw else raw,
                               hovertemplate="%{y} · %{x}<br>" + value_name + " " + value + "<extra></extra>",
                               colorbar={"title": {"text": scale_title(value_name, scale), "side": "right"},
                                         "thickness": 14,
                                         **(ticks or {})}))
    if clickable is not False:
        fig.add_trace(click_layer(names, np.arange(lo, hi),
                                  None if clickable is True else np.asarray(clickable, bool)[lo:hi], raw, value_name,
                                  None if also is None else (also[0], np.asarray(also[1], float)[lo:hi, lo:hi])))
    shapes = []
    if selected is not None and lo <= selected < hi:
        pos, n = selected - lo, hi - lo
        shapes += selected_shapes([{"x0": -0.5, "x1": n - 0.5, "y0": pos - 0.5, "y1": pos + 0.5},
                                   {"y0": -0.5, "y1": n - 0.5, "x0": pos - 0.5, "x1": pos + 0.5}], 2)
    axis = {"showgrid": False, "zeroline": False, "automargin": True, "tickfont": {"size": LETTER_PX}}
    shown = f"{plural(noun)} {lo + 1}-{hi} of {len(labels)}"
    # the window on a line of its own: beside the contact map (1280 px) one line was cut at "of 12"
    _layout(fig, f"{title}<br>{shown}" if hi - lo < len(labels) else title, height or MAP_HEIGHT, shapes=shapes,
            xaxis=dict(axis, constrain="domain"), yaxis=dict(axis, autorange="reversed", scaleanchor="x",
                                                             constrain="domain"), clickmode="event+select")
    add_cdr_marks(fig, cdr_spans(labels), lo=lo, hi=hi, shift=-lo, block=True, span=False, square=True)
    return fig.update_layout(height=height or map_height(fig, 50, names))


LABEL_CHAR_PX = 6.5  # px of margin a character of a map's upright residue labels takes: "A58" took 53 px, "_101·H3" 79
PLAIN_LABEL = 3  # characters of a small protein's longest label ("A58"), which :data:`figures.MAP_HEIGHT` is set for


def map_height(fig: go.Figure, plain_top: int, labels: list[str] = ()) -> int:
    """The height of a map ``fig`` (its margins set, its bands drawn) that keeps its plot, and its colour bar that
    runs the plot's height, as tall as a plain protein's in :data:`figures.MAP_HEIGHT` (~337 px): that height plus
    the margin its title's further lines and its CDR bands take above ``plain_top`` (a one-line title's), and its
    ``labels`` below, where longer than :data:`PLAIN_LABEL` characters. An antibody's map, with a title of two lines,
    bands and labels such as ``_101·H3``, kept 237 px of 440."""
    chars = max((len(label) for label in labels), default=PLAIN_LABEL)
    return MAP_HEIGHT + int(fig.layout.margin.t) - plain_top + round(LABEL_CHAR_PX * max(chars - PLAIN_LABEL, 0))


def top_pairs(mi: np.ndarray, masked: np.ndarray, *, min_sep: int = 1,
              limit: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The strongest pairs ``i < j`` of masked positions with ``j - i >= min_sep`` and MI > 0, strongest
    first: ``(i, j, mi, total)``, at most ``limit`` of them out of ``total`` such pairs."""
    masked = np.asarray(masked, bool)
    iu, ju = np.triu_indices(len(masked), k=max(min_sep, 1))
    w = np.asarray(mi, float)[iu, ju]
    keep = masked[iu] & masked[ju] & (w > 0)
    iu, ju, w = iu[keep], ju[keep], w[keep]
    order = np.argsort(-w, kind="stable")[:limit]
    return iu[order], ju[order], w[order], int(keep.sum())


def contact_figure(mi: np.ndarray, labels: list[str], masked: np.ndarray, *, noun: str = "residue", min_sep: int = 4,
                   limit: int = MAX_DOTS, title: str = "Contact-map view", height: int | None = None,
                   scale: str = "linear") -> go.Figure:
    """Top-MI pairs as dots above the diagonal, like a predicted contact map: dot ``(x = j, y = i)``, size
    by MI and colour by MI under ``scale`` (``figures.scaled``); pairs closer than ``min_sep`` along the
    sequence are left out (neighbours depend on each other trivially); masked positions are marked on the
    diagonal. ``height``: by default :func:`map_height`."""
    n = len(labels)
    i, j, w, total = top_pairs(mi, masked, min_sep=min_sep, limit=limit)
    top = float(w.max()) if len(w) else 1.0
    color, cmin, cmax, ticks = scaled(w, scale, 0.0, top)
    fig = go.Figure()
    # residues numbered from 1, as the labels and the hover do
    i, j = i + 1, j + 1
    fig.add_trace(go.Scatter(x=[1, n], y=[1, n], mode="lines", line={"color": "#bbb", "width": 1},
                             hoverinfo="skip", name="diagonal"))
    idx = np.flatnonzero(masked)
    fig.add_trace(go.Scatter(x=idx + 1, y=idx + 1, mode="markers", name="masked",
                             marker={"symbol": "square", "size": 5, "color": MASKED_COLOR},
                             hovertext=[labels[k] for k in idx], hoverinfo="text"))
    fig.add_trace(go.Scatter(
        x=j, y=i, mode="markers", name="pairs",
        marker={"size": 5 + 15 * w / top, "color": color, "colorscale": "Viridis", "cmin": cmin, "cmax": cmax,
                "colorbar": {"title": {"text": scale_title("MI (nats)", scale), "side": "right"}, "thickness": 14,
                             **(ticks or {})},
                "line": {"width": 0.5, "color": "#333"}},
        hovertext=[f"{labels[a - 1]} · {labels[b - 1]}: {v:.4g} nats (|i−j| = {b - a})" for a, b, v in zip(i, j, w)],
        hoverinfo="text"))
    # both axes constrained to their domain: with the y axis free, the square aspect stretched its range (-10..)
    axis = {"range": [0.5, n + 0.5], "showgrid": True, "gridcolor": "#eee", "zeroline": False, "title": noun,
            "constrain": "domain"}
    drawn = f"top {len(w)} of {total} pairs" if total > len(w) else f"{total} pairs"
    # the counts on a second, smaller line: on one line the title was cut in a half-width column
    _layout(fig, f"{title}<br><sup>{drawn} with |i−j| ≥ {min_sep}</sup>", height or MAP_HEIGHT, xaxis=axis,
            yaxis=dict(axis, range=[n + 0.5, 0.5], scaleanchor="x"), margin={"l": 10, "r": 10, "t": 70, "b": 10})
    if not total:
        fig.add_annotation(text=empty_contacts_hint(int(masked.sum()), min_sep, noun), xref="paper", yref="paper", x=0.5,
                           y=0.5, showarrow=False, font={"size": 14}, bgcolor="rgba(255,255,255,0.9)")
    add_cdr_marks(fig, cdr_spans(labels), shift=1, square=True)
    return fig.update_layout(height=height or map_height(fig, 70))  # numbered axes: no labels to make room for


def empty_contacts_hint(masked: int, min_sep: int, noun: str = "residue") -> str:
    """Why the contact map (a pair map) has no pair, and what to change, in ``noun``'s words (a position)."""
    nouns = plural(noun)
    if masked < 2:
        return f"No pairs: fewer than two {nouns} are masked.<br>Mask more {nouns} in the sidebar."
    return (f"No pair of masked {nouns} at least {min_sep} apart<br>has MI above 0. Lower the separation "
            f"(the slider above)<br>or mask more {nouns} in the sidebar.")


def _arc(i: int, j: int, steps: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """A half ellipse above the axis from ``i`` to ``j``, its height half its span."""
    t = np.linspace(0, np.pi, steps)
    mid, r = (i + j) / 2, (j - i) / 2
    return mid - r * np.cos(t), r * np.sin(t)


def arc_figure(letters: str, labels: list[str], masked: np.ndarray, mi: np.ndarray, *, noun: str = "residue",
               cap: int = MAX_ARCS, start: int = 0, size: int | None = None,
               min_sep: int = 1, selected: int | None = None, title: str = "Arc graph",
               height: int = 420, scale: str = "linear", narrow: bool = False, touch: bool = False) -> go.Figure:
    """The dependency graph along the sequence: residues on a line, the ``cap`` strongest pairs as arcs
    whose width and opacity grow with MI (the title says how many of how many are drawn), a dot atop each
    coloured by its MI under ``scale`` (``figures.scaled``; percentile: its rank among the pairs drawn).
    ``start``, ``size``: the window of residues drawn, in letters sized to it (all of them by default), on
    :func:`letter_lines` lines; the pairs are the whole sequence's, and an arc to a residue outside the window
    leaves the frame. ``narrow``: a phone's chart, its colour bar below the plot, its letters sized to the phone
    (:func:`letter_px`). ``touch`` (a phone's or a tablet's): a swipe on it scrolls (:data:`SWIPE`)."""
    n = len(letters)
    lo, hi = window(n, start, size or n)
    i, j, w, total = top_pairs(mi, masked, min_sep=min_sep, limit=cap)
    top = float(w.max()) if len(w) else 1.0
    fig = go.Figure()
    for level, (width, alpha) in enumerate(((1.0, 0.35), (2.0, 0.5), (3.2, 0.7), (5.0, 0.9))):
        xs, ys = [], []
        for a, b, v in zip(i, j, w):
            if min(int(4 * v / top), 3) == level:
                cx, cy = _arc(int(a) + 1, int(b) + 1)  # positions 1-based, as the labels and the other figures
                xs += [*cx, None]
                ys += [*cy, None]
        if xs:
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", name=f"arcs {level}",
                                     line={"color": f"rgba(31,95,191,{alpha})", "width": width}))
    if len(w):
        color, cmin, cmax, ticks = scaled(w, scale, 0.0, top)
        colorbar = {"title": {"text": scale_title("MI (nats)", scale), "side": "right"}, "thickness": 14,
                    **(ticks or {})}
        fig.add_trace(go.Scatter(x=(i + j) / 2 + 1, y=(j - i) / 2, mode="markers", name="arc tops",
                                 marker={"size": 6, "color": color, "colorscale": "Viridis", "cmin": cmin, "cmax": cmax,
                                         "showscale": True,
                                         "colorbar": phone_colorbar(colorbar) if narrow else colorbar},
                                 hovertext=[f"{labels[a]} · {labels[b]}: {v:.4g} nats" for a, b, v in zip(i, j, w)],
                                 hoverinfo="text"))
    ends_in = ((i >= lo) & (i < hi)) | ((j >= lo) & (j < hi))  # the window's arcs set the height drawn
    span = max((j - i)[ends_in].max() / 2 if ends_in.any() else 1, 1)
    lines = letter_lines(hi - lo)
    fig.add_trace(_residue_letters(letters, labels, masked, selected, lo, hi, letter_px(line_letters(hi - lo), narrow)))
    # the number drawn is the cap when pairs are left out: "60 strongest of 266 pairs (cap 60)" said it twice
    drawn = f"the {len(w)} strongest of {total} pairs" if total > len(w) else f"all {total} pairs"
    title = window_note(f"{title}: {drawn}", noun, lo, hi, n)
    room = {"margin": {"l": 10, "r": 10, "t": 50 + extra_title_room(wrap_title(title, title_chars(True))),
                       "b": PHONE_COLORBAR_ROOM + 50}} if narrow else {}  # below the axis's numbers and name
    _layout(fig, title, height + (PHONE_COLORBAR_ROOM if narrow else 0), wide=True, **room, **(SWIPE if touch else {}),
            xaxis={"range": [lo + 0.5 if lo else 0, hi + 0.5 if hi < n else n + 1], "showgrid": False,
                   "zeroline": False, "title": noun},
            yaxis={"range": [-span * 0.08, span * 1.05], "visible": False})
    # the letters sit at 1-based x (shift 1): at 0 each band began a residue early (CDR-H3 over R98-_108, not
    # _99-_109), and a band cut by the window (H2 from residue 61) lost its name, placed at its whole span's middle
    add_cdr_marks(fig, cdr_spans(labels), lo=lo, hi=hi, shift=1)
    if lines > 1:
        _second_line(fig, span, fig.layout.height - fig.layout.margin.t - (fig.layout.margin.b if narrow else 56))
    return fig


def _residue_letters(letters: str, labels: list[str], masked: np.ndarray, selected: int | None, lo: int, hi: int,
                     size: int) -> go.Scatter:
    """The arc graph's letters of residues ``lo..hi`` (drawn at 1-based x, ``size`` px), masked ones grey and the
    selected one highlighted. The window's letters only: a neighbour's, as large as these, showed a sliver at the
    plot's edge."""
    colors = np.where(np.asarray(masked, bool), MASKED_COLOR, "#111111")
    if selected is not None:
        colors[selected] = SELECTED_COLOR
    return go.Scatter(x=np.arange(lo + 1, hi + 1), y=np.zeros(hi - lo), mode="text", text=list(letters[lo:hi]),
                      name="residues", textfont={"size": size, "color": colors[lo:hi].tolist()},
                      hovertext=labels[lo:hi], hoverinfo="text")


ARC_LINE_PX = 18  # px from the arc graph's upper line of letters to its lower one: a 14-px capital and 4 px between


def letter_lines(count: int) -> int:
    """The lines the arc graph's ``count`` residue letters are drawn on. Beside the open sidebar a 1280 x 800
    projector zoomed to 150% leaves the graph 505 px: a window of 60 letters in one line were 7.7 px (11.5 at
    1024 x 768). More than :data:`WRAP_AT` alternate between two lines, one residue on the upper, the next on the
    lower, each at its own position under its arcs' ends: a line's letters stand two residues apart, twice as large
    (14 px there), and every arc is still drawn."""
    return 1 if count <= WRAP_AT else 2


def line_letters(count: int) -> int:
    """The most letters one of the arc graph's :func:`letter_lines` holds (what the letters are sized to)."""
    return math.ceil(count / letter_lines(count))


def _second_line(fig: go.Figure, span: float, plot_px: float) -> None:
    """Every second residue of an arc graph (``span``: its highest arc drawn, in the y axis's units; ``plot_px``:
    its plot's height, less the x axis's numbers and name below it) on a line :data:`ARC_LINE_PX` px below the
    first, the axis's range lowered to make room for it."""
    below = plot_px * 0.08 / 1.13 + ARC_LINE_PX  # px under the first line: as much as one line had, and the second
    unit = span * 1.05 / (plot_px - below)  # the y axis's units a pixel
    letters = next(t for t in fig.data if t.name == "residues")
    # by the residue's position: a window moved by one keeps each letter on its line
    letters.y = np.where((np.asarray(letters.x) - 1) % 2, -ARC_LINE_PX * unit, 0.0)
    fig.update_yaxes(range=[-below * unit, span * 1.05])


# the marginal strip's rows: the entropy bars over the marginals, and the gap between them (fractions of the plot);
# at 0.3 / 0.7 a zoomed projector's 420-px plot left the 20 letters 14 px apart
STRIP_ROWS = (0.25, 0.75)
STRIP_GAP = 0.04


def label_room(labels: list[str]) -> int:
    """px of margin below a plot for ``labels`` drawn upright at :data:`LETTER_PX` px, a few more than they take
    (measured in Chromium: "A58" took 52 px, "_101·H3" 79), so that plotly's automargin does not change it."""
    return 34 + 7 * max((len(label) for label in labels), default=PLAIN_LABEL)


def strip_fit(fig: go.Figure) -> tuple[int, int]:
    """``(chrome, least)`` of a :func:`marginal_strip`: px of the chart outside its plot (the title, the CDR bands'
    names above, the residue labels below), and the least plot height that keeps its rows of letters
    :data:`LETTER_PX` + 1 px apart."""
    rows = len(next(t for t in fig.data if t.type == "heatmap").y)
    share = STRIP_ROWS[1] / sum(STRIP_ROWS) * (1 - STRIP_GAP)
    return int(fig.layout.margin.t) + int(fig.layout.margin.b), math.ceil(rows * (LETTER_PX + 1) / share)


def marginal_strip(marginals: np.ndarray, entropy: np.ndarray, labels: list[str], masked: np.ndarray,
                   amino_acids: str, *, extra: tuple[str, np.ndarray] | None = None, start: int = 0,
                   size: int = WINDOW, title: str = "Per-residue entropy and marginals",
                   height: int | None = None, nouns: tuple[str, str] = ("residue", "amino acid")) -> go.Figure:
    """Entropy per residue as bars (and ``extra``, e.g. MI with the selected residue, as a line) over a
    heatmap of the marginals ``(L, 20)`` of the masked residues (given ones are blank); a window of positions.
    ``height``: by default tall enough for a row of :data:`LETTER_PX` letters an amino acid."""
    lo, hi = window(len(labels), start, size)
    height = height or 300 + 19 * len(amino_acids)  # 20 amino acids: 680 px, a row of 17 px each
    names = labels[lo:hi]
    masked = np.asarray(masked, bool)[lo:hi]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=list(STRIP_ROWS), vertical_spacing=STRIP_GAP,
                        specs=[[{"secondary_y": True}], [{}]])
    fig.add_trace(go.Bar(x=names, y=np.where(masked, entropy[lo:hi], 0.0), name="entropy (nats)",
                         marker_color="#e6803a", hovertemplate="%{x}: H = %{y:.3f} nats<extra></extra>"), 1, 1)
    if extra is not None:  # on its own axis (right): MI is often 1000 times smaller than entropy
        fig.add_trace(go.Scatter(x=names, y=np.asarray(extra[1], float)[lo:hi], mode="lines+markers", name=extra[0],
                                 line={"color": "#1f5fbf"}, marker={"size": 4},
                                 hovertemplate="%{x}: %{y:.4g}<extra>" + extra[0] + "</extra>"), 1, 1,
                      secondary_y=True)
        # the axis titles in the traces' colours say which is which: a legend over the plot covered the CDR bands
        fig.update_yaxes(title_text="MI (nats)", secondary_y=True, row=1, col=1, showgrid=False, rangemode="tozero",
                         title_font={"color": "#1f5fbf"}, tickfont={"color": "#1f5fbf", "size": LETTER_PX})
    fig.update_yaxes(title_text="H (nats)", secondary_y=False, row=1, col=1, rangemode="tozero",
                     title_font={"color": "#e6803a" if extra is not None else None})
    z = np.where(masked[:, None], np.asarray(marginals, float)[lo:hi], np.nan).T
    fig.add_trace(go.Heatmap(z=z, x=names, y=list(amino_acids), colorscale="Blues", zmin=0, zmax=1, name="p",
                             hovertemplate="%{x} = %{y}: p %{z:.3f}<extra></extra>",
                             colorbar={"title": {"text": "p", "side": "right"}, "thickness": 12, "len": 0.65,
                                       "y": 0.33}), 2, 1)
    key = "" if extra is None else f"<br><sup>bars: entropy H (left axis) · line: {extra[0]} (right axis)</sup>"
    _layout(fig, window_note(title, nouns[0], lo, hi, len(labels)) + key, height, wide=True)
    fig.update_layout(margin={"b": label_room(names)})  # known, so that fit_screen_css knows the plot's height
    fig.update_xaxes(showgrid=False, tickfont={"size": LETTER_PX}, automargin=True)
    fig.update_yaxes(autorange="reversed", tickfont={"size": LETTER_PX}, row=2, col=1, title_text=nouns[1],
                     tickvals=list(amino_acids), ticktext=list(amino_acids))
    return add_cdr_marks(fig, cdr_spans(labels), lo=lo, hi=hi, shift=-lo)


def decode_strip(tokens: np.ndarray, chosen: np.ndarray, entropy: np.ndarray, errors: np.ndarray,
                 amino_acids: str, *, noun: str = "residue", color: str = "step", start: int = 0, size: int = WINDOW,
                 max_rows: int = MAX_STRIP_ROWS, title: str = "", height: int | None = None,
                 regions: list[tuple[str, int, int]] = (), wide: bool = False, touch: bool = False,
                 wrap: int = 1) -> go.Figure:
    """A decode as a sequence strip: rows are steps (``0..S``), columns positions, letters as text.

    Args:
        tokens, chosen, errors: ``(S + 1, L)`` token ids after each step, positions unmasked at that step,
            filled positions that differ from the native sequence.
        entropy: ``(S + 1, L)`` entropy before each step (0 where not masked).
        color: ``"step"`` (the step a residue was filled at) or ``"entropy"`` (its entropy before the step).
        regions: an antibody's CDRs (``cdr_marks.cdr_spans`` of its labels), marked over their columns.
        wide: the strip has the page's whole width (presentation mode): larger letters.
        touch: a touch screen's (a phone's or a tablet's) strip: a swipe on it scrolls (:data:`SWIPE`).
        wrap: the window's residues in this many strips, one below the other (:func:`strip_rows`), each with its
            own residue axis and CDR bands: fewer letters a row, so larger ones.
    Only the last ``max_rows`` steps and a window of positions are drawn.
    """
    tokens, chosen = np.asarray(tokens), np.asarray(chosen, bool)
    steps, length = tokens.shape
    lo, hi = window(length, start, size)
    first = max(0, steps - max_rows)
    rows = np.arange(first, steps)
    # (S + 1, L): the step that last wrote each position so far (-1: never; a remasked one is masked again)
    filled_at = np.maximum.accumulate(np.where(chosen, np.arange(steps)[:, None], -1), axis=0)[rows]
    colour = _strip_colour(color, tokens[rows], np.asarray(entropy)[rows], filled_at, steps, len(amino_acids))
    letters = np.array(["_", *amino_acids])[np.clip(tokens[rows], 0, len(amino_acids))]
    per_row = math.ceil((hi - lo) / max(wrap, 1))
    blocks = [(a, min(a + per_row, hi)) for a in range(lo, hi, per_row)]
    text_size = strip_letter_px(per_row, wide)
    fig = go.Figure() if len(blocks) == 1 else make_subplots(rows=len(blocks), cols=1,
                                                             vertical_spacing=WRAP_GAP / (30 * len(rows) + WRAP_GAP))
    marks = (chosen[rows], np.asarray(errors, bool)[rows], float(np.clip(STRIP_PLOT_PX[wide] / per_row * 0.8, 6, 40)))
    # the colour bar on the first strip with a coloured residue: plotly draws none for a heatmap of blanks only
    bar = next((k for k, (a, b) in enumerate(blocks) if np.isfinite(colour[0][:, a:b]).any()), 0)
    for k, (a, b) in enumerate(blocks):
        place = {} if len(blocks) == 1 else {"row": k + 1, "col": 1}
        _strip_block(fig, place, colour, letters, marks, rows, a, b, text_size, letters[:, lo:hi].size <= 12000,
                     k == bar)
    notes = []
    if first:  # counted as the line of numbers counts them: step 0 is the start, not a step
        notes.append(f"steps {first}-{steps - 1} of {steps - 1}")
    if hi - lo < length:
        notes.append(f"{plural(noun)} {lo + 1}-{hi} of {length}")
    top = {}
    if wide and not title:  # presenting: no title but the notes, so the two strategies' strips fit one screen
        top = {"margin": {"l": 10, "r": 10, "t": 14 + 24 * bool(notes) + 24 * bool(regions), "b": 10}}
    text = (title + (f" ({', '.join(notes)})" if notes else "")) if title else ", ".join(notes).capitalize()
    rows_px = len(blocks) * 30 * len(rows) + (len(blocks) - 1) * WRAP_GAP
    _layout(fig, text, height or (96 + 24 * bool(regions) if top else 150) + rows_px, wide=True, **top,
            **(SWIPE if touch else {}))
    _strip_axes(fig, blocks, per_row, rows, steps, noun, regions)
    return fig


def _strip_axes(fig: go.Figure, blocks: list[tuple[int, int]], per_row: int, rows: np.ndarray, steps: int, noun: str,
                regions) -> None:
    """A decode strip's axes and CDR bands, on each strip its window wraps into (``blocks``: their positions)."""
    # the shown steps and no more (one row, step 0, ran -1..1), whole steps only, the first at the top
    fig.update_yaxes(title="step", range=[steps - 0.5, rows[0] - 0.5], showgrid=False, zeroline=False,
                     ticks="outside", ticklen=6, tickcolor="white",  # the step numbers clear of the letters
                     tickmode="linear", tick0=0, dtick=max(1, int(np.ceil(len(rows) / 8))))
    fig.update_xaxes(showgrid=False, zeroline=False)
    for k, (a, b) in enumerate(blocks):
        axis = "" if k == 0 else str(k + 1)
        if len(blocks) > 1:  # every strip's columns as wide as a full one's
            fig.update_xaxes(range=[a + 0.5, a + per_row + 0.5], row=k + 1, col=1)
        add_cdr_marks(fig, list(regions), lo=a, hi=b, shift=1, xref=f"x{axis}", yref=f"y{axis}",
                      square=len(blocks) > 1)
    fig.update_xaxes(title=noun, **({"row": len(blocks), "col": 1} if len(blocks) > 1 else {}))


def _strip_block(fig: go.Figure, place: dict, colour: tuple, letters: np.ndarray, marks: tuple, rows: np.ndarray,
                 lo: int, hi: int, text_size: int, overlay: bool, with_bar: bool) -> None:
    """The traces of a decode strip's positions ``lo..hi`` (:func:`decode_strip`) in subplot ``place`` (``{}``: the
    figure's one plot), its heatmap with the colour bar when ``with_bar``. ``overlay``: the letters as text layers of
    their own, white or black on their fill (a window of at most 12,000 letters)."""
    z, name, scale, zmin, zmax, bar = colour
    x = np.arange(lo, hi)
    sub, blank = letters[:, lo:hi], np.isnan(z[:, lo:hi])
    fig.add_trace(go.Heatmap(z=z[:, lo:hi], x=x + 1, y=rows, colorscale=scale, name=name, text=sub,
                             texttemplate="" if overlay else "%{text}", textfont={"size": text_size},
                             zmin=zmin, zmax=zmax, showscale=with_bar,
                             hovertemplate="step %{y}, residue %{x}: %{text}<br>" + name + " %{z}<extra></extra>",
                             colorbar={"title": {"text": name, "side": "right"}, "thickness": 12, **bar}), **place)
    chosen, errors, bar_px = marks
    _strip_marks(fig, chosen[:, lo:hi], errors[:, lo:hi], x + 1, rows, bar_px, place)
    # the other letters (given residues, and masked ones as _) on transparent heatmaps, as the coloured one writes
    # no text where its z is blank: plotly sizes heatmap text to the cells, so letters never overlap (at 120
    # residues on a 1024-px screen they are tiny: a narrower window or a zoom reads them); the hover names them all
    if overlay:
        _letter_layers(fig, sub, blank, dark_fill(z[:, lo:hi], zmin, zmax, None, scale), x + 1, rows, text_size, place)


def _strip_colour(color: str, tokens: np.ndarray, entropy: np.ndarray, filled_at: np.ndarray, steps: int,
                  n_values: int) -> tuple:
    """``(z, name, colorscale, zmin, zmax, colorbar)`` of a strip's rows coloured by ``color`` (:func:`decode_strip`);
    fixed ranges: plotly's own range of one value (every residue filled at step 1) ran 0.5-1.5."""
    if color == "step":
        z = np.where((filled_at >= 0) & (tokens != 0), filled_at, np.nan)
        zmax = max(steps - 1, 2)
        return z, "filled at step", "Viridis", 1, zmax, {"tickmode": "linear", "tick0": 1,
                                                         "dtick": max(1, int(np.ceil((zmax - 1) / 6)))}
    return np.where(entropy > 0, entropy, np.nan), "H before (nats)", "Oranges", 0.0, float(np.log(n_values)), {}


def _strip_marks(fig: go.Figure, chosen: np.ndarray, errors: np.ndarray, x: np.ndarray, rows: np.ndarray,
                 size: float, place: dict) -> None:
    """A strip's bars over the letters unmasked at each step (``size`` px wide) and under those that differ from
    the native; a bar, not a box: an 11-px box crossed the letter it marked ("(" read as "[(")."""
    r, c = np.nonzero(chosen)
    fig.add_trace(go.Scatter(x=x[c], y=rows[r] - 0.36, mode="markers", name="unmasked at this step", hoverinfo="skip",
                             marker={"symbol": "line-ew", "size": size, "line": {"width": 3, "color": CHOSEN_COLOR}}),
                  **place)
    r, c = np.nonzero(errors)
    if len(r):
        fig.add_trace(go.Scatter(x=x[c], y=rows[r] + 0.32, mode="markers", name="differs from native",
                                 hoverinfo="skip", marker={"symbol": "line-ew", "size": 9,
                                                           "line": {"width": 2, "color": ERROR_COLOR}}), **place)


def _letter_layers(fig: go.Figure, letters: np.ndarray, blank: np.ndarray, dark: np.ndarray, x: np.ndarray,
                   rows: np.ndarray, size: int, place: dict) -> None:
    """A decode strip's ``letters`` (steps x positions) on transparent heatmaps of their own, one a colour: given
    residues near-black, masked ones (``_``) grey, filled ones (not ``blank``) white on the ``dark`` end of their
    scale (Viridis' purple, the Oranges' brown) and black on the light end: plotly's own text colour left grey letters
    on dark purple. Black, not #111111: at dark_fill's switch #111111 was 4.1:1, black and white are both 4.58:1."""
    for name, shown, colour in (("letters", blank & (letters != "_"), "#111111"),
                                ("masked", blank & (letters == "_"), MASKED_COLOR),
                                ("filled, on dark", ~blank & dark, "#ffffff"), ("filled, on light", ~blank & ~dark, "#000000")):
        # a layer's text only where it shows: plotly writes a heatmap's text on its blank (NaN) cells too, and the
        # last layer's black letters covered the white ones on dark cells
        fig.add_trace(go.Heatmap(z=np.where(shown, 0.0, np.nan), x=x, y=rows, text=np.where(shown, letters, ""), name=name,
                                 texttemplate="%{text}", textfont={"color": colour, "size": size}, hoverinfo="skip",
                                 colorscale=[[0, "rgba(0,0,0,0)"], [1, "rgba(0,0,0,0)"]], showscale=False), **place)


def profile_figure(labels: list[str], series: dict[str, np.ndarray], *, selected: int | None = None,
                   title: str = "", yaxis: str = "", height: int = 320, start: int = 0,
                   size: int | None = None, noun: str = "residue") -> go.Figure:
    """Values along the sequence, one bar series each (e.g. the entropy change of every residue), in the window of
    ``size`` residues from ``start`` the strips below show (all of them when ``size`` is None): a VH's 11 masked
    CDR-H3 residues were 11 bars a few pixels wide among 120 on a 1024-px screen."""
    lo, hi = window(len(labels), start, len(labels) if size is None else size)
    fig = go.Figure([go.Bar(x=labels[lo:hi], y=np.asarray(v, float)[lo:hi], name=name) for name, v in series.items()])
    shapes = []
    if selected is not None and lo <= selected < hi:
        shapes += selected_shapes([{"xref": "x", "yref": "paper", "x0": selected - lo - 0.5,
                                    "x1": selected - lo + 0.5, "y0": 0, "y1": 1}], 2)
    _layout(fig, window_note(title, noun, lo, hi, len(labels)), height, wide=True, shapes=shapes, barmode="group",
            yaxis_title=yaxis, showlegend=len(series) > 1, xaxis={"tickfont": {"size": LETTER_PX}})  # plotly thins the labels to fit
    return add_cdr_marks(fig, cdr_spans(labels), lo=lo, hi=hi, shift=-lo)  # its residues' own numbers


def select_prob_profile(prob: np.ndarray, before: np.ndarray, chosen: np.ndarray, labels: list[str], *,
                        noun: str = "residue",
                        threshold: float | None = None, start: int = 0, size: int = WINDOW, title: str = "",
                        height: int = 280) -> go.Figure:
    """The order selector's P(unmask) at one step as bars along the sequence, a window of positions.

    Args:
        prob: ``(L,)`` the selector's probability per position (read only where masked); before: ``(L,)``
            token ids the step saw (0: masked); chosen: ``(L,)`` bool positions unmasked at this step (orange
            bars, the others purple); labels: ``(L,)`` residue names for the hover.
        threshold: drawn as a dashed line when given (the modes that compare P with it).
    Residues filled before the step get a zero-height bar. x is the 1-based position, as in the decode strip.
    """
    before, chosen = np.asarray(before), np.asarray(chosen, bool)
    masked = before == 0
    y = np.where(masked, np.clip(np.asarray(prob, float), 0.0, 1.0), 0.0)
    lo, hi = window(len(before), start, size)
    hover = [f"{labels[c]}: P(unmask) = {y[c]:.3f}" + (", unmasked at this step" if chosen[c] else "")
             if masked[c] else f"{labels[c]}: filled before this step" for c in range(lo, hi)]
    fig = go.Figure(go.Bar(x=np.arange(lo, hi) + 1, y=y[lo:hi], name="P(unmask)", hovertext=hover,
                           hoverinfo="text", marker_color=np.where(chosen, CHOSEN_COLOR, "#7b5ea7")[lo:hi].tolist()))
    shapes = []
    if threshold is not None:
        shapes.append({"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": threshold,
                       "y1": threshold, "line": {"color": "#555555", "width": 1, "dash": "dash"}})
    _layout(fig, window_note(title, noun, lo, hi, len(before)), height, wide=True, shapes=shapes, bargap=0.15,
            xaxis={"title": noun, "range": [lo + 0.5, hi + 0.5], "showgrid": False, "zeroline": False},
            yaxis={"title": "P(unmask)", "range": [0, 1.02]})
    return add_cdr_marks(fig, cdr_spans(labels), lo=lo, hi=hi, shift=1)
