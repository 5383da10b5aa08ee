"""On-policy training states: those the model's own sequential decoding passes through before its first wrong
digit, labelled by the puzzle's unique solution."""

from __future__ import annotations

import contextlib

import torch

from mi_core.mi.entropy import entropy_from_logits


@torch.no_grad()
def onpolicy_states(model, puzzles: torch.Tensor, solutions: torch.Tensor, per_puzzle: int, generator: torch.Generator,
                    bf16: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Decode ``(M, 81)`` puzzles sequentially; ``per_puzzle`` states are sampled (with replacement) from each
    consistent path, plus the state just before the first error where there is one.

    Returns ``(states (K, 81), solutions (K, 81), solved (M,) bool)``.
    """
    was_training = model.training
    model.eval()
    autocast = torch.autocast(puzzles.device.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    x, alive, path = puzzles.clone(), torch.ones(len(puzzles), dtype=torch.bool, device=puzzles.device), []
    rows = torch.arange(len(puzzles), device=puzzles.device)
    for _ in range(int((puzzles == 0).sum(1).max())):
        masked = x == 0
        path.append((x.clone(), alive & masked.any(1)))
        with autocast:
            logits = model(x).logits.float()
        ent = entropy_from_logits(logits).masked_fill(~masked, float("inf"))
        cell = ent.argmin(1)
        digit = logits[rows, cell].argmax(-1) + 1
        active = masked.any(1)
        x[rows[active], cell[active]] = digit[active]
        alive &= ~active | (digit == solutions[rows, cell])
    if was_training:
        model.train()
    states = torch.stack([s for s, _ in path])  # (S, M, 81)
    live = torch.stack([a for _, a in path]).T.float()  # (M, S)
    solved = alive & (x == solutions).all(1)
    keep = live.sum(1) > 0
    picks = torch.multinomial(live[keep], per_puzzle, replacement=True, generator=generator)  # (M', per)
    last = (live[keep].cumsum(1).argmax(1))  # the last consistent state: just before an error, if any
    failed = ~solved[keep]
    chosen = torch.cat([picks, last[:, None]], 1)
    use = torch.cat([torch.ones_like(picks, dtype=torch.bool), failed[:, None]], 1)
    m_idx = rows[keep][:, None].expand_as(chosen)
    return states[chosen[use], m_idx[use]], solutions[m_idx[use]], solved
