"""The shared decode loop: forward pass, entropies, values for the positions a strategy picks, givens kept
fixed, re-masking and pass counts, one ``Frame`` per step. Rows decode independently; a finished row takes
no part in later steps."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import torch

from mi_core.decoding.base import Strategy, rank_pick
from mi_core.mi.entropy import entropy_from_logits
from mi_core.models.base import check_tokens


@dataclass
class StepContext:
    """What a strategy sees at one step, on the model's device: ``tokens``, ``masked``, ``given`` ``(B, N)``;
    ``probs`` ``(B, N, V)`` float32; ``entropy`` ``(B, N)`` nats (0 where not masked); ``hidden`` ``(B, N, D)``;
    ``step`` (0-based). ``info`` and ``extra_passes`` ``(B,)`` are the strategy's to fill."""

    tokens: torch.Tensor
    masked: torch.Tensor
    probs: torch.Tensor
    entropy: torch.Tensor
    hidden: torch.Tensor
    step: int
    generator: torch.Generator | list  # one for the batch, or one per row (see mi_core.decoding.base.rand_rows)
    model: object = None
    extra_passes: torch.Tensor | None = None
    given: torch.Tensor | None = None
    info: dict = field(default_factory=dict)


@dataclass
class Frame:
    """The state after one step: ``tokens``, ``chosen`` (filled now), ``remasked`` ``(B, N)``; ``entropy`` and
    ``probs`` before the step; ``passes`` and ``extra_passes`` (the strategy's own) ``(B,)`` so far; ``info``:
    the strategy's report; ``filled`` ``(B, N)`` the state before re-masking, which keeps the values written to
    positions re-masked at once (None: as ``tokens``)."""

    step: int
    tokens: torch.Tensor
    chosen: torch.Tensor
    entropy: torch.Tensor
    probs: torch.Tensor
    passes: torch.Tensor
    info: dict = field(default_factory=dict)
    mask_id: int = 0
    remasked: torch.Tensor | None = None
    extra_passes: torch.Tensor | None = None
    filled: torch.Tensor | None = None

    @property
    def done(self) -> bool:
        return bool((self.tokens != self.mask_id).all())


def _fill(probs: torch.Tensor, temperature: float, generator) -> torch.Tensor:
    """``(B, N)`` value index per position: argmax at temperature 0, else a sample from probs**(1/temperature)."""
    if temperature == 0:
        return probs.argmax(-1)
    # in log space, scaled to a largest weight of 1: no all-zero row at small T. A value of probability 0 keeps
    # weight 0 at any T (clamped, one step wrote one in 251 of 400 oracle states at T = 100); a finished row samples
    # uniformly
    possible = probs > 0
    logw = torch.where(possible, probs.double().log(), float("-inf")) / temperature
    logw = torch.where(possible.any(-1, keepdim=True), logw, 0.0)
    weights = (logw - logw.amax(-1, keepdim=True)).exp()
    if isinstance(generator, (list, tuple)):
        return torch.stack([torch.multinomial(w, 1, generator=g)[:, 0] for w, g in zip(weights, generator)])
    flat = weights.reshape(-1, weights.shape[-1])
    return torch.multinomial(flat, 1, generator=generator).view(probs.shape[:-1])


def _generators(seed, batch: int, device: torch.device):
    """One generator seeded by ``seed``, or one per row when ``seed`` is a sequence of B ints."""
    if isinstance(seed, (list, tuple)):
        if len(seed) != batch:
            raise ValueError(f"{len(seed)} seeds for a batch of {batch} rows")
        return [torch.Generator(device=device).manual_seed(int(s)) for s in seed]
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ValueError(f"seed must be an int or a list of {batch} ints (one a row), got {seed!r}")
    return torch.Generator(device=device).manual_seed(int(seed))


@torch.no_grad()
def decode(model, tokens: torch.Tensor, strategy, temperature: float = 0.0, seed: int | list[int] = 0,
           max_steps: int | None = None, sync_every: int | None = None):
    """Decode ``tokens`` ``(B, N)`` until nothing is masked, yielding a ``Frame`` per step.

    Each step fills the strategy's picks, or the lowest-entropy masked position of a row it left empty, with
    argmax values (temperature 0) or samples (a list of B seeds gives each row its own generator). The only
    host read is whether any row is active, every ``sync_every`` steps (default 1 on the CPU, else 8); steps
    run past the end change nothing and their frames are dropped.

    Raises:
        ValueError: bad tokens (not ``(B, N)`` int64 ids of ``model`` on its device, or no rows), strategy,
            temperature, ``max_steps`` or ``sync_every``.
        RuntimeError: not finished within ``max_steps`` (default the strategy's ``pass_limit(N)``).
    """
    check_tokens(model, tokens)
    if not len(tokens):
        raise ValueError(f"nothing to decode: the batch is empty (tokens of shape {tuple(tokens.shape)}, no rows)")
    if not isinstance(strategy, Strategy):
        raise ValueError(f"strategy must be a Strategy, got a {type(strategy).__name__}: make_strategy(name) builds one")
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) or not temperature >= 0:
        raise ValueError(f"temperature must be >= 0, got {temperature!r}")
    every = sync_every if sync_every is not None else (1 if tokens.device.type == "cpu" else 8)
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ValueError(f"sync_every must be an integer >= 1, got {sync_every!r}")
    if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, numbers.Integral)
                                  or max_steps < 0):
        raise ValueError(f"max_steps must be an integer >= 0 (or None: the strategy's limit), got {max_steps!r}")
    limit = int(max_steps) if max_steps is not None else strategy.pass_limit(tokens.shape[1])
    pending, final = [], tokens  # (frame, any row active at its start) not yet checked; the last state
    for frame, any_active in _steps(model, tokens, strategy, temperature, seed, limit):
        pending.append((frame, any_active))
        final = frame.tokens
        if len(pending) < every and frame.step < limit - 1:
            continue
        flags = torch.stack([a for _, a in pending]).tolist()  # the one host read of the loop
        for (f, _), flag in zip(pending, flags):
            if not flag:
                return
            yield f
        pending = []
    yield from (f for f, _ in pending)  # the steps before a CPU decode ended early, every row active in each
    if (final == model.mask_id).any():
        name = strategy.name or type(strategy).__name__
        raise RuntimeError(f"decoding with {name} did not finish within {limit} steps")


def _steps(model, tokens, strategy, temperature, seed, limit):
    """The decode steps as ``(frame, any row active (0-dim bool))``, without host reads."""
    device = tokens.device
    generator = _generators(seed, tokens.shape[0], device)
    mask_id = model.mask_id
    given = tokens != mask_id
    state = tokens.clone()
    confidence = given.float()  # model probability of each written value when written; 1 at givens
    passes = torch.zeros(tokens.shape[0], dtype=torch.long, device=device)
    extra = torch.zeros_like(passes)
    strategy.prepare(model, device)
    for step in range(limit):
        masked = state == mask_id
        active = masked.any(1)
        any_active = active.any()
        if device.type == "cpu" and not any_active:  # done: a read that is free here saves a pass on no rows
            return
        probs, entropy, hidden = _forward_active(model, state, active)
        entropy = entropy * masked
        ctx = StepContext(state, masked, probs, entropy, hidden, step, generator, model,
                          torch.zeros_like(passes), given)
        chosen = strategy.select(ctx) & masked
        chosen |= rank_pick(-entropy, masked, active.long()) & ~chosen.any(1, keepdim=True)  # at least one a row
        values = _fill(probs, temperature, generator)
        state = torch.where(chosen, model.value_tokens[values], state)
        confidence = torch.where(chosen, probs.gather(-1, values[..., None])[..., 0], confidence)
        asked = strategy.remask(ctx, state, confidence)  # filled, non-given positions to mask again
        remasked = torch.zeros_like(given) if asked is None else asked & ~given & (state != mask_id)
        remasked = remasked & any_active
        filled, state = state, state.masked_fill(remasked, mask_id)
        passes += active.long()
        extra += ctx.extra_passes * active.long()
        yield (Frame(step, state, chosen, entropy, probs, passes.clone(), ctx.info, mask_id, remasked,
                     extra.clone(), filled), any_active)


def _forward_active(model, state: torch.Tensor, active: torch.Tensor):
    """``(probs (B, N, V), entropy (B, N), hidden (B, N, D))`` of one pass, zero in finished rows (on the CPU,
    where reading ``active`` is free, only unfinished rows go through the model)."""
    if state.device.type != "cpu":
        out = model(state)
        keep = active[:, None, None]
        probs = out.logits.float().softmax(-1) * keep
        return probs, entropy_from_logits(out.logits) * active[:, None], out.hidden * keep
    rows = active.nonzero()[:, 0]
    out = model(state[rows])
    b, n = state.shape
    probs = out.logits.new_zeros((b, n, out.logits.shape[-1]), dtype=torch.float32)
    probs[rows] = out.logits.float().softmax(-1)
    entropy = probs.new_zeros((b, n))
    entropy[rows] = entropy_from_logits(out.logits)
    hidden = out.hidden.new_zeros((b, n, out.hidden.shape[-1]))
    hidden[rows] = out.hidden
    return probs, entropy, hidden


def decode_final(model, tokens: torch.Tensor, strategy, on_step=None, **kwargs) -> Frame:
    """Run :func:`decode` to the end and return the last frame (``passes`` per row are totals); ``on_step(frame)``
    after each step."""
    last = None
    for last in decode(model, tokens, strategy, **kwargs):
        if on_step is not None:
            on_step(last)
    if last is None:
        raise ValueError("nothing to decode: no position is masked")
    return last
