"""The sandbox as one ASGI application (no framework).

A request is handled in this order: the terminal API under ``/terminal/`` goes to the envelope
middleware (:mod:`.terminal`); otherwise route (404 unknown path, 405 wrong method), merchant key
(401), body schema (400 naming the field), then the handler. The route comes before the key
because which key a call needs (public or private) depends on the route. ``/openapi.json``
needs no key. An unexpected exception is logged and answered 500 ``SANDBOX_ERROR``.
"""

from __future__ import annotations

import logging
from typing import Callable, Optional

from . import bank_page, cards, simulator, transfers
from .asgi_io import Receive, Reply, Scope, Send, read_body, scope_request, send_reply
from .auth import KeyRule, check_key
from .context import Context
from .errors import SandboxError
from .openapi import COMPONENTS, document
from .routing import Call, Route, Router
from .schema_check import check
from .terminal import terminal_app

__all__ = ["SandboxApp"]

_log = logging.getLogger("pasarela.sandbox")
TERMINAL_PREFIX = "/terminal/"


class SandboxApp:
    def __init__(self, context: Context) -> None:
        self._context = context
        self._openapi = Reply.json(200, document())
        routes = [Route("GET", "/openapi.json", KeyRule.NONE, self._serve_openapi)]
        for module in (transfers, cards, simulator, bank_page):
            routes.extend(module.routes(context))
        self.router = Router(routes)
        self._terminal = terminal_app(context.config)
        self.on_startup: list[Callable[[], None]] = []
        self.on_shutdown: list[Callable[[], None]] = []

    async def _serve_openapi(self, call: Call) -> Reply:
        return self._openapi

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # no websockets: uvicorn closes the connection
        if str(scope["path"]).startswith(TERMINAL_PREFIX):
            await self._terminal(scope, receive, send)
            return
        try:
            reply = await self._handle(scope, receive)
        except SandboxError as exc:
            extra = (("allow", self.router.allowed(str(scope["path"]))),) if exc.status == 405 else ()
            reply = Reply.error(exc, extra)
        except Exception:
            _log.exception("sandbox failure on %s %s", scope.get("method"), scope.get("path"))
            reply = Reply.error(SandboxError(500, "SANDBOX_ERROR", "the sandbox failed: see its log"))
        if reply is not None and reply.status:
            await send_reply(send, reply)

    async def _handle(self, scope: Scope, receive: Receive) -> Optional[Reply]:
        route, params = self.router.match(str(scope["method"]).upper(), str(scope["path"]))
        body = await read_body(receive)
        if body is None:  # the client went away
            return None
        request = scope_request(scope, body)
        check_key(request, route.keys, self._context.config)
        parsed = None
        if route.body_schema:
            parsed = request.json()
            check(parsed, COMPONENTS[route.body_schema], COMPONENTS)
        return await route.handler(Call(request, params, parsed, receive))

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                for hook in self.on_startup:
                    hook()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                for hook in self.on_shutdown:
                    hook()
                await send({"type": "lifespan.shutdown.complete"})
                return
