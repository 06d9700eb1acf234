"""cffi builder (API mode) for pasarela._native: the C core in csrc/, compiled as one extension.

Set PASARELA_WERROR=1 to turn compiler warnings into errors (the wheel and CI builds do).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
SOURCES = [
    "util.c", "cpu.c", "md5.c", "sha512.c", "sha512_many.c", "base64.c", "hex.c", "aes.c", "aes_many.c", "json.c",
    "envelope.c", "open.c",
]


def read_version(version_py: str) -> str:
    """The version from the text of python/pasarela/_version.py, without importing the package."""
    match = re.search(r'^__version__ = "([^"]+)"$', version_py, re.MULTILINE)
    if match is None:
        raise ValueError("_version.py has no __version__ line")
    return match.group(1)


def compiler_flags(platform: str, werror: bool) -> list[str]:
    if platform == "win32":
        return ["/W4", "/WX"] if werror else ["/W4"]
    flags = ["-std=c99", "-O3", "-Wall", "-Wextra", "-fvisibility=hidden"]
    return [*flags, "-Werror"] if werror else flags


VERSION = read_version((HERE.parent / "python" / "pasarela" / "_version.py").read_text(encoding="utf-8"))

ffibuilder = FFI()
ffibuilder.cdef((HERE / "pasarela_cdef.h").read_text(encoding="utf-8"))
ffibuilder.set_source(
    "pasarela._native",
    '#include "pasarela.h"',
    sources=[f"csrc/{name}" for name in SOURCES],  # relative to the project root, where setup.py runs
    include_dirs=["csrc"],
    define_macros=[("PASARELA_VERSION", f'"{VERSION}"')],
    extra_compile_args=compiler_flags(sys.platform, os.environ.get("PASARELA_WERROR") == "1"),
    py_limited_api=True,
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
