"""Streamlit's side of the seam: models load once per process (``st.cache_resource``), results are cached by
input (``st.cache_data``), and user errors become a message in the page, never a traceback.

Cached results are keyed by plain values (domain key, grid string, parameters) and by ``version``, the
weights files' paths and modification times, so replacing a model file invalidates what it produced.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import streamlit as st

from mi_core.decoding import STRATEGIES, strategy_params
from mi_core.domain import resolve_path
from mi_core.domains import protein
from mi_core.domains.protein.mdm import ProteinMDM
from mi_core.io import file_sha256
from mi_core.models.base import ModelFileError
from mi_core.models.iterations import iterations_of
from mi_lens_app import benchmarks, core, domains, sequences, texts, traces
from mi_lens_app import selector as order
from mi_lens_app.core import IterationView, MIMap, ProbeView, WhatIf
from mi_lens_app.domains import (
    Domain,
    Puzzle,
    generate,
    get_domain,
    load_presets,
    make_puzzle,
    read_upload,
)

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
    """Whether the domain's pages run the small protein MDM shipped, trained on CATH (not ESM-C, not AntiBERTy, not
    a user's own MDM named by ``MI_LENS_PROTEIN_MODEL``, of which the app knows nothing). False when the model cannot
    be loaded: the page says why where it needs the model."""
    try:
        loaded = model(domain)
    except USER_ERRORS:
        return False
    if not isinstance(loaded, ProteinMDM) or domain.model_fallback is None:
        return False
    path = getattr(loaded, "weights_path", None)
    return path is not None and Path(path).resolve() == resolve_path(domain.model_fallback).resolve()


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


def default_sudoku_sha() -> str | None:
    """sha256 of the weights of the Sudoku model the app runs (the shipped default, or ``MI_LENS_SUDOKU_MODEL``'s):
    benchmark rows that record it were measured on it. Not cached here: ``file_sha256`` keeps it per path, time and
    size (cached without its path, a server's sha outlived a change of the model file's variable)."""
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
