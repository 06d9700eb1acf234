"""Reading an ASGI request body with a size limit (shared by the middleware, the webhook receiver and
the sandbox)."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, Callable, Optional


def whole_body(message: Mapping[str, Any]) -> Optional[bytes]:
    """The body when message holds all of it (as servers send a small one), else None."""
    if message["type"] == "http.request" and not message.get("more_body", False):
        return bytes(message.get("body", b""))
    return None


async def read_body(receive: Callable[[], Awaitable[Mapping[str, Any]]], limit: int,
                    first: Optional[Mapping[str, Any]] = None) -> Optional[bytes]:
    """The request body, or None when the client went away. Reading stops once past ``limit``: a
    result longer than ``limit`` means the body was too large (answer 413). first: the message the caller
    already received, if any."""
    message = await receive() if first is None else first
    whole = whole_body(message)
    if whole is not None:
        return whole
    chunks: list[bytes] = []
    size = 0
    while True:
        if message["type"] == "http.disconnect":
            return None
        chunk = bytes(message.get("body", b""))
        chunks.append(chunk)
        size += len(chunk)
        if size > limit or not message.get("more_body", False):
            return b"".join(chunks)
        message = await receive()
