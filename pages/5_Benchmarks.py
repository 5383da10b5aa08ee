"""Benchmarks: the quality-versus-passes frontier from the shipped sweep results (Sudoku accuracy, protein
dipeptide JSD), per set and sampler."""

import pandas as pd
import streamlit as st

from mi_lens_app import benchmarks, charts, exports, frame, links, support, texts, widgets


def opening_set(found: benchmarks.BenchRows, on_default: set[str]) -> tuple[str, str]:
    """The set the page opens on, and what the caption says of it. A sequence view's link (its domain carried here)
    opens on that domain's own sweep (an antibody link opened on a protein set though an antibody sweep was listed),
    else on a set scored like a sequence domain's, not on Sudoku's."""
    sets = found.sets
    domain = widgets.domain_by_short(str(st.query_params.get("domain", "")))
    sequence = domain is not None and domain.layout == "sequence" and texts.speaks_protein(domain)
    plugin = domain is not None and domain.layout == "sequence" and not sequence  # a domain of its own alphabet
    own = benchmarks.sets_of_domain(found.rows, sets, domain) if sequence or plugin else []
    kind = benchmarks.sets_of_kind(found.rows, sets, sequence)
    opening = benchmarks.opening_set(found.rows, own or kind or sets, on_default)
    if plugin and not own:
        return opening, (f" No results for {domain.label} are among these sets: `python -m mi_core sweep "
                         f"{domain.cli_name} --puzzles PATH --json {benchmarks.bench_dir_name()}/sweep_<set>.json` "
                         "writes them.")
    if plugin:
        return opening, f" Opened on a sweep of the {domain.short} domain."
    if not sequence or not (own or kind):
        return opening, ""
    if opening in own and opening not in kind:  # not a protein set: the domain's own (an antibody in-filling)
        return opening, f" Opened on a sweep of the {domain.short} domain."
    if domain.short == "protein":  # its own kind of set ("for the protein domain; antibody ... are in" confused it)
        return opening, " Opened on a protein set."
    return opening, (f" Opened on a protein set for the {domain.short} domain; {domain.short} in-filling results are in "
                     "BENCHMARKS.md.")


def in_folder(text: str) -> str:
    """``text`` naming the folder the page reads (``MI_LENS_BENCHMARKS``) where it says ``assets/benchmarks``."""
    return text.replace("assets/benchmarks", benchmarks.bench_dir_name())


def show_table(rows: list[dict], metric, several_n: bool, seeds: list, noun: str = "cell") -> None:
    """The set's rows as a table: sampler, settings, the metric with its spread or standard error, passes, and the
    accuracy over masked positions (each a ``noun``) where the rows have it."""
    column = metric.title.split(" (")[0].replace(" to the reference", "") + (" (%)" if metric.unit == "%" else "")
    # n is a column where it varies; else the chart's title gives it, and the columns to its right fit at 1024 px
    table = pd.DataFrame([{"sampler": r["sampler"], "params": r["label"].split(" (", 1)[1][:-1],
                           **({"n": r["n"]} if several_n else {}),
                           column: round(metric.scale * r[metric.key], 4 if metric.scale == 1 else 1),
                           **({"± sd": round(metric.scale * r[f"{metric.key}_sd"], 4) if "seeds" in r else None}
                              if seeds else {}),
                           **({"± SE": round(se, 1) if (se := benchmarks.binomial_se(r, metric)) is not None
                               else None} if metric.binomial else {}),
                           **({"seeds": r["seeds"]} if len(seeds) > 1 else {}),  # else the caption says it
                           "mean passes": round(r["mean_passes"], 2),
                           **({f"{noun} accuracy (%)": round(100 * r["cell_accuracy"], 1)}
                              if "cell_accuracy" in r else {})}
                          for r in rows])
    # the settings column wide enough for its longest text at 1024 px (it was cut: "mode=paced, threshol…")
    st.dataframe(table, hide_index=True, column_config={"params": st.column_config.TextColumn(width=250),
                                                        "n": st.column_config.NumberColumn(width=50),
                                                        column: st.column_config.NumberColumn(width=len(column) * 8 + 16),
                                                        "mean passes": st.column_config.NumberColumn(width=100),
                                                        "seeds": st.column_config.NumberColumn(width="small"),
                                                        "± sd": st.column_config.NumberColumn(
                                                            width="small", help="the spread over seeds"),
                                                        "± SE": st.column_config.NumberColumn(
                                                            width=60, help="one binomial standard error, "
                                                            "sqrt(p (1 - p) / n), in points")})


def main():
    frame.page("Benchmarks")
    found = support.bench_rows()
    if not found.rows:
        st.info("No benchmark results yet: `python -m mi_core sweep sudoku --puzzles PATH --json "
                f"{benchmarks.bench_dir_name()}/sweep_<set>.json` writes them, and this page plots them.")
        st.markdown(in_folder(texts.BENCH_PAGE))
        return
    sets = found.sets
    on_default = benchmarks.sets_on_model(found.rows, support.default_sudoku_sha())
    opening, note = opening_set(found, on_default)

    def title(name: str) -> str:
        return benchmarks.set_title(name) + (" · the app's model" if name in on_default else "")

    links.formatter("set", title)
    links.accept_id("set", sets)
    chosen = st.selectbox("Benchmark set", sets, index=sets.index(opening), key="set", bind="query-params",
                          format_func=title, help=f"the sweeps under {benchmarks.bench_dir_name()}, of every domain; it opens on "
                          "the chosen domain's own set where there is one, else on a set with MI-guided and "
                          "learned-order samplers measured on the Sudoku model the app runs") or opening
    st.caption(f"Set id `{chosen}`." + (note if chosen == opening else ""))  # a link that named its set: not opened
    rows = [r for r in found.rows if r["set"] == chosen]
    samplers = list(dict.fromkeys(r["sampler"] for r in rows))
    # one filter per set: a filter of another set (its samplers) emptied this one's plot without a word
    shown = st.multiselect("Samplers", samplers, default=samplers, key=f"samplers_{chosen}")
    if not shown:
        st.info("No sampler selected: pick at least one above to plot this set.")
    rows = [r for r in rows if r["sampler"] in shown]
    left, right = st.columns([3, 1])
    ns = sorted({r["n"] for r in rows}) or [0]
    n = f"{ns[0]}" if len(ns) == 1 else f"{ns[0]}-{ns[-1]}"
    seeds = sorted({r["seeds"] for r in rows if "seeds" in r})
    if seeds:
        n += f" per seed, {'-'.join(map(str, dict.fromkeys([seeds[0], seeds[-1]])))} seeds"
    owner = benchmarks.set_domain(rows)  # a domain's set speaks of its states and positions, not of puzzles
    metric = benchmarks.worded_metric(benchmarks.metric_of(rows) if rows else benchmarks.METRICS[0], owner)
    # the set in small type below: as one title, wrapped for a phone, it took four large lines on a 1024-px projector
    fig = (charts.frontier_figure(rows, f"{metric.name} vs passes (n={n})<br><sup>{title(chosen)}</sup>", metric)
           if rows else None)
    with left:
        if fig is not None:
            widgets.chart(fig, key="frontier")
    with right:
        st.markdown(in_folder(texts.bench_page(metric.key, owner)))
        front = benchmarks.pareto(rows, metric)
        if front:
            st.markdown("**On the frontier:**  \n" + "  \n".join(
                f"{r['label']}: {metric.scale * r[metric.key]:.4g}{metric.unit} in {r['mean_passes']:.1f} passes"
                for r in front))
        if seeds:
            st.caption(f"Each point is the mean over {'-'.join(map(str, dict.fromkeys([seeds[0], seeds[-1]])))} "
                       "seeds; the table gives their spread (± sd). Points closer than that are not told apart.")
    show_table(rows, metric, len(ns) > 1, seeds, owner.nouns[0] if owner is not None else "cell")
    with st.expander(f"The {len(found.files)} result files read"):
        st.caption(", ".join(f"`{f}`" for f in found.files) + ".")
    if fig is not None:
        st.download_button("Frontier as HTML", lambda: exports.figure_html(fig), f"frontier_{chosen}.html",
                           "text/html", on_click="ignore")


main()
frame.link_note()
