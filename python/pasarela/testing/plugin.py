"""The pytest plugin of pasarela's test kit, registered as the ``pytest11`` entry point ``pasarela``: pytest loads it
in every session once pasarela is installed (``-p no:pasarela`` turns it off). Loading it imports nothing but
pytest and pasarela's root package: the sandbox, uvicorn, Starlette and httpx are imported when a test first asks
for one of its fixtures.

Fixtures:

``pasarela_sandbox``
    A :class:`~pasarela.testing.LiveSandbox` in a clean state: one server per test process (so per pytest-xdist
    worker, each on its own free port with its own database), reset before each test in milliseconds.
    ``@pytest.mark.pasarela_sandbox(settle_after=None, ...)`` gives the test a sandbox of its own with those
    :class:`~pasarela.sandbox.SandboxConfig` fields instead.
``pasarela_sandbox_session``
    One sandbox for the whole session, never reset: state carries from test to test.
``pasarela_sandbox_factory``
    ``make(**config_fields)`` starts a fresh sandbox with that configuration, stopped when the test ends.
``pasarela_conformance``
    ``run(webhook_url, check, cases=None)``: the receiver conformance run
    (:func:`pasarela.testing.conformance.run_conformance`) with the session's sandbox configuration (its webhook
    secret and public key sign the deliveries); returns the report (``report.raise_for_failures()``).
``pasarela_sandbox_config``
    The :class:`~pasarela.sandbox.SandboxConfig` keyword arguments the sandboxes above start with (none: the
    documented defaults). Override it in your ``conftest.py`` (session scope).

Ini option ``pasarela_sandbox_db``: ``memory`` (the default) or ``file``, a SQLite file per sandbox under pytest's
temporary directory (``--basetemp``), which you can open after a failing run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Callable

import pytest

if TYPE_CHECKING:
    from ..sandbox.config import SandboxConfig
    from .conformance import ConformanceReport
    from .live import LiveSandbox

__all__ = [
    "pasarela_conformance",
    "pasarela_sandbox",
    "pasarela_sandbox_config",
    "pasarela_sandbox_factory",
    "pasarela_sandbox_session",
]

_DB_OPTION = "pasarela_sandbox_db"
_DB_CHOICES = ("memory", "file")
_MARKER = "pasarela_sandbox"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(_DB_OPTION, "where pasarela's sandbox fixtures keep their state: memory (default) or file (a SQLite "
                              "file per sandbox under pytest's temporary directory)", default="memory")


def _db_choice(config: pytest.Config) -> str:
    choice = str(config.getini(_DB_OPTION)).strip() or "memory"
    if choice not in _DB_CHOICES:
        raise pytest.UsageError(f"{_DB_OPTION} = {choice}: give one of {', '.join(_DB_CHOICES)}")
    return choice


def pytest_configure(config: pytest.Config) -> None:
    _db_choice(config)  # a bad value stops the session before any test runs
    config.addinivalue_line("markers", f"{_MARKER}(**config): SandboxConfig fields for this test's pasarela_sandbox "
                                       "(a sandbox of its own, e.g. settle_after=None, ecuador_processor='wallet')")


class _Starter:
    """Starts sandboxes the way the session's configuration and ini option say."""

    def __init__(self, config: pytest.Config, tmp_path_factory: pytest.TempPathFactory,
                 fields: Mapping[str, Any]) -> None:
        self._in_file = _db_choice(config) == "file"
        self._tmp = tmp_path_factory
        self._fields = dict(fields)

    def config(self, **fields: Any) -> SandboxConfig:
        from ..sandbox.config import SandboxConfig

        return SandboxConfig(**{**self._fields, **fields})

    def __call__(self, **fields: Any) -> LiveSandbox:
        from .live import LiveSandbox

        db = str(self._tmp.mktemp("pasarela-sandbox") / "sandbox.sqlite3") if self._in_file else ":memory:"
        return LiveSandbox(self.config(**fields), db=db)


@pytest.fixture(scope="session")
def pasarela_sandbox_config() -> Mapping[str, Any]:
    """Keyword arguments of :class:`~pasarela.sandbox.SandboxConfig` for every sandbox of the session; override it
    in your conftest.py (``{"settle_after": None}``...)."""
    return {}


@pytest.fixture(scope="session")
def _pasarela_starter(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory,
                      pasarela_sandbox_config: Mapping[str, Any]) -> _Starter:
    return _Starter(pytestconfig, tmp_path_factory, pasarela_sandbox_config)


@pytest.fixture(scope="session")
def _pasarela_sandbox_shared(_pasarela_starter: _Starter) -> Iterator[LiveSandbox]:
    """The server ``pasarela_sandbox`` resets for each test of this process."""
    with _pasarela_starter() as sandbox:
        yield sandbox


@pytest.fixture(scope="session")
def pasarela_sandbox_session(_pasarela_starter: _Starter) -> Iterator[LiveSandbox]:
    """One sandbox for the session (per xdist worker), never reset."""
    with _pasarela_starter() as sandbox:
        yield sandbox


@pytest.fixture
def pasarela_sandbox_factory(_pasarela_starter: _Starter) -> Iterator[Callable[..., LiveSandbox]]:
    """``make(**config_fields)``: a fresh sandbox with the session's configuration and those fields, stopped at the
    end of the test."""
    started: list[LiveSandbox] = []

    def make(**fields: Any) -> LiveSandbox:
        sandbox = _pasarela_starter(**fields)
        started.append(sandbox)
        return sandbox

    yield make
    for sandbox in reversed(started):
        sandbox.close()


@pytest.fixture
def pasarela_sandbox(request: pytest.FixtureRequest) -> LiveSandbox:
    """A sandbox in a clean state for this test: the process's shared one reset, or, under
    ``@pytest.mark.pasarela_sandbox(**fields)``, one of its own with those configuration fields."""
    marker = request.node.get_closest_marker(_MARKER)
    if marker is not None:
        if marker.args:
            raise pytest.UsageError(f"@pytest.mark.{_MARKER} takes SandboxConfig fields by name only")
        make: Callable[..., LiveSandbox] = request.getfixturevalue("pasarela_sandbox_factory")
        return make(**marker.kwargs)
    shared: LiveSandbox = request.getfixturevalue("_pasarela_sandbox_shared")
    shared.reset()
    return shared


@pytest.fixture
def pasarela_conformance(_pasarela_starter: _Starter) -> Callable[..., ConformanceReport]:
    """``run(webhook_url, check, *, cases=None, check_delay=0)``: the receiver conformance run against your endpoint,
    signed with the session's sandbox configuration; the report (``raise_for_failures()`` in a test)."""
    from .conformance import run_conformance

    def run(webhook_url: str, check: Any, **options: Any) -> ConformanceReport:
        return run_conformance(webhook_url, check, config=_pasarela_starter.config(), **options)

    return run
