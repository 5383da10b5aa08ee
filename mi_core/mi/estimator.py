"""A small neural head that predicts the exact pairwise MI matrix from one forward pass of a frozen MDM.

Each position gets ``z_i`` from ``[LayerNorm(h_i), p_i, log p_i, H_i, log H_i, e_i]`` (``e_i``: a learned
position embedding, for fixed-length domains, since which positions share a constraint drives the MI).
Each pair gets ``[z_i * z_j, z_i + z_j, o_ij, min(H_i, H_j), max(H_i, H_j)]`` plus the logs of the last
three (``o_ij = sum_v p_i(v) p_j(v)``), optionally an embedding of the bucketed separation ``|i - j|`` and
optionally ``r_ij``, 1 where the domain's rules tie the two positions (``Domain.rules``, e.g. Sudoku peers);
an MLP maps it to ``s_ij`` and ``MI(i, j) = sigmoid(s_ij) * min(H_i, H_j)`` (``bound``) or ``softplus(s_ij)``.
Only masked x masked pairs ``i < j`` are computed and mirrored: symmetric, >= 0, 0 on givens and the diagonal.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from mi_core.device import pick_device
from mi_core.domain import DOMAINS, Domain
from mi_core.io import ROOT, display_path, file_sha256
from mi_core.mi.entropy import entropy_from_logits
from mi_core.mi.probe import pair_mask
from mi_core.models.base import check_tokens, load_checked, load_meta, save_model, trained_on_mismatch, trained_shas
from mi_core.options import option

LOG_FLOOR = 1e-8  # inside the log features: probabilities and entropies below it all look alike
LOG_SCALE = 0.1  # log(1e-8) = -18.4 becomes -1.84, the range of the other features


class EstimatorInputError(ValueError):
    """Tensors handed to the estimator whose shapes do not fit its config or each other."""


@dataclass(frozen=True)
class EstimatorConfig:
    """``d_in``: the MDM's hidden size D; ``n_values``: V; ``n_positions``: N for position embeddings of size
    ``d_pos`` (0: none, any N); ``d_node``, ``d_pair``: MLP widths; ``d_proj``: size of ``z_i``; ``init_bias``:
    the output logit's start (exact MI is often 1e-4 to 1e-3 nats); ``rel_buckets``: separation buckets of
    size ``d_rel`` (0: none); ``rules``: the pair feature ``r_ij`` (fixed-length domains; the ``(N, N)`` table is a
    buffer saved with the weights)."""

    d_in: int
    n_values: int
    n_positions: int = option(0, range=(0, 100_000))
    d_pos: int = option(32, range=(0, 8192))
    d_node: int = option(128, range=(1, 8192))
    d_proj: int = option(32, range=(1, 8192))
    d_pair: int = option(32, range=(1, 8192))
    bound: bool = option(True, negatable=True)
    init_bias: float = option(-6.0, range=(-100, 100))
    rel_buckets: int = option(0, range=(0, 4096))
    d_rel: int = option(16, range=(1, 8192))
    rules: bool = option(False, negatable=True)

    def __post_init__(self):
        for name in ("d_in", "n_values", "d_node", "d_proj", "d_pair"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"EstimatorConfig.{name} must be a positive integer, got {getattr(self, name)!r}")
        for name in ("n_positions", "d_pos", "rel_buckets", "d_rel"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise ValueError(f"EstimatorConfig.{name} must be an integer >= 0, got {getattr(self, name)!r}")
        if self.n_values < 2:
            raise ValueError(f"EstimatorConfig.n_values must be >= 2, got {self.n_values}")
        if self.rules and self.n_positions < 1:
            raise ValueError("EstimatorConfig.rules needs a fixed length (n_positions >= 1)")

    @property
    def uses_positions(self) -> bool:
        return self.n_positions > 0 and self.d_pos > 0


SEPARATION_EXACT = 4  # separations 1..4 get a bucket each; beyond, two buckets per doubling


def separation_bucket(sep: torch.Tensor, n_buckets: int) -> torch.Tensor:
    """Bucket ``0 .. n_buckets - 1`` of separations ``|i - j| >= 1``: 1..4 -> 0..3, then
    ``4 + floor(2 log2(sep / 4))`` (5 -> 4, 6-7 -> 5, 8-11 -> 6, ...), capped at the last bucket."""
    sep = sep.clamp_min(1)
    far = SEPARATION_EXACT + torch.floor(2 * torch.log2(sep.double() / SEPARATION_EXACT)).long()
    return torch.where(sep <= SEPARATION_EXACT, sep - 1, far).clamp_max(n_buckets - 1)


def _log(x: torch.Tensor) -> torch.Tensor:
    return (x + LOG_FLOOR).log() * LOG_SCALE


class MIEstimator(nn.Module):
    """``forward(hidden (B,N,D), probs (B,N,V), entropy (B,N), masked (B,N) bool) -> (B,N,N) float32``."""

    def __init__(self, cfg: EstimatorConfig):
        super().__init__()
        self.cfg = cfg
        d_pos = cfg.d_pos if cfg.uses_positions else 0
        self.pos = nn.Parameter(torch.randn(cfg.n_positions, d_pos)) if d_pos else None
        d_rel = cfg.d_rel if cfg.rel_buckets else 0
        self.rel = nn.Embedding(cfg.rel_buckets, d_rel) if d_rel else None
        if cfg.rules:  # filled by the trainer from Domain.rules, then saved and loaded with the weights
            self.register_buffer("rule_pairs", torch.zeros(cfg.n_positions, cfg.n_positions))
        self.norm = nn.LayerNorm(cfg.d_in)
        self.node = nn.Sequential(nn.Linear(cfg.d_in + 2 * cfg.n_values + 2 + d_pos, cfg.d_node), nn.GELU(),
                                  nn.Linear(cfg.d_node, cfg.d_proj))
        self.pair = nn.Sequential(nn.Linear(2 * cfg.d_proj + 6 + d_rel + cfg.rules, cfg.d_pair), nn.GELU(),
                                  nn.Linear(cfg.d_pair, cfg.d_pair), nn.GELU(), nn.Linear(cfg.d_pair, 1))
        nn.init.zeros_(self.pair[-1].weight)
        nn.init.constant_(self.pair[-1].bias, cfg.init_bias)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def project(self, hidden: torch.Tensor, probs: torch.Tensor, entropy: torch.Tensor) -> torch.Tensor:
        """``z`` ``(B, N, d_proj)``: one vector per position."""
        p, h = probs.float(), entropy.float()[..., None]
        parts = [self.norm(hidden.float()), p, _log(p), h, _log(h)]
        if self.pos is not None:
            parts.append(self.pos.expand(hidden.shape[0], -1, -1))
        return self.node(torch.cat(parts, -1))

    def pair_mi(self, z: torch.Tensor, probs: torch.Tensor, entropy: torch.Tensor, b, i, j) -> torch.Tensor:
        """Predicted MI ``(P,)`` of the pairs ``(b[k], i[k], j[k])`` from ``z`` ``(B, N, d_proj)``."""
        zi, zj = z[b, i], z[b, j]
        p, h = probs.float(), entropy.float().clamp_min(0)
        overlap = (p[b, i] * p[b, j]).sum(-1)  # chance the two take the same value
        h_min, h_max = torch.minimum(h[b, i], h[b, j]), torch.maximum(h[b, i], h[b, j])
        scalars = torch.stack([overlap, h_min, h_max, _log(overlap), _log(h_min), _log(h_max)], -1)
        parts = [zi * zj, zi + zj, scalars]
        if self.rel is not None:  # symmetric in (i, j): the separation's bucket
            parts.append(self.rel(separation_bucket((i - j).abs(), self.cfg.rel_buckets)))
        if self.cfg.rules:
            parts.append(self.rule_pairs[i, j][:, None])
        s = self.pair(torch.cat(parts, -1)).squeeze(-1)
        return torch.sigmoid(s) * h_min if self.cfg.bound else F.softplus(s)  # MI(i, j) <= min(H_i, H_j)

    def forward(self, hidden: torch.Tensor, probs: torch.Tensor, entropy: torch.Tensor,
                masked: torch.Tensor) -> torch.Tensor:
        check_inputs(self.cfg, hidden, probs, entropy, masked)
        # the head is tiny and MI values are small: always float32, even inside a caller's bf16 autocast
        with torch.autocast(hidden.device.type, enabled=False):
            z = self.project(hidden, probs, entropy)
            b, i, j = pair_mask(masked).triu(1).nonzero(as_tuple=True)
            upper = torch.zeros(masked.shape + masked.shape[1:], dtype=torch.float32, device=z.device)
            upper = upper.index_put((b, i, j), self.pair_mi(z, probs, entropy, b, i, j).float())
        return upper + upper.transpose(1, 2)


def check_inputs(cfg: EstimatorConfig, hidden, probs, entropy, masked) -> None:
    """Raise :class:`EstimatorInputError` naming the first tensor whose shape does not fit."""
    if hidden.dim() != 3 or hidden.shape[-1] != cfg.d_in:
        raise EstimatorInputError(f"hidden must be (B, N, {cfg.d_in}), got {tuple(hidden.shape)}")
    b, n = hidden.shape[:2]
    if (cfg.uses_positions or cfg.rules) and n != cfg.n_positions:
        raise EstimatorInputError(f"this estimator reads sequences of {cfg.n_positions} positions, got {n}")
    if tuple(probs.shape) != (b, n, cfg.n_values):
        raise EstimatorInputError(f"probs must be ({b}, {n}, {cfg.n_values}), got {tuple(probs.shape)}")
    if tuple(entropy.shape) != (b, n):
        raise EstimatorInputError(f"entropy must be ({b}, {n}), got {tuple(entropy.shape)}")
    if tuple(masked.shape) != (b, n) or masked.dtype != torch.bool:
        raise EstimatorInputError(f"masked must be a ({b}, {n}) bool tensor, got {tuple(masked.shape)} {masked.dtype}")


LOSSES = ("mse", "sqrt", "log")


def estimator_loss(pred: torch.Tensor, target: torch.Tensor, masked: torch.Tensor, kind: str = "mse",
                   floor: float = 1e-5) -> torch.Tensor:
    """Mean loss over masked x masked pairs ``i != j`` of ``(B, N, N)`` MI: ``"mse"`` (the paper's), or the
    squared error of ``sqrt`` or ``log`` of ``MI + floor`` (scales that weigh the many tiny pairs more)."""
    keep = pair_mask(masked)
    if not keep.any():
        raise ValueError("no masked x masked pair in the batch: nothing to fit")
    p, t = pred[keep], target[keep].to(pred.dtype)
    if kind == "mse":
        return ((p - t) ** 2).mean()
    if kind in ("sqrt", "log"):
        scale = torch.sqrt if kind == "sqrt" else torch.log
        return ((scale(p + floor) - scale(t.clamp_min(0) + floor)) ** 2).mean()
    raise ValueError(f"unknown estimator loss {kind!r}; choose one of {', '.join(LOSSES)}")


def check_model_match(model, estimator: MIEstimator, model_name: str = "the model",
                      estimator_name: str = "the estimator") -> None:
    """Raise :class:`EstimatorInputError` when ``estimator`` reads another hidden size or value count than
    ``model`` gives."""
    d, v = model.hidden_size, model.n_values
    if (estimator.cfg.d_in, estimator.cfg.n_values) != (d, v):
        raise EstimatorInputError(
            f"{estimator_name} reads hidden size {estimator.cfg.d_in} and {estimator.cfg.n_values} values, "
            f"{model_name} gives hidden size {d} and {v} values: use an estimator trained on this model")


def model_hint(path: str | Path, model) -> str:
    """``", or give --model M (the model it was trained on)"`` when the estimator's JSON names an MDM file M that is
    here and is not the one ``model`` was loaded from; else ``""``."""
    try:
        trained = load_meta(path).get("mdm")
    except ValueError:
        return ""
    loaded = getattr(model, "weights_path", None)
    if not isinstance(trained, str) or not Path(trained).is_file() or (loaded and Path(loaded) == Path(trained)):
        return ""
    return f", or give --model {trained} (the model it was trained on)"


@dataclass
class Estimate:
    """One MDM pass plus the head: ``mi`` ``(B, N, N)``; ``entropy`` ``(B, N)`` and ``marginals`` ``(B, N, V)``
    as the probe gives them (0 and one-hot at givens); ``hidden`` ``(B, N, D)``; ``masked``; ``seconds``."""

    mi: torch.Tensor
    entropy: torch.Tensor
    marginals: torch.Tensor
    hidden: torch.Tensor
    masked: torch.Tensor
    seconds: float


@torch.no_grad()
def mdm_features(model, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(hidden, probs, entropy, masked)`` of one pass over ``tokens`` ``(B, N)``, as the decode loop has them."""
    out = model(tokens)
    masked = tokens == model.mask_id
    probs = out.logits.float().softmax(-1)
    entropy = entropy_from_logits(out.logits) * masked
    return out.hidden.float(), probs, entropy, masked


@torch.no_grad()
def estimate_mi(model, estimator: MIEstimator, tokens: torch.Tensor) -> Estimate:
    """Predicted MI for token ids ``(B, N)``: one MDM pass plus the head (EstimatorInputError on bad tokens, or
    an ``estimator`` that is no :class:`MIEstimator` or was trained on another model)."""
    if not isinstance(estimator, MIEstimator):
        raise EstimatorInputError(f"estimator must be an MIEstimator, got a {type(estimator).__name__}: "
                                  "load_estimator(path) reads one")
    if estimator.__dict__.get("checked_with") != id(model):  # once a pair: it reads the estimator's JSON (~0.15 ms)
        check_model_match(model, estimator)
        check_trained_on(model, getattr(estimator, "weights_path", None))
        estimator.__dict__["checked_with"] = id(model)
    check_tokens(model, tokens, error=EstimatorInputError)
    if (where := next(estimator.parameters()).device) != tokens.device:
        raise EstimatorInputError(f"the estimator is on {where}, the model on {tokens.device}: "
                                  "load_estimator(path, device=model.device)")
    match = tokens[..., None] == model.value_tokens
    start = time.perf_counter()
    hidden, probs, entropy, masked = mdm_features(model, tokens)
    mi = estimator(hidden, probs, entropy, masked)
    seconds = time.perf_counter() - start
    given = F.one_hot(match.long().argmax(-1), probs.shape[-1]).float()
    marginals = torch.where(masked[..., None], probs, given)
    return Estimate(mi, entropy, marginals, hidden, masked, seconds)


def save_estimator(estimator: MIEstimator, path: str | Path, extra: dict | None = None) -> None:
    """Write the weights (safetensors) and the config plus ``extra`` (JSON)."""
    save_model(estimator, estimator.cfg, path, extra)


SHIPPED = "shipped"  # estimator=shipped: the shipped estimator trained on the model's own weights file
ASSETS = ROOT / "assets"


def estimator_candidates(model, domain: Domain | None = None) -> list[Path]:
    """The estimator files :func:`shipped_estimator_for` reads, in order: the domain's own
    (:meth:`Domain.estimator_path`: its variable's file, else its default; ``domain`` None: the registered domain
    the model was loaded for), then ``assets/*mi_estimator*.safetensors``; only those that exist."""
    domain = domain if domain is not None else DOMAINS.get(getattr(model, "domain", None))
    own = domain.estimator_path() if domain is not None else None
    return [p for p in (own, *sorted(ASSETS.glob("*mi_estimator*.safetensors"))) if p is not None and p.is_file()]


def absent_own_estimator(domain: Domain) -> str:
    """A sentence for when ``domain`` names an estimator file (its variable's, else its default) that does not
    exist, saying how to make it; ``""`` when it names none or the file is there."""
    path = domain.estimator_path()
    if path is None or path.is_file():
        return ""
    named = f"${domain.estimator_env}" if os.environ.get(domain.estimator_env or "") else "its estimator_default"
    return (f"the {domain.label} domain's estimator {path} ({named}) does not exist yet: make it with python -m mi_core "
            f"make-estimator-data {domain.cli_name} --out DIR, then python -m mi_core train-estimator --data DIR "
            f"--out {path}")


def shipped_estimator_for(model, domain: Domain | None = None) -> Path:
    """The first of :func:`estimator_candidates` whose JSON records the sha256 of the model's weights file
    (EstimatorInputError when there is none)."""
    if not (hasattr(model, "mask_id") and isinstance(getattr(model, "value_tokens", None), torch.Tensor)):
        raise EstimatorInputError(f"model must be a masked model (load_model reads one), got a {type(model).__name__}")
    path = getattr(model, "weights_path", None)
    if path is None or not Path(path).is_file():
        raise EstimatorInputError("this model was not loaded from a weights file: give estimator=PATH")
    sha = file_sha256(path)
    for candidate in estimator_candidates(model, domain):
        if sha in trained_shas(load_meta(candidate)):
            return candidate
    raise EstimatorInputError(f"no shipped MI estimator was trained on {path}: give estimator=PATH "
                              "(python -m mi_core train-estimator makes one)")


def check_trained_on(model, estimator_path: str | Path) -> None:
    """Raise EstimatorInputError when the estimator was trained on other weights than the model's."""
    problem = trained_on_mismatch(model, estimator_path)
    if problem:
        try:
            shipped = f", or leave it unset: the shipped {display_path(shipped_estimator_for(model))} was trained on it"
        except EstimatorInputError:  # none serves this model: leaving it unset would not help
            shipped = "; python -m mi_core train-estimator makes one"
        raise EstimatorInputError(f"the estimator {estimator_path} {problem}: use an estimator trained on this model "
                                  f"(estimator=PATH{shipped})")


def load_estimator(path: str | Path, device: torch.device | str = "cpu") -> MIEstimator:
    """Load an estimator written by :func:`save_estimator` (ModelFileError on a bad file, ValueError on a device
    that is not ``cpu``, ``cuda`` or ``auto``)."""
    return load_checked(EstimatorConfig, MIEstimator, path, pick_device(str(device)), "an MI estimator")[0]
