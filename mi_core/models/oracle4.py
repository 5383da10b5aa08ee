"""The exact 4x4 Sudoku oracle as a model: the shared interface (token ids -> logits, hidden) over the
exact conditionals of :mod:`mi_core.domains.oracle4`, so the exact probe, the samplers and the app can run
on it and be checked against :func:`mi_core.domains.oracle4.exact_pair_mi`.
"""

from __future__ import annotations

import torch
from torch import nn

from mi_core.domains.oracle4 import CELLS, DIGITS, LOG_ZERO, all_solutions4, exact_marginals
from mi_core.domains.sudoku import MASK_ID
from mi_core.models.base import MaskedLM, MDMOutput


class Oracle4Model(MaskedLM):
    """Exact model of 4x4 Sudoku: ``(B, 16)`` tokens -> ``MDMOutput(logits (B, 16, 4), hidden (B, 16, 9))``.

    Logits are the exact log-marginals in float64 (``LOG_ZERO`` for impossible values), so a softmax
    returns the exact conditionals. ``hidden`` is a deterministic feature per cell: its exact marginal
    (4) next to the one-hot of its token (5: mask, digits 1..4), float32.

    Raises (on call):
        InconsistentStateError: a state whose visible tokens admit no solution.
    """

    mask_id = MASK_ID

    def __init__(self):
        super().__init__()
        self.register_buffer("solutions", all_solutions4(), persistent=False)
        self.register_buffer("value_tokens", torch.arange(1, DIGITS + 1), persistent=False)

    seq_len = CELLS
    hidden_size = 4 + DIGITS + 1

    def forward(self, tokens: torch.Tensor) -> MDMOutput:
        probs = exact_marginals(tokens, self.solutions)
        logits = torch.where(probs > 0, probs.log(), torch.full_like(probs, LOG_ZERO))
        token_onehot = nn.functional.one_hot(tokens, DIGITS + 1)
        hidden = torch.cat([probs, token_onehot.double()], -1).float()
        return MDMOutput(logits, hidden)
