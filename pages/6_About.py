"""About / teach: what MI, MDMs and parallel decoding are, with the formulas, next to the views they explain."""

import streamlit as st

from mi_lens_app import frame, texts, widgets
from mi_lens_app.domains import DOMAINS

frame.page("About MI Lens")
st.markdown(
    "MI Lens shows how a masked diffusion model (MDM) thinks about a Sudoku grid, a protein or an antibody, and uses "
    "what it shows to decode faster. Each page carries a short explanation beside its plots; here they are in "
    "one place."
)
# one column: in two, each 330 px wide at 1024 px, the formulas broke inside their brackets
st.markdown(texts.MDM)
st.markdown(texts.MI)
frame.view_link("pages/1_MI_maps.py", "See it: MI maps", ":material/grid_on:")
st.markdown(texts.ESTIMATOR)
frame.view_link("pages/2_Exact_vs_estimated.py", "See it: exact versus estimated", ":material/compare:")
st.markdown(texts.PARALLEL)
frame.view_link("pages/3_Decoding.py", "See it: decoding, step by step", ":material/play_circle:")
st.markdown(texts.PROBE)
frame.view_link("pages/4_What_if.py", "See it: what-if", ":material/science:")
st.markdown(texts.LEARNED_ORDER)
frame.view_link("pages/5_Benchmarks.py", "The frontier: benchmarks", ":material/monitoring:")
st.divider()
st.markdown(
    "**The 4x4 domain.** 4x4 Sudoku has 288 solution grids, so the exact distribution is known: the 4x4 "
    "oracle's marginals and MI are ratios of counts. Its presets leave several solutions open, because once "
    "the solution is unique every cell is decided and all MI is zero."
)
st.markdown(texts.ITERATIONS_ABOUT)
st.markdown(texts.PROTEINS)
st.markdown(texts.ANTIBODIES)
protein_views = texts.worded(texts.SEQUENCE_MAPS_PAGE, DOMAINS["protein"])
st.markdown(protein_views.replace("**Sequences.**", "**The protein views.**", 1))  # one "Proteins." above
for domain, where in widgets.plugin_domains():
    about = domain.summary or "Its module gives no summary."
    st.markdown(f"**{domain.label}** (a plugin domain, from {where}). {about}")
frame.link_note()
