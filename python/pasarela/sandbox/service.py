"""One sandbox: configuration, storage, clock, webhook dispatcher and the ASGI app, started together.

    with Sandbox(SandboxConfig(webhook_url="http://127.0.0.1:9000/hooks"), db=":memory:") as sandbox:
        serve(sandbox.app)          # any ASGI server; `pasarela sandbox` uses uvicorn

Under a server that runs the ASGI lifespan protocol, the app also starts and stops the dispatcher
itself, so ``Sandbox(...).app`` alone is enough there.
"""

from __future__ import annotations

import os
import time
from typing import Callable, Optional, Union

from .._closing import ClosesOnExit
from ..errors import ConfigurationError
from .app import SandboxApp
from .cdn import CDN_PATH
from .clock import SandboxClock
from .config import SandboxConfig
from .context import Context
from .settlement import Settler
from .simulator import advance_clock
from .store import Store
from .webhooks import Backoff, Dispatcher, HttpSender, Sender

__all__ = ["Sandbox"]


class Sandbox(ClosesOnExit):
    """``clock`` is the base clock (Unix seconds; the simulator's offset is added to it), ``sender``
    delivers webhooks (default: HTTP), ``backoff`` spaces their retries (default: from the config)."""

    def __init__(
        self,
        config: Optional[SandboxConfig] = None,
        *,
        db: Union[str, os.PathLike[str]] = ":memory:",
        clock: Callable[[], float] = time.time,
        sender: Optional[Sender] = None,
        backoff: Optional[Backoff] = None,
    ) -> None:
        self.config = config if config is not None else SandboxConfig()
        self.store = Store(db)
        self.clock = SandboxClock(clock)
        self.dispatcher = Dispatcher(
            self.store, self.config, self.clock, sender or HttpSender(self.config.webhook_timeout), backoff
        )
        self.context = Context(self.config, self.store, self.clock, self.dispatcher.notify, self.dispatcher.target)
        """What the handlers share (configuration, store, clock, the webhook target)."""
        self.settler = Settler(self.context)
        self.app = SandboxApp(self.context)
        self.app.on_startup.append(self.start)
        self.app.on_shutdown.append(self.stop)

    @property
    def cdn_url(self) -> str:
        """Where the CDN stand-ins are served, for ``CheckoutV2(...).render(sandbox.cdn_url)``: ``<public_url>/cdn``.
        The address a server gives the sandbox is known only once it listens: set ``public_url`` to it."""
        if self.config.public_url is None:
            raise ConfigurationError("cdn_url needs SandboxConfig(public_url=...), the address the sandbox is served "
                                     "at (`pasarela sandbox` prints its CDN URL)")
        return self.config.public_url.rstrip("/") + CDN_PATH

    def advance(self, seconds: float) -> float:
        """Move the sandbox clock forward (``POST /sandbox/v1/clock``'s effect): a QR expires, due transfers settle,
        due webhook retries go out. Returns the new now (Unix seconds)."""
        return advance_clock(self.context, seconds)

    def reset(self) -> None:
        """Start again from nothing without a restart (what a test suite does between tests, in milliseconds):
        the state, the outbox and the access log emptied, the clock's advances undone, the webhook URL back to
        the configured one, the delivery chaos the configured one. Deliveries under way finish and are not recorded."""
        self.store.clear()
        self.clock.reset()
        self.context.webhook_target.reset()
        self.dispatcher.chaos.reset()

    def start(self) -> None:
        """Start delivering webhooks (pending ones from an earlier run first) and settling transfers."""
        self.dispatcher.start()
        self.settler.start()

    def stop(self) -> None:
        self.settler.stop()
        self.dispatcher.stop()

    def close(self) -> None:
        self.stop()
        self.store.close()

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __repr__(self) -> str:
        return f"Sandbox({self.config!r}, db={self.store.path!r})"
