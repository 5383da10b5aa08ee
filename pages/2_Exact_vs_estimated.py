"""Exact versus estimated: the fast MI map beside the exact probe, their difference, and pruning's savings."""

import numpy as np
import streamlit as st

from mi_lens_app import exports, figure_cache, figures, frame, links, protein_figures, support, texts, widgets
from mi_lens_app.domains import named

EPS_CHOICES = [1e-4, 1e-3, 1e-2, 5e-2, 1e-1]


def heatmap(domain, pz, mi, view, grid_height: int, **kwargs):
    """An MI-like matrix in the domain's layout: ``view`` is the grid order, or the sequence window; ``grid_height``:
    a grid's chart height. A sequence's map is as tall as ``protein_figures.map_height`` makes it, as on the MI maps
    page: its plot and colour bar fit a zoomed projector's screen, and an antibody's title line, CDR bands and long
    labels do not squeeze its plot (at a flat 440-480 px they left it 237-277 px, a plain protein's 337-377)."""
    if domain.layout == "sequence":
        start, size = view
        return figure_cache.shared_figure(protein_figures.sequence_heatmap, mi, pz.labels(), noun=domain.nouns[0],
                                     start=start, size=size, **kwargs)
    return figure_cache.shared_figure(figures.mi_heatmap, mi, domain.geometry.box, domain.labels(), order=view,
                                 height=grid_height, **kwargs)


PER_MAP_RANKS = ("Each map is coloured by the rank of its own pairs (percentile), so equal shades on the two maps are "
                 "not equal MI; linear or log colours share one range; the difference map and the scatter are in nats.")


def side_by_side(domain, pz, fast, exact, cell, view, scale):
    """Estimated | exact, then the difference | the per-pair scatter (two a row: one a row below 1,200 px).
    The estimated map's hover and the scatter's give both values of a pair; a click on either selects it."""
    zmax = figures.color_max(fast.mi, exact.mi)
    diff = fast.mi - exact.mi
    dmax = float(np.abs(diff).max()) or figures.ZERO_SPAN
    figs = [
        heatmap(domain, pz, fast.mi, view, selected=cell, zmax=zmax, title="Estimated", grid_height=440, scale=scale,
                clickable=exact.masked, also=("exact", exact.mi)),
        heatmap(domain, pz, exact.mi, view, selected=cell, zmax=zmax, title="Exact probe", grid_height=440, scale=scale,
                clickable=exact.masked, also=("estimated", fast.mi)),
        heatmap(domain, pz, diff, view, selected=cell, zmin=-dmax, zmax=dmax, zmid=0.0, colorscale="RdBu_r",
                title="Estimated − exact", value_name="difference (nats)", grid_height=440),
    ]
    top = st.columns(2)
    for col, fig, key in zip(top, figs[:2], ("est", "exact")):
        widgets.chart(fig, key=f"map_{key}", where=col, on_select=widgets.click_to_pair(f"map_{key}", "cell", pz.blanks),
                      selection_mode="points")
    if scale == "percentile":
        st.caption(PER_MAP_RANKS)
    bottom = st.columns(2)
    widgets.chart(figs[2], key="map_diff", where=bottom[0])
    pair = st.session_state.get("pair")
    pair = pair if pair and max(pair) < pz.length and exact.masked[list(pair)].all() else None
    scatter = figure_cache.shared_figure(figures.pair_scatter, fast.mi, exact.mi, exact.masked, pz.labels(),
                                         selected=pair)
    widgets.chart(scatter, key="scatter", where=bottom[1], on_select=widgets.click_to_pair("scatter", "cell", pz.blanks),
                  selection_mode="points")
    if pair:
        i, j = pair
        st.caption(f"Pair {pz.label(i)} · {pz.label(j)}: estimated {fast.mi[i, j]:.4g} nats, exact "
                   f"{exact.mi[i, j]:.4g} nats (difference {fast.mi[i, j] - exact.mi[i, j]:+.2g}).")
    else:
        st.caption("Click a pair on either map or on the scatter to compare its two values here.")
    return figs


def agreement(fast, exact):
    links.clamp_number("k", 5, 100, integer=True)
    k = st.slider("k for the top-k overlap", 5, 100, 20, step=5, key="k", bind=links.bound("k"))
    stats = support.compare(fast.mi, exact.mi, exact.masked, k)
    floor = texts.nats_floor(exact.mi)  # a protein MDM's weak MI: its 0.0004 nats of error is no "< 0.001"
    cols = st.columns(5)

    def shown(value: float, text: str) -> str:  # NaN: one masked position, no pair (or no spread) to compare
        return "n/a" if value != value else text

    cols[0].metric("Spearman", shown(stats["spearman"], f"{stats['spearman']:.3f}"),
                   help="rank correlation over all masked pairs (n/a: fewer than two pairs, or all equal)")
    cols[1].metric("Pearson", shown(stats["pearson"], f"{stats['pearson']:.3f}"))
    cols[2].metric("MAE (nats)", shown(stats["mae"], texts.nats(stats["mae"], floor)))
    cols[3].metric(f"Top-{stats['k']} overlap", shown(stats["topk_overlap"], f"{100 * stats['topk_overlap']:.0f}%"),
                   help="share of the k strongest exact pairs among the k strongest estimated (k: at most the pairs "
                        "there are)")
    cols[4].metric("Largest |difference| (nats)", texts.nats(stats['max_abs_diff'], floor))
    st.markdown(texts.agreement_reading(stats["spearman"], stats["topk_overlap"], stats["k"], stats["n_pairs"]))


def asymmetry(domain, pz, exact, cell, view, scale):
    masked = exact.masked
    pair = masked[:, None] & masked[None, :] & ~np.eye(len(masked), dtype=bool)
    asym, floor = exact.asymmetry, texts.nats_floor(exact.mi)
    c1, c2 = st.columns([2, 1])
    with c1:
        fig = heatmap(domain, pz, asym, view, selected=cell, colorscale="Reds", zmax=figures.color_max(asym),
                      title="Asymmetry |I(i→j) − I(j→i)|", value_name="asymmetry (nats)", grid_height=460, scale=scale)
        widgets.chart(fig, key="asym")
    with c2:
        st.metric("Largest asymmetry (nats)", texts.nats(asym.max(), floor))
        st.metric("Mean over pairs (nats)", texts.nats(asym[pair].mean() if pair.any() else 0, floor))
        st.metric("Largest form gap (nats)", texts.nats(exact.form_gap.max(), floor),
                  help="|mixture form − entropy-difference form|: 0 for a model whose conditionals agree")
        st.caption("A model with consistent conditionals (the 4x4 oracle) has zero asymmetry; a trained MDM "
                   "does not, and this is how far its two directions disagree.")


def pruning(domain, pz, exact):
    if not st.toggle("Run the pruned probe too", key="prune", bind="query-params",
                     help="a second probe that skips the values below eps: its passes, time and error against "
                          "the exact probe (it takes up to as long again)"):
        st.caption("Pruning skips each masked position's values with p < eps, so fewer passes, with a guaranteed "
                   "bound on the error. Turn it on to measure it here.")
        return
    eps = st.select_slider("Pruning eps: skip values with p < eps", EPS_CHOICES, value=1e-3, key="eps",
                           bind="query-params", format_func=lambda e: f"{e:g}")
    pruned = support.attempt(support.exact_probe, domain.key, pz.text, float(eps), support.version(domain),
                             what="Cannot run the pruned probe")
    if pruned is None:
        return
    saved = exact.passes - pruned.passes
    cols = st.columns(4)
    # nothing skipped (every value at least eps, as a protein MDM's near-uniform marginals are): no green "-0 (0%)"
    cols[0].metric("Passes", f"{pruned.passes}", f"-{saved} ({100 * saved / max(exact.passes, 1):.0f}%)" if saved
                   else "none skipped", delta_color="inverse" if saved else "off")
    cols[1].metric("Time (s)", f"{pruned.seconds:.2f}", f"{pruned.seconds - exact.seconds:+.2f} vs exact",
                   delta_color="inverse")
    cols[2].metric("Largest error (nats)", texts.nats(np.abs(pruned.mi - exact.mi).max(), texts.nats_floor(exact.mi)))
    cols[3].metric("Error bound (nats)", texts.nats(pruned.error_bound.max(), texts.nats_floor(exact.mi)),
                   help="guaranteed bound on |pruned − exact| from the skipped probability mass")


def main():
    frame.page("Exact versus estimated")
    domain, pz = widgets.domain_and_puzzle(several=True)
    if pz is None:
        widgets.no_input(domain, "to compare its maps")
        st.markdown(texts.EXACT_PAGE)
        return
    version = support.version(domain)
    fast = support.attempt(support.mi_map, domain.key, pz.text, version, what="Cannot compute the fast MI map")
    if fast is None:
        return
    blanks = len(pz.blanks)
    run = st.toggle(f"Run the exact probe (up to {1 + blanks * domain.n_values} model passes)", key="exact",
                    bind="query-params", help="results are cached: a second look is instant")
    # the probe's progress bar right under its switch: below the text it was off a zoomed projector's screen
    below_switch = st.container()
    st.markdown(texts.EXACT_PAGE)
    scale = widgets.scale_picker()
    if not run:
        st.info("Turn on the exact probe to compare. " + (
            f"Here the fast map is exact too ({fast.source}): the probe recomputes it pass by pass."
            if fast.source.startswith("exact") else f"Below, meanwhile, the fast map ({fast.source}, one model pass)."))
        view = widgets.window_picker(pz.length, masked=pz.blanks) if domain.layout == "sequence" else "row"
        widgets.chart(heatmap(domain, pz, fast.mi, view, title=fast.source, grid_height=480, scale=scale), key="map_fast")
        return
    with below_switch:
        exact = support.attempt(support.exact_probe, domain.key, pz.text, 0.0, version, what="Exact probe failed")
    if exact is None:
        return
    st.caption(f"Exact probe: {texts.passes(exact.passes)} in {exact.seconds:.2f} s · fast map: {fast.source}, "
               f"{texts.passes(fast.passes)} in {fast.seconds:.2f} s")
    # the cell MI maps and What-if open on (this page opened on the first blank, another cell than theirs)
    cell = widgets.cell_picker(domain, pz, blanks_only=True, default=widgets.most_uncertain(fast.entropy, pz.blanks))
    if domain.layout == "sequence":
        view = widgets.window_picker(pz.length, masked=pz.blanks)
        widgets.weak_pairs_note(exact.mi, np.asarray(exact.masked), scale)
    else:
        view = "box" if st.toggle("Box-major order", key="boxmajor", bind="query-params") else "row"
    figs = side_by_side(domain, pz, fast, exact, cell, view, scale)
    agreement(fast, exact)
    st.header("Asymmetry of the exact probe")
    asymmetry(domain, pz, exact, cell, view, scale)
    st.header("Pruning: passes and time against the exact probe")
    pruning(domain, pz, exact)
    with st.expander("How the exact probe works"):
        st.markdown(texts.PROBE)
    labels = pz.labels()
    row, about = widgets.button_row(), support.model_info(domain)
    row.download_button("Exact MI as CSV", lambda: exports.mi_csv(exact.mi, labels, exact.masked, domain.nouns[0]),
                        "mi_exact.csv", "text/csv", on_click="ignore")
    row.download_button("Exact MI as JSON", lambda: exports.mi_json(exact.as_map(), pz.text, labels=labels, **named(domain.key),
                                                model_description=about, known=exports.known_state(domain, pz)),
                        "mi_exact.json", "application/json", on_click="ignore")
    row.download_button("Difference map as HTML", lambda: exports.figure_html(figs[2]), "mi_difference.html",
                        "text/html", on_click="ignore")


main()
frame.link_note()
