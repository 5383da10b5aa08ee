"""Benchmarks: the quality-versus-passes frontier from the shipped sweep results (Sudoku accuracy, protein
dipeptide JSD), per set and sampler."""

import pandas as pd
import streamlit as st

from mi_lens_app import benchmarks, exports, figures, support, texts, widgets


def main():
    widgets.page("Benchmarks", ":material/monitoring:")
    found = support.bench_rows()
    if not found.rows:
        st.info("No benchmark results yet: `python -m mi_core sweep sudoku --puzzles PATH --json "
                "assets/benchmarks/sweep_<set>.json` writes them, and this page plots them.")
        st.markdown(texts.BENCH_PAGE)
        return
    sets = found.sets
    chosen = st.segmented_control("Puzzle set", sets, key="set", bind="query-params", default=sets[0]) or sets[0]
    rows = [r for r in found.rows if r["set"] == chosen]
    samplers = list(dict.fromkeys(r["sampler"] for r in rows))
    shown = st.multiselect("Samplers", samplers, default=samplers, key="samplers")
    rows = [r for r in rows if r["sampler"] in shown]
    left, right = st.columns([3, 1])
    ns = sorted({r["n"] for r in rows}) or [0]
    n = f"{ns[0]}" if len(ns) == 1 else f"{ns[0]}-{ns[-1]}"
    metric = benchmarks.metric_of(rows) if rows else benchmarks.METRICS[0]
    fig = figures.frontier_figure(rows, f"{metric.name} vs passes: {chosen} (n={n})", metric) if rows else None
    with left:
        if fig is not None:
            widgets.chart(fig, key="frontier")
    with right:
        st.markdown(texts.BENCH_PAGE if metric.higher else texts.PROTEIN_BENCH_PAGE)
        front = benchmarks.pareto(rows, metric)
        if front:
            st.markdown("**On the frontier:**  \n" + "  \n".join(
                f"{r['label']}: {metric.scale * r[metric.key]:.4g}{metric.unit} in {r['mean_passes']:.1f} passes"
                for r in front))
    column = metric.title.split(" (")[0].replace(" to the reference", "") + (" (%)" if metric.unit == "%" else "")
    table = pd.DataFrame([{"sampler": r["sampler"], "params": r["label"].split(" (", 1)[1][:-1], "n": r["n"],
                           column: round(metric.scale * r[metric.key], 4 if metric.scale == 1 else 1),
                           "mean passes": round(r["mean_passes"], 2),
                           **({"cell accuracy (%)": round(100 * r["cell_accuracy"], 1)}
                              if "cell_accuracy" in r else {})}
                          for r in rows])
    st.dataframe(table, hide_index=True)
    st.caption("Read from " + ", ".join(f"`{f}`" for f in found.files) + ".")
    if fig is not None:
        st.download_button("Frontier as HTML", lambda: exports.figure_html(fig), f"frontier_{chosen}.html",
                           "text/html", on_click="ignore")


main()
widgets.link_note()
