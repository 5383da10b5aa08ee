"""Write benchmark results: delimited sections of BENCHMARKS.md, JSON files and Markdown tables."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from mi_core.device import pick_device
from mi_core.domain import Domain, get_domain
from mi_core.io import (
    ON_STOP,
    append_text,
    atomic_write_text,
    check_output,
    file_sha256,
    json_ready,
    note_on_stop,
    stops_held,
)
from mi_core.options import counted, markdown_option, markers_problem, option, section_problem


def row_domain(row: dict) -> str | None:
    """The domain a sweep row was run on: its ``domain``, else the one its ``command`` names (``python -m mi_core
    sweep DOMAIN ...``); None when it records neither (rows written before sweeps recorded their command)."""
    if isinstance(row.get("domain"), str):
        return row["domain"]
    try:
        words = shlex.split(str(row.get("command") or ""))
    except ValueError:  # an unclosed quote: no command this version wrote
        return None
    return next((words[i + 2] for i in range(len(words) - 2) if words[i:i + 2] == ["mi_core", "sweep"]), None)


def ran_on(row: dict, domain: Domain) -> bool | None:
    """Whether sweep ``row`` was run on ``domain`` (:func:`row_domain`; a plugin's domain not registered now is
    another); None when the row names no domain."""
    name = row_domain(row)
    if name is None:
        return None
    try:
        return get_domain(name) is domain
    except ValueError:
        return False


def partial_path(json_path: Path) -> Path:
    """Where a long benchmark keeps its finished rows until ``--json`` is written: ``OUT.json.partial``."""
    return json_path.with_name(json_path.name + ".partial")


def check_partial(args, command: str, unit: str = "rows", replace: bool | None = None) -> Path | None:
    """``--json``'s .partial file, refused before any work where it cannot serve: ``--resume`` with none there (or no
    ``--json``), or one there (an interrupted run's ``unit``) without ``--resume`` or ``--force``; then ``--json``,
    refused where it is a file, but with ``--force`` or ``replace`` (default ``--resume``: a stopped run's partial
    result, which the resumed run's replaces)."""
    if args.json is None:
        if args.resume:
            raise ValueError(f"--resume needs --json: a stopped {command} keeps its finished {unit} in --json's "
                             ".partial file")
        return None
    check_output(args.json, force=True)  # a folder or a pipe is named as such, not as a .partial beside it
    partial = partial_path(args.json)
    if partial.exists() and not partial.is_file():  # found after the first row's work, when it is written
        raise ValueError(f"{partial}, where {command} keeps its finished {unit}, is not a file: move it away")
    if args.resume and not partial.is_file():
        finished = f" ({args.json} holds a finished {command}'s results)" if args.json.is_file() else ""
        raise ValueError(f"--resume: no interrupted {command} {partial} to continue{finished}: run the command "
                         "without --resume")
    if partial.is_file() and not (args.resume or args.force):
        raise ValueError(f"{partial} holds the finished {unit} of an interrupted {command}: add --resume to continue "
                         "it, or --force to start again")
    check_output(args.json, args.force or (args.resume if replace is None else replace))
    note_on_stop(resume_note(partial, unit) if args.resume else None)  # a stop before this run's first new one
    return partial


def command_line(args, command: str) -> str:
    """The command that runs ``args`` again: ``python -m mi_core COMMAND ...`` as typed, quoted, less ``--resume``
    (it reruns the whole run)."""
    return f"python -m mi_core {command} " + shlex.join(a for a in getattr(args, "argv", None) or [] if a != "--resume")


def resume_note(path: Path, unit: str) -> str:
    return f"{path} keeps the finished {unit}: add --resume to the same command to continue"


# options that change nothing a run finishes (where it writes, how many threads or Ray actors run it)
UNKEPT = {"json", "markdown", "write_markdown", "section", "force", "resume", "threads", "argv", "given", "address",
          "workers", "num_gpus", "num_cpus", "retries"}


def run_identity(args, timed: bool = False, **used) -> dict:
    """What a run's results depend on: its options but those of :data:`UNKEPT`, and ``used``, the files it read where
    an option was left unset (the model's weights, a default selector or estimator: an environment variable may name
    another on resuming), each file named with its sha256 (a model trained again under its name runs again).
    ``timed``: the run's figures are timings, which the CPU threads change: ``used``'s ``threads`` is kept too."""
    def value(v):
        if isinstance(v, Path) or (isinstance(v, str) and Path(v).suffix and Path(v).is_file()):
            return [str(v), file_sha256(v) if Path(v).is_file() else None]
        return v if isinstance(v, (int, float, str, bool, type(None), list, dict)) else str(v)

    unkept = UNKEPT - {"threads"} if timed else UNKEPT
    kept = {k: value(v) for k, v in sorted({**vars(args), **used}.items()) if k not in unkept}
    if "device" in kept:  # the device picked: auto on a CPU machine is cpu, and mixes no CUDA rows on resuming
        kept["device"] = pick_device(kept["device"]).type
    return json.loads(json.dumps(kept))


RECORD = "mi_lens.kept/1"  # the first line of a .partial file that :class:`Kept` writes


class Kept:
    """A long command's finished work by key, appended to ``--json``'s .partial file as it finishes (a line
    ``[key, value]`` each, after a line of the run's ``settings``), so that a stopped run's ``--resume`` reads it back
    (refused for other settings, naming them, keys after ``prefix``) and runs only the rest; ``valid(value)``: a value
    this command keeps. No --json: memory only."""

    def __init__(self, args, command: str, settings: dict, unit: str = "rows", field: str = "rows",
                 prefix: str = "--", valid=lambda value: isinstance(value, dict)):
        self.json, self.path = args.json, None if args.json is None else partial_path(args.json)
        self.command, self.unit, self.field = command, unit, field
        self.settings = json.loads(json.dumps(json_ready(settings)))
        self.appending = False  # whether the file holds this run's record whole, its last line ended: appended to
        self.done: dict = self.read(prefix, valid) if args.resume else {}
        note_on_stop(resume_note(self.path, unit) if self.done else None)

    def read(self, prefix: str, valid) -> dict:
        try:
            settings, items, self.appending = read_kept(self.path, self.field)
            if not isinstance(settings, dict) or not all(isinstance(key, str) and valid(value) for key, value in items):
                raise ValueError  # no value is a string: one unpacked from a string or an object of two is refused
        except (ValueError, UnicodeDecodeError, TypeError, KeyError, AttributeError):
            raise self.unreadable() from None
        if settings != self.settings:
            differ = settings_difference(settings, self.settings, prefix)
            raise ValueError(f"--resume: {self.path} was a run of other settings ({differ}): give the interrupted "
                             "command's options, or --force without --resume to start again")
        return dict(items)

    def unreadable(self) -> ValueError:
        """The one line for a .partial file that holds no record of this command's (a damaged or edited one)."""
        article = "an" if self.command[0] in "aeiou" else "a"
        return ValueError(f"--resume: {self.path} is not {article} {self.command}'s record of finished {self.unit}; move it "
                          "away, or give --force without --resume to start again")

    def __contains__(self, key: str) -> bool:
        return key in self.done

    def keep(self, items: dict) -> None:
        """Keep ``items`` (key: JSON-able value), written at once (with --json): appended, one line each."""
        self.done.update(items)
        if self.path is not None and items:
            with stops_held():  # a stop between the two named no file, or one without this item
                if self.appending and self.path.is_file():
                    append_text(self.path, item_lines(items))
                else:  # the first item, or a record read back of an earlier version or a last line cut short
                    self.write(self.done)
                note_on_stop(resume_note(self.path, self.unit))

    def write(self, keys) -> None:
        """The file written whole, holding ``keys``."""
        head = json.dumps({"record": RECORD, "command": self.command, "settings": self.settings})
        atomic_write_text(self.path, head + "\n" + item_lines({k: self.done[k] for k in keys}))
        self.appending = True

    def close(self, keys=()) -> None:
        """The run is written: remove the file, or keep in it only ``keys`` (finished work this run did not use)."""
        if keys:
            self.write(keys)
        else:
            drop_partial(self.json)


def item_lines(items: dict) -> str:
    return "".join(json.dumps(json_ready([key, value]), allow_nan=False) + "\n" for key, value in items.items())


def read_kept(path: Path, field: str = "rows") -> tuple[dict, list, bool]:
    """The ``settings`` and ``[key, value]`` items (in the order kept) of a .partial file, and whether it ends in a
    whole line: :class:`Kept`'s JSON lines (a last line cut short, by a kill as it was written, left out), or the
    one object earlier versions wrote, ``{"settings": ..., field: [[key, value], ...]}``. ValueError (or another
    error of json's) where it is neither."""
    text = path.read_text()
    if not text.startswith('{"record"'):
        whole = json.loads(text)
        return whole["settings"], list(whole[field]), False
    head, *lines = text.split("\n")
    head = json.loads(head)
    if head["record"] != RECORD:
        raise ValueError
    return head["settings"], [json.loads(line) for line in lines[:-1]], text.endswith("\n")


def not_json(path: Path, err: ValueError, expected: str) -> str | None:
    """Why file ``path`` is not the JSON document a command reads there (``expected``: what it is, in words), from
    the ``err`` json or the UTF-8 decoder raised on it: empty, not text, a stopped run's .partial record, several
    documents one a line (JSON lines), or not JSON at a line and column; None for another error (a document read
    but not understood)."""
    if isinstance(err, UnicodeDecodeError):
        return f"{path} is not a text file (byte {err.start + 1} is not UTF-8): give {expected}"
    if not isinstance(err, json.JSONDecodeError):
        return None
    lines = [line for line in err.doc.splitlines() if line.strip()]
    if not lines:
        return f"{path} is empty: give {expected}"
    try:
        parsed = [json.loads(line) for line in lines]
    except ValueError:
        parsed = []
    if parsed and isinstance(parsed[0], dict) and parsed[0].get("record") == RECORD:
        return (f"{path} is the .partial record a stopped {parsed[0].get('command', 'run')} keeps of its finished "
                f"work, not its results: give {expected} (--resume continues the run and writes it)")
    if len(parsed) > 1:
        return f"{path} holds JSON lines ({len(parsed)} documents, one a line), not one JSON document: give {expected}"
    if err.pos >= len(err.doc.rstrip()):
        return f"{path} ends before its JSON does (cut short, at line {err.lineno}): give {expected}"
    return f"{path} is not JSON ({err.msg} at line {err.lineno}, column {err.colno}): give {expected}"


def drop_partial(json_path: Path | None) -> None:
    """The run is written: remove ``json_path``'s .partial file, and the stop line's word of it."""
    if json_path is not None:
        with stops_held():  # the stop line names the kept work only while it is there
            partial_path(json_path).unlink(missing_ok=True)
            note_on_stop(None)


def settings_difference(there: dict, now: dict, prefix: str = "") -> str:
    """``"KEY A there, B now"`` for each setting of an interrupted run (``there``) that differs ``now``, keys after
    ``prefix`` (``"--"``: as options); a file recorded as ``[path, sha256]`` reads ``path (sha256 3f9a0c1b2d4e)``."""
    def shown(v) -> str:
        if isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and (v[1] is None or len(str(v[1])) == 64):
            return f"{v[0]} (sha256 {v[1][:12]})" if v[1] else f"{v[0]} (not there)"
        return ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)  # as typed: --budgets 3,5

    keys = [k for k in sorted(there.keys() | now.keys()) if there.get(k) != now.get(k)]
    name = (lambda k: prefix + k.replace("_", "-")) if prefix else str
    return ", ".join(f"{name(k)} {shown(there.get(k))} there, {shown(now.get(k))} now" for k in keys)


HEADER = "# MI Lens benchmarks\n\nEvery table below is written by the command named above it; rerunning it replaces its section.\n"


@dataclass
class MarkdownOut:
    markdown: Path | None = markdown_option("update this result's section in this file (e.g. BENCHMARKS.md; default: none)")
    write_markdown: bool = option(True, "write no section (the default)", flags=("--no-markdown",))


@dataclass
class Resume:
    resume: bool = option(False, "continue a stopped run of the same options: what it finished, kept in --json's "
                          ".partial file as it finishes, is not run again (a run of other options is refused, naming "
                          "them)")


def update_section(name: str, markdown: str, path: str | Path = "BENCHMARKS.md") -> None:
    """Replace the text between ``<!-- name:start -->`` and ``<!-- name:end -->`` in ``path`` (append if absent);
    a ValueError, and the file as it was, where ``name`` or the file's markers are unsound; ``-``: the section on
    standard output instead (it wrote a file named ``-``)."""
    if str(path) == "-":
        print(markdown.rstrip(), flush=True)
        return
    path = Path(path)
    text = path.read_text() if path.is_file() else HEADER
    problem = section_problem(name) or markers_problem(text)
    if problem:
        raise ValueError(f"{path}: {problem}")
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{markdown.rstrip()}\n{end}"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    atomic_write_text(path, text)


def params_text(params: dict) -> str:
    """A sampler's parameters as a row shows them: ``gamma=0.6, lam=1, relative=true`` (floats as short as they
    stay distinct)."""

    def text(value) -> str:
        if isinstance(value, bool):
            return str(value).lower()
        return f"{value:.15g}" if isinstance(value, float) else str(value)

    return ", ".join(f"{k}={text(v)}" for k, v in params.items())


def markdown_table(rows: list[dict], columns: list[tuple[str, str]]) -> str:
    """Rows of dicts to a Markdown table; ``columns`` are ``(key, heading)`` pairs; floats get 3 decimals."""

    def cell(value) -> str:
        if value is None:  # a column this row has no value in (bench-order's T of eb, mi and sequential)
            return "-"
        if isinstance(value, float):
            return f"{value:.3f}"
        if isinstance(value, dict):
            return params_text(value) or "-"
        return str(value)

    header = "| " + " | ".join(h for _, h in columns) + " |"
    return "\n".join(table(header, [[cell(r.get(k, "")) for k, _ in columns] for r in rows]))


def table(header: str, rows) -> list[str]:
    """The lines of a Markdown table: its ``header`` line, the rule under it (a column per ``|`` but the first, an
    escaped ``\\|`` none), then each row of cells."""
    rule = "|" + "---|" * (header.replace("\\|", "").count("|") - 1)
    return [header, rule, *("| " + " | ".join(map(str, row)) + " |" for row in rows)]


def frontier(rows: list[dict], key: str = "accuracy", higher: bool = True) -> list[dict]:
    """Rows no other row beats on both counts (fewer or equal mean passes, a better ``key``: higher, or lower
    when not ``higher``), by passes."""
    sign = 1 if higher else -1
    best, out = float("-inf"), []
    for row in sorted(rows, key=lambda r: (r["mean_passes"], -sign * r[key])):
        if sign * row[key] > best:
            out.append(row)
            best = sign * row[key]
    return out


def variants(row: dict) -> list[str]:
    """How a row's decoding differs from one decode of the model as it is: ``["4 views", "up to 32 decodes"]``."""
    views, attempts = int(row.get("views") or 1), int(row.get("attempts") or 1)
    return ([f"{views} views"] if views > 1 else []) + ([f"up to {attempts} decodes"] if attempts > 1 else [])


def frontier_text(rows: list[dict], **kwargs) -> str:
    """The :func:`frontier` rows (``kwargs`` go to it) as ``sampler(k=v, ...)``, comma-separated, with their
    :func:`variants` (``mi(gamma=0.6, up to 32 decodes)``)."""
    return ", ".join(f"{r['sampler']}({', '.join(filter(None, [params_text(r['params']), *variants(r)]))})"
                     for r in frontier(rows, **kwargs))


def stopped_fields(done: int, total: int, unit: str, caveat: str = "") -> dict:
    """The mark of a result kept from a stopped run (:func:`keep_stopped`): ``"partial": true`` and how many of the
    ``total`` inputs were finished, which every figure beside it is over (``caveat``: how those differ from all)."""
    return {"partial": True, "stopped": {"done": done, "of": total, "unit": unit, **({"caveat": caveat} if caveat else {})}}


def stopped_line(stopped: dict) -> str:
    """The line a stopped run's report opens with (:func:`stopped_fields`' ``stopped``)."""
    caveat = f"; {stopped['caveat']}" if stopped.get("caveat") else ""
    return (f"**Partial: stopped after {stopped['done']} of {counted(stopped['of'], stopped['unit'])}**; every figure "
            f"here is over those {stopped['done']} only{caveat}.")


def _kept_where(path: Path, section: str | None) -> str:
    """``path`` (or its ``section``) as the stop line names it, saying what it replaced."""
    if section is None:
        return f"{path}" + (" (replacing the file there)" if path.exists() else "")
    there = path.is_file() and f"<!-- {section}:start -->" in path.read_text(errors="replace")
    return f"the section {section} of {path}" + (" (replacing the one there)" if there else "")


def keep_stopped(done: int, total: int, unit: str, outputs: list[tuple[Path | None, str | None]], result, write,
                 caveat: str = "") -> None:
    """Where a long command is stopped (Ctrl-C, SIGTERM) after ``done`` of its ``total`` inputs: ``write(result())``,
    ``result()`` the result over those ``done`` alone, marked with :func:`stopped_fields`, when any finished and one
    of ``outputs`` (``(path, None)``: a file, ``(path, section)``: a Markdown file's section; path None or ``-``: not
    given, or standard output) was asked for; the command line's stop line says what was kept and where, naming each
    file or section it replaced, and ``caveat`` (how the finished inputs differ from all), then what it said before
    (:class:`Kept`'s word on --resume). A second stop while ``result()`` runs keeps nothing. The caller raises the
    stop again."""
    files = [(Path(p), s) for p, s in outputs if p is not None and str(p) != "-"]
    of, before = f"{done} of {counted(total, unit)}", "".join(f"; {note}" for note in ON_STOP)

    def say(text: str) -> None:
        note_on_stop(text + before)

    if done == 0:
        return say(f"no {unit} was finished: nothing kept")
    if not files:
        return say(f"{of} finished; nothing kept (no output file was given: --json FILE keeps them)")
    where = " and ".join(_kept_where(p, s) for p, s in files)
    say(f"stopped again while taking the figures of the {of} finished: nothing kept")
    print(f"stopping: taking the figures of the {of} finished (Ctrl-C again keeps nothing)", file=sys.stderr,
          flush=True)  # seconds to a minute (eval-estimator runs its estimator on them): not a hang
    kept = result()
    with stops_held():  # the files and the line naming them change together
        write(kept)
        say(f"kept the {of} finished, marked partial (\"stopped\"), in {where}" + (f"; {caveat}" if caveat else ""))
