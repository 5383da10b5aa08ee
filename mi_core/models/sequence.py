"""The engine's masked language model over sequences of any length up to ``max_len``.

A bidirectional transformer (``mi_core.models.transformer`` blocks) with rotary position embeddings:
attention sees relative offsets from the first step, where learned absolute positions left a first protein
run stuck at the unigram loss for 1,500 steps. Padding is excluded from attention, so a batch may mix
lengths. A domain gives its vocabulary by subclassing: ``n_values`` values (tokens ``1..n_values``),
``mask_id`` and ``pad_id`` (the protein MDM, the toy domain's trained model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from mi_core.models.base import MaskedLM, MDMOutput
from mi_core.models.transformer import Block, init_weights, rope_tables
from mi_core.options import option


@dataclass(frozen=True)
class SequenceMDMConfig:
    max_len: int = option(256, "longest sequence the model takes", range=(1, 100_000))
    d_model: int = option(128, "hidden size", range=(1, 8192))
    n_layers: int = option(6, "transformer blocks", range=(1, 256))
    n_heads: int = option(4, "attention heads", range=(1, 256))
    d_ff: int = option(512, "feed-forward width", range=(1, 65_536))
    dropout: float = option(0.1, "dropout rate", range=(0, 0.99))

    def __post_init__(self):
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(f"d_model {self.d_model} / n_heads {self.n_heads} must be a whole, even head size")
        if min(self.max_len, self.d_model, self.n_layers, self.n_heads, self.d_ff) < 1:
            raise ValueError("max_len, d_model, n_layers, n_heads and d_ff must be positive")


class SequenceMDM(MaskedLM):
    """Token ids ``(B, L)`` -> ``MDMOutput(logits (B, L, n_values), hidden (B, L, D))``; a subclass names
    the vocabulary (:attr:`values`, :attr:`mask_id`, :attr:`pad_id`; token ``v + 1`` is value ``v``)."""

    values: ClassVar[int]
    mask_id: ClassVar[int] = 0
    pad_id: ClassVar[int]

    def __init__(self, cfg: SequenceMDMConfig = SequenceMDMConfig()):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("value_tokens", torch.arange(1, self.values + 1), persistent=False)
        self.tok = nn.Embedding(max(self.values + 1, self.pad_id, self.mask_id) + 1, cfg.d_model)
        cos, sin = rope_tables(cfg.max_len, cfg.d_model // cfg.n_heads)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.blocks = nn.ModuleList(Block(cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.dropout) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, self.values)
        self.apply(init_weights)

    @property
    def max_len(self) -> int:
        return self.cfg.max_len

    def forward(self, tokens: torch.Tensor) -> MDMOutput:
        n = tokens.shape[1]
        if n > self.cfg.max_len:
            raise ValueError(f"sequence of {n} positions is longer than the {self.cfg.max_len} this model takes")
        pad = tokens == self.pad_id
        bias = None
        if bool(pad.any()):
            bias = torch.zeros(pad.shape, dtype=torch.float32, device=tokens.device).masked_fill(pad, float("-inf"))[:, None, None, :]
        x = self.tok(tokens)
        rope = (self.rope_cos[:n], self.rope_sin[:n])
        for block in self.blocks:
            x = block(x, bias, rope)
        hidden = self.ln_f(x)
        return MDMOutput(self.head(hidden).float(), hidden)
