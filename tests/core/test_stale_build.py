"""A stale compiled core fails loudly at import instead of misbehaving.

The C core embeds the package version (PASARELA_VERSION, from _version.py); pasarela._binding
compares it with pasarela.__version__ at import. Here a copy of the package gets a core compiled
for another version, and importing it in a fresh interpreter must raise ImportError saying so.
Needs the source tree (csrc/) and a C compiler, as the build does.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

from cffi import FFI
from setuptools import Distribution, Extension

import pasarela
from pasarela import _fastcall, _native

ROOT = Path(__file__).resolve().parents[2]
CSRC = ROOT / "csrc"
STALE_VERSION = "0.0.0+stale"


def _core_sources() -> list[str]:
    """csrc/build_ffi.py's SOURCES, read without running the script (it reads python/pasarela/_version.py, which a
    run against the installed package, from a copy of the tests and csrc/, does not have)."""
    for node in ast.parse((CSRC / "build_ffi.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and [getattr(target, "id", None) for target in node.targets] == ["SOURCES"]:
            sources: list[str] = ast.literal_eval(node.value)
            return sources
    raise AssertionError("csrc/build_ffi.py has no SOURCES list")


def _package_copy(destination: Path) -> Path:
    """The package's Python files under destination/pasarela, without any compiled module."""
    source = Path(pasarela.__file__).resolve().parent
    shutil.copytree(source, destination / "pasarela",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    return destination / "pasarela"


def _import_in_subprocess(path: Path) -> subprocess.CompletedProcess[str]:
    """Imports pasarela in a fresh interpreter with path first on sys.path (-I: no PYTHONPATH, no cwd)."""
    code = f"import sys; sys.path.insert(0, {str(path)!r}); import pasarela; print(pasarela.__file__)"
    return subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=120)


def test_import_of_a_core_built_for_another_version_raises_import_error(tmp_path: Path) -> None:
    _package_copy(tmp_path / "pkg")
    ffi = FFI()
    ffi.cdef((CSRC / "pasarela_cdef.h").read_text(encoding="utf-8"))
    ffi.set_source(
        "pasarela._native",
        '#include "pasarela.h"',
        sources=[str(CSRC / name) for name in _core_sources()],
        include_dirs=[str(CSRC)],
        define_macros=[("PASARELA_VERSION", f'"{STALE_VERSION}"')],
        extra_compile_args=["/Od"] if sys.platform == "win32" else ["-O0"],  # only its version matters here
        py_limited_api=True,
    )
    ffi.compile(tmpdir=str(tmp_path / "pkg"))

    result = _import_in_subprocess(tmp_path / "pkg")

    assert result.returncode != 0, result.stdout
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.startswith("ImportError: "), result.stderr
    assert f"built for pasarela {STALE_VERSION} but this is pasarela {pasarela.__version__}" in last_line
    assert "stale" in last_line and "rebuild" in last_line


def test_import_of_a_core_built_for_this_version_succeeds(tmp_path: Path) -> None:
    """The control: the same copy with the current build of the core imports from where it was put."""
    package = _package_copy(tmp_path / "pkg")
    for module in (_native, _fastcall):
        shutil.copy2(Path(module.__file__), package / Path(module.__file__).name)

    result = _import_in_subprocess(tmp_path / "pkg")

    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()).resolve() == (package / "__init__.py").resolve()


def test_import_with_fastcall_built_against_another_workspace_layout_raises_import_error(tmp_path: Path) -> None:
    """pasarela._fastcall reads fields of the workspace itself: built from a pasarela.h whose workspace has
    another layout than the cffi module's (a stale build of one of the two), it must refuse at import, before
    any call could read the wrong bytes."""
    package = _package_copy(tmp_path / "pkg")
    shutil.copy2(Path(_native.__file__), package / Path(_native.__file__).name)
    headers = tmp_path / "include"
    headers.mkdir()
    header = (CSRC / "pasarela.h").read_text(encoding="utf-8")
    grown = header.replace("    size_t plaintext_len;   /* results */", "    size_t added;\n    size_t plaintext_len;")
    assert grown != header
    (headers / "pasarela.h").write_text(grown, encoding="utf-8")
    distribution = Distribution({"ext_modules": [Extension(
        "pasarela._fastcall", [str(CSRC / "cpython" / name) for name in ("fastcall.c", "parse.c", "stringify.c")],
        include_dirs=[str(headers), str(CSRC)],  # the build's csrc/, with the grown pasarela.h found first
        define_macros=[("Py_LIMITED_API", "0x030A0000")], py_limited_api=True,
    )]})
    command = distribution.get_command_obj("build_ext")
    command.build_lib = str(tmp_path / "pkg")
    command.build_temp = str(tmp_path / "build")
    command.ensure_finalized()
    command.run()

    result = _import_in_subprocess(tmp_path / "pkg")

    assert result.returncode != 0, result.stdout
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.startswith("ImportError: "), result.stderr
    assert "another pasarela_workspace layout than pasarela._native" in last_line and "rebuild" in last_line
