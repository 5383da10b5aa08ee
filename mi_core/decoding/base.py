"""The strategy interface, its registry (names -> strategy dataclasses, whose fields are their parameters; fields
marked ``metadata={"runtime": True}`` are objects set by code, never parsed from text nor listed), and helpers
shared by the built-in strategies."""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import typing
from dataclasses import dataclass, field

import torch

from mi_core.io import user_path


class Strategy:
    """A decoding strategy: a dataclass registered by ``@register("name")`` that picks which masked positions
    to unmask at each step; the loop does everything else. ``select`` reports into ``ctx.info`` and counts
    any forward passes of its own in ``ctx.extra_passes`` ``(B,)``.
    """

    name: str = ""
    one_of: tuple[str, ...] = ()  # parameters of which a caller may name at most one

    def __post_init__(self):
        for f in dataclasses.fields(self):
            if "check" in f.metadata:
                check_param(f.name, getattr(self, f.name), f.metadata["check"], allow_none=f.default is None)

    def select(self, ctx) -> torch.Tensor:
        """``(B, N)`` bool: the masked positions to unmask at this step."""
        raise NotImplementedError

    def prepare(self, model, device: torch.device) -> None:
        """Bind resources for ``model`` (called before every decode: cheap when already done)."""

    def remask(self, ctx, tokens: torch.Tensor, confidence: torch.Tensor) -> torch.Tensor | None:
        """``(B, N)`` bool positions to mask again after filling (None: none); ``confidence`` ``(B, N)`` is the
        probability each value had when written (1 at givens)."""
        return None

    def pass_limit(self, n: int) -> int:
        """The most passes this strategy can take on ``n`` positions."""
        return n

    def __getstate__(self) -> dict:
        """A pickled or copied strategy (cloudpickle, Ray, copy.deepcopy) records what it read for a model as read
        for none (a weak reference pickles not), so that its next ``prepare`` reads it again for its model."""
        return {k: (_read_for_none, *v[1:]) if k.endswith("_loaded") and isinstance(v, tuple) else v
                for k, v in self.__dict__.items()}


def _read_for_none() -> None:
    """The model a copied strategy's record names (:meth:`Strategy.__getstate__`): none."""
    return None


def rank_pick(score: torch.Tensor, masked: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """``(B, N)`` bool: the ``counts[b]`` masked positions of row ``b`` with the highest ``score`` (ties: lower
    index first)."""
    order = score.masked_fill(~masked, float("-inf")).argsort(dim=1, descending=True, stable=True)
    ranks = torch.empty_like(order)
    ranks.scatter_(1, order, torch.arange(order.shape[1], device=order.device).expand_as(order))
    return (ranks < counts[:, None]) & masked


def uniform_count(masked: torch.Tensor, steps_left: int) -> torch.Tensor:
    """``(B,)`` ``ceil(masked / steps_left)`` per row: an even schedule over the steps left."""
    left = max(steps_left, 1)
    return torch.div(masked.sum(1) + left - 1, left, rounding_mode="floor")


def rand_rows(shape, generator, device) -> torch.Tensor:
    """Uniform ``[0, 1)`` float32 noise of ``shape`` ``(B, ...)`` from one generator, or a list of B (one per
    row, so a row's noise does not depend on its batch)."""
    if isinstance(generator, (list, tuple)):
        if len(generator) != shape[0]:
            raise ValueError(f"{len(generator)} row generators for a batch of {shape[0]}")
        return torch.stack([torch.rand(tuple(shape[1:]), generator=g, device=device, dtype=torch.float32)
                            for g in generator])
    return torch.rand(tuple(shape), generator=generator, device=device, dtype=torch.float32)


def gumbel_like(x: torch.Tensor, generator) -> torch.Tensor:
    """Standard Gumbel noise of ``x``'s shape, drawn from ``generator`` (see :func:`rand_rows`)."""
    u = rand_rows(x.shape, generator, x.device)
    return -torch.log(-torch.log(u.clamp(1e-20, 1.0 - 1e-7)))


MAX_COUNT = 4096  # the most steps, positions per pass or batch a strategy parameter may ask for


RANGES = {  # kind -> (what it accepts, in words; test)
    "nonnegative": ("a finite number >= 0", lambda v: math.isfinite(v) and v >= 0),
    "unit": ("in (0, 1]", lambda v: 0 < v <= 1),
    "fraction": ("in [0, 1)", lambda v: 0 <= v < 1),
}


def param(default, check: str):
    """A strategy parameter checked on construction (:func:`check_param` of kind ``check``)."""
    return field(default=default, metadata={"check": check})


def check_param(name: str, value, kind: str, allow_none: bool = False) -> None:
    """Raise ValueError unless ``value`` is of ``kind``: ``"count"`` (an int in ``1..MAX_COUNT``, or None when
    ``allow_none``) or a key of :data:`RANGES`."""
    if kind == "count":
        if value is None and allow_none:
            return
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
        if value > MAX_COUNT:
            raise ValueError(f"{name} must be at most {MAX_COUNT} (accepted 1..{MAX_COUNT}), got {value}")
        return
    wanted, fits = RANGES[kind]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not fits(value):
        raise ValueError(f"{name} must be {wanted}, got {value!r}")


@dataclass
class FixedCount(Strategy):
    """Unmask ``k`` positions per pass, or (with ``steps`` = T) :func:`uniform_count`, ranked by ``score(ctx)``.
    info: ``count``."""

    k: int = param(1, "count")
    steps: int | None = param(None, "count")
    one_of = ("k", "steps")

    def __post_init__(self):
        super().__post_init__()
        if self.steps is not None and self.k != 1:
            raise ValueError(f"give k or steps, not both (k={self.k}, steps={self.steps})")

    def counts(self, ctx) -> torch.Tensor:
        if self.steps is None:
            return ctx.masked.sum(1).clamp(max=self.k)
        return uniform_count(ctx.masked, self.steps - ctx.step)

    def score(self, ctx) -> torch.Tensor:
        """``(B, N)`` float: higher is unmasked first."""
        raise NotImplementedError

    def select(self, ctx) -> torch.Tensor:
        counts = self.counts(ctx)
        ctx.info["count"] = counts
        return rank_pick(self.score(ctx), ctx.masked, counts)


STRATEGIES: dict[str, type] = {}
BOOLS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def register(name: str):
    """Class decorator that records a strategy dataclass under ``name``."""

    def wrap(cls):
        if not (isinstance(cls, type) and issubclass(cls, Strategy) and dataclasses.is_dataclass(cls)):
            raise TypeError(f"strategy {name!r} must be a dataclass subclassing mi_core.decoding.base.Strategy")
        if name in STRATEGIES:
            raise ValueError(f"strategy {name!r} registered twice")
        cls.name = name
        STRATEGIES[name] = cls
        return cls

    return wrap


def strategy_params(name: str) -> dict[str, object]:
    """The user parameters of strategy ``name`` and their defaults (runtime fields left out)."""
    cls = _lookup(name)
    return {f.name: f.default for f in dataclasses.fields(cls) if not f.metadata.get("runtime")}


def make_strategy(name: str, **params):
    """Build strategy ``name``; strings (``--set key=value``) are converted to the field's type (ValueError)."""
    return _lookup(name)(**typed_params(name, params))


def typed_params(name: str, params: dict) -> dict:
    """``params`` of strategy ``name`` with each string converted to its field's type (``{"k": "4"}`` ->
    ``{"k": 4}``), as results record them; ValueError on an unknown parameter or a bad value."""
    cls = _lookup(name)
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    typed = {}
    for key, value in params.items():
        if key not in fields:
            user = sorted(strategy_params(name))
            raise ValueError(f"strategy {name!r} has no parameter {key!r}; it takes {', '.join(user) or 'none'}")
        if fields[key].metadata.get("runtime") and isinstance(value, str):
            raise ValueError(f"strategy {name!r}: {key} is set by code (an object), not from text")
        if str in typing.get_args(hints[key]) and not isinstance(value, (str, os.PathLike, type(None))):
            runtime = [f.name for f in fields.values() if f.metadata.get("runtime")]
            raise ValueError(f"strategy {name!r}: {key} is a path or a name, got a {type(value).__name__}"
                             + (f" (an object goes in {' or '.join(runtime)})" if runtime else ""))
        typed[key] = _convert(name, key, value, hints[key])
    return typed


def check_one_of(name: str, params: dict, options: dict[str, str] | None = None) -> dict:
    """``params`` as a command line names them, or ValueError when they name two parameters of strategy ``name``
    of which one is meant (``k=1`` beside ``steps=4`` is refused although 1 is k's default), or when one is not the
    strategy's but the command's own option, one of ``options`` (``{name: how it is given}``, :func:`~mi_core.options.
    option_flags`: ``--set temperature=0`` means ``--temperature 0``)."""
    for key in params.keys() - strategy_params(name).keys() & (options or {}).keys():
        raise ValueError(f"strategy {name!r} has no parameter {key!r}; {key} is this command's option: "
                         + options[key].format(params[key]))
    if len(named := [key for key in _lookup(name).one_of if key in params]) > 1:
        raise ValueError(f"strategy {name!r}: give {' or '.join(named)}, not both")
    return params


def _lookup(name: str) -> type:
    if name not in STRATEGIES:
        raise ValueError(f"unknown sampler {name!r}{spec_hint(name)}; choose one of {', '.join(sorted(STRATEGIES))}")
    return STRATEGIES[name]


def spec_hint(name: str) -> str:
    """Where ``name`` is sweep's spec form (``mi:gamma=0.1;lam=1``), given where ``--set`` takes the parameters: the
    ``--set`` of each, one value each (a list of values is a grid, sweep's)."""
    base, _, params = name.partition(":")
    if not params or base not in STRATEGIES:
        return ""
    pairs = [p.strip() for p in params.split(";") if p.strip()]
    grid = "; a list of values is a grid: python -m mi_core sweep runs it" if any("," in p for p in pairs) else ""
    return f" (parameters go in --set, one value each: --sampler {base} {' '.join(f'--set {p}' for p in pairs)}{grid})"


def sampler_parameter(flag: str) -> str | None:
    """``"--set selector=..."`` where ``--selector`` names a parameter of some strategy, not an option."""
    key = flag.removeprefix("--").replace("-", "_")
    takes = any(key == f.name for cls in STRATEGIES.values() for f in dataclasses.fields(cls))
    return f"--set {key}=..." if takes else None


def _plain(name: str, key: str, value, args: list):
    """A value given as an object, as its field's type: a numpy integer or float as the Python int or float it holds
    (a whole number for a float field is that float: JSON's 1 is gamma 1.0); a bool field takes True, False, 0 or 1."""
    if bool in args:
        if not (isinstance(value, bool) or str(getattr(value, "dtype", "")) == "bool"
                or (isinstance(value, numbers.Integral) and value in (0, 1))):
            raise ValueError(f"{name}: parameter {key} must be True or False, got {value!r}")
        return bool(value)
    if isinstance(value, bool) or str(getattr(value, "dtype", "")) == "bool":
        return value  # refused by the field's own check
    if int in args and isinstance(value, numbers.Integral):
        return int(value)
    return float(value) if float in args and isinstance(value, numbers.Real) else value


def _convert(name: str, key: str, value, hint):
    args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    if not isinstance(value, str):
        return _plain(name, key, value, args)
    if str in args:  # text: a selector's or estimator's path (any name; a quoted ~ is the home folder) or a mode
        return str(user_path(value)) if value.startswith("~") else value
    if not value.isascii():
        bad = next(ch for ch in value if not ch.isascii())
        raise ValueError(f"{name}: parameter {key}={value!r} holds the non-ASCII character {bad!r} "
                         f"(U+{ord(bad):04X}); write numbers with ASCII digits")
    for kind in args:
        try:
            return BOOLS[value.lower()] if kind is bool else kind(value)
        except (KeyError, TypeError, ValueError):
            continue
    if value.lower() == "none" and type(None) in typing.get_args(hint):
        return None
    raise ValueError(f"{name}: parameter {key}={value!r} is not a valid {' or '.join(a.__name__ for a in args)}")
