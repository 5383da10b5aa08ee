"""The engine's one transformer MDM gives, bit for bit, what the Sudoku and sequence MDMs it replaced gave.

``OldSudokuMDM`` and ``OldSequenceMDM`` are those models' forward passes as they were written before the
engine had one model (the blocks are shared and unchanged); every shipped checkpoint is loaded into both
and the outputs compared with ``torch.equal``. The chained run's resumable checkpoint must still load
(model strictly, optimiser groups in parameter order).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from mi_core.domains.protein.mdm import load_protein_mdm
from mi_core.domains.sudoku import Geometry
from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig, load_sudoku_mdm
from mi_core.domains.sudoku.train import TrainConfig
from mi_core.models.mdm import Block, TransformerMDM, rope_tables
from mi_core.train.mdm import EMA, optimizer

ROOT = Path(__file__).resolve().parents[1]
SUDOKU_FILES = ["assets/sudoku_mdm.safetensors", "assets/sudoku_mdm_hard.safetensors",
                "checkpoints/sudoku_chain/phase1/model.safetensors"]
CHAIN_CKPT = ROOT / "checkpoints/sudoku_chain/model.ckpt"


class OldSudokuMDM(nn.Module):
    """The Sudoku MDM's forward before the engine model: token + row/col/box embeddings, peer mask or
    learned peer bias, weight-tied loops with input re-injection."""

    def __init__(self, cfg: SudokuMDMConfig):
        super().__init__()
        self.cfg, geom = cfg, Geometry(cfg.box)
        self.rows, self.cols, self.boxes = (torch.as_tensor(i) for i in geom.indices())
        self.tok = nn.Embedding(geom.n + 1, cfg.d_model)
        self.row_emb, self.col_emb, self.box_emb = (nn.Embedding(geom.n, cfg.d_model) for _ in range(3))
        self.blocks = nn.ModuleList(Block(cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.dropout) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, geom.n)
        self.peers = torch.as_tensor(geom.peers(), dtype=torch.bool) | torch.eye(geom.cells, dtype=torch.bool)
        if cfg.attention == "peer_bias":
            self.peer_gain = nn.Parameter(torch.zeros(cfg.n_layers, cfg.n_heads))

    def _biases(self):
        if self.cfg.attention == "peer":
            return [torch.zeros(self.peers.shape).masked_fill(~self.peers, float("-inf"))] * self.cfg.n_layers
        if self.cfg.attention == "peer_bias":
            return [g[:, None, None] * self.peers for g in self.peer_gain]
        return [None] * self.cfg.n_layers

    def forward(self, tokens, iterations=None, keep=0):
        emb = self.tok(tokens) + self.row_emb(self.rows) + self.col_emb(self.cols) + self.box_emb(self.boxes)
        steps, biases, x, kept = iterations or self.cfg.loops, self._biases(), emb, []
        for i in range(steps):
            if i and self.cfg.inject:
                x = x + emb
            for block, bias in zip(self.blocks, biases):
                x = block(x, bias)
            if keep and steps - keep <= i < steps - 1:
                kept.append(self.head(self.ln_f(x)).float())
        hidden = self.ln_f(x)
        return [*kept, self.head(hidden).float(), hidden]


class OldSequenceMDM(nn.Module):
    """The sequence (protein) MDM's forward before the engine model: rotary positions, padding masked."""

    def __init__(self, cfg, values: int, n_tokens: int, pad_id: int):
        super().__init__()
        self.pad_id = pad_id
        self.tok = nn.Embedding(n_tokens, cfg.d_model)
        self.rope = rope_tables(cfg.max_len, cfg.d_model // cfg.n_heads)
        self.blocks = nn.ModuleList(Block(cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.dropout) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, values)

    def forward(self, tokens):
        n, pad, bias = tokens.shape[1], tokens == self.pad_id, None
        if bool(pad.any()):
            bias = torch.zeros(pad.shape).masked_fill(pad, float("-inf"))[:, None, None, :]
        x = self.tok(tokens)
        for block in self.blocks:
            x = block(x, bias, (self.rope[0][:n], self.rope[1][:n]))
        hidden = self.ln_f(x)
        return [self.head(hidden).float(), hidden]


def outputs(out) -> list[torch.Tensor]:
    return [*(out.per_iteration[:-1] if out.per_iteration else []), out.logits, out.hidden]


def same(new: list, old: list) -> bool:
    return len(new) == len(old) and all(torch.equal(a, b) for a, b in zip(new, old))


@pytest.mark.parametrize("name", SUDOKU_FILES)
def test_shipped_sudoku_models_give_the_same_outputs(name):
    model = load_sudoku_mdm(ROOT / name)
    old = OldSudokuMDM(model.cfg).eval()
    old.load_state_dict(model.state_dict(), strict=True)  # the same keys: tok, row_emb, ..., blocks.*, head
    tokens = torch.randint(0, 10, (3, 81), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert same(outputs(model(tokens)), old(tokens))
        if model.cfg.loops > 1:
            assert same(outputs(model(tokens, iterations=5, keep=3)), old(tokens, iterations=5, keep=3))


@pytest.mark.parametrize("cfg", [
    SudokuMDMConfig(box=2, d_model=16, n_layers=2, n_heads=2, d_ff=32, attention="peer_bias", loops=2, inject=True),
    SudokuMDMConfig(box=2, d_model=16, n_layers=1, n_heads=2, d_ff=32, attention="peer", loops=3),
    SudokuMDMConfig(box=3, d_model=16, n_layers=2, n_heads=4, d_ff=32)])
def test_every_attention_and_loop_setting_matches(cfg):
    torch.manual_seed(0)
    model, old = SudokuMDM(cfg).eval(), OldSudokuMDM(cfg).eval()
    # the optimiser's order (resumed checkpoints) and the state dict's keys, in order
    assert [n for n, _ in model.named_parameters()] == [n for n, _ in old.named_parameters()]
    assert list(model.state_dict()) == list(old.state_dict())
    with torch.no_grad():
        for p in model.parameters():
            p.normal_()  # also a non-zero peer bias
    old.load_state_dict(model.state_dict(), strict=True)
    tokens = torch.randint(0, cfg.box**2 + 1, (2, cfg.box**4), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert same(outputs(model(tokens, keep=2)), old(tokens, keep=2))


def test_shipped_protein_model_gives_the_same_outputs():
    model = load_protein_mdm(ROOT / "assets/protein_mdm.safetensors")
    assert "positions" not in json.loads((ROOT / "assets/protein_mdm.json").read_text())["config"]
    assert model.cfg.positions == "rotary"  # a config from before the setting reads as rotary
    old = OldSequenceMDM(model.cfg, 20, model.tok.num_embeddings, model.pad_id).eval()
    old.load_state_dict(model.state_dict(), strict=True)
    tokens = torch.randint(1, 21, (3, 60), generator=torch.Generator().manual_seed(0))
    tokens[1, 40:], tokens[2, 10:], tokens[:, ::7] = model.pad_id, model.pad_id, model.mask_id
    with torch.no_grad():
        assert same(outputs(model(tokens)), old(tokens))  # padded
        assert same(outputs(model(tokens[:1, :40])), old(tokens[:1, :40]))  # no padding


def test_the_chained_runs_checkpoint_still_resumes():
    state = torch.load(CHAIN_CKPT, map_location="cpu", weights_only=True)
    model = SudokuMDM(SudokuMDMConfig(**json.loads(state["model_cfg"])))
    model.load_state_dict(state["model"], strict=True)
    EMA(model, 0.999).model.load_state_dict(state["ema"])
    opt = optimizer(model, TrainConfig(**json.loads(state["cfg"])))
    opt.load_state_dict(state["opt"])
    params = [p for group in opt.param_groups for p in group["params"]]
    assert [p.shape for p in params] == [p.shape for p in model.parameters()]
    assert all(opt.state[p]["exp_avg"].shape == p.shape for p in params)


def test_the_engine_model_refuses_what_it_cannot_build():
    cfg = SudokuMDMConfig(box=2, d_model=16, n_layers=1, n_heads=2, d_ff=32)
    with pytest.raises(ValueError, match="neighbour matrix"):
        TransformerMDM(cfg, 4, 5, max_len=16, rotary=True, attention="peer")
    for kw in ({}, {"rotary": True}, {"max_len": 16}):
        with pytest.raises(ValueError, match="give the positions"):
            TransformerMDM(cfg, 4, 5, **kw)
    with pytest.raises(ValueError, match="attention must be one of"):
        TransformerMDM(cfg, 4, 5, max_len=16, rotary=True, attention="local")
    with pytest.raises(ValueError, match="17 positions, but this model takes up to 16"):
        TransformerMDM(cfg, 4, 5, max_len=16, rotary=True)(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match="15 positions, but this model takes 16"):  # a fixed length, not a prefix
        SudokuMDM(cfg)(torch.zeros(1, 15, dtype=torch.long))
