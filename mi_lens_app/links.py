"""What a shared link asked for, and what the page made of it.

Widgets bound to the URL (``bind="query-params"``) silently drop a value they cannot take (``domain=banana``,
``step=-3``, ``cell=zz99``, ``eps=abc``) and reset an out-of-range number to its default. This module keeps
the link's parameters as they arrived (:func:`start`), clamps numbers that are too large or too small into
their range before the widget reads them and writes the clamped value into the URL (:func:`clamp_number` and
:func:`bound`, so a crafted ``steps=100000000`` cannot make the server work for hours, and a link copied
afterwards says what the page shows), and at the end of the page says in one line what was not understood or was
changed (:func:`note`).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable

import streamlit as st
from streamlit.errors import StreamlitAPIException

# every parameter some page binds; strategy parameters are ``a_<strategy>_<name>`` and ``b_<strategy>_<name>``
KNOWN = frozenset({
    "domain", "src", "preset", "puzzle", "clues", "seed", "cell", "psrc", "ppreset", "seq", "mask_mode", "mask",
    "mask_rate", "mask_seed", "win", "win_size", "a", "b", "temp", "dseed", "step", "color", "present", "boxmajor",
    "layer", "edges", "topk", "thr", "sep", "arcs", "scale", "k", "exact", "eps", "digit", "aa", "set",
})
BIND = "query-params"
IGNORED = frozenset({"embed", "embed_options"})  # Streamlit's own
_IN = "_link_in"  # the parameters as the page's run found them
_CHANGED = "_link_changed"  # {key: "old → new (why)"} clamped this run
_FORMAT = "_link_format"  # {key: value -> its text in the URL} for widgets with a format_func
_UNBIND = "_link_unbind"  # keys clamped this run whose widget is not yet drawn (see :func:`bound`)


def known(key: str) -> bool:
    return key in KNOWN or key.startswith(("a_", "b_"))


def start() -> None:
    """Remember the URL's parameters as this run found them (call before any widget)."""
    st.session_state[_IN] = st.query_params.to_dict()
    st.session_state[_CHANGED] = {}
    st.session_state.setdefault(_FORMAT, {})


def formatter(key: str, fn: Callable) -> None:
    """Tell the audit how widget ``key`` writes its value into the URL (e.g. a cell index as ``r3c5``)."""
    st.session_state.setdefault(_FORMAT, {})[key] = fn


def clamp_number(key: str, lo: float, hi: float, integer: bool = False) -> None:
    """Before number widget ``key`` (range ``lo..hi``) reads the link: a number outside the range becomes the
    nearest end (and the note says so); Streamlit would otherwise drop it without a word."""
    raw = st.session_state.get(_IN, {}).get(key)
    if raw is None or key in st.session_state:  # the widget already holds a value: the link was read before
        return
    try:
        value = float(raw)
    except ValueError:
        return  # not a number: the note reports it as not understood
    if not math.isfinite(value) or lo <= value <= hi:
        return
    clamped = lo if value < lo else hi
    clamped = int(clamped) if integer else float(clamped)
    st.session_state[key] = clamped
    with contextlib.suppress(StreamlitAPIException):  # bound by an earlier page: :func:`bound` unbinds it here
        st.query_params[key] = str(clamped) if integer else f"{clamped:g}"  # the URL says what the page shows
    why = "the largest allowed" if value > hi else "the smallest allowed"
    st.session_state[_CHANGED][key] = f"{key}={raw} → {clamped:g} ({why})"
    st.session_state.setdefault(_UNBIND, set()).add(key)


def bound(key: str) -> str | None:
    """The ``bind`` of number widget ``key``: the URL, except in the run that clamped the link's value. A bound
    widget would seed itself from the link as it was opened, drop the out-of-range value from the URL and
    write nothing there; unbound for that one run, it leaves the clamped value that :func:`clamp_number`
    wrote, and from the next run on it is bound again and seeds itself from it."""
    unbind = st.session_state.get(_UNBIND, set())
    if key in unbind:
        unbind.discard(key)  # once: a fragment's later runs draw the widget again, bound
        return None
    return BIND


def _value_text(key: str, value) -> str | None:
    fn = st.session_state.get(_FORMAT, {}).get(key)
    if fn is not None:
        try:
            return str(fn(value))
        except (IndexError, KeyError, TypeError, ValueError):
            return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return None if value is None else str(value)


def _same(raw: str, value, key: str) -> bool:
    """Whether the link's text ``raw`` means the widget's current ``value``."""
    text = _value_text(key, value)
    if text is not None and raw.strip() == text.strip():
        return True
    if isinstance(value, bool):
        return raw.lower() == ("true" if value else "false")
    if isinstance(value, (int, float)):
        try:
            return math.isclose(float(raw), float(value), rel_tol=1e-9, abs_tol=1e-12)
        except ValueError:
            return False
    return False


def problems() -> tuple[list[str], list[str], list[str]]:
    """``(not understood, not used, changed)``: the link's parameters the page dropped (unknown names, values
    a widget cannot take), those of the app that nothing on this page read (``cell`` on the benchmarks, a
    puzzle text under ``src=preset``), and those it clamped."""
    found = st.session_state.get(_IN, {})
    changed = st.session_state.get(_CHANGED, {})
    dropped, unused = [], []
    for key, raw in found.items():
        if key in IGNORED or key in changed:
            continue
        if not known(key):
            dropped.append(f"{key}={raw}")
        elif key not in st.session_state:
            unused.append(key)
        elif not _same(raw, st.session_state[key], key):
            dropped.append(f"{key}={raw}")
    return dropped, unused, list(changed.values())


def note() -> str | None:
    """The one line that says what of the link was not understood, not used or changed, or None."""
    dropped, unused, changed = problems()
    parts = []
    if dropped:
        parts.append("part of this link was not understood: " + ", ".join(_short(d) for d in dropped))
    if unused:
        parts.append(("part of this link is" if not parts else "") + " not used on this page: " + ", ".join(unused))
    if changed:
        parts.append(("part of this link was" if not parts else "") + " changed to fit: " + ", ".join(changed))
    return ";".join(parts).strip() + "." if parts else None


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def put_in_link(source_key: str, source: str, text_key: str, text: str) -> None:
    """Switch the source to ``paste`` with ``text``: the widgets take the values, and the URL gets them too
    (a widget that was not drawn in the last run does not write its value into the URL by itself)."""
    st.session_state[source_key] = source
    st.session_state[text_key] = text
    with contextlib.suppress(StreamlitAPIException):  # already bound: the widget writes it itself
        st.query_params[text_key] = text
