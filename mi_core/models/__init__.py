"""Models behind one interface: token ids ``(B, N)`` -> logits ``(B, N, V)`` and hidden states ``(B, N, D)``."""
