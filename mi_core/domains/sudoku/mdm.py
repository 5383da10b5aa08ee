"""The Sudoku masked diffusion model: the engine's transformer (:class:`mi_core.models.mdm.TransformerMDM`) with
a cell's position the sum of its row, column and box embeddings (far better here than learned positions)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from mi_core.domains.sudoku import MASK_ID, Geometry
from mi_core.models.base import load_checked, masked_ce, save_model  # noqa: F401  (masked_ce re-exported)
from mi_core.models.mdm import ATTENTION, TransformerMDM
from mi_core.options import option


@dataclass(frozen=True)
class SudokuMDMConfig:
    box: int = option(3, "box side: 3, 9x9 Sudoku (2, a 4x4 model, is read from configs; train sudoku trains 9x9)",
                      range=(2, 3))
    d_model: int = option(128, "width of the hidden states", range=(1, 8192))
    n_layers: int = option(6, "transformer blocks in the stack", range=(1, 256))
    n_heads: int = option(4, "attention heads per block", range=(1, 256))
    d_ff: int = option(512, "width of each block's feed-forward layer", range=(1, 65536))
    dropout: float = option(0.0, "dropout rate in training", range=(0, 0.99))
    loops: int = option(1, "the block stack applied this many times with tied weights (a looped transformer)", range=(1, 64))
    attention: str = option("full", '"full", "peer" (masked to the 20 peers + self) or "peer_bias" (full + a learned peer bias)',
                            choices=ATTENTION)
    inject: bool = option(False, "add the input embedding back before every iteration after the first", negatable=True)

    def __post_init__(self):
        if self.attention not in ATTENTION:
            raise ValueError(f"attention must be one of {', '.join(ATTENTION)}, got {self.attention!r}")
        if self.box not in (2, 3):
            raise ValueError(f"box must be 2 (4x4) or 3 (9x9), got {self.box}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if min(self.d_model, self.n_layers, self.n_heads, self.d_ff, self.loops) < 1:
            raise ValueError("d_model, n_layers, n_heads, d_ff and loops must be positive")


class SudokuMDM(TransformerMDM):
    """Token ids ``(B, n*n)`` (``MASK_ID`` or digit) -> ``MDMOutput(logits (B, N, n), hidden (B, N, D))``."""

    mask_id = MASK_ID

    def __init__(self, cfg: SudokuMDMConfig = SudokuMDMConfig()):
        geom = Geometry(cfg.box)
        tables = dict(zip(("row", "col", "box"), geom.indices()))
        peers = torch.as_tensor(geom.peers(), dtype=torch.bool) | torch.eye(geom.cells, dtype=torch.bool)
        super().__init__(cfg, geom.n, geom.n + 1, tables=tables, peers=peers, attention=cfg.attention,
                         loops=cfg.loops, inject=cfg.inject)


def save_sudoku_mdm(model: SudokuMDM, path: str | Path, extra: dict | None = None) -> None:
    """Weights and config (+ ``extra``), recording the key of the domain its grid is: ``sudoku9`` or ``sudoku4``."""
    save_model(model, model.cfg, path, extra, domain="sudoku9" if model.cfg.box == 3 else "sudoku4")


def load_sudoku_mdm(path: str | Path, device: torch.device | str = "cpu") -> SudokuMDM:
    """Load a Sudoku MDM from safetensors + JSON config (raises ModelFileError on a bad file)."""
    return load_checked(SudokuMDMConfig, SudokuMDM, path, device, "a Sudoku MDM")[0]
