"""Summarise ``scripts/studies/protein_seed_noise.sh``: mean and standard deviation of the JSDs over seeds, into
``assets/benchmarks/protein_seed_noise.json`` (each seed's figures) and BENCHMARKS.md's section.

    PYTHONPATH=. python scripts/studies/protein_seed_noise.py runs/noise
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from mi_core.bench.report import markdown_table, params_text, update_section


def label(params: dict) -> str:
    """A sampler's settings as a table shows them, without the estimator's path."""
    return params_text({k: v for k, v in params.items() if k != "estimator"})


def spread_text(record: list[dict]) -> str:
    """The widest range of one sampler's dipeptide JSD over seeds, and each pair of samplers' difference of means
    with its standard error over seeds (unpaired: each seed draws other sequences for each sampler)."""
    dip = {f"{r['sampler']} {label(r['params'])}".strip():
           np.array(r["jsd_dipeptide"]) for r in record}
    name, runs = max(dip.items(), key=lambda item: np.ptp(item[1]))
    pairs = []
    for i, (a, x) in enumerate(dip.items()):
        for b, y in list(dip.items())[i + 1:]:
            se = np.sqrt(x.var(ddof=1) / len(x) + y.var(ddof=1) / len(y))
            pairs.append(f"{a} - {b} {x.mean() - y.mean():+.4f} ± {se:.4f}")
    return (f"Dipeptide JSD of one sampler spans up to {np.ptp(runs):.4f} bits between seeds ({name}). Differences of "
            f"the means over seeds, ± one standard error: {'; '.join(pairs)}.")


def main() -> None:
    folder = Path(sys.argv[1])
    groups = defaultdict(list)
    for path in sorted(folder.glob("*_[0-9].json")):
        groups[path.stem.rsplit("_", 1)[0]].append(json.loads(path.read_text()))
    if not groups:
        raise SystemExit(f"error: {folder} holds no NAME_SEED.json runs (protein_seed_noise.sh writes them)")
    rows, record = [], []
    for runs in groups.values():
        record.append({"sampler": runs[0]["sampler"], "params": runs[0]["params"],
                       **{k: [r[k] for r in runs] for k in ("seed", "mean_passes", "jsd_dipeptide", "jsd_aa")}})
        dip, aa = (np.array([r[k] for r in runs]) for k in ("jsd_dipeptide", "jsd_aa"))
        params = label(runs[0]["params"]) or "-"
        rows.append({"sampler": runs[0]["sampler"], "params": params, "seeds": len(runs),
                     "passes": f"{np.mean([r['mean_passes'] for r in runs]):.1f}",
                     "dip": f"{dip.mean():.4f} ± {dip.std(ddof=1):.4f}", "dip_range": f"{dip.min():.4f}-{dip.max():.4f}",
                     "aa": f"{aa.mean():.4f} ± {aa.std(ddof=1):.4f}"})
    table = markdown_table(rows, [("sampler", "sampler"), ("params", "params"), ("seeds", "seeds"),
                                  ("passes", "mean passes"), ("dip", "JSD dipeptide (bits), mean ± sd"),
                                  ("dip_range", "range"), ("aa", "JSD aa (bits), mean ± sd")])
    text = ("### Protein generation: seed-to-seed spread\n\n`bash scripts/studies/protein_seed_noise.sh` (300 sequences "
            "of 50-100 residues per run, temperature 1, seeds 0-3, reference split of CATH S40).\n\n" + table +
            "\n\n" + spread_text(record) + "\n")
    print(text)
    out = Path("assets/benchmarks/protein_seed_noise.json")
    out.write_text(json.dumps({"command": "bash scripts/studies/protein_seed_noise.sh", "runs": record}, indent=1) + "\n")
    update_section("protein-seed-noise", text)


if __name__ == "__main__":
    main()
