"""What a domain is, and the registry of domains.

The engine takes a :class:`Domain` and never imports one: each package under ``mi_core/domains/`` builds its
Domain and calls :func:`register` (the shipped ones are registered by :data:`BUILTIN` on the first lookup).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import inspect
import math
import os
import sys
import threading
import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Protocol

import numpy as np

from mi_core.io import ROOT, not_text
from mi_core.options import Noun, check_ranges, counted, from_options, group_fields, option, option_text, under_one
from mi_core.options import seed as seed_option


def describe_char(ch: str) -> str:
    """``'z'``, or for a non-ASCII character its code point and name: ``'٣' (U+0663 ARABIC-INDIC DIGIT THREE)``."""
    if ch.isascii() and ch.isprintable():
        return repr(ch)
    return f"{ch!r} (U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed character')})"


@dataclass(frozen=True)
class Command:
    """A command a domain brings, read by :mod:`mi_core.cli` like an engine command's module (``options(domain)``
    serves the domain that brings it unless ``serves`` says otherwise, ``UNSERVED`` saying why a domain it refuses
    cannot run it; ``OPTIONS``: the command takes no domain)."""

    name: str
    help: str
    main: Callable[[Any], int | None]
    options: Callable[[Any], list] | None = None
    OPTIONS: tuple | None = None
    serves: Callable[[Any], bool] | None = None
    UNSERVED: str | None = None  # "has no ... (a Domain's ...)": the line a registered domain it refuses gets


@dataclass(frozen=True)
class Domain:
    """One kind of sequence MI Lens can probe, decode and show (its fields and parts: docs/architecture.md).

    Value ``v`` of ``alphabet`` is token ``v + 1``; ``length`` None: the length varies. A ``*_env``/``*_default``
    pair names a shipped file and the variable that overrides it (both None: none, or a built-in model; a
    ``selector_env`` alone: no selector ships, the variable names one ``train-order`` made);
    ``model_fallback`` is the file a keyword spec (``auto``) falls back to. ``strategy_defaults``: ``(strategy,
    parameter, value)`` the app's widgets start at, tuned on the domain's model.
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
    model_keywords: tuple[str, ...] = ()  # non-file specs its loader takes
    foreign_weights: bool = False  # its loader reads other weight formats
    stamp_envs: tuple[str, ...] = ()  # variables naming more files the model reads
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
    exact_model: bool = False  # the model's conditionals are exact
    fallback_eps: float = 1e-3  # exact-probe pruning where there is no estimator
    clue_range: tuple[int, int] = (24, 60)  # givens of a generated puzzle
    require_unique: bool = False  # refuse inputs with several solutions
    probe_fallback: bool = False  # MI decoders fall back to the pruned probe instead of refusing
    strategy_defaults: tuple[tuple[str, str, object], ...] = ()
    symmetries: Callable | None = None  # (count, seed) -> views (positions (K, N), values (K, V)), the first the identity
    verify: Callable | None = None  # (start, final) token arrays -> True when final keeps start's givens and the rules
    nouns: tuple[str, str] = ("position", "symbol")  # what one position and one value are called on screen
    plurals: tuple[str | None, str | None] = (None, None)  # the nouns' plurals where an s will not do ("vertices")
    examples: tuple[tuple[str, str], ...] = ()  # (name, state text): states the app offers to start from
    summary: str = ""  # what the domain is, in a paragraph (the app's About page shows a plugin's)
    commands: tuple[Command, ...] = ()
    geometry: ClassVar = None  # a Sudoku geometry on grid domains
    layout: ClassVar[str] = "sequence"  # or "grid" (a Sudoku geometry); pages pick their figures by it

    def __post_init__(self):
        for what in ("model", "estimator", "selector"):
            env, default = getattr(self, f"{what}_env"), getattr(self, f"{what}_default")
            if (env is None) != (default is None) and not (what == "selector" and default is None):
                raise ValueError(f"domain {self.key}: give both {what}_env and {what}_default, or neither")
        if not 0 <= self.fallback_eps < 1:
            raise ValueError(f"domain {self.key}: fallback_eps must be in [0, 1), got {self.fallback_eps}")
        if len(set(self.alphabet)) != len(self.alphabet) or not self.alphabet:
            raise ValueError(f"domain {self.key}: the alphabet needs distinct value names")
        self._check_ids()
        self._check_tuples()

    def _check_tuples(self) -> None:
        """ValueError when a tuple field is a bare string (``names=("mine")`` is the str "mine": its letters would
        be registered as names) or its items are not the pairs or triples the field holds."""
        for name in ("names", "model_keywords", "stamp_envs"):
            if isinstance(value := getattr(self, name), str):
                raise ValueError(f"domain {self.key}: {name} must be a tuple of strings, got the string {value!r}: "
                                 f"write ({value!r},)")
        shapes = {"examples": (2, "(name, state text) pairs"), "strategy_defaults": (3, "(strategy, parameter, "
                  "value) triples")}
        for name, (size, what) in shapes.items():
            if any(not isinstance(item, (tuple, list)) or len(item) != size for item in getattr(self, name)):
                raise ValueError(f"domain {self.key}: {name} must be a tuple of {what}, got {getattr(self, name)!r}")
        self._check_nouns()

    def _check_nouns(self) -> None:
        """ValueError when ``nouns`` is not two words or ``plurals`` not two words or Nones; then each noun becomes a
        :class:`~mi_core.options.Noun` that carries its plural, so a page or message given only the noun says it
        right (``options.plural``)."""
        if isinstance(self.nouns, str) or len(self.nouns) != 2 or not all(
                isinstance(noun, str) and noun.strip() for noun in self.nouns):
            raise ValueError(f"domain {self.key}: nouns must be (position noun, value noun), got {self.nouns!r}")
        if isinstance(self.plurals, str) or len(self.plurals) != 2 or not all(
                many is None or (isinstance(many, str) and many.strip()) for many in self.plurals):
            raise ValueError(f"domain {self.key}: plurals must be (plural of {self.nouns[0]!r}, plural of "
                             f"{self.nouns[1]!r}), each a word or None (the noun + s), got {self.plurals!r}, "
                             "e.g. (\"vertices\", None)")
        pairs = [(str(noun), None if isinstance(many, Plural) and many.of != str(noun) else many)
                 for noun, many in zip(self.nouns, self.plurals)]  # a plural replace() carried from an old noun: dropped
        object.__setattr__(self, "nouns", tuple(Noun(noun, many) for noun, many in pairs))
        object.__setattr__(self, "plurals", tuple(many and Plural(many, noun) for noun, many in pairs))

    def _check_ids(self) -> None:
        """ValueError when the mask or pad id is not an int apart from the value tokens ``1..V`` (and each other),
        the length is not an int, or a value is written as the mask character."""
        ids = {"mask_id": self.mask_id, "pad_id": self.pad_id, "length": self.length}
        for name, value in ids.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"domain {self.key}: {name} must be an int, got {value!r}")
        for name in ("mask_id", "pad_id"):
            if ids[name] is not None and 1 <= ids[name] <= self.n_values:
                raise ValueError(f"domain {self.key}: {name} {ids[name]} is the token of the value "
                                 f"{self.alphabet[ids[name] - 1]!r} (value v is token v + 1, 1..{self.n_values})")
        if self.mask_id == self.pad_id:
            raise ValueError(f"domain {self.key}: mask_id and pad_id are both {self.mask_id}")
        if clash := [ch for ch in (self.mask_char, ".") if ch in self.alphabet]:
            raise ValueError(f"domain {self.key}: the value {clash[0]!r} would read as masked (a state writes "
                             f"{self.mask_char!r} or '.' for masked): name it otherwise, or set mask_char")

    @property
    def cli_name(self) -> str:
        return self.names[0] if self.names else self.key

    @property
    def n_values(self) -> int:
        return len(self.alphabet)

    @property
    def model_keys(self) -> tuple[str, ...]:
        """The non-file values its model variable takes: ``model_keywords`` and a keyword default (``auto``)."""
        default = self.model_default
        return (*self.model_keywords, *((default,) if default and is_keyword(default) else ()))

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
            raise ValueError(f"a {self.label} state has {counted(self.length, self.nouns[0])}, got {len(text)}")
        tokens = []
        for i, ch in enumerate(text, start=1):
            if ch in (self.mask_char, "."):
                tokens.append(self.mask_id)
            elif ch.upper() in of:
                tokens.append(of[ch.upper()])
            else:
                raise ValueError(f"{describe_char(ch)} at position {i} is not a {self.label} value "
                                 f"(one of {' '.join(self.alphabet)}, or {self.mask_char} for masked)")
        if not tokens:
            raise ValueError(f"an empty {self.label} state")
        return tokens

    def parse_input(self, text: str) -> list[int]:
        """:meth:`parse_state` plus the domain's own checks of user input (ValueError naming the problem)."""
        return self.parse_state(text)

    def state_text(self, tokens) -> str:
        """The text of one state's token ids ``(N,)`` (inverse of :meth:`parse_state`)."""
        return "".join(self.mask_char if t == self.mask_id else self.alphabet[t - 1] for t in self.state_ids(tokens))

    def state_ids(self, tokens, pad: bool = False) -> list[int]:
        """One state's token ids ``(N,)`` (a list, an array or a tensor) as ints; ValueError on a batch, a bool
        mask, floats, or an id that is not the mask id, a value token (1..V) or, with ``pad``, the pad id."""
        ids = np.asarray(tokens.tolist() if hasattr(tokens, "tolist") else list(tokens))
        if ids.ndim != 1:
            raise ValueError(f"one {self.label} state of shape (N,) is needed, got shape {ids.shape}: for a batch, "
                             "[domain.state_text(t) for t in tokens]")
        kind = f"{getattr(tokens, 'dtype', ids.dtype)} {type(tokens).__name__}"  # torch.bool Tensor, float64 ndarray
        if ids.dtype == bool:  # t > 0 read as ids was "1" at every True
            raise ValueError(f"a {kind} is a mask, not token ids: pass one {self.label} state's token ids (integers)")
        if ids.dtype.kind in "fc" and ids.size:  # a float state is a mistake even where its values are whole
            raise ValueError(f"token ids are integers, got a {kind}: pass one {self.label} state's token ids as "
                             "integers (tokens.long())")
        known = {self.mask_id, *range(1, self.n_values + 1), *([self.pad_id] if pad else [])}
        if bad := [t for t in ids.tolist() if t not in known]:
            raise ValueError(f"{bad[0]!r} at position {ids.tolist().index(bad[0])} is not a token id of the "
                             f"{self.label} domain (the mask id {self.mask_id} or values 1..{self.n_values}): another "
                             "domain's?")
        return [int(t) for t in ids.tolist()]

    def cell_label(self, cell: int) -> str:
        return str(cell + 1)

    def labels(self, length: int | None = None) -> list[str]:
        return [self.cell_label(c) for c in range(self.cells if length is None else length)]

    def solution(self, tokens: list[int]) -> list[int] | None:
        """The unique solution of a puzzle state (None: the domain cannot find one, or it is not unique)."""
        return None

    def rules(self, length: int) -> np.ndarray:
        """``(N, N)`` bool: pairs the domain's rules require to hold different values (none by default); the app
        marks a filled position whose value a rule partner also holds."""
        return np.zeros((length, length), bool)

    def read_inputs(self, path, limit: int | None = None, level: str | None = None) -> tuple[list, list, list]:
        """``(templates, solutions, levels)`` of a benchmark file: one state a line (``#`` comments skipped),
        optionally followed by whitespace or a comma and its solution (else :meth:`solution`; a metric with
        ``needs_solution = False`` takes none). ValueError names a bad line, or a ``level``: these files have none."""
        if level is not None:
            raise ValueError(f"--level {level}: a {self.label} file has no levels (one state a line)")
        needs_solution = getattr(self.part("metric"), "needs_solution", True)
        templates, solutions = [], []
        try:
            with open(path, encoding="utf-8-sig") as fh:  # -sig: without the BOM Windows Notepad may write
                for lineno, raw in enumerate(fh, start=1):
                    line = raw.strip()
                    if not line or line.startswith("#"):
                        continue
                    state, solution = self._input_line(line, f"{path}, line {lineno}", needs_solution)
                    templates.append(np.asarray(state))
                    solutions.append(solution)
                    if limit is not None and len(templates) == limit:
                        break
        except UnicodeDecodeError:
            raise ValueError(not_text(path)) from None
        if not templates:
            raise ValueError(f"{path} holds no {self.label} state")
        return templates, solutions, [None] * len(templates)

    def _input_line(self, line: str, where: str, needs_solution: bool) -> tuple[list[int], list[int] | None]:
        """``(state, solution)`` of one line of :meth:`read_inputs` (``where``: its file and line, for errors)."""
        parts = line.replace(",", " ").split()
        try:
            state = self.parse_input(parts[0])  # the domain's own checks, as a typed state gets
            solution = self.parse_state(parts[1]) if len(parts) > 1 else self.solution(state)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        if solution is None and needs_solution:
            raise ValueError(f"{where}: no solution given, and the {self.label} domain finds no unique one: write the "
                             "solution after the state")
        return state, solution

    def model_spec(self) -> str | None:
        """What the model loader is given: the environment's value or the default (None: built in)."""
        if self.model_env is None:
            return None
        return env_file(self.model_env, self.model_keys) or self.model_default

    def model_path(self) -> Path | None:
        """The weights this domain loads (None: a built-in model); a keyword spec names the fallback."""
        spec = self.model_spec()
        if spec is None:
            return None
        return resolve_path(self.model_fallback if self.model_fallback is not None and is_keyword(spec) else spec)

    def default_file(self, what: str = "model") -> str | None:
        """The ``model``, ``estimator`` or ``selector`` file a command uses when given none, named from the working
        folder: the environment variable's value unless a keyword, else the shipped file (a model's fallback first)."""
        env, default = getattr(self, f"{what}_env"), getattr(self, f"{what}_default")
        value = env_file(env, self.model_keys if what == "model" else ())
        if value and not is_keyword(value):
            return working_path(value)
        if what == "model" and self.model_fallback is not None:
            return shipped_file(self.model_fallback)
        return None if default is None else shipped_file(default)

    def stamp_paths(self) -> list[Path]:
        """The files whose modification times key the model's cached results."""
        extra = [Path(value) for e in self.stamp_envs if (value := env_file(e))]
        path = self.model_path()
        return ([] if path is None else [path]) + extra

    def estimator_path(self) -> Path | None:
        return self._shipped("estimator")

    def selector_path(self) -> Path | None:
        return self._shipped("selector")

    def _shipped(self, what: str) -> Path | None:
        """The file of ``what``: its variable's, else the shipped one; None without either (a domain may name a
        variable for the selector it ships none of: ``train-order`` makes one)."""
        env = getattr(self, f"{what}_env")
        value = env and (env_file(env) or getattr(self, f"{what}_default"))
        return resolve_path(value) if value else None

    def part(self, name: str):
        """The part ``name`` (e.g. ``model_loader``, ``metric``); ValueError when the domain has none."""
        part = getattr(self, name, None)
        if part is None:
            raise ValueError(f"the {self.label} domain has no {name.replace('_', ' ')}")
        return part


class Plural(str):
    """A plural in ``Domain.plurals`` that knows its noun, so ``dataclasses.replace(domain, nouns=...)`` does not give
    a new noun the old one's plural ("node" said as "vertices")."""

    of: str

    def __new__(cls, many: str, of: str) -> Plural:
        word = super().__new__(cls, many)
        word.of = of
        return word

    def __reduce__(self):
        return Plural, (str(self), self.of)


def resolve_path(path: str | Path) -> Path:
    """A domain's shipped file (``assets/...``): a relative path lies in the MI Lens checkout. A variable's path is
    read with :func:`env_file` instead."""
    p = Path(path)
    return p if p.is_absolute() else ROOT / p


def env_file(env: str | None, keywords: Collection[str] = ()) -> str | None:
    """The value of the environment variable ``env`` (None: unset or blank): one of ``keywords`` (a domain's
    :attr:`Domain.model_keys`, ``auto``) as it is, else a path as its user means it, from the working folder the
    command or app started in, made absolute (so no reader takes it for a file in the checkout, and a missing file's
    message names the path looked up; ``mymodel`` is a file, not a keyword the domain does not take)."""
    value = (os.environ.get(env) or "").strip() if env else ""
    if not value or value in keywords:
        return value or None
    try:
        path = Path(value).expanduser()
        return str(path if path.is_absolute() else Path.cwd() / path)
    except (OSError, RuntimeError):  # the working folder is gone, or ~ has no home: the path as written
        return value


def shipped_file(default: str) -> str:
    """A domain's default file as an option's default: a relative one lies in the MI Lens checkout, so it is
    named from the working folder (``assets/...`` in the checkout, else its absolute path), not read there."""
    if is_keyword(default) or Path(default).is_absolute():
        return default
    return working_path(ROOT / default)


def working_path(path: str | Path) -> str:
    """An absolute ``path`` as a command names it: relative to the working folder when it lies inside, else as is."""
    try:
        return Path(path).relative_to(Path.cwd()).as_posix()
    except (ValueError, OSError):  # a file outside the working folder (or the folder is gone)
        return str(path)


def is_keyword(spec: str) -> bool:
    """A model spec that names a choice (``auto``, ``esmc``) rather than a file."""
    return "/" not in spec and "." not in spec


class StateSource(Protocol):
    """``Domain.states``: the states of estimator data and evaluation; an instance, built on a config, draws
    them (:class:`ConfigStates` is the usual base)."""

    config_cls: type  # a :class:`ShardConfig`
    sources: tuple[str, ...]  # the names of the kinds of state ``draw`` reports
    width: int | None  # pad every state to this many positions (None: fixed length, no padding)
    eval_defaults: dict  # eval-estimator's defaults: states, threshold, max_batch
    data_options: type  # make-estimator-data's options: an option dataclass or group
    eval_options: type  # eval-estimator's options of the held-out states

    def __init__(self, cfg) -> None: ...

    @staticmethod
    def config_from_args(args): ...

    def options(self) -> str: ...  # the command-line options that rebuild this config

    def check(self, model) -> None: ...  # ValueError when ``model`` cannot serve this source

    def draw(self, model, rng, count: int, device) -> tuple[list, list[int]]: ...  # (token arrays (N,), source of each)

    @staticmethod
    def held_out(args) -> HeldOutStates: ...  # read and checked before any model loads


class HeldOutStates(Protocol):
    """What :meth:`StateSource.held_out` gives: states no training data came from."""

    sources: tuple[str, ...]

    def draw(self, model, rng, count: int, device) -> tuple[list, list[int]]: ...

    def info(self) -> dict: ...  # what the evaluation records about where its states came from

    # optional: ``overlap(trained: dict) -> str | None``, why these states are not held out from the estimator data
    # drawn with config ``trained`` (the ``data.config`` in an estimator's JSON); eval-estimator refuses them then


@dataclass(frozen=True)
class ShardConfig:
    """The fields every ``StateSource.config_cls`` extends: ``states`` in shards of ``shard_size``, drawn with
    ``seed``; ``eps``/``max_batch`` for the exact probe. Option fields are make-estimator-data's flags."""

    seed: int = seed_option()
    states: int = option(600, "states to probe", range=(1, 1_000_000))
    shard_size: int = option(8, "states per shard file", range=(1, 1_000_000))
    eps: float = option(0.0, "probe pruning threshold (0 = no pruning; under 1)", range=(0, 1), check=under_one)
    max_batch: int = option(512, "most sequences per forward pass", range=(1, 65_536))

    def __post_init__(self):
        check_ranges(self)

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
        check_mix(self.mix, self.sources)


def check_mix(mix, sources: tuple[str, ...]) -> tuple[float, ...]:
    """``mix`` as three weights of ``sources`` (``"0.4,0.2,0.4"`` or a sequence); ValueError on anything else."""
    try:
        values = tuple(float(p) for p in (mix.split(",") if isinstance(mix, str) else mix))
    except (TypeError, ValueError):
        values = ()
    if len(values) != 3 or not all(math.isfinite(v) and v >= 0 for v in values) or sum(values) <= 0:
        raise ValueError(f"--mix expects three weights >= 0, not all 0 ({','.join(sources)}), got {mix!r}")
    return values


def mix_option(sources: tuple[str, ...], default: tuple[float, float, float] = (0.4, 0.3, 0.3)) -> Any:
    """The ``--mix`` field of a :class:`MixedShardConfig`: weights of ``sources``."""
    return option(default, f"weights of {','.join(sources)}", parse=lambda text: check_mix(text, sources))


def ensure_masked(mask: np.ndarray, minimum: int, rng: np.random.Generator) -> np.ndarray:
    """``(N,)`` bool mask with extra random cells masked until at least ``minimum`` are."""
    mask = mask.copy()
    short = minimum - int(mask.sum())
    if short > 0:
        mask[rng.choice(np.flatnonzero(~mask), size=short, replace=False)] = True
    return mask


def uniform_mask(tokens: np.ndarray, rng: np.random.Generator, minimum: int, mask_id: int) -> np.ndarray:
    """``tokens`` ``(N,)`` with each position masked at one rate t ~ U(0, 1), then more at random until at least
    ``minimum`` are (all N when N is fewer): a state source's ``uniform`` states. Draws N uniforms, then t, then
    :func:`ensure_masked`'s picks, so a seed gives the same states wherever it is used."""
    tokens = np.asarray(tokens)
    mask = ensure_masked(rng.random(tokens.shape) < rng.random(), min(minimum, len(tokens)), rng)
    return np.where(mask, mask_id, tokens)


class ConfigStates:
    """A state source whose flags are its config's fields: ``data_options`` and ``eval_options`` are option groups
    of ``config_cls`` (:func:`mi_core.options.only`); the held-out source is this class on the eval flags and
    ``held_out_config``, and records those fields and :meth:`about`."""

    config_cls: type = ShardConfig
    width: int | None = None
    held_out_config: dict = {}

    def __init__(self, cfg):
        self.cfg = cfg

    @classmethod
    def config_from_args(cls, args, group=None, **fixed):
        return from_options(cls.config_cls, args, [f.name for f in group_fields(group or cls.data_options)], **fixed)

    def options(self) -> str:
        return " ".join(f"--{f.name.replace('_', '-')} {option_text(getattr(self.cfg, f.name))}"
                        for f in group_fields(self.data_options))

    def check(self, model) -> None:
        pass

    @classmethod
    def held_out(cls, args):
        return cls(cls.config_from_args(args, cls.eval_options, **cls.held_out_config))

    def about(self) -> str:
        """Where the held-out states come from, in words."""
        return ""

    def info(self) -> dict:
        names = [*(f.name for f in group_fields(self.eval_options)), *self.held_out_config]
        values = {n: getattr(self.cfg, n) for n in names}
        return {n: option_text(v) if n == "mix" else v for n, v in values.items()} | {"about": self.about()}


class Metric(Protocol):
    """``Domain.metric``: ``metric(solutions, levels, mask_id)``, ``update`` per decoded sequence, ``compute``
    a JSON-ready dict."""

    def update(self, index: int, start, final, passes: int, extra: int = 0) -> None: ...

    def compute(self) -> dict: ...


class BenchInputs(Protocol):
    """``Domain.bench_inputs``: what ``bench`` and ``sweep`` decode, built as ``inputs(domain, args)``. May set
    ``sweep_grid`` (the default sweep) and ``sweep_section`` (its Markdown writer)."""

    temperature: float
    batch_size: int
    seeding: str  # "per item" or "per batch" (:mod:`mi_core.bench.decode`)
    unit: str
    description: str
    templates: list
    fields: dict
    name: str
    source: str  # the option that set the inputs' lengths, as a message names it: "--lengths 50-100"

    @staticmethod
    def options(domain, sweep: bool = False) -> list: ...  # the option dataclasses of bench (and sweep)

    def metric(self) -> Metric: ...


class _Registry(Mapping):
    """``key -> Domain``; every read first registers the built-in domains (:func:`load_builtin`)."""

    def __init__(self):
        self.domains: dict[str, Domain] = {}

    def __getitem__(self, key: str) -> Domain:
        load_builtin()
        return self.domains[key]

    def __iter__(self):  # over a snapshot: another thread (the app's warm-up, a test) may register meanwhile
        load_builtin()
        return iter(tuple(self.domains))

    def values(self) -> tuple[Domain, ...]:  # a snapshot too, so a key removed meanwhile is not looked up
        load_builtin()
        return tuple(self.domains.values())

    def __len__(self) -> int:
        load_builtin()
        return len(self.domains)


DOMAINS: Mapping[str, Domain] = _Registry()
BUILTIN = "mi_core.domains.builtin"  # the module that registers the domains shipped with MI Lens
_builtin_lock = threading.RLock()  # a page's thread and the app's warm-up thread may look up at once
_builtin_started = threading.Event()


PLUGINS = "MI_LENS_DOMAINS"  # environment variable: modules, comma-separated, whose import registers more domains
ENTRY_POINTS = "mi_lens.domains"  # entry-point group: an installed package's modules that register domains
PLUGIN_PROBLEMS: list[str] = []  # one line for each plugin module that could not be loaded; its domains are absent
PLUGIN_DOMAINS: dict[str, tuple[str, str]] = {}  # key of each domain a plugin registered -> (module, where named)


def plugin_modules() -> list[tuple[str, str]]:
    """(module, where it was named) for each domain plugin: :data:`PLUGINS` first, then :data:`ENTRY_POINTS`."""
    named = [(m.strip(), PLUGINS) for m in os.environ.get(PLUGINS, "").split(",") if m.strip()]
    for ep in importlib.metadata.entry_points(group=ENTRY_POINTS):
        named.append((ep.module, f"entry point {ep.name!r} of {ep.dist.name if ep.dist else 'a package'}"))
    return named


def load_builtin() -> None:
    """Import :data:`BUILTIN` by name once, on the first lookup, then each plugin module, so the registry never
    imports a domain package and a fresh worker process finds the same domains as its parent. A plugin that fails
    leaves a line in :data:`PLUGIN_PROBLEMS`, not a registry without the shipped domains."""
    with _builtin_lock:  # another thread waits here until every shipped domain is registered
        if not _builtin_started.is_set():  # set: done, or a register() call made by that import
            _builtin_started.set()
            try:
                importlib.import_module(BUILTIN)
            except BaseException:
                _builtin_started.clear()  # the next lookup tries again and meets the same error, not an empty registry
                raise
            for module, where in plugin_modules():
                registered, fresh = dict(DOMAINS.domains), module not in sys.modules
                before = set(registered)
                try:
                    importlib.import_module(module)
                    PLUGIN_DOMAINS.update({key: (module, where) for key in set(DOMAINS.domains) - before})
                    # none added nor replaced (register(..., replace=True) of a shipped key keeps the keys)
                    if fresh and all(registered.get(k) is d for k, d in DOMAINS.domains.items()):
                        PLUGIN_PROBLEMS.append(f"the domain module {module!r} ({where}) registered no domain: a "
                                               "domain module calls mi_core.domain.register(...) as it is imported")
                except Exception as err:  # its own bug or a name clash: reported, and the other domains still serve
                    for key in set(DOMAINS.domains) - before:  # all of the module's domains or none
                        unregister(key)
                    PLUGIN_PROBLEMS.append(f"the domain module {module!r} ({where}) did not load: "
                                           f"{type(err).__name__}: {err}{not_found_hint(module, err)}")


def not_found_hint(module: str, err: Exception) -> str:
    """What to do when ``module`` itself was not found (not a module it imports): a file's path was named in its
    place, or the folder that holds it is not on PYTHONPATH."""
    a_file = "/" in module or os.sep in module or module.endswith(".py")
    missing = getattr(err, "name", None) if isinstance(err, ModuleNotFoundError) else None
    if isinstance(err, TypeError) and a_file and module.startswith("."):  # ./mine.py: read as a relative import
        missing = module.removesuffix(".py")
    if missing is None or not (missing == module.removesuffix(".py") or module.startswith(missing + ".")):
        return ""
    if a_file:
        path = Path(module)
        name = path.stem if path.suffix == ".py" else path.name
        return f"; {PLUGINS} names modules, not files: for {module} give PYTHONPATH={path.parent} and {PLUGINS}={name}"
    return " (is the folder that holds it on PYTHONPATH, or its package installed?)"


PART_MEMBERS = {  # what the engine reads of each part a domain gives (docs/architecture.md, "The domain seam")
    "states": ("config_cls", "sources", "eval_defaults", "data_options", "eval_options", "config_from_args", "options",
               "check", "draw", "held_out"),
    "metric": ("update", "compute"),
    "bench_inputs": ("options",),  # its other members are set on the instance
    "trainer": ("name", "model_config", "train_config", "options", "build_model", "batch", "validate", "save", "point",
                "summary", "state_dict", "load_state_dict", "before_step", "best_key", "higher"),
    "order_task": ("options", "domain", "load", "save_denoiser", "data", "run"),
    "order_bench": ("options", "run_bench"),
}
BUILT_PARTS = ("states", "metric", "trainer", "bench_inputs")  # classes the engine builds; order_task is an instance


def lacks(part, name: str) -> bool:
    """``part`` has no member ``name``, or only a base class's stub (marked ``abc.abstractmethod``: e.g.
    ``SequenceTask.read_data``, which a subclass must give). Read without running it: a part's property (a pool
    built on first use) is neither built nor raises here."""
    try:
        member = inspect.getattr_static(part, name)
    except AttributeError:  # none, unless a __getattr__ gives it
        return not hasattr(part, name)
    return bool(getattr(member, "__isabstractmethod__", False))


def budgets_problem(budgets) -> str | None:
    """What is wrong with an order task's declared ``budgets`` (a tuple of step counts T >= 1; empty or None:
    derived), else None. Their upper bound is checked where they are used, by the option they default."""
    if budgets is None:
        return None
    if not isinstance(budgets, (tuple, list)) or any(isinstance(t, bool) or not isinstance(t, int) or t < 1
                                                     for t in budgets):
        return f"its order_task's budgets {budgets!r} must be a tuple of step counts T >= 1, e.g. (3, 5)"
    return None


def check_parts(domain: Domain) -> None:
    """ValueError naming each member a part of ``domain`` lacks, so an incomplete domain is refused as it registers,
    not by a traceback in the middle of a command."""
    problems = []
    if domain.model_loader is not None and not callable(domain.model_loader):
        problems.append(f"its model_loader {domain.model_loader!r} is not callable")
    for name in BUILT_PARTS:
        if (part := getattr(domain, name)) is not None and not callable(part):
            problems.append(f"its {name} is a {type(part).__name__} instance: give the class, the engine builds it")
    if isinstance(domain.order_task, type):
        problems.append(f"its order_task is the class {domain.order_task.__name__}: give an instance, "
                        f"{domain.order_task.__name__}()")
    elif domain.order_task is not None and (problem := budgets_problem(getattr(domain.order_task, "budgets", ()))):
        problems.append(problem)  # read by every domain's train-order / bench-order parser: refused here, not there
    for name, members in PART_MEMBERS.items():
        part = getattr(domain, name)
        missing = [] if part is None else [m for m in dict.fromkeys((*members, *dir(part))) if lacks(part, m)]
        if missing:
            what = getattr(part, "__name__", type(part).__name__)
            problems.append(f"its {name} ({what}) lacks {', '.join(missing)}")
    if problems:
        raise ValueError(f"domain {domain.key}: {'; '.join(problems)} (docs/architecture.md, 'The domain seam')")


def register(domain: Domain, *, replace: bool = False) -> Domain:
    """Add ``domain`` under its key, names and ``short`` (the app's button); ValueError when one is taken (unless
    ``replace``) or when one of its parts lacks a member the engine reads (:data:`PART_MEMBERS`)."""
    check_parts(domain)
    load_builtin()  # the built-in domains come first, and a new one cannot take their names
    taken = {n for d in DOMAINS.domains.values() if d.key != domain.key or not replace
             for n in (d.key, *d.names, d.short)}
    clash = sorted({domain.key, *domain.names, domain.short} & taken)
    if clash:
        same = DOMAINS.domains.get(domain.key)  # registered again, as by a notebook cell run twice
        again = " (register(domain, replace=True) replaces it)" if same and same.label == domain.label else ""
        raise ValueError(f"domain name {clash[0]!r} is already registered{again}")
    DOMAINS.domains[domain.key] = domain
    return domain


def unregister(key: str) -> None:
    DOMAINS.domains.pop(key, None)
    PLUGIN_DOMAINS.pop(key, None)


def get_domain(name: str) -> Domain:
    """The domain with key or command-line name ``name``; ValueError naming the ones there are."""
    for domain in DOMAINS.values():
        if name == domain.key or name in domain.names:
            return domain
    raise ValueError(f"unknown domain {name!r}; choose one of {', '.join(cli_names())}")


def cli_names() -> list[str]:
    """The name each registered domain goes by on the command line."""
    return [d.cli_name for d in DOMAINS.values()]


def domain_commands() -> dict[str, Command]:
    """The commands the registered domains bring, by name (each serves its own domain unless it says otherwise)."""
    return {c.name: c if c.serves or c.OPTIONS is not None else
            dataclasses.replace(c, serves=lambda x, key=d.key: x.key == key,
                                UNSERVED=c.UNSERVED or f"has no {c.name} command (the {d.cli_name} domain's own)")
            for d in DOMAINS.values() for c in d.commands}
