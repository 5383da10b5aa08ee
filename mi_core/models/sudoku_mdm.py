"""A bidirectional transformer masked diffusion model over Sudoku cells.

Each cell's input is its token embedding plus row, column and box embeddings (the grid's geometry, which
worked far better here than learned positions), then pre-LayerNorm blocks (``mi_core.models.transformer``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from mi_core.domains.sudoku import MASK_ID, Geometry
from mi_core.models.base import MaskedLM, MDMOutput, load_checked, masked_ce, save_model  # noqa: F401  (masked_ce re-exported)
from mi_core.models.transformer import Block, init_weights


@dataclass(frozen=True)
class SudokuMDMConfig:
    box: int = 3
    d_model: int = 128
    n_layers: int = 6
    n_heads: int = 4
    d_ff: int = 512
    dropout: float = 0.0
    loops: int = 1  # the block stack applied this many times with tied weights (a looped transformer)

    def __post_init__(self):
        if self.box not in (2, 3):
            raise ValueError(f"box must be 2 (4x4) or 3 (9x9), got {self.box}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if min(self.d_model, self.n_layers, self.n_heads, self.d_ff, self.loops) < 1:
            raise ValueError("d_model, n_layers, n_heads, d_ff and loops must be positive")


class SudokuMDM(MaskedLM):
    """Token ids ``(B, n*n)`` (``MASK_ID`` or digit) -> ``MDMOutput(logits (B, N, n), hidden (B, N, D))``."""

    mask_id = MASK_ID

    def __init__(self, cfg: SudokuMDMConfig = SudokuMDMConfig()):
        super().__init__()
        self.cfg = cfg
        geom = Geometry(cfg.box)
        for name, index in zip(("rows", "cols", "boxes"), geom.indices()):
            self.register_buffer(name, torch.as_tensor(index), persistent=False)
        self.register_buffer("value_tokens", torch.arange(1, geom.n + 1), persistent=False)
        self.tok = nn.Embedding(geom.n + 1, cfg.d_model)
        self.row_emb = nn.Embedding(geom.n, cfg.d_model)
        self.col_emb = nn.Embedding(geom.n, cfg.d_model)
        self.box_emb = nn.Embedding(geom.n, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.dropout) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, geom.n)
        self.apply(init_weights)

    @property
    def seq_len(self) -> int:
        return self.cfg.box**4

    def forward(self, tokens: torch.Tensor) -> MDMOutput:
        x = self.tok(tokens) + self.row_emb(self.rows) + self.col_emb(self.cols) + self.box_emb(self.boxes)
        for _ in range(self.cfg.loops):
            for block in self.blocks:
                x = block(x)
        hidden = self.ln_f(x)
        return MDMOutput(self.head(hidden).float(), hidden)


def save_sudoku_mdm(model: SudokuMDM, path: str | Path, extra: dict | None = None) -> None:
    save_model(model, model.cfg, path, extra)


def load_sudoku_mdm(path: str | Path, device: torch.device | str = "cpu") -> SudokuMDM:
    """Load a Sudoku MDM from safetensors + JSON config (raises ModelFileError on a bad file)."""
    return load_checked(SudokuMDMConfig, SudokuMDM, path, device, "a Sudoku MDM")[0]
