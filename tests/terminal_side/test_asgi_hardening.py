"""The ASGI middleware against an attacker: the optional limiter of AUTH-001 failures per terminal serial, and
payloads nested too deep to pass on, over a real server on 127.0.0.1 (uvicorn)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Optional

import httpx
import pytest

import pasarela
from pasarela.asgi import AUTH_001_RESPONSE, TerminalAuthMiddleware
from pasarela.auth_limit import AuthFailureLimiter
from pasarela.errors import ConfigurationError
from support.clocks import ManualClock
from support.faulty_clients import BUSINESS_CODE, SERIAL
from support.local_server import LocalServer, Receive, Send

TERMINAL = pasarela.Terminal(BUSINESS_CODE, SERIAL)


class CountingTerminal:
    """TERMINAL, counting how many requests it was asked to open (decrypt)."""

    terminal_serial = SERIAL

    def __init__(self) -> None:
        self.opened = 0

    def open(self, method: str, headers: Mapping[str, str], body: Any = None, params: Any = None, *,
             now: Optional[float] = None, tolerance: float = 300) -> dict[str, Any]:
        self.opened += 1
        return TERMINAL.open(method, headers, body, params, now=now, tolerance=tolerance)


async def echo(scope: Any, receive: Receive, send: Send) -> None:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body", False):
            break
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body or b"{}"})


def forged() -> tuple[dict[str, str], bytes]:
    """A request sealed with another business code: refused with AUTH-001 (bad padding or signature)."""
    sealed = pasarela.Terminal("not-the-business-code", SERIAL).seal({"amount": 1})
    return sealed.headers, sealed.body or b""


def post(http: httpx.Client, headers: Mapping[str, str], body: bytes) -> httpx.Response:
    return http.post("/payments", headers=dict(headers), content=body)


# --- the limiter ------------------------------------------------------------------------------------------


def test_without_a_limiter_failures_never_lock_the_terminal_out() -> None:
    with LocalServer(TerminalAuthMiddleware(echo, TERMINAL)) as server, \
            httpx.Client(base_url=server.base_url) as http:
        for _ in range(60):
            assert post(http, *forged()).status_code == 401
        sealed = TERMINAL.seal({"amount": 1})
        assert post(http, sealed.headers, sealed.body or b"").json() == {"amount": 1}


def test_past_the_limit_every_request_gets_auth_001_unopened_until_the_window_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, terminal = ManualClock(1000.0), CountingTerminal()
    limiter = AuthFailureLimiter(max_failures=3, window=60.0, clock=clock)
    caplog.set_level(logging.WARNING, logger="pasarela.asgi")
    with LocalServer(TerminalAuthMiddleware(echo, terminal, failure_limiter=limiter)) as server, \
            httpx.Client(base_url=server.base_url) as http:
        for _ in range(3):
            assert post(http, *forged()).status_code == 401
        assert terminal.opened == 3
        genuine = TERMINAL.seal({"amount": 1})
        limited = post(http, genuine.headers, genuine.body or b"")
        probe = post(http, *forged())
        assert (limited.status_code, limited.content) == (401, AUTH_001_RESPONSE)  # the same answer as any refusal
        assert (probe.status_code, probe.content) == (401, AUTH_001_RESPONSE)
        assert terminal.opened == 3  # nothing was decrypted: no timing to measure
        clock.now += 59.9
        assert post(http, genuine.headers, genuine.body or b"").status_code == 401
        clock.now += 0.1
        fresh = TERMINAL.seal({"amount": 2})
        assert post(http, fresh.headers, fresh.body or b"").json() == {"amount": 2}
    assert "too many AUTH-001 failures" in caplog.text and BUSINESS_CODE not in caplog.text


def test_successes_do_not_reset_the_count() -> None:
    clock = ManualClock(1000.0)
    limiter = AuthFailureLimiter(max_failures=2, window=60.0, clock=clock)
    with LocalServer(TerminalAuthMiddleware(echo, TERMINAL, failure_limiter=limiter)) as server, \
            httpx.Client(base_url=server.base_url) as http:
        assert post(http, *forged()).status_code == 401
        ok = TERMINAL.seal({"n": 1})
        assert post(http, ok.headers, ok.body or b"").status_code == 200
        assert post(http, *forged()).status_code == 401
        again = TERMINAL.seal({"n": 2})
        assert post(http, again.headers, again.body or b"").status_code == 401  # limited


def test_the_limit_key_can_come_from_the_request() -> None:
    limiter = AuthFailureLimiter(max_failures=1, window=60.0, clock=ManualClock(1000.0))
    middleware = TerminalAuthMiddleware(echo, TERMINAL, failure_limiter=limiter,
                                        limit_key=lambda scope: dict(scope["headers"]).get(b"x-gateway", b"").decode())
    with LocalServer(middleware) as server, httpx.Client(base_url=server.base_url) as http:
        headers, body = forged()
        assert post(http, {**headers, "x-gateway": "a"}, body).status_code == 401
        sealed = TERMINAL.seal({"amount": 1})
        assert post(http, {**sealed.headers, "x-gateway": "b"}, sealed.body or b"").status_code == 200
        sealed = TERMINAL.seal({"amount": 3})
        assert post(http, {**sealed.headers, "x-gateway": "a"}, sealed.body or b"").status_code == 401


def test_the_limiter_holds_a_bounded_number_of_keys() -> None:
    clock = ManualClock(1000.0)
    limiter = AuthFailureLimiter(max_failures=1, window=60.0, max_keys=100, clock=clock)
    for n in range(10_000):
        limiter.failed(f"serial-{n}")
    assert len(limiter) == 100
    assert limiter.blocked("serial-9999") and not limiter.blocked("serial-0")  # the least recent was forgotten
    clock.now += 60
    assert not limiter.blocked("serial-9999")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [({"max_failures": 0}, "max_failures"), ({"max_failures": True}, "max_failures"), ({"window": 0}, "window"),
     ({"window": float("inf")}, "window"), ({"max_keys": 0}, "max_keys")],
)
def test_the_limiter_refuses_a_bad_configuration(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        AuthFailureLimiter(**arguments)


# --- payloads too deep ------------------------------------------------------------------------------------


def nested(depth: int) -> bytes:
    """A JSON object whose member nests arrays to ``depth`` levels in all."""
    return b'{"a":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


@pytest.mark.parametrize("depth", [999, 1000])
def test_a_payload_that_opens_but_nests_too_deep_to_pass_on_gets_auth_001_not_500(depth: int) -> None:
    sealed = TERMINAL.seal(nested(depth))  # within the 1000 levels open accepts
    with LocalServer(TerminalAuthMiddleware(echo, TERMINAL)) as server, \
            httpx.Client(base_url=server.base_url) as http:
        answer = post(http, sealed.headers, sealed.body or b"")
    assert answer.status_code in (200, 401)  # 200 when this interpreter's stack has room for json.dumps
    if answer.status_code == 200:
        assert answer.content == sealed.plaintext
    else:
        assert answer.content == AUTH_001_RESPONSE


def test_hostile_bodies_nested_100000_deep_get_auth_001() -> None:
    sealed = TERMINAL.seal({"amount": 1})
    deep = b"[" * 100_000 + b"]" * 100_000
    with LocalServer(TerminalAuthMiddleware(echo, TERMINAL, max_body_bytes=1 << 20)) as server, \
            httpx.Client(base_url=server.base_url) as http:
        assert post(http, sealed.headers, deep).content == AUTH_001_RESPONSE
        assert post(http, sealed.headers, b'{"data":' + deep + b"}").content == AUTH_001_RESPONSE
    assert json.loads(AUTH_001_RESPONSE)["code"] == "AUTH-001"
