"""The CDRs of an antibody chain drawn on sequence figures: a coloured band with its name (``H3``) along the
top of the plot over each CDR's residues, and a light span (or, on the L x L heatmap, the CDR's diagonal block
outlined) inside it. No streamlit, no torch.

The CDRs come from the residue labels the app draws with (:meth:`mi_lens_app.domains.Puzzle.labels`): an
antibody's CDR residues are labelled ``W99·H3`` (Kabat CDRs by sequence rules; AntiBERTy: Ruffolo, Gray and
Sulam 2021). Labels without the mark (any other protein) draw nothing.
"""

from __future__ import annotations

import plotly.graph_objects as go

CDR_MARK = "·"
COLORS = {"1": (230, 128, 58), "2": (46, 160, 67), "3": (190, 60, 160)}  # CDR1, CDR2, CDR3 of either chain
BAND = (1.0, 1.035)  # paper y of the band above the plot
NAME_SHADE = 0.7  # the names in a darker shade of their band: CDR1's orange was 2.8:1 on white, CDR2's green 3.4:1
NAME_SIZE = 14  # px: 12-px names were under a projector's 14


def cdr_spans(labels: list[str]) -> list[tuple[str, int, int]]:
    """``(name, first, end)`` of each CDR in ``labels`` (``H3``; 0-based, ``end`` exclusive), in order."""
    spans: list[tuple[str, int, int]] = []
    for i, label in enumerate(labels):
        name = label.rpartition(CDR_MARK)[2] if CDR_MARK in label else ""
        if name and spans and spans[-1][0] == name and spans[-1][2] == i:
            spans[-1] = (name, spans[-1][1], i + 1)
        elif name:
            spans.append((name, i, i + 1))
    return spans


def color(name: str, alpha: float, shade: float = 1.0) -> str:
    """The CDR's colour (``shade`` < 1: darker), with opacity ``alpha``."""
    r, g, b = (round(v * shade) for v in COLORS.get(name[-1:], (120, 120, 120)))
    return f"rgba({r},{g},{b},{alpha})"


def add_cdr_marks(fig: go.Figure, spans: list[tuple[str, int, int]], *, lo: int = 0, hi: int | None = None,
                  shift: float = 0.0, block: bool = False, span: bool = True, xref: str = "x",
                  yref: str = "y", square: bool = False) -> go.Figure:
    """Mark ``spans`` (from :func:`cdr_spans`) on ``fig``, whose x axis puts residue ``k`` at ``k + shift``
    (a windowed categorical axis: ``shift = -lo``; 1-based residue numbers: ``shift = 1``). Only the part in
    the window ``[lo, hi)`` is drawn. ``block``: outline the CDR's square on the diagonal of a heatmap
    (``xref``/``yref`` its axes); ``span``: shade its columns over the whole plot height. ``square``: the plot is
    kept square inside the figure (``scaleanchor``), so the band and shade follow the y axis's own extent, not the
    figure's (the band floated 110 px above a square heatmap and the shade ran past its x axis)."""
    vertical = f"{yref} domain" if square else "paper"
    drawn = False
    for name, a, b in spans:
        a, b = max(a, lo), b if hi is None else min(b, hi)
        if a >= b:
            continue
        x0, x1 = a + shift - 0.5, b - 1 + shift + 0.5
        tag, drawn = f"CDR-{name}", True
        fig.add_shape(type="rect", xref=xref, yref=vertical, x0=x0, x1=x1, y0=BAND[0], y1=BAND[1], name=tag,
                      fillcolor=color(name, 0.85), line={"width": 0}, layer="above")
        fig.add_annotation(x=(x0 + x1) / 2, xref=xref, y=BAND[1], yref=vertical, yanchor="bottom", showarrow=False,
                           text=name, font={"size": NAME_SIZE, "color": color(name, 1.0, NAME_SHADE)}, name=tag,
                           hovertext=f"CDR-{name} (Kabat), residues {a + 1}-{b}")
        if span:
            fig.add_shape(type="rect", xref=xref, yref=vertical, x0=x0, x1=x1, y0=0, y1=1, name=tag,
                          fillcolor=color(name, 0.12), line={"width": 0}, layer="below")
        if block:
            fig.add_shape(type="rect", xref=xref, yref=yref, x0=x0, x1=x1, y0=x0, y1=x1, name=tag,
                          line={"color": color(name, 0.9), "width": 1.5, "dash": "dot"}, layer="above")
    if drawn:  # room for the bands' names between the plot and the title
        fig.update_layout(margin={"t": max(72, (fig.layout.margin.t or 0) + 24, title_room_over_bands(fig))})
    return fig


def title_room_over_bands(fig: go.Figure) -> int:
    """The top margin that keeps a title of several lines above the bands' names: plotly centres the title's
    first line in the margin and adds each further line below it (~27 px), so a line needs 54 px of margin. The
    margin of the title alone plus its room again left 52 px of blank over a three-line title (226 px, where 178
    hold it; measured in Chromium) and 106 over four."""
    return 70 + 54 * str(fig.layout.title.text or "").count("<br>")

