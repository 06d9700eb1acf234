"""An ASGI app served by a real uvicorn on a free loopback port, in a background thread: the sandbox of the test
kit, and any receiver a test wants the sandbox to deliver webhooks to::

    with ServedApp(receiver) as served:          # receiver: a TransferWebhookReceiver, your Starlette app, ...
        sandbox.webhook_url = served.url + "/hooks"

The socket is bound (port 0: the system picks a free one, so parallel test workers never collide) and listening
before the thread starts: the URL is known at once and early connections wait in the backlog. ``with`` ends it:
uvicorn is asked to exit, open connections get ``graceful`` seconds to finish, and the thread is joined.
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType
from typing import Any, Literal, Optional

from ..errors import ConfigurationError, missing_extra

__all__ = ["ServedApp"]

_HOST = "127.0.0.1"
_STARTUP_TIMEOUT = 10.0


class ServedApp:
    """``app`` under uvicorn on ``127.0.0.1:<free port>``; ``lifespan`` is uvicorn's setting ("off": the app's own
    start-up is the caller's, as :class:`~pasarela.testing.LiveSandbox` does it). The port is bound at once: an app
    that must know its own address (the sandbox's links) may be given after, as ``served.app``, before ``start``."""

    def __init__(self, app: Any = None, *, lifespan: Literal["auto", "on", "off"] = "auto", graceful: int = 2) -> None:
        try:
            import uvicorn
        except ModuleNotFoundError as exc:
            raise missing_extra(exc, "pasarela.testing", "testing") from exc
        self.app = app
        self._lifespan = lifespan
        self._graceful = graceful
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # else a keep-alive client waits ~40 ms for each answer after the first (Nagle meets delayed ACK)
        self._listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._listener.bind((_HOST, 0))
        self._listener.listen(256)
        self.port: int = self._listener.getsockname()[1]
        self.url = f"http://{_HOST}:{self.port}"
        """``http://127.0.0.1:<port>``, no trailing slash."""
        self._server: Optional[uvicorn.Server] = None
        self._thread: Optional[threading.Thread] = None

    def start(self) -> ServedApp:
        """Serve; returns once uvicorn is up (a ConfigurationError if it could not start within 10 s)."""
        if self._thread is None:
            import uvicorn

            if self.app is None:
                raise ConfigurationError("ServedApp: give the app to serve before start()")
            config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan=self._lifespan,
                                    timeout_graceful_shutdown=self._graceful)
            server = self._server = uvicorn.Server(config)
            self._thread = threading.Thread(target=server.run, kwargs={"sockets": [self._listener]},
                                            name=f"pasarela-testing-uvicorn-{self.port}", daemon=True)
            self._thread.start()
            deadline = time.monotonic() + _STARTUP_TIMEOUT
            while not server.started:
                if not self._thread.is_alive() or time.monotonic() > deadline:
                    self.stop()
                    raise ConfigurationError(f"uvicorn did not start serving {self.url} (see the log above)")
                time.sleep(0.002)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and wait for the thread (a RuntimeError if it is still running after ``timeout``)."""
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise RuntimeError(f"uvicorn serving {self.url} did not stop within {timeout:g} s")
        self._listener.close()

    def __enter__(self) -> ServedApp:
        return self.start()

    def __exit__(self, kind: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ServedApp({self.url})"
