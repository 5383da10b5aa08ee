"""MI Lens: the landing page. Run with ``python -m mi_lens_app.serve`` (it warms the models as the server
starts) or ``streamlit run app.py``.

The views are the files in ``pages/`` (Streamlit finds them there, so a shared deep link such as
``/MI_maps?preset=...&cell=r3c5`` opens on a freshly started server); their widgets keep the puzzle, the
selected cell and strategy parameters in the query string. Pages call ``mi_core`` only through
``mi_lens_app``.
"""

import streamlit as st

from mi_lens_app import figure_cache, figures, frame, support, texts, widgets
from mi_lens_app.domains import DOMAINS

frame.page(frame.HOME_TITLE)
st.markdown(
    """
See how a masked diffusion model (MDM) thinks, and make it decode faster because of what you see.

An MDM fills a Sudoku grid by unmasking cells in any order, several per step. It only exposes the
marginal distribution of each cell, p(x_i | context); it says nothing about which cells depend on each
other, so a decoder that unmasks confident cells together can break the rules (two equal digits in one
row). MI Lens measures those dependencies as pairwise conditional mutual information,
I(X_i; X_j | context), exactly by perturbation probing and cheaply with a neural estimator, and uses them
to decide which cells can safely be unmasked together. The same views work on protein sequences (open a
view below and choose **antibody** or **protein** under *Domain* in its sidebar): which masked residues
depend on each other, and which can be filled at once.
"""
)
plugins = widgets.plugin_domains()
if plugins:
    st.markdown("Also loaded here, from outside MI Lens: " + ", ".join(
        f"**{d.label}** (*{d.short}* under *Domain*)" for d, _ in plugins) + ". *About* says what each one is.")
left, right = st.columns([3, 2])
with left:
    cols = st.columns(2)
    for i, view in enumerate(frame.VIEWS[1:]):
        with cols[i % 2], st.container(border=True):
            frame.view_link(view.path, view.title, view.icon)
            st.caption(view.blurb)
with right:
    # the exact MI of the empty 4x4 grid (65 passes of the oracle): a first picture, and it loads the charting
    # code while the visitor reads, so the first MI map of the other pages draws sooner
    four = DOMAINS["sudoku4"]
    empty = support.attempt(support.mi_map, four.key, "." * four.cells, support.version(four))
    if empty is not None:
        teaser = figure_cache.shared_figure(figures.mi_heatmap, empty.mi, four.geometry.box, four.labels(), order="box",
                                            height=360, title="Exact MI of the empty 4x4 grid")
        widgets.chart(teaser, key="teaser")
        st.caption("Box-major order: the 4x4 blocks on the diagonal are the boxes. Pairs that share a row, column "
                   "or box carry the most MI; some pairs that share none still depend on each other through "
                   "chains of rules.")
with st.expander("The idea in formulas"):
    st.markdown(texts.MI)
    st.markdown(texts.PARALLEL)
frame.link_note()
