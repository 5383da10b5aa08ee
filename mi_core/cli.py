"""``python -m mi_core <command> [DOMAIN] [options]``: the one module that knows argparse.

A command is a module (or a domain's :class:`mi_core.domain.Command`) with ``options(domain)`` (or
``OPTIONS``: no domain) returning option dataclasses, ``main(args)``, and optionally ``serves(domain)`` (with
``UNSERVED``: why a registered domain it refuses cannot run it) and ``describe(domain)``. Its module is imported only when named. Every value is checked before any work, and
errors about the user's input print one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import importlib
import os
import re
import signal
import sys
import threading
import types
import typing
import unicodedata
from pathlib import Path

from mi_core.domain import DOMAINS, PLUGIN_PROBLEMS, Command, Domain, describe_char, domain_commands, load_builtin
from mi_core.io import ON_STOP, TYPED_AS_FOLDER, note_on_stop, user_path
from mi_core.options import DEFAULT_FLOAT, DEFAULT_INT, group_fields, option_text, range_error, spec_of

COMMANDS = {
    "train": ("mi_core.train.mdm", "train a model: train sudoku ..."),
    "bench": ("mi_core.commands.bench", "decode inputs with a sampler and score them: bench DOMAIN ..."),
    "sweep": ("mi_core.bench.sweep", "run a grid of samplers and parameters: sweep DOMAIN ..."),
    "probe": ("mi_core.commands.probe", "exact pairwise MI by perturbation probing: probe DOMAIN ..."),
    "estimate": ("mi_core.commands.estimate", "MI matrix from the neural estimator: estimate DOMAIN ..."),
    "eval-estimator": ("mi_core.bench.estimator", "compare estimator and exact probe: eval-estimator DOMAIN ..."),
    "make-estimator-data": ("mi_core.train.estimator_data", "exact-probe training shards for the estimator: make-estimator-data DOMAIN ..."),
    "train-estimator": ("mi_core.train.estimator", "train the neural MI estimator on probe shards"),
    "train-order": ("mi_core.order.train", "learn a generation-order selector by variational inference: train-order DOMAIN ..."),
    "bench-order": ("mi_core.bench.order", "learned order vs step-budget heuristics at T: bench-order sudoku ..."),
    "generate": ("mi_core.commands.generate", "sample sequences from a model: generate protein --length 80 ..."),
}

USER_ERRORS = (ValueError, FileNotFoundError, PermissionError, IsADirectoryError)


# -- flags from dataclass fields -------------------------------------------------------------------------
def _noted(base: type) -> type:
    """``base`` (an argparse action) that also adds its option to ``args.given``, even when given its default."""

    def __call__(self, parser, namespace, values, option_string=None):
        base.__call__(self, parser, namespace, values, option_string)
        namespace.given = getattr(namespace, "given", frozenset()) | {self.dest}

    return type(f"Noted{base.__name__}", (base,), {"__call__": __call__})


STORE, STORE_TRUE, STORE_FALSE, APPEND, NEGATABLE = (
    _noted(argparse._StoreAction), _noted(argparse._StoreTrueAction), _noted(argparse._StoreFalseAction),
    _noted(argparse._AppendAction), _noted(argparse.BooleanOptionalAction))


class ArgumentParser(argparse.ArgumentParser):
    """An argparse parser whose errors are one ``error:`` line, and that checks each parsed value's range."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        kwargs.setdefault("allow_abbrev", False)  # "--seed 5" was read as "--seeds 5" where only --seeds exists
        super().__init__(*args, **kwargs)
        # "-1,1,1" (--mix) or "-1e-3" is a negative number, not an unknown flag (as Python 3.13's argparse reads it)
        self._negative_number_matcher = re.compile(r"^-\.?\d")
        self._checks: list[tuple[str, str, tuple | None, typing.Callable | None]] = []
        self.path_flags: set[str] = set()  # options whose value is a file or folder name

    def add_field(self, f: dataclasses.Field, kind: type, default, target=None) -> None:
        """One flag for dataclass field ``f`` of type ``kind``, into ``target`` (a group) or the parser."""
        spec = spec_of(f)
        flags = spec.flags or (f"--{f.name.replace('_', '-')}",)
        empty = default is None or default is False or (isinstance(default, (str, list)) and not default)  # 0 is shown
        shown = not empty and "%(default)" not in spec.help and "(default:" not in spec.help and kind is not bool
        text = option_text(default) if isinstance(default, (tuple, list)) else "%(default)s"
        required = spec.required and spec.group is None
        kw = dict(dest=f.name, default=default, help=(plain(spec.help) + (f" (default: {text})" if shown else "")
                                                      + (" (required)" if required else "")) or None)
        if kind is bool:
            kw["action"] = NEGATABLE if spec.negatable else STORE_FALSE if default else STORE_TRUE
        else:
            converter = path_arg if kind is Path else kind if kind in (int, float) else str
            kw.update(action=APPEND if spec.many else STORE, type=parsed(spec.parse) if spec.parse else converter,
                      choices=spec.choices, metavar=spec.metavar, required=required)
        (target or self).add_argument(*flags, **kw)
        if kind is Path:
            self.path_flags.update(flags)
        numeric = kind in (int, float) and spec.parse is None
        bounds = spec.range or ((DEFAULT_INT if kind is int else DEFAULT_FLOAT) if numeric else None)
        self._checks.append((f.name, flags[-1], bounds, spec.check))

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        for dest, flag, bounds, check in self._checks:
            value = getattr(namespace, dest, None)
            for item in value if isinstance(value, list) else [value]:
                problem = (bounds and not isinstance(item, bool) and isinstance(item, (int, float))
                           and range_error(flag, item, *bounds)) or (check and item is not None and check(item))
                if problem:
                    self.error(problem if problem.startswith("argument") else f"argument {flag}: {problem}")
        return namespace, extras

    typed: list[str] = []  # the arguments being parsed (set by parse), for the hint of a missing option

    def error(self, message: str):
        if message.startswith("the following arguments are required"):  # argparse stops here before naming extras
            message += self.missing_hint(re.findall(r"--[\w-]+", message))
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")

    def missing_hint(self, missing: list[str]) -> str:
        """What the user typed in place of a ``missing`` option: cut short (``--puzzle`` for ``--puzzles``, read as
        it once was), misspelt (``--puzles``) or not an option here (``--fasta-file``); else ``""``."""
        unknown = [t for t in ArgumentParser.typed if t.startswith("--") and t not in self._option_string_actions]
        for t in ArgumentParser.typed:
            if cut := [f for f in missing if t.startswith("--") and f.startswith(t) and t != f]:
                return f"; {t} is not {' or '.join(cut)}: write options in full"  # "--s": --sequence or --state
        for t in unknown:
            if near := difflib.get_close_matches(t, missing, 1, 0.8):
                return f"; {t} is not an option: did you mean {near[0]}?"
        return f"; {unknown[0]} is not an option of this command" if unknown else ""


def path_arg(text: str) -> Path:
    """A path option's value, ``~`` read as the home folder; an empty one is refused (``Path('')`` is ``.``, the
    working folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"an empty path ({text!r}); give a file or folder name")
    return user_path(text)


path_arg.__name__ = "path"


ROLE = re.compile(r":(?:func|class|mod|meth|attr|data):`~?(?:[\w.]+\.)?(\w+)`")


def plain(text: str | None) -> str | None:
    """A docstring or help text as a terminal shows it: ``code`` marks dropped, a Sphinx role reduced to the
    name (``:func:`a.b.load``` -> ``load``)."""
    return text if not text else ROLE.sub(r"\1", text).replace("``", "")


def parsed(parse: typing.Callable) -> typing.Callable:
    """``parse`` as an argparse type whose ValueError message is the error line."""

    def typed(text: str):
        try:
            return parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return typed


def field_type(hint) -> type:
    """The flag type of an annotation: ``Path | None`` -> Path, ``list[str]`` -> str."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return field_type(args[0])
    if typing.get_origin(hint) in (list, tuple):
        return field_type(args[0]) if args else str
    return hint if isinstance(hint, type) else str


def add_options(parser: ArgumentParser, groups, domain: Domain | None = None) -> None:
    """A flag per field of each dataclass in ``groups``; an item ``(cls, {field: default})`` overrides defaults
    (:data:`mi_core.options.SKIP` leaves a field out)."""
    for group in groups:
        cls, overrides = group if isinstance(group, tuple) else (group, {})
        hints = typing.get_type_hints(cls)
        exclusive: dict[str, argparse._MutuallyExclusiveGroup] = {}
        for f in group_fields(group):
            spec = spec_of(f)
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            if spec.default_for is not None and domain is not None:
                default = spec.default_for(domain)
            default = overrides.get(f.name, default)
            target = None
            if spec.group is not None:
                if spec.group not in exclusive:
                    required = any(spec_of(g).group == spec.group and spec_of(g).required for g in dataclasses.fields(cls))
                    exclusive[spec.group] = parser.add_mutually_exclusive_group(required=required)
                target = exclusive[spec.group]
            parser.add_field(f, field_type(hints[f.name]), None if default is dataclasses.MISSING else default, target)


# -- commands --------------------------------------------------------------------------------------------
def load(name: str):
    """An engine command's module (imported now) or a domain's :class:`Command`; None: no such command."""
    if name in COMMANDS:
        try:
            return importlib.import_module(COMMANDS[name][0])
        except ModuleNotFoundError as err:
            raise ValueError(f"command {name!r} is not available in this build ({err})") from None
    return domain_commands().get(name)


def command_parser(name: str, command) -> ArgumentParser:
    """The parser of ``python -m mi_core NAME``: a subcommand per domain it serves, or its ``OPTIONS``."""
    doc = command.help if isinstance(command, Command) else command.__doc__
    parser = ArgumentParser(prog=f"python -m mi_core {name}", description=plain(doc))
    if getattr(command, "OPTIONS", None) is not None:
        add_options(parser, command.OPTIONS)
        return parser
    subs = parser.add_subparsers(dest="domain", metavar="DOMAIN", required=True, parser_class=ArgumentParser)
    describe = getattr(command, "describe", None)
    for domain in served(command):
        first, *aliases = domain.names or (domain.key,)
        sub = subs.add_parser(first, aliases=aliases, help=domain.label,
                              description=plain(describe(domain) if describe else doc))
        sub.set_defaults(domain=domain.key)
        add_options(sub, command.options(domain), domain)
    return parser


def near_option(parser: ArgumentParser, key: str | None, extras: list[str]) -> str:
    """``"; did you mean --seeds?"`` for the first unknown ``--flag`` in ``extras`` that names the start of one of
    the options of ``parser`` (of its domain ``key``'s parser) or is spelt like one; else ``""``."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    own = next((p for s in subs for p in s.choices.values() if p.get_default("domain") == key), parser)
    flags = [f for action in own._actions for f in action.option_strings if f.startswith("--")]
    typed = extras[:extras.index("--")] if "--" in extras else extras  # after "--": values, not options
    for extra in (e.split("=", 1)[0] for e in typed if e.startswith("--")):
        near = [f for f in flags if f.startswith(extra)] or difflib.get_close_matches(extra, flags, 1, 0.8)
        if near:
            return f"; did you mean {' or '.join(near[:3])}?"
        if "--set" in flags:
            from mi_core.decoding.base import sampler_parameter  # a command taking --set has loaded the strategies

            if param := sampler_parameter(extra):
                return f"; a sampler's parameter goes in {param}"
    pair = next((e for i, e in enumerate(typed) if "=" in e and not e.startswith("-")  # not an unknown flag's value
                 and not (i and typed[i - 1].startswith("--"))), None)
    return f"; each parameter takes its own --set: --set {pair}" if pair and "--set" in flags else ""


def served(command) -> list[Domain]:
    """The domains ``command`` serves: every one, unless it has ``serves(domain)``."""
    serves = getattr(command, "serves", None)
    return [d for d in DOMAINS.values() if serves is None or serves(d)]


def unserved(name: str, command, typed: str) -> str | None:
    """Why ``command`` cannot run the registered domain ``typed`` names (its module's ``UNSERVED``), in one line;
    None where it serves that domain or no registered domain goes by that name (argparse lists the choices)."""
    domain = next((d for d in DOMAINS.values() if typed == d.key or typed in d.names), None)
    serving = served(command)
    if domain is None or domain.key in {d.key for d in serving}:
        return None
    why = getattr(command, "UNSERVED", None) or "is not one this command serves (its serves(domain) is false)"
    names = ", ".join(d.cli_name for d in serving) or "no registered domain"
    return f"{name}: the {typed} domain {why}; it serves {names}"


def parse(argv: list[str]):
    """``(command, args)`` of ``argv`` (``args.given``: the options given; ``args.argv``: the arguments);
    ValueError on an unknown command."""
    name, rest = argv[0], list(argv[1:])
    command = load(name)
    if command is None:
        names = [*COMMANDS, *domain_commands()]
        near = "".join(f" (did you mean {n}?)" for n in difflib.get_close_matches(name, names, 1, 0.8))
        raise ValueError(f"unknown command {name!r}{near}; choose one of {', '.join(names)} (python -m mi_core --help)")
    parser = command_parser(name, command)
    problem = foreign_digit(rest, path_flags(parser))
    if problem:
        raise ValueError(problem)
    if getattr(command, "OPTIONS", None) is None and rest and rest[0].startswith("-") and rest[0] not in ("-h", "--help"):
        raise ValueError(f"name the domain before the options: python -m mi_core {name} DOMAIN {rest[0]} ... "
                         f"(DOMAIN: {', '.join(d.cli_name for d in served(command))})")
    if getattr(command, "OPTIONS", None) is None and rest and (refused := unserved(name, command, rest[0])):
        raise ValueError(refused)  # one line for every command, not argparse's "invalid choice" without a reason
    ArgumentParser.typed = [a.split("=", 1)[0] for a in (rest[:rest.index("--")] if "--" in rest else rest)]
    args, extras = parser.parse_known_args(rest)
    if extras:  # named with the domain's own help, where the options are listed
        key = getattr(args, "domain", None)
        prog = parser.prog + (f" {DOMAINS[key].cli_name}" if key in DOMAINS else "")
        parser.exit(2, f"error: unrecognized arguments: {' '.join(extras)}{near_option(parser, key, extras)} (see "
                       f"{prog} --help)\n")
    args.given, args.argv = frozenset(getattr(args, "given", ())), rest
    return command, args


OUTPUTS = ("json", "markdown", "out", "log")  # options a command writes; every other path option is read


def _flag(name: str) -> str:
    return f"--{name.replace('_', '-')}"


def _is_file(value, kind: str = "file") -> bool:
    """Whether an option's value (a path, or text such as a puzzle or a sequence) names an existing file (``kind``
    ``"dir"``: folder)."""
    if not isinstance(value, (str, Path)) or not str(value):
        return False
    try:
        return Path(value).is_dir() if kind == "dir" else Path(value).is_file()
    except (OSError, ValueError):  # a long sequence is too long a file name; text with a NUL is none
        return False


def in_read_folder(args, outputs, outs: dict[str, Path]) -> str | None:
    """One line when an output option names an existing file (or, for weights, the config written beside them)
    inside a folder an input path option names: ``--force`` would replace a file the command reads there (an
    estimator's shard, a manifest), else None. Only path options count (typed :class:`~pathlib.Path`): a domain key,
    a sampler or a typed state that happens to name a folder here is no folder the command reads."""
    folders = {k: v.resolve() for k, v in vars(args).items() if k not in outputs and isinstance(v, Path) and _is_file(v, "dir")}
    for out, target in outs.items():
        beside = [target.with_suffix(".json")] if target.suffix == ".safetensors" else []
        for hit in (t for t in (target, *beside) if t.is_file()):
            name = next((k for k, folder in folders.items() if folder in hit.resolve().parents), None)
            if name is not None:
                what = "is" if hit == target else f"would replace {hit.name} beside it,"
                return (f"{_flag(out)} {target} {what} a file in the {_flag(name)} folder {vars(args)[name]} this "
                        "command reads: write its output elsewhere")
    return None


def written(command, args) -> set[str]:
    """The options of ``command`` that name files it writes: :data:`OUTPUTS` and the fields declared ``writes``."""
    groups = command.OPTIONS if getattr(command, "OPTIONS", None) is not None else command.options(DOMAINS[args.domain])
    return {*OUTPUTS, *(f.name for group in groups for f in group_fields(group) if spec_of(f).writes)}


def overwrites_input(args, outputs=OUTPUTS) -> str | None:
    """One line when an output option (named in ``outputs``) names an input option's file or the config beside its
    weights, or the file of another output option, or is ``-`` (standard output: ``--markdown`` alone takes it),
    else None."""
    dash = next((k for k, v in vars(args).items() if k in outputs and k != "markdown" and str(v) == "-"), None)
    if dash:  # it wrote a file named '-'
        return f"{_flag(dash)} -: name a file or folder (standard output, '-', is taken by --markdown alone)"
    outs = {k: Path(v) for k, v in vars(args).items() if k in outputs and isinstance(v, (str, Path)) and str(v) != "-"}
    seen: dict[Path, str] = {}
    for name, path in outs.items():
        if path.resolve() in seen:
            return f"{_flag(seen[path.resolve()])} and {_flag(name)} name the same file, {path}: give each its own"
        seen[path.resolve()] = name
    read = {k: Path(v) for k, v in vars(args).items() if k not in outputs and _is_file(v)}
    for out, target in ((k, v) for k, v in outs.items() if _is_file(v)):
        for name, path in read.items():
            config = path.with_suffix(".json") if path.suffix == ".safetensors" else None
            if path.samefile(target):
                return f"{_flag(out)} {target} is the {_flag(name)} file this command reads: write its output elsewhere"
            if config is not None and config.is_file() and config.samefile(target):
                return (f"{_flag(out)} {target} is the config of the {_flag(name)} weights this command reads: write "
                        "its output elsewhere")
    return in_read_folder(args, outputs, outs)


def contradiction(args) -> str | None:
    """One line when two options given together undo each other, else None."""
    if getattr(args, "markdown", None) is not None and getattr(args, "write_markdown", True) is False:
        return "--markdown FILE writes a section and --no-markdown writes none: give one of them"
    return None


def path_flags(parser: ArgumentParser) -> set[str]:
    """The options of ``parser`` and of its domains' parsers whose value is a file or folder name."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return parser.path_flags.union(*(sub.path_flags for s in subs for sub in s.choices.values()))


def foreign_digit(argv: list[str], paths: set[str] = frozenset()) -> str | None:
    """One line about the first argument (not an existing path, nor the value of an option in ``paths``: a
    file may be named 'r².json') holding a non-ASCII digit ('٣', '３', '²'), which ``int()`` would read or fail
    on obscurely; None when there is none."""
    for n, arg in enumerate(argv, start=1):
        if (n > 1 and argv[n - 2] in paths) or arg.split("=", 1)[0] in paths:
            continue
        for i, ch in enumerate(arg):
            if not ch.isascii() and unicodedata.category(ch) in ("Nd", "No", "Nl") and not os.path.exists(arg):
                option = argv[n - 2] if n > 1 and argv[n - 2].startswith("-") else f"argument {n}"
                return (f"{option} {arg!r}: {describe_char(ch)} at position {i + 1} is not an ASCII digit; "
                        "write numbers with the digits 0-9")
    return None


def overview() -> str:
    lines = ["usage: python -m mi_core COMMAND [DOMAIN] [options]   (COMMAND [DOMAIN] --help: its options)", "",
             "MI Lens: pairwise MI of masked diffusion models and the decoders that use it.", "", "commands:"]
    listed = {name: text for name, (_, text) in COMMANDS.items()} | {n: c.help for n, c in domain_commands().items()}
    lines += [f"  {name:<22}{text}" for name, text in listed.items()]
    return "\n".join(lines)


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, a job scheduler's stop), raised as Ctrl-C is, so the same clean-up runs."""


def _terminate(signum, frame):
    raise Terminated


@contextlib.contextmanager
def sigterm_interrupts():
    """Inside, SIGTERM raises :class:`Terminated` (in the main thread, the only one that can take a handler)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


STATE_OPTIONS = ("state", "sequence")  # options that take a state's own text, not a file of them
FILE_SUFFIXES = (".txt", ".csv", ".tsv", ".fa", ".fasta", ".faa", ".json")


def state_file_hint(args, err: Exception) -> str:
    """A note for a ValueError ``err`` when an option that takes a state's own text was given what looks like a
    file's name (an existing file, or a name ending in one of :data:`FILE_SUFFIXES`): its characters were read as
    the state's."""
    for name in STATE_OPTIONS:
        value = getattr(args, name, None)
        if isinstance(err, ValueError) and isinstance(value, str) and (
                _is_file(value) or Path(value).suffix.lower() in FILE_SUFFIXES):
            files = " or ".join(_flag(k) for k in ("fasta", "puzzles") if k in vars(args))
            return (f"; {value} looks like a file's name, but the option takes a state's own characters, not a file "
                    + (f"({files} FILE reads one)" if files else '(one line of a file: "$(sed -n 1p FILE)")'))
    return ""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = None  # the parsed options, once read: an error's note may read them
    note_on_stop(None)
    TYPED_AS_FOLDER.clear()  # the paths one call typed with a trailing slash, not an earlier call's
    try:
        with sigterm_interrupts():
            load_builtin()  # a second or more (torch): a stop here is one line too
            for problem in PLUGIN_PROBLEMS:  # the other domains still serve; a command naming the missing one says so
                print(f"warning: {problem}", file=sys.stderr)
            if not argv or argv[0] in ("-h", "--help"):
                print(overview())
                return 0
            command, args = parse(argv)
            problem = overwrites_input(args, written(command, args)) or contradiction(args)
            if problem:
                raise ValueError(problem)
            return command.main(args) or 0
    except SystemExit as done:  # argparse: --help (0) or a bad option (2), its one line already printed
        return done.code if isinstance(done.code, int) else (0 if done.code is None else 2)
    except USER_ERRORS as err:
        print(f"error: {err}{state_file_hint(args, err)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # standard output's reader went away (| head): a stop, as Ctrl-C is
        return closed_output()
    except KeyboardInterrupt as stop:  # the files written are whole (atomic writes); half-written ones are removed
        term = isinstance(stop, Terminated)
        print(f"interrupted ({'SIGTERM' if term else 'Ctrl-C'}): the files already written are whole"
              + "".join(f"; {note}" for note in ON_STOP), file=sys.stderr)
        return 128 + (signal.SIGTERM if term else signal.SIGINT)
    except RuntimeError as err:  # under torchrun: a collective that failed because another rank stopped
        line = _peer_failure(err)
        if line is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        return 1


def closed_output() -> int:
    """The line and exit status of a command whose standard output was closed under it (``... | head -2``): what it
    keeps and how to go on, as on Ctrl-C; standard output then points at /dev/null, so Python's last flush at exit
    raises nothing more."""
    with contextlib.suppress(OSError, ValueError):  # (a test's stand-in for stdout has no descriptor)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    print("stopped: standard output was closed (its reader, such as head, ended); the files already written are "
          "whole" + "".join(f"; {note}" for note in ON_STOP), file=sys.stderr)
    return 128 + getattr(signal, "SIGPIPE", 13)


def _peer_failure(err: RuntimeError) -> str | None:
    if "RANK" not in os.environ:  # not under torchrun (and torch stays unimported here)
        return None
    from mi_core.scale.distributed import peer_failure

    return peer_failure(err)
