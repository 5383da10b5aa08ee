"""Models behind one interface: token ids ``(B, N)`` -> logits ``(B, N, V)`` and hidden states ``(B, N, D)``."""

from mi_core.models.base import MaskedLM, MDMOutput
from mi_core.models.loading import load_model, load_model_described

__all__ = ["MDMOutput", "MaskedLM", "load_model", "load_model_described"]
