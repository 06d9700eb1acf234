"""One API operation of the sandbox as a Starlette route: merchant key, body, schema, then the handler.

A request to an operation is handled in this order (the route itself was matched by Starlette, which
answers 404 and 405): the merchant key (401: which key a call needs depends on the route), the media
type of the body (415 unless ``application/json``), its size (413 past :data:`MAX_BODY_BYTES`), JSON
(400: not UTF-8 JSON, NaN or Infinity, a number beyond a double, nesting past
:data:`~.jsontext.MAX_BODY_DEPTH`) and the schema of :mod:`.openapi` (400 naming the field,
:mod:`.body_schema`). The handler gets a :class:`Call` and answers a Starlette response.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Callable, Optional
from urllib.parse import parse_qs

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from .auth import KeyRule, check_key
from .body_schema import check_body
from .context import Context
from .errors import SandboxError
from .idempotency import (
    IDEMPOTENCY_HEADER,
    REPLAYED_HEADER,
    Claimed,
    IdempotencyKeys,
    check_idempotency_key,
    fingerprint,
)
from .jsontext import BodyError, dumps, parse_body

__all__ = ["MAX_BODY_BYTES", "Call", "Handler", "api_route", "empty", "form", "html_reply", "json_reply", "redirect"]

MAX_BODY_BYTES = 1 << 20
_JSON_MEDIA = "application/json"


@dataclass(frozen=True)
class Call:
    request: Request
    body: Any
    """The JSON body, checked against the route's schema (``None`` for a route without one, or an
    optional body left empty)."""
    context: Context

    @property
    def params(self) -> dict[str, str]:
        return {name: str(value) for name, value in self.request.path_params.items()}

    @property
    def public_url(self) -> str:
        return self.context.public_url(self.request.scope)


Handler = Callable[[Call], Awaitable[Response]]


def json_reply(status: int, value: Any, headers: Optional[dict[str, str]] = None) -> Response:
    return Response(dumps(value), status_code=status, media_type=_JSON_MEDIA, headers=headers)


def html_reply(status: int, page: str, headers: Optional[dict[str, str]] = None) -> Response:
    return Response(page, status_code=status, media_type="text/html; charset=utf-8", headers=headers)


def redirect(location: str) -> Response:
    return RedirectResponse(location, status_code=303)


def empty() -> Response:
    return Response(status_code=204)


def is_json_media(content_type: Optional[str]) -> bool:
    """``application/json`` (parameters such as charset allowed) or a ``+json`` type."""
    if content_type is None:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media == _JSON_MEDIA or (media.startswith("application/") and media.endswith("+json"))


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The whole body; more than ``limit`` bytes (declared or sent) is a 413."""
    too_large = SandboxError(413, "BODY_TOO_LARGE", f"the body is larger than {limit} bytes")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(body: bytes) -> Any:
    """The body as JSON (:func:`.jsontext.parse_body`: numbers with a fraction as Decimal, nesting at most
    MAX_BODY_DEPTH, counted before jsonschema sees it); a 400 naming why not."""
    try:
        return parse_body(body)
    except BodyError as exc:
        raise SandboxError.invalid("body", exc.reason) from None


async def form(request: Request) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body (first value of each name)."""
    try:
        text = (await read_body(request)).decode("utf-8")
    except UnicodeDecodeError:
        raise SandboxError.invalid("body", "is not UTF-8 form data") from None
    return {name: values[0] for name, values in parse_qs(text, keep_blank_values=True).items()}


async def _json_body(request: Request, schema: str, optional: bool) -> Any:
    body = await read_body(request)
    if optional and not body.strip():
        return None
    if not is_json_media(request.headers.get("content-type")):
        raise SandboxError(415, "UNSUPPORTED_MEDIA_TYPE",
                           "the body must be JSON, sent as Content-Type: application/json")
    if not body.strip():
        raise SandboxError.invalid("body", "is required (a JSON object)")
    parsed = parse_json(body)
    check_body(parsed, schema)
    return parsed


async def _once(keys: IdempotencyKeys, scope: str, key: str, call: Call, handler: Handler) -> Response:
    """Run ``handler`` for the first request with ``key``; the same request again gets its answer again."""
    request = call.request
    claim = keys.claim(scope, key, fingerprint(request.method, request.url.path, call.body),
                       call.context.clock.now())
    if isinstance(claim, Claimed):
        kept = claim.answer
        return Response(kept.body, status_code=kept.status, media_type=kept.media_type,
                        headers={REPLAYED_HEADER: "true"})
    try:
        try:
            response = await handler(call)
        except SandboxError as refusal:  # the handler's rules and the spec's scenarios are answers too
            response = json_reply(refusal.status, refusal.body)
    except BaseException:
        keys.forget(scope, key)  # its transaction rolled back: nothing was created, running it again is safe
        raise
    keys.keep(scope, key, response.status_code, response.headers, bytes(response.body))
    return response


def api_route(context: Context, method: str, path: str, keys: KeyRule, handler: Handler, schema: str = "", *,
              optional_body: bool = False) -> Route:
    """A Starlette route for ``method path``; ``schema`` names the component the JSON body is checked against.

    A call made with the public key is one the merchant's front end makes from the payer's browser (token
    creation, the bank list): its route alone answers CORS preflights and sends CORS headers, for the configured
    origins (Starlette's CORSMiddleware on the route). Every other route sends none, so that no other origin's
    page can read what it answers (the dashboard, the listings, a transfer's status).

    The sandbox's own routes (under ``/sandbox/``: the dashboard, the simulator and its listings, the payer page)
    answer only a ``Host`` that is the sandbox's own address (421 otherwise): a page whose site rebinds its DNS
    name to 127.0.0.1 is same-origin with what it fetches there, and CORS cannot stop it reading."""

    own_address_only = path.startswith("/sandbox/")
    # A POST made with a merchant key honours Idempotency-Key (:mod:`.idempotency`), scoped by that key.
    idempotency = IdempotencyKeys(context.store) if method == "POST" and keys in (KeyRule.PUBLIC, KeyRule.PRIVATE) \
        else None

    async def endpoint(request: Request) -> Response:
        if request.method == "OPTIONS":  # not a preflight (CORSMiddleware answers those): what the path allows
            return Response(status_code=204, headers={"Allow": f"OPTIONS, {method}"})
        if own_address_only and not context.is_own_host(request.scope, request.headers.get("host", "")):
            raise SandboxError(421, "MISDIRECTED_REQUEST", "the sandbox's own pages and API answer at its own "
                                                            "address only (127.0.0.1 or localhost on its port, or "
                                                            "--public-url)")
        check_key(request.headers, keys, context.config)
        idempotency_key = request.headers.get(IDEMPOTENCY_HEADER) if idempotency is not None else None
        if idempotency_key is not None:
            check_idempotency_key(idempotency_key)
        body = await _json_body(request, schema, optional_body) if schema else None
        call = Call(request, body, context)
        if idempotency is None or idempotency_key is None:
            return await handler(call)
        return await _once(idempotency, keys.value, idempotency_key, call, handler)

    if keys is not KeyRule.PUBLIC:
        return Route(path, endpoint, methods=[method], name=f"{method} {path}")
    cors = Middleware(CORSMiddleware, allow_origins=list(context.config.cors_origins), allow_methods=[method],
                      allow_headers=["*"], max_age=600)
    return Route(path, endpoint, methods=[method, "OPTIONS"], name=f"{method} {path}", middleware=[cors])
