"""The app's downloads (``mi_lens_app.exports``): CSV that Excel reads."""

import csv

import numpy as np
import pandas as pd

from mi_lens_app import exports
from mi_lens_app.domains import DOMAINS


def test_mi_csv_starts_with_a_byte_order_mark_and_its_labels_read_back(tmp_path):
    """Excel on Windows read the CSV, which had no byte-order mark, in the local code page: an antibody's CDR label
    ``W99·H3`` came out as ``W99Â·H3``. The file now starts with the UTF-8 mark, and csv and pandas read it back."""
    labels = ["W99·H3", "_100·H3", "É3"]
    data = exports.mi_csv(np.full((3, 3), 0.25), labels, np.array([False, True, True]))
    assert data.startswith(b"\xef\xbb\xbf")
    path = tmp_path / "mi.csv"
    path.write_bytes(data)
    with open(path, encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["cell", "masked", *labels] and [r[0] for r in rows[1:]] == labels
    assert list(pd.read_csv(path, encoding="utf-8-sig").columns) == ["cell", "masked", *labels]


def test_a_proteins_mi_csv_heads_its_labels_residue():
    data = exports.mi_csv(np.zeros((2, 2)), ["M1", "_2"], np.array([False, True]), DOMAINS["protein"].nouns[0])
    assert data.decode("utf-8-sig").splitlines()[0] == "residue,masked,M1,_2"
