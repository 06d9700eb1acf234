"""The access log: every request the sandbox answers, as a line on stderr and as a record the dashboard and
``GET /sandbox/v1/requests`` show.

An ASGI middleware around the whole application times each request and keeps what crossed the wire, redacted
(:class:`pasarela.http.redaction.Redactor`) whatever shape the caller gave it: the headers by an allow-list (any
other, the private key's and the terminal's signature among them, by name only); a body the sandbox reads as JSON
(:func:`.jsontext.parse_body`, as the handlers read it) with secret members replaced (CVVs under any name,
cryptograms, keys) and card numbers masked, and any other body (truncated, a trailing comma, a comment, not
UTF-8, a form, multipart, free text) as its length and media type only, never its text; the configured secrets
(private key, webhook secret, business code) replaced wherever they appear, the path included, and every card
number in any text masked. Bodies up to :data:`RECORDED_BODY_BYTES` each. A record that cannot be made or
stored is dropped, counted (:attr:`.store.Store.dropped_requests`) and logged, and never fails the request nor
blocks the store. The line on stderr,
``POST /transfer/v1/init 201 3.1 ms key=private``, goes to the ``pasarela.sandbox.access`` logger (the format of
the sandbox's other log lines); it names which merchant key the request carried, never its value, and the path
redacted and percent-encoded (so no line break or control character of a path reaches the log).

A terminal request refused with AUTH-001 is recorded with the cause :func:`pasarela.diagnose` finds (the
sandbox knows the business code; the cause names no secret), a valid one as ``valid``. The dashboard's own
pages and its polling are logged on stderr but not recorded, nor are the answers of the simulator's listings
(``GET /sandbox/v1/...``): they would only record themselves. The polls of a follower (``GET /sandbox/v1/feed``,
``pasarela sandbox tail``'s, twice a second) are neither logged nor recorded. The log keeps the newest
:data:`~.store.MAX_RECORDED_REQUESTS` requests.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from typing import Any, Optional
from urllib.parse import parse_qsl, quote, unquote_to_bytes

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import PasarelaError
from ..http.redaction import Redactor
from ..terminal.diagnose import diagnose
from .auth import PRIVATE_HEADER, PUBLIC_HEADER, same_key
from .context import Context
from .jsontext import BodyError, parse_body
from .store import NewRequest

__all__ = ["ACCESS_LOGGER", "FEED_PATH", "RECORDED_BODY_BYTES", "AccessLog", "is_dashboard_path"]

ACCESS_LOGGER = "pasarela.sandbox.access"
RECORDED_BODY_BYTES = 16 * 1024
_DIAGNOSED_BODY_BYTES = 1 << 20
_LOGGED_PATH_CHARACTERS = 512
_PATH_CHARACTERS_KEPT = "/:@!$&'()*+,;=-._~[]"
"""What a path keeps unescaped: RFC 3986's characters of a path, and the brackets of [REDACTED]."""
_TOKEN_SEGMENT = re.compile(r"/([0-9a-f]{32})(?:/|$)")
_TOKEN_MEMBER = re.compile(r'^\{"token":"([0-9a-f]{32})"')
"""The answer of a token request (the sandbox writes compact JSON, token first when it is the answer's subject)."""
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}")
_log = logging.getLogger(ACCESS_LOGGER)
FEED_PATH = "/sandbox/v1/feed"


def is_dashboard_path(path: str) -> bool:
    """The dashboard's pages, assets, actions and polling: under /sandbox/ but not the API nor the payer page."""
    if path in ("/", "/favicon.ico"):
        return True
    return path.startswith("/sandbox/") and not path.startswith(("/sandbox/v1/", "/sandbox/pay/"))


def _kind(path: str) -> str:
    if path.startswith("/terminal/"):
        return "terminal"
    if path.startswith("/sandbox/pay/"):
        return "page"
    if path.startswith("/cdn/"):
        return "cdn"
    return "api"


def _recorded_path(scope: Scope, redactor: Redactor) -> str:
    """The path percent-decoded, redacted (a card number or a key spelled with escapes is found too) and
    percent-encoded again: ASCII, so no line break or control character of a path reaches the log."""
    raw = bytes(scope.get("raw_path") or str(scope["path"]).encode("utf-8")).split(b"?", 1)[0]
    decoded = unquote_to_bytes(raw).decode("utf-8", "replace")
    return quote(redactor.text(decoded), safe=_PATH_CHARACTERS_KEPT)[:_LOGGED_PATH_CHARACTERS]


def _headers(scope: Scope) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in scope.get("headers", ()):
        key = name.decode("latin-1").lower()
        headers[key] = f"{headers[key]}, {value.decode('latin-1')}" if key in headers else value.decode("latin-1")
    return headers


def key_used(headers: Mapping[str, str], context: Context) -> str:
    """``private``, ``public``, ``wrong`` (a key header holding neither key) or ``none``."""
    private, public = headers.get(PRIVATE_HEADER.lower()), headers.get(PUBLIC_HEADER.lower())
    if private is not None and same_key(private, context.config.private_key):
        return "private"
    if public is not None and same_key(public, context.config.public_key):
        return "public"
    return "none" if private is None and public is None else "wrong"


def _token(path: str, body: Any, answer: str) -> Optional[str]:
    """The transfer or card token a request concerns: in its path, its body, or the answer that created it."""
    found = _TOKEN_SEGMENT.search(path) or _TOKEN_MEMBER.search(answer)
    if found:
        return found.group(1)
    if isinstance(body, Mapping) and isinstance(body.get("token"), str) and len(body["token"]) <= 255:
        return str(body["token"])
    return None


def _too_large(content: bytes) -> Optional[str]:
    return f"({len(content)} bytes, not recorded)" if len(content) > RECORDED_BODY_BYTES else None


def _media_type(headers: Mapping[str, str]) -> str:
    """The body's media type as a record may name it: ``text/plain`` (parameters dropped), else a placeholder."""
    given = headers.get("content-type")
    if given is None:
        return "no Content-Type"
    media = given.split(";", 1)[0].strip().lower()
    return media if _MEDIA_TYPE.fullmatch(media) else "an unreadable Content-Type"


def _recordable(content: bytes, headers: Mapping[str, str], redactor: Redactor) -> Any:
    """A request body as the log keeps it: JSON as the handlers read it (:func:`.jsontext.parse_body`: what the
    dashboard shows is never deeper than they take), redacted; anything else, whose text could hold a card number
    or a key in a shape no redaction can know, as its length and media type only, and why it was not read."""
    if not content:
        return None
    of_type = f"{len(content)} bytes of {_media_type(headers)}"
    if len(content) > RECORDED_BODY_BYTES:
        return f"({of_type}, not recorded: over {RECORDED_BODY_BYTES} bytes)"
    try:
        return redactor.json(parse_body(content))
    except BodyError as exc:
        return redactor.text(f"({of_type}, not recorded: the body {exc.reason})")


def _unrecorded_answer(method: str, path: str, kind: str) -> Optional[str]:
    """Answers not kept: a listing's repeats what is recorded already (kept, the log would hold itself over and
    over); a payer page holds its form's per-page token; the CDN scripts are the sandbox's own files."""
    if method == "GET" and path.startswith("/sandbox/v1/"):
        return "(a listing: not recorded)"
    return {"page": "(a page: not recorded)", "cdn": "(a script: not recorded)"}.get(kind)


def _recordable_answer(content: bytes, redactor: Redactor) -> str:
    """An answer of the sandbox, as text: it holds no card data (the sandbox keeps none to answer with), but may
    name a member the caller sent, which could be a secret (``{"<private key>": 1}`` is refused by name)."""
    return _too_large(content) or redactor.secrets(content.decode("utf-8", "replace"))


class AccessLog:
    """The middleware (outermost: it sees every answer, refusals included)."""

    def __init__(self, app: ASGIApp, context: Context) -> None:
        self._app = app
        self._context = context
        config = context.config
        self._redactor = Redactor((config.private_key, config.webhook_secret, config.business_code))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = time.perf_counter()
        sent_body: list[bytes] = []
        answer_body: list[bytes] = []
        answer = {"status": 500, "size": 0}
        captured = {"size": 0}

        async def receiving() -> Message:
            message = await receive()
            chunk = message.get("body", b"")
            if message["type"] == "http.request" and chunk and captured["size"] <= _DIAGNOSED_BODY_BYTES:
                captured["size"] += len(chunk)
                sent_body.append(chunk)
            return message

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                answer["status"] = int(message["status"])
            elif message["type"] == "http.response.body" and answer["size"] <= RECORDED_BODY_BYTES:
                chunk = message.get("body", b"")
                answer["size"] += len(chunk)
                answer_body.append(chunk)
            await send(message)

        if scope["path"] == FEED_PATH:  # a follower's poll: it would only show itself
            await self._app(scope, receive, send)
            return
        try:
            await self._app(scope, receiving, sending)
        finally:
            milliseconds = (time.perf_counter() - started) * 1000
            path, method = _recorded_path(scope, self._redactor), str(scope["method"])
            headers = _headers(scope)
            key = key_used(headers, self._context)
            _log.info("%s %s %d %.1f ms key=%s", method, path, answer["status"], milliseconds, key)
            if not is_dashboard_path(str(scope["path"])):
                try:
                    self._record(scope, method, path, headers, key, answer["status"], milliseconds,
                                 b"".join(sent_body), b"".join(answer_body))
                except Exception as exc:  # a record lost, never the answer (already sent) nor the store
                    self._context.store.count_dropped_request(exc)

    def _record(self, scope: Scope, method: str, path: str, headers: Mapping[str, str], key: str, status: int,
                milliseconds: float, body: bytes, response: bytes) -> None:
        kind = _kind(path)
        verdict = self._verdict(method, headers, body, scope, status) if kind == "terminal" else None
        recorded_body = _recordable(body, headers, self._redactor)
        recorded_response = _unrecorded_answer(method, path, kind) or _recordable_answer(response, self._redactor)
        self._context.store.record_request(NewRequest(
            self._context.clock.now(), kind, method, path, status, round(milliseconds, 2), key,
            _token(path, recorded_body, recorded_response), self._redactor.headers(headers), recorded_body,
            recorded_response, verdict))

    def _verdict(self, method: str, headers: Mapping[str, str], body: bytes, scope: Scope, status: int) -> str:
        """``valid``, or why the terminal request got AUTH-001 (the real clock: the terminal's window is real)."""
        if status != 401:
            return "valid"
        config = self._context.config
        query = bytes(scope.get("query_string", b"")).decode("latin-1")
        try:
            found = diagnose(method, headers, body or None, dict(parse_qsl(query)) if method == "GET" else None,
                             business_code=config.business_code, terminal_serial=config.terminal_serial)
        except (PasarelaError, ValueError):
            return "undiagnosable"
        return found.cause
