"""Training batches for the Sudoku MDM, drawn and transformed on the device. Three kinds of state per batch:
uniform (a solved grid masked at a rate t ~ U(0, 1)), puzzle-shaped (a graded puzzle, drawn with weight
``(1 + grade) ** hard_power``, with a fraction s ~ U(0, 1) of its blanks revealed) and on-policy (states of
the model's own sequential decoding before its first wrong digit, labelled by the puzzle's unique solution,
:func:`onpolicy_states`, in a ring buffer). Each example
gets a fresh random validity-preserving transform.
"""

from __future__ import annotations

import torch

from mi_core.device import bf16_autocast
from mi_core.mi.entropy import entropy_from_logits


def _line_permutations(batch: int, box: int, generator: torch.Generator, device) -> torch.Tensor:
    """``(batch, n)`` permutations that shuffle bands and the lines within each band."""
    bands = torch.rand(batch, box, generator=generator, device=device).argsort(1)
    within = torch.rand(batch, box, box, generator=generator, device=device).argsort(2)
    return (bands[:, :, None] * box + within).reshape(batch, box * box)


def random_symmetry(batch: int, generator: torch.Generator, box: int = 3, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """One random validity-preserving transform per example, as gathers: ``cells (batch, n*n)`` (output cell
    ``k`` takes input cell ``cells[:, k]``) and ``relabel (batch, n + 1)`` (digit ``d`` becomes
    ``relabel[:, d]``, 0 kept)."""
    n = box * box
    rows = _line_permutations(batch, box, generator, device)
    cols = _line_permutations(batch, box, generator, device)
    cells = rows[:, :, None] * n + cols[:, None, :]
    flip = torch.rand(batch, generator=generator, device=device) < 0.5
    cells = torch.where(flip[:, None, None], cells.transpose(1, 2), cells).reshape(batch, n * n)
    digits = 1 + torch.rand(batch, n, generator=generator, device=device).argsort(1)
    relabel = torch.cat([torch.zeros(batch, 1, dtype=torch.long, device=device), digits], 1)
    return cells, relabel


def symmetry_views(count: int, seed: int = 0, box: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` transforms for :class:`~mi_core.models.views.Views`, the first the identity: ``positions (count,
    n*n)`` and ``values (count, n)`` (digit ``d``'s value index ``d - 1`` reads as ``values[:, d - 1]``)."""
    cells, relabel = random_symmetry(count, torch.Generator().manual_seed(seed), box)
    cells[0], relabel[0] = torch.arange(cells.shape[1]), torch.arange(relabel.shape[1])
    return cells, relabel[:, 1:] - 1


def apply_symmetry(grids: torch.Tensor, cells: torch.Tensor, relabel: torch.Tensor) -> torch.Tensor:
    """``(B, N)`` grids (0 blank) under the transforms of :func:`random_symmetry`."""
    return relabel.gather(1, grids.gather(1, cells))


class DeviceBatches:
    """Training batches from ``pools`` (:func:`~mi_core.domains.sudoku.pool.load_or_build_pools`); puzzle_frac and
    onpolicy_frac are shares of each batch (the rest uniform, as is the on-policy share while the buffer is
    empty); ``capacity``: size of the on-policy ring buffer."""

    def __init__(self, pools: dict, device, puzzle_frac: float, onpolicy_frac: float, hard_power: float, capacity: int = 20000):
        self.device = torch.device(device)
        self.grids = torch.as_tensor(pools["grids"], device=self.device)
        self.puzzles = torch.as_tensor(pools["puzzles"][:, 0], device=self.device)
        self.solutions = torch.as_tensor(pools["puzzles"][:, 1], device=self.device)
        self.weights = (1.0 + torch.as_tensor(pools["grades"], dtype=torch.float32, device=self.device)) ** hard_power
        self.puzzle_frac, self.onpolicy_frac = puzzle_frac, onpolicy_frac
        self.states = torch.zeros(capacity, 81, dtype=torch.long, device=self.device)
        self.state_solutions = torch.zeros_like(self.states)
        self.filled, self.cursor = 0, 0  # states held, next slot to write

    def add_states(self, states: torch.Tensor, solutions: torch.Tensor) -> None:
        """Append ``(K, 81)`` on-policy states and their solutions, overwriting the oldest."""
        cap = len(self.states)
        slots = (self.cursor + torch.arange(len(states), device=self.device)) % cap
        self.states[slots] = states.to(self.device)
        self.state_solutions[slots] = solutions.to(self.device)
        self.cursor = int((self.cursor + len(states)) % cap)
        self.filled = min(cap, self.filled + len(states))

    def sample_puzzles(self, count: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``count`` hard-weighted ``(puzzle, solution)`` rows, each ``(count, 81)``, transformed."""
        idx = torch.multinomial(self.weights, count, replacement=True, generator=generator)
        cells, relabel = random_symmetry(count, generator, device=self.device)
        return apply_symmetry(self.puzzles[idx], cells, relabel), apply_symmetry(self.solutions[idx], cells, relabel)

    def sample(self, batch: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``(inputs, targets)``, each ``(batch, 81)`` int64 on the device; inputs use 0 for mask."""
        dev = self.device
        n_puz = round(batch * self.puzzle_frac)
        n_on = min(round(batch * self.onpolicy_frac), batch - n_puz) if self.filled else 0
        n_uni = batch - n_puz - n_on
        uni = self.grids[torch.randint(len(self.grids), (n_uni,), generator=generator, device=dev)]
        uni_mask = torch.rand(n_uni, 81, generator=generator, device=dev) < torch.rand(n_uni, 1, generator=generator, device=dev)
        pidx = torch.multinomial(self.weights, n_puz, replacement=True, generator=generator) if n_puz else None
        puz, puz_sol = (self.puzzles[pidx], self.solutions[pidx]) if n_puz else (uni[:0], uni[:0])
        reveal = torch.rand(n_puz, 81, generator=generator, device=dev) < torch.rand(n_puz, 1, generator=generator, device=dev)
        puz_mask = (puz == 0) & ~reveal
        oidx = torch.randint(self.filled, (n_on,), generator=generator, device=dev) if n_on else None
        on, on_sol = (self.states[oidx], self.state_solutions[oidx]) if n_on else (uni[:0], uni[:0])
        targets = torch.cat([uni, puz_sol, on_sol])
        masked = torch.cat([uni_mask, puz_mask, on == 0])
        # every example needs at least one masked cell to contribute to the loss
        one = torch.randint(81, (batch,), generator=generator, device=dev)
        masked = masked | (~masked.any(1, keepdim=True) & (torch.arange(81, device=dev) == one[:, None]))
        inputs = torch.where(masked, torch.zeros_like(targets), targets)
        cells, relabel = random_symmetry(batch, generator, device=dev)
        return apply_symmetry(inputs, cells, relabel), apply_symmetry(targets, cells, relabel)

    def state_dict(self) -> dict:
        """The on-policy buffer as uint8 (digits 0-9: an eighth of the int64 size in a checkpoint)."""
        return {"states": self.states[: self.filled].to(torch.uint8).cpu(),
                "state_solutions": self.state_solutions[: self.filled].to(torch.uint8).cpu(), "cursor": self.cursor}

    def load_state_dict(self, state: dict) -> None:
        k = len(state["states"])
        self.states[:k] = state["states"].to(self.device, torch.long)
        self.state_solutions[:k] = state["state_solutions"].to(self.device, torch.long)
        self.filled, self.cursor = k, int(state["cursor"])


@torch.no_grad()
def onpolicy_states(model, puzzles: torch.Tensor, solutions: torch.Tensor, per_puzzle: int, generator: torch.Generator,
                    bf16: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Decode ``(M, 81)`` puzzles sequentially; ``per_puzzle`` states are sampled (with replacement) from each
    consistent path, plus the state just before the first error where there is one.

    Returns ``(states (K, 81), solutions (K, 81), solved (M,) bool)``.
    """
    was_training = model.training
    model.eval()
    x, alive, path = puzzles.clone(), torch.ones(len(puzzles), dtype=torch.bool, device=puzzles.device), []
    rows = torch.arange(len(puzzles), device=puzzles.device)
    for _ in range(int((puzzles == 0).sum(1).max())):
        masked = x == 0
        path.append((x.clone(), alive & masked.any(1)))
        with bf16_autocast(puzzles.device, bf16):
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
