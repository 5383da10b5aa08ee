"""Sequence strips: a decode's steps as rows of residue letters, the marginals under the entropy, and profiles along
the sequence (a clamp's effect, the order selector's P(unmask)); each shows a window of positions, as the maps do."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from mi_core.options import plural
from mi_lens_app.cdr_marks import add_cdr_marks, cdr_spans
from mi_lens_app.figures import CHOSEN_COLOR, ERROR_COLOR, dark_fill, selected_shapes
from mi_lens_app.protein_figures import (
    LETTER_PX,
    MASKED_COLOR,
    PLAIN_LABEL,
    SWIPE,
    WINDOW,
    WRAP_AT,
    sequence_layout,
    window,
    window_note,
)

MAX_STRIP_ROWS = 60  # decoding steps shown in the strip (the most recent ones)


# px of a decode strip's plot on a 1024-px screen: with the sidebar open, and the page's whole width (``wide``) less
# the step axis and the colour bar
STRIP_PLOT_PX = {False: 650, True: 820}


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
    sequence_layout(fig, window_note(title, nouns[0], lo, hi, len(labels)) + key, height, wide=True)
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
    sequence_layout(fig, text, height or (96 + 24 * bool(regions) if top else 150) + rows_px, wide=True, **top,
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
    sequence_layout(fig, window_note(title, noun, lo, hi, len(labels)), height, wide=True, shapes=shapes, barmode="group",
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
    sequence_layout(fig, window_note(title, noun, lo, hi, len(before)), height, wide=True, shapes=shapes, bargap=0.15,
            xaxis={"title": noun, "range": [lo + 0.5, hi + 0.5], "showgrid": False, "zeroline": False},
            yaxis={"title": "P(unmask)", "range": [0, 1.02]})
    return add_cdr_marks(fig, cdr_spans(labels), lo=lo, hi=hi, shift=1)
