"""What a domain is, and the registry of domains.

A :class:`Domain` says how its sequences read, what their values are called, which model, estimator and
selector it ships with, and the objects it plugs into the engine (its model loader, state source, metric,
order task, trainer task, benchmark inputs, the commands only it has). The engine takes a Domain and never
imports one: each domain package under ``mi_core/domains/`` builds its Domain from its own objects, and
:func:`register` adds it (the shipped ones are registered by :data:`BUILTIN`, loaded on the first lookup).

A new domain is one package that builds a Domain and one call of :func:`register`.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Protocol, runtime_checkable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


class DomainInputError(ValueError):
    """Text that is not a state of the domain; the message names the character and its position."""


@dataclass(frozen=True)
class Command:
    """A command a domain brings to ``python -m mi_core`` (e.g. a benchmark only it has), read by
    :mod:`mi_core.cli` as it reads an engine command's module: ``main(args) -> exit status``, the line of
    help the command list shows, and its options: ``options(domain)`` for ``NAME DOMAIN`` (by default for
    the domain that brings it only), or ``OPTIONS`` for a command that takes no domain."""

    name: str
    help: str
    main: Callable[[Any], int | None]
    options: Callable[[Any], list] | None = None
    OPTIONS: tuple | None = None
    serves: Callable[[Any], bool] | None = None


@dataclass(frozen=True)
class Domain:
    """One kind of sequence MI Lens can probe, decode and show.

    ``key``: the registry key (also the app's); ``names``: what the command line accepts (the first is
    shown in help); ``label``/``short``: the names a reader sees. ``alphabet``: one name per value
    (``value_names``), written one character a position when every name is one character long.
    ``mask_id`` is the token of a masked position, value ``v`` is token ``v + 1``; ``pad_id`` pads
    variable-length batches (None: every state has ``length`` positions). ``length``: the fixed number of
    positions, None when it varies by input.

    Assets: ``model_env``/``model_default`` (the environment variable naming the model and its default;
    both None for a built-in model), ``model_fallback`` (the file a keyword spec such as ``auto`` falls
    back to), ``model_keywords`` (specs other than a file its loader takes, e.g. ``esmc``),
    ``foreign_weights`` (its loader also reads weights files of other formats), ``stamp_envs`` (more variables naming files the model reads), and the same pairs for the
    neural MI estimator and the order selector (None: the domain has none).

    Parts (plain objects, looked up by :meth:`part`): ``model_loader``
    ``(spec, device) -> (model, description)``, ``states`` (the state source factory of estimator data, see
    :mod:`mi_core.train.estimator_data`), ``metric`` (a decode metric class with ``update``/``compute``) and
    ``order_task`` (a module giving ``options`` (a dataclass of options) and ``run(args, cfg, model_path, out, log_path,
    device)``: the start states and validation of the order trainer, :mod:`mi_core.order.train`), ``trainer``
    (the MDM trainer's task, :mod:`mi_core.train.mdm`) and ``bench_inputs`` (what ``bench`` and ``sweep``
    decode; None: states from a file, :class:`mi_core.bench.decode.PuzzleFiles`) and ``order_bench`` (the
    ``bench-order`` benchmark: ``options``, ``run_bench(args, domain)``) and ``probe_command``
    (how ``probe`` reads this domain's input: ``options(domain)``, ``run(args, domain)``; None:
    one state as text).

    App behaviour: ``exact_model`` (its conditionals are exact), ``fallback_eps`` (pruning of the exact probe
    used when no estimator is available), ``clue_range`` (givens of a generated puzzle), ``require_unique``
    (refuse inputs with several solutions), ``probe_fallback`` (MI-reading decoders fall back to the pruned
    exact probe instead of refusing to run). ``commands``: the commands only this domain has
    (:class:`Command`).
    """

    key: str
    label: str
    short: str
    alphabet: tuple[str, ...]
    names: tuple[str, ...] = ()
    mask_id: int = 0
    pad_id: int | None = None
    mask_char: str = "_"
    length: int | None = None
    model_env: str | None = None
    model_default: str | None = None
    model_fallback: str | None = None
    model_keywords: tuple[str, ...] = ()
    foreign_weights: bool = False
    stamp_envs: tuple[str, ...] = ()
    estimator_env: str | None = None
    estimator_default: str | None = None
    selector_env: str | None = None
    selector_default: str | None = None
    model_loader: Callable | None = None
    states: type[StateSource] | None = None
    metric: type[Metric] | None = None
    order_task: Any = None
    trainer: Any = None
    bench_inputs: type[BenchInputs] | None = None
    order_bench: Any = None
    probe_command: Any = None
    exact_model: bool = False
    fallback_eps: float = 1e-3
    clue_range: tuple[int, int] = (24, 60)
    require_unique: bool = False
    probe_fallback: bool = False
    commands: tuple[Command, ...] = ()
    geometry: ClassVar = None  # a Sudoku geometry on grid domains

    def __post_init__(self):
        for what in ("model", "estimator", "selector"):
            env, default = getattr(self, f"{what}_env"), getattr(self, f"{what}_default")
            if (env is None) != (default is None):
                raise ValueError(f"domain {self.key}: give both {what}_env and {what}_default, or neither")
        if not 0 <= self.fallback_eps < 1:
            raise ValueError(f"domain {self.key}: fallback_eps must be in [0, 1), got {self.fallback_eps}")
        if len(set(self.alphabet)) != len(self.alphabet) or not self.alphabet:
            raise ValueError(f"domain {self.key}: the alphabet needs distinct value names")

    # -- tokens and text ---------------------------------------------------------------------------------
    @property
    def cli_name(self) -> str:
        return self.names[0] if self.names else self.key

    @property
    def layout(self) -> str:
        """``"grid"`` (a Sudoku geometry) or ``"sequence"``; pages pick their figures by it."""
        return "sequence"

    @property
    def value_names(self) -> tuple[str, ...]:
        return self.alphabet

    @property
    def n_values(self) -> int:
        return len(self.alphabet)

    @property
    def value_tokens(self) -> np.ndarray:
        """``(V,)`` the token id of each value."""
        return np.arange(1, self.n_values + 1)

    @property
    def cells(self) -> int:
        if self.length is None:
            raise ValueError(f"{self.label} sequences have no fixed length")
        return self.length

    def parse_state(self, text: str) -> list[int]:
        """Token ids of a state written one character a position (``mask_char`` or ``.`` for masked)."""
        of = {name.upper(): i + 1 for i, name in enumerate(self.alphabet)}
        text = "".join(text.split())
        if self.length is not None and len(text) != self.length:
            raise DomainInputError(f"a {self.label} state has {self.length} positions, got {len(text)}")
        tokens = []
        for i, ch in enumerate(text, start=1):
            if ch in (self.mask_char, "."):
                tokens.append(self.mask_id)
            elif ch.upper() in of:
                tokens.append(of[ch.upper()])
            else:
                raise DomainInputError(f"{ch!r} at position {i} is not a {self.label} value "
                                       f"({''.join(self.alphabet)} or {self.mask_char} for masked)")
        if not tokens:
            raise DomainInputError(f"an empty {self.label} state")
        return tokens

    def parse_input(self, text: str) -> list[int]:
        """:meth:`parse_state`, then the domain's own checks of a state a user gives (e.g. a Sudoku's
        conflicting givens); raises a ValueError naming what is wrong."""
        return self.parse_state(text)

    def state_text(self, tokens) -> str:
        """The text of token ids (inverse of :meth:`parse_state`)."""
        return "".join(self.mask_char if int(t) == self.mask_id else self.alphabet[int(t) - 1] for t in tokens)

    def cell_label(self, cell: int) -> str:
        return str(cell + 1)

    def labels(self, length: int | None = None) -> list[str]:
        return [self.cell_label(c) for c in range(self.cells if length is None else length)]

    def solution(self, tokens: list[int]) -> list[int] | None:
        """The one solution of a puzzle state, when the domain can find it (None: it cannot, or there is
        not exactly one)."""
        return None

    def rules(self, length: int) -> np.ndarray:
        """``(N, N)`` bool: pairs the domain's own rules tie together (a graph's edges are marked by it);
        none for a domain without rules."""
        return np.zeros((length, length), bool)

    def read_inputs(self, path, limit: int | None = None, level: str | None = None) -> tuple[list, list, list]:
        """``(templates, solutions, levels)`` of the states of a benchmark file: text, one state a line (``#``
        comments and blank lines skipped), each optionally followed by whitespace or a comma and its
        solution; a state given without one takes the domain's own (:meth:`solution`), and a metric with
        ``needs_solution = False`` scores states without one. ``level`` is for domains whose files carry
        levels.

        Raises:
            ValueError: a line that does not parse, naming it; a state without a solution; no state at all.
        """
        domain = self
        needs_solution = getattr(domain.part("metric"), "needs_solution", True)
        templates, solutions = [], []
        with open(path, encoding="utf-8") as fh:
            for lineno, raw in enumerate(fh, start=1):
                line = raw.strip()
                if not line or line.startswith("#"):
                    continue
                parts = line.replace(",", " ").split()
                try:
                    state = domain.parse_state(parts[0])
                    solution = domain.parse_state(parts[1]) if len(parts) > 1 else domain.solution(state)
                except ValueError as err:
                    raise ValueError(f"{path}, line {lineno}: {err}") from None
                if solution is None and needs_solution:
                    raise ValueError(f"{path}, line {lineno}: no solution given, and the {domain.label} domain finds "
                                     "no unique one: write the solution after the state")
                templates.append(np.asarray(state))
                solutions.append(solution)
                if limit is not None and len(templates) == limit:
                    break
        if not templates:
            raise ValueError(f"{path} holds no {domain.label} state")
        return templates, solutions, [None] * len(templates)

    # -- assets and parts ----------------------------------------------------------------------------------
    def model_spec(self) -> str | None:
        """What the model loader is given: the environment's value or the default (None: built in)."""
        if self.model_env is None:
            return None
        return os.environ.get(self.model_env) or self.model_default

    def model_path(self) -> Path | None:
        """The weights this domain loads (None: a built-in model); a keyword spec names the fallback."""
        spec = self.model_spec()
        if spec is None:
            return None
        if self.model_fallback is not None and is_keyword(spec):
            return resolve_path(self.model_fallback)
        return resolve_path(spec)

    def default_file(self, what: str = "model") -> str | None:
        """The file a command uses when given none: ``what`` is ``model``, ``estimator`` or ``selector``; the
        environment variable's value when set (not a keyword such as ``auto``), else the shipped file (for a
        model named by keyword, its fallback file). None: the domain has none (a built-in model)."""
        env, default = getattr(self, f"{what}_env"), getattr(self, f"{what}_default")
        value = os.environ.get(env) if env else None
        if value and not is_keyword(value):
            return value
        if what == "model" and self.model_fallback is not None:
            return self.model_fallback
        return default

    def stamp_paths(self) -> list[Path]:
        """The files whose modification times key the model's cached results."""
        extra = [resolve_path(os.environ[e]) for e in self.stamp_envs if os.environ.get(e)]
        path = self.model_path()
        return ([] if path is None else [path]) + extra

    def estimator_path(self) -> Path | None:
        if self.estimator_env is None:
            return None
        return resolve_path(os.environ.get(self.estimator_env) or self.estimator_default)

    def selector_path(self) -> Path | None:
        if self.selector_env is None:
            return None
        return resolve_path(os.environ.get(self.selector_env) or self.selector_default)

    def part(self, name: str):
        """The part ``name`` (``model_loader``, ``states``, ``metric``, ``order_task``, ``trainer`` or
        ``bench_inputs``).

        Raises:
            ValueError: the domain has no such part.
        """
        part = getattr(self, name, None)
        if part is None:
            raise ValueError(f"the {self.label} domain has no {name.replace('_', ' ')}")
        return part


def resolve_path(path: str | Path) -> Path:
    p = Path(path)
    return p if p.is_absolute() else ROOT / p


def is_keyword(spec: str) -> bool:
    """A model spec that names a choice (``auto``, ``esmc``) rather than a file."""
    return "/" not in spec and "." not in spec


# -- the interfaces of a domain's parts --------------------------------------------------------------------
@runtime_checkable
class StateSource(Protocol):
    """``Domain.states``: where estimator data and the estimator's evaluation get their states
    (:mod:`mi_core.train.estimator_data`, :mod:`mi_core.bench.estimator`). The class holds the options and
    the held-out form; an instance, built on a config, draws states."""

    config_cls: type  # a :class:`ShardConfig` (seed, states, shard_size, eps, max_batch, ``shards``) and more
    sources: tuple[str, ...]  # the names of the kinds of state ``draw`` reports
    width: int | None  # pad every state to this many positions (None: fixed length, no padding)
    eval_defaults: dict  # eval-estimator's defaults: states, threshold, max_batch

    def __init__(self, cfg) -> None: ...

    data_options: type  # make-estimator-data's options: a dataclass of :func:`mi_core.options.option` fields

    @staticmethod
    def config_from_args(args): ...

    def options(self) -> str:
        """The command-line options that rebuild this config (recorded in the data's manifest)."""

    def check(self, model) -> None:
        """Raise ValueError when ``model`` cannot serve this source (e.g. a length it cannot take)."""

    def draw(self, model, rng, count: int, device) -> tuple[list, list[int]]:
        """``(states, source index of each)``: ``count`` token arrays ``(N,)`` with masked positions."""

    eval_options: type  # eval-estimator's options of the held-out states (a dataclass)

    @staticmethod
    def held_out(args) -> HeldOutStates:
        """The held-out states eval-estimator reads (read and checked before any model loads)."""


@dataclass(frozen=True)
class ShardConfig:
    """The fields every state source's config shares (``StateSource.config_cls`` extends it): ``states`` in
    shards of ``shard_size``, drawn with ``seed``; ``eps``/``max_batch``: the exact probe's (``eps = 0`` is
    exact). A domain's config redeclares the defaults it wants, adds its fields and, when it checks them,
    calls ``super().__post_init__()`` first."""

    seed: int = 0
    states: int = 600
    shard_size: int = 8
    eps: float = 0.0
    max_batch: int = 512

    def __post_init__(self):
        if min(self.states, self.shard_size, self.max_batch) < 1:
            raise ValueError("states, shard_size and max_batch must be positive")
        if self.eps < 0:
            raise ValueError(f"eps must be >= 0, got {self.eps}")

    @property
    def shards(self) -> int:
        return -(-self.states // self.shard_size)


@dataclass(frozen=True)
class MixedShardConfig(ShardConfig):
    """A :class:`ShardConfig` plus ``mix``: the weights of the source's three kinds of state (``sources``)."""

    sources: ClassVar[tuple[str, ...]] = ()
    mix: tuple[float, float, float] = (0.4, 0.3, 0.3)

    def __post_init__(self):
        super().__post_init__()
        weights = np.asarray(self.mix, dtype=float)
        if weights.shape != (3,) or (weights < 0).any() or weights.sum() <= 0:
            raise ValueError(f"mix must be three weights >= 0, not all 0 ({', '.join(self.sources)}), got {self.mix}")

    @property
    def mix_text(self) -> str:
        """``--mix`` as given on a command line: ``"0.4,0.3,0.3"``."""
        return ",".join(f"{w:g}" for w in self.mix)


# helpers of state sources
def parse_mix(text: str, sources: tuple[str, ...]) -> tuple[float, ...]:
    """``"0.4,0.2,0.4"`` -> the three weights of a state source's three ``sources`` (``--mix``); ValueError
    naming the sources on anything else."""
    try:
        values = tuple(float(p) for p in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 3:
        raise ValueError(f"--mix expects three numbers '{','.join(sources)}', got {text!r}")
    return values


def ensure_masked(mask: np.ndarray, minimum: int, rng: np.random.Generator) -> np.ndarray:
    """``(N,)`` bool mask with extra random cells masked until at least ``minimum`` are."""
    mask = mask.copy()
    short = minimum - int(mask.sum())
    if short > 0:
        mask[rng.choice(np.flatnonzero(~mask), size=short, replace=False)] = True
    return mask


@runtime_checkable
class HeldOutStates(Protocol):
    """What :meth:`StateSource.held_out` gives: states no training data came from."""

    sources: tuple[str, ...]

    def draw(self, model, rng, count: int, device) -> tuple[list, list[int]]: ...

    def info(self) -> dict:
        """What the evaluation records about where its states came from."""


@runtime_checkable
class Metric(Protocol):
    """``Domain.metric``: built as ``metric(solutions, levels, mask_id)``, then ``update`` with each decoded
    sequence and ``compute`` a JSON-ready dict (:mod:`mi_core.bench.metrics`)."""

    def update(self, index: int, start, final, passes: int, extra: int = 0) -> None: ...

    def compute(self) -> dict: ...


@runtime_checkable
class BenchInputs(Protocol):
    """``Domain.bench_inputs``: what ``bench`` and ``sweep`` decode (default
    :class:`mi_core.bench.decode.PuzzleFiles`). Built as ``inputs(domain, args)``; gives ``templates``
    (token arrays), ``metric()`` (a fresh :class:`Metric`), ``fields`` (recorded in each row) and ``name``.
    May set ``sweep_grid`` (the default sweep) and ``sweep_section`` (its Markdown writer)."""

    temperature: float
    batch_size: int
    seeding: str  # "per item" or "per batch" (:mod:`mi_core.bench.decode`)
    unit: str
    description: str
    templates: list
    fields: dict
    name: str

    @staticmethod
    def options(domain, sweep: bool = False) -> list:
        """The option dataclasses of ``bench`` (and, with ``sweep``, of ``sweep``) for these inputs."""

    def metric(self) -> Metric: ...


# -- the registry ----------------------------------------------------------------------------------------
class _Registry(dict):
    """``key -> Domain``; the built-in domains are registered on the first read (:func:`load_builtin`)."""

    def _ready(self):
        load_builtin()
        return self

    def __getitem__(self, key):
        return dict.__getitem__(self._ready(), key)

    def __iter__(self):
        return dict.__iter__(self._ready())

    def __len__(self):
        return dict.__len__(self._ready())

    def __contains__(self, key):
        return dict.__contains__(self._ready(), key)

    def get(self, key, default=None):
        return dict.get(self._ready(), key, default)

    def keys(self):
        return dict.keys(self._ready())

    def values(self):
        return dict.values(self._ready())

    def items(self):
        return dict.items(self._ready())


DOMAINS: dict[str, Domain] = _Registry()
_builtin = {"loaded": False, "loading": False}
_builtin_lock = threading.RLock()  # a page's thread and the app's warm-up thread may look up at once


BUILTIN = "mi_core.domains.builtin"  # the module that registers the domains shipped with MI Lens


def load_builtin() -> None:
    """Register the domains that ship with MI Lens, once, on the first lookup: a plugin hook (like a
    package entry point) that imports :data:`BUILTIN` by name, so the registry, below the engine, never
    imports a domain package, and a fresh worker process finds the same domains as its parent."""
    if _builtin["loaded"]:
        return
    with _builtin_lock:  # another thread waits here until every shipped domain is registered
        if _builtin["loaded"] or _builtin["loading"]:  # loading: a register() call made by that import
            return
        _builtin["loading"] = True
        try:
            importlib.import_module(BUILTIN)
        finally:
            _builtin["loading"] = False
        _builtin["loaded"] = True




def register(domain: Domain, *, replace: bool = False) -> Domain:
    """Add ``domain`` under its key (and its command-line names).

    Raises:
        ValueError: the key or one of its names is taken (unless ``replace``).
    """
    load_builtin()  # the built-in domains come first, and a new one cannot take their names
    taken = {n for d in dict.values(DOMAINS) if d.key != domain.key or not replace for n in (d.key, *d.names)}
    clash = sorted({domain.key, *domain.names} & taken)
    if clash:
        raise ValueError(f"domain name {clash[0]!r} is already registered")
    dict.__setitem__(DOMAINS, domain.key, domain)
    return domain


def unregister(key: str) -> None:
    dict.pop(DOMAINS, key, None)


def get_domain(name: str) -> Domain:
    """The domain with key or command-line name ``name``.

    Raises:
        ValueError: no such domain, naming the ones there are.
    """
    for domain in DOMAINS.values():
        if name == domain.key or name in domain.names:
            return domain
    raise ValueError(f"unknown domain {name!r}; choose one of {', '.join(cli_names())}")


def cli_names() -> list[str]:
    """The name each registered domain goes by on the command line."""
    return [d.cli_name for d in DOMAINS.values()]


def domain_commands() -> dict[str, Command]:
    """The commands the registered domains bring, by name (a command serves its own domain unless it says
    otherwise)."""
    return {c.name: c if c.serves or c.OPTIONS is not None else
            dataclasses.replace(c, serves=lambda x, key=d.key: x.key == key)
            for d in DOMAINS.values() for c in d.commands}
