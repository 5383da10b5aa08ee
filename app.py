"""MI Lens: the landing page. Run with ``streamlit run app.py``."""

import streamlit as st

st.set_page_config(page_title="MI Lens", layout="wide")
st.title("MI Lens")
st.markdown(
    """
See how a masked diffusion model (MDM) thinks, and make it decode faster because of what you see.

An MDM fills a Sudoku grid (or a protein) by unmasking cells in any order, several per step. It only
exposes the marginal distribution of each cell, p(x_i | context); it says nothing about which cells
depend on each other, so a decoder that unmasks confident cells together can break the rules (two equal
digits in one row). MI Lens measures those dependencies as pairwise conditional mutual information,
I(X_i; X_j | context), exactly by perturbation probing and cheaply with a neural estimator, and uses them
to decide which cells can safely be unmasked together.
"""
)
st.info("The interactive views (MI maps, exact vs estimated, step-by-step decoding) are being built; "
        "the command line `python -m mi_core` already runs the model, the decoders and the benchmarks.")
