"""Build glue only: metadata lives in pyproject.toml. The C core is compiled by cffi (API mode); on CPython,
pasarela._fastcall (csrc/cpython/fastcall.c) gives its two hottest calls a cheaper way in."""

import platform
import sys
from pathlib import Path

from setuptools import setup

sys.path.insert(0, str(Path(__file__).resolve().parent / "csrc"))
from build_ffi import fastcall_extension

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # pragma: no cover - wheel is a build requirement
    cmdclass = {}
else:

    class AbiThreeWheel(bdist_wheel):  # one wheel for every CPython >= 3.10 (the cffi module uses the limited API)
        def get_tag(self):
            python, abi, plat = super().get_tag()
            if python.startswith("cp") and not python.endswith("t"):
                return "cp310", "abi3", plat
            return python, abi, plat

    cmdclass = {"bdist_wheel": AbiThreeWheel}

setup(
    cffi_modules=["csrc/build_ffi.py:ffibuilder"],
    ext_modules=[fastcall_extension()] if platform.python_implementation() == "CPython" else [],
    cmdclass=cmdclass,
)
