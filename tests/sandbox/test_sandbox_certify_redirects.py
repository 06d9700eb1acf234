"""``pasarela sandbox certify --url`` refuses a redirect (issue 53, item 6): its request carries the private key,
and urllib, followed, copies that header to whatever host the ``Location`` names. A real HTTP server answers the
redirect, another (``ScriptedService``) stands at the place it points to and records what reaches it: nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from support.local_server import LocalServer, Receive, ScriptedService, Send

KEY = "sk-certify-redirect-0123"


def _redirecting_to(location: str, status: int) -> Any:
    async def app(scope: Mapping[str, Any], receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": status, "headers": [(b"location", location.encode())]})
        await send({"type": "http.response.body", "body": b""})

    return app


@pytest.fixture
def elsewhere() -> Iterator[ScriptedService]:
    scripted = ScriptedService()
    with LocalServer(scripted) as server:
        scripted.base_url = server.base_url
        yield scripted


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_certify_refuses_a_redirect_and_the_key_goes_nowhere_else(elsewhere: ScriptedService, status: int) -> None:
    elsewhere.reply("GET", "/sandbox/v1/certification", 200, {"rules": []})
    target = f"{elsewhere.base_url.replace('127.0.0.1', 'localhost')}/sandbox/v1/certification"
    with LocalServer(_redirecting_to(target, status)) as redirecting:
        run = subprocess.run([sys.executable, "-m", "pasarela", "sandbox", "certify", "--url", redirecting.base_url],
                             capture_output=True, text=True, timeout=60,
                             env={**os.environ, "PASARELA_SANDBOX_PRIVATE_KEY": KEY})
    assert run.returncode == 2, run.stdout + run.stderr
    [line] = run.stderr.splitlines()
    assert f"answered HTTP {status}, a redirect to {target}: not followed" in line
    assert "give --url the sandbox's own address" in line and "Traceback" not in line
    assert KEY not in run.stdout + run.stderr
    assert elsewhere.requests == []  # at the base commit: one request there, with Private-Merchant-Id
