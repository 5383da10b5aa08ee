"""Options declared as dataclass fields (``name: type = option(default, "help", ...)``, turned into flags by
:mod:`mi_core.cli`), and the parsers of option values."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import numbers
import re
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mi_core.io import user_path

SEED_MAX = 2**63 - 1
DEFAULT_INT = (0, 2**31 - 1)  # the range of an integer option that declares none
DEFAULT_FLOAT = (-1e12, 1e12)


@dataclass(frozen=True)
class Spec:
    """How one field reads on the command line: ``flags`` (default ``--field-name``); ``range`` inclusive
    (default :data:`DEFAULT_INT` / :data:`DEFAULT_FLOAT`); ``group``: a mutually exclusive group; ``parse``:
    text -> value; ``many``: repeatable; ``negatable``: ``--no-name`` too; ``default_for``: ``domain ->
    default``; ``check``: ``value -> message or None``; ``writes``: the value names a file the command writes
    (``--json``, ``--markdown``, ``--out`` and ``--log`` always do), which may not name a file it reads."""

    help: str = ""
    flags: tuple[str, ...] = ()
    range: tuple[float, float] | None = None
    choices: tuple | None = None
    required: bool = False
    group: str | None = None
    metavar: str | None = None
    parse: Callable[[str], Any] | None = None
    many: bool = False
    negatable: bool = False
    default_for: Callable | None = None
    check: Callable[[Any], str | None] | None = None
    writes: bool = False


def option(default: Any = None, help: str = "", **spec) -> Any:
    """A dataclass field that is a command-line option (see :class:`Spec` for ``spec``)."""
    meta = {"option": Spec(help=help, **spec)}
    if isinstance(default, (list, dict, set)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


SKIP = object()  # in a group's overrides, ``{field: SKIP}`` leaves that field out


def spec_of(f: dataclasses.Field) -> Spec:
    return f.metadata.get("option") or Spec()


def redefault(cls: type, name: str, default: Any, help: str | None = None) -> Any:
    """Option field ``name`` of dataclass ``cls`` with another default (for a subclass), and another ``help``."""
    meta = cls.__dataclass_fields__[name].metadata
    if help is not None:
        meta = {**meta, "option": dataclasses.replace(meta["option"], help=help)}
    return field(default=default, metadata=meta)


def only(cls: type, *names: str, **defaults) -> tuple[type, dict]:
    """The option group of dataclass ``cls``'s fields ``names`` and ``defaults`` (with those defaults)."""
    return cls, {f.name: SKIP for f in dataclasses.fields(cls) if f.name not in {*names, *defaults}} | defaults


def group_fields(group) -> list[dataclasses.Field]:
    """The fields of an option group: a dataclass, or ``(dataclass, overrides)``, less the ``SKIP`` ones."""
    cls, overrides = group if isinstance(group, tuple) else (group, {})
    return [f for f in dataclasses.fields(cls) if overrides.get(f.name) is not SKIP]


def option_flags(groups) -> dict[str, str]:
    """``{field name: how a command line gives it, {} its value}`` of the option groups ``groups`` (a command's
    ``options``): ``"--temperature {}"``; a switch (a bool field) alone, ``"--bf16 (a switch)"``. A repeatable
    option (``--set`` itself) is left out."""
    flags = {}
    for f in (f for group in groups for f in group_fields(group) if not spec_of(f).many):
        flag = (spec_of(f).flags or (f"--{f.name.replace('_', '-')}",))[0]
        flags[f.name] = f"{flag} (a switch)" if isinstance(f.default, bool) else f"{flag} {{}}"
    return flags


def option_text(value) -> str:
    """``value`` as written on a command line: a float as ``%g``, a tuple comma-separated."""
    if isinstance(value, (tuple, list)):
        return ",".join(option_text(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def device_problem(name: str) -> str | None:
    """Why ``name`` is not a device MI Lens runs on (None: it is one), without importing torch."""
    if re.fullmatch(r"auto|cpu(:0)?|cuda(:\d+)?", str(name)):
        return None
    return f"unknown device {name!r}; choose auto (CUDA when present), cpu or cuda"


@dataclass
class Force:
    force: bool = option(False, "overwrite existing output files")


@dataclass
class Device:
    device: str = option("auto", "auto (CUDA when present), cpu or cuda", check=device_problem)
    threads: int = option(0, "torch CPU threads (0: torch's default)", range=(0, 1024))


@dataclass
class JsonOut:
    json: Path | None = option(None, "write the results here as JSON")


def under_one(eps: float) -> str | None:
    """The ``check`` of a probe's pruning threshold: the probe takes ``0 <= eps < 1``."""
    return "1 would skip every value; give a probability under 1" if eps >= 1 else None


def seed(help: str = "random seed") -> Any:
    return option(0, help, range=(0, SEED_MAX))


def format_range(lo, hi) -> str:
    return f"{lo:g}..{hi:g}" if isinstance(lo, float) or isinstance(hi, float) else f"{lo}..{hi}"


def range_error(flag: str, value, lo, hi) -> str | None:
    """The one-line complaint about ``value`` of ``flag`` outside ``lo..hi`` (None when it fits)."""
    if value is None:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"argument {flag}: {value} is not a finite number; accepted range {format_range(lo, hi)}"
    if not lo <= value <= hi:
        return f"argument {flag}: {value} is outside the accepted range {format_range(lo, hi)}"
    return None


def check_ranges(config) -> None:
    """ValueError naming the first field of dataclass ``config`` outside its declared ``range``, or of another type
    than its int or float annotation: a config built in code or read from a checkpoint is held to the limits (and
    types) its command-line options state."""
    hints = typing.get_type_hints(type(config))
    for f in dataclasses.fields(config):
        lo_hi, value = spec_of(f).range, getattr(config, f.name)
        kinds = set(typing.get_args(hints.get(f.name)) or (hints.get(f.name),))
        wanted = numbers.Integral if int in kinds else numbers.Real if float in kinds else None
        if lo_hi is not None and value is not None and wanted and (isinstance(value, bool)
                                                                   or not isinstance(value, wanted)):
            raise ValueError(f"{f.name} must be {'an integer' if wanted is numbers.Integral else 'a number'}, "
                             f"got {value!r}")
        problem = range_error(f.name, value, *lo_hi) if lo_hi is not None else None
        if problem:
            raise ValueError(problem.removeprefix("argument "))


def names_given(message: str, typed: dict[str, str], fallback: str | None = None) -> str:
    """``message`` (a check's complaint about fields or parameters: ``"k must be >= 1, got 0"``) led by how the
    command line gave the ones it names as whole words, ``typed[name]`` (``"--set k=0: k must be ..."``); a
    message naming none leads with ``fallback`` (None: left as it is), and one that already opens with an
    option (``--x``, ``argument --x``) is left as it is."""
    if message.startswith(("--", "argument ")):
        return message
    found = sorted((hit.start(), text) for name, text in typed.items()
                   if (hit := re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", message)))
    lead = ", ".join(dict.fromkeys(text for _, text in found)) or fallback
    return f"{lead}: {message}" if lead else message


@contextlib.contextmanager
def naming(typed: dict[str, str], fallback: str | None = None):
    """Inside, a ValueError's message is led by how the command line gave what it names (:func:`names_given`)."""
    try:
        yield
    except ValueError as err:
        named = names_given(str(err), typed, fallback)
        if named == str(err):
            raise
        raise ValueError(named) from None


def typed_option(f: dataclasses.Field, value, given=None) -> str:
    """How a command line gives option field ``f`` the ``value`` (``"--n-heads 3"``, a switch alone), marked
    ``(default)`` where ``given`` (the fields the command line named; None: unknown) leaves it out."""
    flag = (spec_of(f).flags or (f"--{f.name.replace('_', '-')}",))[0]
    text = (flag if value else f"no {flag}") if isinstance(value, bool) else f"{flag} {option_text(value)}"
    return text + (" (default)" if given is not None and f.name not in given else "")


def from_options(cls: type, values, names=None, **fixed) -> Any:
    """Dataclass ``cls`` built from the option values ``values`` (a parsed Namespace or a dict: its ``given``, the
    options the command line named, marks the rest as defaults) of its fields ``names`` (default: every field not
    in ``fixed``), and ``fixed``. A ValueError of its checks that names fields (``"d_model 16 is not divisible by
    n_heads 3"``) leads with the options that set them (``"--d-model 16, --n-heads 3: ..."``)."""
    values = values if isinstance(values, dict) else vars(values)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    names = [n for n in fields if n not in fixed] if names is None else list(names)
    with naming({n: typed_option(fields[n], values[n], values.get("given")) for n in names}):
        return cls(**{n: values[n] for n in names}, **fixed)


def parse_lengths(spec: str) -> tuple[int, int]:
    """``"50-100"`` -> ``(50, 100)``; ``"80"`` -> ``(80, 80)``; ValueError unless ``1 <= LO <= HI``."""
    lo, sep, hi = str(spec).strip().partition("-")
    try:
        lo_n = int(lo)
        hi_n = int(hi) if sep else lo_n
    except ValueError:
        raise ValueError(f"--lengths expects N or LO-HI (e.g. 50-100), got {spec!r}") from None
    if lo_n < 1 or hi_n < lo_n:
        raise ValueError(f"--lengths {spec!r}: need 1 <= LO <= HI")
    return lo_n, hi_n


class Noun(str):
    """A word for one thing that knows its plural: ``Noun("vertex", "vertices")`` is the str ``"vertex"`` wherever
    a str goes (an axis title, a message), and :func:`plural` of it is ``"vertices"`` (``Domain.nouns`` are
    Nouns, their plurals from ``Domain.plurals``)."""

    plural: str

    def __new__(cls, one: str, many: str | None = None) -> Noun:
        word = super().__new__(cls, one)
        word.plural = many or plural(one)
        return word

    def __reduce__(self):  # pickled with its plural (a worker process's copy of a Domain)
        return Noun, (str(self), self.plural)


def plural(noun: str) -> str:
    """The plural of ``noun``: a :class:`Noun`'s own (``"vertices"``), else ``noun`` + s (``"cells"``)."""
    return getattr(noun, "plural", None) or f"{noun}s"


def counted(n: int, noun: str, kind: str = "") -> str:
    """``"1 masked position"``, ``"3 masked positions"``, ``"2 vertices"``: ``n`` of ``noun`` (singular), each
    ``kind`` (an adjective, or none)."""
    return " ".join(word for word in (str(n), kind, noun if n == 1 else plural(noun)) if word)


def parse_positions(spec: str, length: int, accepted: str = "a residue number or range like 9-20",
                    noun: str = "residue", what: str = "--mask-positions", allow_empty: bool = False) -> list[int]:
    """0-based indices of a 1-based list of positions (each a ``noun``) and inclusive ranges (``"5,9-20"``; ``;`` separates too,
    empty parts are skipped) in a sequence of ``length``; a ValueError names the part that is not ``accepted``,
    a backwards range, a position outside ``1..length``, or (unless ``allow_empty``) a spec of no position,
    after ``what``."""
    out: set[int] = set()
    for part in (p.strip() for p in spec.replace(";", ",").split(",")):
        if not part:
            continue
        lo, dash, hi = (t.strip() for t in part.partition("-"))
        if not (lo.isascii() and lo.isdigit()) or (dash and not (hi.isascii() and hi.isdigit())):
            named = part[:1].isalpha()  # a region's name (CDR3, H3): numbers here; regions where a domain names them
            raise ValueError(f"{what}: {part!r} is not {accepted}"
                             + (" (positions are numbers here: this input names no regions)" if named else ""))
        a, b = int(lo), int(hi or lo)
        if a > b:
            raise ValueError(f"{what}: the range {part!r} runs backwards")
        if a < 1 or b > length:
            raise ValueError(f"{what}: {part!r} is outside 1-{length} (the sequence has {counted(length, noun)})")
        out.update(range(a - 1, b))
    if not out and not allow_empty:
        raise ValueError(f"{what}: no position in {spec!r}")
    return sorted(out)


def set_problem(pair: str) -> str | None:
    """Why one ``--set`` value is not ``key=value``, checked as it is parsed (``--set gamma 0.6`` was reported as
    an unrecognised ``0.6``, since argparse names what is left over first); None when it is one."""
    key, sep, value = pair.partition("=")
    if sep and key.strip() and value.strip():
        return None
    one_word = not sep and key.strip()  # "--set gamma 0.6"; not an empty "--set="
    return f"expects key=value, got {pair!r}" + (f" (one word: --set {key.strip()}=VALUE)" if one_word else "")


def parse_sets(pairs: list[str]) -> dict[str, str]:
    """``["k=4", "gamma=0.2"]`` -> ``{"k": "4", "gamma": "0.2"}``; ValueError on a malformed or repeated pair."""
    params = {}
    for pair in pairs:
        if problem := set_problem(pair):
            raise ValueError(f"--set {problem}")
        key, _, value = pair.partition("=")
        if key.strip() in params:  # the last would win without a word
            raise ValueError(f"--set gives {key.strip()} twice ({params[key.strip()]} and {value.strip()}): give it once")
        params[key.strip()] = value.strip()
    return params


def int_list(text: str) -> list[int]:
    """``"1,4,16"`` -> ``[1, 4, 16]`` (a ValueError names the bad item, or says there is none)."""
    items = _items(text, int, "integers")
    if not items:
        raise ValueError("expects integers separated by commas, got none")
    return items


def float_list(text: str) -> list[float]:
    """``"0.5,1"`` -> ``[0.5, 1.0]``; ``""`` -> ``[]``."""
    return _items(text, float, "numbers")


def _items(text: str, kind: type, what: str) -> list:
    parts = [v.strip() for v in str(text).split(",")]
    if not any(parts):
        return []
    if not all(parts):
        raise ValueError(f"expects {what} separated by commas; {str(text).strip()!r} has an empty item")
    items = []
    for v in parts:
        try:
            items.append(kind(v))
        except ValueError:
            raise ValueError(f"expects {what} separated by commas; {v!r} is not one") from None
    # every list option is a sweep: a value given twice would run its rows twice and count them twice in means
    twice = sorted({v for v in items if items.count(v) > 1})
    if twice:
        raise ValueError(f"gives {option_text(twice)} more than once: give each value once")
    return items


SECTION_MARK = re.compile(r"<!-- (.+?):(start|end) -->")  # a report's sections lie between such markers


def section_problem(name: str) -> str | None:
    """Why ``name`` cannot name a report's section (None: it can): its markers are HTML comments, which a
    ``--``, an angle bracket or a line break in it would end or break."""
    if str(name).strip() and not re.search(r"--|[<>\r\n]", str(name)):
        return None
    return f"a section name holds no '--', '<', '>' or line break (it goes into an HTML comment), got {name!r}"


def markers_problem(text: str) -> str | None:
    """What is wrong with a report's section markers (None: each section's start once, then its end once): a
    section is replaced from its start to its end, so a lone or reversed marker would cut the user's text."""
    kinds: dict[str, list[str]] = {}
    for found in SECTION_MARK.finditer(text):
        kinds.setdefault(found.group(1), []).append(found.group(2))
    for name, seen in kinds.items():
        if seen != ["start", "end"]:
            return (f"its section {name!r} has {counted(len(seen), 'marker')} ({', '.join(seen)}) where it needs two, "
                    "its start and then its end: mend them or name another file")
    return None


def markdown_file(text: str) -> Path:
    """A ``--markdown`` / ``--md`` value: a ``.md`` or ``.markdown`` file (``-``: standard output),
    so a section is never written into a JSON or other file named by mistake, whose section markers (if it
    exists) are sound; ``~`` is the home folder."""
    if text != "-" and Path(text).suffix.lower() not in (".md", ".markdown"):
        raise ValueError(f"a Markdown report file ends in .md, got {text!r}")
    path = Path(text) if text == "-" else user_path(text)
    if text != "-" and path.exists() and not path.is_file():  # a section written there replaced the pipe
        raise ValueError(f"{path} is not a regular file (a folder, named pipe or device): give a Markdown file")
    try:
        problem = markers_problem(path.read_text()) if path.is_file() else None
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: cannot read it ({err})") from None
    if problem:
        raise ValueError(f"{path}: {problem}")
    return path


def markdown_option(help: str) -> Any:
    return option(None, help, parse=markdown_file)
