"""Starting the sandbox: ``python -m pasarela.sandbox`` and ``pasarela sandbox`` in a subprocess, the banner of
defaults (secrets never shown), 127.0.0.1 only, bad options refused. The sandbox process is
tests/support/sandbox_process.py's."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from support.sandbox_process import sandbox_process


def test_python_m_sandbox_prints_its_defaults_serves_and_stops_on_sigterm() -> None:
    with sandbox_process(["--db", ":memory:"]) as started:
        assert started.url.startswith("http://127.0.0.1:")
        text = "\n".join(started.banner)
        for option in ("--port", "--db", "--public-key", "--private-key", "--webhook-url", "--webhook-secret",
                       "--business-code", "--terminal-serial", "--ecuador-processor", "--timeout-delay"):
            assert option in text
        assert "sandbox-public-key" in text and "SANDBOX-0001" in text and "picked" in text
        for secret in ("sandbox-private-key", "sandbox-webhook-secret", "sandbox-business-code"):
            assert secret not in text
        document = httpx.get(f"{started.url}/openapi.json", timeout=10)
        assert document.status_code == 200 and document.json()["info"]["title"] == "pasarela sandbox"
        started.process.send_signal(signal.SIGTERM)
        assert started.process.wait(15) == 0  # how a service manager stops it: not a failure


def test_sigterm_exits_0_and_checkpoints_the_write_ahead_log(tmp_path: Path) -> None:
    database = tmp_path / "box.sqlite3"
    with sandbox_process(["--db", str(database)]) as started:
        token = httpx.post(f"{started.url}/transfer/v1/tokens", headers={"Public-Merchant-Id": "sandbox-public-key"},
                           json={"currency": "COP", "amount": {"subtotalIva": 0, "subtotalIva0": 500, "iva": 0},
                                 "flow": {"processorName": "BRE-B", "type": "QR"}}, timeout=10)
        assert token.status_code == 201
        assert (tmp_path / "box.sqlite3-wal").exists()  # written in WAL mode while it runs
        started.process.send_signal(signal.SIGTERM)
        assert started.process.wait(15) == 0, started.log()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["box.sqlite3"]


def test_every_request_gives_an_access_log_line_naming_the_key_never_its_value() -> None:
    with sandbox_process(["--db", ":memory:"]) as started:
        httpx.get(f"{started.url}/status/{'a' * 32}", headers={"Private-Merchant-Id": "sandbox-private-key"},
                  timeout=10)
        httpx.get(f"{started.url}/status/%0Afake%20line", headers={"Public-Merchant-Id": "not-the-key"}, timeout=10)
        started.process.send_signal(signal.SIGTERM)
        started.process.wait(15)
        lines = [line for line in started.log().splitlines() if "pasarela.sandbox.access" in line]
    assert len(lines) == 2, lines
    assert lines[0].split(" INFO pasarela.sandbox.access: ")[1].startswith(f"GET /status/{'a' * 32} 404 ")
    assert lines[0].endswith(" ms key=private") and "sandbox-private-key" not in lines[0]
    assert " GET /status/%0Afake%20line 401 " in lines[1] and lines[1].endswith(" ms key=wrong")


def test_access_log_off_writes_no_line() -> None:
    with sandbox_process(["--db", ":memory:", "--access-log", "off"]) as started:
        assert httpx.get(f"{started.url}/openapi.json", timeout=10).status_code == 200
        started.process.send_signal(signal.SIGTERM)
        started.process.wait(15)
        assert "pasarela.sandbox.access" not in started.log()


def test_pasarela_sandbox_subcommand_takes_secrets_and_never_shows_them(tmp_path: Path) -> None:
    secrets = {"private": "sk-very-secret-1", "hook": "whsec-very-secret-2", "business": "bc-very-secret-3"}
    options = ["--db", str(tmp_path / "box.sqlite3"), "--private-key", secrets["private"],
               "--webhook-url", "http://127.0.0.1:9/hooks", "--ecuador-processor", "wallet"]
    environment = {"PASARELA_SANDBOX_WEBHOOK_SECRET": secrets["hook"], "PASARELA_BUSINESS_CODE": secrets["business"]}
    with sandbox_process(options, environment=environment,
                         command=(sys.executable, "-m", "pasarela", "sandbox")) as started:
        text = "\n".join(started.banner)
        assert "(given on the command line; not shown)" in text
        assert "(from $PASARELA_SANDBOX_WEBHOOK_SECRET; not shown)" in text
        assert "--ecuador-processor wallet" in " ".join(text.split())
        with httpx.Client(base_url=started.url, timeout=10) as client:
            assert client.get("/status/none", headers={"Private-Merchant-Id": secrets["private"]}).status_code == 404
            refused = client.get("/status/none", headers={"Private-Merchant-Id": "sandbox-private-key"})
            assert refused.status_code == 401
        started.process.send_signal(signal.SIGTERM)
        out, _ = started.process.communicate(timeout=15)
        log = started.log()
        output = text + out + log
    for secret in secrets.values():
        assert secret not in output
    warnings = [line for line in log.splitlines() if "warning:" in line]
    assert len(warnings) == 1 and "--private-key on the command line" in warnings[0]
    assert "$PASARELA_SANDBOX_PRIVATE_KEY" in warnings[0]


def test_secrets_from_the_environment_give_no_warning() -> None:
    environment = {"PASARELA_SANDBOX_PRIVATE_KEY": "sk-env", "PASARELA_SANDBOX_WEBHOOK_SECRET": "wh-env"}
    with sandbox_process(["--db", ":memory:"], environment=environment) as started:
        started.process.send_signal(signal.SIGTERM)
        started.process.wait(15)
        assert "warning:" not in started.log()


def test_every_secret_option_on_the_command_line_is_warned_about() -> None:
    # a --db in no folder: refused once the options are read (and warned about), before anything starts
    result = subprocess.run([sys.executable, "-m", "pasarela", "sandbox", "--db", "/nowhere/at/all.sqlite3",
                             "--private-key", "k1", "--webhook-secret", "k2", "--business-code", "k3"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--db /nowhere/at/all.sqlite3" in result.stderr
    for option, variable in (("--private-key", "PASARELA_SANDBOX_PRIVATE_KEY"),
                             ("--webhook-secret", "PASARELA_SANDBOX_WEBHOOK_SECRET"),
                             ("--business-code", "PASARELA_BUSINESS_CODE")):
        assert f"warning: {option} on the command line" in result.stderr and f"${variable}" in result.stderr
    for secret in ("k1", "k2", "k3"):
        assert f" {secret}" not in result.stderr


def test_sandbox_listens_on_127_0_0_1_only() -> None:
    with sandbox_process(["--db", ":memory:"]) as started:
        port = int(started.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        with pytest.raises(OSError), socket.create_connection(("127.0.0.2", port), timeout=5):
            pass  # bound to 0.0.0.0 it would answer on every loopback address


@pytest.mark.parametrize(
    ("options", "message"),
    [(["--ecuador-processor", "card"], "invalid choice"),
     (["--webhook-url", "ftp://example"], "argument --webhook-url: ftp://example: give an absolute http(s) URL"),
     (["--timeout-delay", "-1"], "argument --timeout-delay: -1: give a number of seconds, 0 or more"),
     (["--settle-after", "soon"], "expected a number of seconds or 'never'"),
     (["--public-url", "sandbox.example"], "argument --public-url: sandbox.example: give an absolute http(s) URL")],
)
def test_sandbox_refuses_bad_options(options: list[str], message: str) -> None:
    result = subprocess.run([sys.executable, "-m", "pasarela", "sandbox", "--db", ":memory:", *options],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_sandbox_help_describes_the_options_without_secret_defaults() -> None:
    result = subprocess.run([sys.executable, "-m", "pasarela", "sandbox", "--help"], capture_output=True, text=True,
                            timeout=60, check=True)
    for option in ("--port", "--db", "--webhook-url", "--ecuador-processor", "--timeout-delay", "--settle-after",
                   "--public-url", "--cors-origin"):
        assert option in result.stdout
    for secret in ("sandbox-private-key", "sandbox-webhook-secret", "sandbox-business-code"):
        assert secret not in result.stdout
    text = " ".join(result.stdout.split())
    assert "https://pasarela.github.io/pasarela/sandbox.html" in text  # a pip user has no docs/sandbox.md
    assert "Colombia PSE transfers" in text and "--access-log" in text
    assert "certify --url URL" in text and "http://127.0.0.1:PORT/" in text
