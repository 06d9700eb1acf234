"""ASGI webhook receivers for the tests of the sandbox's deliveries: :class:`Answering` answers every delivery with
a fixed status and body and counts them; :func:`read_all` reads a request's whole body."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable


async def read_all(receive: Callable[..., Any]) -> bytes:
    """The whole body of the request ``receive`` delivers."""
    body = b""
    while True:
        message = await receive()
        chunk: bytes = message.get("body", b"")
        body += chunk
        if not message.get("more_body"):
            return body


class Answering:
    """Answers each delivery with ``status`` and ``body``; ``received`` counts them."""

    def __init__(self, status: int = 200, body: bytes = b'{"status":"received"}') -> None:
        self.status, self.body, self.received = status, body, 0

    async def __call__(self, scope: Mapping[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] != "http":
            return
        await read_all(receive)
        self.received += 1
        await send({"type": "http.response.start", "status": self.status, "headers": []})
        await send({"type": "http.response.body", "body": self.body})
