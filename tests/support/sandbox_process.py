"""A sandbox in a process of its own (``python -m pasarela.sandbox`` or the ``pasarela sandbox`` CLI) on a free port
of 127.0.0.1, its banner read, its stderr kept in a file: what the CLI, restart, schemathesis and Prometheus tests
start their sandbox with."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Optional

STARTUP_SECONDS = 20.0


@dataclass
class Started:
    process: subprocess.Popen[str]
    url: str
    banner: list[str]
    errors: IO[bytes]
    """The sandbox's stderr (a file: a pipe nobody reads would fill up and stall the server)."""

    def log(self) -> str:
        self.errors.seek(0)
        return self.errors.read().decode("utf-8", "replace")


@contextmanager
def sandbox_process(options: Sequence[str], *, environment: Optional[dict[str, str]] = None,
                    command: Sequence[str] = (sys.executable, "-m", "pasarela.sandbox")) -> Iterator[Started]:
    """A sandbox in its own process, on a free port of 127.0.0.1; killed on exit if still running."""
    with tempfile.TemporaryFile() as errors, subprocess.Popen(
        [*command, "--port", "0", *options], stdout=subprocess.PIPE, stderr=errors, text=True,
        env={**os.environ, **(environment or {})},
    ) as process:
        assert process.stdout is not None
        try:
            ready, _, _ = select.select([process.stdout], [], [], STARTUP_SECONDS)
            first = process.stdout.readline() if ready else ""
            if " listening on " not in first:
                errors.seek(0)
                raise AssertionError(f"the sandbox did not start: {first!r} {errors.read()!r}")
            banner = [first.rstrip("\n")]
            while not banner[-1].startswith("  --cors-origin"):  # the last line; the banner is one write
                line = process.stdout.readline()
                if not line:
                    break
                banner.append(line.rstrip("\n"))
            yield Started(process, first.rsplit(" ", 1)[1].strip(), banner, errors)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(10)
