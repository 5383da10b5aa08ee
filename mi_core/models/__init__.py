"""Models behind one interface: token ids ``(B, N)`` -> logits ``(B, N, V)`` and hidden states ``(B, N, D)``."""

from mi_core.models.base import MaskedModel, MDMOutput

__all__ = ["MDMOutput", "MaskedModel"]
