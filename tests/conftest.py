from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support.browser import SCREENSHOT_DIR, Browser, BrowserUnavailableError
from support.node_envelope import NodeEnvelope
from support.node_oracle import NodeOracle, NodeUnavailableError

if TYPE_CHECKING:  # imported by the fixture: the installed-wheel test runs (scripts/wheel-check) have no redis
    import httpx

    from pasarela.testing import LiveSandbox
    from support.postgres_server import PostgresServer
    from support.redis_server import RedisServer

pytest_plugins = ("pytester",)  # tests/testing_kit/test_testing_plugin.py runs inner pytest sessions

settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile(
    "ci",
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


class _Closable(Protocol):
    def close(self) -> None: ...


Started = TypeVar("Started", bound=_Closable)


def _for_the_session(start: Callable[[], Started], refused: type[Exception], hint: str = "") -> Iterator[Started]:
    """What a session fixture yields: what ``start()`` started, closed at the end; when it cannot start (a tool
    missing), the test fails, naming it, and never skips."""
    try:
        started = start()
    except refused as exc:
        pytest.fail(f"{exc}{hint}", pytrace=False)
    try:
        yield started
    finally:
        started.close()


@pytest.fixture(scope="session")
def node_oracle() -> Iterator[NodeOracle]:
    """One persistent ``node`` process for the session (fails, never skips, without node)."""
    yield from _for_the_session(NodeOracle, NodeUnavailableError,
                                " (CI installs it; install Node.js locally to run these tests)")


@pytest.fixture(scope="session")
def node_stringify(node_oracle: NodeOracle) -> Callable[[bytes], bytes]:
    """``JSON.stringify(JSON.parse(text))`` computed by node: JSON text bytes in, UTF-8 bytes out.

    Raises ``node_oracle.NodeJSONError`` when JSON.parse refuses the text.
    """
    return node_oracle.stringify


@pytest.fixture(scope="session")
def node_envelope() -> Iterator[NodeEnvelope]:
    """The JavaScript server's side of the envelope, in one persistent node process (never skips)."""
    yield from _for_the_session(NodeEnvelope, RuntimeError, " (CI installs it)")


@pytest.fixture(scope="session")
def openssl() -> str:
    """The path of the openssl command line, an AES-256-CBC independent of ours (fails, never skips, without it)."""
    path = shutil.which("openssl")
    if path is None:
        pytest.fail("the openssl command line is not installed (CI installs it)", pytrace=False)
    return path


@pytest.fixture(scope="session")
def chromium() -> Iterator[Browser]:
    """One headless Debian chromium, driven through chromedriver, for the session (fails, never skips, without it)."""
    yield from _for_the_session(Browser, BrowserUnavailableError)


@pytest.fixture
def browser(chromium: Browser, request: pytest.FixtureRequest) -> Iterator[Browser]:
    """The session's chromium on a blank page; where the test left it is saved as ``<test name>.png`` in
    ``SCREENSHOT_DIR`` (a CI artifact), whether the test passed or not."""
    chromium.reset()
    yield chromium
    chromium.screenshot(request.node.name)


_SESSION_START = time.time()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say where this run's screenshots are (xdist workers write them: the files tell, not a fixture)."""
    if SCREENSHOT_DIR.is_dir() and any(shot.stat().st_mtime >= _SESSION_START for shot in SCREENSHOT_DIR.glob("*.png")):
        terminalreporter.write_line(f"browser screenshots: {SCREENSHOT_DIR}")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One real redis-server on a free loopback port for the session (fails, never skips, without it)."""
    from support.redis_server import RedisServer

    yield from _for_the_session(RedisServer.started, RuntimeError)


@pytest.fixture
def live(pasarela_sandbox: LiveSandbox) -> LiveSandbox:
    """The test kit's own ``pasarela_sandbox`` (the plugin, loaded by its entry point): the sandbox's tests use it as
    a merchant's suite would, one served sandbox per worker, reset before each test."""
    return pasarela_sandbox


@pytest.fixture
def live_http(live: LiveSandbox) -> Iterator[httpx.Client]:
    """A plain HTTP client of ``live`` (no key: each test sends the headers it means)."""
    import httpx

    with httpx.Client(base_url=live.url, timeout=10) as client:
        yield client


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server (initdb in a temporary directory, run as an unprivileged user) on a free
    loopback port for the session (fails, never skips, without PostgreSQL's server programs)."""
    from support.postgres_server import PostgresServer

    yield from _for_the_session(PostgresServer.started, RuntimeError)


@pytest.fixture
def postgres_schema(postgres_server: PostgresServer) -> str:
    """A schema of the stores' tables of its own for the test (created by pasarela.postgres.create_schema)."""
    from support.postgres_server import fresh_schema

    return fresh_schema(postgres_server)
