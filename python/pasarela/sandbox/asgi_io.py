"""Reading an ASGI HTTP request and writing the sandbox's answers (JSON, HTML, redirects, 204)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping, MutableMapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Optional
from urllib.parse import parse_qs

from .._asgi_body import read_body as read_limited
from .errors import SandboxError
from .jsontext import dumps

__all__ = [
    "MAX_BODY_BYTES",
    "Receive",
    "Reply",
    "Request",
    "Scope",
    "Send",
    "read_body",
    "scope_request",
    "send_reply",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MAX_BODY_BYTES = 1 << 20


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: Mapping[str, str]
    """Lower-cased names; a repeated header keeps its first value."""
    query: str
    body: bytes
    host: str
    """``http://<Host header>``: where the caller reached the sandbox (for links in answers)."""

    def header(self, name: str) -> Optional[str]:
        return self.headers.get(name.lower())

    def json(self) -> Any:
        """The body as JSON, numbers with a fraction as Decimal (amounts keep their digits)."""
        if not self.body.strip():
            raise SandboxError.invalid("body", "is required (a JSON object)")
        try:
            return json.loads(self.body.decode("utf-8"), parse_float=Decimal, parse_constant=_refuse_constant)
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise SandboxError.invalid("body", "is not valid JSON") from None

    def form(self) -> dict[str, str]:
        """An ``application/x-www-form-urlencoded`` body (first value of each name)."""
        try:
            text = self.body.decode("utf-8")
        except UnicodeDecodeError:
            raise SandboxError.invalid("body", "is not UTF-8 form data") from None
        return {name: values[0] for name, values in parse_qs(text, keep_blank_values=True).items()}


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = field(default=())

    @classmethod
    def json(cls, status: int, value: Any) -> Reply:
        return cls(status, dumps(value).encode("utf-8"), (("content-type", "application/json"),))

    @classmethod
    def error(cls, error: SandboxError, extra_headers: tuple[tuple[str, str], ...] = ()) -> Reply:
        reply = cls.json(error.status, error.body)
        return cls(reply.status, reply.body, reply.headers + extra_headers)

    @classmethod
    def html(cls, status: int, page: str) -> Reply:
        return cls(status, page.encode("utf-8"), (("content-type", "text/html; charset=utf-8"),))

    @classmethod
    def redirect(cls, location: str) -> Reply:
        return cls(303, b"", (("location", location),))

    @classmethod
    def empty(cls) -> Reply:
        return cls(204)


def scope_request(scope: Scope, body: bytes) -> Request:
    headers: dict[str, str] = {}
    for name, value in scope.get("headers", ()):
        headers.setdefault(bytes(name).decode("latin-1").lower(), bytes(value).decode("latin-1"))
    server = scope.get("server") or ("127.0.0.1", 0)
    host = headers.get("host") or f"{server[0]}:{server[1]}"
    return Request(
        method=str(scope["method"]).upper(),
        path=str(scope["path"]),
        headers=headers,
        query=bytes(scope.get("query_string", b"")).decode("latin-1"),
        body=body,
        host=f"http://{host}",
    )


async def read_body(receive: Receive, limit: int = MAX_BODY_BYTES) -> Optional[bytes]:
    """The whole body; ``None`` when the client went away; more than ``limit`` bytes is a 413."""
    body = await read_limited(receive, limit)
    if body is not None and len(body) > limit:
        raise SandboxError(413, "BODY_TOO_LARGE", f"the body is larger than {limit} bytes")
    return body


async def send_reply(send: Send, reply: Reply) -> None:
    headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in reply.headers]
    headers.append((b"content-length", str(len(reply.body)).encode("ascii")))
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.body})
