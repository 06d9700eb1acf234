"""``uvicorn --workers N`` in a subprocess on a free loopback port, for tests of guarantees across processes.

Ready when ``/health`` has been answered by N distinct worker processes (the app tags answers with
``x-worker-pid``), or, for an app of somebody else's (a guide's), once it answers at all
(:meth:`UvicornWorkers.wait_answering`); stopped (SIGTERM, then SIGKILL) when the ``with`` block ends (or by
:meth:`UvicornWorkers.stop`), and killed with the test process if that dies first.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

import pasarela
from support.redis_server import die_with_parent, free_port
from support.server_process import ServerProcess

TESTS = Path(__file__).resolve().parents[1]
PASARELA_HOME = Path(pasarela.__file__).resolve().parent.parent


class UvicornWorkers(ServerProcess):
    """``app``: ``module:attribute``, imported from tests/ or from one of ``import_from``."""

    def __init__(self, app: str, environment: Mapping[str, str], *, workers: int = 4,
                 import_from: Sequence[Path] = ()) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._workers = workers
        # the workers import the pasarela this process imported (the source tree's, or the installed wheel's)
        python_path = os.pathsep.join([*map(str, import_from), str(PASARELA_HOME), str(TESTS),
                                       os.environ.get("PYTHONPATH", "")])
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop); a pipe nobody reads would block
        self._process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(self.port),
             "--workers", str(workers), "--log-level", "warning", "--no-access-log"],
            env={**os.environ, **environment, "PYTHONPATH": python_path}, cwd=TESTS,
            stdout=subprocess.DEVNULL, stderr=self._log, preexec_fn=die_with_parent,
        )

    def wait_ready(self, timeout: float = 90.0) -> set[str]:
        """Poll /health on fresh connections until every worker has answered; their pids."""
        deadline = time.monotonic() + timeout
        pids: set[str] = set()
        while len(pids) < self._workers:
            if self._process.poll() is not None or time.monotonic() > deadline:
                failure = f"uvicorn did not start {self._workers} workers (saw {len(pids)}): {self._stderr()}"
                self.stop()
                raise RuntimeError(failure)
            try:
                answer = httpx.get(self.base_url + "/health", timeout=2.0)
                pids.add(answer.headers["x-worker-pid"])
            except httpx.TransportError:
                time.sleep(0.05)
        return pids

    def wait_answering(self, path: str, timeout: float = 90.0) -> None:
        """For an app without /health: wait until a POST of nothing to ``path`` gets an answer (any)."""
        deadline = time.monotonic() + timeout
        while True:
            if self._process.poll() is not None or time.monotonic() > deadline:
                failure = f"uvicorn did not answer on {path}: {self._stderr()}"
                self.stop()
                raise RuntimeError(failure)
            try:
                httpx.post(self.base_url + path, timeout=2.0)
                return
            except httpx.TransportError:
                time.sleep(0.05)

    def _stderr(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-3000:]

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
        self._log.close()

    def start(self) -> None:
        """The process started with the object: ``with`` waits until every worker answers."""
        self.wait_ready()

    def close(self) -> None:
        self.stop()


def redis_app_workers(redis_url: str, events: Path, webhook_secret: str, **settings: str) -> UvicornWorkers:
    """tests/support/redis_app.py under 4 uvicorn workers on the Redis at ``redis_url``, each event its webhook
    receiver hands over written to ``events`` (created here); ``settings``: more of its PASARELA_TEST_* variables."""
    events.touch()
    environment = {"PASARELA_TEST_REDIS_URL": redis_url, "PASARELA_TEST_EVENTS": str(events),
                   "PASARELA_TEST_WEBHOOK_SECRET": webhook_secret, **settings}
    return UvicornWorkers("support.redis_app:app", environment, workers=4)
