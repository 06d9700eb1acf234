"""A real redis-server for the tests: started on a free loopback port in a temporary directory, no
persistence (``--save "" --appendonly no``), stopped (killed) at the end.

:meth:`RedisServer.kill` and :meth:`RedisServer.start` let a test take Redis away mid-run and bring it
back on the same port. A missing redis-server fails the test (scripts/setup installs it), never skips it.
"""

from __future__ import annotations

import ctypes
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

import redis

from support.server_process import ServerProcess


def _die_with_parent() -> None:
    """In the child: SIGKILL when the test process dies, so a killed test run leaves no server behind."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


die_with_parent: Optional[Callable[[], None]] = _die_with_parent if sys.platform == "linux" else None
"""For Popen's preexec_fn (Linux only; elsewhere the ``with`` blocks alone stop the servers)."""


_MAX_CLUSTER_PORT = 55535  # a Cluster node also listens on its port + 10000


def free_port(*, below: int = 65536) -> int:
    """A loopback port free now; the kernel's pick, retried until it is below ``below``."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port < below:
            return port


class RedisServer(ServerProcess):
    """``cluster=True``: a one-node Redis Cluster serving all 16384 slots (a real Cluster to its clients:
    redis-py's RedisCluster refuses a multi-key command whose keys hash to different slots)."""

    def __init__(self, *, cluster: bool = False) -> None:
        executable = shutil.which("redis-server")
        if executable is None:
            raise RuntimeError("redis-server is not installed (scripts/setup installs it with apt)")
        self._executable = executable
        self._directory = tempfile.TemporaryDirectory(prefix="pasarela-redis-")
        self.port = free_port(below=_MAX_CLUSTER_PORT if cluster else 65536)
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process: Optional[subprocess.Popen[bytes]] = None
        self._cluster = cluster

    def start(self, *, timeout: float = 10.0) -> None:
        """Start (or restart, on the same port) and wait until it answers PING."""
        log = Path(self._directory.name, "redis.log")
        self._process = subprocess.Popen(
            [self._executable, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", self._directory.name,
             "--save", "", "--appendonly", "no", "--protected-mode", "yes", "--logfile", str(log),
             *(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"] if self._cluster else [])],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent,
        )
        probe = redis.Redis(port=self.port, socket_timeout=1.0, socket_connect_timeout=1.0)
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    probe.ping()
                    if not self._cluster or self._cluster_ready(probe):
                        return
                    time.sleep(0.02)
                except redis.ConnectionError:
                    if self._process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"redis-server did not start on port {self.port}: "
                                           f"{log.read_text(errors='replace')[-2000:] if log.exists() else ''}"
                                           ) from None
                    time.sleep(0.02)
        finally:
            probe.close()

    @staticmethod
    def _cluster_ready(probe: redis.Redis) -> bool:
        if int(probe.execute_command("CLUSTER", "INFO").decode().split("cluster_slots_assigned:")[1].split()[0]) == 0:
            probe.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
        return "cluster_state:ok" in probe.execute_command("CLUSTER", "INFO").decode()

    def kill(self) -> None:
        """Take Redis away at once (SIGKILL), as a crash or a network cut would."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=10)

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=2.0, socket_connect_timeout=2.0)

    @property
    def pid(self) -> int:
        """The running redis-server's process id (benchmarks read its CPU time)."""
        if self._process is None or self._process.poll() is not None:
            raise RuntimeError("redis-server is not running")
        return self._process.pid

    def commands_processed(self) -> int:
        """Redis's count of commands executed so far (INFO stats; the INFO itself counts after it answers)."""
        with self.client() as client:
            return int(client.info("stats")["total_commands_processed"])

    def close(self) -> None:
        self.kill()
        self._directory.cleanup()
