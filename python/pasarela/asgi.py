"""Server side: an ASGI middleware that opens and verifies inbound terminal requests (no framework needed).

    from pasarela import Terminal
    from pasarela.asgi import TerminalAuthMiddleware

    app = TerminalAuthMiddleware(app, Terminal(business_code, serial))

Each HTTP request is verified and decrypted as the service does it (``Terminal.open``). On success the
application is called with the decrypted payload in ``scope["pasarela.payload"]`` (and the request's
timestamp in ``scope["pasarela.timestamp"]``, to encrypt an answer with the request's key); on POST, PUT
and PATCH the body it reads is the payload as JSON, on GET the body is empty and ``data`` is removed from
the query string. With ``exact_body=True`` (a gateway that forwards what it verified) no payload objects are
made: the application finds the verified plaintext exactly as the terminal's ``JSON.stringify`` wrote it
(``Terminal.open_bytes``) in ``scope["pasarela.plaintext"]`` and, on POST, PUT and PATCH, as the body.
On any failure the middleware answers itself: HTTP 401 with the one AUTH-001 body, whatever the cause; the
cause is logged at WARNING on the ``pasarela.asgi`` logger (never a secret).

Strict on purpose: only ``data`` may travel in the query string (GET), nothing on POST, PUT and PATCH,
since anything beside it is neither signed nor encrypted. With ``replay_store`` a signature is accepted
once inside the tolerance window (:mod:`pasarela.terminal.replay`; shared by every node on Redis:
:mod:`pasarela.terminal.replay_redis`). When that store cannot be reached the request is refused with
HTTP 503 (fail closed): its signature is valid but whether it was seen before cannot be known.

With ``failure_limiter`` (an :class:`~pasarela.auth_limit.AuthFailureLimiter`; off by default), once a
terminal serial has had too many AUTH-001 failures in the limiter's window, every request for it is
answered the same AUTH-001 without being decrypted, until the window ends: this caps the queries a
padding-oracle attacker can time. The answer stays AUTH-001 (HTTP 401), not 429, because that is the one
answer the service gives to any refused terminal request and the only one terminal clients handle; the
limit shows in the WARNING log line. Payloads nested deeper than :data:`~pasarela.terminal.stringify.MAX_DEPTH`
(1000) are refused by ``open``; every payload it accepts is passed on, at any depth of the caller's stack.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Collection, MutableMapping
from typing import Any, Callable, Optional, Union
from urllib.parse import parse_qs

import orjson

from . import _telemetry
from ._asgi_body import read_body, whole_body
from .auth_limit import AuthFailureLimiter
from .errors import AUTH_001_BODY, AuthError, StoreUnavailableError
from .terminal.inbound import BODY_METHODS, DEFAULT_TOLERANCE
from .terminal.replay import AsyncReplayStore, Opener, ReplayStore, Verifier
from .terminal.stringify import stringify

__all__ = ["AUTH_001_RESPONSE", "TerminalAuthMiddleware"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

AUTH_001_RESPONSE = json.dumps(AUTH_001_BODY, separators=(",", ":")).encode("ascii")
"""The body of every refusal: {"type":"AUTH","code":"AUTH-001","message":"Invalid or expired credentials"}."""
STORE_UNAVAILABLE_RESPONSE = b'{"message":"service temporarily unavailable"}'
"""The body of the 503 answered when the replay store cannot be reached (the cause is only logged)."""

_HEADER_ROLES = {b"authorization": "Authorization", b"timestamp": "timestamp", b"content-length": ""}
"""The headers the middleware reads (names as ASGI servers give them, lower-case bytes): the two open reads, each of
which may appear once, under the name open looks up first (terminal.inbound.header, so that the lookups of open and
of the replay check hit at once), and Content-Length (""), which the application gets its own of."""
_HEADER_LENGTHS = frozenset(map(len, _HEADER_ROLES))
"""Their names' lengths: most headers are told apart by the length of their name alone."""
_MAX_REQUEST_ID = 128  # characters of X-Request-ID kept for the log (the client chooses it)
logger = logging.getLogger("pasarela.asgi")


class TerminalAuthMiddleware:
    """Verifies terminal requests before ``app`` sees them; answers AUTH-001 (HTTP 401) itself on failure.

    terminal: the credentials that open requests (``pasarela.Terminal``). tolerance: seconds of clock
    difference accepted (spec: 300). replay_store: refuse a signature seen before (optional). clock: the
    server time (default ``time.time``). exempt_paths: paths passed through unverified (health checks).
    max_body_bytes: larger bodies are answered 413 without being read further. failure_limiter: refuse a
    terminal serial's requests unopened after too many failures (optional); limit_key: what the limiter
    counts under, from the ASGI scope (default: the terminal's serial). exact_body: hand the application the
    verified plaintext's bytes (``scope["pasarela.plaintext"]``, and the body) instead of the payload.
    """

    def __init__(self, app: ASGIApp, terminal: Opener, *, tolerance: float = DEFAULT_TOLERANCE,
                 replay_store: Union[ReplayStore, AsyncReplayStore, None] = None,
                 clock: Callable[[], float] = time.time, exempt_paths: Collection[str] = (),
                 max_body_bytes: int = 1 << 20, failure_limiter: Optional[AuthFailureLimiter] = None,
                 limit_key: Optional[Callable[[Scope], str]] = None, exact_body: bool = False) -> None:
        self.app = app
        self._exact_body = exact_body
        self._verifier = Verifier(terminal, replay_store=replay_store, tolerance=tolerance, clock=clock)
        self._exempt = frozenset(exempt_paths)
        self._max_body_bytes = max_body_bytes
        self._limiter = failure_limiter
        serial = str(getattr(terminal, "terminal_serial", ""))
        self._serial = serial
        self._limit_key: Callable[[Scope], str] = limit_key if limit_key is not None else (lambda scope: serial)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self._exempt:
            await self.app(scope, receive, send)
            return
        message = await receive()
        body = whole_body(message)  # (no coroutine of read_body's for the body that comes whole)
        if body is None:
            body = await read_body(receive, self._max_body_bytes, message)
            if body is None:  # the client went away
                return
        if len(body) > self._max_body_bytes:
            await _answer(send, 413, b'{"message":"request body too large"}')
            return
        method = str(scope["method"]).upper()
        if not _telemetry.tracing():  # no SDK records spans (a no-op span alone costs microseconds): none opened
            await self._verify(scope, receive, send, body, method)
            return
        with _telemetry.verify_span(method) as span:
            outcome = await self._verify(scope, receive, send, body, method)
            if span is not None:
                span.set_attribute("pasarela.terminal.outcome", outcome)

    async def _verify(self, scope: Scope, receive: Receive, send: Send, body: bytes, method: str) -> str:
        """Verify one request and pass it on, or answer the refusal; returns the outcome (``ok`` or the cause)."""
        opened = False  # whether Terminal.open saw the request (and counted it)
        limit_key = ""
        try:
            if self._limiter is not None:
                limit_key = self._limit_key(scope)
                if self._limiter.blocked(limit_key):
                    raise AuthError(f"too many AUTH-001 failures for {limit_key!r}: refused unopened until the "
                                    f"limiter's window ({self._limiter.window:g} s) ends")
            headers, passed_on = _read_headers(scope["headers"])
            query = scope.get("query_string")
            checked = _checked_query(method, query) if query else ""
            opened = True
            params = checked if method == "GET" else None
            verifier = self._verifier
            if self._exact_body:
                verified: Any = (verifier.open_bytes(method, headers, body or None, params) if verifier.claims_in_call
                                 else await verifier.open_bytes_async(method, headers, body or None, params))
                forwarded = verified if method in BODY_METHODS else b""
            else:
                verified = (verifier.open(method, headers, body or None, params) if verifier.claims_in_call
                            else await verifier.open_async(method, headers, body or None, params))
                forwarded = _forwarded(verified) if method in BODY_METHODS else b""
        except AuthError as exc:
            if self._limiter is not None and not self._limiter.blocked(limit_key):
                self._limiter.failed(limit_key)
            client = scope.get("client") or ("?", 0)
            cause = _telemetry.middleware_refused(exc.reason, opened)
            logger.warning("terminal request refused (AUTH-001): %s %r from %s: %s", method, scope.get("path"),
                           client[0], exc.reason, extra=self._refusal(scope, cause, 401))
            await _answer(send, 401, AUTH_001_RESPONSE)
            return cause
        except StoreUnavailableError as exc:
            logger.error("terminal request refused (503, fail closed): %s %r: %s", method, scope.get("path"), exc,
                         extra=self._refusal(scope, "store_unavailable", StoreUnavailableError.status))
            await _answer(send, StoreUnavailableError.status, STORE_UNAVAILABLE_RESPONSE)
            return "store_unavailable"
        passed_on.append((b"content-length", b"%d" % len(forwarded)))
        inner = {**scope, "headers": passed_on, "query_string": b"",
                 "pasarela.plaintext" if self._exact_body else "pasarela.payload": verified,
                 "pasarela.timestamp": int(headers["timestamp"])}
        await self.app(inner, _replay_body(forwarded, receive), send)
        return "ok"

    def _refusal(self, scope: Scope, cause: str, status: int) -> dict[str, Any]:
        """The log record's fields (pasarela.logging.JSONFormatter's ``terminal.refused``)."""
        request_id = next((bytes(value).decode("latin-1")[:_MAX_REQUEST_ID] for name, value in scope["headers"]
                           if bytes(name).lower() == b"x-request-id"), None)
        return {"pasarela": {"event": "terminal.refused", "cause": cause, "terminal_serial": self._serial,
                             "request_id": request_id, "status": status, **_telemetry.span_ids()}}


def _forwarded(payload: Any) -> bytes:
    """The payload as the JSON body the application reads: orjson's text, or for what orjson declines (nesting
    beyond its 254 levels, lone surrogates, integers beyond 64 bits) JSON.stringify's (stringify, which never
    recurses): neither depends on the caller's stack, so every payload open accepts is passed on."""
    try:
        return orjson.dumps(payload)
    except orjson.JSONEncodeError:
        return stringify(payload)


def _read_headers(raw: list[tuple[bytes, bytes]]) -> tuple[dict[str, str], list[tuple[bytes, bytes]]]:
    """The headers open reads, ``timestamp`` and ``authorization`` (any case in the request), those present, and the
    request's headers but Content-Length, for the application (the body it reads is another); either of the two
    repeated is refused. One pass, nothing decoded but those two (the other headers are only the app's)."""
    found: dict[str, str] = {}
    passed_on: list[tuple[bytes, bytes]] = []
    for pair in raw:
        raw_name = pair[0]
        if len(raw_name) in _HEADER_LENGTHS:  # else none of the three
            role = _HEADER_ROLES.get(raw_name) if type(raw_name) is bytes else None  # lower-case, as servers give it
            if role is None:
                role = _HEADER_ROLES.get(bytes(raw_name).lower())
            if role is not None:
                if not role:  # Content-Length
                    continue
                if role in found:
                    raise AuthError(f"repeated {role.lower()} header")
                found[role] = bytes(pair[1]).decode("latin-1")
        passed_on.append(pair)
    return found, passed_on


def _checked_query(method: str, raw: bytes) -> str:
    """The query string, refused when it holds anything but ``data`` (on GET) or anything at all (other methods)."""
    query = bytes(raw).decode("latin-1")
    names = set(parse_qs(query, keep_blank_values=True))
    allowed = {"data"} if method == "GET" else set()
    if names - allowed:
        raise AuthError("query parameters beside data: they would travel unsigned and unencrypted")
    return query


def _replay_body(body: bytes, receive: Receive) -> Receive:
    delivered = False

    async def downstream() -> Message:
        nonlocal delivered
        if delivered:
            return await receive()
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    return downstream


async def _answer(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


