"""A real PostgreSQL server for the tests: ``initdb`` into a temporary directory, then ``postgres`` itself on a
free loopback port (no Unix socket outside that directory), stopped at the end.

Debian keeps the server's programs off the PATH: ``pg_config --bindir`` says where (scripts/setup installs
them with apt when they are missing). ``initdb`` and ``postgres`` refuse to run as root: as root the server runs
as the ``postgres`` user (Debian's package creates it), else as ``nobody``; as anyone else, as oneself.

What a test does to it, as a crash, an operator or the network would: :meth:`stop` (``fast``: a clean shutdown,
``immediate``: a crash, whose recovery empties UNLOGGED tables), :meth:`kill` (SIGKILL), :meth:`start` again on
the same port and data, :meth:`pause` / :meth:`resume` (SIGSTOP / SIGCONT of the postmaster and every backend:
a server that stops answering while its sockets stay open), and, from SQL, ``pg_terminate_backend``. A missing
server fails the test (scripts/setup installs it), never skips it.
"""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from contextlib import suppress
from pathlib import Path
from typing import Any, Optional

import psycopg

from support.redis_server import die_with_parent, free_port
from support.server_process import ServerProcess

SETTINGS = {
    # a test server: no fsync (a crash of the server process loses nothing the kernel holds; only a crash of the
    # machine would), short checkpoints of nothing, and the log beside the data
    "fsync": "off",
    "full_page_writes": "off",
    "synchronous_commit": "on",
    "max_connections": "200",
    "shared_buffers": "64MB",
    "logging_collector": "off",
    "log_min_messages": "warning",
    # the statements the clients sent, counted by the server (tests count round trips with it)
    "shared_preload_libraries": "pg_stat_statements",
    "pg_stat_statements.track": "top",
}


def binaries() -> Path:
    """Where initdb and postgres are: ``pg_config --bindir``, else the PATH."""
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        found = Path(subprocess.run([pg_config, "--bindir"], check=True, capture_output=True, text=True).stdout.strip())
        if (found / "initdb").exists():
            return found
    initdb = shutil.which("initdb")
    if initdb is None:
        raise RuntimeError("PostgreSQL's server programs (initdb, postgres) are not installed: scripts/setup test "
                           "installs them with apt (postgresql)")
    return Path(initdb).parent


def _server_user() -> Optional[str]:
    """The unprivileged user the server runs as when the tests run as root; None: as the tests' own user."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise RuntimeError("running as root, and neither a postgres nor a nobody user exists to run PostgreSQL")


class PostgresServer(ServerProcess):
    """``with PostgresServer() as server:``; ``server.conninfo`` (database ``postgres``, user ``pasarela``,
    trusted on loopback) and :meth:`connect`. ``settings`` add to or override :data:`SETTINGS`."""

    def __init__(self, **settings: str) -> None:
        self._bin = binaries()
        self._user = _server_user()
        self._directory = tempfile.TemporaryDirectory(prefix="pasarela-postgres-")
        root = Path(self._directory.name)
        self._data = root / "data"
        self._log = root / "postgres.log"
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(root, entry.pw_uid, entry.pw_gid)
        self.port = free_port()
        self.conninfo = f"host=127.0.0.1 port={self.port} user=pasarela dbname=postgres connect_timeout=5"
        self._settings = {**SETTINGS, **settings}
        self._process: Optional[subprocess.Popen[bytes]] = None
        self._run([str(self._bin / "initdb"), "-D", str(self._data), "-U", "pasarela", "--auth=trust",
                   "-E", "UTF8", "--locale=C", "--no-sync"])

    def _run(self, command: list[str]) -> None:
        done = subprocess.run(command, capture_output=True, text=True, user=self._user, cwd=self._directory.name,
                              check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{Path(command[0]).name} failed: {done.stdout[-1000:]} {done.stderr[-2000:]}")

    def start(self, *, timeout: float = 30.0) -> None:
        """Start (or start again, on the same port and data) and wait until it accepts connections."""
        options = [f"-c{name}={value}" for name, value in self._settings.items()]
        log = open(self._log, "ab")  # noqa: SIM115 (the child holds it; closed here once it is handed over)
        try:
            self._process = subprocess.Popen(
                [str(self._bin / "postgres"), "-D", str(self._data), "-p", str(self.port), "-h", "127.0.0.1",
                 "-k", self._directory.name, *options],
                stdout=log, stderr=log, user=self._user, cwd=self._directory.name, start_new_session=True,
                preexec_fn=die_with_parent,
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self.conninfo, connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"postgres did not start on port {self.port}: {self.log()[-3000:]}") from None
                time.sleep(0.05)

    def log(self) -> str:
        return self._log.read_text(errors="replace") if self._log.exists() else ""

    @property
    def pid(self) -> int:
        """The postmaster's process id."""
        if self._process is None or self._process.poll() is not None:
            raise RuntimeError("postgres is not running")
        return self._process.pid

    def stop(self, mode: str = "fast", *, timeout: float = 30.0) -> None:
        """``fast`` (SIGINT: sessions ended, a clean shutdown), ``immediate`` (SIGQUIT: no checkpoint, crash recovery
        at the next start, which empties every UNLOGGED table), or ``kill`` (SIGKILL of the whole server)."""
        if self._process is None or self._process.poll() is not None:
            return
        if mode == "kill":
            for pid in self.processes():
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        else:
            self._process.send_signal({"fast": signal.SIGINT, "immediate": signal.SIGQUIT}[mode])
        self._process.wait(timeout=timeout)

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start()

    def processes(self) -> list[int]:
        """The postmaster and its children (each backend calls setsid(): a process group of its own, so they are
        found by their parent, in /proc)."""
        postmaster = self.pid
        children = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:  # gone meanwhile
                    continue
                if int(stat.rpartition(")")[2].split()[1]) == postmaster:
                    children.append(int(entry.name))
        return [postmaster, *children]

    def pause(self) -> None:
        """SIGSTOP to the postmaster and every backend: connections stay open, nothing answers (the kernel still
        accepts and acknowledges what clients send)."""
        for pid in self.processes():
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)

    def resume(self) -> None:
        for pid in reversed(self.processes()):
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def connect(self, **options: Any) -> psycopg.Connection[Any]:
        """A new connection of the tests' own (autocommit unless told otherwise)."""
        options.setdefault("autocommit", True)
        return psycopg.connect(self.conninfo, **options)

    def statements_sent(self, like: str) -> int:
        """How many times clients sent a statement whose text contains ``like`` (pg_stat_statements)."""
        with self.connect() as admin:
            admin.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            row = admin.execute("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE %s",
                                (f"%{like}%",)).fetchone()
        return int(row[0]) if row else 0

    def terminate_backends(self, application_name: str) -> int:
        """``pg_terminate_backend`` of every session with this application_name; how many there were."""
        with self.connect() as admin:
            row = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                                " WHERE application_name = %s AND pid <> pg_backend_pid()",
                                (application_name,)).fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self.resume()  # a paused server cannot shut down
            self.stop("immediate")
        self._directory.cleanup()


_schemas = itertools.count()


def fresh_schema(server: PostgresServer) -> str:
    """A new schema holding the stores' tables (pasarela.postgres.create_schema): a test's own, so tests sharing the
    server never see each other's rows."""
    from pasarela.postgres import create_schema

    name = f"t{os.getpid()}_{next(_schemas)}"
    with server.connect() as connection:
        create_schema(connection, schema=name)
    return name
