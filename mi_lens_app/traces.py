"""A decode as the Decoding page plays it: :class:`Trace`, one :class:`StepView` per frame of a strategy's run, and
the MI source a strategy that reads MI is given (the shipped estimator, the exact probe, or the 4x4 oracle's exact MI).
No streamlit here.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import partial

import numpy as np
import torch

from mi_core.bench.decode import Retry, decode_seed, item_seed, retry_for
from mi_core.decoding import STRATEGIES, decode, estimator_mi_fn, make_strategy
from mi_core.decoding.mi_guided import probe_mi_fn
from mi_core.domains.oracle4 import exact_pair_mi
from mi_core.domains.sudoku import MASK_ID
from mi_core.mi.estimator import estimate_mi
from mi_lens_app.domains import Domain
from mi_lens_app.selector import attach_selector


def oracle_step_mi(ctx) -> torch.Tensor:
    """``mi_fn`` for the 4x4 oracle: the exact pairwise MI of each row's state, ``(B, N, N)``."""
    return torch.stack([exact_pair_mi(row) for row in ctx.tokens]).to(ctx.entropy.device)


def states_mi(model, estimator, domain: Domain, states: torch.Tensor) -> np.ndarray | None:
    """``(S, N, N)`` MI of several states from the domain's fast source, or None when it has none
    (a model without an estimator: the probe per state would be too slow to show)."""
    if domain.exact_model:
        return torch.stack([exact_pair_mi(s) for s in states]).numpy()
    if estimator is None:
        return None
    return estimate_mi(model, estimator, states).mi.double().cpu().numpy()


def reads_mi_source(name: str) -> bool:
    """Whether strategy ``name`` reads MI from a source the app attaches (it has an ``mi_fn`` slot)."""
    return any(f.name == "mi_fn" for f in fields(STRATEGIES[name]))


def attach_mi_source(strategy, domain: Domain, estimator) -> None:
    """Give an MI-reading strategy (one with an ``mi_fn`` slot) the domain's MI source when it has none."""
    if not hasattr(strategy, "mi_fn") or strategy.mi_fn is not None:
        return
    if domain.exact_model:
        strategy.mi_fn = oracle_step_mi
    elif getattr(strategy, "estimator", None) is not None:
        return  # the strategy loads its own estimator
    elif estimator is not None:
        strategy.mi_fn = estimator_mi_fn(estimator)
    elif domain.probe_fallback:
        strategy.mi_fn = probe_mi_fn(domain.fallback_eps)


@dataclass(frozen=True)
class StepView:
    """One frame of a decode; step 0 is the puzzle before any pass.

    ``tokens`` ``(N,)`` after the step; ``chosen``/``remasked`` ``(N,)`` bool; ``entropy`` ``(N,)`` before the
    step (0 where not masked); ``confidence`` ``(N,)`` the model's probability of each chosen value;
    ``passes`` decode passes so far (``extra_passes``: a strategy's own probe passes); ``budget_spent``,
    ``mi_among`` (sum of MI over chosen pairs) and ``mi_max`` (the largest chosen pair) when known;
    ``errors`` ``(N,)`` bool filled cells that differ from the solution; ``info``: the strategy's scalars;
    ``maps``: its per-position reports ``(N,)`` (e.g. ``select_prob``, the order selector's probabilities);
    ``written`` ``(N,)`` the value token written at each chosen position, 0 elsewhere: a position re-masked at once
    (mask_predict) is masked in ``tokens``, and ``confidence`` is the probability of the value written there.
    """

    step: int
    tokens: np.ndarray
    chosen: np.ndarray
    remasked: np.ndarray
    entropy: np.ndarray
    confidence: np.ndarray
    passes: int
    extra_passes: int
    budget_spent: float | None
    mi_among: float | None
    mi_max: float | None
    errors: np.ndarray
    info: dict = field(default_factory=dict)
    maps: dict = field(default_factory=dict)
    written: np.ndarray | None = None


@dataclass(frozen=True)
class Trace:
    """A whole decode of one puzzle: ``steps[0]`` is the puzzle, ``steps[-1]`` the final grid; ``mi_source``
    names where ``mi_among`` came from; ``stopped`` says why a decode ended early (None: it finished).

    Decoded again (``decode_trace(attempts=K)``): ``attempts`` is ``K``, ``attempt`` the decode shown (1-based;
    after the first, one read in a symmetric view and mapped back), ``rejected`` how many decodes broke the
    domain's rules (the shown one too when all did), ``earlier_passes`` the passes (a strategy's own probe passes
    included) of the decodes before it, and ``seconds`` the time of all of them."""

    strategy: str
    params: dict
    steps: list[StepView]
    mi_source: str | None
    seconds: float
    stopped: str | None = None
    attempts: int = 1
    attempt: int = 1
    rejected: int = 0
    earlier_passes: int = 0

    @property
    def solved(self) -> bool:
        last = self.steps[-1]
        return bool((last.tokens != MASK_ID).all() and not last.errors.any())

    def first_wrong(self) -> tuple[int, int] | None:
        """``(step, position)`` of the first wrong value the decode wrote (wrong at that step: a strategy that
        remasks, such as mask_predict, may take it back later), or None."""
        for s in self.steps[1:]:
            bad = np.flatnonzero(s.chosen & s.errors.astype(bool))
            if len(bad):
                return s.step, int(bad[0])
        return None


def _scalars(info: dict) -> dict:
    """The per-row scalar entries of a frame's info (``(B,)`` tensors or numbers), row 0 as floats."""
    out = {}
    for key, value in info.items():
        if isinstance(value, torch.Tensor) and value.dim() == 1:
            out[key] = float(value[0])
        elif isinstance(value, (int, float)):
            out[key] = float(value)
    return out


def _maps(info: dict, n: int) -> dict:
    """The per-position entries of a frame's info (``(B, N)`` tensors), row 0 as float64 ``(N,)`` arrays."""
    return {key: value[0].double().cpu().numpy() for key, value in info.items()
            if isinstance(value, torch.Tensor) and value.dim() == 2 and value.shape[1] == n}


def _chosen_mi(mi: np.ndarray | None, chosen: np.ndarray) -> tuple[float | None, float | None]:
    """Sum and maximum of ``mi`` over pairs i < j of the chosen cells (None when no MI is known)."""
    if mi is None:
        return None, None
    idx = np.flatnonzero(chosen)
    if len(idx) < 2:
        return 0.0, 0.0
    sub = np.clip(mi[np.ix_(idx, idx)], 0, None)[np.triu_indices(len(idx), 1)]
    return float(sub.sum()), float(sub.max())


def decode_trace(model, estimator, domain: Domain, grid: str, solution: str | None, name: str, params: dict,
                 temperature: float = 0.0, seed: int = 0, selector=None, progress=None, attempts: int = 1) -> Trace:
    """Decode ``grid`` with strategy ``name`` and collect every frame (raises ValueError on bad params).

    ``progress(filled, masked)`` is called after every step (the app's progress bar; ``decode=k`` is added when
    ``attempts > 1``; an exception it raises, such as Streamlit stopping the run of a closed session, ends the
    decode there).

    Errors are cells that differ from ``solution``, or, where it is unknown (no unique solution, a typed
    sequence's blanks), cells that repeat the value of a rule partner (``Domain.rules``: a Sudoku's row, column
    or box). ``selector``: the order network ``learned`` runs.

    ``seed`` is taken as ``bench --seed`` takes it for a file of this one state (:func:`item_seed` of it and index
    0), so that command reproduces the trace at any temperature. ``attempts > 1`` (a domain with ``symmetries``
    and ``verify``, else ValueError): while the final state breaks the domain's rules (read from the state, not
    the solution), decode again, the ``k``-th retry under symmetric view ``k`` seeded as ``bench --attempts``
    seeds it (:func:`~mi_core.bench.decode.decode_seed`), up to ``attempts`` decodes. The trace is the accepted or last decode, mapped back to
    ``grid``'s frame; ``seconds`` counts every decode.
    """
    retry = _retry(domain, model, attempts)
    strategy = make_strategy(name, **params)
    attach_mi_source(strategy, domain, estimator)
    attach_selector(strategy, selector)
    start = np.asarray(domain.parse_state(grid))
    check = _error_check(domain, solution)
    if retry is None:
        return _decode_once(model, estimator, domain, strategy, name, params, temperature, start,
                            item_seed(seed, 0), check, progress)

    def run(state: np.ndarray, k: int, view_check: Callable) -> Trace:  # decode k + 1 of at most ``attempts``
        told = None if progress is None else partial(progress, decode=k + 1)
        return _decode_once(model, estimator, domain, strategy, name, params, temperature, state,
                            item_seed(decode_seed(seed, k), 0), view_check, told)

    trace, earlier = run(start, 0, check), []
    kept = domain.verify(start, trace.steps[-1].tokens)
    while not kept and len(earlier) + 1 < retry.count:
        earlier.append(trace)
        k = len(earlier)
        trace = _from_view(run(retry.to_view(start, k), k, _view_check(check, retry, k)), retry, k)
        kept = domain.verify(start, trace.steps[-1].tokens)
    return dataclasses.replace(trace, attempts=attempts, attempt=len(earlier) + 1, rejected=len(earlier) + (not kept),
                               earlier_passes=sum(t.steps[-1].passes + t.steps[-1].extra_passes for t in earlier),
                               seconds=trace.seconds + sum(t.seconds for t in earlier))


def _retry(domain: Domain, model, attempts: int) -> Retry | None:
    """The symmetric views of a decode-again run of ``attempts`` decodes at most (None for 1)."""
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ValueError(f"decodes at most must be a whole number >= 1, got {attempts!r}")
    if attempts > 1 and (domain.symmetries is None or domain.verify is None):
        raise ValueError(f"the {domain.label} domain cannot decode again: it declares no symmetric views and no "
                         "rule check to read a result by")
    return retry_for(domain, model, attempts)


def _view_check(check: Callable, retry: Retry, k: int) -> Callable[[np.ndarray], np.ndarray]:
    """``check`` for tokens in view ``k``: the original frame's errors, read at each view position."""
    return lambda tokens: check(retry.from_view(tokens, k))[retry.positions[k]]


def _from_view(trace: Trace, retry: Retry, k: int) -> Trace:
    """A trace decoded in view ``k`` in the original frame: tokens relabelled and put back in place, and each
    per-position array (chosen, remasked, entropy, confidence, errors, the strategy's maps) put back in place;
    entropies and probabilities do not change under a relabelling of the values."""
    where = retry.positions[k]

    def back(values: np.ndarray) -> np.ndarray:
        out = np.empty_like(values)
        out[where] = values
        return out

    steps = [dataclasses.replace(s, tokens=retry.from_view(s.tokens, k), chosen=back(s.chosen),
                                 remasked=back(s.remasked), entropy=back(s.entropy), confidence=back(s.confidence),
                                 errors=back(s.errors), maps={key: back(v) for key, v in s.maps.items()},
                                 written=None if s.written is None else retry.from_view(s.written, k))
             for s in trace.steps]
    return dataclasses.replace(trace, steps=steps)


def _decode_once(model, estimator, domain: Domain, strategy, name: str, params: dict, temperature: float,
                 start: np.ndarray, seed: int, check: Callable, progress=None) -> Trace:
    """One decode of the state ``start`` ``(N,)`` as a :class:`Trace` (``check``: its errors)."""
    tokens = torch.as_tensor(start, dtype=torch.long, device=model.device)[None]
    began = time.perf_counter()
    masked = int((tokens == model.mask_id).sum())
    frames, stopped = _run(decode(model, tokens, strategy, temperature=temperature, seed=seed), progress, masked,
                           model.mask_id)
    seconds = time.perf_counter() - began
    befores = torch.cat([tokens] + [f.tokens for f in frames[:-1]]) if frames else tokens
    own = [f.info.get("mi") for f in frames]
    has_own = bool(frames) and all(m is not None for m in own)
    other = None if has_own else states_mi(model, estimator, domain, befores)
    if has_own:
        source = f"{name}'s own MI"
    elif other is not None:
        source = "exact (4x4 oracle)" if domain.exact_model else "neural estimator"
    else:
        source = None
    first = frames[0].entropy[0].double().cpu().numpy() if frames else None
    steps = [_start_view(tokens[0].cpu().numpy(), check, first)]
    for s, frame in enumerate(frames):
        mi = own[s][0].double().cpu().numpy() if own[s] is not None else (None if other is None else other[s])
        steps.append(_step_view(frame, mi, check, s + 1))
    return Trace(name, dict(params), steps, source, seconds, stopped)


def _run(frames, progress=None, masked: int = 0, mask_id: int = MASK_ID) -> tuple[list, str | None]:
    """All frames of a decode, and why it stopped early (None if it finished).

    An error before the first frame (bad parameters, a missing MI source) is raised; one later (the exact
    4x4 oracle refuses a state that parallel unmasking made inconsistent) ends the trace with its message.
    """
    out = []
    try:
        for frame in frames:  # a loop, so the frames before an error are kept
            out.append(frame)
            if progress is not None:
                progress(masked - int((frame.tokens[0] == mask_id).sum()), masked)
    except ValueError as err:
        if not out:
            raise
        return out, str(err)
    return out, None


def rule_conflicts(tokens: np.ndarray, peers: np.ndarray, mask_id: int = MASK_ID) -> np.ndarray:
    """``(N,)`` bool: filled cells whose digit also stands in a peer cell; ``peers`` ``(N, N)`` bool."""
    filled = tokens != mask_id
    same = (tokens[:, None] == tokens[None, :]) & filled[:, None] & filled[None, :]
    return (same & peers).any(1)


def _error_check(domain: Domain, solution: str | None) -> Callable[[np.ndarray], np.ndarray]:
    """``tokens (N,) -> (N,) bool`` errors: against the solution where it is known (for a sequence: the value
    given before masking), elsewhere rule conflicts (the domain's ``rules``; none for a protein), so a typed
    state's blanks, which have no solution, are still marked where they break a rule."""
    mask = domain.mask_id
    if solution is None:  # the domain's rules (none for proteins) mark conflicting cells
        return lambda tokens: rule_conflicts(tokens, domain.rules(len(tokens)), mask)
    target = np.asarray(domain.parse_state(solution))
    unknown, peers = target == mask, domain.rules(len(target))

    def check(tokens: np.ndarray) -> np.ndarray:
        wrong = (tokens != mask) & ~unknown & (tokens != target)
        return wrong | (unknown & rule_conflicts(tokens, peers, mask)) if peers.any() else wrong

    return check


def _start_view(tokens: np.ndarray, check, entropy: np.ndarray | None) -> StepView:
    """Step 0: the puzzle, with the entropies the first step will see."""
    n = len(tokens)
    zeros = np.zeros(n)
    return StepView(0, tokens, np.zeros(n, bool), np.zeros(n, bool), zeros if entropy is None else entropy, zeros,
                    0, 0, None, None, None, check(tokens), written=np.zeros_like(tokens))


def _step_view(frame, mi: np.ndarray | None, check, step: int) -> StepView:
    tokens = frame.tokens[0].cpu().numpy()
    chosen = frame.chosen[0].cpu().numpy()
    probs = frame.probs[0].double().cpu().numpy()
    filled = frame.tokens if frame.filled is None else frame.filled  # before re-masking: what was written
    written = np.where(chosen, filled[0].cpu().numpy(), 0)
    values = np.clip(written - 1, 0, probs.shape[1] - 1)
    confidence = np.where(chosen, probs[np.arange(len(tokens)), values], 0.0)
    total, largest = _chosen_mi(mi, chosen)
    info = _scalars(frame.info)
    remasked = frame.remasked[0].cpu().numpy() if frame.remasked is not None else np.zeros_like(chosen)
    extra = int(frame.extra_passes[0]) if frame.extra_passes is not None else 0
    return StepView(step, tokens, chosen, remasked, frame.entropy[0].double().cpu().numpy(), confidence,
                    int(frame.passes[0]), extra, info.get("budget_spent"), total, largest,
                    check(tokens), info, _maps(frame.info, len(tokens)), written)
