"""``python -m mi_core probe antibody --sequence TEXT|--fasta PATH [--record N] --mask-positions cdr3|A-B``:
exact pairwise conditional MI between the masked residues of one antibody variable domain, with AntiBERTy.
``--mask-positions`` takes regions (``cdr1``..``cdr3``, ``cdrs``, ``fr1``..``fr4``) and 1-based residues;
``--csv``-style files (name,vh,vl) and FASTA are read by ``--fasta``. The JSON adds the CDR annotation."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mi_core.device import pick_device
from mi_core.domain import Domain
from mi_core.domains.protein.probe import SequenceProbe, masked_state, probe_and_report
from mi_core.domains.protein.probe import options as protein_options
from mi_core.io import display_path
from mi_core.models.loading import load_model_described
from mi_core.options import option


@dataclass
class AntibodyProbe(SequenceProbe):
    sequence: str | None = option(None, "amino-acid letters of one VH or VL; '_' or X marks a masked residue",
                                  group="source", required=True)
    fasta: Path | None = option(None, "a FASTA or CSV (name,vh,vl) file (see --record)", group="source")
    record: int | None = option(None, "which chain of the file to probe, 1-based (default 1)", range=(1, 10_000_000))
    mask_positions: str | None = option(None, "regions (cdr3, cdrs, fr2 ...) or 1-based residues, e.g. 95-102")
    model: str = option("auto", "auto (the installed AntiBERTy) or a folder with its weights")


def options(domain: Domain) -> list:
    return [AntibodyProbe, *protein_options(domain)[1:]]


def run(args, domain: Domain) -> int:
    name, native, tokens = masked_state(args, lambda text: np.asarray(domain.parse_input(text), dtype=np.int64),
                                        domain.read_records, domain.named_positions, "file")
    device = pick_device(args.device, args.threads)
    model, description = load_model_described(args.model, device, domain)
    model.check_length(len(tokens), description)
    model_json = {"kind": domain.key, "path": display_path(model.weights_path) if model.weights_path else None,
                  "description": description, "fallback_reason": None}
    return probe_and_report(args, domain, model, device, description, name, native, tokens,
                            {"model": model_json, "annotation": domain.annotation(native)})
