"""Decode many inputs of any domain with one strategy, then score them with the domain's metric.

Seeds: ``"per item"`` gives input ``i`` its own seed (:func:`item_seed`), so results do not depend on the
batch size; ``"per batch"`` draws one seed per batch from ``seed`` (the protein benchmarks' recorded figures).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import torch

from mi_core.decoding import decode_final
from mi_core.decoding.learned import selector_source
from mi_core.decoding.mi_guided import probe_mi_fn
from mi_core.device import bf16_autocast
from mi_core.io import display_path, file_sha256
from mi_core.mi.estimator import (
    EstimatorInputError,
    absent_own_estimator,
    check_model_match,
    load_estimator,
    shipped_estimator_for,
)
from mi_core.models.base import trained_on_mismatch
from mi_core.models.iterations import is_recurrent, run_for
from mi_core.models.loading import load_model_described, other_domain
from mi_core.models.views import with_views
from mi_core.options import SKIP, option, redefault, seed

SEEDINGS = ("per item", "per batch")
NO_METRIC = "has no metric (a Domain's metric)"  # why bench and sweep cannot run a domain (their UNSERVED)


@dataclass
class Generation:
    """Token arrays in input order, passes of each, passes a strategy spent on its own, the wall time, and the
    passes of each decode of each (several where a :class:`Retry` decoded it again)."""

    sequences: list[np.ndarray]
    passes: list[int]
    extra_passes: list[int]
    seconds: float
    decodes: list[list[int]] = field(default_factory=list)

    @property
    def attempts(self) -> list[int]:
        return [len(d) for d in self.decodes]


@dataclass
class Retry:
    """Decode again each state whose result ``verify(start, final)`` rejects (the domain's rules, read from the
    state alone, no answer), each time under the next symmetric view: ``positions (K, N)`` (view position ``j``
    reads original position ``positions[k, j]``) and ``values (K, V)`` (value ``v`` reads as ``values[k, v]``),
    view 0 the identity; ``tokens[v]`` is value ``v``'s token. ``K`` decodes at most. States have the ``N``
    positions of the views (a fixed-length domain). ``announce(k, count)``, when set, hears of each round: decode
    ``k`` (2 to ``K``) of ``count`` states (a progress bar grows by them)."""

    positions: np.ndarray
    values: np.ndarray
    tokens: np.ndarray
    verify: Callable
    announce: Callable[[int, int], None] | None = None

    @property
    def count(self) -> int:
        return len(self.positions)

    def _relabel(self, row: np.ndarray, old: np.ndarray, new: np.ndarray) -> np.ndarray:
        index = np.full(int(max(row.max(), old.max())) + 1, -1)
        index[old] = np.arange(len(old))
        slot = index[row]
        return np.where(slot >= 0, new[slot], row)  # the mask and pads stay as they are

    def to_view(self, row: np.ndarray, k: int) -> np.ndarray:
        return self._relabel(np.asarray(row)[self.positions[k]], self.tokens, self.tokens[self.values[k]])

    def from_view(self, row: np.ndarray, k: int) -> np.ndarray:
        back = np.empty_like(row)
        back[self.positions[k]] = self._relabel(np.asarray(row), self.tokens[self.values[k]], self.tokens)
        return back


def retry_for(domain, model, attempts: int) -> Retry | None:
    """A :class:`Retry` of ``attempts`` decodes in all under ``domain``'s symmetries and rules (1: None). View
    ``k`` is drawn with seed ``k`` alone, so the first ``K`` views are the same for any ``attempts`` >= K (a run
    of 8 decodes at most holds the runs of fewer)."""
    if attempts == 1:
        return None
    if domain.symmetries is None or domain.verify is None:
        raise ValueError(f"--attempts {attempts}: the {domain.label} domain declares no symmetries and rule check")
    drawn = [domain.symmetries(2, k) for k in range(1, attempts)]
    identity = domain.symmetries(1, 0)
    positions = np.stack([np.asarray(identity[0][0]), *(np.asarray(p[1]) for p, _ in drawn)])
    values = np.stack([np.asarray(identity[1][0]), *(np.asarray(v[1]) for _, v in drawn)])
    return Retry(positions, values, model.value_tokens.cpu().numpy(), domain.verify)


def decode_seed(seed: int, k: int) -> int:
    """The seed of decode ``k`` (0: the first, ``k``: the ``k``-th retry) of a run seeded ``seed``: a retry's is
    drawn from ``(seed, k)``, so it replays no first decode of another run (``seed + k`` was run ``seed + k``'s)."""
    return seed if k == 0 else int(np.random.SeedSequence([seed, k]).generate_state(1, np.uint64)[0] % 2**63)


def item_seed(seed: int, index: int) -> int:
    return (seed * 1_000_003 + index) % 2**63  # runs with neighbouring seeds share no stream


def length_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices grouped by length (ascending; input order within a length), cut into batches."""
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(n, []).append(i)
    return [groups[n][lo:lo + batch_size] for n in sorted(groups) for lo in range(0, len(groups[n]), batch_size)]


PROGRESS_FORMAT = "{l_bar}{bar}| {n:.1f}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"  # a bar fed by RowsDone


class RowsDone:
    """``progress(x)`` as one batch ``tokens`` ``(B, N)`` decodes, ``x`` the rows' share of their masked positions
    filled since the last report: after each step where reading the state is free (the CPU), else at the end."""

    def __init__(self, progress: Callable[[float], object], tokens: torch.Tensor, mask_id: int):
        self.progress, self.mask_id, self.told = progress, mask_id, 0.0
        self.rows = len(tokens)
        self.masked = (tokens == mask_id).sum(1) if tokens.device.type == "cpu" else None

    def step(self, frame) -> None:
        if self.masked is not None:
            filled = self.masked - (frame.tokens == self.mask_id).sum(1)
            share = torch.where(self.masked > 0, filled / self.masked.clamp_min(1), 1.0)  # nothing to fill: done
            done = max(self.told, float(share.sum()))
            self.progress(done - self.told)
            self.told = done

    def end(self) -> None:
        self.progress(self.rows - self.told)
        self.told = float(self.rows)


@torch.no_grad()
def decode_all(model, templates: list[np.ndarray], strategy, *, temperature: float = 0.0, seed: int = 0,
               batch_size: int = 256, device: torch.device | str = "cpu", bf16: bool = False, progress=None,
               seeding: str = "per item", retry: Retry | None = None, items: list[int] | None = None,
               into: Generation | None = None, keep: Callable[[list[int]], None] | None = None) -> Generation:
    """Decode every template (token ids, ``model.mask_id`` where to fill); ``progress(x)`` as they fill
    (:class:`RowsDone`); ``retry``: decode again those whose results break the domain's rules
    (:func:`retry_rejected`); ``items``: each template's index for its per-item seed (default: its place in
    ``templates``); ``into``: the :class:`Generation` filled and returned, which a stop (Ctrl-C) leaves holding
    the inputs finished so far (:func:`finished`), and which, where it holds a result of each template (None: not
    yet), a stopped run's, decodes only the batches and rounds of decoding again left, as they would have been;
    ``keep(indices)``: after each batch and round, of the templates whose results it changed."""
    if seeding not in SEEDINGS:
        raise ValueError(f"seeding must be one of {SEEDINGS}, got {seeding!r}")
    longest = max(map(len, templates), default=0)
    if longest > model.max_len:
        raise ValueError(f"a sequence of {longest} positions is longer than the {model.max_len} this model takes")
    n = len(templates)
    gen = into if into is not None else Generation([], [], [], 0.0)
    if len(gen.sequences) != n:
        gen.sequences, gen.passes, gen.extra_passes, gen.decodes = [None] * n, [0] * n, [0] * n, [[] for _ in range(n)]
        gen.seconds = 0.0
    settings = {"temperature": temperature, "batch_size": batch_size, "device": device, "bf16": bf16,
                "seeding": seeding, "progress": progress}
    start = time.perf_counter() - gen.seconds
    _first_decodes(model, templates, strategy, gen, start, seed, items, keep, **settings)  # a stop keeps those done
    if retry is not None:
        retry_rejected(model, templates, strategy, gen, retry, seed, settings, items, keep)
    return gen


def finished(templates: list[np.ndarray], gen: Generation, retry: Retry | None) -> list[int]:
    """The inputs whose decoding is done in ``gen``: decoded, and (with ``retry``) accepted by the rules or decoded
    as many times as ``retry`` allows."""
    return [i for i, (t, s) in enumerate(zip(templates, gen.sequences)) if s is not None and
            (retry is None or len(gen.decodes[i]) == retry.count or retry.verify(t, s))]


def _first_decodes(model, templates: list[np.ndarray], strategy, gen: Generation, start: float, seed: int,
                   items: list[int] | None, keep, *, temperature: float, batch_size: int, device, bf16: bool,
                   progress, seeding: str) -> None:
    """:func:`decode_all`'s first decode of every template, batch by batch, into ``gen`` (a batch it holds is not
    decoded again); its ``seconds``: since ``start`` (a ``perf_counter``) to the end of the last batch finished."""
    sequences, passes, extra = gen.sequences, gen.passes, gen.extra_passes
    rng = np.random.default_rng(seed)
    for idx in length_batches([len(t) for t in templates], batch_size):
        seeds = ([item_seed(seed, i if items is None else items[i]) for i in idx] if seeding == "per item"
                 else int(rng.integers(2**62)))
        if all(sequences[i] is not None for i in idx):  # decoded before a stop: its seed is drawn all the same
            continue
        tokens = torch.from_numpy(np.stack([np.asarray(templates[i], dtype=np.int64) for i in idx])).to(device)
        zeros = torch.zeros(len(idx), dtype=torch.long)
        report = RowsDone(progress, tokens, model.mask_id) if progress else None
        if not bool((tokens == model.mask_id).any()):  # nothing to fill: the template is the answer
            final_tokens, final_passes, final_extra = tokens, zeros, zeros
        else:
            with bf16_autocast(device, bf16):
                final = decode_final(model, tokens, strategy, temperature=temperature, seed=seeds,
                                     on_step=report.step if report else None)
            final_tokens, final_passes = final.tokens, final.passes
            final_extra = zeros if final.extra_passes is None else final.extra_passes
        rows = final_tokens.cpu().numpy()  # one read-back per batch
        for row, (i, p, e) in enumerate(zip(idx, final_passes.tolist(), final_extra.tolist())):
            sequences[i], passes[i], extra[i], gen.decodes[i] = rows[row], p, e, [p]
        gen.seconds = round(time.perf_counter() - start, 3)
        if report:
            report.end()
        if keep:
            keep(idx)


def retry_rejected(model, templates: list[np.ndarray], strategy, gen: Generation, retry: Retry, seed: int,
                   settings: dict, items: list[int] | None = None, keep=None) -> None:
    """Decode again, under view ``k`` for the ``k``-th retry (seeded by :func:`decode_seed` and the template's index,
    ``items[i]`` when given, whichever others are retried with it), every template whose result ``retry.verify``
    rejects; a retried template keeps its last result, and its passes and wall time (the decodes') add up.
    ``keep(indices)`` after each round, of those it decoded again."""
    for k in range(1, retry.count):
        rejected = [i for i, (t, s) in enumerate(zip(templates, gen.sequences))
                    if len(gen.decodes[i]) < retry.count and not retry.verify(t, s)]
        todo = [i for i in rejected if len(gen.decodes[i]) == k]  # resumed, those decoded more wait for their round
        if not rejected:
            return
        if not todo:
            continue
        if retry.announce is not None:
            retry.announce(k + 1, len(todo))
        again = decode_all(model, [retry.to_view(templates[i], k) for i in todo], strategy, seed=decode_seed(seed, k),
                           items=[i if items is None else items[i] for i in todo], **settings)
        for j, i in enumerate(todo):
            gen.sequences[i] = retry.from_view(again.sequences[j], k)
            gen.passes[i] += again.passes[j]
            gen.extra_passes[i] += again.extra_passes[j]
            gen.decodes[i].append(again.passes[j])
        gen.seconds = round(gen.seconds + again.seconds, 3)
        if keep:
            keep(todo)


def warm_up(model, templates: list[np.ndarray], strategy, **kwargs) -> None:
    """Decode the shortest template once, untimed, so timed runs pay no one-off start-up costs."""
    decode_all(model, [min(templates, key=len)], strategy, **(kwargs | {"batch_size": 1, "retry": None}))


def evaluate(model, templates: list[np.ndarray], strategy, metric, **kwargs) -> tuple[dict, Generation]:
    """:func:`decode_all`, then ``metric.update`` with every result; ``(metric.compute(), generation)``."""
    gen = decode_all(model, templates, strategy, **kwargs)
    return score(templates, gen, metric, range(len(templates)), kwargs.get("retry") is not None), gen


def score(templates: list[np.ndarray], gen: Generation, metric, indices, retried: bool = False) -> dict:
    """``metric.compute()`` over the results of the inputs ``indices`` alone (and their mean decodes, ``retried``)."""
    for i in indices:
        metric.update(i, np.asarray(templates[i]), gen.sequences[i], gen.passes[i], gen.extra_passes[i])
    tried = {"mean_attempts": float(np.mean([len(gen.decodes[i]) for i in indices]))} if retried else {}
    return metric.compute() | tried


@dataclass
class PuzzleInput:
    puzzles: Path = option(None, "the states: one a line, optionally followed by its solution (grid domains also "
                           "read .csv with a puzzle column)", required=True)
    limit: int | None = option(None, "use the first N states", range=(1, 10_000_000))
    model: Path | None = option(None, "weights file (default: the domain's shipped model)",
                               default_for=lambda d: d.default_file("model"))


@dataclass
class RunName:
    name: str | None = option(None, "name of the run in the report (default: the input file's stem)")


@dataclass
class SetName:
    level: str | None = option(None, "only the states of this level (CSV files with a level column)")
    name: str | None = option(None, "name of the set in the report (default: file stem + level)")


class PuzzleFiles:
    """Benchmark inputs of a puzzle domain: a file's states and solutions; ``metric()`` gives a fresh metric."""

    temperature, batch_size, seeding, unit = 0.0, 256, "per item", "puzzle"
    description = "Decode every state of a file and score it with the domain's metric."

    @staticmethod
    def options(domain, sweep: bool = False) -> list:
        return [PuzzleInput, *([SetName] if sweep else [])]

    def __init__(self, domain, args):
        level = getattr(args, "level", None)
        self.templates, solutions, levels = domain.read_inputs(args.puzzles, args.limit, level)
        self.metric = partial(domain.part("metric"), solutions, levels, domain.mask_id)
        self.fields = {"puzzles": display_path(args.puzzles), "limit": args.limit}
        if hasattr(args, "level"):
            self.fields["level"] = level
        self.name = getattr(args, "name", None) or args.puzzles.stem + (f"_{level}" if level else "")
        self.source = f"--puzzles {display_path(args.puzzles)}"


def inputs_class(domain):
    return domain.part("bench_inputs") if domain.bench_inputs is not None else PuzzleFiles


def lacks_mi_source(strategy) -> bool:
    """True for an MI-reading strategy with neither an estimator path nor an ``mi_fn``."""
    return hasattr(strategy, "estimator") and strategy.estimator is None and getattr(strategy, "mi_fn", None) is None


def default_estimator(model, domain, path=None) -> str | None:
    """``path`` when given, else the estimator trained on the model's own weights file: the domain's own
    (``Domain.estimator_path``), else one under assets/ (:func:`~mi_core.mi.estimator.shipped_estimator_for`);
    None when there is none."""
    if path is not None:
        return str(path)
    if domain.estimator_default is None:
        return None
    try:
        return str(shipped_estimator_for(model, domain))
    except EstimatorInputError:
        return None


def check_estimator(model, path, model_name: str, domain) -> None:
    """The estimator file ``path`` against ``model`` of ``domain`` before any decoding: the domain it was trained for,
    its shapes, and the weights it was trained on (another model of its width fits every shape, and misleads);
    ValueError naming the mismatch."""
    trained = other_domain(path, domain)
    if trained is not None:
        raise ValueError(f"the estimator {path} is an estimator of {trained.cli_name}, not {domain.cli_name}: give "
                         f"--estimator trained on a model for {domain.cli_name}")
    check_model_match(model, load_estimator(path), model_name, f"the estimator {path}")
    problem = trained_on_mismatch(model, path)
    if problem:
        raise ValueError(f"the estimator {path} {problem}: give --estimator trained on this model (python -m mi_core "
                         "train-estimator makes one)")


def estimator_fields(path) -> dict:
    """What a result records about the MI estimator its strategy read (the default one can come from a
    domain's environment variable): its path and sha256; nothing for a strategy that reads none."""
    if not isinstance(path, (str, Path)):
        return {}
    if not Path(path).is_file():
        return {"estimator": str(path)}
    return {"estimator": display_path(path), "estimator_sha256": file_sha256(path)}


def with_estimator(strategy, model, domain, description: str):
    """Point a strategy that reads MI and has no source at :func:`default_estimator`'s. Without one, a domain whose
    model is exact (``Domain.exact_model``, the 4x4 oracle) reads the exact probe of each state, as the app does, its
    passes counted apart; any other raises ValueError (a benchmark does not turn into a probe's many passes
    unasked: ``mi_exact`` asks)."""
    if lacks_mi_source(strategy):
        strategy.estimator = default_estimator(model, domain)
        if strategy.estimator is None and domain.exact_model:
            strategy.mi_fn = probe_mi_fn(0.0)
            print(f"{strategy.name}: no MI estimator for {description}; the MI of each step is the exact probe's "
                  "(its passes are counted apart, as extra passes)", file=sys.stderr)
        elif strategy.estimator is None:
            absent = absent_own_estimator(domain)
            raise ValueError(f"sampler {strategy.name!r} needs an MI estimator for {description}: --set estimator=PATH"
                             + (f" ({absent})" if absent else ""))
    return strategy


def with_selector(strategy, domain):
    """Point a strategy that runs an order selector and has none (``learned``, ``learned_mi``) at the domain's: its
    environment variable's file, else the shipped one (whether it fits the model is checked as the decode starts);
    ValueError when the domain has none."""
    if getattr(strategy, "selector", "") is None and getattr(strategy, "net", None) is None:
        path = domain.default_file("selector")
        if path is None:
            raise ValueError(f"sampler {strategy.name!r} needs an order selector and the {domain.label} domain ships "
                             f"none: --set selector=PATH ({selector_source(domain)})")
        strategy.selector = str(Path(path).absolute())  # default_file names it from the working folder
    return strategy


def selector_fields(strategy) -> dict:
    """What a result records about the order selector its strategy ran: its path and sha256."""
    path = getattr(strategy, "selector", None)
    if not isinstance(path, (str, Path)) or not Path(path).is_file():
        return {}
    return {"selector": display_path(path), "selector_sha256": file_sha256(path)}


@dataclass
class RunOptions:
    bf16: bool = option(False, "bf16 autocast for the model passes (faster on CPUs with AMX)")
    batch_size: int = option(256, "sequences decoded together", range=(1, 65_536))
    temperature: float = option(0.0, "0 = argmax values; 1 samples from the model", range=(0, 100))
    seed: int = seed()
    iterations: int = option(0, "a recurrent model's iterations per pass (0: the count it was trained with)",
                             range=(0, 256))
    views: int = option(1, "average the model over this many symmetric views of each state (a domain with "
                           "symmetries, such as Sudoku); a pass then costs this many, and an MI estimator or order "
                           "selector reads the first view's hidden states", range=(1, 64))
    attempts: int = option(1, "decode a state again, under another symmetric view, while the result breaks the "
                              "domain's rules (read from the state, not its answer), this many decodes at most; its "
                              "passes count every decode", range=(1, 64))


@dataclass
class PerBatchRunOptions(RunOptions):
    """:class:`RunOptions` of inputs seeded ``"per batch"``, whose ``--batch-size`` help says what that does."""

    batch_size: int = redefault(RunOptions, "batch_size", 256, "sequences decoded together; sampling is seeded once "
                                "per batch, so the sequences depend on the batch size and on how many there are")


def run_options(inputs, domain) -> tuple:
    """:class:`RunOptions` at the inputs' defaults (:class:`PerBatchRunOptions` where they are seeded per batch);
    ``--views`` only where ``domain`` has symmetries, and ``--attempts`` where it also checks its rules."""
    skip = {} if domain.symmetries is not None else {"views": SKIP}
    if domain.symmetries is None or domain.verify is None:
        skip["attempts"] = SKIP
    options = PerBatchRunOptions if inputs.seeding == "per batch" else RunOptions
    return options, {"batch_size": inputs.batch_size, "temperature": inputs.temperature, **skip}


def run_settings(args, inputs, domain, model, **more) -> dict:
    """The keyword arguments of :func:`decode_all` that :class:`RunOptions` and the inputs set, ``retry`` that of
    ``--attempts`` (:func:`retry_for`); a command without ``--temperature`` decodes at the inputs' own."""
    return {"temperature": getattr(args, "temperature", inputs.temperature), "seed": args.seed,
            "batch_size": args.batch_size, "bf16": args.bf16,
            "seeding": inputs.seeding, "retry": retry_for(domain, model, getattr(args, "attempts", 1)), **more}


def model_fields(model, args) -> dict:
    """What a result row records of its model: ``model_sha256`` of the weights file it was loaded from (what an
    estimator's or selector's ``checked_on`` names), and ``iterations`` for a recurrent model or a run given
    ``--iterations``."""
    weights = getattr(model, "weights_path", None)
    fields = {"model_sha256": file_sha256(weights)} if weights is not None and Path(weights).is_file() else {}
    if getattr(args, "iterations", 0) or getattr(getattr(model, "cfg", None), "loops", 1) > 1:
        fields["iterations"] = model.iterations
    if getattr(model, "views", 1) > 1:
        fields["views"] = model.views
    if getattr(args, "attempts", 1) > 1:
        fields["attempts"] = args.attempts
    return fields


def load(args, domain, device, inputs=None):
    """``(model, the line naming it, the value recorded as the run's model)``, run for ``--iterations``; a
    ValueError naming the ``inputs``' option when one of them is longer than the model takes."""
    model, description = load_model_described(None if args.model is None else str(args.model), device, domain)
    if getattr(args, "iterations", 0):
        trained = model.iterations if is_recurrent(model) else 1
        try:
            run_for(model, args.iterations)
        except ValueError:
            raise ValueError(f"--iterations {args.iterations}: {description} is not a recurrent model") from None
        description += f", run for {args.iterations} iterations (trained with {trained})"
    if getattr(args, "views", 1) > 1:
        model = with_views(model, domain, args.views)
        description += f", averaged over {args.views} symmetric views"
    longest = max(map(len, inputs.templates), default=0) if inputs is not None else 0
    if longest > model.max_len:
        raise ValueError(f"{inputs.source}: {longest} positions, longer than the {model.max_len} this model takes")
    return model, description, description if model.weights_path is None else display_path(model.weights_path)
