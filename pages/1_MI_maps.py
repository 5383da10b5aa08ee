"""MI maps: the pairwise MI of a puzzle as a heatmap, on the grid, and as a dependency graph; of a protein
as an L x L heatmap, a contact-map view, an arc graph along the sequence and a per-residue strip."""

import dataclasses

import numpy as np
import streamlit as st

from mi_lens_app import (
    exports,
    figure_cache,
    figures,
    frame,
    graph,
    links,
    protein_figures,
    screen,
    strips,
    support,
    texts,
    widgets,
)
from mi_lens_app.domains import named

LAYERS = {"MI": "MI with the selected cell", "entropy": "entropy", "top p": "top probability",
          "candidates": "candidates (marginals)"}


def heatmap_panel(domain, pz, m, cell, scale):
    box_major = st.toggle("Box-major order", key="boxmajor", bind="query-params",
                          help="order the cells box by box, so the box rule shows as blocks on the diagonal")
    order = "box" if box_major else "row"
    narrow = screen.on_phone()  # the map as wide as a phone's chart: 3.4 px a cell, not 2.2
    fig = figure_cache.figure(("maps heatmap", domain.key, pz.text, support.version(domain), m.source, cell, order,
                               scale, narrow),
                              lambda: figures.mi_heatmap(m.mi, domain.geometry.box, domain.labels(), order=order,
                                                         selected=cell, title=f"MI, {m.source}", scale=scale,
                                                         clickable=m.masked, height=figures.MAP_HEIGHT, narrow=narrow))
    widgets.chart(fig, key="heatmap", on_select=widgets.click_to_pair("heatmap", "cell", pz.blanks),
                  selection_mode="points")
    pair_caption(pz, m)
    return fig


def pair_caption(pz, m):
    """The pair last clicked on the heatmap, with its MI."""
    pair = st.session_state.get("pair")
    if pair and max(pair) < pz.length:
        i, j = pair
        st.caption(f"Clicked pair {pz.label(i)} · {pz.label(j)}: MI = {m.mi[i, j]:.4g} nats"
                   + ("" if i in pz.blanks or j in pz.blanks else " (both given: no MI)"))


SETTLES = "settles at"  # the extra layer of a recurrent model


def grid_figure(domain, pz, m, cell, layer, scale, settle=None, steps=1, k=1, last_mi=False):
    """The grid coloured by ``layer``, with the selected cell outlined and every cell's numbers in its hover;
    ``settle``: each cell's settling iteration of ``steps`` (a recurrent model, read at iteration ``k``), in the
    hover and a layer; ``last_mi``: the MI shown is the last iteration's, not iteration ``k``'s."""
    digits = np.asarray(pz.digits)
    extra = {f"MI with {domain.cell_label(cell)}": m.mi[cell]}
    if settle is not None:
        extra["settles at iteration"] = np.where(pz.givens, np.nan, settle)  # a given has no iterations
    hover = figures.cell_hover(domain.labels(), digits, pz.givens, m.entropy, m.marginals, extra)
    blank = ~pz.givens
    if layer == "MI":
        kw = {"layer": np.where(blank, m.mi[cell], np.nan), "layer_name": "MI (nats)", "colorscale": "Viridis",
              "zmin": 0, "scale": scale}
    elif layer == "entropy":
        kw = {"layer": np.where(blank, m.entropy, np.nan), "layer_name": "H (nats)", "colorscale": "Oranges", "zmin": 0,
              "zmax": float(np.log(domain.n_values))}
    elif layer == "top p":
        kw = {"layer": np.where(blank, m.marginals.max(1), np.nan), "layer_name": "top p", "colorscale": "Greens",
              "zmin": 0, "zmax": 1}
    elif layer == SETTLES and settle is not None:
        kw = {"layer": np.where(blank, settle, np.nan), "layer_name": "iteration", "colorscale": "Purples",
              "zmin": 1, "zmax": steps}
    else:
        kw = {"candidates": m.marginals}
    if layer == SETTLES and settle is not None:
        title = f"The iteration each cell settles at (of {steps})"
    else:
        title = f"MI of {domain.cell_label(cell)} with every cell" if layer == "MI" else LAYERS.get(layer, layer)
        title += f"<br>iteration {k} of {steps}" if settle is not None else ""  # one line was cut at 1024-1280 px
        if layer == "MI" and settle is not None and k < steps:  # the page's MI source names the last iteration's
            title += " (MI of the last iteration)" if last_mi else " · MI: exact (pruned)"
    # 430 px: two a row at 1440 px, the grid is about as wide as it is tall, so the colour bar is no taller
    return figures.grid_figure(digits, pz.givens, domain.geometry.box, hover=hover, selected=cell, title=title,
                               height=430, **kw)


def iteration_map(domain, pz, m, steps, where):
    """A recurrent model's iteration slider and what the grid shows at the chosen iteration: ``(map, settle,
    note, last_mi)``, the map's marginals and entropies those of the iteration, its MI the exact probe's there
    once asked for, else the last iteration's (``last_mi``). Nothing changes at the last iteration, the
    slider's default."""
    links.clamp_number("iter", 1, steps, integer=True)
    k = int(where.slider("Iteration", 1, steps, steps, key="iter", bind=links.bound("iter"),
                         help=texts.ITERATIONS))
    view = support.attempt(support.iteration_view, domain.key, pz.text, support.version(domain),
                           what="Cannot read the iterations")
    if view is None:
        return m, None, None, False
    if k == steps:
        return m, view.settle, None, False
    # a toggle in the URL, so a copied link reopens the exact map at this iteration (a button's click was lost)
    exact = st.toggle(f"Exact MI at iteration {k}", key="iterx", bind=links.BIND,
                      help="the exact probe pruned at eps={:g}, with the model stopped after this iteration; "
                           "it follows the slider".format(domain.fallback_eps))
    mi, note, last_mi = m.mi, f"MI: the last iteration's (turn on *Exact MI at iteration {k}* for its own).", True
    if exact:
        pm = support.attempt(support.probe_at_iteration, domain.key, pz.text, k, domain.fallback_eps,
                             support.version(domain), what="Cannot probe at this iteration")
        if pm is not None:
            mi, last_mi = pm.mi, False
            note = (f"MI on this grid at iteration {k}: exact (pruned, eps={pm.eps:g}) · {texts.passes(pm.passes)} · "
                    f"{pm.seconds:.2f} s; the heatmap and graph show the last iteration's.")
    shown = dataclasses.replace(m, mi=mi, marginals=view.marginals[k - 1], entropy=view.entropy[k - 1])
    return shown, view.settle, note, last_mi


@st.fragment
def grid_panel(domain, pz, m, cell, scale, steps=1):
    """The grid coloured by a layer (and, for a recurrent model, read at an iteration). A fragment: a new
    layer or iteration redraws this grid alone, not the 81 x 81 heatmap and the graph beside it; a click on a
    cell (another selected cell) reruns the whole page."""
    if st.session_state.get("cell", cell) != cell:
        st.rerun()  # every panel shows the selected cell
    layers = list(LAYERS) + ([SETTLES] if steps > 1 else [])
    if st.session_state.get("layer") not in (None, *layers):
        st.session_state["layer"] = "MI"  # "settles at" of the recurrent model, after a switch to the default
    # the layer choice above the iteration slider: side by side, five layers were cut off at 1024-1280 px
    layer = st.segmented_control("Layer", layers, key="layer", bind="query-params", default="MI",
                                     help="colour the grid by " + "; ".join(f"{k}: {v}" for k, v in LAYERS.items())
                                     + ("; settles at: the iteration from which the likeliest digit stays" if steps > 1
                                        else "")) or "MI"
    settle, note, last_mi = None, None, False
    if steps > 1:
        m, settle, note, last_mi = iteration_map(domain, pz, m, steps, st)
    k = st.session_state.get("iter", steps) if steps > 1 else 1
    key = ("maps grid", domain.key, pz.text, support.version(domain), m.source, cell, layer, scale, k,
           note or "", settle is not None)
    fig = figure_cache.figure(key, lambda: grid_figure(domain, pz, m, cell, layer, scale, settle, steps, k, last_mi))
    widgets.chart(fig, key="grid", on_select=widgets.click_to_cell("grid", "cell", domain.cells, pz.blanks),
                  selection_mode="points")
    if layer == "candidates":
        st.caption(texts.candidates_legend(domain.n_values))
    if settle is not None:
        st.caption(texts.settles(settle[~pz.givens], steps) + (f" {note}" if note else ""))


def graph_panel(domain, pz, m, cell):
    """The dependency graph and its edge controls, the selected cell's edges highlighted. The graph and its
    figure are built once per process for a state, edge setting and cell (``figure_cache.figure``): a click
    elsewhere on the page does not build them again."""
    c1, c2 = st.columns([1, 2])
    mode = c1.radio("Edges", ["top-k", "threshold"], key="edges", bind="query-params", horizontal=True)
    links.clamp_number("topk", 5, 300, integer=True)
    links.clamp_number("thr", 0.0, 10.0)
    if mode == "top-k":
        # 30: at 60 the edges piled over boxes 2-3 of the showcase and hid its given digits on a 1024-px screen
        k = c2.slider("Strongest pairs", 5, 300, 30, step=5, key="topk", bind=links.bound("topk"))
        setting = {"top_k": int(k), "cap": graph.MAX_EDGES}
    else:
        thr = c2.number_input("MI above (nats)", min_value=0.0, max_value=10.0, value=0.01, step=0.005, format="%g", key="thr",
                              bind=links.bound("thr"))
        setting = {"threshold": float(thr), "cap": graph.MAX_EDGES}
    state = ("maps graph", domain.key, pz.text, support.version(domain), m.source, tuple(sorted(setting.items())))
    g = figure_cache.figure(state, lambda: graph.dependency_graph(m.mi, m.masked, domain.rules(len(pz.digits)),
                                                                 **setting))
    info = graph.summary(g)
    capped = g.graph["candidates"] > info["edges"]
    title = (f"Dependency graph: the {info['edges']} strongest of {g.graph['candidates']} pairs" if capped
             else f"Dependency graph: {info['edges']} edges")
    fig = figure_cache.figure((*state, cell), lambda: figures.dependency_figure(
        graph.edge_list(g), np.asarray(pz.digits), pz.givens, domain.geometry.box, domain.labels(),
        strength=graph.strength(g, domain.cells), title=title, selected=cell))
    widgets.chart(fig, key="graph")
    if g.graph["tied"]:
        st.caption(f"{g.graph['tied']} more than the {setting['top_k']} asked: the pairs tied with the "
                   f"{setting['top_k']}th strongest are all drawn (a cut among equals would pick an arbitrary few).")
    elif g.graph["tie_cut"]:
        st.caption(f"More pairs tie with the {setting['top_k']}th strongest than the graph draws "
                   f"({graph.MAX_EDGES}): the {setting['top_k']} drawn are an arbitrary choice among equals.")
    if capped:
        st.caption(f"{g.graph['candidates']} pairs qualify; the graph draws the {graph.MAX_EDGES} strongest (more "
                   "would take seconds to draw and hide each other). "
                   + ("Raise the threshold to see fewer." if mode == "threshold" else ""))
    if info["edges"] == 0 and mode == "threshold":  # "0 edges share a row ...; 0 connected groups" said not why
        st.info(f"No pair has MI above {setting['threshold']:g} nats (the largest here is {float(m.mi.max()):.3g} "
                "nats): lower the threshold to draw edges.")
        return fig
    frac = info["rule_fraction"]
    st.caption(f"{info['rule_edges']} edges share a row, column or box; {info['other_edges']} do not"
               + ("" if np.isnan(frac) else f" ({100 * frac:.0f}% rule edges)")
               + f"; {texts.groups(info['components'])}.")
    pairs_table(graph.edge_list(g), domain.labels())
    return fig


def pairs_table(edges, labels) -> None:
    """The pairs the graph draws as a table, folded: a chart reads to a screen reader as its tick labels."""
    if edges:
        with st.expander(f"The {len(edges)} pairs as a table"):
            st.table(graph.pair_rows(edges, labels))


def downloads(domain, pz, m, heat, graph_fig, graph_name: str = "Graph", graph_file: str = "mi_graph.html"):
    """The MI as CSV and JSON (with the model that drew it), and the heatmap and the graph (a grid's dependency graph,
    a sequence's arc graph: ``graph_name`` and ``graph_file``) as HTML."""
    labels, about = pz.labels(), support.model_info(domain)
    row = widgets.button_row()
    row.download_button("MI as CSV", lambda: exports.mi_csv(m.mi, labels, m.masked, domain.nouns[0]), "mi.csv",
                        "text/csv", on_click="ignore")
    row.download_button("MI as JSON", lambda: exports.mi_json(m, pz.text, labels=labels, **named(domain.key),
                                             model_description=about, known=exports.known_state(domain, pz)), "mi.json",
                        "application/json", on_click="ignore")
    row.download_button("Heatmap as HTML", lambda: exports.figure_html(heat), "mi_heatmap.html", "text/html",
                        on_click="ignore")
    row.download_button(f"{graph_name} as HTML", lambda: exports.figure_html(graph_fig), graph_file, "text/html",
                        on_click="ignore")


def weak_mi_note(domain, m) -> str:
    """Why the map's MI is weak: the model unsure of the masked positions (mean entropy over 0.8 of its maximum: an
    untrained model) or sure of them (a unique puzzle's exact MI)."""
    unsure = bool(m.masked.any()) and float(np.mean(m.entropy[m.masked])) > 0.8 * np.log(domain.n_values)
    return texts.weak_mi(float(m.mi.max()), unsure, domain.nouns[0])


def sequence_maps(domain, pz, m):
    """The protein views: heatmap (windowed) and contact map, arc graph, marginals strip, downloads."""
    # the residue and the colours in a row, as the grid's cell and colours: a widget bound to the URL that moves to
    # another parent on a domain switch loses its place in the address; the window in the next row
    c1, c2 = st.columns(2)
    cell = widgets.cell_picker(domain, pz, blanks_only=True, label=f"Selected {domain.nouns[0]} (or click the heatmap)",
                               default=widgets.most_uncertain(m.entropy, pz.blanks), where=c1)
    with c2:
        scale = widgets.scale_picker()
    labels = pz.labels()
    start, size = widgets.window_picker(pz.length, masked=pz.blanks)
    if int(np.sum(m.masked)) < 2:  # no pair to show: say so, not that the model is sure
        st.caption(f"Only one {domain.nouns[0]} is masked: MI is between two masked {texts.plural(domain.nouns[0])}, so this map "
                   f"is empty. Mask more in the sidebar.")
    elif scale == "percentile" and m.mi.max() < texts.WEAK_MI:  # the small CATH model's maps: noise, ranked
        st.caption(weak_mi_note(domain, m))
    else:
        widgets.weak_pairs_note(m.mi, m.masked, scale)
    left, right = st.columns(2)
    with left:
        heat = figure_cache.shared_figure(protein_figures.sequence_heatmap, m.mi, labels, noun=domain.nouns[0],
                                     start=start, size=size, selected=cell, title=f"MI, {m.source}", scale=scale,
                                     clickable=m.masked)
        widgets.chart(heat, key="heatmap", on_select=widgets.click_to_pair("heatmap", "cell", pz.blanks),
                      selection_mode="points")
        pair_caption(pz, m)
    with right:
        links.clamp_number("sep", 1, 24, integer=True)
        name = texts.pair_map_name(domain)  # a protein's contact map; a pair map on any other sequence
        sep = st.slider(f"{name.removesuffix(' view').replace('-', ' ')}: pairs at least this far apart (|i−j|)", 1,
                        24, 4, key="sep", bind=links.bound("sep"))
        widgets.chart(figure_cache.shared_figure(protein_figures.contact_figure, m.mi, labels, m.masked,
                                            noun=domain.nouns[0], min_sep=sep, scale=scale, title=name),
                      key="contacts")
        if not protein_figures.top_pairs(m.mi, m.masked, min_sep=sep, limit=1)[3]:
            hint = protein_figures.empty_contacts_hint(int(np.sum(m.masked)), sep, domain.nouns[0])
            st.info(hint.replace("<br>", " "), icon=":material/scatter_plot:")
    links.clamp_number("arcs", 10, protein_figures.MAX_ARCS, integer=True)
    k = st.slider("Arc graph: strongest pairs", 10, protein_figures.MAX_ARCS, 60, step=10, key="arcs",
                  bind=links.bound("arcs"), help=f"at most {protein_figures.MAX_ARCS} arcs are drawn")
    arcs = figure_cache.shared_figure(protein_figures.arc_figure, pz.text, labels, m.masked, m.mi, noun=domain.nouns[0],
                                 cap=k, selected=cell, scale=scale, start=start, size=size, narrow=screen.on_phone(),
                                 touch=screen.on_touch())
    lo, hi = protein_figures.window(pz.length, start, size)  # the letters a line, capped to the chart's width
    per_line, phone = protein_figures.line_letters(hi - lo), screen.on_phone()
    widgets.letter_chart(arcs, "arcs_graph", per_line, protein_figures.letter_px(per_line, phone),
                         protein_figures.PHONE_ARC_ROOM if phone else protein_figures.LETTER_ROOM)
    i, j, w, _ = protein_figures.top_pairs(m.mi, m.masked, limit=k)
    pairs_table([(int(a), int(b), float(v), None) for a, b, v in zip(i, j, w)], labels)
    strip = figure_cache.shared_figure(strips.marginal_strip, m.marginals, m.entropy, labels, m.masked,
                                  "".join(domain.alphabet), extra=(f"MI with {labels[cell]}", m.mi[cell]), start=start,
                                  size=size, title=f"Per-{domain.nouns[0]} entropy and marginals", nouns=domain.nouns)
    widgets.screen_chart(strip, "strip", *strips.strip_fit(strip))
    st.markdown(texts.worded(texts.SEQUENCE_MAPS_PAGE, domain))
    with st.expander("What MI is"):
        st.markdown(texts.MI)
    downloads(domain, pz, m, heat, arcs, "Arc graph", "mi_arcs.html")

def main():
    frame.page("MI maps")
    domain, pz = widgets.domain_and_puzzle(several=True, models=True)
    if pz is None:
        widgets.no_input(domain, "to see its MI map")
        st.markdown(texts.worded(texts.SEQUENCE_MAPS_PAGE, domain) if domain.layout == "sequence" else texts.MAPS_PAGE)
        return
    m = support.attempt(support.mi_map, domain.key, pz.text, support.version(domain), what="Cannot compute the MI map")
    if m is None:
        return
    problem = support.estimator_problem(domain)
    if problem:
        st.warning(f"No usable MI estimator ({problem}): this map is the exact probe pruned at "
                   f"eps={domain.fallback_eps:g}, labelled **exact (pruned)**; it takes a few seconds on a CPU.",
                   icon=":material/hourglass:")
    spent = texts.passes(m.passes).replace(" ", " model ", 1)  # "1 model pass", "406 model passes"
    st.caption(f"MI source: **{m.source}** · {spent} · {m.seconds:.2f} s · "
               f"largest pair {m.mi.max():.3g} nats")
    if domain.layout == "sequence":
        sequence_maps(domain, pz, m)
        return
    c1, c2 = st.columns(2)
    cell = widgets.cell_picker(domain, pz, blanks_only=True, label="Selected cell (or click the grid or the heatmap)",
                               default=widgets.most_uncertain(m.entropy, pz.blanks), where=c1)
    with c2:
        scale = widgets.scale_picker()
    if scale == "percentile" and m.mi.max() < texts.WEAK_MI:
        st.caption(weak_mi_note(domain, m))
    left, right = st.columns(2)
    with left:  # the grid first: the lighter chart draws first, and it answers the cell picked just above
        grid_panel(domain, pz, m, cell, scale, support.iterations(domain))
    with right:
        heat = heatmap_panel(domain, pz, m, cell, scale)
    g_col, t_col = st.columns([3, 2])
    with g_col:
        dep = graph_panel(domain, pz, m, cell)
    with t_col:
        st.markdown(texts.MAPS_PAGE)
        with st.expander("What MI is"):
            st.markdown(texts.MI)
    downloads(domain, pz, m, heat, dep)


main()
frame.link_note()
