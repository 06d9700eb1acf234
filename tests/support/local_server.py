"""A real HTTP server for client tests: an ASGI app under uvicorn on 127.0.0.1, in a background thread.

The listening socket is bound (port 0: the OS picks a free port) and put in listen mode before
the thread starts, so the base URL is known at once and early connections wait in the backlog:
no polling, no sleeping. The server stops when the ``with`` block ends, and stops itself after
``max_lifetime`` seconds whatever happens to the test.

:class:`ScriptedService` is the stand-in for the payment service until the sandbox simulator
exists: tests script the answer of each route and read back every request it received.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Awaitable, Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Callable, Optional

import pytest
import uvicorn

Receive = Callable[[], Awaitable[Mapping[str, Any]]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]


async def read_body(receive: Receive) -> bytes:
    """An ASGI request's whole body, however many messages it came in."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)
App = Callable[[Mapping[str, Any], Receive, Send], Awaitable[None]]


class LocalServer:
    def __init__(self, app: App, *, max_lifetime: float = 60.0, http: str = "auto") -> None:
        """``http`` is uvicorn's parser: "h11" takes any token as a method, where httptools answers 400 to one it
        does not know."""
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # else keep-alive answers wait ~40 ms
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self.port: int = self._socket.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=2,
                                http=http)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)
        self._deadline = threading.Timer(max_lifetime, self.stop)
        self._deadline.daemon = True

    def __enter__(self) -> LocalServer:
        self._thread.start()
        self._deadline.start()
        return self

    def stop(self) -> None:
        self._server.should_exit = True

    def __exit__(
        self, kind: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.stop()
        self._deadline.cancel()
        self._thread.join(timeout=10)
        self._socket.close()
        if self._thread.is_alive():
            raise RuntimeError("the local server did not stop within 10 s")


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    """As sent, percent-encoding kept."""
    query: str
    headers: Mapping[str, str]
    """Lower-cased names."""
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class ScriptedReply:
    status: int
    body: bytes = b""
    headers: tuple[tuple[bytes, bytes], ...] = ((b"content-type", b"application/json"),)
    hang: bool = False


@dataclass
class ScriptedService:
    """Answers each ``(method, path)`` with the replies scripted for it, in order; 404 when none is left."""

    requests: list[RecordedRequest] = field(default_factory=list)
    base_url: str = ""
    """Where the service is served (set by :func:`scripted_service_fixtures`)."""
    _routes: dict[tuple[str, str], deque[ScriptedReply]] = field(default_factory=dict)

    def reset(self) -> None:
        self.requests.clear()
        self._routes.clear()

    def reply(
        self, method: str, path: str, status: int = 200, body: Any = None, *, raw: Optional[bytes] = None
    ) -> None:
        content = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        self._routes.setdefault((method, path), deque()).append(ScriptedReply(status, content))

    def hang(self, method: str, path: str) -> None:
        """Never answer (until the client gives up and disconnects)."""
        self._routes.setdefault((method, path), deque()).append(ScriptedReply(0, hang=True))

    async def __call__(self, scope: Mapping[str, Any], receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        body = await read_body(receive)
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        path = scope["raw_path"].decode("ascii").partition("?")[0]  # still percent-encoded, as sent
        self.requests.append(
            RecordedRequest(scope["method"], path, scope["query_string"].decode(), headers, body)
        )
        queue = self._routes.get((scope["method"], path))
        reply = queue.popleft() if queue else ScriptedReply(404, b'{"code":"NOT-SCRIPTED"}')
        if reply.hang:
            while (await receive())["type"] != "http.disconnect":
                pass
            return
        await send({"type": "http.response.start", "status": reply.status, "headers": list(reply.headers)})
        await send({"type": "http.response.body", "body": reply.body})


def scripted_service_fixtures() -> tuple[Any, Any]:
    """Fixtures for a test module: one server per module, and ``service``, its ScriptedService, reset
    for each test (``service.base_url`` is where to point the client)::

        scripted_server, service = scripted_service_fixtures()
    """

    @pytest.fixture(scope="module")
    def scripted_server() -> Iterator[ScriptedService]:
        scripted = ScriptedService()
        with LocalServer(scripted) as server:
            scripted.base_url = server.base_url
            yield scripted

    @pytest.fixture
    def service(scripted_server: ScriptedService) -> ScriptedService:
        scripted_server.reset()
        return scripted_server

    return scripted_server, service
