"""Imports run in one direction: no two modules of the package import each other (directly or round a
loop), and the bindings layer imports nothing above it. Every import counts, including those inside a
function or under ``if TYPE_CHECKING:``: a deferred import is still a tie in both directions.

The same holds for the C sources in csrc/: a C module (a .c file and the .h of the same name) depends on what it
``#include``s and on the modules that define the ``pasarela_`` functions and data it uses. The second kind of tie
is what internal.h, the declarations every file includes, hides from the ``#include`` lines alone: json.c called
json_checked.c's check while json_checked.c called json.c's UTF-8 helper, a loop no ``#include`` showed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pasarela

PACKAGE = Path(pasarela.__file__).resolve().parent  # the source tree, or the installed package
CSRC = Path(__file__).resolve().parents[2] / "csrc"


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


# ---- csrc/ ---------------------------------------------------------------------------------------------------
_COMMENT_OR_STRING = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.MULTILINE)
# a definition starts a line (a declaration ends in ';', a definition's parameter list in '{'; data: '= ...')
_PARAMETERS = r"\((?:[^()]|\([^()]*\))*\)"
_DEFINITION = re.compile(rf"^[A-Za-z_][\w \t*]*?\b(pasarela_\w+)[ \t]*({_PARAMETERS}[ \t\n]*\{{|\[[^\]]*\][ \t]*=)",
                         re.MULTILINE)
_DECLARATION = re.compile(rf"^[A-Za-z_][\w \t*]*?\bpasarela_\w+[ \t]*({_PARAMETERS}|\[[^\]]*\])[ \t\n]*;",
                          re.MULTILINE)  # a prototype, or extern data: no use of what it declares
_USE = re.compile(r"\bpasarela_\w+\b")


def _c_module(path: Path, root: Path) -> str:
    """json.c and json.h are the module "json"; csrc/cpython/parse.c is "cpython/parse"."""
    return path.relative_to(root).with_suffix("").as_posix()


def _c_graph(root: Path) -> dict[str, set[str]]:
    """C module -> the modules it includes or whose pasarela_ functions and data it uses."""
    paths = sorted(path for path in root.rglob("*") if path.suffix in (".c", ".h"))
    code = {path: _COMMENT_OR_STRING.sub(lambda m: " " if m.group(0)[0] == "/" else '""', path.read_text("utf-8"))
            for path in paths}
    defined_in: dict[str, set[str]] = {}
    for path, text in code.items():
        for match in _DEFINITION.finditer(text):
            defined_in.setdefault(match.group(1), set()).add(_c_module(path, root))
    for name, modules in defined_in.items():  # a test driver's stand-in (test_aes.c's wipe) is not what the core uses
        core = {module for module in modules if not module.startswith(("tests/", "fuzz/"))}
        defined_in[name] = core or modules
    graph: dict[str, set[str]] = {_c_module(path, root): set() for path in paths}
    for path, text in code.items():
        module = _c_module(path, root)
        for name in _INCLUDE.findall(path.read_text("utf-8")):  # (read from the text: code has the strings blanked)
            # as the compilers look: beside the including file, then csrc/ (-Icsrc)
            target = next((base / name for base in (path.parent, root) if (base / name).is_file()), None)
            assert target is not None, f"{path.relative_to(root)} includes {name}, found neither beside it nor in csrc/"
            graph[module].add(_c_module(target.resolve(), root.resolve()))
        for name in set(_USE.findall(_DECLARATION.sub(" ", text))):
            graph[module] |= defined_in.get(name, set())
        graph[module].discard(module)
    return graph


def test_the_c_graph_sees_includes_and_calls() -> None:
    graph = _c_graph(CSRC)
    assert "sha512_avx2_blocks" in graph["sha512"]  # an #include
    assert "utf8" in graph["json_checked"] and "utf8" in graph["open"]  # calls of pasarela_utf8_invalid_at
    assert "json_checked" in graph["json"]  # pasarela_json_checked_canonical
    assert "util" in graph["envelope"]  # pasarela_wipe, declared in internal.h
    assert "internal" in graph["fuzz/fuzz"] and "tests/seal_check" in graph["fuzz/fuzz_open"]


def test_the_c_graph_finds_a_loop_hidden_behind_a_shared_header(tmp_path: Path) -> None:
    (tmp_path / "shared.h").write_text("int pasarela_a(int x);\nint pasarela_b(int x);\n", "utf-8")
    (tmp_path / "a.c").write_text('#include "shared.h"\nint pasarela_a(int x) {\n    return pasarela_b(x);\n}\n',
                                  "utf-8")
    (tmp_path / "b.c").write_text('#include "shared.h"\n/* pasarela_a( in a comment is no use */\n'
                                  "int pasarela_b(int x) { return x; }\n", "utf-8")
    assert _loops(_c_graph(tmp_path)) == []
    (tmp_path / "b.c").write_text('#include "shared.h"\nint pasarela_b(int x)\n{\n'
                                  "    return x ? pasarela_a(x - 1) : 0;\n}\n", "utf-8")
    assert _loops(_c_graph(tmp_path)) == [["a", "b"]]
    (tmp_path / "c.h").write_text('#include "d.h"\n', "utf-8")
    (tmp_path / "d.h").write_text('#include "c.h"\n', "utf-8")
    assert ["c", "d"] in _loops(_c_graph(tmp_path))


def test_no_two_c_modules_depend_on_each_other() -> None:
    assert _loops(_c_graph(CSRC)) == []


TESTS = Path(__file__).resolve().parents[1]


def _test_module_imports(path: Path) -> set[str]:
    """The test modules (``test_*``) that the file at ``path`` imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name.partition(".")[0].startswith("test_")}


def test_what_tests_share_is_in_support_not_in_another_folders_test_module() -> None:
    """A test module imports another only from its own folder (pytest puts that folder on sys.path for it): run
    alone, it finds what it imports; shared pieces live in tests/support/, which imports no test module."""
    misplaced = []
    for path in sorted(TESTS.rglob("*.py")):
        for name in _test_module_imports(path):
            if path.parent.name == "support" or not (path.parent / f"{name}.py").is_file():
                misplaced.append(f"{path.relative_to(TESTS)} imports {name}")
    assert misplaced == []
    assert _test_module_imports(TESTS / "terminal_side" / "test_open_bytes.py")  # the walk sees such imports
