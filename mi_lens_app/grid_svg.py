"""A Sudoku-style grid as one SVG element, shown with ``st.markdown`` (``st.html`` drops SVG): the decoding frames, two of which every step redraws.

As a plotly figure a frame took Chromium 100-150 ms to draw (a heatmap, line and text traces, a colour bar) and
a step of the player drew two; this SVG is some 150 elements the browser lays out in a few ms. It draws what
:func:`mi_lens_app.figures.grid_figure` draws for a frame, in the same colours: the layer's colour per cell from
the same plotly colour scale, given / filled / wrong digits, orange and dotted purple outlines, box lines, a
colour bar, and the hover text of each cell (the browser's tooltip). Builders take numpy arrays and return a
string; no streamlit.
"""

from __future__ import annotations

import re
from html import escape

import numpy as np
from plotly.colors import get_colorscale, sample_colorscale

from mi_lens_app.figures import (
    CHOSEN_COLOR,
    DIGIT_FONT,
    ERROR_COLOR,
    FILLED_COLOR,
    FONT,
    GIVEN_COLOR,
    REMASKED_COLOR,
    cell_xy,
    dark_fill,
)

# the grid is drawn at ``side`` px and shrinks to its column (the 504-px frame into 329 at 1024 px with the sidebar
# open, a factor 0.65): texts are sized for that, so the title, digits, ticks and bar title stay at least 14 px on a
# 1024-px projector (21 and 17 were 13.7 and 11.1 px there)
TITLE_SIZE = 22  # px
TITLE_H = 38  # px above the grid
PAD = 4  # px around the grid: the thick outer lines stay whole
BAR_W = 96  # px for the colour bar, its ticks and its title
TICK_SIZE = 22  # px, the colour bar's ticks and title
DIGIT_SIZE = {True: 26, False: 22}  # px, the digits of a 4x4 (True) and a 9x9 grid
NOTE_SHARE = 0.54  # a cell's numbers (:func:`select_prob_svg`) and digits beside them: this share of the cell's side
EDGE_COLOR = "#111111"  # the thin dark rim of the orange outline: orange alone was 2.5:1 on white, 1.1-2 on the cells


def colors(values: np.ndarray, colorscale: str, zmin: float, zmax: float) -> list[str | None]:
    """The colour of each value on the plotly colour scale ``colorscale`` over ``[zmin, zmax]`` (clipped), as
    plotly's heatmap draws it; None for NaN (no colour)."""
    values = np.asarray(values, float)
    span = (zmax - zmin) or 1.0
    frac = np.clip((np.nan_to_num(values, nan=zmin) - zmin) / span, 0.0, 1.0)
    sampled = sample_colorscale(get_colorscale(colorscale), frac.tolist())
    return [None if np.isnan(v) else c for v, c in zip(values, sampled)]


def ticks(zmin: float, zmax: float, count: int = 6) -> list[float]:
    """Round tick values inside ``[zmin, zmax]``, about ``count`` of them (1, 2 or 5 times a power of ten apart)."""
    raw = (zmax - zmin) / max(count - 1, 1) or 1.0
    power = 10.0 ** np.floor(np.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [float(v) for v in np.arange(np.ceil(zmin / step) * step, zmax + 1e-9 * step, step)]


def tooltip(hover: str) -> str:
    """A plotly hover text (``<b>r1c1</b><br>H = ...``) as plain tooltip lines."""
    return re.sub(r"<[^>]+>", "", hover.replace("<br>", "\n"))


def _lines(n: int, box: int, cell: float, x0: float, y0: float) -> str:
    """Thin cell lines and thick box lines, one path each."""
    paths = {False: [], True: []}
    end = n * cell
    for k in range(n + 1):
        pos = k * cell
        paths[k % box == 0].append(f"M{x0 + pos:.1f} {y0:.1f}v{end:.1f}M{x0:.1f} {y0 + pos:.1f}h{end:.1f}")
    return (f'<path d="{"".join(paths[False])}" stroke="#aaa" stroke-width="0.8"/>'
            f'<path d="{"".join(paths[True])}" stroke="#333" stroke-width="3" stroke-linecap="square"/>')


def _colorbar(colorscale: str, zmin: float, zmax: float, name: str, x: float, y: float, height: float,
              key: str) -> str:
    """A vertical colour bar with ticks and its title along its right side."""
    stops = "".join(f'<stop offset="{f:.2f}" stop-color="{c}"/>' for f, c in
                    zip(np.linspace(0, 1, 11), colors(np.linspace(zmax, zmin, 11), colorscale, zmin, zmax)))
    parts = [f'<defs><linearGradient id="{key}" x1="0" y1="0" x2="0" y2="1">{stops}</linearGradient></defs>',
             f'<rect x="{x:.1f}" y="{y:.1f}" width="14" height="{height:.1f}" fill="url(#{key})"/>']
    for v in ticks(zmin, zmax):
        ty = y + height * (zmax - v) / ((zmax - zmin) or 1.0)
        parts.append(f'<path d="M{x + 14:.1f} {ty:.1f}h4" stroke="currentColor"/>'
                     f'<text x="{x + 21:.1f}" y="{ty:.1f}" dominant-baseline="central" font-size="{TICK_SIZE}">{v:g}</text>')
    cx, cy = x + 70, y + height / 2
    parts.append(f'<text x="{cx:.1f}" y="{cy:.1f}" text-anchor="middle" font-size="{TICK_SIZE}" '
                 f'transform="rotate(90 {cx:.1f} {cy:.1f})">{escape(name)}</text>')
    return "".join(parts)


def grid_svg(digits: np.ndarray, givens: np.ndarray, box: int, *, layer: np.ndarray | None = None,
             layer_name: str = "", colorscale: str = "Oranges", zmin: float = 0.0, zmax: float = 1.0,
             hover: list[str] | None = None, outline: np.ndarray | None = None, remasked: np.ndarray | None = None,
             errors: np.ndarray | None = None, title: str = "", side: int = 400, digit_size: int | None = None,
             colorbar: bool = True, show_title: bool = True, notes: list[str] | None = None) -> str:
    """A grid as an SVG string (inside a ``div.mi-grid``; it shrinks to a narrower column).

    Args:
        digits: ``(N,)`` int, 0 for blank; givens: ``(N,)`` bool; box: box side (3 for 9x9).
        layer: ``(N,)`` float colour per cell on ``colorscale`` over ``[zmin, zmax]`` (NaN: white), named
        ``layer_name`` on the colour bar; hover: ``(N,)`` text per cell (plotly's markup), the cell's tooltip;
        outline: ``(N,)`` bool cells outlined in orange (unmasked at this step); remasked: ``(N,)`` bool cells
        outlined in dotted purple; errors: ``(N,)`` bool digits drawn red and underlined (else given black bold, filled blue).
        side: the grid's width in px; digit_size: font size of the digits (default by grid size); colorbar:
        draw the layer's colour bar beside the grid; show_title: draw ``title`` above the grid (else it only
        names the grid to a screen reader, and the grid takes its room); notes: ``(N,)`` a short text per blank
        cell (``""``: none), at the digits' size, white on the layer's dark colours.
    """
    digits, givens = np.asarray(digits), np.asarray(givens, bool)
    cells = len(digits)
    xs, ys = cell_xy(cells)
    n = int(xs.max()) + 1
    cell = side / n
    title_h = TITLE_H if title and show_title else 0
    with_bar = colorbar and layer is not None
    # the bar's end ticks are centred on its ends: room for half a tick beyond them (it was cut at the edges)
    overhang = max(TICK_SIZE // 2 - PAD, 0) if with_bar else 0
    x0, y0 = PAD, title_h + PAD + (overhang if not title_h else 0)
    width = side + 2 * PAD + (BAR_W if with_bar else 0)
    height = y0 + side + PAD + overhang
    fills = colors(layer, colorscale, zmin, zmax) if layer is not None else [None] * cells
    errors = np.zeros(cells, bool) if errors is None else np.asarray(errors, bool)
    heading = (f'<text class="mi-grid-title" x="{PAD + 2}" y="{TITLE_H / 2:.0f}" dominant-baseline="central" '
               f'font-size="{TITLE_SIZE}">{escape(title)}</text>') if title_h else ""
    parts = []
    for c in range(cells):  # one rect per cell: its colour and its tooltip
        tip = f"<title>{escape(tooltip(hover[c]))}</title>" if hover is not None else ""
        parts.append(f'<rect x="{x0 + xs[c] * cell:.1f}" y="{y0 + ys[c] * cell:.1f}" width="{cell:.1f}" '
                     f'height="{cell:.1f}" fill="{fills[c] or "#fff"}">{tip}</rect>')
    parts.append(_lines(n, box, cell, x0, y0))
    size = digit_size or DIGIT_SIZE[n <= 4]
    parts += _digits(digits, givens, errors, fills, xs, ys, x0, y0, cell, size)
    parts += _notes(notes or [], layer, (colorscale, zmin, zmax), xs, ys, x0, y0, cell, size)
    parts += _marks(outline, remasked, cells, xs, ys, x0, y0, cell)
    bar = ""
    if with_bar:
        key = f"mi-bar-{colorscale}-{zmin:g}-{zmax:g}".replace(".", "_")
        bar = _colorbar(colorscale, zmin, zmax, layer_name, x0 + side + 12, y0, side, key)
    label = escape(title or "grid")
    about = escape(describe(digits, givens, errors, outline, remasked) + _notes_said(notes or [], layer_name))
    # texts outside the cells (title, colour bar) in the page's text colour: a fixed #444 was 1.9:1 on the dark theme.
    # The 1rem below the grid makes up for st.markdown's container, which ends 1rem early (for a paragraph's margin):
    # without it the grid's last 16 px lay under the next element (presenting, a caption sat on its bottom row)
    return (f'<div class="mi-grid" style="font-family:{FONT["family"]};margin-bottom:1rem">'
            f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{label}" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" style="max-width:100%;height:auto" '
            f'font-family="{FONT["family"]}" fill="currentColor"><desc>{about}</desc>'
            f'<g text-anchor="start">{heading}{bar}</g><g text-anchor="middle" dominant-baseline="central" '
            f'font-family="{DIGIT_FONT}">{"".join(parts)}</g></svg></div>')


def _digits(digits, givens, errors, fills, xs, ys, x0: float, y0: float, cell: float, size: int) -> list[str]:
    """The SVG texts of a grid's digits: givens bold black, filled blue, wrong red, bold and underlined."""
    parts = []
    for c in np.flatnonzero(digits > 0):
        kind, color = (("given", GIVEN_COLOR) if givens[c] else ("wrong", ERROR_COLOR) if errors[c]
                       else ("filled", FILLED_COLOR))
        # a wrong digit bold with a white halo: red alone was 2.2:1 on the entropy scale's orange; a filled digit on a
        # coloured cell (unmasked at this step) a halo too: blue was 1.2-2.6:1 on the scale's upper half
        halo = ' stroke="#ffffff" stroke-width="3" paint-order="stroke"'
        weight = (' font-weight="bold"' if givens[c] else ' font-weight="bold"' + halo if kind == "wrong"
                  else halo if fills[c] is not None else "")
        cx, cy = x0 + (xs[c] + 0.5) * cell, y0 + (ys[c] + 0.5) * cell
        parts.append(f'<text class="{kind}" x="{cx:.1f}" y="{cy:.1f}" '
                     f'fill="{color}" font-size="{size}"{weight} pointer-events="none">{int(digits[c])}</text>')
        if kind == "wrong":  # underlined, not red alone: with protanopia a bold red digit read as a bold black given
            line = f'd="M{cx - 0.25 * cell:.1f} {cy + 0.36 * cell:.1f}h{0.5 * cell:.1f}" stroke-linecap="round" pointer-events="none"'
            parts.append(f'<path {line} stroke="#ffffff" stroke-width="6.5"/>'  # the halo, as the digit's
                         f'<path class="wrong-mark" {line} stroke="{ERROR_COLOR}" stroke-width="3.5"/>')
    return parts


def _notes(notes: list[str], layer, scale: tuple, xs, ys, x0: float, y0: float, cell: float, size: int) -> list[str]:
    """The SVG texts of the cells' ``notes``: white where ``layer`` is dark on ``scale`` (its colour scale, zmin and
    zmax), else dark grey."""
    if not notes:
        return []
    colorscale, zmin, zmax = scale
    dark = dark_fill(np.asarray(layer, float), zmin, zmax, None, colorscale) if layer is not None else None
    parts = []
    for c, text in enumerate(notes):
        if text:
            color = "#ffffff" if dark is not None and dark[c] else "#333333"
            parts.append(f'<text class="note" data-cell="{c}" x="{x0 + (xs[c] + 0.5) * cell:.1f}" '
                         f'y="{y0 + (ys[c] + 0.5) * cell:.1f}" fill="{color}" font-size="{size}" '
                         f'pointer-events="none">{escape(text)}</text>')
    return parts


def _notes_said(notes: list[str], name: str) -> str:
    """The cells' notes for a screen reader: `` P(unmask): r1c2 .10, r1c3 .55.``"""
    xs, ys = cell_xy(len(notes))
    said = [f"r{y + 1}c{x + 1} {text}" for text, x, y in zip(notes, xs, ys) if text]
    return f" {name}: {', '.join(said)}." if said else ""


def prob_text(p: float) -> str:
    """A probability in three characters at most: ``.95``, ``.05``, ``1`` (from .995), ``0`` (under .005)."""
    text = f"{p:.2f}"
    return {"1.00": "1", "0.00": "0"}.get(text, text.lstrip("0"))


def select_prob_svg(prob: np.ndarray, before: np.ndarray, givens: np.ndarray, chosen: np.ndarray, box: int,
                    labels: list[str], *, title: str = "", side: int = 400) -> str:
    """The order selector's P(unmask) at one step as an SVG grid (:func:`grid_svg`), over the cells masked before it.

    Args:
        prob: ``(N,)`` the selector's probability per cell (read only at masked cells); before: ``(N,)`` the
        state the step saw (0: masked); givens: ``(N,)`` bool; chosen: ``(N,)`` bool cells unmasked at
        this step (outlined); labels: ``(N,)`` cell names for the tooltips.
    Each masked cell is coloured by its probability and shows it in three characters at most (:func:`prob_text`),
    as large as the digits (:data:`NOTE_SHARE` of a cell): the numbers are the scale, so no colour bar takes the
    grid's width. As a plotly chart, with a colour bar and 11-px numbers, they were 7 px tall at 1024 px; the SVG
    shrinks with its column, numbers and all (19 px at 1024 px with the sidebar open).
    """
    before, chosen = np.asarray(before), np.asarray(chosen, bool)
    masked = before == 0
    z = np.where(masked, np.clip(np.asarray(prob, float), 0.0, 1.0), np.nan)
    hover = [f"<b>{label}</b><br>P(unmask) = {z[c]:.3f}" + ("<br>unmasked at this step" if chosen[c] else "")
             if masked[c] else f"<b>{label}</b><br>filled before this step" for c, label in enumerate(labels)]
    n = int(cell_xy(len(before))[0].max()) + 1
    size = round(NOTE_SHARE * side / n)
    return grid_svg(before, givens, box, layer=z, layer_name="P(unmask)", colorscale="Purples", zmin=0.0, zmax=1.0,
                    hover=hover, outline=chosen, title=title, side=side, digit_size=size, colorbar=False,
                    notes=[prob_text(z[c]) if masked[c] else "" for c in range(len(before))])


def _marks(outline, remasked, cells: int, xs, ys, x0: float, y0: float, cell: float) -> list[str]:
    """The SVG boxes of the cells unmasked at this step (orange, dark-rimmed) and masked again (dotted purple)."""
    parts = []
    for marks, color, stroke, dash, kind in ((outline, CHOSEN_COLOR, 4, "", "chosen"),
                                             (remasked, REMASKED_COLOR, 3, ' stroke-dasharray="2 3"', "remasked")):
        for c in np.flatnonzero(np.zeros(cells, bool) if marks is None else np.asarray(marks, bool)):
            box_at = (f'x="{x0 + (xs[c] + 0.06) * cell:.1f}" y="{y0 + (ys[c] + 0.06) * cell:.1f}" '
                      f'width="{0.88 * cell:.1f}" height="{0.88 * cell:.1f}" fill="none"')
            if kind == "chosen":  # a dark rim on both sides of the orange, seen on white and on orange cells
                parts.append(f'<rect class="chosen-edge" {box_at} stroke="{EDGE_COLOR}" stroke-width="{stroke + 2}" '
                             'pointer-events="none"/>')
            parts.append(f'<rect class="{kind}" {box_at} stroke="{color}" stroke-width="{stroke}"{dash} '
                         'pointer-events="none"/>')
    return parts


def describe(digits: np.ndarray, givens: np.ndarray, errors: np.ndarray | None = None,
             outline: np.ndarray | None = None, remasked: np.ndarray | None = None) -> str:
    """What a grid shows, in words, for a screen reader (the SVG's description): its digits row by row (``.``
    blank), how many were given, filled and wrong, and which cells are wrong, outlined and remasked, by
    ``r<row>c<column>``. Arrays as :func:`grid_svg`'s."""
    digits, givens = np.asarray(digits), np.asarray(givens, bool)
    xs, ys = cell_xy(len(digits))
    n = int(xs.max()) + 1
    names = [f"r{y + 1}c{x + 1}" for x, y in zip(xs, ys)]

    def which(mask) -> list[str]:
        return [] if mask is None else [names[c] for c in np.flatnonzero(np.asarray(mask, bool))]

    wrong = which(None if errors is None else np.asarray(errors, bool) & (digits > 0) & ~givens)
    filled = int(((digits > 0) & ~givens).sum())
    rows = "; ".join(f"row {r + 1}: " + " ".join(str(int(d)) if d else "." for d in digits[r * n:(r + 1) * n])
                     for r in range(n))
    parts = [f"{int(givens.sum())} given, {filled} filled, {int((digits == 0).sum())} blank",
             f"{len(wrong)} wrong" + (f": {', '.join(wrong)}" if wrong else "")]
    for words, cells in (("unmasked at this step", which(outline)), ("remasked", which(remasked))):
        if cells:
            parts.append(f"{words}: {', '.join(cells)}")
    return ". ".join(parts) + ". " + rows
