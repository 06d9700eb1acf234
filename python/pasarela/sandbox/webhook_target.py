"""Where the sandbox delivers its webhooks, changeable while it runs.

It starts as ``SandboxConfig.webhook_url`` (``--webhook-url``) and can be pointed elsewhere without a restart:
``POST /sandbox/v1/webhook-url``, the dashboard's Webhooks page, or :class:`pasarela.testing.LiveSandbox`'s
``webhook_url``. Events still waiting go to the new address from their next attempt on. Changing it makes the
sandbox send requests to the address given, so only callers who hold the private key, or a dashboard page of
the sandbox's own origin, can change it (docs/security.md).
"""

from __future__ import annotations

import threading
from typing import Optional

from .config import check_webhook_url

__all__ = ["WebhookTarget"]


class WebhookTarget:
    """The current webhook URL, read by the dispatcher on each pass (thread-safe)."""

    def __init__(self, url: Optional[str]) -> None:
        self._configured = url
        self._url = url
        self._lock = threading.Lock()

    @property
    def url(self) -> Optional[str]:
        with self._lock:
            return self._url

    def change(self, url: Optional[str]) -> None:
        """Deliver to ``url`` from now on (``None``: keep events in the outbox); a ConfigurationError names what
        is wrong with a URL that is not absolute http(s)."""
        if url is not None:
            check_webhook_url(url)
        with self._lock:
            self._url = url

    def reset(self) -> None:
        """Back to the URL the sandbox was started with."""
        with self._lock:
            self._url = self._configured
