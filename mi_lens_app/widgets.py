"""Input widgets the pages share. Their state lives in the URL (``bind="query-params"``), so a link reopens
the same view: ``?domain=...&src=...&preset=...&cell=r3c5&a=eb&a_eb_gamma=0.5``.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import streamlit as st

from mi_core.domain import PLUGIN_DOMAINS, load_builtin
from mi_lens_app import links, protein_figures, support, texts
from mi_lens_app.core import STEP_COUNTS, ParamField, param_range
from mi_lens_app.domains import DOMAINS, Domain, Puzzle, model_choices, with_model
from mi_lens_app.figures import SCALES, clicked_cell, clicked_pair
from mi_lens_app.sequence_widgets import sequence_picker, window_picker  # noqa: F401  (pages call window_picker)

SOURCES = ("preset", "paste", "upload", "generate")
links.choices("domain", lambda: [d.short for d in DOMAINS.values()])
links.choices("scale", lambda: list(SCALES))
links.choices("src", lambda: list(SOURCES))
BIND = links.BIND
DEFAULT_SCALE = "percentile"


def domain_by_short(short: str) -> Domain | None:
    """The registered domain whose app button reads ``short`` (looked up now: a domain may register later)."""
    return next((d for d in DOMAINS.values() if d.short == short), None)


def domain_picker() -> Domain:
    st.session_state["_pickers_drawn"] = True  # this page's URL holds the whole shared state (links.remember)
    by_short = {d.short: d for d in DOMAINS.values()}
    short = st.sidebar.radio("Domain", list(by_short), key="domain", bind=BIND, horizontal=True,
                             on_change=_on_domain_switch)
    domain = by_short[short]
    st.sidebar.caption(domain.label)
    if domain.key == "protein" and support.antibody_model_installed() and _small_protein_mdm(domain):
        st.sidebar.info("This small protein MDM reads any protein but knows little more than amino-acid "
                        "composition, so its maps are faint. For maps with real signal pick **antibody**: "
                        "AntiBERTy (Ruffolo, Gray and Sulam 2021), a model of 558M antibody sequences.",
                        icon=":material/info:")
    return domain


def _small_protein_mdm(domain: Domain) -> bool:
    try:
        return support.runs_small_protein_mdm(domain)
    except support.USER_ERRORS:  # no model to load: the page says so itself
        return False


def _on_domain_switch() -> None:
    """The new domain opens on its own first preset and its strategies' defaults. The grid domains share the preset
    picker's key, as do the sequence domains': another domain's choice is none of this one's options, and taken
    from the session or the address it would be called a link's that was not understood."""
    domain = domain_by_short(st.session_state.get("domain") or "")
    if domain is not None:
        if domain.layout != "sequence":
            names = [p.name for p in support.presets().get(domain.key, [])]
        elif texts.speaks_protein(domain):
            names = [p.name for p in support.protein_presets(domain.key)]
        else:
            names = [name for name, _ in domain.examples]
        key = "ppreset" if domain.layout == "sequence" else "preset"
        if names:  # its first preset, the picker's default: the address then names none
            st.session_state[key] = names[0]
            links.set_by_click(key)  # the address's old name is the last domain's, not a link's
    _restart_strategy_params()


def _restart_strategy_params() -> None:
    """The strategies' parameters start again at the new domain's defaults (9x9's mi gamma 0.6 fills one residue
    a pass on an antibody). A step count is dropped instead: its default depends on the input's positions, not
    known here (the widget takes it on the next run: mask_predict's 10 kept on a bracket word of 8)."""
    domain = domain_by_short(st.session_state.get("domain") or "")
    for side in ("a", "b"):
        name = st.session_state.get(side)
        for field in support.strategy_fields(name, domain) if name and domain else ():
            key = f"{side}_{name}_{field.name}"
            if key in st.session_state and field.name in STEP_COUNTS:
                del st.session_state[key]
                links.set_by_click(key)
            elif key in st.session_state and field.default is not None:
                st.session_state[key] = field.default
                links.set_by_click(key)


def puzzle_picker(domain: Domain, several: bool = False) -> Puzzle | None:
    """Sidebar widgets choosing a puzzle (or a protein); shows what is wrong with a bad one and returns None then.
    ``several``: a grid with more than one solution (the empty grid) is taken too, with a note (the map pages)."""
    if domain.layout == "sequence":
        return sequence_picker(domain)
    side = st.sidebar
    src = side.radio("Puzzle from", SOURCES, key="src", bind=BIND, horizontal=True)
    if src == "preset":
        return _preset(domain, several)
    if src == "paste":
        return _pasted(domain, several)
    if src == "upload":
        return _uploaded(domain, several)
    return _generated(domain)


SEVERAL_NOTE = ("This grid has several solutions: the maps show how the model spreads its belief over them (no cell "
                "is decided, so the MI is the dependence between open choices). Decoding and the benchmarks score "
                "against one solution and need a puzzle that has exactly one.")


def _checked(domain: Domain, text: str, name: str, several: bool = False) -> Puzzle | None:
    pz = support.attempt_input(support.puzzle, domain.key, text, name, several, what="This puzzle cannot be used")
    if pz is not None and several and domain.require_unique and pz.solution is None:
        st.info(SEVERAL_NOTE, icon=":material/call_split:")
    if pz is not None:
        givens = int(pz.givens.sum())
        note = ("unique solution" if pz.solution is not None
                else "several solutions (any grid that keeps the rules is right)")
        st.sidebar.caption(f"{givens} givens, {domain.cells - givens} blanks; {note}.")
    if pz is not None and not len(pz.blanks):  # a solved grid: no MI, nothing to decode or clamp
        st.session_state[support.INPUT_PROMPT] = "this grid has no blank cell: blank some with a dot or 0"
        return None
    return pz


def _preset(domain: Domain, several: bool = False) -> Puzzle | None:
    presets = support.presets().get(domain.key, [])
    if not presets:
        st.sidebar.warning("No presets shipped (assets/examples/sudoku_presets.json is missing).")
        return None
    names = [p.name for p in presets]
    name = st.sidebar.selectbox("Preset (a showcase, then easy to very hard)", names, key="preset", bind=BIND)
    chosen = presets[names.index(name)]
    return _checked(domain, chosen.puzzle, chosen.name, several)


def _pasted(domain: Domain, several: bool = False) -> Puzzle | None:
    n = domain.geometry.n
    bind, too_long = links.text_bind("puzzle")
    text = st.sidebar.text_area(f"Puzzle: {domain.cells} characters, digits 1-{n}, '.' or '0' for blanks",
                                key="puzzle", bind=bind, height=90)
    if too_long:
        st.sidebar.warning(too_long, icon=":material/link_off:")
    if not text.strip():
        st.sidebar.info("Paste a puzzle to start, or pick a preset.")
        return None
    return _checked(domain, text, "pasted", several)


def _uploaded(domain: Domain, several: bool = False) -> Puzzle | None:
    side = st.sidebar
    file = side.file_uploader("Puzzle file (.txt, one a line, or .csv with a 'puzzle' column)", type=["txt", "csv"],
                              key="upload", max_upload_size=5)
    if file is None:
        side.info("Upload a puzzle file; uploaded puzzles stay out of the link until you copy one into it.")
        return None
    records = support.attempt_input(support.uploaded, file.name, file.getvalue(), domain.key,
                                    what="Cannot read the file")
    if not records:
        return None
    record = _pick_row(records, side)
    if record is None:
        return None
    side.button("Put this puzzle in the link", on_click=links.put_in_link, args=("src", "paste", "puzzle", record.puzzle),
                help="switches to 'paste' with this puzzle, so the page's URL reopens it")
    return _checked(domain, record.puzzle, f"{file.name}, line {record.line}", several)


MAX_PICKER_ROWS = 200  # rows a file's picker lists; the others are reached by their line number


def _pick_row(records: list, side):
    """A row of an uploaded file: from a list of its first :data:`MAX_PICKER_ROWS`, or by line number (a
    64,000-row picker is slow to open and to scroll)."""
    shown = records[:MAX_PICKER_ROWS]
    more = len(records) > len(shown)
    line = 0
    if more:
        last = records[-1].line
        line = side.number_input(f"Go to line (1-{last}; 0: pick from the list)", min_value=0, max_value=last,
                                 value=0, step=1, key="upload_line")
    if line:
        found = next((r for r in records if r.line == line), None)
        if found is None:
            side.warning(f"Line {line} holds no puzzle of this size.")
        return found
    label = f"Puzzle ({len(records)} in the file" + (f"; the first {len(shown)} listed)" if more else ")")
    row = side.selectbox(label, range(len(shown)), key="upload_row",
                         format_func=lambda i: f"line {shown[i].line}: {shown[i].puzzle[:18]}...")
    return shown[row]


def _generated(domain: Domain) -> Puzzle | None:
    lo, hi = domain.clue_range
    links.clamp_number("clues", lo, hi, integer=True)
    links.clamp_number("seed", 0, links.APP_SEED_MAX, integer=True)
    clues = st.sidebar.slider("Clues", lo, hi, value=min(max(30, lo), hi), key="clues", bind=links.bound("clues"))
    seed = st.sidebar.number_input("Seed", min_value=0, max_value=links.APP_SEED_MAX, value=0, step=1, key="seed",
                                   bind=links.bound("seed"), help=links.SEED_HELP)
    return support.attempt_input(support.generated, domain.key, int(clues), int(seed), what="Cannot generate")


def most_uncertain(entropy: np.ndarray, blanks: list[int]) -> int | None:
    """The blank with the largest entropy (the first on a tie), or None without blanks: where a map or a
    clamp shows something, unlike a cell the model is already sure of."""
    if not blanks:
        return None
    values = np.asarray(entropy, float)[blanks]
    return blanks[int(np.argmax(values))]


def cell_picker(domain: Domain, puzzle: Puzzle, *, key: str = "cell", blanks_only: bool = False,
                label: str | None = None, where=None, default: int | None = None) -> int:
    """A selectbox over cells (shown as r3c5, or a residue as _17, in the URL too); clicks on grids with
    :func:`click_to_cell` set it. It opens on ``default`` (e.g. :func:`most_uncertain`), else the first blank.
    A value of another puzzle or domain (``r1c2`` after a switch to a protein) is dropped."""
    label = label or f"Selected {domain.nouns[0]}"
    where = where or st
    options = puzzle.blanks if blanks_only else list(range(puzzle.length))
    if not options:
        options = list(range(puzzle.length))
    if default is None or default not in options:
        default = puzzle.blanks[0] if puzzle.blanks and puzzle.blanks[0] in options else options[0]
    default = options.index(default)
    owner = (puzzle.domain, puzzle.text)
    before = st.session_state.get(f"_{key}_of")
    if before is None and links.arrived(key) is not None:
        _picked(key)  # a link's cell is chosen as a click's is
    if before not in (None, owner) and key in st.session_state:
        # another puzzle, mask or domain: a cell the visitor picked (or a link named) still open in it stays
        # selected (same domain); any other takes the new default, which a default left in place is not: kept, it
        # would go into the address as if picked. Written, not deleted: a deleted value leaves the box in the
        # browser showing the old cell while the page draws the default
        kept = (before[0] == puzzle.domain and st.session_state[key] in options
                and st.session_state.get(f"_{key}_picked", False))
        if not kept:
            st.session_state[key] = options[default]
            st.session_state[f"_{key}_picked"] = False
        st.session_state.pop("pair", None)  # the clicked pair belonged to the other state
    st.session_state[f"_{key}_of"] = owner
    if key in st.session_state and st.session_state[key] not in options:
        st.session_state[key] = options[default]
        st.session_state[f"_{key}_picked"] = False
    links.formatter(key, puzzle.label)
    links.explain(key, partial(_not_an_option, puzzle, set(options), domain))
    return where.selectbox(label, options, index=default, format_func=puzzle.label, key=key, bind=BIND,
                           on_change=_picked, args=(key,),
                           help=None if domain.layout == "grid" else _how_named(puzzle, domain.nouns[0]))


def _picked(key: str) -> None:
    """The visitor chose cell picker ``key``'s cell (a click, the box, a link): a new puzzle keeps it if it can."""
    st.session_state[f"_{key}_picked"] = True


def _how_named(puzzle: Puzzle, noun: str) -> str:
    """How a sequence's positions are named, with this sequence's own examples."""
    masked = next((c for c in range(puzzle.length) if not puzzle.givens[c]), None)
    given = next((c for c in range(puzzle.length) if puzzle.givens[c]), None)
    examples = ([f"{puzzle.label(masked)}: {noun} {masked + 1}, masked"] if masked is not None else []) + (
        [f"{puzzle.label(given)}: {noun} {given + 1}, given as {puzzle.label(given)[0]}"] if given is not None else [])
    return f"a {noun} by its letter and position, _ for a masked one ({'; '.join(examples)})"


def _not_an_option(puzzle: Puzzle, options: set[int], domain: Domain, text: str) -> str | None:
    """Why a link's cell is not in the picker: it names one the puzzle gives (the picker lists the blanks)."""
    named = [c for c in range(puzzle.length) if puzzle.label(c) == text.strip()]
    if named and named[0] not in options:
        return f"a given {domain.nouns[0]}: pick a blank one" if domain.layout == "grid" else \
            f"not a masked {domain.nouns[0]}: pick a masked one"
    return None


def scale_picker(key: str = "scale") -> str:
    """Colours of the MI maps: linear, log, or percentile (most maps are a few strong pairs among many weak
    ones, which a linear scale draws all dark). The one picker of every page that draws MI (the maps, exact
    versus estimated, what-if, the protein views); the figure builders apply it with ``figures.scaled``.
    It opens on percentile: linear drew the 9x9 map nearly all dark. Difference maps, coloured on both sides of
    0, stay linear."""
    links.formatter(key, str)
    return st.segmented_control("Heatmap colours", list(SCALES), key=key, bind=BIND, default=DEFAULT_SCALE,
                                help="percentile: each pair's rank among the map's pairs (the default: it shows "
                                     "the structure of maps with a few strong pairs); linear: MI as is; log: "
                                     "orders of magnitude. Difference maps stay linear.") or DEFAULT_SCALE


def click_to_pair(chart_key: str, cell_key: str, allowed: list[int]):
    """An ``on_select`` callback for a heatmap with a click layer: remembers the clicked pair (``pair``) and
    selects its row's cell (or its column's, when the row's is not a blank)."""

    def callback() -> None:
        state = st.session_state.get(chart_key)
        pair = clicked_pair(state.get("selection") if state else None)
        if pair is None:
            return
        st.session_state["pair"] = pair
        cell = next((c for c in pair if c in allowed), None)
        if cell is not None:
            st.session_state[cell_key] = cell
            _picked(cell_key)
            links.set_by_click(cell_key)

    return callback


def click_to_cell(chart_key: str, cell_key: str, cells: int, allowed: list[int] | None = None):
    """An ``on_select`` callback for a grid figure that selects the clicked cell."""

    def callback() -> None:
        state = st.session_state.get(chart_key)
        selection = state.get("selection") if state else None
        cell = clicked_cell(selection, cells)
        if cell is not None and (allowed is None or cell in allowed):
            st.session_state[cell_key] = cell
            _picked(cell_key)
            links.set_by_click(cell_key)

    return callback


def _param_widget(side: str, name: str, field: ParamField):
    """A widget for one strategy parameter; numbers have a range (see :func:`core.param_range`), and a link
    with a value outside it is clamped with a note, so no link can ask for unbounded work."""
    key = f"{side}_{name}_{field.name}"
    label = field.name
    if field.kind == "bool":
        return st.toggle(label, value=bool(field.default), key=key, bind=BIND)
    lo, hi = param_range(name, field)
    if field.kind == "int":
        links.clamp_number(key, lo, hi, integer=True)
        value = None if field.default is None else int(field.default)
        return st.number_input(label, value=value, min_value=int(lo), max_value=int(hi), step=1, key=key, bind=links.bound(key),
                               placeholder="none" if field.optional else None, help=f"{int(lo)} to {int(hi)}")
    if field.kind == "float":
        links.clamp_number(key, lo, hi)
        value = None if field.default is None else float(field.default)
        step = 0.01 if (value or 0) < 1 else 0.1
        return st.number_input(label, value=value, min_value=float(lo), max_value=float(hi), step=step, format="%g",
                               key=key, bind=links.bound(key), help=f"{lo:g} to {hi:g}")
    if field.choices:
        index = field.choices.index(field.default) if field.default in field.choices else 0
        return st.selectbox(label, field.choices, index=index, key=key, bind=BIND)
    return st.text_input(label, value=field.default or "", key=key, bind=BIND) or None


def strategy_picker(side: str, default: str, domain: Domain | None = None, brief: bool = False,
                    positions: int | None = None) -> tuple[str, dict]:
    """A strategy from the registry (less those ``domain`` cannot run) and widgets for its parameters, a step
    count's default below ``positions`` (the input's); returns ``(name, params)``. ``brief`` (presenting, in a pop-up on a 768-px screen): the description folds
    away with the technical one, so the settings below it stay in view."""
    names = support.strategy_names(domain)
    links.explain(side, lambda raw: links.one_of(names))
    name = st.selectbox(f"Strategy {side.upper()}", names, index=names.index(default) if default in names else 0,
                        key=side, bind=BIND, help="every strategy in mi_core.decoding's registry")
    if not brief:
        st.caption(support.strategy_plain(name, domain))
    with st.expander("What it does" if brief else "Technical description"):
        if brief:
            st.caption(support.strategy_plain(name, domain))
        st.caption(support.strategy_doc(name))
    if domain is not None and support.uses_selector(name):
        st.caption(f"The app runs the order selector `{domain.selector_path().name}` "
                   f"(set {domain.selector_env} to use another).")
    params = {}
    fields = support.strategy_fields(name, domain, positions)
    cols = st.columns(max(1, min(2, len(fields)))) if fields else []  # two a row: labels stay whole at 800 px
    for i, field in enumerate(fields):
        with cols[i % len(cols)]:
            value = _param_widget(side, name, field)
        if value is not None or field.optional:
            params[field.name] = value
    return name, params


def _step_to(key: str, value: int) -> None:
    st.session_state[key] = value
    links.set_by_click(key)


def _link_int(key: str) -> int:
    """The link's whole number ``key`` (0 when it has none, or not a number in range): what a slider bound to it
    will show on this first run, or on a run of the browser's Back or Forward, before it is drawn."""
    try:
        return max(int(st.query_params.get(key, 0)), 0)
    except ValueError:
        return 0


def _step_by(key: str, delta: int, last: int) -> None:
    """One frame on or back from the frame shown when the button was clicked (the slider's value then: on a
    link's first run, the frame the link asked for, which the buttons could not know yet)."""
    st.session_state[key] = min(max(int(st.session_state.get(key, 0) or 0) + delta, 0), last)
    links.set_by_click(key)


def frame_controls(count: int, key: str = "step", compact: bool = False) -> int:
    """Rewind / previous / next / end buttons (arrow keys step) and a slider over ``count`` frames; ``compact``
    (presentation mode): the slider in the buttons' row, so the grids start higher."""
    last = max(count - 1, 0)
    # the frame the slider will show: the URL's on a link's first run and on Back or Forward (until the slider is
    # drawn, the session holds the frame of the run left), else the session's
    shown = _link_int(key) if key not in st.session_state or links.history_navigation() else st.session_state[key]
    current = min(int(shown or 0), last)
    # the buttons in a row at their own widths (no label cut short), spread over the page's width outside compact
    # mode: as four columns they stacked into four rows on a phone, and "next" sat a screen above the grids; the
    # slider gets its own row, except in compact mode, where it takes the rest of the buttons' row
    row = st.container(horizontal=True, vertical_alignment="center",
                       horizontal_alignment="left" if compact else "distribute", gap="xsmall")
    cols = [row] * 4
    cols[0].button("start", key=f"{key}_first", on_click=_step_to, args=(key, 0), help="back to the puzzle",
                   icon=":material/first_page:", disabled=current == 0)
    cols[1].button("prev", key=f"{key}_prev", on_click=_step_by, args=(key, -1, last),
                   icon=":material/chevron_left:", shortcut="Left", disabled=current == 0,
                   help="previous step (left arrow)")
    cols[2].button("next", key=f"{key}_next", on_click=_step_by, args=(key, 1, last),
                   icon=":material/chevron_right:", shortcut="Right", disabled=current >= last,
                   help="next step (right arrow)")
    cols[3].button("end", key=f"{key}_last", on_click=_step_to, args=(key, last), help="the final grid",
                   icon=":material/last_page:", disabled=current >= last)
    if key in st.session_state and st.session_state[key] != current:  # a frame past the end of a shorter run
        st.session_state[key] = current
    links.clamp_number(key, 0, max(last, 1), integer=True)
    where = row if compact else st
    return where.slider("Step", 0, max(last, 1), key=key, bind=links.bound(key), disabled=last == 0,
                        label_visibility="collapsed", width="stretch")


def model_status(domain: Domain) -> None:
    """A sidebar note naming the model (and why a loader fell back to another) and the MI source."""
    path = domain.model_path()
    lines = []
    loaded = path is None or path.is_file() or domain.model_fallback is not None  # a spec may name other weights
    if loaded:
        try:
            lines.append(support.model_info(domain))
        except support.USER_ERRORS as err:  # the page shows the error itself
            lines.append(f"Model: **not loaded** ({err})")
            loaded = False
    else:
        lines.append(f"Model: `{path.name}` **missing**")
    est = domain.estimator_path()
    if est is not None:
        usable = path is not None and loaded and support.has_estimator(domain)
        lines.append(f"MI estimator: `{est.name}`" if usable else
                     f"MI estimator: not usable, fast maps use the exact probe pruned at eps={domain.fallback_eps:g}")
    sel = domain.selector_path()
    if sel is not None:
        usable = path is not None and loaded and support.selector(domain) is not None
        lines.append(f"Order selector: `{sel.name}`" if usable else "Order selector: not usable (`learned` is hidden)")
    st.sidebar.caption(support.no_paths("  \n".join(lines)))


def weak_pairs_note(mi: np.ndarray, masked: np.ndarray, scale: str) -> None:
    """Under percentile colours, a caption when a map mixes strong pairs with pairs of almost no MI: the ranking
    spreads those over the scale's lower part, where they look like dependence (a bracket word's unmatched
    blanks, 0.01 nats, came out teal beside its matched pairs' 0.8)."""
    idx = np.flatnonzero(masked)
    pairs = np.asarray(mi)[np.ix_(idx, idx)][np.triu_indices(len(idx), 1)]
    weak = int((pairs < texts.WEAK_MI).sum())
    if scale == "percentile" and weak and pairs.max() >= texts.WEAK_MI:
        st.caption(f"{weak} of the {len(pairs)} pairs share under {texts.WEAK_MI:g} nats, yet percentile colours "
                   "rank them over the lower part of the scale; linear colours show how small they are.")


def plugin_domains() -> list[tuple[Domain, str]]:
    """(domain, which module registered it and what named that module) for each domain a plugin brought."""
    load_builtin()
    return [(DOMAINS[key], f"the module `{module}`, named by {where}")
            for key, (module, where) in tuple(PLUGIN_DOMAINS.items()) if key in DOMAINS]


def no_input(domain: Domain, purpose: str = "") -> None:
    """The main area's lines when the sidebar gives no usable input: what is wrong with it (repeated from the
    sidebar), then what to do (``purpose``: e.g. ``to see its MI map``)."""
    prompt = st.session_state.get(support.INPUT_PROMPT)
    if prompt:  # e.g. a pasted sequence with nothing masked yet
        st.info(f"{prompt[0].upper()}{prompt[1:]} in the sidebar" + (f" {purpose}" if purpose else "") + ".")
        return
    problem = st.session_state.get(support.INPUT_PROBLEM)
    if problem:
        st.error(problem, icon=":material/error:")
    field = (problem and st.session_state.get(support.INPUT_FIX)) or input_noun(domain)
    st.info(f"{'Correct' if problem else 'Pick'} the {field} in the sidebar" + (f" {purpose}" if purpose else "")
            + ".")


def input_noun(domain: Domain) -> str:
    """What the user picks in ``domain``: a puzzle, a protein sequence, or another domain's state."""
    if domain.layout == "grid":
        return "puzzle"
    return "sequence" if texts.speaks_protein(domain) else "state"


def model_picker(domain: Domain) -> Domain:
    """A sidebar select of the models ``domain`` offers (``domains.MODELS``; none drawn when it has one), kept
    in the URL (a link may also say ``model=8layer``); returns the domain with the chosen model."""
    choices = model_choices(domain)
    if len(choices) < 2:
        return domain
    links.formatter("model", choices.get)
    links.accept_id("model", list(choices))  # a link may name the model by id: model=8layer
    links.explain("model", lambda raw: links.one_of(choices))
    name = st.sidebar.selectbox("Model", list(choices), format_func=choices.get, key="model", bind=BIND,
                                help="the default model, recurrent (one block applied 24 times, whose steps the MI maps "
                                     "page can show); the same weights averaged over symmetric views of the "
                                     "grid (bands, rows, transposition, digit relabelling), stronger at the cost "
                                     "of one model pass per view; or the 8-layer model it replaced")
    return with_model(domain, name)


def domain_and_puzzle(several: bool = False, models: bool = False) -> tuple[Domain, Puzzle | None]:
    """The sidebar's domain and puzzle pickers and the model note; ``several``: see :func:`puzzle_picker`;
    ``models``: also the model picker (:func:`model_picker`), and the domain returned carries the chosen model
    (the puzzle stays the domain's own)."""
    st.session_state.pop(support.INPUT_PROBLEM, None)
    st.session_state.pop(support.INPUT_PROMPT, None)
    st.session_state.pop(support.INPUT_FIX, None)
    domain = domain_picker()
    chosen = model_picker(domain) if models else domain
    puzzle = puzzle_picker(domain, several)
    model_status(chosen)
    return chosen, puzzle


def chart(fig, key: str, where=None, **kwargs):
    """``st.plotly_chart`` with the figure's own colours (no Streamlit theme) and no plotly logo."""
    return (where or st).plotly_chart(fig, key=key, theme=None, config={"displaylogo": False}, **kwargs)


def screen_chart(fig, key: str, chrome: int, least: int) -> None:
    """:func:`chart` of ``fig`` no taller than keeps its plot on one screen, its ``chrome`` px outside the plot
    (title, labels) scrolled past, and its plot at least ``least`` px (``protein_figures.fit_screen_css``)."""
    with st.container(key=f"{key}_fit", border=False):
        chart(fig, key=key, height="stretch")
    st.html(protein_figures.fit_screen_css(key, int(fig.layout.height), chrome, least))


def letter_chart(fig, key: str, count: int, size: int, room: int = protein_figures.LETTER_ROOM) -> None:
    """:func:`chart` of ``count`` residue letters a row (drawn at ``size`` px, ``room`` px of the chart beside its
    plot), their size capped to the chart's width and the chart in a container that scrolls sideways where the page
    is too narrow for readable letters (``protein_figures.fit_letters_css``)."""
    with st.container(key=f"{key}_scroll"):
        chart(fig, key=key)
    st.html(protein_figures.fit_letters_css(key, count, size, room))


def button_row():
    """A row for a page's download buttons that wraps onto another line where the page is narrow: in
    ``st.columns`` Streamlit cut each label to its column ("Heatmap as ...", "Animation (HTML pl..." on a 1280-px
    projector zoomed to 150% with the sidebar open)."""
    return st.container(horizontal=True, gap="small")
