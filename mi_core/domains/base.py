"""What a domain is: the one place that says how its sequences read, what their values are called, which
model, estimator and selector it ships with, and which parts of the core it plugs in.

A :class:`Domain` is small and declarative. Its parsing, value names, mask and pad ids and rule structure
are methods here (a domain layer below models). The parts that need a model (its loader, the state sampler
for estimator data and order training, the decode metric) are named by ``"module:attribute"`` references
and resolved by the layer that runs them (:meth:`Domain.part`), so a domain never imports a layer above it.

Subclasses: :class:`GridDomain` (Sudoku of any box size) in :mod:`mi_core.domains.sudoku`, and
``ProteinDomain`` in :mod:`mi_core.domains.protein`. A new domain is one module that builds an instance
and passes it to :func:`mi_core.domains.registry.register`.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


class DomainInputError(ValueError):
    """Text that is not a state of the domain; the message names the character and its position."""


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
    back to), ``stamp_envs`` (more variables naming files the model reads), and the same pairs for the
    neural MI estimator and the order selector (None: the domain has none).

    Parts (``"module:attribute"`` or the object itself, resolved by :meth:`part`): ``model_loader``
    ``(spec, device) -> (model, description)``, ``states`` (the state source factory of estimator data, see
    :mod:`mi_core.train.estimator_data`), ``metric`` (a decode metric class with ``update``/``compute``) and
    ``order_task`` (a module giving ``add_arguments(parser)`` and ``run(args, cfg, model_path, out, log_path,
    device)``: the start states and validation of the order trainer, :mod:`mi_core.order.train`), ``trainer``
    (the MDM trainer's task, :mod:`mi_core.train.mdm`) and ``bench_inputs`` (what ``bench`` and ``sweep``
    decode; None: puzzles from a file, :class:`mi_core.bench.decode.PuzzleFiles`).

    App behaviour: ``exact_model`` (its conditionals are exact), ``fallback_eps`` (pruning of the exact probe
    used when no estimator is available), ``clue_range`` (givens of a generated puzzle), ``require_unique``
    (refuse inputs with several solutions), ``probe_fallback`` (MI-reading decoders fall back to the pruned
    exact probe instead of refusing to run).
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
    stamp_envs: tuple[str, ...] = ()
    estimator_env: str | None = None
    estimator_default: str | None = None
    selector_env: str | None = None
    selector_default: str | None = None
    model_loader: Any = None
    states: Any = None
    metric: Any = None
    order_task: Any = None
    trainer: Any = None
    bench_inputs: Any = None
    exact_model: bool = False
    fallback_eps: float = 1e-3
    clue_range: tuple[int, int] = (24, 60)
    require_unique: bool = False
    probe_fallback: bool = False
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
        """The part ``name`` (``model_loader``, ``states``, ``metric``, ``order_task``, ``trainer`` or ``bench_inputs``), imported when named by
        reference (``"module:attribute"``, or ``"module"`` for a module).

        Raises:
            ValueError: the domain has no such part.
        """
        ref = getattr(self, name, None)
        if ref is None:
            raise ValueError(f"the {self.label} domain has no {name.replace('_', ' ')}")
        if isinstance(ref, str):
            module, _, attr = ref.partition(":")
            module = importlib.import_module(module)
            return getattr(module, attr) if attr else module
        return ref


def resolve_path(path: str | Path) -> Path:
    p = Path(path)
    return p if p.is_absolute() else ROOT / p


def is_keyword(spec: str) -> bool:
    """A model spec that names a choice (``auto``, ``esmc``) rather than a file."""
    return "/" not in spec and "." not in spec
