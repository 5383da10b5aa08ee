"""Write ``assets/examples/antibody_presets.json``: named antibody chains of Jain et al. 2017 for the app.

``python scripts/make_antibody_presets.py [--csv ../shared/data/protein/antibodies_jain2017_dev.csv]``

Each preset is one variable domain with a CDR masked (Kabat, :mod:`mi_core.domains.antibody.sequence`):
heavy chains with CDR-H3 masked, a few light chains with CDR-L3 or all CDRs masked.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mi_core.domains.antibody.sequence import read_file

ROOT = Path(__file__).resolve().parents[1]
PICKS = (("trastuzumab", "VH", "cdr3"), ("trastuzumab", "VL", "cdr3"), ("rituximab", "VH", "cdr3"),
         ("bevacizumab", "VH", "cdrs"), ("pertuzumab", "VH", "cdr3"), ("secukinumab", "VH", "cdr3"),
         ("ustekinumab", "VL", "cdrs"), ("tralokinumab", "VL", "cdr3"), ("tocilizumab", "VH", "cdr2"))
WHAT = {"cdr3": "CDR3 masked", "cdrs": "all three CDRs masked", "cdr2": "CDR2 masked"}


def spans(positions: list[int]) -> str:
    """1-based ``a-b`` ranges of sorted 0-based positions."""
    out, start = [], positions[0]
    for prev, cur in zip(positions, positions[1:] + [None]):
        if cur != prev + 1:
            out.append(f"{start + 1}-{prev + 1}")
            start = cur
    return ",".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--csv", type=Path, default=ROOT / "../shared/data/protein/antibodies_jain2017_dev.csv")
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "examples" / "antibody_presets.json")
    args = p.parse_args(argv)
    chains = {c.name: c for c in read_file(args.csv)}
    presets = []
    for name, col, region in PICKS:
        c = chains[f"{name} {col}"]
        chain = "heavy" if c.chain == "H" else "light"
        presets.append({"name": f"{name} {col} · {c.length} aa · {WHAT[region]}", "cath_id": f"{name} {col}",
                        "sequence": c.text(), "length": c.length, "chain": chain,
                        "mask": {"positions": spans(c.positions(region))}, "note": f"{chain} chain, {WHAT[region]}"})
    about = ("Variable domains of clinical-stage antibodies from Jain et al. 2017, 'Biophysical properties of the "
             "clinical-stage antibody landscape', PNAS 114:944-949 (Dataset S2; public INN, PDB and patent "
             "sequences); written by scripts/make_antibody_presets.py. Kabat CDRs by sequence rules.")
    args.out.write_text(json.dumps({"about": about, "antibody": presets}, indent=1) + "\n")
    print(f"{len(presets)} presets -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
