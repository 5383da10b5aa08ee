"""The Benchmarks page's charts: quality against passes with its Pareto front, and grouped bars."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

from mi_lens_app.benchmarks import metric_of, pareto
from mi_lens_app.figures import FONT
from mi_lens_app.screen import extra_title_room, wrap_title

# a marker shape per series of the frontier chart, so no series is told by its colour alone (with deuteranopia
# plotly's red top_prob, pink mi and orange learned_mi circles were one colour); open shapes past these
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "triangle-down", "x", "cross", "star", "pentagon",
           "hexagon", "triangle-left", "triangle-right", "hourglass", "bowtie")


def series_symbol(k: int) -> str:
    """The marker shape of the ``k``-th series (0-based): each of :data:`SYMBOLS`, then their open forms."""
    return SYMBOLS[k % len(SYMBOLS)] + ("-open" if k // len(SYMBOLS) % 2 else "")


def frontier_figure(rows: list[dict], title: str = "", metric=None) -> go.Figure:
    """Quality against mean passes (``rows``: dicts with ``sampler``, ``label``, ``mean_passes`` and the
    metric's key; ``base``, where a row's series is a variant of a sampler, such as decoding again: the variant
    takes the sampler's colour and a shape of its own): each sampler's settings as points (its settings vary in several knobs, so joining them
    would draw a zig-zag through unrelated ones), and the Pareto front over all of them as the one line.
    ``metric``: a :class:`~mi_lens_app.benchmarks.Metric` (default: the one the rows carry)."""
    metric = metric or metric_of(rows)
    fig = go.Figure()
    bases = list(dict.fromkeys(r.get("base", r["sampler"]) for r in rows))
    palette = qualitative.Plotly if len(bases) <= len(qualitative.Plotly) else qualitative.Dark24
    colour = {b: palette[i % len(palette)] for i, b in enumerate(bases)}
    for k, name in enumerate(dict.fromkeys(r["sampler"] for r in rows)):
        pts = sorted((r for r in rows if r["sampler"] == name), key=lambda r: r["mean_passes"])
        base = pts[0].get("base", name)  # a sampler's variants (views, decoding again) share its colour
        marker = {"size": 10, "color": colour[base], "symbol": series_symbol(k)}
        fig.add_trace(go.Scatter(x=[r["mean_passes"] for r in pts], y=[metric.scale * r[metric.key] for r in pts],
                                 mode="markers", name=name, text=[r["label"] for r in pts], marker=marker,
                                 hovertemplate=("%{text}<br>%{x:.1f} passes<br>%{y:.4g}" + metric.unit
                                                + f"<extra>{name}</extra>")))
    front = pareto(rows, metric)
    if front:
        fig.add_trace(go.Scatter(x=[r["mean_passes"] for r in front], y=[metric.scale * r[metric.key] for r in front],
                                 mode="lines", name="frontier", line={"color": "#444", "dash": "dash", "width": 1.5},
                                 hoverinfo="skip"))
    passes = [r["mean_passes"] for r in rows if r["mean_passes"] > 0]
    ticks = log_ticks(min(passes), max(passes)) if passes else {}
    title = wrap_title(title)  # a long set name on several lines: at 1024 px one line was cut
    # the legend in rows below the plot, the margins as wide as the labels need: beside the plot, with plotly's
    # 80-px margins, it left the points 111 px of a phone's 342-px chart
    fig.update_layout(title={"text": title, "x": 0.02}, xaxis_title="mean forward passes per input (log)",
                      # on two lines: upright on one, "dipeptide JSD to the reference (lower is better)" ran up over
                      # the set's name under a title of three lines (the plot's height left, at 1024 px)
                      yaxis_title=metric.title.replace(" (", "<br>(") if len(metric.title) > 30 else metric.title,
                      xaxis_type="log", template="plotly_white", font=FONT, height=620,
                      xaxis=ticks,
                      margin={"l": 10, "r": 20, "t": 50 + extra_title_room(title), "b": 10},
                      legend={"orientation": "h", "yanchor": "top", "y": -0.3, "x": 0})
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    values = [metric.scale * r[metric.key] for r in rows]
    if metric.unit != "%" and values and min(values) > 0 and max(values) > 20 * min(values):
        # a distance spanning decades (mask_predict's dipeptide JSD 0.71 beside the others' 0.006): on a linear
        # axis every other sampler lay on one line at 0
        fig.update_yaxes(type="log", title_text=fig.layout.yaxis.title.text + " (log)",
                         **log_ticks(min(values), max(values)))  # 1, 2, 5 a decade: plotly's wrote 2..9 in each
    return fig


def log_ticks(lo: float, hi: float) -> dict:
    """Tick values and texts of a log axis over ``[lo, hi]`` at 1, 2 and 5 times a power of ten (plotly's own
    ticks on a short span label 2..9 between decades with single digits: "... 9 10 2 3 ..."); on a span
    narrower than a step (13.1 to 13.2 passes) also the axis range, out to the ticks on either side, which
    plotly's own range would leave out."""
    lo, hi = max(float(lo), 1e-9), max(float(hi), float(lo), 1e-9)
    values = [m * 10.0 ** e for e in range(int(np.floor(np.log10(lo))) - 1, int(np.ceil(np.log10(hi))) + 2)
              for m in (1, 2, 5)]
    inside = [v for v in values if lo / 1.6 <= v <= hi * 1.6]
    if len(inside) < 3:  # a narrow span: every whole step between
        inside = sorted({*inside, *(m * 10.0 ** e for v in inside for e in [int(np.floor(np.log10(v)))]
                                    for m in range(1, 10) if lo / 1.6 <= m * 10.0 ** e <= hi * 1.6)})
    axis = {"tickmode": "array", "tickvals": inside, "ticktext": [f"{v:,.4g}" for v in inside]}
    if sum(lo <= v <= hi for v in inside) < 2:  # points within a tick step: widen the axis to the ticks around
        below = max((v for v in inside if v <= lo), default=lo)
        above = min((v for v in inside if v >= hi), default=hi)
        axis["range"] = [float(np.log10(below / 1.05)), float(np.log10(above * 1.05))]
    return axis


def bar_figure(labels: list[str], series: dict[str, np.ndarray], title: str = "", yaxis: str = "",
               height: int | None = None) -> go.Figure:
    """Grouped bars: one bar group per label, one colour per series. Up to 12 labels stand upright; more (the 20
    amino acids) lie down, a 14-px label per row, since upright they touch in a third of a 1280-px page."""
    upright = len(labels) <= 12
    bars = [go.Bar(x=labels, y=np.asarray(v, float), name=name) if upright
            else go.Bar(y=labels, x=np.asarray(v, float), name=name, orientation="h") for name, v in series.items()]
    labels_axis = {"automargin": True, "dtick": 1, "tickfont": {"size": 14}}
    value_axis = {"automargin": True, "title": yaxis}
    fig = go.Figure(bars)
    fig.update_layout(title=title, barmode="group", template="plotly_white", font=FONT,
                      height=height or (300 if upright else 90 + 20 * len(labels) * len(series)),
                      margin={"l": 10, "r": 10, "t": 50, "b": 10},
                      xaxis={**labels_axis, "tickangle": 0} if upright else value_axis,
                      yaxis=value_axis if upright else {**labels_axis, "autorange": "reversed"})
    return fig
