"""Streamlit's side of the seam: models load once per process (``st.cache_resource``), results are cached by
input (``st.cache_data``), and user errors become a message in the page, never a traceback.

Cached results are keyed by plain values (domain key, grid string, parameters) and by ``version``, the
weights files' paths and modification times, so replacing a model file invalidates what it produced.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import sys
import threading
import time
import types
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import streamlit as st

from mi_core.decoding import STRATEGIES, strategy_params
from mi_core.domains import protein
from mi_core.domains.protein.mdm import ProteinMDM
from mi_core.io import file_sha256
from mi_core.models.base import ModelFileError
from mi_core.models.iterations import iterations_of
from mi_core.options import plural
from mi_lens_app import benchmarks, core, domains, sequences, texts, traces
from mi_lens_app import selector as order
from mi_lens_app.core import IterationView, MIMap, ProbeView, WhatIf
from mi_lens_app.domains import (
    DOMAINS,
    Domain,
    Puzzle,
    generate,
    get_domain,
    load_presets,
    make_puzzle,
    read_upload,
)
from mi_lens_app.screen import title_chars

# ModelFileError and every SudokuError are ValueErrors; an unreadable file or a folder given for one, OSErrors
USER_ERRORS = (ValueError, FileNotFoundError, PermissionError, IsADirectoryError, RuntimeError)


def _stamp(path: Path | None) -> str:
    if path is None:
        return "builtin"
    return f"{path}@{path.stat().st_mtime_ns}" if path.is_file() else f"{path}@absent"


def _model_stamp(domain: Domain) -> str:
    return ",".join(_stamp(p) for p in domain.stamp_paths()) or "builtin"


def version(domain: Domain) -> str:
    """Cache key part naming the model, estimator and order selector files (and their modification times)."""
    return (f"{domain.model_spec()}:{_model_stamp(domain)}|{_stamp(domain.estimator_path())}"
            f"|{_stamp(domain.selector_path())}")


@st.cache_resource(show_spinner="Loading the model ...", max_entries=8)  # the domains and their second models
def _model(domain_key: str, stamp: str):
    """``(model, a line naming it)``; sets the app's torch threads first (``core.use_app_threads``)."""
    core.use_app_threads()
    return core.load_domain_model(get_domain(domain_key), core.app_device())


@st.cache_resource(show_spinner="Loading the MI estimator ...", max_entries=8)
def _estimator(domain_key: str, stamp: str) -> tuple[object | None, str | None]:
    """``(estimator, None)``, or ``(None, why it cannot be used)``; ``(None, None)`` for a domain without one."""
    domain = get_domain(domain_key)
    path = domain.estimator_path()
    if path is None:
        return None, None
    if not path.is_file():
        return None, f"{path} is missing"
    try:
        est = core.load_domain_estimator(domain, core.app_device())
        problem = core.estimator_mismatch(model(domain), est, domain)
    except ValueError as err:  # a bad estimator file, or the model itself is missing
        return None, str(err)
    return (None, f"{path.name} does not fit the model: {problem}") if problem else (est, None)


@st.cache_resource(show_spinner="Loading the order selector ...", max_entries=8)
def _selector(domain_key: str, stamp: str) -> tuple[object | None, str | None]:
    """``(selector, None)``, or ``(None, why it cannot be used)``; ``(None, None)`` for a domain without one."""
    domain = get_domain(domain_key)
    path = domain.selector_path()
    if path is None:
        return None, None
    if not path.is_file():
        return None, f"{path} is missing"
    try:
        net = order.load_domain_selector(domain, core.app_device())
        problem = order.selector_mismatch(model(domain), net, domain)
    except ValueError as err:  # a bad selector file, or the model itself is missing
        return None, str(err)
    return (None, order.misfit(domain, path, problem)) if problem else (net, None)


_warm_lock = threading.Lock()
_warm_started = False
WARM_THREAD = "mi-lens-warm-up"
# the logger of Streamlit's "missing ScriptRunContext!" warning, which every cached call of the warm-up thread
# (a thread outside any script run, on purpose) logged: a page of them at each server start
_CTX_LOGGER = "streamlit.runtime.scriptrunner_utils.script_run_context"


class _WarmThreadQuiet(logging.Filter):
    """Drops the missing-ScriptRunContext warning of the warm-up thread only (elsewhere it may mean a bug)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (threading.current_thread().name == WARM_THREAD and "missing ScriptRunContext" in record.msg)


def quiet_warm_thread() -> None:
    """Install :class:`_WarmThreadQuiet` on Streamlit's logger (once)."""
    logger = logging.getLogger(_CTX_LOGGER)
    if not any(isinstance(f, _WarmThreadQuiet) for f in logger.filters):
        logger.addFilter(_WarmThreadQuiet())


def warm_up(then: Callable[[float], None] | None = None) -> bool:
    """Start loading every domain's model, estimator and order selector in a background thread, once per
    process, so the first map or decoding does not wait for them: the launcher (``python -m mi_lens_app.serve``)
    calls it as the server starts, and every page calls it too (for ``streamlit run app.py``, where the first
    page view starts it). ``then(seconds)`` is called when it is done. ``MI_LENS_WARM=0`` turns it off (the tests
    swap models between runs). Returns whether this call started it."""
    global _warm_started
    if os.environ.get("MI_LENS_WARM", "1") == "0":
        return False
    with _warm_lock:
        if _warm_started:
            return False
        _warm_started = True
    quiet_warm_thread()
    threading.Thread(target=_warm_all, args=(then,), name=WARM_THREAD, daemon=True).start()
    return True


def _warm_all(then: Callable[[float], None] | None = None) -> None:
    start = time.perf_counter()
    _warm_domains()
    _warm_imports()
    if then is not None:
        then(time.perf_counter() - start)


def _warm_domains() -> None:
    for domain in DOMAINS.values():
        try:
            core.warm(model(domain), domain.cells if domain.geometry else 64)  # the first real pass is then quick
            estimator(domain)
            selector(domain)
        except USER_ERRORS:  # a missing file: the page that needs it says so
            continue


# what the pages import beyond the landing page: networkx (the dependency graph) took 0.1-0.2 s to import on the
# MI maps page's first view, plotly's colour scales 40 ms on the decoding page's
PAGE_MODULES = ("mi_lens_app.graph", "mi_lens_app.exports", "mi_lens_app.protein_figures", "mi_lens_app.grid_svg",
                "pandas")


def _warm_imports() -> None:
    """Import the pages' modules and build one small figure of each kind the MI maps page draws (plotly sets up
    a figure kind's validators on its first use: the first dependency graph took 0.34 s to build, the next
    ones 20 ms), so a page's first view does not wait for them."""
    for name in PAGE_MODULES:
        importlib.import_module(name)
    from mi_lens_app import figures, grid_svg

    four = DOMAINS["sudoku4"]
    digits, givens, mi = np.zeros(four.cells, int), np.zeros(four.cells, bool), np.zeros((four.cells, four.cells))
    labels = four.labels()
    figures.grid_figure(digits, givens, 2, layer=np.zeros(four.cells), hover=labels, selected=0).to_json()
    figures.mi_heatmap(mi, 2, labels, selected=0, clickable=True).to_json()
    figures.dependency_figure([(0, 1, 0.1, True), (0, 5, 0.1, False)], digits, givens, 2, labels,
                              strength=np.ones(four.cells)).to_json()
    grid_svg.colors(np.zeros(1), "Oranges", 0.0, 1.0)


def model(domain: Domain):
    """The domain's model, loaded once per process (raises ModelFileError when its file is missing)."""
    return _model(domain.key, f"{domain.model_spec()}:{_model_stamp(domain)}")[0]


def antibody_model_installed() -> bool:
    """Whether AntiBERTy's weights are here (the ``antiberty`` package, or ``MI_LENS_ANTIBODY_MODEL``)."""
    path = get_domain("antibody").model_path()
    return path is not None and path.exists()


def model_info(domain: Domain) -> str:
    """Which model the domain's pages use, and why when a loader fell back to another."""
    return _model(domain.key, f"{domain.model_spec()}:{_model_stamp(domain)}")[1]


def runs_small_protein_mdm(domain: Domain) -> bool:
    """Whether the domain's pages run the small protein MDM trained on CATH (not ESM-C, not AntiBERTy)."""
    return isinstance(model(domain), ProteinMDM)


def estimator(domain: Domain):
    """The domain's MI estimator, or None when it has none or it cannot be used (see :func:`estimator_problem`)."""
    return _estimator(domain.key, version(domain))[0]


def estimator_problem(domain: Domain) -> str | None:
    """Why the domain's estimator is not used (missing, unreadable, or not fitting the model), or None."""
    return _estimator(domain.key, version(domain))[1]


def has_estimator(domain: Domain) -> bool:
    return estimator(domain) is not None


def selector(domain: Domain):
    """The domain's order selector for ``learned``, or None when it has none or it cannot be used."""
    return _selector(domain.key, version(domain))[0]


def unavailable_strategies(domain: Domain) -> dict[str, str]:
    """Strategies not offered on ``domain`` (those that run an order selector it lacks), each with why."""
    net, problem = _selector(domain.key, version(domain))
    if net is not None:
        return {}
    return {name: order.no_selector_reason(domain, problem) for name in STRATEGIES if order.uses_selector(name)}


def selector_caution(name: str, domain: Domain) -> str | None:
    """A note when strategy ``name`` runs a selector trained against another model file, or None."""
    return order.other_denoiser_note(domain) if order.uses_selector(name) else None


def uses_selector(name: str) -> bool:
    return order.uses_selector(name)


def _probe_bar(label: str):
    """A progress bar and the ``progress(done, total)`` callback the probe calls."""
    bar = st.progress(0.0, text=label)

    def update(done: int, total: int) -> None:
        bar.progress(min(done / max(total, 1), 1.0), text=f"{label}: {done} / {total} passes")

    return bar, update


@st.cache_data(show_spinner=False, max_entries=256)
def mi_map(domain_key: str, grid: str, version: str) -> MIMap:
    """The quickest MI map of ``grid``: the estimator's, else the exact probe pruned at the domain's eps."""
    domain = get_domain(domain_key)
    est = estimator(domain)
    tokens = core.tokens_of(grid, domain, core.app_device())
    if est is not None:
        return core.run_estimator(model(domain), est, tokens)
    bar, update = _probe_bar("Probing the model (no estimator)")
    result = core.run_probe(model(domain), tokens, domain.fallback_eps, update).as_map()
    bar.empty()
    return result


@st.cache_data(show_spinner=False, max_entries=64)
def exact_probe(domain_key: str, grid: str, eps: float, version: str) -> ProbeView:
    """The exact probe of ``grid`` (pruned when ``eps > 0``), with a progress bar while it runs."""
    domain = get_domain(domain_key)
    tokens = core.tokens_of(grid, domain, core.app_device())
    bar, update = _probe_bar("Exact probe" if eps == 0 else f"Pruned probe (eps={eps:g})")
    result = core.run_probe(model(domain), tokens, eps, update)
    bar.empty()
    return result


def iterations(domain: Domain) -> int:
    """The iterations of the domain's model: above 1 for a recurrent model (0 when it cannot be loaded)."""
    try:
        return iterations_of(model(domain))
    except USER_ERRORS:
        return 0


@st.cache_data(show_spinner=False, max_entries=256)
def iteration_view(domain_key: str, grid: str, version: str) -> IterationView:
    """Every iteration's marginals of ``grid`` under a recurrent model, from one forward pass (then a slider
    over the iterations only indexes this)."""
    domain = get_domain(domain_key)
    return core.iteration_view(model(domain), core.tokens_of(grid, domain, core.app_device()))


@st.cache_data(show_spinner=False, max_entries=64)
def probe_at_iteration(domain_key: str, grid: str, iterations: int, eps: float, version: str) -> ProbeView:
    """The exact probe of ``grid`` (pruned when ``eps > 0``) with the model stopped after ``iterations``."""
    domain = get_domain(domain_key)
    tokens = core.tokens_of(grid, domain, core.app_device())
    bar, update = _probe_bar(f"Exact probe at iteration {iterations}")
    result = core.probe_at_iteration(model(domain), tokens, iterations, eps, update)
    bar.empty()
    return result


@st.cache_data(show_spinner=False, max_entries=128)
def decode_trace(domain_key: str, grid: str, solution: str | None, name: str, params: tuple, temperature: float,
                 seed: int, version: str, attempts: int = 1) -> traces.Trace:
    """Every frame of decoding ``grid`` with strategy ``name`` (``params``: sorted ``(key, value)`` pairs; up to
    ``attempts`` decodes while the result breaks the rules, see :func:`traces.decode_trace`), shared by every
    session (the cache is the server's), with a progress bar while it runs. Each update of the bar is a point
    where Streamlit stops the run of a session that was closed or asked for a rerun, so a decode nobody waits
    for does not run on."""
    domain = get_domain(domain_key)
    bar = st.progress(0.0, text=f"Decoding with {name} ...")

    def update(filled: int, masked: int, decode: int = 1) -> None:
        again = f", decode {decode} of at most {attempts} (the ones before broke a rule)" if decode > 1 else ""
        bar.progress(min(filled / max(masked, 1), 1.0), text=f"Decoding with {name}{again}: {filled} / {masked} filled")

    trace = traces.decode_trace(model(domain), estimator(domain), domain, grid, solution, name, dict(params),
                              temperature, seed, selector(domain), update, attempts)
    bar.empty()
    return trace


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


@st.cache_data(show_spinner=False, max_entries=256)
def what_if(domain_key: str, grid: str, cell: int, value: int, version: str) -> WhatIf:
    domain = get_domain(domain_key)
    return core.what_if(model(domain), core.tokens_of(grid, domain, core.app_device()), cell, value)


@st.cache_data(show_spinner=False, max_entries=512)
def _contradicts(domain_key: str, digits: tuple, cell: int, digit: int) -> bool:
    return domains.clamp_contradicts(get_domain(domain_key), digits, cell, digit)


def clamp_contradicts(domain: Domain, pz: Puzzle, cell: int, digit: int) -> bool:
    """Whether ``cell = digit`` leaves ``pz`` with no solution (cached)."""
    return _contradicts(domain.key, pz.digits, cell, digit)


@st.cache_data(show_spinner=False, max_entries=512)
def puzzle(domain_key: str, text: str, name: str = "", several: bool = False) -> Puzzle:
    """Parse and validate a puzzle (raises a SudokuError naming the problem); ``several``: a grid with more
    than one solution is taken (its ``solution`` is None) even where the domain asks for one."""
    return make_puzzle(get_domain(domain_key), text, name, several)


@st.cache_data(show_spinner="Generating a puzzle ...", max_entries=128)
def generated(domain_key: str, clues: int, seed: int) -> Puzzle:
    return generate(get_domain(domain_key), clues, seed)


@st.cache_data(show_spinner=False, max_entries=16)
def uploaded(name: str, data: bytes, domain_key: str) -> list:
    return read_upload(name, data, get_domain(domain_key))


@st.cache_data(show_spinner=False)
def presets() -> dict:
    return load_presets()


@st.cache_data(show_spinner=False)
def protein_presets(key: str = "protein") -> list:
    path = sequences.PRESET_FILES.get(key, sequences.PROTEIN_PRESETS_PATH)
    return sequences.load_protein_presets(path, key if key in sequences.PRESET_FILES else "protein")


def max_residues(domain: Domain) -> int:
    """The longest sequence ``domain``'s model takes (the parser's limit when the model cannot be loaded: the
    page then says why)."""
    try:
        return int(model(domain).max_len)
    except USER_ERRORS:
        return domain.length or protein.MAX_INPUT_LENGTH


def protein_puzzle(domain: Domain, text: str, masking: sequences.Masking, name: str = "") -> tuple[Puzzle, int, bool]:
    """The masked state of the first sequence in ``text``, how many records the text has, and whether it looks
    like DNA (raises ProteinInputError naming a bad letter and its position, a sequence longer than the model
    takes, or a bad masking)."""
    return _protein_puzzle(domain.key, text, masking, name, max_residues(domain))


@st.cache_data(show_spinner=False, max_entries=512)
def _protein_puzzle(domain_key: str, text: str, masking: sequences.Masking, name: str,
                    limit: int) -> tuple[Puzzle, int, bool]:
    domain = get_domain(domain_key)
    chains = getattr(domain, "csv_records", lambda text: None)(text)  # antibodies: name,vh,vl as the CLI reads it
    record, count = (chains[0], len(chains)) if chains else sequences.first_record(text)
    sequences.check_length(record, limit)
    if hasattr(domain, "read"):  # antibodies: one variable domain, or the reason it is not (and the protein domain)
        domain.read(record.text(), record.name)
    pz = sequences.protein_puzzle(domain, record, masking, name or record.name)
    return pz, count, sequences.looks_like_dna(record)


def state_puzzle(domain: Domain, text: str, masking: sequences.Masking, name: str = "") -> Puzzle:
    """The masked state of ``text`` on a sequence domain that is not a protein (:func:`sequences.state_puzzle`)."""
    return _state_puzzle(domain.key, text, masking, name, max_residues(domain))


@st.cache_data(show_spinner=False, max_entries=512)
def _state_puzzle(domain_key: str, text: str, masking: sequences.Masking, name: str, limit: int) -> Puzzle:
    return sequences.state_puzzle(get_domain(domain_key), text, masking, name, limit)


@st.cache_data(show_spinner=False, max_entries=16)
def states_upload(name: str, data: bytes, domain_key: str) -> list:
    return sequences.read_states_upload(name, data, get_domain(domain_key))


@st.cache_data(show_spinner=False, max_entries=16)
def fasta_upload(name: str, data: bytes, domain_key: str) -> tuple[list, int]:
    return sequences.read_fasta_upload(name, data, get_domain(domain_key))


def bench_rows() -> benchmarks.BenchRows:
    """The sweep rows under ``MI_LENS_BENCHMARKS`` (default ``assets/benchmarks``), re-read every 30 s."""
    return _bench_rows(str(benchmarks.bench_dir()))


@st.cache_data(show_spinner=False, ttl=30)
def _bench_rows(directory: str) -> benchmarks.BenchRows:
    return benchmarks.load_rows(Path(directory))


@st.cache_data(show_spinner=False, ttl=30)
def default_sudoku_sha() -> str | None:
    """sha256 of the default Sudoku model's weights (benchmark rows that record it were measured on it)."""
    path = domains.get_domain("sudoku").model_path()
    return file_sha256(path) if path is not None and path.is_file() else None


def compare(pred, exact, masked, k: int = 20) -> dict:
    """Spearman, Pearson, MAE, top-k overlap and the largest difference of two MI maps (cheap; not cached)."""
    return core.compare_maps(pred, exact, masked, k)


def strategy_names(domain: Domain | None = None) -> list[str]:
    """Every registered strategy, less those ``domain`` cannot run (see :func:`unavailable_strategies`)."""
    hidden = unavailable_strategies(domain) if domain is not None else {}
    return [name for name in STRATEGIES if name not in hidden]


def strategy_fields(name: str, domain: Domain | None = None, positions: int | None = None) -> list[core.ParamField]:
    """Strategy ``name``'s parameters at ``domain``'s defaults, step counts below ``positions`` (the input's)."""
    return core.strategy_fields(name, domain.strategy_defaults if domain is not None else (), positions)


def strategy_param_names(name: str) -> set[str]:
    """The names of strategy ``name``'s user parameters (those the app supplies itself included)."""
    return set(strategy_params(name))


def param_default(name: str, key: str):
    """The default of strategy ``name``'s parameter ``key``."""
    return next(f.default for f in core.strategy_fields(name) if f.name == key)


def missing_mi_source(name: str, domain: Domain) -> str | None:
    """Why strategy ``name`` cannot run on ``domain`` for want of an MI source, or None."""
    if not traces.reads_mi_source(name) or domain.exact_model or domain.probe_fallback or has_estimator(domain):
        return None
    return (f"strategy {name} reads MI from the neural estimator, which is not usable here "
            f"({estimator_problem(domain)}). Pick another strategy, or the 4x4 domain, whose exact MI needs none.")


def probe_fallback_note(name: str, domain: Domain) -> str | None:
    """A note when strategy ``name`` reads the pruned exact probe each step for want of an estimator, or None."""
    if not traces.reads_mi_source(name) or domain.exact_model or not domain.probe_fallback or has_estimator(domain):
        return None
    return (f"No usable MI estimator ({estimator_problem(domain)}): {name} reads the exact probe pruned at "
            f"eps={domain.fallback_eps:g} at every step; its passes are counted as + extra.")


def own_check(domain: Domain, pz: Puzzle, final, passes: int) -> tuple[bool, str] | None:
    """Whether ``domain``'s metric calls the decoded ``final`` right, and its other scores as text, for a domain
    whose metric needs no reference (``needs_solution = False``); None for the others (a grid is checked
    against its solution, a protein compared with its native sequence)."""
    if domain.layout == "grid" or domain.metric is None or getattr(domain.metric, "needs_solution", True):
        return None
    metric = domain.metric([None], None, domain.mask_id)
    metric.update(0, np.asarray(pz.digits), np.asarray(final), int(passes))
    result = metric.compute()
    def shown(value) -> str:  # one sequence's share (a float) is 0 or 1: a yes or no; a count stays a number
        return {0.0: "no", 1.0: "yes"}[value] if isinstance(value, float) and value in (0.0, 1.0) else f"{value:g}"

    others = [f"{key.replace('_', ' ')}: {shown(value)}" for key, value in result.items()
              if key not in ("n", "accuracy") and "passes" not in key and isinstance(value, (int, float))]
    return bool(result["accuracy"] == 1.0), ", ".join(others) or f"accuracy {result['accuracy']:g}"


def strategy_plain(name: str, domain: Domain | None = None) -> str:
    """What strategy ``name`` does, in plain words (its docstring when no plain text is written), in
    ``domain``'s own nouns."""
    text = texts.STRATEGY_PLAIN.get(name) or strategy_doc(name)
    return texts.worded(text, domain) if domain is not None else text


def strategy_doc(name: str) -> str:
    """The first paragraph of a strategy's docstring (the technical form)."""
    doc = (STRATEGIES[name].__doc__ or "").strip()
    return " ".join(doc.split("\n\n")[0].split())


_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[/\\][\w.@+~-]+){2,}")


def no_paths(text: str) -> str:
    """``text`` with every absolute file path shortened to its file name: the sidebar names files, it does not
    show where the server keeps them (a home directory, the Hugging Face cache)."""
    return _PATH.sub(lambda m: re.split(r"[/\\]", m.group(0))[-1], text)


def attempt(fn: Callable, *args, what: str = "", **kwargs):
    """Call ``fn``; on a user error (bad input, a missing file) show it in the page and return None."""
    try:
        return fn(*args, **kwargs)
    except USER_ERRORS as err:
        show_error(err, what)
        return None


INPUT_PROBLEM = "_input_problem"  # session key: why this run's sidebar input cannot be used (pages repeat it)
INPUT_PROMPT = "_input_prompt"  # session key: the step the sidebar's input still needs (nothing masked yet)
INPUT_FIX = "_input_fix"  # session key: the sidebar field to correct, where it is not the input itself (the mask)


def attempt_input(fn: Callable, *args, what: str, subject: str = ""):
    """:func:`attempt` for the sidebar's input: the error shows in the sidebar and is kept for the page's main
    area (at 768 px the sidebar's error can sit below the fold)."""
    try:
        return fn(*args)
    except sequences.NothingMasked as err:  # a step to take, not a mistake: a prompt, once on the page
        st.session_state[INPUT_PROMPT] = str(err)
        return None
    except USER_ERRORS as err:
        if isinstance(err, sequences.MaskSpecError):  # the mask field's, not the sequence's ("Correct the sequence")
            what, subject = "These mask positions cannot be used", "mask positions"
            st.session_state[INPUT_FIX] = subject
        st.session_state[INPUT_PROBLEM] = error_text(err, what, subject)
        with st.sidebar:
            show_error(err, what, subject)
        return None


def error_text(err: Exception, what: str = "", subject: str = "") -> str:
    """``what: message``, the message in the app's words, less a ``subject: `` it starts with (``what`` names
    it already)."""
    message = texts.app_wording(str(err)) if err.args and isinstance(err.args[0], str) else str(err)
    message = message.removeprefix(f"{subject}: ") if subject else message
    return f"{what}: {message}" if what else message


def show_error(err: Exception, what: str = "", subject: str = "") -> None:
    st.error(error_text(err, what, subject), icon=":material/report:" if isinstance(err, ModelFileError) else ":material/error:")
