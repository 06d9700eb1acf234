"""Imports run in one direction: no two modules of the package import each other (directly or round a
loop), and the bindings layer imports nothing above it. Every import counts, including those inside a
function or under ``if TYPE_CHECKING:``: a deferred import is still a tie in both directions."""

from __future__ import annotations

import ast
from pathlib import Path

import pasarela

PACKAGE = Path(pasarela.__file__).resolve().parent  # the source tree, or the installed package


def _module_name(path: Path) -> str:
    parts = ["pasarela", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports (``from X import name`` counts X.name when that is a module)."""
    paths = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")
                base = base[: len(base) - node.level + 1] if node.level else []
                source = ".".join([*base, *([node.module] if node.module else [])])
                submodules = {f"{source}.{alias.name}" for alias in node.names} & paths.keys()
                targets.update(submodules or {source})
        graph[name] = {target for target in targets if target in paths and target != name}
    return graph


def _loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                loops.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return loops


def test_the_graph_sees_deferred_and_type_checking_imports() -> None:
    graph = _import_graph()
    assert "pasarela.terminal.inbound" in graph["pasarela.terminal.request"]
    assert "pasarela.transfers.amounts" in graph["pasarela.cards.validation"]
    assert _loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_two_modules_import_each_other() -> None:
    graph = _import_graph()
    # A package's __init__ hands its modules' names on, so it and a module importing a sibling through it
    # are not a loop of the code itself: those edges are left out.
    without_faces = {
        name: {target for target in targets if not name.startswith(target + ".")}
        for name, targets in graph.items()
    }
    assert _loops(without_faces) == []


def test_binding_imports_nothing_above_it() -> None:
    assert _import_graph()["pasarela._binding"] <= {"pasarela.errors", "pasarela._version", "pasarela._native"}
