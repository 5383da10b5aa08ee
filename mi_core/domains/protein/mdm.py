"""A small bidirectional transformer masked diffusion model over protein sequences (the offline default).

Input: token ids from ``mi_core.domains.protein`` (mask 0, amino acids 1..20, padding 21) of any length
up to ``max_len``; output: logits over the 20 amino acids and the final hidden states. Rotary position
embeddings (as in ESM-2 and ESM-C): attention sees relative offsets from the first step, where learned
absolute positions left a first run stuck at the unigram loss for 1,500 steps. Padding is excluded from
attention, so a batch may mix lengths. Attention is written as plain
matmuls (``mi_core.models.transformer``, shared with the Sudoku MDM).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from mi_core.domains.protein import MASK_ID, PAD_ID, VOCAB_SIZE
from mi_core.models.base import MaskedLM, MDMOutput, load_checked, save_model
from mi_core.models.transformer import Block, init_weights, rope_tables


@dataclass(frozen=True)
class ProteinMDMConfig:
    max_len: int = 256
    d_model: int = 128
    n_layers: int = 6
    n_heads: int = 4
    d_ff: int = 512
    dropout: float = 0.1

    def __post_init__(self):
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(f"d_model {self.d_model} / n_heads {self.n_heads} must be a whole, even head size")
        if min(self.max_len, self.d_model, self.n_layers, self.n_heads, self.d_ff) < 1:
            raise ValueError("max_len, d_model, n_layers, n_heads and d_ff must be positive")


class ProteinMDM(MaskedLM):
    """Token ids ``(B, L)`` -> ``MDMOutput(logits (B, L, 20), hidden (B, L, D))``."""

    mask_id = MASK_ID

    def __init__(self, cfg: ProteinMDMConfig = ProteinMDMConfig()):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("value_tokens", torch.arange(1, 21), persistent=False)
        self.tok = nn.Embedding(VOCAB_SIZE, cfg.d_model)
        cos, sin = rope_tables(cfg.max_len, cfg.d_model // cfg.n_heads)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.blocks = nn.ModuleList(Block(cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.dropout) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, 20)
        self.apply(init_weights)

    @property
    def max_len(self) -> int:
        return self.cfg.max_len

    def forward(self, tokens: torch.Tensor) -> MDMOutput:
        n = tokens.shape[1]
        if n > self.cfg.max_len:
            raise ValueError(f"sequence of {n} residues is longer than the {self.cfg.max_len} this model takes")
        pad = tokens == PAD_ID
        bias = None
        if bool(pad.any()):
            bias = torch.zeros(pad.shape, dtype=torch.float32, device=tokens.device).masked_fill(pad, float("-inf"))[:, None, None, :]
        x = self.tok(tokens)
        rope = (self.rope_cos[:n], self.rope_sin[:n])
        for block in self.blocks:
            x = block(x, bias, rope)
        hidden = self.ln_f(x)
        return MDMOutput(self.head(hidden).float(), hidden)


def save_protein_mdm(model: ProteinMDM, path: str | Path, extra: dict | None = None) -> None:
    """Weights and config (+ ``extra``), recording the protein domain's key."""
    save_model(model, model.cfg, path, {"kind": "protein_mdm", **(extra or {})}, domain="protein")


def load_protein_mdm(path: str | Path, device: torch.device | str = "cpu") -> ProteinMDM:
    """Load a protein MDM from safetensors + JSON config (raises ModelFileError on a bad file)."""
    return load_checked(ProteinMDMConfig, ProteinMDM, path, device, "a protein MDM")[0]
