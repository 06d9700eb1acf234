"""``pasarela sandbox`` given a ``--db`` it cannot use, a ``--port`` that is no TCP port (issue 53, item 10), or any
other value it cannot use (a ``--cors-origin`` that is no origin, issue 58), says so in one line naming the option and
what to give, and exits 2, never with a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest


def _sandbox(*options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pasarela", "sandbox", *options], capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize(("case", "expected"), [
    ("missing_folder", "the folder {folder} does not exist: create it, or give a file in an existing folder"),
    ("a_folder", "is a folder: give a file in it, e.g. --db"),
    ("not_sqlite", "is not a SQLite database: give a new file name, or a database an earlier sandbox wrote"),
])
def test_a_db_the_sandbox_cannot_use_is_one_line(tmp_path: Path, case: str, expected: str) -> None:
    not_sqlite = tmp_path / "notes.txt"
    not_sqlite.write_text("these are notes, not a database\n" * 100)
    db = {"missing_folder": tmp_path / "nowhere" / "sandbox.sqlite3", "a_folder": tmp_path,
          "not_sqlite": not_sqlite}[case]
    run = _sandbox("--db", str(db), "--port", "0")
    assert run.returncode == 2 and run.stdout == ""
    [line] = run.stderr.splitlines()
    assert line.startswith(f"pasarela sandbox: error: --db {db}")
    assert expected.format(folder=tmp_path / "nowhere") in line
    assert not_sqlite.read_text() == "these are notes, not a database\n" * 100  # left as it was


@pytest.mark.parametrize("port", ["70000", "-1", "65536", "http"])
def test_a_port_that_is_no_tcp_port_is_one_line(port: str) -> None:
    run = _sandbox("--db", ":memory:", "--port", port)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.splitlines() == [f"pasarela sandbox: error: argument --port: {port}: a TCP port is a whole "
                                       "number from 0 to 65535 (0 picks a free one) (see --help)"]


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        run = _sandbox("--db", ":memory:", "--port", str(port))
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    assert line.startswith(f"pasarela sandbox: error: --port {port}: cannot listen on 127.0.0.1")
    assert line.endswith("pick another port, or 0 for a free one")


@pytest.mark.parametrize(("option", "value", "expected"), [
    ("--cors-origin", "http://shop.test/", "an origin has no path (nor a trailing slash): http://shop.test"),
    ("--cors-origin", "http://shop.test/checkout", "an origin has no path (nor a trailing slash): http://shop.test"),
    ("--cors-origin", "shop.test", "not an origin: scheme://host[:port], e.g. http://localhost:3000"),
    ("--cors-origin", "http://shop.test:99999", "not an origin: scheme://host[:port], e.g. http://localhost:3000"),
    ("--cors-origin", "https://Shop.test", "browsers send it in lower case: https://shop.test"),
    ("--cors-origin", "https://shop.test:443", "browsers leave the default port out: https://shop.test"),
    ("--webhook-url", "localhost:8000/hooks", "give an absolute http(s) URL, scheme and host included (http://...)"),
    ("--public-url", "127.0.0.1:8790", "give an absolute http(s) URL, scheme and host included (http://...)"),
    ("--webhook-backoff", "0", "give a number of seconds above 0"),
    ("--timeout-delay", "-1", "give a number of seconds, 0 or more"),
    ("--timeout-delay", "nan", "give a number of seconds, 0 or more"),
])
def test_an_option_value_the_sandbox_cannot_use_is_one_line_naming_it(option: str, value: str, expected: str) -> None:
    """Checked by the parser, before anything starts: --cors-origin took any string (issue 58), and an origin a
    browser never sends would never match its Origin header."""
    run = _sandbox("--db", ":memory:", "--port", "0", option, value)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.splitlines() == [f"pasarela sandbox: error: argument {option}: {value}: {expected} (see --help)"]


@pytest.mark.parametrize(("option", "value"), [("--public-key", "has blank"), ("--merchant-name", " ")])
def test_a_value_the_configuration_refuses_is_named_by_its_option(option: str, value: str) -> None:
    run = _sandbox("--db", ":memory:", "--port", "0", option, value)
    assert run.returncode == 2 and run.stdout == ""
    [line] = run.stderr.splitlines()
    assert line.startswith(f"pasarela sandbox: error: {option} must be"), line


def test_the_origins_a_browser_sends_are_taken() -> None:
    from pasarela.sandbox import SandboxConfig

    origins = ("*", "http://localhost:3000", "https://shop.test", "http://127.0.0.1:8000", "http://[::1]:5173")
    assert SandboxConfig(cors_origins=origins).cors_origins == origins
