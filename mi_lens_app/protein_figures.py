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

from mi_core.options import plural
from mi_lens_app.cdr_marks import add_cdr_marks, cdr_spans  # noqa: F401  (pages mark CDRs with cdr_spans)
from mi_lens_app.figures import (
    FONT,
    MAP_HEIGHT,
    MUTED_COLOR,
    SELECTED_COLOR,
    click_layer,
    color_max,
    scale_title,
    scaled,
    selected_shapes,
)
from mi_lens_app.screen import PHONE_COLORBAR_ROOM, extra_title_room, phone_colorbar, title_chars, wrap_title

MAX_ARCS = 150  # arcs drawn in the arc graph
MAX_DOTS = 400  # pairs drawn in the contact map
WINDOW = 120  # positions shown at once in the heatmap and the decoding strip
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


WRAP_AT = 30  # residues a decode strip's row holds beside the sidebar; a wider window wraps into two rows


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


def sequence_layout(fig: go.Figure, title: str, height: int, *, wide: bool = False, **kwargs) -> None:
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
    sequence_layout(fig, f"{title}<br>{shown}" if hi - lo < len(labels) else title, height or MAP_HEIGHT, shapes=shapes,
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
    sequence_layout(fig, f"{title}<br><sup>{drawn} with |i−j| ≥ {min_sep}</sup>", height or MAP_HEIGHT, xaxis=axis,
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
    sequence_layout(fig, title, height + (PHONE_COLORBAR_ROOM if narrow else 0), wide=True, **room, **(SWIPE if touch else {}),
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


