"""``train-order`` for in-filling: each start state is a template (a real sequence with some positions masked, the
rest given), x_0 the sequence itself.

A batch has one length (templates of other lengths never share a batch, as in the benchmarks' decoding, so the
selector's row-level features see no padding): a random template and ``B - 1`` more of its length, drawn with
replacement where fewer. Validation decodes held-out templates greedily with the selector (threshold mode) and with
``top_margin`` at ``steps=T`` and scores recovery, the mean over templates of the share of masked positions decoded
to the native token.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np
import torch

from mi_core.decoding import decode_final, make_strategy
from mi_core.decoding.budgets import positions_to_fill
from mi_core.device import bf16_autocast
from mi_core.order.loop import OrderTask, OrderTrainConfig


def check_pairs(templates: list[np.ndarray], natives: list[np.ndarray], mask_id: int, what: str) -> None:
    """ValueError unless ``templates`` and ``natives`` pair up: same lengths, a masked position in each template, the
    given positions equal to the native's and no unknown (masked) native token."""
    if not templates:
        raise ValueError(f"no {what} to train on")
    if len(templates) != len(natives):
        raise ValueError(f"{len(templates)} {what} templates for {len(natives)} native sequences")
    for i, (t, n) in enumerate(zip(templates, natives)):
        t, n = np.asarray(t), np.asarray(n)
        if t.shape != n.shape:
            raise ValueError(f"{what} {i + 1}: a template of {t.shape} positions for a native of {n.shape}")
        if not (t == mask_id).any():
            raise ValueError(f"{what} {i + 1}: the template has no masked position to fill")
        if (n == mask_id).any():  # its target would be no value: the ELBO needs every masked position's
            raise ValueError(f"{what} {i + 1}: the native has an unknown token at position "
                             f"{int(np.flatnonzero(n == mask_id)[0]) + 1}")
        if ((t != mask_id) & (t != n)).any():
            raise ValueError(f"{what} {i + 1}: a given token differs from the native sequence's")


def infill_draw(templates: list[np.ndarray], natives: list[np.ndarray]):
    """``draw(rng, batch) -> (start token ids (B, L), value indices of the natives (B, L))``, one length L a batch."""
    lens = np.array([len(t) for t in templates])

    def draw(rng: np.random.Generator, batch: int):
        pool = np.flatnonzero(lens == lens[int(rng.integers(len(templates)))])
        rows = rng.choice(pool, size=batch, replace=len(pool) < batch)
        start = torch.from_numpy(np.stack([templates[i] for i in rows]).astype(np.int64))
        return start, torch.from_numpy(np.stack([natives[i] for i in rows]).astype(np.int64) - 1)

    return draw


@torch.no_grad()
def recovery_of(model, templates: list[np.ndarray], natives: list[np.ndarray], strategy, bf16: bool,
                batch: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """Greedy decodes of ``templates`` by ``strategy``, in batches of one length: per template ``(recovery, passes)``,
    recovery the share of its masked positions decoded to the native token."""
    recovery, passes = np.zeros(len(templates)), np.zeros(len(templates))
    lens = np.array([len(t) for t in templates])
    for n in sorted(set(lens.tolist())):
        same = np.flatnonzero(lens == n)
        for lo in range(0, len(same), batch):
            idx = same[lo:lo + batch]
            tokens = torch.from_numpy(np.stack([templates[i] for i in idx]).astype(np.int64)).to(model.device)
            with bf16_autocast(model.device, bf16):
                final = decode_final(model, tokens, strategy, seed=0)
            native = torch.from_numpy(np.stack([natives[i] for i in idx]).astype(np.int64)).to(model.device)
            masked = tokens == model.mask_id
            right = ((final.tokens == native) & masked).sum(1).float() / masked.sum(1)
            recovery[idx], passes[idx] = right.cpu().numpy(), final.passes.cpu().numpy()
    return recovery, passes


def recovery_score(model, templates: list[np.ndarray], natives: list[np.ndarray], bf16: bool):
    """``score(selector, T) -> (mean recovery, mean passes)`` for :func:`~mi_core.order.loop.make_validator`:
    ``learned`` (threshold mode) with ``selector``, else ``top_margin``, both at ``steps=T``."""

    def score(selector, steps: int) -> tuple[float, float]:
        strategy = (make_strategy("top_margin", steps=steps) if selector is None
                    else make_strategy("learned", steps=steps, net=selector))
        recovery, passes = recovery_of(model, templates, natives, strategy, bf16)
        return float(recovery.mean()), float(passes.mean())

    return score


class InfillOrderTask(OrderTask):
    """``Domain.order_task`` of an in-filling domain: a subclass gives :meth:`pairs`, ``options``, ``domain``,
    ``load`` and ``save_denoiser``."""

    @abstractmethod
    def pairs(self, args) -> tuple[tuple[list, list], tuple[list, list], dict]:
        """``((train templates, natives), (validation templates, natives), info)``, token ids each."""
        raise NotImplementedError

    # a budget T is T passes to fill a template's masked positions: n counts those, not the template's length
    positions_of = "the template with the most positions to fill (its masked ones)"

    def checked_pairs(self, args, model) -> tuple:
        """:meth:`pairs` checked against ``model``, read once for ``args``: :meth:`positions` and :meth:`data` share
        them (:meth:`data` lets them go)."""
        return self.once(args, lambda: self._checked_pairs(args, model))

    def _checked_pairs(self, args, model) -> tuple:
        train, val, info = self.pairs(args)
        check_pairs(*train, model.mask_id, "training sequence")
        check_pairs(*val, model.mask_id, "validation sequence")
        longest = max(len(t) for t in train[0] + val[0])
        if longest > model.max_len:
            raise ValueError(f"a sequence of {longest} positions is longer than the {model.max_len} the model takes")
        return train, val, info

    def positions(self, args, model) -> int:
        """The most masked positions of a training or validation template, not the model's ``max_len`` (512 for
        AntiBERTy: derived budgets T = 32, 64, 96, 128, each of which fills a CDR3's 15 positions one a pass)."""
        train, val, _ = self.checked_pairs(args, model)
        return positions_to_fill(train[0] + val[0], model.mask_id)

    def data(self, args, cfg: OrderTrainConfig, model) -> tuple:
        train, val, info = self.checked_pairs(args, model)
        self._read = None
        masked = [int((np.asarray(t) == model.mask_id).sum()) for t in train[0]]
        header = (f"{len(train[0])} training templates ({np.mean(masked):.1f} masked positions on average), "
                  f"{len(val[0])} validation ones")
        return infill_draw(*train), recovery_score(model, *val, cfg.bf16), header, {
            **info, "train_templates": len(train[0]), "validation_templates": len(val[0]),
            "validation": "greedy recovery of the masked positions (threshold mode against top_margin)"}
