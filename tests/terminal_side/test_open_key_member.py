"""A top-level "key" member is refused by every route into open, whichever path reads the text (issue 38, defect 2).

A client that splices the key into its text (SHA-512(Base64(text[:-1] + ',"key":"<encodedKey>"}'))) signs a text with
two "key" members when its payload already has one; the JavaScript server signs JSON.stringify of the object whose
key it replaced, so it refuses such a request, and so does pasarela.reference. The texts here are those the C
canonicalizer leaves to the pure-Python path (a 17-digit float, a subnormal, a repeated key, a number that overflows
to Infinity), where open used to accept them and return the payload with its "key" (or refuse them for their
signature, not for the key), where diagnose said key_in_payload.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
from typing import Any, Callable

import pytest

import pasarela
from pasarela import AuthError, reference
from pasarela.asgi import TerminalAuthMiddleware
from pasarela.errors import AUTH_001_BODY, NOT_VERIFIED
from pasarela.terminal import reference as primitives
from pasarela.terminal.replay import Verifier
from support.faulty_clients import BUSINESS_CODE, NOON, SERIAL

DERIVED = primitives.derive(BUSINESS_CODE.encode(), SERIAL.encode(), NOON)
IV = bytes(range(16))

TEXTS = [
    b'{"a":0.30000000000000004,"key":1}',
    b'{"a":5e-324,"key":1}',
    b'{"a":1,"a":2,"key":1}',
    b'{"a":1e400,"key":1}',
    b'{"key":"x","b":12345678901234567890}',
    b'{"key":{"nested":[0.30000000000000004]}}',
]


def _spliced_signature(text: bytes) -> str:
    signed = text[:-1] + b',"key":"' + DERIVED.encoded_key.encode("ascii") + b'"}'
    return hashlib.sha512(base64.b64encode(signed)).hexdigest()


def _request(text: bytes) -> tuple[dict[str, str], str]:
    return ({"Authorization": "Basic " + _spliced_signature(text), "timestamp": str(NOON)},
            primitives.encrypt(DERIVED.aes_key, IV, text))


def _through_middleware(method: str, headers: dict[str, str], body: bytes, query: bytes) -> None:
    """The request through TerminalAuthMiddleware: raises AuthError with the reason it logged, or returns when the
    application was called."""
    reached: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["pasarela.payload"])

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    middleware = TerminalAuthMiddleware(app, pasarela.Terminal(BUSINESS_CODE, SERIAL), clock=lambda: NOON)
    scope = {"type": "http", "method": method, "path": "/p", "query_string": query,
             "headers": [(name.lower().encode(), value.encode()) for name, value in headers.items()]}
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("pasarela.asgi")
    logger.addHandler(handler)
    try:
        asyncio.run(middleware(scope, receive, send))
    finally:
        logger.removeHandler(handler)
    if reached:
        return
    assert sent[0]["status"] == 401 and b"AUTH-001" in sent[1]["body"]
    raise AuthError(str(records[-1].args[-1]))


def _routes(text: bytes) -> dict[str, Callable[[], object]]:
    headers, data = _request(text)
    body = b'{"data":"' + data.encode("ascii") + b'"}'
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    return {
        "POST bytes": lambda: terminal.open("POST", headers, body, now=NOON),
        "POST parsed": lambda: terminal.open("POST", headers, {"data": data}, now=NOON),
        "PUT": lambda: terminal.open("PUT", headers, body, now=NOON),
        "GET": lambda: terminal.open("GET", headers, params={"data": data}, now=NOON),
        "Verifier": lambda: Verifier(terminal, clock=lambda: NOON).open("POST", headers, body),
        "middleware POST": lambda: _through_middleware("POST", headers, body, b""),
        "middleware GET": lambda: _through_middleware("GET", headers, b"", b"data=" + data.encode("ascii")),
        "reference": lambda: reference.Terminal(BUSINESS_CODE, SERIAL).open("POST", headers, body, now=NOON),
    }


@pytest.mark.parametrize("route", list(_routes(b"{}")))
@pytest.mark.parametrize("text", TEXTS, ids=[t.decode() for t in TEXTS])
def test_open_refuses_a_top_level_key_signed_by_splicing(text: bytes, route: str) -> None:
    with pytest.raises(AuthError) as refused:
        _routes(text)[route]()
    assert refused.value.reason == NOT_VERIFIED  # (the one reason after decryption; diagnose says key_in_payload)
    assert refused.value.body == AUTH_001_BODY
