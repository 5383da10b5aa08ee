"""The small protein masked diffusion model (the offline default): the engine's sequence MDM
(:class:`mi_core.models.mdm.SequenceMDM`, rotary positions, padding excluded from attention) over the tokens of
``mi_core.domains.protein`` (mask 0, amino acids 1..20, padding 21), with logits over the 20 amino acids.
"""

from __future__ import annotations

from pathlib import Path

import torch

from mi_core.domains.protein import MASK_ID, PAD_ID
from mi_core.models.base import load_checked, save_model
from mi_core.models.mdm import SequenceMDM, SequenceMDMConfig

ProteinMDMConfig = SequenceMDMConfig  # the fields its checkpoints record


class ProteinMDM(SequenceMDM):
    """Token ids ``(B, L)`` -> ``MDMOutput(logits (B, L, 20), hidden (B, L, D))``."""

    values, mask_id, pad_id = 20, MASK_ID, PAD_ID


def save_protein_mdm(model: ProteinMDM, path: str | Path, extra: dict | None = None) -> None:
    """Weights and config (+ ``extra``), recording the protein domain's key."""
    save_model(model, model.cfg, path, {"kind": "protein_mdm", **(extra or {})}, domain="protein")


def load_protein_mdm(path: str | Path, device: torch.device | str = "cpu") -> ProteinMDM:
    """Load a protein MDM from safetensors + JSON config (raises ModelFileError on a bad file)."""
    return load_checked(ProteinMDMConfig, ProteinMDM, path, device, "a protein MDM")[0]
