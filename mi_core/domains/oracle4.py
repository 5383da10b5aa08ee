"""The exact 4x4 Sudoku oracle: uniform over the 288 solution grids, so given the visible tokens C every
marginal ``p(X_j | C)``, joint ``p(X_i, X_j | C)`` and pairwise MI is a ratio of counts of agreeing solutions."""

from __future__ import annotations

from functools import lru_cache

import torch
from torch import nn

from mi_core.bench.metrics import SolvedMetric
from mi_core.domains.sudoku.grid import MASK_ID, SUDOKU4, GridDomain, digits
from mi_core.domains.sudoku.solver import solutions
from mi_core.models.base import MaskedLM, MDMOutput

CELLS = SUDOKU4.cells  # 16
DIGITS = SUDOKU4.n  # 4, value index v is digit v + 1
LOG_ZERO = -1e9  # logit of an impossible value: finite, so softmax gives an exact 0 and 0 * logit stays 0


class InconsistentStateError(ValueError):
    """Visible tokens that no 4x4 solution grid agrees with."""


@lru_cache(maxsize=1)
def _solutions_tuple() -> tuple[tuple[int, ...], ...]:
    return tuple(map(tuple, sorted(solutions([0] * CELLS, limit=1000))))


def all_solutions4() -> torch.Tensor:
    """Every 4x4 Sudoku solution grid, ``(288, 16)`` int64 digits 1..4 in lexicographic order."""
    return torch.tensor(_solutions_tuple(), dtype=torch.long)


def _check_tokens(tokens: torch.Tensor, ndim: int) -> None:
    shape = "(16,)" if ndim == 1 else "(B, 16)"
    if tokens.dim() != ndim or tokens.shape[-1] != CELLS:
        raise ValueError(f"4x4 oracle tokens must have shape {shape}, got {tuple(tokens.shape)}")
    if tokens.is_floating_point() or tokens.dtype == torch.bool:
        raise ValueError(f"4x4 oracle tokens must be integer token ids, got dtype {tokens.dtype}")
    if tokens.numel() and (tokens.min() < 0 or tokens.max() > DIGITS):
        raise ValueError(f"4x4 oracle tokens must be {MASK_ID} (masked) or digits 1..{DIGITS}")


def consistent(tokens: torch.Tensor, solutions: torch.Tensor) -> torch.Tensor:
    """``(B, S)`` bool: which of ``solutions`` ``(S, 16)`` agree with the visible tokens of ``(B, 16)``."""
    agree = (solutions[None] == tokens[:, None]) | (tokens[:, None] == MASK_ID)
    return agree.all(-1)


def exact_marginals(tokens: torch.Tensor, solutions: torch.Tensor | None = None) -> torch.Tensor:
    """Exact ``p(X_j = v | C)``: ``(B, 16)`` tokens -> ``(B, 16, 4)`` float64; InconsistentStateError names a
    row with no agreeing solution."""
    _check_tokens(tokens, 2)
    sols = (all_solutions4() if solutions is None else solutions).to(tokens.device)
    weights = consistent(tokens, sols).double()  # (B, S)
    counts = weights.sum(1)
    if (counts == 0).any():
        row = int((counts == 0).nonzero()[0, 0])
        raise InconsistentStateError(f"state {row} of the batch has visible tokens that no 4x4 Sudoku solution "
                                     "agrees with")
    onehot = nn.functional.one_hot(sols - 1, DIGITS).double()  # (S, 16, 4)
    return torch.einsum("bs,scv->bcv", weights, onehot) / counts[:, None, None]


def exact_pair_mi(tokens: torch.Tensor) -> torch.Tensor:
    """Exact pairwise MI (nats) ``I(X_i; X_j | C)`` of one ``(16,)`` state -> ``(16, 16)`` float64, symmetric,
    0 on the diagonal and for visible cells; InconsistentStateError when no solution agrees."""
    _check_tokens(tokens, 1)
    sols = all_solutions4().to(tokens.device)
    keep = consistent(tokens[None], sols)[0]
    if not keep.any():
        raise InconsistentStateError("the visible tokens admit no 4x4 Sudoku solution")
    onehot = nn.functional.one_hot(sols[keep] - 1, DIGITS).double()  # (S, 16, 4)
    joint = torch.einsum("sia,sjb->ijab", onehot, onehot) / onehot.shape[0]  # (16, 16, 4, 4)
    marg = onehot.mean(0)  # (16, 4)
    h = -torch.special.xlogy(marg, marg).sum(-1)
    h_joint = -torch.special.xlogy(joint, joint).sum((-2, -1))
    mi = h[:, None] + h[None, :] - h_joint  # I = H(X_i) + H(X_j) - H(X_i, X_j)
    masked = tokens == MASK_ID
    mi = mi * (masked[:, None] & masked[None, :])
    return mi.fill_diagonal_(0.0).clamp_min_(0.0)  # clamp only removes float round-off of order 1e-16


class Oracle4Model(MaskedLM):
    """Exact model of 4x4 Sudoku: ``(B, 16)`` tokens -> ``MDMOutput(logits (B, 16, 4), hidden (B, 16, 9))``.

    Logits are the exact log-marginals in float64 (``LOG_ZERO`` where impossible); ``hidden`` is each cell's
    exact marginal (4) next to the one-hot of its token (5), float32.
    """

    mask_id = MASK_ID
    seq_len = CELLS
    hidden_size = 4 + DIGITS + 1

    def __init__(self):
        super().__init__()
        self.register_buffer("solutions", all_solutions4(), persistent=False)
        self.register_buffer("value_tokens", torch.arange(1, DIGITS + 1), persistent=False)

    def forward(self, tokens: torch.Tensor) -> MDMOutput:
        probs = exact_marginals(tokens, self.solutions)
        logits = torch.where(probs > 0, probs.log(), torch.full_like(probs, LOG_ZERO))
        token_onehot = nn.functional.one_hot(tokens, DIGITS + 1)
        hidden = torch.cat([probs, token_onehot.double()], -1).float()
        return MDMOutput(logits, hidden)


def load_oracle4(spec, device) -> tuple[MaskedLM, str]:
    if spec not in (None, "", "oracle4", "builtin"):
        raise ValueError(f"the 4x4 oracle is built in and takes no weights file, got {spec!r}")
    return Oracle4Model().to(device).eval(), "the exact 4x4 Sudoku oracle (built in)"


ORACLE4 = GridDomain(
    "sudoku4", "Sudoku 4x4 (exact oracle)", "4x4", digits(SUDOKU4), names=("oracle4", "sudoku4"), geometry=SUDOKU4,
    exact_model=True, fallback_eps=0.0, clue_range=(4, 12), require_unique=False,
    model_loader=load_oracle4, metric=SolvedMetric,
)
