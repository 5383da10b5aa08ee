"""What-if: clamp a blank cell to a digit (a masked residue to an amino acid) and see how marginals,
entropies and the MI map change."""

import numpy as np
import streamlit as st

from mi_lens_app import charts, figure_cache, figures, frame, links, protein_figures, strips, support, texts, widgets


def clamp_metrics(w, blank, cell: int, cell_name: str, clamp: str, blanks_noun: str) -> None:
    """The four numbers of a clamp, the same for grids and sequences. The entropy total is over the *other*
    blanks: the clamped cell's own entropy goes to 0 by definition, and on a protein it was most of the change."""
    others = np.asarray(blank, bool).copy()
    others[cell] = False
    before, after = w.entropy_before[others].sum(), w.entropy_after[others].sum()
    # two rows of two: four columns need about 690 px, and at 1024 px beside the sidebar the fourth wrapped alone
    cols = [*st.columns(2), *st.columns(2)]
    cols[0].metric(f"p({clamp})", f"{w.p_value:.3f}")
    cols[1].metric(f"Entropy of {cell_name}", f"{w.entropy_before[cell]:.3f} nats")
    cols[2].metric(f"Total entropy of the other {blanks_noun}", f"{after:.2f} nats", f"{after - before:+.2f} nats",
                   delta_color="inverse", help=f"summed over the {blanks_noun} other than {cell_name}, before → after")
    cols[3].metric(f"Largest I({cell_name} → j)", f"{w.mi_from_cell.max():.3g} nats",
                   help=f"the exact probe's MI from {cell_name} to the {blanks_noun} (the map below): one direction. "
                        "The MI maps show the mean of both directions, which can differ when the model is not "
                        "consistent")


def clamp(text: str, cell: int, value_name) -> str:
    """The state string with ``cell`` set to the value named ``value_name`` (a digit or a letter)."""
    return text[:cell] + str(value_name) + text[cell + 1:]


def sequence_what_if(domain, pz):
    """The protein view: clamp a masked residue to an amino acid."""
    start = support.attempt(support.mi_map, domain.key, pz.text, support.version(domain), what="MI map")
    if start is None:
        return
    c1, c2 = st.columns(2)
    first = widgets.most_uncertain(start.entropy, pz.blanks)
    cell = widgets.cell_picker(domain, pz, blanks_only=True, label=f"Masked {domain.nouns[0]} to clamp", where=c1,
                               default=first)
    letters = list(domain.alphabet)
    likely = int(np.argmax(start.marginals[cell])) if cell is not None else 0  # the clamped residue's, as a digit
    links.restart_on("aa", (pz.text, cell), letters[likely])  # another residue or sequence: its likeliest letter
    aa = c2.selectbox(domain.nouns[1].capitalize(), letters, index=likely, key="aa", bind="query-params")
    value = letters.index(aa)
    label = f"{pz.label(cell)} = {aa if aa.isalnum() else repr(aa)}"  # "_7 = ')'", not "_7 = )"
    if pz.solution is not None and pz.solution[cell] and pz.solution[cell] - 1 != value:
        st.info(texts.worded(f"The native sequence has {letters[pz.solution[cell] - 1]} here: this clamp leads away "
                             "from it.", domain))
    partners = np.flatnonzero(domain.rules(pz.length)[cell] & (np.asarray(pz.digits) == value + 1))  # token v + 1
    if len(partners):
        st.warning(f"{aa} already stands in {', '.join(pz.label(p) for p in partners)}: this clamp breaks a rule; "
                   "see how the model reacts.")
    w = support.attempt(support.what_if, domain.key, pz.text, cell, value, support.version(domain),
                        what=f"Cannot clamp {pz.label(cell)} to {aa}")
    if w is None:
        return
    blank = ~pz.givens
    clamp_metrics(w, blank, cell, pz.label(cell), label, f"masked {texts.plural(domain.nouns[0])}")
    labels = pz.labels()
    others = blank.copy()
    others[cell] = False
    delta = np.where(others, w.entropy_after - w.entropy_before, 0.0)
    # one window for every chart along the sequence (the profiles drew all 120 of a VH: 11 bars a few px wide)
    view = widgets.window_picker(pz.length, masked=pz.blanks)
    shown = {"start": view[0], "size": view[1], "noun": domain.nouns[0]}
    widgets.chart(figure_cache.shared_figure(strips.profile_figure,
        labels, {"H before": np.where(blank, w.entropy_before, 0.0), "H after": np.where(others, w.entropy_after, 0.0)},
        # 50 characters for "_100 = G" (a 505-px chart beside the open sidebar at 150% zoom cut one of 58)
        selected=cell, title=f"Masked {texts.plural(domain.nouns[0])}: entropy before and after {label}", yaxis="nats",
        **shown), key="entropy")
    c1, c2 = st.columns([2, 1])
    with c1:
        widgets.chart(figure_cache.shared_figure(strips.profile_figure,
            labels, {"entropy change": delta, f"I({pz.label(cell)} → j)": np.where(others, w.mi_from_cell, 0.0)},
            # short enough for two thirds of a 1024-px page
            selected=cell, title=f"Entropy change and MI from {pz.label(cell)}",
            yaxis="nats (negative: surer)", **shown), key="delta")
    with c2:
        widgets.chart(figure_cache.shared_figure(charts.bar_figure, letters,
                                            {f"p({domain.nouns[1]} | context)": w.marginals_before[cell]},
                                            title=f"Marginal of {pz.label(cell)}", yaxis="probability"), key="marginal")
        st.markdown(texts.worded(texts.WHATIF_SEQUENCE_PAGE, domain))
    changed = np.where(others[:, None], w.marginals_after, np.nan)
    after = figure_cache.shared_figure(strips.marginal_strip, changed, np.where(others, w.entropy_after, 0.0),
                                  labels, others, "".join(letters), start=view[0], size=view[1],
                                  title=f"Marginals after {label}", nouns=domain.nouns)
    widgets.screen_chart(after, "after", *strips.strip_fit(after))
    st.header("How the MI map changes")
    mi_change(domain, pz, cell, aa, view, widgets.scale_picker())


def pickers(domain, pz, start):
    """The cell and digit to clamp; they open on the most uncertain blank (or the link's cell) and that cell's most
    probable digit (``start``: the state's fast map, for its entropies and marginals)."""
    c1, c2 = st.columns([1, 2])
    first = widgets.most_uncertain(start.entropy, pz.blanks)
    cell = widgets.cell_picker(domain, pz, blanks_only=True, label="Blank cell to clamp (or click the grid)", where=c1,
                               default=first)
    digits = list(range(1, domain.n_values + 1))
    likely = int(np.argmax(start.marginals[cell])) + 1 if cell is not None else digits[0]
    links.restart_on("digit", (pz.text, cell), likely)  # another cell: its likeliest digit, not the last cell's
    # pills wrap onto a second line in a narrow column: a segmented control showed 3-8 of 1-9 at 1024 px
    digit = c2.pills("Digit", digits, key="digit", bind="query-params", default=likely) or likely
    return cell, int(digit)


def grids(domain, pz, w, cell, digit):
    labels, box = domain.labels(), domain.geometry.box
    before_digits = np.asarray(pz.digits)
    after_digits = before_digits.copy()
    after_digits[cell] = digit
    hmax = float(np.log(domain.n_values))
    blank = ~pz.givens
    delta = np.where(blank, w.entropy_after - w.entropy_before, np.nan)
    delta[cell] = np.nan
    dmax = float(np.nanmax(np.abs(delta))) if np.isfinite(delta).any() else 1.0
    hover_b = figures.cell_hover(labels, before_digits, pz.givens, w.entropy_before, w.marginals_before,
                                 {f"MI with {labels[cell]}": w.mi_from_cell})
    hover_a = figures.cell_hover(labels, after_digits, pz.givens, w.entropy_after, w.marginals_after,
                                 {"entropy change": np.nan_to_num(delta)})
    c1, c2 = st.columns(2)
    with c1:
        fig = figure_cache.shared_figure(figures.grid_figure, before_digits, pz.givens, box,
                                         candidates=w.marginals_before, hover=hover_b,
                                         layer=np.where(blank, w.entropy_before, np.nan), layer_name="H (nats)", zmin=0,
                                         zmax=hmax, colorscale="Oranges", selected=cell,
                                         title="Before: marginals and entropy", height=440)
        widgets.chart(fig, key="before", on_select=widgets.click_to_cell("before", "cell", domain.cells, pz.blanks),
                        selection_mode="points")
    with c2:
        after_blank = blank.copy()
        after_blank[cell] = False
        fig = figure_cache.shared_figure(figures.grid_figure, after_digits, pz.givens, box,
                                    candidates=np.where(after_blank[:, None], w.marginals_after, 0),
                                    layer=np.where(after_blank, w.entropy_after, np.nan), layer_name="H (nats)", zmin=0,
                                    zmax=hmax, colorscale="Oranges", hover=hover_a, selected=cell, height=440,
                                    title=f"After {labels[cell]} = {digit}")
        widgets.chart(fig, key="after")
    st.caption(texts.candidates_legend(domain.n_values))
    c3, c4 = st.columns(2)
    with c3:
        fig = figure_cache.shared_figure(figures.grid_figure, after_digits, pz.givens, box, layer=delta,
                                    layer_name="ΔH (nats)", zmin=-dmax, zmax=dmax, zmid=0.0, colorscale="RdBu_r",
                                    hover=hover_a, selected=cell, height=440, title="Entropy change (blue: surer)")
        widgets.chart(fig, key="delta")
    return c4


def heatmap(domain, pz, mi, view, **kwargs):
    """A grid's MI map 420 px tall, or a sequence's as tall as ``protein_figures.map_height`` makes it (as on the MI
    maps page): at a flat 420 px an antibody's title line, CDR bands and long labels left its plot 217 px."""
    if domain.layout == "sequence":
        return figure_cache.shared_figure(protein_figures.sequence_heatmap, mi, pz.labels(), noun=domain.nouns[0],
                                     start=view[0], size=view[1], **kwargs)
    return figure_cache.shared_figure(figures.mi_heatmap, mi, domain.geometry.box, domain.labels(), height=420,
                                      **kwargs)


def mi_change(domain, pz, cell, value_name, view=None, scale="linear"):
    version = support.version(domain)
    before = support.attempt(support.mi_map, domain.key, pz.text, version, what="MI map")
    after = support.attempt(support.mi_map, domain.key, clamp(pz.text, cell, value_name), version,
                            what="MI map of the clamped state")
    if before is None or after is None:
        return
    zmax = figures.color_max(before.mi, after.mi)
    diff = after.mi - before.mi
    dmax = float(np.abs(diff).max()) or figures.ZERO_SPAN
    cols = st.columns(2) + st.columns(2)
    figs = [heatmap(domain, pz, before.mi, view, selected=cell, zmax=zmax, title="MI before", scale=scale),
            heatmap(domain, pz, after.mi, view, selected=cell, zmax=zmax, title="MI after", scale=scale),
            heatmap(domain, pz, diff, view, selected=cell, zmin=-dmax, zmax=dmax, zmid=0.0, colorscale="RdBu_r",
                    title="After − before", value_name="ΔMI (nats)")]
    for col, fig, key in zip(cols, figs, ("mi_before", "mi_after", "mi_diff")):
        widgets.chart(fig, key=key, where=col)
    shared = ("Before and after share one colour range" if scale != "percentile" else
              "Before and after are each coloured by the rank of their own pairs (percentile), so equal shades are "
              "not equal MI; pick linear or log colours for one range shared by both")
    cols[3].markdown(f"**Reading the three maps.** {shared}; the difference (in nats) is red where the clamp made "
                     "two positions more dependent, blue where it made them less.")
    st.caption(f"MI source: {after.source}. Total MI over pairs: {before.mi.sum() / 2:.3g} → "
               f"{after.mi.sum() / 2:.3g} nats.")


def main():
    frame.page("What-if")
    domain, pz = widgets.domain_and_puzzle(several=True)
    if pz is None:
        widgets.no_input(domain, "to try a value")
        st.markdown(texts.worded(texts.WHATIF_SEQUENCE_PAGE, domain) if domain.layout == "sequence"
                    else texts.WHATIF_PAGE)
        return
    if not pz.blanks:
        st.info("This grid has no blank cell to clamp.")
        return
    if domain.layout == "sequence":
        sequence_what_if(domain, pz)
        return
    start = support.attempt(support.mi_map, domain.key, pz.text, support.version(domain), what="MI map")
    if start is None:
        return
    cell, digit = pickers(domain, pz, start)
    peers = np.flatnonzero(domain.rules(len(pz.digits))[cell] & (np.asarray(pz.digits) == digit))
    if domain.exact_model and support.clamp_contradicts(domain, pz, cell, digit):
        why = (f"{digit} already stands in {', '.join(domain.cell_label(p) for p in peers)}" if len(peers) else
               "the givens leave no way to finish the grid with it")
        st.warning(f"{domain.cell_label(cell)} = {digit} contradicts the givens: {why}, so no 4x4 Sudoku solution "
                   "has it and the exact oracle has nothing to say about what follows. Pick another digit.",
                   icon=":material/block:")
        return
    if len(peers):
        st.warning(f"{digit} already stands in {', '.join(domain.cell_label(p) for p in peers)}: this clamp breaks a "
                   "rule; see how the model reacts.")
    elif pz.solution is not None and pz.solution[cell] != digit:
        st.info(f"The solution has {pz.solution[cell]} here: this clamp leads away from it.")
    w = support.attempt(support.what_if, domain.key, pz.text, cell, digit - 1, support.version(domain),
                        what=f"Cannot clamp {domain.cell_label(cell)} to {digit}")
    if w is None:
        return
    blank = ~pz.givens
    clamp_metrics(w, blank, cell, domain.cell_label(cell), f"{domain.cell_label(cell)} = {digit}", "blanks")
    beside = grids(domain, pz, w, cell, digit)
    with beside:
        values = [str(v) for v in range(1, domain.n_values + 1)]
        widgets.chart(figure_cache.shared_figure(charts.bar_figure, values,
                                            {"p(digit | context)": w.marginals_before[cell]},
                                            title=f"Marginal of {domain.cell_label(cell)}", yaxis="probability"),
                      key="marginal")
        st.markdown(texts.WHATIF_PAGE)
    scale = widgets.scale_picker()
    c1, c2 = st.columns([2, 1])
    with c1:
        mi_row = np.where(blank, w.mi_from_cell, np.nan)
        fig = figure_cache.shared_figure(figures.grid_figure, np.asarray(pz.digits), pz.givens, domain.geometry.box,
                                    layer=mi_row, layer_name="I (nats)", colorscale="Viridis", zmin=0, selected=cell,
                                    height=420, scale=scale, title=f"Exact I({domain.cell_label(cell)} → j): "
                                                                   "expected entropy drop, all digits")
        widgets.chart(fig, key="mi_row")
    with c2:
        st.markdown(texts.WHATIF_MI_ROW)
    st.header("How the MI map changes")
    mi_change(domain, pz, cell, digit, scale=scale)


main()
frame.link_note()
