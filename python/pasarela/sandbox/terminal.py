"""The simulated terminal (spec 4.1, 5.1), mounted under ``/terminal/`` (the path it sees is the full one).

:class:`~pasarela.asgi.TerminalAuthMiddleware` opens and verifies every request with the envelope
core (:class:`pasarela.Terminal`) and answers AUTH-001 (HTTP 401) itself for any invalid one. A
valid request gets its decrypted payload back, sealed with the request's own key (the key of its
timestamp), as ``{"data": "<iv>:<ciphertext>"}``: any POST, PUT or PATCH path, and GET paths such
as ``/terminal/v1/sync/abort`` and ``/terminal/v1/async/abort`` (the identifier, if any, inside the
payload; ``{}`` otherwise). ``GET /terminal/v1/print/status`` needs ``printJobId`` inside the
payload and adds ``"status": "printed"``; without it the answer is a 400, encrypted too.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ..asgi import TerminalAuthMiddleware
from ..errors import PayloadError
from ..terminal.envelope import Terminal
from .config import SandboxConfig

__all__ = ["PRINT_STATUS_PATH", "TerminalEcho", "terminal_app"]

PRINT_STATUS_PATH = "/terminal/v1/print/status"
_log = logging.getLogger("pasarela.sandbox.terminal")


def _error(field: str, message: str) -> dict[str, Any]:
    return {"code": "INVALID_REQUEST", "message": f"{field}: {message}", "field": field}


class TerminalEcho:
    """The application behind the middleware: echoes the payload, encrypted for the caller."""

    def __init__(self, terminal: Terminal) -> None:
        self._terminal = terminal

    def _answer(self, method: str, path: str, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if method == "GET" and path == PRINT_STATUS_PATH:
            job = payload.get("printJobId")
            if not isinstance(job, str) or not job:
                return 400, _error("printJobId", "is required inside the encrypted payload (a non-empty string)")
            return 200, {**payload, "status": "printed"}
        return 200, payload

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        status, answer = self._answer(str(scope["method"]), str(scope["path"]), scope["pasarela.payload"])
        timestamp = int(scope["pasarela.timestamp"])
        try:
            sealed = self._terminal.seal(answer, timestamp=timestamp)
        except PayloadError as exc:  # e.g. an integer JavaScript cannot hold: it cannot be echoed exactly
            _log.info("terminal payload not echoed: %s", exc)
            status, sealed = 400, self._terminal.seal(_error(exc.path, exc.reason), timestamp=timestamp)
        await Response(sealed.body or b"", status_code=status, media_type="application/json")(scope, receive, send)


def terminal_app(config: SandboxConfig) -> TerminalAuthMiddleware:
    terminal = Terminal(business_code=config.business_code, terminal_serial=config.terminal_serial)
    return TerminalAuthMiddleware(TerminalEcho(terminal), terminal)
