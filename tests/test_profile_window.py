"""The entropy profiles of a windowed sequence name a CDR by its own residues, not by its place in the window."""

import numpy as np

from mi_lens_app import strips
from mi_lens_app.cdr_marks import CDR_MARK


def test_a_windowed_profile_names_cdr_residues_by_their_numbers():
    labels = [f"A{k + 1}" + (f"{CDR_MARK}H3" if 98 <= k < 109 else "") for k in range(130)]
    fig = strips.profile_figure(labels, {"dH": np.arange(130.0)}, start=60, size=60)
    shown = [a for a in fig.layout.annotations if a.name == "CDR-H3"]
    assert len(shown) == 1 and shown[0].hovertext.endswith("residues 99-109")
    band = next(s for s in fig.layout.shapes if s.name == "CDR-H3")
    assert (band.x0, band.x1) == (98 - 60 - 0.5, 108 - 60 + 0.5)  # bar k of the window is residue 60 + k
    assert list(fig.data[0].x[:2]) == ["A61", "A62"]
