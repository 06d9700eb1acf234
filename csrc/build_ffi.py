"""cffi builder (API mode) for pasarela._native: the C core in csrc/, compiled as one extension; and
fastcall_extension(), pasarela._fastcall (csrc/cpython/fastcall.c: CPython entry points for the two hottest
calls, built with the same flags; setup.py adds it on CPython).

Set PASARELA_WERROR=1 to turn compiler warnings into errors (the wheel and CI builds do).
Release builds carry no debug information and no symbol table (Python's own CFLAGS ask for -g, which
put ~1.2 MB of DWARF into a module of ~170 KB of code); set PASARELA_DEBUG=1 to keep both. The sanitizer,
valgrind and fuzz builds (scripts/hardening) compile the sources themselves, with -g.
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
from pathlib import Path

from cffi import FFI
from setuptools import Extension

HERE = Path(__file__).resolve().parent
SOURCES = [
    "util.c", "cpu.c", "md5.c", "sha512.c", "sha512_many.c", "base64.c", "hex.c", "aes.c", "aes_many.c", "json.c",
    "json_checked.c", "utf8.c", "envelope.c", "open.c", "ivs.c",
]


def read_version(version_py: str) -> str:
    """The version from the text of python/pasarela/_version.py, without importing the package."""
    match = re.search(r'^__version__ = "([^"]+)"$', version_py, re.MULTILINE)
    if match is None:
        raise ValueError("_version.py has no __version__ line")
    return match.group(1)


def compiler_flags(platform: str, werror: bool, debug: bool = False) -> list[str]:
    if platform == "win32":  # MSVC keeps debug information in a separate .pdb, never in the .pyd
        return ["/W4", "/WX"] if werror else ["/W4"]
    # -g0 comes after the -g of Python's CFLAGS, so it wins
    flags = ["-std=c99", "-O3", "-Wall", "-Wextra", "-fvisibility=hidden", "-g" if debug else "-g0"]
    return [*flags, "-Werror"] if werror else flags


def linker_flags(platform: str, debug: bool = False) -> list[str]:
    """Strip the symbol table at link (GNU ld and lld; Apple's ld has no -s, and -g0 already leaves it no DWARF)."""
    return [] if debug or not platform.startswith("linux") else ["-s"]


DEBUG = os.environ.get("PASARELA_DEBUG") == "1"
VERSION = read_version((HERE.parent / "python" / "pasarela" / "_version.py").read_text(encoding="utf-8"))

ffibuilder = FFI()
ffibuilder.cdef((HERE / "pasarela_cdef.h").read_text(encoding="utf-8"))
ffibuilder.set_source(
    "pasarela._native",
    '#include "pasarela.h"',
    sources=[f"csrc/{name}" for name in SOURCES],  # relative to the project root, where setup.py runs
    include_dirs=["csrc"],
    define_macros=[("PASARELA_VERSION", f'"{VERSION}"')],
    extra_compile_args=compiler_flags(sys.platform, os.environ.get("PASARELA_WERROR") == "1", DEBUG),
    extra_link_args=linker_flags(sys.platform, DEBUG),
    py_limited_api=True,
)


def fastcall_extension() -> Extension:
    """pasarela._fastcall, in the limited API of CPython 3.10 (METH_FASTCALL; the wheel is cp310-abi3, as the cffi
    module is), which a free-threaded CPython does not have: there it is built against the full API."""
    limited = not sysconfig.get_config_var("Py_GIL_DISABLED")
    return Extension(
        "pasarela._fastcall",
        sources=["csrc/cpython/fastcall.c", "csrc/cpython/parse.c", "csrc/cpython/stringify.c"],
        include_dirs=["csrc"],
        define_macros=[("Py_LIMITED_API", "0x030A0000")] if limited else [],
        extra_compile_args=compiler_flags(sys.platform, os.environ.get("PASARELA_WERROR") == "1", DEBUG),
        # it calls nothing of libc, which the linker then leaves out; auditwheel needs it named to tell the libc
        extra_link_args=[*linker_flags(sys.platform, DEBUG),
                         *(["-Wl,--no-as-needed", "-lc"] if sys.platform.startswith("linux") else [])],
        py_limited_api=limited,
    )


if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
