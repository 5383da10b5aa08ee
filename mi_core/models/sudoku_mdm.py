"""A bidirectional transformer masked diffusion model over Sudoku cells.

Each cell's input is its token embedding plus row, column and box embeddings (the grid's geometry, which
worked far better here than learned positions). Pre-LayerNorm blocks; attention is written as plain
matmuls, which trains about 2x faster than fused attention under CPU bf16 autocast.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from mi_core.domains.sudoku import MASK_ID, Geometry
from mi_core.models.base import MDMOutput, load_config_dict, load_state, save_model


@dataclass(frozen=True)
class SudokuMDMConfig:
    box: int = 3
    d_model: int = 128
    n_layers: int = 6
    n_heads: int = 4
    d_ff: int = 512
    dropout: float = 0.0

    def __post_init__(self):
        if self.box not in (2, 3):
            raise ValueError(f"box must be 2 (4x4) or 3 (9x9), got {self.box}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if min(self.d_model, self.n_layers, self.n_heads, self.d_ff) < 1:
            raise ValueError("d_model, n_layers, n_heads and d_ff must be positive")


class Block(nn.Module):
    def __init__(self, cfg: SudokuMDMConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.ff = nn.Sequential(nn.Linear(cfg.d_model, cfg.d_ff), nn.GELU(), nn.Linear(cfg.d_ff, cfg.d_model))
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)  # (B, H, N, N), no causal mask
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d)
        x = x + self.drop(self.proj(y))
        return x + self.drop(self.ff(self.ln2(x)))


class SudokuMDM(nn.Module):
    """Token ids ``(B, n*n)`` (``MASK_ID`` or digit) -> ``MDMOutput(logits (B, N, n), hidden (B, N, D))``."""

    mask_id = MASK_ID

    def __init__(self, cfg: SudokuMDMConfig = SudokuMDMConfig()):
        super().__init__()
        self.cfg = cfg
        geom = Geometry(cfg.box)
        rows, cols, boxes = (torch.as_tensor(a) for a in geom.indices())
        self.register_buffer("rows", rows, persistent=False)
        self.register_buffer("cols", cols, persistent=False)
        self.register_buffer("boxes", boxes, persistent=False)
        self.register_buffer("value_tokens", torch.arange(1, geom.n + 1), persistent=False)
        self.tok = nn.Embedding(geom.n + 1, cfg.d_model)
        self.row_emb = nn.Embedding(geom.n, cfg.d_model)
        self.col_emb = nn.Embedding(geom.n, cfg.d_model)
        self.box_emb = nn.Embedding(geom.n, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, geom.n)
        self.apply(_init)

    @property
    def seq_len(self) -> int:
        return self.cfg.box**4

    def forward(self, tokens: torch.Tensor) -> MDMOutput:
        x = self.tok(tokens) + self.row_emb(self.rows) + self.col_emb(self.cols) + self.box_emb(self.boxes)
        for block in self.blocks:
            x = block(x)
        hidden = self.ln_f(x)
        return MDMOutput(self.head(hidden).float(), hidden)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


def _init(module: nn.Module) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


def masked_ce(logits: torch.Tensor, target_values: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over masked positions (no 1/t weighting).

    Args:
        logits: ``(B, N, V)``; target_values: ``(B, N)`` value indices; masked: ``(B, N)`` bool.
    """
    return F.cross_entropy(logits[masked].float(), target_values[masked])


def save_sudoku_mdm(model: SudokuMDM, path: str | Path, extra: dict | None = None) -> None:
    save_model(model, model.cfg, path, extra)


def load_sudoku_mdm(path: str | Path, device: torch.device | str = "cpu") -> SudokuMDM:
    """Load a Sudoku MDM from safetensors + JSON config (raises ModelFileError on a bad file)."""
    from mi_core.models.base import ModelFileError

    try:
        cfg = SudokuMDMConfig(**load_config_dict(path))
    except TypeError as err:
        raise ModelFileError(f"{path}: config does not describe a Sudoku MDM: {err}") from None
    return load_state(SudokuMDM(cfg), path, torch.device(device))
