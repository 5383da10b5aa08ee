"""A bidirectional transformer masked diffusion model over Sudoku cells.

Each cell's input is its token embedding plus row, column and box embeddings (the grid's geometry, which
worked far better here than learned positions), then pre-LayerNorm blocks (``mi_core.models.transformer``).

The same class is also a *peer-recurrent* model, by config:
- ``attention="peer"`` masks attention to each cell's 20 peers (same row, column or box) and itself, by an
  additive mask (4x faster on these CPUs than gathering the peers); ``"peer_bias"`` keeps full attention and
  adds a learned bias per layer and head on peer pairs, zero at the start, so a trained full-attention model
  warm-starts it unchanged;
- ``loops`` applies the block stack that many times with tied weights; ``inject`` adds the input embedding
  back before every iteration after the first;
- one head reads every iteration: :meth:`SudokuMDM.forward` with ``keep`` returns the logits of the last
  ``keep`` iterations (deep supervision), ``no_grad`` runs the first iterations without autograd, and
  ``iterations`` overrides the count (more iterations at test time).
The interface callers use (``model(tokens).logits``, ``.hidden``) is the last iteration's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from mi_core.domains.sudoku import MASK_ID, Geometry
from mi_core.models.base import MaskedLM, MDMOutput, load_checked, masked_ce, save_model  # noqa: F401  (masked_ce re-exported)
from mi_core.models.transformer import Block, init_weights
from mi_core.options import option

ATTENTION = ("full", "peer", "peer_bias")
PEER_GAIN_LR_SCALE = 30.0  # the peer bias learns at 30x the rate: from 0 to a few units within a few hundred steps


@dataclass(frozen=True)
class SudokuMDMConfig:
    box: int = option(3, range=(2, 3))
    d_model: int = option(128, range=(1, 8192))
    n_layers: int = option(6, range=(1, 256))
    n_heads: int = option(4, range=(1, 256))
    d_ff: int = option(512, range=(1, 65536))
    dropout: float = option(0.0, range=(0, 0.99))
    loops: int = option(1, "the block stack applied this many times with tied weights (a looped transformer)", range=(1, 64))
    attention: str = option("full", '"full", "peer" (masked to the 20 peers + self) or "peer_bias" (full + a learned peer bias)')
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
        peers = torch.as_tensor(geom.peers(), dtype=torch.bool) | torch.eye(geom.cells, dtype=torch.bool)
        self.register_buffer("peers", peers, persistent=False)
        if cfg.attention == "peer_bias":
            self.peer_gain = nn.Parameter(torch.zeros(cfg.n_layers, cfg.n_heads))
            self.lr_scales = {"peer_gain": PEER_GAIN_LR_SCALE}
        self.iterations = cfg.loops  # iterations at inference: a setting (more than were trained is allowed)

    @property
    def seq_len(self) -> int:
        return self.cfg.box**4

    def _biases(self) -> list[torch.Tensor | None]:
        """The additive attention bias of each layer: None, the peer mask, or the learned peer bias."""
        if self.cfg.attention == "peer":
            mask = torch.zeros(self.peers.shape, device=self.peers.device).masked_fill(~self.peers, float("-inf"))
            return [mask] * self.cfg.n_layers
        if self.cfg.attention == "peer_bias":
            return [g[:, None, None] * self.peers for g in self.peer_gain]  # (H, N, N) each
        return [None] * self.cfg.n_layers

    def _out(self, x: torch.Tensor) -> MDMOutput:
        hidden = self.ln_f(x)
        return MDMOutput(self.head(hidden).float(), hidden)

    def forward(self, tokens: torch.Tensor, iterations: int | None = None, keep: int = 0,
                no_grad: int = 0) -> MDMOutput:
        """The last iteration's logits and hidden states.

        Args:
            iterations: applications of the block stack (default ``self.iterations``);
            keep: > 0 also returns the logits of the last ``keep`` iterations in ``per_iteration``;
            no_grad: the first ``no_grad`` iterations run without autograd (truncated backpropagation).
        """
        emb = self.tok(tokens) + self.row_emb(self.rows) + self.col_emb(self.cols) + self.box_emb(self.boxes)
        steps = iterations or self.iterations
        biases, x, kept = self._biases(), emb, []
        for i in range(steps):
            with torch.set_grad_enabled(torch.is_grad_enabled() and i >= no_grad):
                if i and self.cfg.inject:
                    x = x + emb
                for block, bias in zip(self.blocks, biases):
                    x = block(x, bias)
            if keep and i >= steps - keep and i < steps - 1:
                kept.append(self._out(x).logits)
        out = self._out(x)
        if keep:
            out.per_iteration = kept + [out.logits]
        return out


def save_sudoku_mdm(model: SudokuMDM, path: str | Path, extra: dict | None = None) -> None:
    """Weights and config (+ ``extra``), recording the Sudoku 9x9 domain's key."""
    save_model(model, model.cfg, path, extra, domain="sudoku9")


def load_sudoku_mdm(path: str | Path, device: torch.device | str = "cpu") -> SudokuMDM:
    """Load a Sudoku MDM from safetensors + JSON config (raises ModelFileError on a bad file)."""
    return load_checked(SudokuMDMConfig, SudokuMDM, path, device, "a Sudoku MDM")[0]
