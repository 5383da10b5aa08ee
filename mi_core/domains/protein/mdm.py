"""The small protein masked diffusion model (the offline default): the engine's sequence MDM over protein tokens,
token ids ``(B, L)`` -> ``MDMOutput(logits (B, L, 20), hidden (B, L, D))``."""

from __future__ import annotations

from mi_core.domains.protein import MASK_ID, PAD_ID
from mi_core.models.mdm import DomainMDM, SequenceMDMConfig

PROTEIN_MDM = DomainMDM("protein", values=20, mask_id=MASK_ID, pad_id=PAD_ID)
ProteinMDMConfig = SequenceMDMConfig
ProteinMDM, save_protein_mdm, load_protein_mdm = PROTEIN_MDM.model_cls, PROTEIN_MDM.save, PROTEIN_MDM.load
