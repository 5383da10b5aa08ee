"""``python -m mi_core <command> ...``: dispatch to each command's own ``main(argv)``.

Each engine command lives in its own module so that ``--help`` of one never imports the others'
dependencies; a domain brings the commands only it has (``Domain.commands``, listed after these).
Errors about the user's input (a bad puzzle, a missing file, an unknown sampler) print one clear line
and exit with status 2; they never show a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import unicodedata

from mi_core.domain import domain_commands
from mi_core.options import ArgumentParser

COMMANDS = {
    "train": ("mi_core.commands.train", "train a model: train sudoku ..."),
    "bench": ("mi_core.commands.bench", "decode inputs with a sampler and score them: bench DOMAIN ..."),
    "sweep": ("mi_core.bench.sweep", "run a grid of samplers and parameters: sweep DOMAIN ..."),
    "probe": ("mi_core.commands.probe", "exact pairwise MI by perturbation probing: probe DOMAIN ..."),
    "estimate": ("mi_core.commands.estimate", "MI matrix from the neural estimator: estimate DOMAIN ..."),
    "eval-model": ("mi_core.commands.eval_model", "masked-position perplexity against composition: eval-model antibody ..."),
    "eval-estimator": ("mi_core.bench.estimator", "compare estimator and exact probe: eval-estimator DOMAIN ..."),
    "make-estimator-data": ("mi_core.train.estimator_data", "exact-probe training shards for the estimator: make-estimator-data DOMAIN ..."),
    "train-estimator": ("mi_core.train.estimator", "train the neural MI estimator on probe shards"),
    "train-order": ("mi_core.order.train", "learn a generation-order selector by variational inference: train-order DOMAIN ..."),
    "bench-order": ("mi_core.bench.order", "learned order vs step-budget heuristics at T: bench-order sudoku ..."),
}

USER_ERRORS = (ValueError, FileNotFoundError, PermissionError, IsADirectoryError)


def foreign_digit(argv: list[str]) -> str | None:
    """One line about the first argument holding a non-ASCII digit ('٣', '３', '²'), which Python's
    ``int()`` would read as a number (or fail on obscurely); None when there is none. Arguments naming an
    existing file are skipped (a path may hold any character)."""
    for n, arg in enumerate(argv, start=1):
        for i, ch in enumerate(arg):
            if not ch.isascii() and unicodedata.category(ch) in ("Nd", "No", "Nl") and not os.path.exists(arg):
                name = unicodedata.name(ch, "unnamed character")
                option = argv[n - 2] if n > 1 and argv[n - 2].startswith("-") else f"argument {n}"
                return (f"{option} {arg!r}: {ch!r} (U+{ord(ch):04X} {name}) at position {i + 1} is not an "
                        "ASCII digit; write numbers with the digits 0-9")
    return None


def build_parser() -> argparse.ArgumentParser:
    """The top of the command line: a subcommand per command; each command's module parses the rest (with a
    subcommand per domain, so ``python -m mi_core COMMAND DOMAIN --help`` lists that domain's options)."""
    parser = ArgumentParser(prog="python -m mi_core", description="MI Lens: pairwise MI of masked diffusion models "
                            "and the decoders that use it.", formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    listed = {name: text for name, (_, text) in COMMANDS.items()}
    listed.update({name: c.help for name, c in domain_commands().items()})
    for name, text in listed.items():
        sub = commands.add_parser(name, help=text, add_help=False, prefix_chars="\0")
        sub.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


def find_command(name: str):
    """The ``main(argv)`` of command ``name`` (None: no such command); an engine command's module is
    imported only now. Prints the one line and exits 2 when its module cannot be imported."""
    if name in COMMANDS:
        try:
            return importlib.import_module(COMMANDS[name][0]).main
        except ModuleNotFoundError as err:
            print(f"error: command {name!r} is not available in this build ({err})", file=sys.stderr)
            raise SystemExit(2) from None
    command = domain_commands().get(name)
    return None if command is None else command.main


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(build_parser().format_help())
        return 0
    name, rest = argv[0], argv[1:]
    problem = foreign_digit(rest)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        command = find_command(name)
        if command is None:
            names = [*COMMANDS, *domain_commands()]
            print(f"error: unknown command {name!r}; choose one of {', '.join(names)} "
                  "(python -m mi_core --help)", file=sys.stderr)
            return 2
        return command(rest) or 0
    except SystemExit as done:  # argparse: --help (0) or a bad option (2), its one line already printed
        return done.code if isinstance(done.code, int) else (0 if done.code is None else 2)
    except USER_ERRORS as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
