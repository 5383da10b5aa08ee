"""Write the app's protein presets, ``assets/examples/protein_presets.json``, from CATH S40.

    PYTHONPATH=. python scripts/make_protein_presets.py --fasta ../shared/data/protein/cath-dataset-nonredundant-S40.fa \
        [--out assets/examples/protein_presets.json]

The sequences come from the ``reference`` split of ``mi_core.domains.protein.split_records`` (seed 0), so
no preset is a training sequence of the shipped protein MDM. The choice is deterministic: the reference
sequences of 50-120 residues without unknown letters, sorted by CATH domain id, one from each length band
below. Each preset carries a default masking (a stretch, every k-th residue or a seeded random rate) that
the app applies and the user can change.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mi_core.domains.protein import MASK_ID, read_fasta, split_records

# (shortest, longest) residues, and the masking the preset starts with
BANDS = [
    ((50, 60), {"positions": "20-31"}, "a stretch of 12 residues masked"),
    ((61, 72), {"every": 5}, "every 5th residue masked"),
    ((73, 85), {"rate": 0.15, "seed": 0}, "15% of residues masked at random (seed 0)"),
    ((86, 98), {"positions": "10-17,60-67"}, "two stretches of 8 masked"),
    ((99, 110), {"every": 7}, "every 7th residue masked"),
    ((111, 120), {"rate": 0.12, "seed": 1}, "12% of residues masked at random (seed 1)"),
]
ABOUT = ("Protein domain sequences from CATH S40 (cath-dataset-nonredundant-S40), reference split of "
         "mi_core.domains.protein.split_records (seed 0); written by scripts/make_protein_presets.py. "
         "CATH data: Sillitoe et al., CATH (cathdb.info), licensed under CC BY 4.0.")


def cath_id(header: str) -> str:
    """The CATH domain id of a header such as ``cath|4_1_0|102mA00/0-153`` (``102mA00``)."""
    return header.split("|")[-1].split("/")[0]


def mask_spec(masking: dict, length: int) -> dict:
    """The app's masking for a preset: ``{"positions": "..."}`` or ``{"rate": r, "seed": s}``."""
    if "every" in masking:
        k = masking["every"]
        return {"positions": ",".join(str(p) for p in range(k, length + 1, k))}
    return masking


def pick(records, bands=BANDS) -> list[dict]:
    clean = sorted((r for r in records if (r.tokens != MASK_ID).all()), key=lambda r: cath_id(r.name))
    out = []
    for (lo, hi), masking, note in bands:
        rec = next(r for r in clean if lo <= r.length <= hi)
        ident = cath_id(rec.name)
        out.append({"name": f"{ident} · {rec.length} aa · {note}", "cath_id": ident, "header": rec.name,
                    "length": rec.length, "sequence": rec.text(), "mask": mask_spec(masking, rec.length),
                    "note": note})
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fasta", required=True, help="CATH S40 FASTA (cath-dataset-nonredundant-S40.fa)")
    parser.add_argument("--out", default="assets/examples/protein_presets.json")
    args = parser.parse_args(argv)
    reference = split_records(read_fasta(args.fasta, strict=True))["reference"]
    out = {"about": ABOUT, "license": "CC BY 4.0 (CATH)", "protein": pick(reference)}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {len(out['protein'])} presets to {args.out}")


if __name__ == "__main__":
    main()
