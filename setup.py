"""Build glue only: metadata lives in pyproject.toml. The C core is compiled by cffi (API mode)."""

from setuptools import setup

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # pragma: no cover - wheel is a build requirement
    cmdclass = {}
else:

    class AbiThreeWheel(bdist_wheel):  # one wheel for every CPython >= 3.9 (the cffi module uses the limited API)
        def get_tag(self):
            python, abi, plat = super().get_tag()
            if python.startswith("cp") and not python.endswith("t"):
                return "cp39", "abi3", plat
            return python, abi, plat

    cmdclass = {"bdist_wheel": AbiThreeWheel}

setup(cffi_modules=["csrc/build_ffi.py:ffibuilder"], cmdclass=cmdclass)
