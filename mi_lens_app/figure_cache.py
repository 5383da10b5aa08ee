"""Figures built once per process and shared by every session that asks for the same one (a decoding's frames on every
replay, a map for a class of 30), kept to a memory budget."""

from __future__ import annotations

import sys
import threading
import types
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from mi_core.options import plural
from mi_lens_app.screen import title_chars

FIGURE_CACHE_BYTES = 64 * 2**20  # the figures kept for every session: an 81 x 81 heatmap ~0.7 MB, a grid ~0.07 MB


def size_of(value) -> int:
    """Bytes ``value`` holds, roughly: its containers, strings and arrays (an object array's items too) and the
    attributes of its objects (a plotly figure's data, layout and traces), each counted once: 0.74 MB for the 0.64 MB
    tracemalloc sees an 81 x 81 heatmap keep, 0.09 MB for a grid's 0.06 (tests/test_app_serving.py)."""
    seen, todo, total = set(), [value], 0
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, (type, types.ModuleType, types.FunctionType)):
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):  # a view holds its base
            total += 112 + (obj.nbytes if obj.base is None else 0)
            if obj.base is not None:
                todo.append(obj.base)
            if obj.dtype == object:  # its items' own bytes too (plotly's hover texts)
                todo += obj.ravel().tolist()
            continue
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            todo += [*obj.keys(), *obj.values()]
        elif isinstance(obj, (list, tuple, set, frozenset)):
            todo += obj
        elif hasattr(obj, "__dict__"):
            todo.append(vars(obj))
    return total


class FigureCache:
    """Built figures by key, at most ``max_bytes`` of them (:func:`size_of`), the least recently used let go first:
    bounded by count (512), a click through 975 cells of the 9x9 MI map took the server from 641 MB to 1.02-1.14 GB.
    A figure is built once for all the sessions that ask for it at the same time."""

    def __init__(self, max_bytes: int):
        self.max_bytes, self.bytes = max_bytes, 0
        self._items: OrderedDict[tuple, tuple[object, int]] = OrderedDict()
        self._building: dict[tuple, threading.Lock] = {}
        self._lock = threading.Lock()

    def __call__(self, key: tuple, build: Callable):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][0]
            building = self._building.setdefault(key, threading.Lock())
        with building:  # another session building it: wait for its figure
            with self._lock:
                if key in self._items:
                    self._items.move_to_end(key)
                    return self._items[key][0]
            try:
                value = build()
                self._keep(key, value, size_of(value))
            finally:
                with self._lock:
                    if self._building.get(key) is building:  # not a later session's, begun after this one's
                        del self._building[key]
        return value

    def _keep(self, key: tuple, value, size: int) -> None:
        with self._lock:
            if size > self.max_bytes:  # larger than the whole cache: drawn, not kept
                return
            if key in self._items:  # two sessions built it (one waited on a build that failed): counted once
                self.bytes -= self._items.pop(key)[1]
            self._items[key] = (value, size)
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, (_, freed) = self._items.popitem(last=False)
                self.bytes -= freed

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.bytes = 0


_figure = FigureCache(FIGURE_CACHE_BYTES)


def figure(key: tuple, build: Callable):
    """``build()``, a plotly figure or an SVG string, built once per process for ``key`` (the figure's own inputs,
    e.g. a decoding frame's tokens, outlines and entropies as bytes): the frames of a decoding are drawn again at
    every step, on every replay and for every session that watches the same run. The figure is shared: do not
    change it. The key holds the visitor's title width (:func:`screen.title_chars`): a title wrapped for a phone
    was otherwise served to every laptop and projector that asked for the same figure, and the other way round."""
    return _figure((*key, title_chars()), build)


def shared_figure(build: Callable, *args, **kwargs):
    """``build(*args, **kwargs)``, built once per process for these inputs (:func:`figure`, keyed by the builder's
    name and its arguments, arrays by their bytes), for the views that drew their charts again in every session: a
    class of 30 on one What-if link waited 6.5 s for 0.2 s of the server's time a session, nearly all of it plotly
    building the same figures. The figure is shared: do not change it."""
    key = (f"{build.__module__}.{build.__qualname__}", _key(args), _key(kwargs))
    return figure(key, lambda: build(*args, **kwargs))


def _key(value):
    """``value`` as a hashable key: arrays by dtype, shape and bytes; lists, tuples and dicts item by item; scalars
    with their type (True is not 1)."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return ("objects", value.shape, _key(value.tolist()))
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, np.generic):
        return _key(value.item())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, *(_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", *((_key(k), _key(v)) for k, v in value.items()))
    if isinstance(value, str):  # a Domain's noun by its plural too ("vertex" is not made plural with an s)
        return ("str", value, plural(value))
    if value is None or isinstance(value, (int, float, bool)):
        return (type(value).__name__, value)
    raise TypeError(f"a shared figure is keyed by arrays, lists, dicts and plain values, not a {type(value).__name__}")
