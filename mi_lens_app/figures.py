"""Plotly figures for the app. Builders take numpy arrays and return ``go.Figure``; no streamlit, no torch.

Grid figures put cell ``c`` of an ``n x n`` grid at ``x = c % n``, ``y = c // n`` (y grows downwards) and
lay an almost invisible SVG marker on every cell: clicks on a heatmap return no selection in Streamlit,
clicks on those markers do, and :func:`clicked_cell` turns one back into a cell index.
"""

from __future__ import annotations

import re
from importlib import metadata

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.colors import get_colorscale, sample_colorscale, unlabel_rgb

from mi_lens_app.screen import PHONE_COLORBAR_ROOM, extra_title_room, phone_colorbar, wrap_title

# orjson before 3.9.6 keeps a reference to a numpy array of strings it cannot encode, and plotly's "auto" JSON
# engine tries orjson on the raw figure first: every figure Streamlit sent kept its hover and label arrays for
# good, ~0.4 MB an 81 x 81 heatmap (a click through the 9x9 map's 975 cells took the server to 1.08 GB)
ORJSON_FIXED = (3, 9, 6)


def leaky_orjson(version: str | None) -> bool:
    """Whether orjson ``version`` (None: not installed) leaks the numpy arrays it fails to encode."""
    if version is None:
        return False
    parts = tuple(int(x) for x in re.findall(r"\d+", version)[:3])
    return parts < ORJSON_FIXED


def _orjson_version() -> str | None:
    try:
        return metadata.version("orjson")
    except metadata.PackageNotFoundError:
        return None


def plain_json_if_orjson_leaks() -> str:
    """Let plotly (and so ``st.plotly_chart``) encode figures with the standard library's json when the installed
    orjson leaks (:func:`leaky_orjson`); returns the engine in use. Figures with hover texts encode as fast or
    faster this way (orjson's first try fails on them and plotly cleans the figure and tries again)."""
    if leaky_orjson(_orjson_version()):
        pio.json.config.default_engine = "json"
    return pio.json.config.default_engine


plain_json_if_orjson_leaks()

GIVEN_COLOR = "#111111"
FILLED_COLOR = "#1f5fbf"
ERROR_COLOR = "#d62728"
CHOSEN_COLOR = "#ff7f0e"
REMASKED_COLOR = "#9467bd"
SELECTED_COLOR = "#e377c2"
RULE_COLOR = "#1f77b4"
OTHER_COLOR = "#d62728"
FONT = {"family": "Inter, Arial, sans-serif", "size": 15}
DIGIT_FONT = "Arial, Helvetica, Liberation Sans, DejaVu Sans, sans-serif"
# a grey that recedes yet reads, 4.9:1 on white (#888 was 3.5:1, #9a9a9a 2.8:1): the dependency graph's given
# digits (the edges stand out) and a sequence's still-masked positions
MUTED_COLOR = "#707070"
CLICK_OPACITY = 0.02  # invisible to the eye, still hit by clicks and hovers
# px of the MI maps page's heat maps (the Sudoku map, a protein's map and contact map): each map and its colour bar
# whole on one screen of a 1280 x 720 projector zoomed to 150% (480 CSS px, 420 below Streamlit's header bar). At 560
# a protein map's colour bar ran 498 px there, its ends (the scale's bottom and top) off the screen, and at 1024 x 768
# zoomed to 150% the map itself was 457 px tall in 452
MAP_HEIGHT = 440


def _side(cells: int) -> int:
    n = round(cells**0.5)
    if n * n != cells:
        raise ValueError(f"a square grid needs a square number of cells, got {cells}")
    return n


def cell_xy(cells: int) -> tuple[np.ndarray, np.ndarray]:
    """Grid coordinates ``(x (N,), y (N,))`` of every cell."""
    n = _side(cells)
    idx = np.arange(cells)
    return idx % n, idx // n


def _grid_lines(n: int, box: int) -> list[go.Scatter]:
    """Thin cell lines and thick box lines as two line traces (one SVG path each: as 2 (n + 1) layout shapes,
    plotly drew and laid out each line on its own, a good part of a decoding step's time in the browser)."""
    traces = []
    for thick in (False, True):
        xs, ys = [], []
        for k in range(n + 1):
            if (k % box == 0) != thick:
                continue
            pos = k - 0.5
            xs += [pos, pos, None, -0.5, n - 0.5, None]
            ys += [-0.5, n - 0.5, None, pos, pos, None]
        traces.append(go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                                 name="box lines" if thick else "cell lines",
                                 line={"color": "#333" if thick else "#aaa", "width": 3 if thick else 0.8}))
    return traces


def _cell_box(c: int, n: int) -> dict:
    """Where an outline of cell ``c`` of an ``n``-wide grid lies, inside the cell, drawn above the digits."""
    x, y = c % n, c // n
    return {"x0": x - 0.44, "x1": x + 0.44, "y0": y - 0.44, "y1": y + 0.44, "layer": "above"}


def _cell_boxes(cells: np.ndarray, n: int, color: str, width: float, dash: str = "solid") -> list[dict]:
    return [{"type": "rect", **_cell_box(c, n), "line": {"color": color, "width": width, "dash": dash}}
            for c in np.flatnonzero(cells)]


SELECTED_RIM = "#000000"


def selected_shapes(boxes: list[dict], width: float) -> list[dict]:
    """Rectangles ``boxes`` (their coordinates, refs and layer) outlined in the selection colour over a black rim
    a pixel wider each side: the pink alone fell to 1.1:1 on Viridis's green; with the rim the mark keeps at least
    2.9:1 against every colour of the app's scales."""
    rims = [{"type": "rect", **b, "line": {"color": SELECTED_RIM, "width": width + 2}} for b in boxes]
    return rims + [{"type": "rect", **b, "line": {"color": SELECTED_COLOR, "width": width}} for b in boxes]


def _square_layout(fig: go.Figure, n: int, title: str, height: int) -> None:
    title = wrap_title(title)
    axis = {"range": [-0.55, n - 0.45], "showgrid": False, "zeroline": False, "showticklabels": False, "ticks": "",
                "fixedrange": True}
    fig.update_layout(title={"text": title, "x": 0.02}, height=height,
                      margin={"l": 10, "r": 10, "t": 50 + extra_title_room(title), "b": 10},
                      xaxis=dict(axis, constrain="domain"), yaxis=dict(axis, autorange=False, range=[n - 0.45, -0.55],
                                                                    scaleanchor="x", scaleratio=1),
                      plot_bgcolor="white", font=FONT, showlegend=False, dragmode=False, clickmode="event+select")


def _digit_traces(digits: np.ndarray, givens: np.ndarray, errors: np.ndarray | None, n: int,
                  size: int | None = None) -> list[go.Scatter]:
    """Text traces: givens in black, model-filled digits in blue, wrong ones in red."""
    x, y = cell_xy(len(digits))
    errors = np.zeros(len(digits), bool) if errors is None else errors
    kinds = [(givens & (digits > 0), GIVEN_COLOR, "given"), (~givens & (digits > 0) & ~errors, FILLED_COLOR, "filled"),
             (~givens & (digits > 0) & errors, ERROR_COLOR, "wrong")]
    size = size or (26 if n <= 4 else 21)
    return [go.Scatter(x=x[m], y=y[m], text=digits[m].astype(str), mode="text", name=name, hoverinfo="skip",
                       textfont={"size": size, "color": color, "family": DIGIT_FONT,
                                     "weight": "bold" if name == "given" else "normal"})
            for m, color, name in kinds if m.any()]


def _candidate_trace(candidates: np.ndarray, blank: np.ndarray, n: int, box: int, height: int,
                     dark: np.ndarray | None = None) -> go.Scatter:
    """Pencil marks: value v of a blank cell at its sub-position, more opaque the more probable (opacity
    0.08 + 0.92 min(1, 2p): solid from p 0.5, half at 0.25, one of four open digits on a 4x4 cell, which is
    readable on a projector, and all but gone at 0.01); black, or white on the cells whose fill is ``dark``
    (``(N,)`` bool, :func:`dark_fill`): a solid mark is at least 4.58:1 on any fill (blue was 2.1:1 on the
    Oranges' middle).

    The marks are sized to the cell, about a third of its side, so they grow with the grid (a projector's)."""
    x, y = cell_xy(len(blank))
    cells = np.flatnonzero(blank)
    v = np.arange(candidates.shape[1])
    sub = (np.arange(n) % box - (box - 1) / 2) / (box + 0.4)
    xs = (x[cells][:, None] + sub[v % box][None]).ravel()
    ys = (y[cells][:, None] + sub[v // box][None]).ravel()
    alpha = np.clip(candidates[cells], 0, 1).ravel()
    light = np.repeat(np.zeros(len(cells), bool) if dark is None else np.asarray(dark, bool)[cells], len(v))
    colors = [f"rgba({'255,255,255' if w else '0,0,0'},{0.08 + 0.92 * min(1.0, 2 * a):.3f})"
              for a, w in zip(alpha, light)]
    return go.Scatter(x=xs, y=ys, text=np.tile(v + 1, len(cells)).astype(str), mode="text", hoverinfo="skip",
                      textfont={"size": max(11, round(0.34 * (height - 60) / n)), "color": colors, "family": DIGIT_FONT},
                      name="candidates")


LIGHT_TEXT_BELOW = 0.179  # a fill's relative luminance below which white text has more contrast than black:
# at it both have 4.58:1, so black or white text on the side it belongs to is at least 4.58:1 on any fill


def luminance(color: str) -> float:
    """WCAG relative luminance of ``#rrggbb`` or ``rgb(r, g, b)``."""
    rgb = [int(color[k:k + 2], 16) for k in (1, 3, 5)] if color.startswith("#") else unlabel_rgb(color)[:3]
    lin = [v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4 for v in (c / 255 for c in rgb)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def dark_fill(z: np.ndarray, zmin: float | None, zmax: float | None, zmid: float | None,
              colorscale: str) -> np.ndarray:
    """Bool, ``z``'s shape: the cells a heatmap of ``z`` in ``colorscale`` fills with a colour of luminance under
    :data:`LIGHT_TEXT_BELOW` (NaN: not dark), where letters and marks are drawn white, not black (the grids'
    pencil marks, a sequence strip's letters). The range is plotly's: ``zmin``..``zmax`` (the data's where None),
    widened to be even about ``zmid`` when one is given."""
    finite = z[np.isfinite(z)]
    lo = zmin if zmin is not None else (finite.min() if finite.size else 0.0)
    hi = zmax if zmax is not None else (finite.max() if finite.size else 0.0)
    if zmid is not None:
        half = max(hi - zmid, zmid - lo)
        lo, hi = zmid - half, zmid + half
    if hi <= lo:
        return np.zeros(z.shape, bool)
    where = np.isfinite(z)
    share = np.clip((np.where(where, z, lo) - lo) / (hi - lo), 0, 1)
    fills = sample_colorscale(get_colorscale(colorscale), share.ravel().tolist())
    return where & (np.array([luminance(c) for c in fills]).reshape(z.shape) < LIGHT_TEXT_BELOW)


def _click_trace(hover: list[str] | None, cells: int) -> go.Scatter:
    x, y = cell_xy(cells)
    return go.Scatter(x=x, y=y, mode="markers", marker={"size": 30, "opacity": CLICK_OPACITY, "color": "#fff"},
                        customdata=np.arange(cells), hovertext=hover, name="cells",
                        hoverinfo="text" if hover is not None else "skip")


def grid_figure(digits: np.ndarray, givens: np.ndarray, box: int, *, layer: np.ndarray | None = None,
                layer_name: str = "", colorscale: str = "Blues", zmin: float | None = None,
                zmax: float | None = None, zmid: float | None = None, hover: list[str] | None = None,
                selected: int | None = None, outline: np.ndarray | None = None, remasked: np.ndarray | None = None,
                errors: np.ndarray | None = None, candidates: np.ndarray | None = None, title: str = "",
                height: int = 520, digit_size: int | None = None, colorbar: bool = True,
                scale: str = "linear", clickable: bool = True, width: int | None = None) -> go.Figure:
    """A Sudoku-style grid.

    Args:
        digits: ``(N,)`` int, 0 for blank; givens: ``(N,)`` bool; box: box side (3 for 9x9).
        layer: ``(N,)`` float colour per cell (NaN: no colour), e.g. entropy or MI with a selected cell.
        hover: ``(N,)`` hover text per cell; selected: a cell to outline; outline: ``(N,)`` bool cells to
        outline in orange (unmasked at this step); remasked: ``(N,)`` bool cells outlined in purple;
        errors: ``(N,)`` bool digits drawn red; candidates: ``(N, V)`` marginals drawn as pencil marks.
        digit_size: font size of the digits (default by grid size; larger for a projector); colorbar: draw the
        layer's colour bar (off: the grid takes the whole width, a legend beside it explains the colours).
        scale: the layer's colours, ``linear``, ``log`` or ``percentile`` (see :func:`scaled`; a non-negative
        layer such as MI). clickable: lay the invisible click markers over the cells (off: a view that only
        shows, such as a decoding frame, draws faster; the hover is then on the layer's coloured cells).
        width: a fixed width in px, for a chart drawn at its own width (one that stretches to its column is
        drawn again once the column is measured).
    """
    cells = len(digits)
    n = _side(cells)
    digits, givens = np.asarray(digits), np.asarray(givens, bool)
    fig = go.Figure()
    if layer is not None:
        z, ticks = np.asarray(layer, float), None
        if scale != "linear" and zmid is None:
            z, zmin, zmax, ticks = scaled(z, scale, zmin, zmax)
            z = np.where(np.isnan(np.asarray(layer, float)), np.nan, z)  # uncoloured cells stay uncoloured
            layer_name = scale_title(layer_name, scale)
        on_layer = hover is not None and not clickable  # no markers to carry the hover: the layer does
        fig.add_trace(go.Heatmap(z=z.reshape(n, n), colorscale=colorscale, zmin=zmin, zmax=zmax, zmid=zmid,
                                 text=np.asarray(hover, object).reshape(n, n) if on_layer else None,
                                 hoverinfo="text" if on_layer else "skip", name=layer_name, showscale=colorbar,
                                 colorbar={"title": {"text": layer_name, "side": "right"}, "thickness": 14,
                                           **(ticks or {})}))
    if candidates is not None:
        dark = dark_fill(z, zmin, zmax, zmid, colorscale) if layer is not None else None
        fig.add_trace(_candidate_trace(np.asarray(candidates), digits == 0, n, box, height, dark))
    for trace in _grid_lines(n, box) + _digit_traces(digits, givens, errors, n, digit_size):
        fig.add_trace(trace)
    if clickable:
        fig.add_trace(_click_trace(hover, cells))
    shapes = []
    if outline is not None:
        shapes += _cell_boxes(np.asarray(outline, bool), n, CHOSEN_COLOR, 4)
    if remasked is not None:
        shapes += _cell_boxes(np.asarray(remasked, bool), n, REMASKED_COLOR, 3, "dot")
    if selected is not None:
        shapes += selected_shapes([_cell_box(selected, n)], 5)
    _square_layout(fig, n, title, height)
    fig.update_layout(shapes=shapes, width=width)
    return fig


def clicked_cell(selection: dict | None, cells: int) -> int | None:
    """The cell of the first clicked point of a grid figure's selection state, or None."""
    points = (selection or {}).get("points") or []
    for point in points:
        x, y = point.get("x"), point.get("y")
        if x is None or y is None:
            continue
        n = _side(cells)
        col, row = round(float(x)), round(float(y))
        if 0 <= col < n and 0 <= row < n:
            return row * n + col
    return None


def cell_order(cells: int, box: int, order: str) -> np.ndarray:
    """``(N,)`` permutation: ``"row"`` (row-major, the identity) or ``"box"`` (box by box, row-major inside)."""
    if order == "row":
        return np.arange(cells)
    if order != "box":
        raise ValueError(f"order must be 'row' or 'box', got {order!r}")
    n = _side(cells)
    rows, cols = np.arange(cells) // n, np.arange(cells) % n
    boxes = (rows // box) * box + cols // box
    return np.lexsort((cols, rows, boxes))


ZERO_SPAN = 1e-3  # nats: the colour range of an all-zero matrix, so it is drawn as zero, not saturated
SCALES = ("linear", "log", "percentile")
LOG_FLOOR = 1e-6  # nats: smaller values share the bottom colour of a log scale


def color_max(*arrays: np.ndarray) -> float:
    """The top of a colour range from 0 over ``arrays``: their largest finite value, or :data:`ZERO_SPAN` when
    that is not above 0 (an all-zero map: a solved grid, the 4x4 oracle's asymmetry)."""
    top = max((float(np.nanmax(a)) for a in arrays if np.size(a) and np.isfinite(a).any()), default=0.0)
    return top if top > 0 else ZERO_SPAN


def scaled(z: np.ndarray, scale: str, zmin: float | None, zmax: float | None):
    """``(z to draw, zmin, zmax, colour bar ticks or None)`` for a non-negative map under ``scale``:
    ``linear`` (as is, an all-zero map gets :data:`ZERO_SPAN`); ``log`` (log10 of max(z, 1e-6), ticks in
    nats, up to ``zmax`` when given, so maps shown side by side share it); ``percentile`` (each value's rank
    among the map's positive values, 0-100). Every heatmap and MI colour of the app goes through this, with
    ``widgets.scale_picker`` choosing ``scale``."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(SCALES)}, got {scale!r}")
    if scale == "linear":
        if zmax is None and (zmin is None or zmin == 0):
            zmax = color_max(z)
        return z, zmin, zmax, None
    if scale == "log":  # the top of the range a caller shares between maps (zmax), else this map's largest value
        top = np.log10(zmax if zmax is not None and zmax > 0 else color_max(z))
        low = min(np.log10(LOG_FLOOR), top - 1)
        powers = np.arange(np.ceil(low), np.floor(top) + 1)
        ticks = {"tickvals": powers.tolist(), "ticktext": [f"{10 ** p:g}" for p in powers]}
        return np.log10(np.maximum(np.nan_to_num(z), LOG_FLOOR)), low, top, ticks
    positive = np.sort(z[np.isfinite(z) & (z > 0)])
    rank = np.zeros_like(z, dtype=float)
    if positive.size:
        rank = np.where(z > 0, 100.0 * np.searchsorted(positive, z, side="right") / positive.size, 0.0)
    return rank, 0.0, 100.0, {"tickvals": [0, 25, 50, 75, 100], "ticktext": ["0th", "25th", "50th", "75th", "100th"]}


def scale_title(value_name: str, scale: str) -> str:
    """A colour bar's title under ``scale``: ``MI (nats)``, ``MI (nats), log scale`` or ``MI rank (percentile)``
    (a rank among the map's pairs is not in nats)."""
    if scale == "percentile":
        return f"{value_name.split(' (')[0]} rank (percentile)"
    return value_name if scale == "linear" else f"{value_name}, {scale} scale"


SVG_MARKERS = 2500  # click markers drawn as SVG at most; more are drawn with WebGL


def click_layer(names: list[str], index: np.ndarray, keep: np.ndarray | None = None,
                values: np.ndarray | None = None, value_name: str = "MI (nats)",
                also: tuple[str, np.ndarray] | None = None) -> go.Scatter | go.Scattergl:
    """One invisible marker per cell of a category heatmap: clicks on a heatmap return nothing in Streamlit,
    clicks on these return the pair (``customdata``: the two positions; ``hoverinfo="none"``, not ``"skip"``,
    which would drop the click events too). ``keep``: ``(k,)`` bool, the rows and
    columns worth a click (masked positions: a given one has no MI); fewer markers draw faster. ``values``:
    ``(k, k)`` the matrix as drawn, for the hover (the markers lie over the heatmap and take its hover).
    ``also``: ``(name, (k, k) matrix)`` a second value per pair for the hover (the exact MI beside an estimate).
    Up to :data:`SVG_MARKERS` markers (a 9x9 grid's 6,561 pairs at most, its masked ones in practice) are an SVG
    scatter: a WebGL one took headless Chromium ~250 ms more to start its context than 2,000 SVG markers take
    to draw; longer protein maps keep WebGL, which draws tens of thousands of markers at once."""
    k = len(names)
    rows, cols = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    rows, cols = rows.ravel(), cols.ravel()
    if keep is not None:
        keep = np.asarray(keep, bool)
        rows, cols = rows[keep[rows] & keep[cols]], cols[keep[rows] & keep[cols]]
    names = np.asarray(names)
    hover = None if values is None else [f"{names[r]} · {names[c]}<br>{value_name} {values[r, c]:.4g}"
                                         + ("" if also is None else f"<br>{also[0]} {also[1][r, c]:.4g}")
                                         for r, c in zip(rows, cols)]
    scatter = go.Scatter if len(rows) <= SVG_MARKERS else go.Scattergl
    return scatter(x=names[cols], y=names[rows], mode="markers", hovertext=hover,
                        marker={"size": 6, "opacity": CLICK_OPACITY, "color": "#fff"},
                        hoverinfo="none" if hover is None else "text",
                        customdata=np.stack([index[rows], index[cols]], 1), name="pairs", showlegend=False)


def clicked_pair(selection: dict | None) -> tuple[int, int] | None:
    """The ``(i, j)`` positions of the first clicked cell of a heatmap with a :func:`click_layer`, or None."""
    for point in (selection or {}).get("points") or []:
        data = point.get("customdata")
        if isinstance(data, dict):  # Streamlit passes a point's array customdata as {"0": i, "1": j}
            data = [data.get("0"), data.get("1")]
        if isinstance(data, (list, tuple)) and len(data) == 2 and None not in data:
            return int(data[0]), int(data[1])
    return None


def mi_heatmap(mi: np.ndarray, box: int, labels: list[str], *, order: str = "row", selected: int | None = None,
               zmin: float | None = 0.0, zmax: float | None = None, colorscale: str = "Viridis",
               zmid: float | None = None, title: str = "", value_name: str = "MI (nats)",
               height: int = 560, scale: str = "linear", clickable: bool | np.ndarray = False,
               also: tuple[str, np.ndarray] | None = None, narrow: bool = False) -> go.Figure:
    """An ``(N, N)`` matrix as a heatmap, cells in ``order`` with box lines; the selected cell's row and
    column are outlined. ``scale``: ``linear``, ``log`` or ``percentile`` colours (see :func:`scaled`; the
    hover always reads the value itself); ``clickable``: lay a :func:`click_layer` over it (an ``(N,)`` bool
    array: over the pairs of those cells only); ``also``: ``(name, (N, N) matrix)`` shown in the click
    layer's hover beside the value (the exact MI on the estimated map). ``narrow``: a phone's chart, the
    matrix as wide as the chart (its colour bar below, its groups named on the left only)."""
    cells = mi.shape[0]
    n = _side(cells)
    perm = cell_order(cells, box, order)
    raw = np.asarray(mi, float)[np.ix_(perm, perm)]
    z, zmin, zmax, ticks = scaled(raw, scale, zmin, zmax) if zmid is None else (raw, zmin, zmax, None)
    names = np.asarray(labels)[perm].tolist()
    # category axes named by cell: the hover reads the pair from them; the value is z itself, or the raw one
    # (customdata) under a log or percentile scale; shapes and ticks address categories by 0-based position
    value = "%{z:.4g}" if z is raw else "%{customdata:.4g}"
    colorbar = {"title": {"text": scale_title(value_name, scale), "side": "right"},
                "thickness": 14, **(ticks or {})}
    if narrow:
        colorbar = phone_colorbar(colorbar)
    fig = go.Figure(go.Heatmap(z=z, x=names, y=names, colorscale=colorscale, zmin=zmin, zmax=zmax, zmid=zmid,
                               name=value_name, customdata=None if z is raw else raw,
                               hovertemplate="%{y} · %{x}<br>" + value_name + " " + value + "<extra></extra>",
                               colorbar=colorbar))
    if clickable is not False:
        fig.add_trace(click_layer(names, perm, None if clickable is True else np.asarray(clickable, bool)[perm],
                                  raw, value_name,
                                  None if also is None else (also[0], np.asarray(also[1], float)[np.ix_(perm, perm)])))
    shapes = []
    for k in range(0, cells + 1, n):
        line = {"color": "#222" if k % (n * box) == 0 else "#888", "width": 2 if k % (n * box) == 0 else 0.6}
        shapes.append({"type": "line", "x0": k - 0.5, "x1": k - 0.5, "y0": -0.5, "y1": cells - 0.5, "line": line})
        shapes.append({"type": "line", "y0": k - 0.5, "y1": k - 0.5, "x0": -0.5, "x1": cells - 0.5, "line": line})
    if selected is not None:
        pos = int(np.flatnonzero(perm == selected)[0])
        shapes += selected_shapes([{"x0": -0.5, "x1": cells - 0.5, "y0": pos - 0.5, "y1": pos + 0.5},
                                   {"y0": -0.5, "y1": cells - 0.5, "x0": pos - 0.5, "x1": pos + 0.5}], 2)
    group = "row" if order == "row" else "box"
    ticks = np.arange(0, cells, n)
    axis = {"tickvals": (ticks + (n - 1) / 2).tolist(), "ticktext": [f"{group} {k // n + 1}" for k in ticks],
            "automargin": True, "showgrid": False, "zeroline": False, "range": [-0.5, cells - 0.5],
            "constrain": "domain"}  # both axes shrink to the square: the tick labels stay next to the matrix
    fig.update_layout(title={"text": title, "x": 0.02}, height=height, shapes=shapes, font=FONT,
                      margin={"l": 10, "r": 10, "t": 50, "b": PHONE_COLORBAR_ROOM if narrow else 10},
                      plot_bgcolor="white", showlegend=False,
                      # x labels upright always: plotly's own choice, made before the square shrinks the axis,
                      # left them level and running together ("row 1row 2") at 1024 px
                      xaxis=dict(axis, tickangle=-90, showticklabels=not narrow),
                      yaxis=dict(axis, autorange=False, range=[cells - 0.5, -0.5], scaleanchor="x"),
                      clickmode="event+select", dragmode="zoom")
    return fig


def pair_scatter(pred: np.ndarray, exact: np.ndarray, masked: np.ndarray, labels: list[str], *,
                 selected: tuple[int, int] | None = None, title: str = "Estimated against exact, per pair",
                 height: int = 420) -> go.Figure:
    """Every masked pair ``i < j`` as a point ``(exact MI, estimated MI)``, with the diagonal where they agree;
    the hover names the pair and both values, a click selects it (``customdata``: ``(i, j)``, read by
    :func:`clicked_pair`); ``selected`` is ringed."""
    masked = np.asarray(masked, bool)
    iu, ju = np.triu_indices(len(masked), k=1)
    keep = masked[iu] & masked[ju]
    iu, ju = iu[keep], ju[keep]
    x, y = np.asarray(exact, float)[iu, ju], np.asarray(pred, float)[iu, ju]
    top = float(max(x.max(initial=0.0), y.max(initial=0.0))) or ZERO_SPAN
    scatter = go.Scatter if len(iu) <= SVG_MARKERS else go.Scattergl
    fig = go.Figure([
        go.Scatter(x=[0, top], y=[0, top], mode="lines", line={"color": "#999", "dash": "dash", "width": 1},
                   hoverinfo="skip", name="estimate = exact"),
        scatter(x=x, y=y, mode="markers", name="pairs", customdata=np.stack([iu, ju], 1),
                marker={"size": 6, "color": RULE_COLOR, "opacity": 0.6},
                hovertext=[f"{labels[i]} · {labels[j]}<br>exact {a:.4g}<br>estimated {b:.4g}"
                           for i, j, a, b in zip(iu, ju, x, y)], hoverinfo="text")])
    if selected is not None:
        i, j = sorted(selected)
        fig.add_trace(go.Scatter(x=[exact[i, j]], y=[pred[i, j]], mode="markers", hoverinfo="skip",
                                 name=f"{labels[i]} · {labels[j]}",
                                 marker={"size": 16, "color": "rgba(0,0,0,0)",
                                         "line": {"color": SELECTED_COLOR, "width": 3}}))
    fig.update_layout(title={"text": title, "x": 0.02}, height=height, font=FONT, template="plotly_white",
                      xaxis_title="exact MI (nats)", yaxis_title="estimated MI (nats)", showlegend=False,
                      margin={"l": 10, "r": 10, "t": 50, "b": 10}, clickmode="event+select", dragmode="zoom",
                      xaxis={"automargin": True}, yaxis={"automargin": True})
    return fig


def _curve(x0: float, y0: float, x1: float, y1: float, bend: float = 0.18, steps: int = 12):
    """Points of a quadratic Bezier from (x0, y0) to (x1, y1) bent sideways by ``bend`` x its length,
    so edges along one row or column do not hide each other."""
    mx, my = (x0 + x1) / 2, (y0 + y1) / 2
    dx, dy = x1 - x0, y1 - y0
    cx, cy = mx - dy * bend, my + dx * bend
    t = np.linspace(0, 1, steps)
    return (1 - t) ** 2 * x0 + 2 * (1 - t) * t * cx + t**2 * x1, (1 - t) ** 2 * y0 + 2 * (1 - t) * t * cy + t**2 * y1


NODE_SIZE_LEGEND = "circle size: a blank's MI summed over its edges"
SELECTED_EDGES = "edges of the selected cell"


def _selected_edges(edges, selected: int, x, y, top: float, labels: list[str]) -> list[go.Scatter]:
    """The selected cell's edges in the selection colour (one legend entry) and a ring round the cell."""
    xs, ys = [], []
    for i, j, _, _ in edges:
        if selected in (i, j):
            cx, cy = _curve(x[i], y[i], x[j], y[j])
            xs += [*cx, None]
            ys += [*cy, None]
    count = sum(selected in (i, j) for i, j, _, _ in edges)
    return [go.Scatter(x=xs or [None], y=ys or [None], mode="lines", hoverinfo="skip",
                       name=f"{SELECTED_EDGES} ({labels[selected]}: {count})",
                       line={"color": SELECTED_COLOR, "width": 3.5}),
            go.Scatter(x=[x[selected]], y=[y[selected]], mode="markers", hoverinfo="skip", showlegend=False,
                       marker={"size": 34, "color": "rgba(0,0,0,0)", "line": {"color": SELECTED_COLOR, "width": 4}})]


def dependency_figure(edges: list[tuple[int, int, float, bool]], digits: np.ndarray, givens: np.ndarray, box: int,
                      labels: list[str], *, strength: np.ndarray | None = None, title: str = "",
                      height: int = 520, selected: int | None = None) -> go.Figure:
    """The MI dependency graph on the grid: ``edges`` ``(i, j, mi, is_rule)``; width grows with MI; rule
    edges (same row, column or box) solid blue, other pairs dashed red; blank cells sized by ``strength``
    ``(N,)`` (e.g. weighted degree); the ``selected`` cell ringed and its edges drawn over the others in the
    selection colour, as the heatmap outlines its row and column."""
    cells = len(digits)
    n = _side(cells)
    x, y = cell_xy(cells)
    fig = go.Figure(_grid_lines(n, box))
    top = max((w for _, _, w, _ in edges), default=0.0) or 1.0
    for rule, color, dash, name in ((True, RULE_COLOR, "solid", "same row, column or box"),
                                    (False, OTHER_COLOR, "dash", "no shared rule")):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=name,  # legend entry only
                                 line={"color": color, "width": 3, "dash": dash}))
        for level, width in enumerate((1.2, 2.4, 4.0, 6.0)):
            xs, ys = [], []
            for i, j, w, r in edges:
                if r == rule and min(int(4 * w / top), 3) == level:
                    cx, cy = _curve(x[i], y[i], x[j], y[j])
                    xs += [*cx, None]
                    ys += [*cy, None]
            if xs:
                fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                                         line={"color": color, "width": width, "dash": dash}, opacity=0.75))
    if edges:
        mids = [_curve(x[i], y[i], x[j], y[j]) for i, j, _, _ in edges]
        fig.add_trace(go.Scatter(x=[m[0][6] for m in mids], y=[m[1][6] for m in mids], mode="markers",
                                 marker={"size": 7, "color": [RULE_COLOR if r else OTHER_COLOR for *_, r in edges]},
                                 hovertext=[f"{labels[i]} · {labels[j]}: {w:.4g} nats ({'rule' if r else 'no rule'})"
                                            for i, j, w, r in edges], hoverinfo="text", showlegend=False))
    blank = ~np.asarray(givens, bool)
    s = np.zeros(cells) if strength is None else np.asarray(strength, float)
    size = 8 + 22 * s / (s.max() or 1.0)
    fig.add_trace(go.Scatter(x=x[blank], y=y[blank], mode="markers", marker={"size": size[blank], "color": "#fff",
                             "line": {"color": "#333", "width": 1.5}},
                             hovertext=[f"{labels[c]}: MI over its edges {s[c]:.3g} nats" for c in np.flatnonzero(blank)],
                             hoverinfo="text", showlegend=False))
    if strength is not None:  # the legend says what a circle's size means
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=NODE_SIZE_LEGEND,
                                 marker={"size": 14, "color": "#fff", "line": {"color": "#333", "width": 1.5}}))
    if selected is not None:
        fig.add_traces(_selected_edges(edges, selected, x, y, top, labels))
    given = np.asarray(givens, bool)
    fig.add_trace(go.Scatter(x=x[given], y=y[given], text=np.asarray(digits)[given].astype(str), mode="text",
                             textfont={"color": MUTED_COLOR, "size": 18, "family": DIGIT_FONT}, hoverinfo="skip",
                             showlegend=False))
    _square_layout(fig, n, title, height)
    # the legend hangs below the grid: anchored at its bottom, its four rows grew up over the grid's last rows
    fig.update_layout(showlegend=True, legend={"orientation": "h", "yanchor": "top", "y": -0.01, "x": 0})
    return fig



def cell_hover(labels: list[str], digits: np.ndarray, givens: np.ndarray, entropy: np.ndarray | None = None,
               marginals: np.ndarray | None = None, extra: dict[str, np.ndarray] | None = None,
               top: int = 4) -> list[str]:
    """Hover text per cell: its label, given/filled digit or the top marginals and entropy, and ``extra``
    named values (e.g. ``{"MI with r1c1": mi_row}``; NaN where a value does not apply)."""
    out = []
    for c, label in enumerate(labels):
        parts = [f"<b>{label}</b>"]
        if givens[c]:
            parts.append(f"given {int(digits[c])}")
        elif digits[c] > 0:
            parts.append(f"filled {int(digits[c])}")
        if not givens[c] and marginals is not None:
            order = np.argsort(-marginals[c])[:top]
            parts.append("p: " + ", ".join(f"{v + 1}: {marginals[c, v]:.2f}" for v in order))
        if not givens[c] and entropy is not None:
            parts.append(f"H = {entropy[c]:.3f} nats")
        for name, values in (extra or {}).items():
            if not np.isnan(values[c]):  # NaN: the value does not apply to this cell
                parts.append(f"{name}: {values[c]:.4g}")
        out.append("<br>".join(parts))
    return out
