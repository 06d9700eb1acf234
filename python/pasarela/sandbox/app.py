"""The sandbox as one Starlette application.

The terminal API is mounted under ``/terminal`` behind the envelope middleware (:mod:`.terminal`).
Every other route is an operation of :mod:`.endpoint` (key, body, schema, handler) listed by its
module; only the public key's routes send CORS headers (:func:`.endpoint.api_route`). Every
refusal, including Starlette's own 404 and 405, is one JSON shape ``{"code", "message"[, "field"]}``
that repeats nothing the caller chose (not the path, not the method); an unexpected exception is logged
and answered 500 ``SANDBOX_ERROR``. Every answer carries ``X-Content-Type-Options: nosniff``, and a path
that differs from a route's by its trailing slash is redirected by a relative ``Location`` (Starlette's own
redirect names the host the ``Host`` header gave).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Callable, Optional

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.types import Message, Receive, Scope, Send

from . import bank_page, cards, cdn, dashboard, listings, simulator, transfers
from .access_log import AccessLog
from .auth import KeyRule
from .context import Context
from .endpoint import Call, api_route, json_reply
from .errors import SandboxError
from .openapi import document
from .terminal import terminal_app

__all__ = ["SandboxApp"]

_log = logging.getLogger("pasarela.sandbox")
_HTTP_CODES = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 413: "BODY_TOO_LARGE", 415: "UNSUPPORTED_MEDIA_TYPE"}


def _refusal(error: SandboxError, headers: Optional[dict[str, str]] = None) -> Response:
    return json_reply(error.status, error.body, headers)


async def _sandbox_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SandboxError)
    return _refusal(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 404:
        redirect = _slash_redirect(request)
        if redirect is not None:
            return redirect
        message = "no route has this path: /openapi.json lists them"
    elif exc.status_code == 405:
        headers["Allow"] = _allowed_methods(request)
        message = f"this path answers {headers['Allow']} only"
    else:
        message = exc.detail
    code = _HTTP_CODES.get(exc.status_code, f"HTTP_{exc.status_code}")
    return _refusal(SandboxError(exc.status_code, code, message), headers)


def _allowed_methods(request: Request) -> str:
    """Every method some route of this path answers: Starlette's own Allow names only the first route that
    matched the path, and a path served by two routes (GET and POST apart) has more."""
    path = request.url.path
    methods = {method for route in request.app.router.routes
               if isinstance(route, Route) and route.methods and route.path_regex.fullmatch(path)
               for method in route.methods}
    return ", ".join(sorted(methods))


def _slash_redirect(request: Request) -> Optional[Response]:
    """Starlette's ``redirect_slashes`` (``/sandbox`` -> ``/sandbox/``), its Location relative: Starlette's own
    makes an absolute URL of the ``Host`` header, which the caller chooses. A Location starting with a route's
    path cannot lead to another site (``//evil.test`` matches no route)."""
    path = str(request.scope["path"])
    if path == "/":
        return None
    other = path.rstrip("/") if path.endswith("/") else path + "/"
    scope = {**request.scope, "path": other}
    if not any(route.matches(scope)[0] is not Match.NONE for route in request.app.router.routes):
        return None
    query = bytes(request.scope.get("query_string", b"")).decode("latin-1")
    return RedirectResponse(other + (f"?{query}" if query else ""), status_code=307)


def _nosniff(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            MutableHeaders(scope=message).setdefault("X-Content-Type-Options", "nosniff")
        await send(message)

    return sending


async def _client_gone(request: Request, exc: Exception) -> Response:
    return Response(status_code=400)  # nobody reads it


async def _failure(request: Request, exc: Exception) -> Response:
    _log.error("sandbox failure on %s %s", request.method, request.url.path, exc_info=exc)
    return _refusal(SandboxError(500, "SANDBOX_ERROR", "the sandbox failed: see its log"))


class SandboxApp:
    """The ASGI application; ``on_startup`` and ``on_shutdown`` run in the server's lifespan."""

    def __init__(self, context: Context) -> None:
        self._context = context
        self.on_startup: list[Callable[[], None]] = []
        self.on_shutdown: list[Callable[[], None]] = []
        openapi = json_reply(200, document())

        async def serve_openapi(call: Call) -> Response:
            return openapi

        routes: list[BaseRoute] = [api_route(context, "GET", "/openapi.json", KeyRule.NONE, serve_openapi)]
        for module in (transfers, cards, simulator, listings, bank_page, dashboard, cdn):
            routes.extend(module.routes(context))
        routes.append(Mount("/terminal", app=terminal_app(context.config)))
        self.starlette = Starlette(
            routes=routes,
            exception_handlers={SandboxError: _sandbox_error, HTTPException: _http_error,
                                ClientDisconnect: _client_gone, Exception: _failure},
            lifespan=self._lifespan,
        )
        self.starlette.router.redirect_slashes = False  # _slash_redirect instead
        self._served = AccessLog(self.starlette, context)

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        for hook in self.on_startup:
            hook()
        try:
            yield
        finally:
            for hook in self.on_shutdown:
                hook()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._served(scope, receive, _nosniff(send) if scope["type"] == "http" else send)
