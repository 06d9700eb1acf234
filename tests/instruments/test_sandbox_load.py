"""The load script runs against a sandbox it starts itself, over loopback, for a short bounded time, with no
error. The throughput is measured, not asserted (``python benchmarks/sandbox_load.py`` reports it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sandbox_load.py"


def test_load_script_runs_without_errors() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--duration", "3", "--connections", "8"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["errors"] == 0 and result["requests"] > 0
