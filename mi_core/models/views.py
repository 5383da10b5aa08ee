"""A model averaged over symmetric views of each state (test-time augmentation by a domain's symmetries).

A view is a permutation of positions and one of values under which the domain's valid states stay valid
(a Sudoku: bands, lines within a band, transposition and digit relabelling). The model reads every view,
each view's log-probabilities are mapped back to the original positions and values, and their mean is the
ensemble's logits. One pass of ``K`` views costs ``K`` passes of compute.
"""

from __future__ import annotations

import torch

from mi_core.models.base import MaskedLM, MDMOutput, Wrapped


class Views(Wrapped):
    """``model`` averaged over ``K`` views: ``positions (K, N)`` (view position ``j`` reads original position
    ``positions[k, j]``) and ``values (K, V)`` (original value ``v`` reads as value ``values[k, v]``); view 0 must
    be the identity, and its hidden states are the ensemble's: an MI estimator or order selector trained on
    ``model`` reads them beside the ensemble's probabilities, which are smoother than the model's own."""

    def __init__(self, model: MaskedLM, positions: torch.Tensor, values: torch.Tensor):
        positions, values = torch.as_tensor(positions, dtype=torch.long), torch.as_tensor(values, dtype=torch.long)
        k, n = positions.shape
        if (model.seq_len or n) != n or n > model.max_len or values.shape != (k, model.n_values):
            raise ValueError(f"views of {n} positions and {values.shape[-1]} values do not fit a model of "
                             f"{model.seq_len or f'up to {model.max_len}'} positions and {model.n_values} values")
        if not (torch.equal(positions[0], torch.arange(n)) and torch.equal(values[0], torch.arange(model.n_values))):
            raise ValueError("the first view must be the identity")
        super().__init__(model)
        self.seq_len = n  # a model of varying length read at the views' one length
        tokens = model.value_tokens.cpu()
        relabel = torch.arange(int(max(tokens.max(), model.mask_id)) + 1).repeat(k, 1)
        relabel[:, tokens] = tokens[values]  # token of value v -> token of value values[k, v]
        device = model.value_tokens.device
        self.register_buffer("positions", positions.to(device))
        self.register_buffer("relabel", relabel.to(device))
        self.register_buffer("back", positions.argsort(1).to(device))  # original position -> its view position
        self.register_buffer("slots", values.to(device))

    @property
    def views(self) -> int:
        return len(self.positions)

    @property
    def iterations(self) -> int:
        return self.model.iterations

    def forward(self, tokens: torch.Tensor, **run) -> MDMOutput:
        """The views' mean log-probabilities; ``run`` (``iterations``, ``keep``) goes to the inner model, and kept
        iterations' logits are averaged over the views the same way."""
        b = tokens.shape[0]
        if tokens.shape[1] != self.positions.shape[1]:  # a model of varying length, views of one length
            raise ValueError(f"views of {self.positions.shape[1]} positions, a state of {tokens.shape[1]}")
        if b == 0:
            return self.model(tokens, **run)
        top = len(self.relabel[0]) - 1  # tokens above every value and the mask (a pad) stay as they are
        seen = torch.stack([torch.where(t > top, t, self.relabel[k][t.clamp(max=top)])
                            for k in range(self.views) for t in [tokens[:, self.positions[k]]]])
        out = self.model(seen.reshape(self.views * b, -1), **run)
        kept = None if out.per_iteration is None else [self._mean(logits, b) for logits in out.per_iteration]
        hidden = out.hidden.reshape(self.views, b, *out.hidden.shape[1:])[0]
        return MDMOutput(self._mean(out.logits, b), hidden, kept)

    def _mean(self, logits: torch.Tensor, b: int) -> torch.Tensor:
        """``(K * B, N, V)`` logits of the views -> ``(B, N, V)`` mean log-probabilities in the original frame."""
        logp = logits.float().log_softmax(-1).reshape(self.views, b, *logits.shape[1:])
        return sum(logp[k][:, self.back[k]][..., self.slots[k]] for k in range(self.views)) / self.views


def with_views(model: MaskedLM, domain, count: int, seed: int = 0) -> MaskedLM:
    """``model`` averaged over ``count`` views drawn by ``domain.symmetries`` (``count`` 1: the model itself)."""
    if count == 1:
        return model
    if domain.symmetries is None:
        raise ValueError(f"--views {count}: the {domain.label} domain declares no symmetries")
    positions, values = domain.symmetries(count, seed)
    return Views(model, positions, values)
