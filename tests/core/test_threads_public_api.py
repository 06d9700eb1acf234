"""One Terminal shared by threads, attacked through the public API while another thread is inside C (issue 38,
defect 6): no sequence of Python calls may crash the process, and every result stays right.

Each case runs tests/support/shared_terminal_worker.py in a process of its own: a crash (the SIGSEGV a second
Terminal.__init__ caused while seal_many ran with the GIL released) fails the test instead of ending the run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import pasarela

WORKER = Path(__file__).resolve().parents[1] / "support" / "shared_terminal_worker.py"


def _run(scenario: str, seconds: float) -> str:
    result = subprocess.run([sys.executable, str(WORKER), scenario, str(seconds)], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, (f"{scenario}: exit status {result.returncode} (a negative one is the signal that "
                                    f"ended it)\n{result.stdout[-2000:]}{result.stderr[-4000:]}")
    return result.stdout


@pytest.mark.parametrize("scenario", ["reinit", "swap"])
def test_credentials_outlive_every_c_call_whatever_another_thread_does(scenario: str) -> None:
    """reinit: Terminal.__init__ called again on the shared object is refused (TypeError), its credentials unchanged.
    swap: the credentials object replaced behind the Terminal's back (object.__setattr__): each C call keeps the one
    it started with alive."""
    calls = int(_run(scenario, 2.0).split()[-1])
    assert calls > 0


def test_every_public_entry_from_a_second_thread_while_the_first_is_in_c() -> None:
    calls = int(_run("every", 3.0).split()[-1])
    assert calls >= 16  # every entry at least once


def test_a_terminals_credentials_are_set_once() -> None:
    """Refused in-process too: a second __init__, and assigning or deleting what holds the credentials; a subclass
    keeps attributes of its own."""
    terminal = pasarela.Terminal("bc-1", "SN-1")
    with pytest.raises(TypeError, match="cannot be changed"):
        terminal.__init__("bc-2", "SN-2")  # type: ignore[misc]
    for name in ("_native", "_business_code", "_serial_bytes", "terminal_serial"):
        with pytest.raises(AttributeError, match="cannot be changed"):
            setattr(terminal, name, getattr(terminal, name))
        with pytest.raises(AttributeError, match="cannot be changed"):
            delattr(terminal, name)
    assert terminal.terminal_serial == "SN-1"

    class Gateway(pasarela.Terminal):
        def __init__(self, business_code: str, terminal_serial: str) -> None:
            super().__init__(business_code, terminal_serial)
            self.region = "co"

    assert Gateway("bc-1", "SN-1").region == "co"
