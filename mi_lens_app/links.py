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
import difflib
import hashlib
import math
import urllib.parse
from collections.abc import Callable

import streamlit as st
from streamlit.errors import StreamlitAPIException
from streamlit.runtime.scriptrunner import get_script_run_ctx

# every parameter some page binds; strategy parameters are ``a_<strategy>_<name>`` and ``b_<strategy>_<name>``
KNOWN = frozenset({
    "domain", "src", "preset", "puzzle", "clues", "seed", "cell", "psrc", "ppreset", "seq", "mask_mode", "mask",
    "mask_rate", "mask_seed", "win", "win_size", "a", "b", "temp", "dseed", "attempts", "step", "color", "present",
    "stack", "cut", "present_select",
    "boxmajor", "layer", "model", "iter", "iterx", "edges", "topk", "thr", "sep", "arcs", "scale", "k", "exact", "prune", "eps", "digit", "aa", "set",
})
BIND = "query-params"
IGNORED = frozenset({"embed", "embed_options"})  # Streamlit's own
# what every page shares: the domain, the puzzle or sequence and its masking, the colour scale, presentation mode
# (the decoding view's: a teacher's ``present=true`` link to another view was noted as unused). Links between
# views carry these (``cell`` to the views that select one, ``model`` to those that pick one); a page that does
# not read one keeps it in its URL without a note, so the next page change still has it
SHARED = ("domain", "src", "preset", "puzzle", "clues", "seed", "psrc", "ppreset", "seq", "mask_mode", "mask",
          "mask_rate", "mask_seed", "scale", "cell", "model", "present")
OWN = ("cell", "model")  # carried only to the views that read them; on another page a link's value is noted as unused
_CARRY = "_link_carry"  # the shared parameters as the last page's run left them
MAX_CARRIED = 4000  # characters of carried values: a pasted puzzle or sequence longer than this stays out
_IN = "_link_in"  # the parameters as the page's run found them
_CHANGED = "_link_changed"  # {key: "old → new (why)"} clamped this run
_FORMAT = "_link_format"  # {key: value -> its text in the URL} for widgets with a format_func
_WHY = "_link_why"  # {key: the link's text -> why the page could not take it, or None} (see :func:`explain`)
_UNBIND = "_link_unbind"  # keys clamped this run whose widget is not yet drawn (see :func:`bound`)
_ACCEPTED = "_link_accepted"  # keys :func:`accept_id` set from an option's id, to write into the URL on the rerun
_TWICE = "_link_twice"  # {key: its values} for the keys the link gives more than once, with different values
_REMARKS = "_link_remarks"  # what else the note says of the link this run (a text it cannot hold, see text_bind)
_SET = "_link_set_by_click"  # keys a callback set since the last full run (see :func:`set_by_click`)
_NEEDS = "_link_needs"  # {key: what it needs, where this run draws no widget for it} (see :func:`needs`)


_CHOICES: dict[str, Callable[[], list[str]]] = {}  # shared parameters of fixed options: checked where not drawn
TEXT_SOURCE = {"puzzle": "src", "seq": "psrc"}  # a pasted text and the parameter that picks paste
_PAGE = "_link_page_missing"  # what the note says first: the link named a page the app does not have


def choices(key: str, options: Callable[[], list[str]]) -> None:
    """Shared parameter ``key`` takes one of ``options()``: a page that does not draw its widget (the benchmarks,
    About, a page without colours) still says a link's other value was not understood, where the link opened, and
    the note names the values it takes."""
    _CHOICES[key] = options


def page_name(url: str | None, base: str = "") -> str:
    """The page the path of ``url`` names, below the server's ``base`` path (``""``: the home page, or no URL)."""
    path = urllib.parse.urlparse(url or "").path.strip("/")
    base = base.strip("/")
    if base and (path == base or path.startswith(base + "/")):
        path = path[len(base):].strip("/")
    return urllib.parse.unquote(path)


def missing_page(name: str, pages: dict[str, str]) -> None:
    """The link named page ``name``, which the app does not have (Streamlit then runs the home page with a pop-up
    that names neither that page nor the app's): the note says so first and names the app's ``pages`` (``{title:
    address}``), and the closest address where one is close (``/mi_maps``: /MI_maps)."""
    close = difflib.get_close_matches(name.lower(), [a.strip("/").lower() for a in pages.values()], n=1, cutoff=0.6)
    guess = next((a for a in pages.values() if close and a.strip("/").lower() == close[0]), None)
    st.session_state[_PAGE] = (f'MI Lens has no page "{_short(name, 40)}", so the home page opened'
                               + (f" (did you mean {guess}?)" if guess else "") + ". Its pages: "
                               + ", ".join(f"{title} ({address})" for title, address in pages.items()))


def known(key: str) -> bool:
    return key in KNOWN or key.startswith(("a_", "b_"))


def start(page: str = "", selects_cell: bool = False, picks_model: bool = False) -> None:
    """Remember the URL's parameters as this run found them (call before any widget). On the first run of
    another ``page`` than the last run's, the shared state the last page left (:func:`remember`) goes back into
    the URL first: Streamlit drops a parameter bound to another page's widget when the page changes, so a
    teacher's ``preset=hard`` was lost on the first click to another view. ``selects_cell``: the page has a
    selected cell, so ``cell`` is carried too; ``picks_model``: it has the model picker, so ``model`` is."""
    if st.session_state.get("_link_page") not in (None, page):
        leave_out = {key for key, reads in (("cell", selects_cell), ("model", picks_model)) if not reads}
        if history_navigation():
            _restore_entry(leave_out)
            st.session_state["_link_page"] = page
            st.rerun()
        carry = carried(leave_out)
        for key, value in carry.items():
            if key in st.session_state:  # the new page's widget is another widget: it takes this value
                st.session_state[key] = st.session_state[key]
            if key not in st.query_params:
                with contextlib.suppress(StreamlitAPIException):  # still bound: the widget keeps it itself
                    st.query_params[key] = value
        _bring_long_text(carry.get("cut", ""))
    st.session_state["_link_first"] = st.session_state.get("_link_page") is None  # a link opened from outside
    st.session_state["_link_page"] = page
    # a click's callback set these since the last run: the URL's old value is the page's own, not a link's
    set_by_page = st.session_state.pop(_SET, set())
    st.session_state[_IN] = {k: v for k, v in st.query_params.to_dict().items() if k not in set_by_page}
    # a key given twice: Streamlit takes the last value without a word (domain=4x4&domain=protein)
    st.session_state[_TWICE] = {k: vs for k in st.query_params if len(set(vs := st.query_params.get_all(k))) > 1}
    st.session_state[_CHANGED] = {}
    st.session_state[_REMARKS] = []
    st.session_state[_PAGE] = None
    st.session_state[_WHY] = {}
    st.session_state[_NEEDS] = {}
    st.session_state.setdefault(_FORMAT, {})


def _restore_entry(leave_out: set[str]) -> None:
    """The browser's Back or Forward to another page: the shared state is the history entry's own. Streamlit drops
    the parameters bound on the page left, and in a run restoring history a bound widget takes its default for a
    parameter it misses, so the entry's values go back into the URL and the caller reruns: in that ordinary run a
    widget the session no longer holds reads the URL (or takes its default, where the entry has none). What the page
    left carried was put back before, which was the entry's only one page back: two entries back at once (a quick
    double Back, ``history.go(-2)``) reopened the entry with the settings of the page left."""
    ctx = get_script_run_ctx()
    entry = urllib.parse.parse_qs(getattr(ctx, "query_string", "") or "", keep_blank_values=True)
    marker = entry.get("cut", [""])[-1]
    long_texts = st.session_state.get("_link_long_text", {})
    for key in SHARED:
        if key in leave_out:
            continue
        if key in st.session_state:  # the page left's value: the entry's widget reads the URL instead
            del st.session_state[key]
        if key not in entry and _cut_key(marker) == key and marker in long_texts:  # its text was left out
            st.session_state[key] = long_texts[marker]
        if entry.get(key) and key not in st.query_params:
            with contextlib.suppress(StreamlitAPIException):  # still bound: the widget keeps it itself
                st.query_params[key] = entry[key][-1]


def _bring_long_text(marker: str) -> None:
    """A page change from a paste too long for the address (its ``cut`` marker carried): the new page's box takes
    the text from the session, as it would a short one from the URL (it showed an empty box)."""
    text = st.session_state.get("_link_long_text", {}).get(marker)
    key = _cut_key(marker)
    if text is not None and key not in st.query_params:
        st.session_state[key] = text


def history_navigation() -> bool:
    """Whether this run restores the browser's history (Back or Forward): a widget bound to the URL takes the
    URL's value when it is drawn, and until then the session still holds the value of the run left."""
    ctx = get_script_run_ctx()
    return bool(getattr(ctx, "is_history_navigation", False))


def set_by_click(key: str) -> None:
    """A callback (a click on a chart, a step button) set widget ``key``: the next run does not take the old value
    still in the URL for a link's (a second click on the grid said "part of this link was not understood: cell=r1c3",
    the first click's cell). Kept until the next full run, so a fragment's run that calls ``st.rerun`` passes it on.
    A page's own code that sets a key during a run calls :func:`took` instead, which corrects this run's record."""
    st.session_state.setdefault(_SET, set()).add(key)


def arrived(key: str) -> str | None:
    """The link's raw value of ``key`` as this run found it (None: the link has none)."""
    return st.session_state.get(_IN, {}).get(key)


def took(key: str, value: str) -> None:
    """The page itself replaced ``key``'s value from the URL with ``value`` (:func:`restart_on`): the URL's old
    value came from a widget, not a link, so the note does not report it."""
    found = st.session_state.get(_IN, {})
    if key in found:
        found[key] = value


def restart_on(key: str, owner, value) -> None:
    """Before widget ``key`` is drawn: when what it belongs to (``owner``: a cell, a sequence and its mask) is not
    the last run's, it starts again at ``value`` instead of keeping the last owner's choice (a digit that breaks a
    rule in the new cell, a window on residues the new mask leaves alone); :func:`took` keeps the note quiet."""
    mark = f"_{key}_of"
    if st.session_state.get(mark, owner) != owner and key in st.session_state:
        st.session_state[key] = value
        took(key, str(value))
    st.session_state[mark] = owner


def accept_id(key: str, ids: list[str]) -> None:
    """Before select box ``key`` (shown and written to the URL by a ``format_func``) reads the link: a link
    that names an option by its id (``set=cath_reference``, as links did before the box showed names) selects it,
    and the URL then names it as the box does. Call :func:`formatter` for ``key`` first."""
    accepted = st.session_state.setdefault(_ACCEPTED, set())
    if key in accepted:  # the rerun below: the URL now holds the option's text, which the widget takes
        accepted.discard(key)
        return
    raw = arrived(key)
    if raw in ids and key not in st.session_state:
        # a bound widget drops a URL value that is not one of its options' texts: setting the widget from the
        # id kept the choice but lost it from the address, and from a link copied from it. The URL takes the
        # text before the widget binds, and a rerun lets the widget read it from there
        st.query_params[key] = _value_text(key, raw)
        accepted.add(key)
        st.rerun()


def formatter(key: str, fn: Callable) -> None:
    """Tell the audit how widget ``key`` writes its value into the URL (e.g. a cell index as ``r3c5``)."""
    st.session_state.setdefault(_FORMAT, {})[key] = fn


def explain(key: str, fn: Callable[[str], str | None]) -> None:
    """Tell the note why widget ``key`` may not take a link's text (``cell=r1c1``: "a given, not a blank")."""
    st.session_state.setdefault(_WHY, {})[key] = fn


def needs(key: str, what: str) -> None:
    """Tell the note what link key ``key`` needs where this run draws no widget for it: a link's
    ``present_select=true`` without presentation mode was "not used on this page" and no more; the note now says
    ``present_select (add present=true: it needs presentation mode on)``, as a pasted puzzle's names ``src=paste``."""
    st.session_state.setdefault(_NEEDS, {})[key] = what


def _dropped(key: str, raw: str) -> str:
    """``key=raw``, with the page's reason when it gave one (:func:`explain`), else the values a parameter of fixed
    options takes (:func:`choices`): ``domain=banana (one of: 9x9, 4x4, protein, antibody)``."""
    why = st.session_state.get(_WHY, {}).get(key)
    reason = why(raw) if why is not None else None
    if reason is None and key in _CHOICES:
        reason = one_of(_CHOICES[key]())
    text = f"{key}={_short(raw)}" if known(key) else _short(f"{key}={raw}")  # a crafted key may be long too
    return text + (f" ({reason})" if reason else "")


def one_of(options) -> str:
    """The values a link may give a parameter, as its note names them."""
    return "one of: " + ", ".join(str(o) for o in options)


APP_SEED_MAX = 10**9  # the app's seed boxes (the command line takes seeds up to 2**63 - 1)
SEED_HELP = "a whole number from 0 to 1,000,000,000: a fraction is cut to its whole part, a larger number becomes 1,000,000,000"


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
    fraction = integer and math.isfinite(value) and value != int(value)  # seed=3.7: the widget would show 3
    if not math.isfinite(value) or (lo <= value <= hi and not fraction):
        return
    clamped = lo if value < lo else hi if value > hi else value
    clamped = int(clamped) if integer else float(clamped)
    st.session_state[key] = clamped
    shown = str(clamped) if integer else f"{clamped:g}"  # 1000000000, not 1e+09, for a whole number
    with contextlib.suppress(StreamlitAPIException):  # bound by an earlier page: :func:`bound` unbinds it here
        st.query_params[key] = shown  # the URL says what the page shows
    why = ("the largest allowed" if value > hi else "the smallest allowed" if value < lo
           else "a whole number: the part before the point")
    st.session_state[_CHANGED][key] = f"{key}={raw} → {shown} ({why})"
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
    if text is not None and raw.strip() in (text.strip(), str(value)):  # the shown text, or the option's id
        return True
    if isinstance(value, bool):
        return raw.lower() == ("true" if value else "false")
    if isinstance(value, (int, float)):
        try:
            return math.isclose(float(raw), float(value), rel_tol=1e-9, abs_tol=1e-12)
        except ValueError:
            return False
    return False


def problems() -> tuple[list[str], list[str], list[str], list[str]]:
    """``(not understood, not used, changed, remarks)``: the link's parameters the page dropped (unknown names,
    values a widget cannot take), those of the app that nothing on this page read (``cell`` on the benchmarks, a
    puzzle text under ``src=preset``), those it clamped, and the rest the note says (a key given twice)."""
    found = st.session_state.get(_IN, {})
    changed = st.session_state.get(_CHANGED, {})
    first = st.session_state.get("_link_first", False)
    dropped, unused, not_taken = [], [], set()
    for key, raw in found.items():
        if key in IGNORED or key in changed or key == "cut":  # cut: said by :func:`text_bind` where it matters
            continue
        if not known(key):
            dropped.append(_dropped(key, raw))
            not_taken.add(key)
        elif key not in st.session_state:
            if key in _CHOICES and raw not in _CHOICES[key]():
                dropped.append(_dropped(key, raw))
                not_taken.add(key)
            elif key not in SHARED or key in OWN:
                need = st.session_state.get(_NEEDS, {}).get(key)
                unused.append(f"{key} ({need})" if need else key)
            elif first and TEXT_SOURCE.get(key) in st.session_state and found.get(TEXT_SOURCE[key]) != "paste":
                # where the page draws that source's picker (not About, not another domain's)
                verb = "use" if TEXT_SOURCE[key] in found else "add"
                unused.append(f"{key} ({verb} {TEXT_SOURCE[key]}=paste to open it)")
        elif not _same(raw, st.session_state[key], key):
            dropped.append(_dropped(key, raw))
            not_taken.add(key)
    # the last value is the one used: unless it is among those not understood (scale=log&scale=rainbow)
    twice = [f"this link gives {k} {len(vs)} times: the last, {_short(vs[-1], 30)}, is used"
             for k, vs in st.session_state.get(_TWICE, {}).items() if k not in not_taken and k not in IGNORED]
    return dropped, unused, list(changed.values()), twice + st.session_state.get(_REMARKS, [])


NAMED = 8  # parts of a link the note names; it counts the others


def note() -> str | None:
    """The one line that says what of the link was not understood, not used or changed, or None; a page the link
    named that the app does not have (:func:`missing_page`) first."""
    dropped, unused, changed, remarks = problems()
    parts = []
    if dropped:  # a few named, the rest counted: the note is one line
        more = f" and {len(dropped) - NAMED} more" if len(dropped) > NAMED else ""
        parts.append("part of this link was not understood: " + ", ".join(dropped[:NAMED]) + more)
    if unused:
        parts.append(("part of this link is" if not parts else "") + " not used on this page: " + ", ".join(unused))
    if changed:
        parts.append(("part of this link was" if not parts else "") + " changed to fit: " + ", ".join(changed))
    parts += [" " + remark for remark in remarks]
    text = ";".join(parts).strip() + "." if parts else ""
    page = st.session_state.get(_PAGE)
    if page:
        text = page + "." + (" " + text[0].upper() + text[1:] if text else "")
    return text or None


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def put_in_link(source_key: str, source: str, text_key: str, text: str) -> None:
    """Switch the source to ``paste`` with ``text``: the widgets take the values, and the URL gets them too
    (a widget that was not drawn in the last run does not write its value into the URL by itself), unless
    ``text`` is longer than :data:`MAX_LINK_TEXT` (:func:`text_bind` then keeps it out and says so)."""
    st.session_state[source_key] = source
    st.session_state[text_key] = text
    set_by_click(source_key)
    set_by_click(text_key)
    if len(text) > MAX_LINK_TEXT:
        return
    with contextlib.suppress(StreamlitAPIException):  # already bound: the widget writes it itself
        st.query_params[text_key] = text


MAX_LINK_TEXT = 20_000  # characters of a pasted puzzle or sequence the URL keeps (a long protein in FASTA fits)
KEPT_LONG_TEXTS = 8  # texts left out of the address that Back and Forward can bring back, the latest


def _cut_key(marker: str) -> str:
    """The text widget a ``cut`` marker (``puzzle.1a2b3c4d``: the key and the text's hash) names."""
    return marker.partition(".")[0]


def text_bind(key: str) -> tuple[str | None, str | None]:
    """``(bind, note)`` for text widget ``key``: bound to the URL, unless its text (as typed, or as a link
    brought it) is longer than :data:`MAX_LINK_TEXT`; then unbound, which takes it out of the URL (a 300,000
    character paste was written whole into the address), with a note saying so."""
    value = st.session_state.get(key)
    if not isinstance(value, str):
        value = arrived(key) or ""
    left_out = st.session_state.setdefault("_link_text_out", set())
    long_texts = st.session_state.setdefault("_link_long_text", {})  # {cut marker: the text left out}
    marker = st.query_params.get("cut", "")
    if history_navigation():  # Back or Forward: the entry's text, not the one of the entry left
        if key in st.query_params:
            value = st.session_state[key] = st.query_params[key]
        elif marker in long_texts and _cut_key(marker) == key:  # an entry whose text was left out
            value = st.session_state[key] = long_texts[marker]
        elif len(value) > MAX_LINK_TEXT:  # an entry of an empty box (a long text's would say cut)
            value = st.session_state[key] = ""
    if len(value) <= MAX_LINK_TEXT:
        if key in left_out:  # bound again: a widget that was not bound does not write its value by itself
            left_out.discard(key)
            with contextlib.suppress(StreamlitAPIException):
                # one write: Streamlit pushes a history entry for each here (the visitor's change left the URL
                # alone), so ``cut`` stays; it means something only where the URL has no ``key``
                st.query_params[key] = value
        elif _cut_key(marker) == key and key not in st.query_params and st.session_state.get("_link_first"):
            # a copied link from an entry whose text was left out
            st.session_state.get(_REMARKS, []).append(f"the {key} was too long for this link and is not in it "
                                                      f"(cut={key}): paste it again")
        return BIND, None
    left_out.add(key)
    # the marker names the text, not only the key: two long pastes are two entries, and Back brings each its own
    marker = f"{key}.{hashlib.sha256(value.encode()).hexdigest()[:8]}"
    long_texts[marker] = long_texts.pop(marker, value)
    while len(long_texts) > KEPT_LONG_TEXTS:
        long_texts.pop(next(iter(long_texts)))
    if st.query_params.get("cut") != marker:  # the entry says its text was left out, so Back can bring it back
        with contextlib.suppress(StreamlitAPIException):
            st.query_params["cut"] = marker
    st.session_state.get(_CHANGED, {})[key] = f"{key} ({len(value):,} characters) left out"
    return None, (f"This text is {len(value):,} characters long: the link keeps at most {MAX_LINK_TEXT:,}, so it "
                  "is left out of the page's address (a copied link will not reopen it).")


def remember(pickers: bool) -> None:
    """Keep the shared parameters of the URL as this run leaves them (call after the page's widgets), for the
    links to other views (:func:`carried`). ``pickers``: the page drew the domain and puzzle pickers, so the URL
    says all of the state (a widget at its default leaves the URL); elsewhere (the benchmarks, About) the
    state is the carried one, unless the URL names some."""
    now = st.query_params.to_dict()
    # a value the page's widget does not hold is stale (a 9x9 preset's name left in the URL after a switch to
    # 4x4 through a domain without presets): carried, the next page called it a link's and "not understood"
    carry = {k: now[k] for k in SHARED if k in now and (k not in st.session_state or _same(now[k], st.session_state[k], k))}
    if sum(len(v) for v in carry.values()) > MAX_CARRIED:
        carry = {k: v for k, v in carry.items() if len(v) <= 200}
    # a text left out of the address (:func:`text_bind`) goes along within the session, by its marker
    marker = now.get("cut", "")
    if marker in st.session_state.get("_link_long_text", {}) and _cut_key(marker) not in now:
        carry["cut"] = marker
    if pickers or carry or _CARRY not in st.session_state:
        st.session_state[_CARRY] = carry


def carried(leave_out: set[str] | None = None) -> dict[str, str]:
    """The shared parameters a link to another view carries (less ``leave_out``)."""
    carry = st.session_state.get(_CARRY)
    if carry is None:  # the first page of a session, before its run ends: its own link
        carry = {k: v for k, v in st.query_params.to_dict().items() if k in SHARED}
    return {k: v for k, v in carry.items() if k not in (leave_out or set())}
