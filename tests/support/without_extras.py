"""Python code run in a subprocess in which a meta-path finder refuses one package, as if it were not installed: how
the tests see what pasarela says without an optional dependency."""

from __future__ import annotations

import subprocess
import sys
import textwrap

BLOCK = """
import sys

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Refuse())
"""


def run_without(blocked: str, code: str) -> subprocess.CompletedProcess[str]:
    program = BLOCK.format(blocked=blocked) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
