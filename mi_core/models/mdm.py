"""The engine's masked language model: one bidirectional transformer whose positions and attention are
chosen by the domain that builds it.

- **positions**: ``rotary`` (relative offsets, up to ``max_len``), factored ``tables`` (name -> ``(N,)`` index,
  each embedded as ``NAME_emb`` and added to the token embedding: Sudoku's rows, columns and boxes), or both (a
  sequence MDM's ``positions="absolute"`` or ``"both"``: a ``pos`` table of ``max_len`` rows, cut to the sequence);
- **attention**: ``"full"``; ``"peer"``, an additive mask to the ``(N, N)`` neighbour matrix ``peers`` (4x
  faster on CPUs than gathering); or ``"peer_bias"``, full attention plus a learned bias on neighbour pairs
  (``peer_gain``, zero at the start, so a full-attention model warm-starts it unchanged);
- **padding**: with a ``pad_id``, padded keys are excluded from attention;
- **loops**: the block stack applied that many times with tied weights (``inject`` re-adds the input
  embedding before each later iteration), one head reading every iteration.

:class:`SequenceMDM` is the engine's MDM over sequences; :class:`DomainMDM` gives a sequence domain its own, with
the save, load and ``model_loader`` of its files, from the domain's key and vocabulary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from mi_core.models.base import MaskedLM, MDMOutput, load_checked, save_model
from mi_core.options import check_ranges, option

ATTENTION = ("full", "peer", "peer_bias")
POSITIONS = ("rotary", "absolute", "both")  # a sequence MDM's: relative offsets, a learned vector per place, both
PEER_GAIN_LR_SCALE = 30.0  # the peer bias learns at 30x the rate: from 0 to a few units within a few hundred steps


class Block(nn.Module):
    """A pre-LayerNorm bidirectional block. Attention is plain matmuls: under CPU bf16 autocast this trains
    about 2x faster than fused attention."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None = None,
                rope: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        """``x`` ``(B, N, D)``; ``bias`` broadcastable to ``(B, H, N, N)``; ``rope``: (cos, sin) ``(N, D/H)``."""
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        if rope is not None:
            q, k = rotate(q, *rope), rotate(k, *rope)
        att = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)  # (B, H, N, N), no causal mask
        if bias is not None:
            att = att + bias.to(att.dtype)
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d)
        x = x + self.drop(self.proj(y))
        return x + self.drop(self.ff(self.ln2(x)))


def rope_tables(max_len: int, head_dim: int, base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """``cos``, ``sin`` ``(max_len, head_dim)`` for rotary embeddings (pairs (i, i + head_dim/2) rotate together)."""
    inv = base ** (-torch.arange(0, head_dim // 2, dtype=torch.float32) * 2 / head_dim)
    angles = torch.arange(max_len, dtype=torch.float32)[:, None] * inv[None]
    angles = torch.cat([angles, angles], -1)
    return angles.cos(), angles.sin()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of ``x`` ``(B, H, N, hd)`` with tables cut to ``N`` rows."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * cos.to(x.dtype) + rotated * sin.to(x.dtype)


def init_weights(module: nn.Module) -> None:
    """Normal(0, 0.02) linear and embedding weights, zero biases (``model.apply(init_weights)``)."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


class TransformerMDM(MaskedLM):
    """Token ids ``(B, N)`` -> ``MDMOutput(logits (B, N, n_values), hidden (B, N, D))``.

    Args:
        cfg: a config with ``d_model``, ``n_layers``, ``n_heads``, ``d_ff`` and ``dropout`` (kept as ``cfg``);
        n_values: values the head scores (token ``v + 1`` writes value ``v``); n_tokens: embedding rows;
        max_len: the longest sequence, whose length varies (None: a fixed length, the ``tables``');
        rotary: rotary positions (needs ``max_len``);
        tables: name -> ``(N,)`` int array, the index of each position (``max_len`` long when given: cut to
            a shorter sequence);
        peers: ``(N, N)`` bool, the neighbours each position may attend to under ``"peer"`` attention.
    """

    def __init__(self, cfg, n_values: int, n_tokens: int, *, max_len: int | None = None, rotary: bool = False,
                 tables: dict[str, np.ndarray] | None = None, peers: torch.Tensor | None = None,
                 attention: str = "full", loops: int = 1, inject: bool = False, pad_id: int | None = None):
        super().__init__()
        if attention not in ATTENTION:
            raise ValueError(f"attention must be one of {', '.join(ATTENTION)}, got {attention!r}")
        if not (rotary or tables) or (rotary and max_len is None):
            raise ValueError("give the positions: rotary (with a max_len), index tables, or both")
        if attention != "full" and peers is None:
            raise ValueError(f"attention {attention!r} needs the domain's neighbour matrix (peers)")
        self.cfg, self.attention, self.inject, self.pad_id = cfg, attention, inject, pad_id
        self.tables = tuple(tables or ())
        self.register_buffer("value_tokens", torch.arange(1, n_values + 1), persistent=False)
        self.tok = nn.Embedding(n_tokens, cfg.d_model)
        for name, index in (tables or {}).items():
            self.register_buffer(f"{name}_index", torch.as_tensor(index), persistent=False)
            setattr(self, f"{name}_emb", nn.Embedding(int(np.max(index)) + 1, cfg.d_model))
        if rotary:
            cos, sin = rope_tables(max_len, cfg.d_model // cfg.n_heads)
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)
        self.blocks = nn.ModuleList(Block(cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.dropout) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, n_values)
        self.apply(init_weights)
        if peers is not None:
            self.register_buffer("peers", torch.as_tensor(peers, dtype=torch.bool), persistent=False)
        if attention == "peer_bias":
            self.peer_gain = nn.Parameter(torch.zeros(cfg.n_layers, cfg.n_heads))
            self.lr_scales = {"peer_gain": PEER_GAIN_LR_SCALE}
        self.rotary, self.longest = rotary, max_len
        self.seq_len = None if max_len else len(next(iter(tables.values())))
        self.iterations = loops  # iterations at inference: a setting (more than were trained is allowed)

    @property
    def max_len(self) -> int:
        return self.seq_len or self.longest

    def _biases(self, tokens: torch.Tensor) -> list[torch.Tensor | None]:
        """Each layer's additive attention bias: peer mask or bias, plus -inf at padded keys (None: neither)."""
        if self.attention == "peer":
            mask = torch.zeros(self.peers.shape, device=self.peers.device).masked_fill(~self.peers, float("-inf"))
            biases = [mask] * len(self.blocks)
        elif self.attention == "peer_bias":
            biases = [g[:, None, None] * self.peers for g in self.peer_gain]  # (H, N, N) each
        else:
            biases = [None] * len(self.blocks)
        pad = None if self.pad_id is None else tokens == self.pad_id
        if pad is None or not bool(pad.any()):
            return biases
        pad = torch.zeros(pad.shape, dtype=torch.float32, device=tokens.device).masked_fill(pad, float("-inf"))[:, None, None, :]
        return [pad if b is None else b + pad for b in biases]

    def _out(self, x: torch.Tensor) -> MDMOutput:
        hidden = self.ln_f(x)
        return MDMOutput(self.head(hidden).float(), hidden)

    def forward(self, tokens: torch.Tensor, iterations: int | None = None, keep: int = 0,
                no_grad: int = 0) -> MDMOutput:
        """The last iteration's logits and hidden states; ``iterations`` overrides ``self.iterations``, ``keep``
        > 0 also gives the last ``keep`` iterations' logits in ``per_iteration``, and the first ``no_grad``
        iterations run without autograd."""
        n = tokens.shape[1]
        if n > self.max_len or n < (self.seq_len or 0):
            raise ValueError(f"sequence of {n} positions, but this model takes {self.seq_len or f'up to {self.max_len}'}")
        emb = self.tok(tokens)
        for name in self.tables:
            emb = emb + getattr(self, f"{name}_emb")(getattr(self, f"{name}_index")[:n])
        rope = (self.rope_cos[:n], self.rope_sin[:n]) if self.rotary else None
        steps = iterations or self.iterations
        biases, x, kept = self._biases(tokens), emb, []
        for i in range(steps):
            with torch.set_grad_enabled(torch.is_grad_enabled() and i >= no_grad):
                if i and self.inject:
                    x = x + emb
                for block, bias in zip(self.blocks, biases):
                    x = block(x, bias, rope)
            if keep and i >= steps - keep and i < steps - 1:
                kept.append(self._out(x).logits)
        out = self._out(x)
        if keep:
            out.per_iteration = kept + [out.logits]
        return out


@dataclass(frozen=True)
class SequenceMDMConfig:
    max_len: int = option(256, "longest sequence the model takes", range=(1, 100_000))
    d_model: int = option(128, "hidden size", range=(1, 8192))
    n_layers: int = option(6, "transformer blocks", range=(1, 256))
    n_heads: int = option(4, "attention heads", range=(1, 256))
    d_ff: int = option(512, "feed-forward width", range=(1, 65_536))
    dropout: float = option(0.1, "dropout rate", range=(0, 0.99))
    positions: str = option("rotary", "rotary (relative offsets only), absolute (a learned vector per position up "
                            "to max_len, added to the token's: for rules tied to places, as a palindrome's) "
                            "or both", choices=POSITIONS)

    def __post_init__(self):
        check_ranges(self)
        if self.positions not in POSITIONS:
            raise ValueError(f"positions must be one of {', '.join(POSITIONS)}, got {self.positions!r}")
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(f"d_model {self.d_model} / n_heads {self.n_heads} must be a whole, even head size")


class SequenceMDM(TransformerMDM):
    """The MDM over sequences of any length up to ``max_len`` (``cfg.positions``, padding excluded from
    attention): token ids ``(B, L)`` -> ``MDMOutput(logits (B, L, n_values), hidden (B, L, D))``. A subclass
    names the vocabulary (:attr:`values`, :attr:`mask_id`, :attr:`pad_id`; token ``v + 1`` is value ``v``)."""

    values: ClassVar[int]
    mask_id: ClassVar[int] = 0
    pad_id: ClassVar[int]

    @classmethod
    def check_vocabulary(cls) -> None:
        """ValueError when the subclass leaves :attr:`values` or :attr:`pad_id` unset."""
        unset = [name for name in ("values", "pad_id") if not hasattr(cls, name)]
        if unset:
            raise ValueError(f"{cls.__name__} does not set {' and '.join(unset)}: a SequenceMDM subclass names its "
                             "vocabulary (values, mask_id, pad_id; token v + 1 is value v)")

    def __init__(self, cfg: SequenceMDMConfig = SequenceMDMConfig()):
        self.check_vocabulary()
        places = {"pos": np.arange(cfg.max_len)} if cfg.positions != "rotary" else None
        super().__init__(cfg, self.values, max(self.values + 1, self.pad_id, self.mask_id) + 1, max_len=cfg.max_len,
                         rotary=cfg.positions != "absolute", tables=places, pad_id=self.pad_id)


@dataclass(frozen=True)
class DomainMDM:
    """A sequence domain's MDM and its files, from the domain's key and vocabulary: ``model_cls`` (a
    :class:`SequenceMDM` subclass, ``KeyMDM``), :meth:`save` (the trainer's ``save``, an order task's
    ``save_denoiser``), :meth:`load` (an order task's ``load``) and :meth:`loader` (the Domain's
    ``model_loader``). A saved file records ``domain`` and ``kind`` (``KEY_mdm``) beside its config.

    ``default``: the weights :meth:`loader` reads when given no file (an absolute path; None: it ships none);
    ``name``: what messages call the model (default ``"KEY MDM"``).
    """

    domain: str
    values: int
    mask_id: int
    pad_id: int
    default: str | Path | None = None
    name: str = ""
    model_cls: type[SequenceMDM] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if not isinstance(self.domain, str) or not self.domain:
            raise ValueError(f"DomainMDM: domain must be the domain's key, got {self.domain!r}")
        ids = {"values": self.values, "mask_id": self.mask_id, "pad_id": self.pad_id}
        if bad := [f"{k} {v!r}" for k, v in ids.items() if isinstance(v, bool) or not isinstance(v, int) or v < 0]:
            raise ValueError(f"DomainMDM {self.domain}: values and ids must be integers >= 0, got {', '.join(bad)}")
        if self.values < 1 or {self.mask_id, self.pad_id} & set(range(1, self.values + 1)) or self.mask_id == self.pad_id:
            raise ValueError(f"DomainMDM {self.domain}: mask_id {self.mask_id} and pad_id {self.pad_id} must differ "
                             f"from each other and from the value tokens 1..{self.values} (token v + 1 is value v)")
        object.__setattr__(self, "name", self.name or f"{self.domain} MDM")
        title = "".join(part.capitalize() for part in re.split(r"[^0-9A-Za-z]+", self.domain))
        cls = type(f"{title}MDM", (SequenceMDM,), {
            "__doc__": f"The engine's sequence MDM over the {self.domain} domain's {self.values} values.",
            "__module__": __name__, "values": self.values, "mask_id": self.mask_id, "pad_id": self.pad_id})
        object.__setattr__(self, "model_cls", cls)

    def __reduce__(self):  # rebuilt, class and all, where a Domain is unpickled (a worker process's copy)
        return DomainMDM, (self.domain, self.values, self.mask_id, self.pad_id, self.default, self.name)

    @property
    def kind(self) -> str:
        return f"{self.domain}_mdm"

    def save(self, model: SequenceMDM, path: str | Path, extra: dict | None = None) -> None:
        """Write ``path`` and its JSON (config, ``domain``, ``kind``, then ``extra``): :func:`save_model`."""
        save_model(model, model.cfg, path, {"kind": self.kind, **(extra or {})}, domain=self.domain)

    def load(self, path: str | Path, device: torch.device | str = "cpu") -> SequenceMDM:
        """The model saved at ``path``, in eval mode on ``device``; ModelFileError when the file does not fit."""
        return load_checked(SequenceMDMConfig, self.model_cls, path, device, f"a {self.name}")[0]

    def loader(self, spec: str | Path | None, device) -> tuple[SequenceMDM, str]:
        """``Domain.model_loader``: ``(model, a line naming it)`` from ``spec``, else :attr:`default`."""
        path = spec or self.default
        if path is None:
            raise ValueError(f"the {self.domain} domain ships no {self.name}: give --model FILE")
        return self.load(path, device), f"the {self.name} {path}"
