"""The small protein masked diffusion model (the offline default): the engine's sequence MDM over protein tokens."""

from __future__ import annotations

from pathlib import Path

import torch

from mi_core.domains.protein import MASK_ID, PAD_ID
from mi_core.models.base import load_checked, save_model
from mi_core.models.mdm import SequenceMDM, SequenceMDMConfig

ProteinMDMConfig = SequenceMDMConfig


class ProteinMDM(SequenceMDM):
    """Token ids ``(B, L)`` -> ``MDMOutput(logits (B, L, 20), hidden (B, L, D))``."""

    values, mask_id, pad_id = 20, MASK_ID, PAD_ID


def save_protein_mdm(model: ProteinMDM, path: str | Path, extra: dict | None = None) -> None:
    save_model(model, model.cfg, path, {"kind": "protein_mdm", **(extra or {})}, domain="protein")


def load_protein_mdm(path: str | Path, device: torch.device | str = "cpu") -> ProteinMDM:
    return load_checked(ProteinMDMConfig, ProteinMDM, path, device, "a protein MDM")[0]
