"""Layering of ``mi_core`` (docs/architecture.md): imports go down the layers only, there is no import
cycle, and plotly / streamlit are never imported, not even inside a function.

Every import is read with ``ast``, also those inside functions (a lazy import still couples two modules).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "mi_core"

# Layer of each part of mi_core, lowest first. A module may import its own part and any lower layer.
# order, train and bench are peers: none of them imports another.
LAYERS = {
    "base": -1,  # mi_core/io.py, options.py (options as dataclass fields), device.py (and the package itself)
    "scale": 0,  # the task engine and torchrun helpers: the standard library, torch, tqdm (Ray only lazily)
    "domain": 1,  # mi_core/domain.py: the Domain type and the registry
    "models": 2,
    "mi": 3,
    "decoding": 4,
    "order": 5,
    "train": 5,
    "bench": 5,
    "commands": 6,  # the engine's command entry points: they take a Domain from the registry
    "domains": 7,  # one package per domain, over the engine (its commands included)
    "cli": 8,  # mi_core/cli.py, __main__.py
}
TOP_LEVEL = {"mi_core": "base", "mi_core.io": "base", "mi_core.options": "base", "mi_core.device": "base",
             "mi_core.domain": "domain", "mi_core.cli": "cli", "mi_core.__main__": "cli"}

# Known upward or sideways imports, each with why it is still there. Empty: a new one fails the test.
EXCEPTIONS: dict[tuple[str, str], str] = {}

APP_ONLY = ("plotly", "streamlit")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def part(module: str) -> str:
    if module in TOP_LEVEL:
        return TOP_LEVEL[module]
    return module.split(".")[1]


def imports(tree: ast.AST) -> list[tuple[str, bool]]:
    """``(imported module, at module level)`` of every absolute import in ``tree``."""
    top = {id(n) for n in getattr(tree, "body", [])}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, id(node) in top))
            found += [(f"{node.module}.{a.name}", id(node) in top) for a in node.names]
    return found


def graph(root: Path = ROOT) -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    """``(module -> mi_core modules it imports, module -> app-only packages it imports anywhere)``."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    edges: dict[str, set[str]] = {m: set() for m in files}
    app: dict[str, list[str]] = {}
    for mod, path in files.items():
        for name, at_top in imports(ast.parse(path.read_text(), str(path))):
            # a package's __init__ counts when another part imports it (``from mi_core.domains.sudoku import
            # X`` couples the importer to that package); within a part it only re-exports
            if name in files and name != mod and (files[name].name != "__init__.py" or part(name) != part(mod)):
                edges[mod].add(name)
            if name.split(".")[0] in APP_ONLY:
                app.setdefault(mod, []).append(name)
    return edges, app


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def violations(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports that go up a layer or across to a peer part (the part's own modules are fine)."""
    bad = []
    for mod, targets in edges.items():
        for target in targets:
            a, b = part(mod), part(target)
            if a != b and LAYERS[b] >= LAYERS[a]:
                bad.append((mod, target))
    return sorted(bad)


EDGES, APP_IMPORTS = graph()


def test_every_module_has_a_layer():
    assert {part(m) for m in EDGES} <= set(LAYERS)


def test_no_import_cycle():
    assert cycles(EDGES) == []


def test_imports_go_down_the_layers():
    bad = [f"{a} -> {b}" for a, b in violations(EDGES) if (a, b) not in EXCEPTIONS]
    assert bad == [], "upward or sideways imports (see docs/architecture.md):\n" + "\n".join(bad)


def test_exceptions_are_still_needed():
    stale = set(EXCEPTIONS) - set(violations(EDGES))
    assert not stale, f"these exceptions no longer occur, drop them: {sorted(stale)}"


def test_no_app_package_in_the_core():
    assert APP_IMPORTS == {}


@pytest.mark.parametrize("source, expect", [
    ("import mi_core.bench.report\n", "upward"),
    ("def f():\n    from mi_core.bench.report import write_json\n", "upward"),
    ("from mi_core.io import atomic_write_text\n", None),
])
def test_checker_catches_an_upward_import(tmp_path, source, expect):
    """The checker itself: a lower module importing a higher one (also inside a function) is caught."""
    pkg = tmp_path / "mi_core"
    for sub in ("mi", "models", "bench"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "io.py").write_text("")
    (pkg / "models" / "base.py").write_text("")
    (pkg / "bench" / "report.py").write_text("")
    (pkg / "mi" / "grid.py").write_text(source)
    edges, _ = graph(pkg)
    assert bool(violations(edges)) == (expect == "upward")


def test_checker_catches_a_cycle_and_plotly(tmp_path):
    pkg = tmp_path / "mi_core" / "mi"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("import plotly.graph_objects as go\n\n\ndef f():\n    import mi_core.mi.b\n")
    (pkg / "b.py").write_text("import mi_core.mi.a\n\n\ndef g():\n    import streamlit\n")
    edges, app = graph(pkg.parent)
    assert cycles(edges) == [["mi_core.mi.a", "mi_core.mi.b"]]
    assert app == {"mi_core.mi.a": ["plotly.graph_objects"], "mi_core.mi.b": ["streamlit"]}


def test_no_function_is_longer_than_60_lines():
    """Issue 25's measure of short functions (``train/mdm.py:train`` had grown to 61 lines)."""
    long = [f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for path in sorted(ROOT.rglob("*.py")) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 60]
    assert long == []
