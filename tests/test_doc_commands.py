"""Every ``python -m mi_core ...`` line the docs and scripts print is accepted by the command line as printed.

Each line is read out of the files in :data:`SCANNED` (fenced and indented code blocks, inline code spans of
Markdown, every line of a shell script), with backslash-continued lines joined, shell comments, prompts and
leading ``NAME=value`` assignments dropped, and cut at ``&&``, ``||``, ``;``, ``|``, ``&`` and redirections.
Shell variables are replaced by the value the same file last gave them before the line (``NAME=value``,
``NAME=(words)``, ``for NAME in a b``: its first word), else by a placeholder path; ``${NAME:-default}`` is the
default where the file gives none (an empty value is one given at run time: a placeholder path),
``${NAME:+words}`` is ``words`` where it gives one and nothing where not, ``"${ARRAY[@]}"`` is the array's words
(none where the file sets none: read at run time), ``$(...)`` and ``${NAME%%pattern}`` are a placeholder path,
and ``$1`` (a function's arguments) and ``$((...))`` are ``1``. The argv after ``-m mi_core`` then goes through
:func:`mi_core.cli.parse` only (no model loads, nothing runs) in an empty folder, so the paths the lines name do
not exist there and the test is about each line's form: its command, domain, options, choices and ranges. A line
ending in ``...`` elides options, and prose that names a command in an inline span with no options (``python -m
mi_core bench-order``) names it without running it: a required option or domain such a line lacks is not counted
against it, its command and domain are. A line not checked is in :data:`SKIPPED` with the reason.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import shlex
import sys
from pathlib import Path

import pytest

from mi_core import cli
from mi_core.domain import DOMAINS, unregister

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SCANNED = sorted({*(ROOT.glob("README.md")), *ROOT.glob("docs/*.md"), ROOT / "examples" / "README.md",
                  ROOT / "BENCHMARKS.md", ROOT / "scripts" / "reproduce.sh", *ROOT.glob("scripts/*.sh"),
                  *ROOT.glob("assets/*.md")})
PLACEHOLDER = "doc-placeholder"  # a relative path: in the test's empty folder it names nothing
NUMBER = "1"  # $1, $((...)): a number, and a file name that is absent too
ELIDED = "..."
NAMED = "(named in prose)"  # after the argv of an inline span with no options: it names a command, runs none

# (file, the whole command line as documented_commands() joins it) -> why the line is not checked; only that line
# is skipped, so a skip cannot hide another line of the file that begins or contains the same words
SKIPPED: dict[tuple[str, str], str] = {
    ("README.md", "python -m mi_core probe mine ..."): "a template: 'mine' is the hypothetical domain of "
                                                      "my_lab.domains",
    ("docs/architecture.md", "python -m mi_core probe mine ..."): "a template: 'mine' is the hypothetical domain "
                                                                 "of my_lab.domains",
    ("README.md", "python -m mi_core COMMAND DOMAIN --help"): "a template: COMMAND and DOMAIN stand for any "
                                                             "command and domain",
    ("docs/architecture.md", "python -m mi_core COMMAND: every command and every option"):
        "a file-tree listing: COMMAND stands for any command",
}


# -- reading the lines ---------------------------------------------------------------------------------------
def shell_logical_lines(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """``(first line number, text)`` of each logical line: a line ending in ``\\`` joined to the next."""
    out, start, parts = [], None, []
    for number, line in lines:
        if start is None:
            start = number
        if line.rstrip().endswith("\\"):
            parts.append(line.rstrip()[:-1])
            continue
        parts.append(line)
        out.append((start, " ".join(p.strip() for p in parts)))
        start, parts = None, []
    if parts:
        out.append((start, " ".join(p.strip() for p in parts)))
    return out


FENCE = re.compile(r"^\s*(```|~~~)")
SPAN = re.compile(r"(`+)(.+?)\1", re.S)
SPAN_MARK = "\0"  # before the text of an inline span: prose may name a command without running it


def markdown_snippets(text: str) -> list[tuple[int, str]]:
    """``(line number, shell text)`` of a Markdown file's code: fenced and indented blocks line by line, and the
    inline code spans of its paragraphs (a span may run over a line break; its text is marked :data:`SPAN_MARK`)."""
    lines = text.splitlines()
    out: list[tuple[int, str]] = []
    fenced, block, para = False, [], []

    def flush_para():
        if not para:
            return
        if para[0][1].startswith("    ") and "`" not in "".join(t for _, t in para):  # an indented code block
            out.extend(shell_logical_lines(para))
        else:
            joined = "\n".join(t for _, t in para)
            for m in SPAN.finditer(joined):
                number = para[0][0] + joined[:m.start()].count("\n")
                out.append((number, SPAN_MARK + m.group(2).replace("\n", " ").strip()))
        para.clear()

    for number, line in enumerate(lines, start=1):
        if FENCE.match(line):
            if fenced:
                out.extend(shell_logical_lines(block))
                block = []
            else:
                flush_para()
            fenced = not fenced
        elif fenced:
            block.append((number, line))
        elif not line.strip():
            flush_para()
        else:
            para.append((number, line))
    flush_para()
    return out


Definitions = list  # [(line, name, kind, raw)]: kind "scalar" (raw: text), "array" or "for" (raw: words)
ASSIGN = re.compile(r"(?:^|[\s;(])(?:export\s+|local\s+)?([A-Za-z_]\w*)=(\([^)]*\)|\"[^\"]*\"|'[^']*'|[^\s;]*)", re.M)
FOR = re.compile(r"\bfor\s+([A-Za-z_]\w*)\s+in\s+([^;\n]*);")


def shell_definitions(numbered: list[tuple[int, str]]) -> Definitions:
    """The shell variables ``numbered`` (``(line number, text)``) sets: ``NAME=value``, ``NAME=(words)`` (over
    lines too) and ``for NAME in words``, in order; comments left out."""
    found = []
    text = "\n".join(re.sub(r"(^|\s)#.*", "", t) for _, t in numbered)
    numbers = [n for n, _ in numbered]

    def line_of(offset: int) -> int:
        return numbers[min(text.count("\n", 0, offset), len(numbers) - 1)]

    for m in ASSIGN.finditer(text):
        name, value = m.groups()
        try:
            if value.startswith("("):
                found.append((line_of(m.start(1)), name, "array", shlex.split(value[1:-1])))
            else:
                found.append((line_of(m.start(1)), name, "scalar", (shlex.split(value) or [""])[0] if value.strip("\"'") else ""))
        except ValueError:  # not shell (prose such as "x=(a" in a span): not a value
            continue
    for m in FOR.finditer(text):
        found.append((line_of(m.start(1)), m.group(1), "for", m.group(2)))
    return sorted(found, key=lambda d: d[0])


class Shell:
    """Expands the shell words of the line at ``line`` of a file with ``definitions`` (the nearest one before it)."""

    def __init__(self, definitions: Definitions, line: int):
        self.definitions, self.line = definitions, line
        self.resolving: set[str] = set()  # NAME=${NAME:-x} reads the NAME of the environment: unset here

    def lookup(self, name: str):
        before = [d for d in self.definitions if d[1] == name and d[0] <= self.line]
        return before[-1][2:] if before else None

    def words(self, name: str) -> list[str] | None:
        """The words of variable ``name`` (a loop's: its first), None where the file sets none."""
        found = self.lookup(name)
        if found is None or name in self.resolving:
            return None
        self.resolving.add(name)
        try:
            return self._words(*found)
        finally:
            self.resolving.discard(name)

    def _words(self, kind: str, raw) -> list[str] | None:
        if kind == "array":  # an array in it ("${OTHER[@]}") gives its words
            inner = [re.fullmatch(r"\$\{(\w+)\[[@*]\]\}", w) for w in raw]
            return [x for w, m in zip(raw, inner) for x in ((self.words(m.group(1)) or []) if m else [self.expand(w)])]
        if kind == "for":
            try:
                return shlex.split(self.expand(raw))[:1] or [""]
            except ValueError:
                return None
        return [self.expand(raw)]

    def scalar(self, name: str) -> str | None:
        words = self.words(name)
        return None if words is None else " ".join(words)

    def expand(self, text: str, depth: int = 0) -> str:
        """``text`` with its shell expansions replaced (see the module's docstring)."""
        if depth > 8:
            return PLACEHOLDER
        out, i = [], 0
        while i < len(text):
            ch = text[i]
            if ch == "'" and (end := text.find("'", i + 1)) > 0:  # single quotes expand nothing
                out.append(text[i:end + 1])
                i = end + 1
                continue
            if ch != "$" or i + 1 >= len(text):
                out.append(ch)
                i += 1
                continue
            nxt = text[i + 1]
            if nxt == "(":  # $(...): a path; $((...)): a number
                end = _closing(text, i + 1, "()")
                out.append(NUMBER if text.startswith("$((", i) else PLACEHOLDER)
                i = end
            elif nxt == "{":
                end = _closing(text, i + 1, "{}")
                body = text[i + 2:end - 1]
                i = end
                out.append(self.braced(body, out, text, depth))
                if out[-1] is None:  # "${ARR[@]}": the quotes around it go with it
                    out.pop()
                    words = self.words(re.match(r"\w+", body).group(0)) or []
                    if out and out[-1] == '"' and text[i:i + 1] == '"':
                        out.pop()
                        i += 1
                    out.append(" ".join(shlex.quote(w) for w in words))
            elif re.match(r"[A-Za-z_]", nxt):
                name = re.match(r"\w+", text[i + 1:]).group(0)
                value = self.scalar(name)
                out.append(value or f"{PLACEHOLDER}/{name}")
                i += 1 + len(name)
            elif nxt.isdigit() or nxt in "@*#?":  # a function's or script's arguments
                out.append(NUMBER)
                i += 2
            else:
                out.append(ch)
                i += 1
        return "".join(out)

    def braced(self, body: str, out: list, text: str, depth: int) -> str | None:
        """The value of ``${body}``; None for an array's words (the caller expands them)."""
        if re.fullmatch(r"\w+\[[@*]\]", body):
            return None
        m = re.fullmatch(r"(\w+)(:?[-=+?])(.*)", body, re.S)
        if m:
            name, op, word = m.groups()
            value = self.scalar(name)
            if op.endswith("+"):  # ${NAME:+words}: the words where the file sets NAME
                return self.expand(word, depth + 1) if value else ""
            return value if value else self.expand(word, depth + 1)  # ${NAME:-default}
        if re.fullmatch(r"\w+", body):
            return self.scalar(body) or f"{PLACEHOLDER}/{body}"
        if body.isdigit():
            return NUMBER
        return PLACEHOLDER  # ${NAME%%pattern}, ${#NAME} and the like


def _closing(text: str, start: int, pair: str) -> int:
    """The index just past the bracket that closes the one at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        depth += {pair[0]: 1, pair[1]: -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return len(text)


CUT = {"&&", "||", ";", ";;", "|", "&", ">", ">>", "<", "<<", "<<<", ")", "(", "|&", ">&", "&>"}


def commands_in(line: str, shell: Shell) -> list[list[str]]:
    """The argv after each ``-m mi_core`` of one shell line (a quoted ``python -m mi_core ...`` is an argument of
    another command, not one)."""
    line = re.sub(r"^\s*\$\s+", "", line)  # a prompt
    line = re.sub(r"(?<=\s)\d>&\d|(?<=\s)\d>", " > ", shell.expand(line))
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>()")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    tokens = list(lexer)
    found = []
    for n in range(len(tokens) - 1):
        if tokens[n] == "-m" and tokens[n + 1] == "mi_core":
            argv = []
            for token in tokens[n + 2:]:
                if token in CUT:
                    break
                argv.append(token)
            found.append(argv)
    return found


def documented_commands() -> list[tuple[str, int, str, list[str]]]:
    """``(file, line number, command text, argv)`` of every ``-m mi_core`` command line in :data:`SCANNED`."""
    found = []
    for path in SCANNED:
        text = path.read_text()
        rel = path.relative_to(ROOT).as_posix()
        snippets = markdown_snippets(text) if path.suffix == ".md" else shell_logical_lines(
            list(enumerate(text.splitlines(), start=1)))
        definitions = shell_definitions(snippets if path.suffix == ".md" else
                                        list(enumerate(text.splitlines(), start=1)))
        for number, snippet in snippets:
            if not re.search(r"-m\s+mi_core(\s|$)", snippet):
                continue
            try:
                commands = commands_in(snippet.lstrip(SPAN_MARK), Shell(definitions, number))
            except ValueError as err:  # unbalanced quotes: a line the reader cannot take apart
                raise AssertionError(f"{rel}:{number}: {err}: {snippet}") from None
            for argv in commands:
                if snippet.startswith(SPAN_MARK) and not any(a.startswith("-") or a == ELIDED for a in argv):
                    argv = [*argv, NAMED]  # prose naming a command ("the `python -m mi_core bench-order` rows")
                found.append((rel, number, "python -m mi_core " + shlex.join(argv), argv))
    return found


def skip_reason(rel: str, command: str) -> str | None:
    return SKIPPED.get((rel, command))


# -- checking them -------------------------------------------------------------------------------------------
def refusal(argv: list[str]) -> str | None:
    """None when ``python -m mi_core ARGV`` gets past the parse stage (``--help`` too), else why not."""
    elided = bool(argv) and argv[-1] in (ELIDED, NAMED)
    argv = argv[:-1] if elided else argv
    if not argv or argv[0] in ("-h", "--help"):  # main prints the overview
        return None
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            _, args = cli.parse(list(argv))
    except SystemExit as done:
        message = err.getvalue().strip()
        if done.code in (0, None):
            return None
        if elided and "error: the following arguments are required" in message:
            return None
        return f"exit {done.code}: {message}"
    except ValueError as error:
        return f"ValueError: {error}"
    problem = cli.contradiction(args)  # two options that undo each other: refused before any work, by form alone
    return f"ValueError: {problem}" if problem else None


EXAMPLE_DOMAINS = ("brackets", "necklace")  # module = domain key, as examples/README.md exports them


@pytest.fixture(scope="module")
def example_domains():
    """The plugin domains of examples/ (``MI_LENS_DOMAINS=brackets`` or ``necklace``, ``PYTHONPATH=examples:.``),
    for their lines."""
    sys.path.insert(0, str(EXAMPLES))
    for name in EXAMPLE_DOMAINS:
        module = importlib.import_module(name)  # registers the domain on its first import
        if name not in DOMAINS:  # imported and unregistered earlier in this process
            importlib.reload(module)
    yield EXAMPLE_DOMAINS
    for name in EXAMPLE_DOMAINS:
        unregister(name)
    sys.path.remove(str(EXAMPLES))


def test_the_lines_are_found_in_every_scanned_file():
    found = documented_commands()
    counts = {p.relative_to(ROOT).as_posix(): 0 for p in SCANNED}
    for rel, *_ in found:
        counts[rel] += 1
    print(f"\n{len(found)} command lines in {len(SCANNED)} files:")
    for rel, count in counts.items():
        print(f"  {count:4d}  {rel}")
    assert len(SCANNED) >= 15 and {"README.md", "scripts/reproduce.sh", "examples/README.md"} <= set(counts)
    assert len(found) >= 200, f"only {len(found)} command lines found: the extraction has broken"
    for rel in ("README.md", "scripts/reproduce.sh", "examples/README.md", "docs/scale.md", "BENCHMARKS.md"):
        assert counts[rel] >= 5, f"{rel}: {counts[rel]} command lines"


def test_every_documented_command_is_accepted(example_domains, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the paths the lines name are absent: only each line's form is checked
    refused, skipped = [], []
    for rel, number, command, argv in documented_commands():
        why = skip_reason(rel, command)
        if why:
            skipped.append(f"{rel}:{number}: {command} ({why})")
            continue
        problem = refusal(argv)
        if problem:
            refused.append(f"{rel}:{number}: {command}\n    {problem}")
    print(f"\nskipped {len(skipped)}:\n" + "\n".join(skipped))
    assert not refused, f"{len(refused)} documented command lines are refused:\n" + "\n".join(refused)


def test_every_skip_is_of_a_line_still_printed():
    found = documented_commands()
    unused = set(SKIPPED) - {(rel, command) for rel, _, command, _ in found}
    assert not unused, f"SKIPPED entries that match no documented line (remove them): {sorted(unused)}"


def test_a_skip_covers_its_own_line_only():
    """Before: a skip matched every line of its file that contained its text, so ("README.md", "probe mine") also
    skipped a later ``probe mine --no-such-flag`` or ``probe minefield``, unchecked and unsaid."""
    assert skip_reason("README.md", "python -m mi_core probe mine ...")
    for command in ("probe mine --no-such-flag", "probe minefield", "COMMAND DOMAIN --help --bad", "probe mine"):
        assert skip_reason("README.md", "python -m mi_core " + command) is None, command
    assert skip_reason("docs/scale.md", "python -m mi_core probe mine ...") is None


@pytest.mark.parametrize("text, argv", [
    ("PYTHONPATH=. python -m mi_core bench sudoku --limit 5 \\\n    --json out.json  # a comment",
     ["bench", "sudoku", "--limit", "5", "--json", "out.json"]),
    ("for v in 4 1; do python3 -m mi_core bench sudoku --views $v 2>&1 | tail -n 3; done",
     ["bench", "sudoku", "--views", "4"]),
    ("$ python -m mi_core sweep sudoku ${level:+--level $level} --name \"$(date)\" > log && echo done",
     ["sweep", "sudoku", "--name", PLACEHOLDER]),
    ("DEVICE=cuda; OUT=${OUT:-${BASE:-runs/x}}\npython -m mi_core bench sudoku --device \"$DEVICE\" --json \"$OUT/b.json\" "
     "--limit \"${LIMIT:-500}\" --views $2 --puzzles \"$DATA/${set%.*}.csv\"",
     ["bench", "sudoku", "--device", "cuda", "--json", "runs/x/b.json", "--limit", "500", "--views", NUMBER,
      "--puzzles", f"{PLACEHOLDER}/DATA/{PLACEHOLDER}.csv"]),
    ('step x 10 "$PY" -m mi_core probe sudoku "${ARGS[@]}" --puzzle "$P"; ARGS=(--eps 0.1)',
     ["probe", "sudoku", "--eps", "0.1", "--puzzle", f"{PLACEHOLDER}/P"]),
    ('python scripts/training_summary.py a.json --command "python -m mi_core train sudoku ..."', None),
])
def test_the_extraction_reads_shell_as_written(text, argv):
    lines = shell_logical_lines(list(enumerate(text.splitlines(), start=1)))
    definitions = shell_definitions(list(enumerate(text.splitlines(), start=1)))
    got = [a for number, line in lines for a in commands_in(line, Shell(definitions, number))]
    assert got == ([argv] if argv else [])


def test_a_refused_line_is_caught():
    assert refusal(["train", "sudoku", "--no-such-flag"]).startswith("exit 2: error: unrecognized arguments")
    assert refusal(["bench", "sudoku", "--limit", "0"]) and refusal(["bench", "sudoku", "--sampler", "nope"])
    assert refusal(["train-order", "sudoku", ELIDED]) is None  # elided: its required options are not counted
