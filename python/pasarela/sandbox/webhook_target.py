"""Where the sandbox delivers its webhooks, changeable while it runs.

It starts as ``SandboxConfig.webhook_url`` (``--webhook-url``) and can be pointed elsewhere without a restart:
``PUT /sandbox/v1/webhook-url``, the dashboard's Webhooks page, or :class:`pasarela.testing.LiveSandbox`'s
``webhook_url``. Events still waiting go to the new address from their next attempt on.

Changing it makes the sandbox send requests (signed POSTs with the transfers' data) to the address given: a
server-side request forgery if anybody could. So the API needs the private key, the dashboard's form its own
origin and a page token, and either of them (:func:`check_runtime_url`) may name only a loopback address
(``127.0.0.0/8``, ``::1``, ``localhost``) while the sandbox runs with the documented private key, which is public;
a sandbox started with a private key of its own may be pointed anywhere by whoever holds that key. (The start-up
``--webhook-url`` and the test kit's in-process setter are the operator's own and take any address.)
"""

from __future__ import annotations

import ipaddress
import threading
from typing import Optional
from urllib.parse import urlsplit

from ..errors import ConfigurationError
from .config import SandboxConfig, check_webhook_url

__all__ = ["WebhookTarget", "check_runtime_url"]

_DOCUMENTED_PRIVATE_KEY = SandboxConfig.private_key


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: what it resolves to is not known now, nor fixed later (DNS rebinding)


def check_runtime_url(url: Optional[str], config: SandboxConfig) -> None:
    """A ConfigurationError unless ``url`` may be set while the sandbox runs: ``None``, or an absolute http(s) URL,
    on a loopback address unless the sandbox's private key is its own."""
    if url is None:
        return
    check_webhook_url(url)
    host = urlsplit(url).hostname or ""
    if config.private_key == _DOCUMENTED_PRIVATE_KEY and not _is_loopback(host):
        raise ConfigurationError(
            "url: this sandbox runs with the documented private key, which anybody knows: at run time it delivers "
            "to a loopback address only (127.0.0.1, ::1, localhost); start it with --webhook-url, or with a "
            "private key of its own ($PASARELA_SANDBOX_PRIVATE_KEY), to deliver elsewhere")


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
