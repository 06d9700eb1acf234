"""PASARELA_NO_FASTCALL=1 makes pasarela._binding call the C core through cffi alone, as on PyPy or a build without
pasarela._fastcall (docs/free-threading.md); .ci/run runs a part of the suite with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, pasarela
from pasarela import _binding
terminal = pasarela.Terminal("bc-1", "SN-1")
sealed = terminal.seal({"amount": 1.5, "items": [None]}, timestamp=1764072000)
print(json.dumps({
    "fastcall": _binding.FASTCALL,
    "cffi_open": _binding.open_post is _binding._open_post_cffi,
    "cffi_seal": _binding.seal_payload is _binding._seal_payload_declined,
    "opened": terminal.open("POST", sealed.headers, sealed.body, now=1764072000),
}))
"""


def _probe(switch: str | None) -> dict[str, object]:
    environment = {key: value for key, value in os.environ.items() if key != "PASARELA_NO_FASTCALL"}
    if switch is not None:
        environment["PASARELA_NO_FASTCALL"] = switch
    result = subprocess.run([sys.executable, "-c", PROBE], env=environment, capture_output=True, text=True,
                            check=True, timeout=60)
    answer: dict[str, object] = json.loads(result.stdout)
    return answer


def test_the_switch_forces_the_cffi_path() -> None:
    forced = _probe("1")
    assert (forced["fastcall"], forced["cffi_open"], forced["cffi_seal"]) == (False, True, True)
    assert forced["opened"] == {"amount": 1.5, "items": [None]}


def test_without_the_switch_cpython_takes_fastcall() -> None:
    for switch in (None, "0", ""):
        default = _probe(switch)
        assert (default["fastcall"], default["cffi_open"], default["cffi_seal"]) == (True, False, False)
        assert default["opened"] == {"amount": 1.5, "items": [None]}
