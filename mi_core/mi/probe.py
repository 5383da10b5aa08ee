"""Exact pairwise conditional mutual information by perturbation probing.

For a state x (visible context C, masked positions M) and a model with the shared interface:

1. One pass on x gives the marginals ``p(X_j | C)`` and entropies ``H(X_j | C)`` of every masked j.
2. For each probed masked i and value v, a pass with ``X_i = v`` gives ``r_v = p(X_j | X_i = v, C)``.
3. Directional MI, the MI of the joint ``q(v, x) = p(X_i = v | C) r_v(x)``:
   ``I(i -> j) = H(q_j) - sum_v p(X_i = v | C) H(r_v)`` with ``q_j = sum_v p(X_i = v | C) r_v`` (>= 0).
   For a consistent model ``q_j = p(X_j | C)`` and this equals the paper's form
   ``H(X_j | C) - sum_v p(X_i = v | C) H(X_j | X_i = v, C)``; an MDM need not be consistent, so both are
   returned and their gap is a diagnostic.

Visible positions and values with ``p(X_i = v | C) = 0`` are never probed. Cost: ``1 + N|V|`` passes.
Pruned probing (``eps > 0``) skips values with ``p < eps`` (never the most probable) and renormalises the
kept weights; the error bound is :func:`pruning_bound`.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from mi_core.device import bf16_autocast, synchronize
from mi_core.mi.entropy import entropy
from mi_core.models.base import check_tokens

WORK_BYTES = 256 * 2**20  # cap on the float64 (B, N, V) work tensors of one batch


class ProbeInputError(ValueError):
    """Bad arguments to :func:`probe` (shape, positions, eps, batch size, tokens)."""


@dataclass
class ProbeResult:
    """One probe, on the CPU, float64 unless said otherwise.

    ``marginals`` ``(N, V)``: ``p(X_j | C)``, one-hot at visible positions; ``entropy`` ``(N,)`` (0 there).
    ``mi_directional`` ``(N, N)``: ``[i, j] = I(i -> j)`` (mixture form), 0 on the diagonal, visible and
    unprobed rows; ``mi``: :func:`symmetrise` of it; ``mi_paper``: the paper's form.
    ``error_bound`` ``(N, N)``: bound on ``|pruned - exact|`` of ``mi_directional`` and ``mi_paper`` (0 when
    ``eps == 0``). ``passes``: sequences run; ``probed``, ``masked`` ``(N,)`` bool (``masked`` defaults to
    ``probed``).
    """

    marginals: torch.Tensor
    entropy: torch.Tensor
    mi_directional: torch.Tensor
    mi: torch.Tensor
    mi_paper: torch.Tensor
    error_bound: torch.Tensor
    passes: int
    seconds: float
    eps: float
    probed: torch.Tensor
    masked: torch.Tensor | None = None

    def __post_init__(self):
        if self.masked is None:
            self.masked = self.probed.clone()

    @property
    def asymmetry(self) -> torch.Tensor:
        """``(..., N, N)`` ``|I(i -> j) - I(j -> i)|`` where both directions were probed."""
        both = self.probed[..., :, None] & self.probed[..., None, :]
        return (self.mi_directional - self.mi_directional.transpose(-1, -2)).abs() * both

    @property
    def form_gap(self) -> torch.Tensor:
        """``(..., N, N)`` ``|mi_directional - mi_paper|``: 0 for a consistent model."""
        return (self.mi_directional - self.mi_paper).abs()

    @property
    def mi_error_bound(self) -> torch.Tensor:
        """``(..., N, N)`` bound on ``|pruned - exact|`` of the symmetrised ``mi``."""
        return symmetrise(self.error_bound, self.probed, self.masked)

    def to_json_dict(self) -> dict:
        """Plain lists and numbers (``error_bound`` as its largest value)."""
        arrays = ("marginals", "entropy", "mi_directional", "mi", "mi_paper")
        return {**{k: getattr(self, k).tolist() for k in arrays}, "passes": self.passes, "seconds": self.seconds,
                "eps": self.eps, "error_bound": _largest(self.error_bound),
                "probed": self.probed.nonzero().flatten().tolist(), "max_asymmetry": _largest(self.asymmetry),
                "max_form_gap": _largest(self.form_gap)}


def _largest(x: torch.Tensor) -> float:
    return float(x.max()) if x.numel() else 0.0


def binary_entropy(s: torch.Tensor) -> torch.Tensor:
    """``h(s) = -s log s - (1 - s) log(1 - s)`` in nats, elementwise."""
    return -torch.special.xlogy(s, s) - torch.special.xlogy(1 - s, 1 - s)


def pruning_bound(skipped: torch.Tensor, n_values: int) -> torch.Tensor:
    """``(P,)`` ``min(h(s) + s log|V|, log|V|)``: the pruning error of a row of the directional and paper MI,
    from its skipped mass ``skipped`` ``(P,)``.

    With ``Z = [X_i skipped]`` and ``I_k`` the MI over the kept values reweighted by ``1 / (1 - s)``, the chain
    rule gives ``I = I(Z; X_j) + (1 - s) I_k + s I_s`` with ``I(Z; X_j) <= h(s)`` and ``I_s, I_k`` in
    ``[0, log|V|]``, so ``|I - I_k| <= h(s) + s log|V|``; the paper form is off by at most ``s log|V|``.
    """
    log_v = math.log(n_values)
    return (binary_entropy(skipped) + skipped * log_v).clamp_max(log_v)


def symmetrise(directional: torch.Tensor, probed: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """``(..., N, N)`` -> symmetric: the mean of the available directions of each pair (``[i, j]`` is available
    when i was probed, j is masked and ``i != j``; 0 when neither is)."""
    avail = pair_mask(probed, masked).to(directional.dtype)
    part = directional * avail
    return (part + part.transpose(-1, -2)) / (avail + avail.transpose(-1, -2)).clamp_min(1)


def _probe_mask(tokens: torch.Tensor, masked: torch.Tensor, positions) -> torch.Tensor:
    """``(N,)`` bool of positions to probe: every masked one, or ``positions`` (indices or a bool mask)."""
    n = tokens.shape[0]
    if positions is None:
        return masked.clone()
    if isinstance(positions, (numbers.Number, str)):
        raise ProbeInputError(f"positions must be indices or a bool mask, got {positions!r}: positions=[{positions!r}]")
    pos = torch.as_tensor(positions if isinstance(positions, torch.Tensor) else list(positions))
    if pos.dtype == torch.bool:
        if pos.shape != (n,):
            raise ProbeInputError(f"a bool positions mask must have shape ({n},), got {tuple(pos.shape)}")
        chosen = pos.to(tokens.device)
    else:
        if pos.is_floating_point() and pos.numel():
            raise ProbeInputError(f"positions must be integer indices or a bool mask, got {pos.dtype}")
        if pos.numel() and (pos.min() < 0 or pos.max() >= n):
            raise ProbeInputError(f"positions must be in 0..{n - 1}, got {pos.tolist()}")
        chosen = torch.zeros(n, dtype=torch.bool, device=tokens.device)
        chosen[pos.long().to(tokens.device)] = True
    bad = (chosen & ~masked).nonzero().flatten().tolist()
    if bad:
        raise ProbeInputError(f"positions {bad} are not masked: only masked positions can be probed")
    return chosen


def _kept_values(marginals: torch.Tensor, eps: float) -> torch.Tensor:
    """``(P, V)`` bool: values probed per row; ``p >= eps`` and ``p > 0``, always the most probable."""
    kept = (marginals >= eps) & (marginals > 0)
    top = torch.zeros_like(kept).scatter_(1, marginals.argmax(1, keepdim=True), True)
    return kept | top


def _batches(total: int, n: int, v: int, max_batch: int) -> list[tuple[int, int]]:
    """Near-equal batches of ``total`` sequences, at most ``max_batch`` (and :data:`WORK_BYTES`) each."""
    cap = max(1, min(max_batch, WORK_BYTES // (8 * 3 * n * v)))
    if total == 0:
        return []
    size = math.ceil(total / math.ceil(total / cap))
    return [(start, min(start + size, total)) for start in range(0, total, size)]


def _forward_probs(model, seqs: torch.Tensor, autocast: bool) -> torch.Tensor:
    """``(B, N)`` tokens -> ``(B, N, V)`` float64 probabilities."""
    with bf16_autocast(seqs.device, autocast):
        logits = model(seqs).logits.double()
    # written out: several times faster than float64 Tensor.softmax over a short last axis on the CPU
    e = (logits - logits.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


def pair_mask(probed: torch.Tensor, masked: torch.Tensor | None = None) -> torch.Tensor:
    """``(..., N, N)`` bool: entries ``[i, j]`` a probe computes (i probed, j masked, ``i != j``); ``masked``
    defaults to ``probed`` (both positions masked)."""
    masked = probed if masked is None else masked
    eye = torch.eye(probed.shape[-1], dtype=torch.bool, device=probed.device)
    return probed[..., :, None] & masked[..., None, :] & ~eye


def _check_args(model, tokens: torch.Tensor, eps: float, max_batch: int, dims: int) -> None:
    shape = "one state of shape (N,)" if dims == 1 else "states of shape (S, N)"
    check_tokens(model, tokens, shape, ProbeInputError)
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not 0 <= eps < 1:
        raise ProbeInputError(f"eps must be in [0, 1), got {eps!r}")
    if isinstance(max_batch, bool) or not isinstance(max_batch, numbers.Integral) or max_batch < 1:
        raise ProbeInputError(f"max_batch must be at least 1 (an integer), got {max_batch!r}")


@torch.no_grad()
def probe(model, tokens: torch.Tensor, *, positions: Iterable[int] | torch.Tensor | None = None, eps: float = 0.0,
          max_batch: int = 512, progress: Callable[[int, int], None] | None = None,
          autocast: bool = False) -> ProbeResult:
    """Exact (``eps = 0``) or pruned pairwise MI of one state: a CPU :class:`ProbeResult`.

    Args:
        model: the shared interface (``model(tokens (B, N)) -> MDMOutput``, ``mask_id``, ``value_tokens``).
        tokens: ``(N,)`` int64 on the model's device, ``model.mask_id`` where masked.
        positions: masked positions to probe (indices or an ``(N,)`` bool mask); default all masked.
        eps: skip values with ``p(X_i = v | C) < eps`` (:func:`pruning_bound`).
        max_batch: most sequences per forward pass (also capped by :data:`WORK_BYTES`).
        progress: ``progress(done_passes, total_passes)`` after each batch.
        autocast: forward passes under bf16 autocast (softmax, entropies and MI stay float64).
    Raises:
        ProbeInputError: bad shape, dtype, tokens or positions, eps outside ``[0, 1)``, ``max_batch < 1``.
    """
    _check_args(model, tokens, eps, max_batch, dims=1)
    probed = _probe_mask(tokens, tokens == model.mask_id, positions)
    return probe_many(model, tokens[None], positions=probed[None], eps=eps, max_batch=max_batch,
                      progress=progress, autocast=autocast).state(0)  # its seconds: the whole call's


ACC_BYTES = 1024 * 2**20  # cap on the float64 (rows, N, V) accumulators of one chunk of states


@dataclass
class ManyProbeResult(ProbeResult):
    """The probes of ``S`` states of one length, on their device: the fields of :class:`ProbeResult` with a
    leading ``S`` axis; ``passes`` ``(S,)`` int64 (``1 + kept pairs``); ``seconds``: the whole call."""

    def __len__(self) -> int:
        return self.passes.shape[0]

    def to_json_dict(self) -> dict:
        """``states``: each state's :meth:`ProbeResult.to_json_dict`; ``seconds``: the whole call."""
        return {"states": [self.state(s).to_json_dict() for s in range(len(self))], "seconds": self.seconds}

    def state(self, s: int) -> ProbeResult:
        """State ``s`` as a CPU :class:`ProbeResult` (``seconds``: the average per state)."""
        arrays = ("marginals", "entropy", "mi_directional", "mi", "mi_paper", "error_bound", "probed", "masked")
        return ProbeResult(**{k: getattr(self, k)[s].detach().cpu() for k in arrays}, passes=int(self.passes[s]),
                           seconds=self.seconds / max(len(self), 1), eps=self.eps)


def value_index(tokens: torch.Tensor, value_tokens: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """``(S, N)`` value index of each visible token (-1 where masked); ProbeInputError on an unknown token."""
    match = tokens[..., None] == value_tokens  # (S, N, V)
    bad = ~masked & ~match.any(-1)
    if bad.any():
        s, pos = bad.nonzero()[0].tolist()
        raise ProbeInputError(f"state {s}: the token at position {pos} is neither the mask id nor a value token")
    return torch.where(masked, -1, match.long().argmax(-1))


def with_givens(probs: torch.Tensor, given_values: torch.Tensor, masked: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Marginals ``(S, N, V)``: ``probs`` where masked, one-hot of ``given_values`` elsewhere; and their entropies
    ``(S, N)`` (0 at visible positions)."""
    onehot = torch.nn.functional.one_hot(given_values.clamp_min(0), probs.shape[-1]).double()
    marginals = torch.where(masked[..., None], probs.double(), onehot)
    return marginals, entropy(marginals) * masked


def _state_chunks(s: int, n: int, v: int) -> list[tuple[int, int]]:
    """Consecutive state ranges whose dense ``(states * N, N, V)`` accumulators fit :data:`ACC_BYTES`."""
    per = max(1, ACC_BYTES // (8 * (n * n * v + n * n)))
    return [(lo, min(lo + per, s)) for lo in range(0, s, per)]


def _chunk_mi(forward, tokens, kept, marginals, base_h, value_tokens, max_batch) -> tuple[torch.Tensor, torch.Tensor]:
    """``(C, N, N)`` directional and paper-form MI of a chunk of states ``(C, N)``, before the pair mask: every
    kept ``(state, position, value)`` through ``forward``, summed only for the probed rows ``state * N + i``."""
    c, n = tokens.shape
    s_of, i_of, v_of = kept.nonzero(as_tuple=True)  # (K,) pairs in (state, position, value) order
    rows, row_of = torch.unique(s_of * n + i_of, return_inverse=True)
    weight = marginals[s_of, i_of, v_of]
    mix = weight.new_zeros(rows.numel(), n, value_tokens.shape[0])  # sum of p_v r_v
    cond_h = weight.new_zeros(rows.numel(), n)  # sum of p_v H(r_v)
    for lo, hi in _batches(s_of.numel(), n, value_tokens.shape[0], max_batch):
        seqs = tokens[s_of[lo:hi]]
        seqs[torch.arange(hi - lo, device=tokens.device), i_of[lo:hi]] = value_tokens[v_of[lo:hi]]
        probs, w = forward(seqs), weight[lo:hi]
        mix.index_add_(0, row_of[lo:hi], w[:, None, None] * probs)
        cond_h.index_add_(0, row_of[lo:hi], w[:, None] * entropy(probs))
    kept_mass = weight.new_zeros(rows.numel()).index_add_(0, row_of, weight)
    cond_h = cond_h / kept_mass[:, None]
    mi_dir, mi_paper = base_h.new_zeros(c * n, n), base_h.new_zeros(c * n, n)
    mi_dir[rows] = entropy(mix / kept_mass[:, None, None]) - cond_h
    mi_paper[rows] = base_h[rows // n] - cond_h
    return mi_dir.view(c, n, n), mi_paper.view(c, n, n)


@torch.no_grad()
def probe_many(model, tokens: torch.Tensor, *, positions: torch.Tensor | None = None, eps: float = 0.0,
               max_batch: int = 512, progress: Callable[[int, int], None] | None = None,
               autocast: bool = False) -> ManyProbeResult:
    """:func:`probe` of ``S`` states of one length at once: a :class:`ManyProbeResult` on ``tokens.device``.

    Every perturbation of every state shares one stream of full batches; states go in chunks whose float64
    accumulators stay within :data:`ACC_BYTES`. Per state the result equals :func:`probe`'s.

    Args:
        tokens: ``(S, N)`` int64; positions: ``(S, N)`` bool (default all masked); the rest as in :func:`probe`,
            except that with ``progress`` a batch holds at most a tenth of all passes.
    """
    synchronize(tokens.device)
    start = time.perf_counter()
    _check_args(model, tokens, eps, max_batch, dims=2)
    s, n = tokens.shape
    value_tokens = model.value_tokens.to(tokens.device)
    v = value_tokens.shape[0]
    masked = tokens == model.mask_id
    given_values = value_index(tokens, value_tokens, masked)
    probed = masked.clone() if positions is None else _probe_mask_many(positions, masked)
    base = torch.cat([_forward_probs(model, tokens[lo:hi], autocast) for lo, hi in _batches(s, n, v, max_batch)])
    marginals, entropy = with_givens(base, given_values, masked)
    kept = _kept_values(marginals.reshape(s * n, v), eps).view(s, n, v) & probed[..., None]  # (S, N, V)
    passes = 1 + kept.sum((1, 2))
    total = int(passes.sum()) if progress is not None else 0  # a host sync only when reporting
    if progress is not None:
        progress(s, total)
        max_batch = min(int(max_batch), max(1, -(-total // 10)))  # a report at least every tenth of the passes
    done = s

    def forward(seqs: torch.Tensor) -> torch.Tensor:
        nonlocal done
        probs = _forward_probs(model, seqs, autocast)
        done += len(seqs)
        if progress is not None:
            synchronize(tokens.device)
            progress(done, total)
        return probs

    mi_dir = marginals.new_zeros(s, n, n)
    mi_paper = torch.zeros_like(mi_dir)
    for lo, hi in _state_chunks(s, n, v):
        mi_dir[lo:hi], mi_paper[lo:hi] = _chunk_mi(forward, tokens[lo:hi], kept[lo:hi], marginals[lo:hi],
                                                   entropy[lo:hi], value_tokens, max_batch)
    pair = pair_mask(probed, masked)
    mi_dir, mi_paper = mi_dir * pair, mi_paper * pair
    skipped = (marginals * ~kept).sum(-1) * probed  # (S, N)
    bound = pruning_bound(skipped, v)[:, :, None] * pair
    result = ManyProbeResult(marginals=marginals, entropy=entropy, mi_directional=mi_dir,
                             mi=symmetrise(mi_dir, probed, masked), mi_paper=mi_paper, error_bound=bound,
                             passes=passes, seconds=0.0, eps=float(eps), probed=probed, masked=masked)
    synchronize(tokens.device)
    result.seconds = time.perf_counter() - start
    return result


def _probe_mask_many(positions: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """``(S, N)`` bool positions to probe; they must all be masked."""
    pos = torch.as_tensor(positions, device=masked.device)
    if pos.dtype != torch.bool or pos.shape != masked.shape:
        raise ProbeInputError(f"positions must be an (S, N) = {tuple(masked.shape)} bool mask, got "
                              f"{tuple(pos.shape)} {pos.dtype}")
    if (pos & ~masked).any():
        s, i = (pos & ~masked).nonzero()[0].tolist()
        raise ProbeInputError(f"state {s}: position {i} is not masked: only masked positions can be probed")
    return pos


def per_length(states: list[torch.Tensor], fn: Callable[[torch.Tensor], Iterable]) -> list:
    """``fn`` of the states ``[(N_s,)]`` of each length stacked, ``(S_l, N_l)`` -> ``S_l`` results, put back in
    the states' order."""
    groups: dict[int, list[int]] = {}
    for s, t in enumerate(states):
        groups.setdefault(t.shape[0], []).append(s)
    out: list = [None] * len(states)
    for members in groups.values():
        for s, result in zip(members, fn(torch.stack([states[s] for s in members]))):
            out[s] = result
    return out


def probe_by_length(model, states: list[torch.Tensor], **kwargs) -> list[ProbeResult]:
    """A CPU :class:`ProbeResult` per state of mixed lengths ``[(N_s,)]``: one :func:`probe_many` per length."""
    for s, t in enumerate(states):
        if t.dim() != 1:
            raise ProbeInputError(f"state {s} must have shape (N,), got {tuple(t.shape)}")

    def probed(stack: torch.Tensor) -> list[ProbeResult]:
        many = probe_many(model, stack, **kwargs)
        return [many.state(k) for k in range(len(many))]

    return per_length(states, probed)
