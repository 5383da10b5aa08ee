"""The app's calls into ``mi_core``: torch in, plain numpy results out (no streamlit here).

Everything a page shows is one of the frozen results below, so Streamlit can cache it by input and a
test can check it without a browser: :class:`MIMap` (one MI matrix with its marginals), :class:`ProbeView`
(the exact probe's matrices and diagnostics), :class:`WhatIf` (a clamped cell's effect), :class:`IterationView`;
a decode's :class:`~mi_lens_app.traces.Trace` is in :mod:`mi_lens_app.traces`.
"""

from __future__ import annotations

import os
import time
import typing
from dataclasses import dataclass

import numpy as np
import torch

from mi_core.decoding import STRATEGIES, strategy_params
from mi_core.decoding.budgets import derived_budgets
from mi_core.device import pick_device
from mi_core.mi.estimator import estimate_mi, load_estimator
from mi_core.mi.fidelity import fidelity, pair_values
from mi_core.mi.probe import probe, value_index, with_givens
from mi_core.models.base import ModelFileError, trained_on_mismatch
from mi_core.models.iterations import Truncated, is_recurrent, per_iteration_logits, settle_iteration
from mi_core.models.loading import load_model_described
from mi_lens_app.domains import Domain
from mi_lens_app.selector import hidden_size

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
