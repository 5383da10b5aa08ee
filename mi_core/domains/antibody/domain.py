"""The registered antibody domain: protein tokens, parsed and checked as one variable domain."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from mi_core.domain import Command, is_keyword, resolve_path
from mi_core.domains.antibody import bench_order, evaluate, probe
from mi_core.domains.antibody.infill import CDRInfill, RecoveryMetric
from mi_core.domains.antibody.model import AntiBERTyMissing, load, weights_folder
from mi_core.domains.antibody.order import ORDER_TASK
from mi_core.domains.antibody.sequence import (
    REGIONS,
    AntibodyChain,
    is_csv_text,
    parse_text,
    read_chain,
    read_csv_text,
    read_file,
)
from mi_core.domains.antibody.states import AntibodyStates
from mi_core.domains.protein.tokens import AMINO_ACIDS, MASK_ID, PAD_ID, ProteinDomain, ProteinInputError, tokenize
from mi_core.options import parse_positions


@dataclass(frozen=True)
class AntibodyDomain(ProteinDomain):
    """One antibody variable domain (VH or VL), up to 510 residues, with Kabat CDRs; ``parse_input`` refuses
    anything else with the reason."""

    credit: ClassVar[str] = "AntiBERTy: Ruffolo, Gray and Sulam 2021, arXiv:2112.07782 (MIT licence)"
    # the presets' source, credited under a preset alone (a pasted or uploaded antibody is the user's own)
    preset_credit: ClassVar[str] = "antibodies: Jain et al. 2017, PNAS 114:944-949"

    def parse_state(self, text: str) -> list[int]:
        return tokenize(text, max_length=510).tolist()

    def read(self, text: str, name: str = "sequence") -> AntibodyChain:
        """The one chain of ``text`` (letters, called ``name`` in errors, or one FASTA/CSV record)."""
        chains = parse_text(text, name=name)
        if len(chains) != 1:
            raise ProteinInputError(f"the input holds {len(chains)} chains; give one VH or VL")
        return chains[0]

    def csv_records(self, text: str, source: str = "the pasted CSV", csv_file: bool = False) -> list[AntibodyChain] | None:
        """The chains of CSV text (a header naming ``vh``/``vl``), each checked (``source`` named in the errors);
        None for other text, unless ``csv_file`` (a ``.csv`` file, read as CSV whatever its header, as the
        command line reads one)."""
        return read_csv_text(text, source=source) if csv_file or is_csv_text(text) else None

    def parse_input(self, text: str) -> list[int]:
        return self.read(text).tokens.tolist()

    def read_records(self, path, limit: int | None = None) -> list[tuple[str, np.ndarray]]:
        """``(name, tokens)`` of each chain of a CSV or FASTA file (the first ``limit`` rows or records)."""
        return [(c.name, c.tokens.copy()) for c in read_file(path, limit)]

    def named_positions(self, tokens, spec: str) -> list[int]:
        """0-based positions of a comma list of regions (``cdr3``, ``cdrs``, ``fr2``, ``H3`` ...) and 1-based
        residue ranges (``5,9-20``) of the chain ``tokens``."""
        chain = read_chain(self.state_text(np.asarray(tokens)))
        parts = [p.strip() for p in spec.replace(";", ",").split(",") if p.strip()]
        if not parts:
            raise ValueError(f"--mask-positions: no region or position in {spec!r}")
        named = [p for p in parts if any(ch.isalpha() for ch in p)]
        out = {i for p in named for i in chain.positions(p)}
        residues = [p for p in parts if p not in named]
        if residues:
            out.update(parse_positions(",".join(residues), chain.length,
                                       "a region (cdr3, cdrs, fr1..fr4) or residues like 9-20"))
        return sorted(out)

    def annotation(self, tokens) -> dict:
        """``chain`` and ``regions`` (1-based inclusive ``[first, last]``) of a state, or ``chain`` and ``unplaced``
        (why there are no regions: masked residues hide a conserved one); empty when it is not a chain."""
        try:
            chain = read_chain(self.state_text(np.asarray(tokens)))
        except ProteinInputError:
            return {}
        if chain.unplaced:
            return {"chain": chain.chain, "unplaced": chain.unplaced}
        return {"chain": chain.chain, "numbering": "Kabat CDRs by sequence rules",
                "regions": {r: [a + 1, b] for r, (a, b) in chain.regions.items() if r in REGIONS}}

    def model_path(self) -> Path | None:
        spec = self.model_spec()
        if spec and not is_keyword(spec):
            return resolve_path(spec)
        try:
            return weights_folder() / "pytorch_model.bin"
        except AntiBERTyMissing:
            return None


ANTIBODY = AntibodyDomain(
    "antibody", "Antibody (AntiBERTy)", "antibody", tuple(AMINO_ACIDS), names=("antibody",), mask_id=MASK_ID,
    nouns=("residue", "amino acid"),
    pad_id=PAD_ID, model_env="MI_LENS_ANTIBODY_MODEL", model_default="auto",
    estimator_env="MI_LENS_ANTIBODY_ESTIMATOR", estimator_default="assets/antibody_mi_estimator.safetensors",
    selector_env="MI_LENS_ANTIBODY_SELECTOR",
    probe_fallback=True, model_loader=load, states=AntibodyStates, metric=RecoveryMetric, bench_inputs=CDRInfill,
    order_task=ORDER_TASK, order_bench=bench_order, probe_command=probe,
    commands=(Command("eval-model", "masked-position perplexity against composition: eval-model antibody ...",
                      evaluate.main, evaluate.options),),
    # the CDR in-filling benchmark's settings (BENCHMARKS.md, "Antibodies"): mi at a quarter of sequential's passes
    strategy_defaults=(("mi", "gamma", 8.0), ("mi", "lam", 1.0), ("eb", "gamma", 4.0)),
)
