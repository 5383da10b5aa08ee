"""The protein domain object: its shipped files and the engine parts it plugs in."""

from __future__ import annotations

from pathlib import Path

from mi_core.domains.protein import bench_order, probe
from mi_core.domains.protein.bench import GeneratedSequences
from mi_core.domains.protein.metrics import CompositionMetric
from mi_core.domains.protein.model import load_protein_model
from mi_core.domains.protein.states import ProteinStates
from mi_core.domains.protein.tokens import AMINO_ACIDS, MASK_ID, PAD_ID, ProteinDomain
from mi_core.domains.protein.train import ProteinOrderTask, ProteinTask
from mi_core.models.base import MaskedLM


def load_protein(spec: str | Path | None, device) -> tuple[MaskedLM, str]:
    """``(model, description)`` of a spec of :func:`load_protein_model`: the model first, then why ``auto`` did not
    load ESM-C."""
    model, info = load_protein_model(str(spec or "auto"), device)
    model.weights_path = info.path
    return model, info.description + (f" (ESM-C not used: {info.esmc_skipped})" if info.esmc_skipped else "")


PROTEIN = ProteinDomain(
    "protein", "Protein", "protein", tuple(AMINO_ACIDS), names=("protein",), mask_id=MASK_ID, pad_id=PAD_ID,
    nouns=("residue", "amino acid"),
    model_env="MI_LENS_PROTEIN_MODEL", model_default="auto", model_fallback="assets/protein_mdm.safetensors",
    model_keywords=("auto", "esmc", "mdm"), foreign_weights=True,
    stamp_envs=("MI_LENS_ESMC_WEIGHTS",),
    estimator_env="MI_LENS_PROTEIN_ESTIMATOR", estimator_default="assets/protein_mi_estimator.safetensors",
    selector_env="MI_LENS_PROTEIN_SELECTOR", selector_default="assets/protein_order_selector.safetensors",
    probe_fallback=True, model_loader=load_protein, states=ProteinStates, metric=CompositionMetric,
    order_task=ProteinOrderTask(), trainer=ProteinTask, bench_inputs=GeneratedSequences, order_bench=bench_order,
    probe_command=probe,
    # the smallest budget of the protein benchmarks' grid (8-64 nats): at the registry's 1.0 and 0.1, mi and eb both
    # fill one residue a pass, since a masked residue's entropy is 2.5-2.9 nats
    strategy_defaults=(("mi", "gamma", 8.0), ("mi", "lam", 1.0), ("eb", "gamma", 8.0)),
)
