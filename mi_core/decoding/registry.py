"""Strategy registry: names -> strategy dataclasses, whose fields are their parameters. Fields marked
``metadata={"runtime": True}`` are objects set by code, never parsed from text nor listed."""

from __future__ import annotations

import dataclasses
import typing

STRATEGIES: dict[str, type] = {}
BOOLS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def register(name: str):
    """Class decorator that records a strategy dataclass under ``name``."""

    def wrap(cls):
        from mi_core.decoding.base import Strategy

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
    cls = _lookup(name)
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in params.items():
        if key not in fields:
            user = sorted(strategy_params(name))
            raise ValueError(f"strategy {name!r} has no parameter {key!r}; it takes {', '.join(user) or 'none'}")
        if fields[key].metadata.get("runtime") and isinstance(value, str):
            raise ValueError(f"strategy {name!r}: {key} is set by code (an object), not from text")
        kwargs[key] = _convert(name, key, value, hints[key])
    return cls(**kwargs)


def _lookup(name: str) -> type:
    if name not in STRATEGIES:
        raise ValueError(f"unknown sampler {name!r}; choose one of {', '.join(sorted(STRATEGIES))}")
    return STRATEGIES[name]


def _convert(name: str, key: str, value, hint):
    if not isinstance(value, str):
        return value
    if not value.isascii():
        bad = next(ch for ch in value if not ch.isascii())
        raise ValueError(f"{name}: parameter {key}={value!r} holds the non-ASCII character {bad!r} "
                         f"(U+{ord(bad):04X}); write numbers with ASCII digits")
    args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    for kind in args:
        try:
            return BOOLS[value.lower()] if kind is bool else kind(value)
        except (KeyError, TypeError, ValueError):
            continue
    if value.lower() == "none" and type(None) in typing.get_args(hint):
        return None
    raise ValueError(f"{name}: parameter {key}={value!r} is not a valid {' or '.join(a.__name__ for a in args)}")
