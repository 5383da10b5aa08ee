"""The app's calls into ``mi_core``: torch in, plain numpy results out (no streamlit here).

Everything a page shows is one of the frozen results below, so Streamlit can cache it by input and a
test can check it without a browser: :class:`MIMap` (one MI matrix with its marginals), :class:`ProbeView`
(the exact probe's matrices and diagnostics), :class:`WhatIf` (a clamped cell's effect) and
:class:`Trace` (a decode, one :class:`StepView` per frame).
"""

from __future__ import annotations

import dataclasses
import os
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import partial

import numpy as np
import torch

from mi_core.bench.decode import Retry, decode_seed, item_seed, retry_for
from mi_core.decoding import STRATEGIES, decode, estimator_mi_fn, make_strategy, strategy_params
from mi_core.decoding.budgets import derived_budgets
from mi_core.decoding.mi_guided import probe_mi_fn
from mi_core.device import pick_device
from mi_core.domains.oracle4 import exact_pair_mi
from mi_core.domains.sudoku import MASK_ID
from mi_core.mi.estimator import estimate_mi, load_estimator
from mi_core.mi.fidelity import fidelity, pair_values
from mi_core.mi.probe import probe, value_index, with_givens
from mi_core.models.base import ModelFileError, trained_on_mismatch
from mi_core.models.iterations import Truncated, is_recurrent, per_iteration_logits, settle_iteration
from mi_core.models.loading import load_model_described
from mi_lens_app.domains import Domain
from mi_lens_app.selector import attach_selector, hidden_size

# the app supplies the MI source (see attach_mi_source) and the order selector (see selector.attach_selector);
# max_batch only splits the probe's passes into batches (memory, not the result)
HIDDEN_PARAMS = frozenset({"estimator", "selector", "max_batch"})
# the range of each number a user (or a link) can give a strategy: every number has one, so no link can ask for
# unbounded work (a step count of 10^8); (strategy or None for all, parameter) -> (low, high)
PARAM_RANGES: dict[tuple[str | None, str], tuple[float, float]] = {
    (None, "tau"): (0.0, 1.0), (None, "threshold"): (0.0, 1.0), (None, "eps"): (0.0, 1.0),
    (None, "gumbel"): (0.0, 10.0), (None, "gamma"): (0.0, 100.0), (None, "lam"): (0.0, 100.0),
}
INT_RANGE = (1, 1000)  # steps and counts: 1000 passes decode any Sudoku and any protein the app takes
FLOAT_RANGE = (0.0, 100.0)
# text parameters with a fixed set of values, shown as a select box: (strategy, parameter) -> values
PARAM_CHOICES: dict[tuple[str, str], tuple[str, ...]] = {("learned", "mode"): ("threshold", "paced", "sample", "rank")}


def app_device() -> torch.device:
    """The device from ``MI_LENS_DEVICE`` (default: CUDA when present, else CPU); a bad value names the variable."""
    try:
        return pick_device(os.environ.get("MI_LENS_DEVICE"))
    except ValueError as err:
        raise ValueError(f"MI_LENS_DEVICE: {err}") from None


def use_app_threads() -> int:
    """Set torch's CPU threads for the app from ``MI_LENS_THREADS`` (default 1) and return the number. The app
    runs one state per pass (small matmuls) and serves sessions in threads of their own: a second intra-op
    thread saves nothing there, and on a busy host two threads spin against each other (one estimator pass
    took 0.9 s with 2 threads and 9 ms with 1, at load 2.8 on 2 CPUs). Threads started later inherit it."""
    text = os.environ.get("MI_LENS_THREADS") or "1"  # set but empty: the default, as MI_LENS_BENCHMARKS reads it
    threads = int(text) if text.strip().isdecimal() else 0  # "two", "1.5" or "²" (a digit to isdigit(), not to int())
    if threads < 1:
        raise ValueError(f"MI_LENS_THREADS must be a whole number >= 1, got {text!r}")
    torch.set_num_threads(threads)
    return threads


def load_domain_model(domain: Domain, device: torch.device):
    """``(model on device, a line naming it)`` from the core's loader for the domain (raises ModelFileError
    naming a missing or bad file, and the variable that points at another)."""
    path = domain.model_path()
    if path is not None and not path.is_file() and domain.model_fallback is None:
        raise ModelFileError(f"the {domain.label} model file {path} is missing (set {domain.model_env} to a "
                             "trained model's .safetensors)")
    model, description = load_model_described(None, device, domain)
    return model, f"Model: {description}."


@torch.no_grad()
def warm(model, length: int) -> None:
    """One forward pass of a fully masked input of ``length`` positions: the first pass of a process pays for
    lazy setup (kernels, allocations), so the first user-visible one does not."""
    tokens = torch.full((1, length), int(model.mask_id), dtype=torch.long, device=model.device)
    model(tokens)


def load_domain_estimator(domain: Domain, device: torch.device):
    """The domain's MI estimator, or None when it has none or its file is absent."""
    path = domain.estimator_path()
    if path is None or not path.is_file():
        return None
    return load_estimator(path, device)


@torch.no_grad()
def estimator_mismatch(model, estimator, domain: Domain) -> str | None:
    """Why ``estimator`` cannot read ``model``'s features on ``domain`` (hidden size, values, positions), or None."""
    hidden = hidden_size(model, domain)
    cfg = estimator.cfg
    if cfg.d_in != hidden:
        return f"it reads hidden states of size {cfg.d_in}, but the model's are {hidden}"
    if cfg.n_values != model.n_values:
        return f"it expects {cfg.n_values} values, the model has {model.n_values}"
    if getattr(cfg, "n_positions", 0) and domain.length is None:
        return f"it was trained on a fixed length of {cfg.n_positions} positions; sequences vary in length"
    if getattr(cfg, "n_positions", 0) and cfg.n_positions != domain.cells:
        return f"it was trained on {cfg.n_positions} positions, this domain has {domain.cells}"
    problem = trained_on_mismatch(model, domain.estimator_path())  # same size, other weights: wrong MI
    return f"it {problem}" if problem else None


def tokens_of(grid: str, domain: Domain, device) -> torch.Tensor:
    """``(N,)`` int64 token ids of a state string (a grid: digits are their own tokens, blanks ``MASK_ID``;
    a protein: letters and ``_``, see ``mi_core.domains.protein``)."""
    return torch.tensor(domain.parse_state(grid), dtype=torch.long, device=device)


@dataclass(frozen=True)
class MIMap:
    """One MI matrix and the marginals it came with.

    ``mi`` ``(N, N)`` symmetric nats; ``entropy`` ``(N,)`` (0 at givens); ``marginals`` ``(N, V)`` (one-hot at
    givens); ``masked`` ``(N,)`` bool; ``source`` says where the MI came from; ``passes`` model passes spent.
    """

    mi: np.ndarray
    entropy: np.ndarray
    marginals: np.ndarray
    masked: np.ndarray
    source: str
    passes: int
    seconds: float


@dataclass(frozen=True)
class ProbeView:
    """The exact probe's result as numpy: ``mi`` (symmetrised), ``mi_directional`` ``[i, j] = I(i -> j)``,
    ``mi_paper``, ``asymmetry`` ``|I(i->j) - I(j->i)|``, ``form_gap`` and ``error_bound`` (of ``mi``), all
    ``(N, N)``; ``entropy`` ``(N,)``, ``marginals`` ``(N, V)``, ``masked`` ``(N,)``; ``passes``, ``seconds``,
    ``eps``."""

    mi: np.ndarray
    mi_directional: np.ndarray
    mi_paper: np.ndarray
    asymmetry: np.ndarray
    form_gap: np.ndarray
    error_bound: np.ndarray
    entropy: np.ndarray
    marginals: np.ndarray
    masked: np.ndarray
    passes: int
    seconds: float
    eps: float

    def as_map(self) -> MIMap:
        source = "exact" if self.eps == 0 else f"exact (pruned, eps={self.eps:g})"
        return MIMap(self.mi, self.entropy, self.marginals, self.masked, source, self.passes, self.seconds)


def run_probe(model, tokens: torch.Tensor, eps: float, progress=None) -> ProbeView:
    """The exact probe of one state ``(N,)`` (``eps > 0`` prunes; see ``mi_core.mi.probe``)."""
    res = probe(model, tokens, eps=eps, progress=progress)
    return ProbeView(
        mi=res.mi.numpy(), mi_directional=res.mi_directional.numpy(), mi_paper=res.mi_paper.numpy(),
        asymmetry=res.asymmetry.numpy(), form_gap=res.form_gap.numpy(), error_bound=res.mi_error_bound.numpy(),
        entropy=res.entropy.numpy(), marginals=res.marginals.numpy(), masked=res.masked.numpy(),
        passes=int(res.passes), seconds=float(res.seconds), eps=float(res.eps),
    )


def run_estimator(model, estimator, tokens: torch.Tensor) -> MIMap:
    """The neural estimator's MI of one state ``(N,)``: one model pass plus the head."""
    est = estimate_mi(model, estimator, tokens[None])
    return MIMap(est.mi[0].double().cpu().numpy(), est.entropy[0].double().cpu().numpy(),
                 est.marginals[0].double().cpu().numpy(), est.masked[0].cpu().numpy(), "neural estimator", 1,
                 float(est.seconds))


def fast_map(model, estimator, domain: Domain, tokens: torch.Tensor) -> MIMap:
    """The quickest MI map of a state: the estimator when there is one, else the (pruned) exact probe."""
    if estimator is not None:
        return run_estimator(model, estimator, tokens)
    return run_probe(model, tokens, domain.fallback_eps).as_map()


def topk_overlap(pred: np.ndarray, exact: np.ndarray, masked: np.ndarray, k: int) -> float:
    """Fraction of the ``k`` strongest exact pairs (masked x masked, i < j) among the ``k`` strongest predicted."""
    p, e = pair_values(pred, masked), pair_values(exact, masked)
    k = min(k, len(p))
    if k == 0:
        return float("nan")
    top_p = set(np.argsort(-p, kind="stable")[:k].tolist())
    top_e = set(np.argsort(-e, kind="stable")[:k].tolist())
    return len(top_p & top_e) / k


def compare_maps(pred: np.ndarray, exact: np.ndarray, masked: np.ndarray, k: int = 20,
                 threshold: float = 1e-2) -> dict:
    """Spearman, Pearson, MAE and top-k overlap of two ``(N, N)`` MI maps over masked pairs."""
    stats = fidelity(pred[None], exact[None], masked[None], threshold)
    return {"spearman": stats["spearman"], "pearson": stats["pearson"], "mae": stats["mae"],
            "n_pairs": stats["n_pairs"], "k": min(k, len(pair_values(exact, masked))),  # 4 masked: 6 pairs, not 20
            "topk_overlap": topk_overlap(pred, exact, masked, k),
            "max_abs_diff": float(np.abs(pred - exact).max()) if pred.size else 0.0}


@dataclass(frozen=True)
class WhatIf:
    """What clamping masked ``cell`` to value index ``value`` does.

    ``before``/``after``: marginals ``(N, V)`` and entropies ``(N,)`` of the state and of the clamped state;
    ``p_value``: the model's ``p(X_cell = value | C)``; ``mi_from_cell`` ``(N,)``: the exact probe's
    ``I(cell -> j)``, the expected entropy drop of each j over all values of the cell (1 + |V| passes).
    """

    cell: int
    value: int
    marginals_before: np.ndarray
    entropy_before: np.ndarray
    marginals_after: np.ndarray
    entropy_after: np.ndarray
    p_value: float
    mi_from_cell: np.ndarray


def what_if(model, tokens: torch.Tensor, cell: int, value: int) -> WhatIf:
    """Clamp masked ``cell`` of ``tokens`` ``(N,)`` to value index ``value`` (raises ValueError if not masked)."""
    if tokens[cell] != model.mask_id:
        raise ValueError(f"cell {cell} is not blank: only blank cells can be clamped")
    res = probe(model, tokens, positions=[cell])
    clamped = tokens.clone()
    clamped[cell] = model.value_tokens[value]
    after = probe(model, clamped, positions=[])  # one pass: marginals and entropies in the probe's format
    return WhatIf(cell, value, res.marginals.numpy(), res.entropy.numpy(), after.marginals.numpy(),
                  after.entropy.numpy(), float(res.marginals[cell, value]), res.mi_directional[cell].numpy())


@dataclass(frozen=True)
class IterationView:
    """A recurrent model's reading of one state after each of its ``T`` iterations.

    ``marginals`` ``(T, N, V)`` (one-hot at givens); ``entropy`` ``(T, N)`` nats (0 at givens); ``settle``
    ``(N,)`` the iteration (1-based) from which each cell's argmax no longer changes (0 at givens); ``masked``
    ``(N,)`` bool; ``seconds``: the one forward pass."""

    marginals: np.ndarray
    entropy: np.ndarray
    settle: np.ndarray
    masked: np.ndarray
    seconds: float

    @property
    def iterations(self) -> int:
        return self.marginals.shape[0]


def iteration_view(model, tokens: torch.Tensor) -> IterationView:
    """Every iteration's marginals of one state ``(N,)`` from one forward pass with ``keep = T`` (raises
    ValueError for a model that is not recurrent)."""
    if not is_recurrent(model):
        raise ValueError("this model is not recurrent: it has no iterations to show")
    start = time.perf_counter()
    probs = per_iteration_logits(model, tokens[None])[:, 0].double().softmax(-1)  # (T, N, V)
    states = tokens[None].expand(probs.shape[0], -1)  # the same state at every iteration
    masked = states == model.mask_id
    marginals, entropy = with_givens(probs, value_index(states, model.value_tokens, masked), masked)
    marginals, entropy, masked = marginals.cpu().numpy(), entropy.cpu().numpy(), masked[0].cpu().numpy()
    settle = np.where(masked, settle_iteration(marginals.argmax(-1)), 0)
    return IterationView(marginals, entropy, settle, masked, time.perf_counter() - start)


def probe_at_iteration(model, tokens: torch.Tensor, iterations: int, eps: float, progress=None) -> ProbeView:
    """The exact probe of one state with ``model`` run for its first ``iterations`` iterations only
    (:class:`~mi_core.models.iterations.Truncated`; the model itself is not changed)."""
    return run_probe(Truncated(model, iterations), tokens, eps, progress)


# ---- decoding ----


@dataclass(frozen=True)
class ParamField:
    """One user parameter of a strategy: ``kind`` is ``"int"``, ``"float"``, ``"bool"`` or ``"str"``;
    ``optional``: None is allowed (and is the default when ``default`` is None); ``choices``: the values a
    text parameter takes (None: any)."""

    name: str
    default: object
    kind: str
    optional: bool
    choices: tuple[str, ...] | None = None


STEP_COUNTS = ("steps",)  # parameters that count passes: at or above an input's positions they limit nothing


def fitted_default(key: str, default, positions: int | None):
    """``default`` of parameter ``key``, or for a step count at or above ``positions`` (an input of that many
    positions, where every position can take a pass of its own and the count limits nothing: learned_mi's 20 on a
    word of 16) the largest of :func:`~mi_core.decoding.budgets.derived_budgets`, below them (n / 4)."""
    if key in STEP_COUNTS and isinstance(default, int) and positions is not None and default >= positions:
        return max(derived_budgets(positions))
    return default


def strategy_fields(name: str, domain_defaults: tuple = (), positions: int | None = None) -> list[ParamField]:
    """The parameters the app shows for strategy ``name`` (those the app supplies itself left out), each at
    the domain's default where ``domain_defaults`` (``Domain.strategy_defaults``) names one, else the
    strategy's own; a step count at or above ``positions`` (the input's) below them (:func:`fitted_default`)."""
    hints = typing.get_type_hints(STRATEGIES[name])
    tuned = {key: value for strategy, key, value in domain_defaults if strategy == name}
    out = []
    for key, default in strategy_params(name).items():
        if key in HIDDEN_PARAMS:
            continue
        default = fitted_default(key, tuned.get(key, default), positions)
        args = [a for a in typing.get_args(hints[key]) if a is not type(None)] or [hints[key]]
        kind = next((k.__name__ for k in (bool, int, float, str) if k in args), "str")
        out.append(ParamField(key, default, kind, type(None) in typing.get_args(hints[key]),
                              PARAM_CHOICES.get((name, key))))
    return out


def param_range(name: str, field: ParamField) -> tuple[float, float]:
    """``(low, high)`` a number parameter of strategy ``name`` may take in the app."""
    found = PARAM_RANGES.get((name, field.name)) or PARAM_RANGES.get((None, field.name))
    if found is not None:
        return found
    return INT_RANGE if field.kind == "int" else FLOAT_RANGE


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
