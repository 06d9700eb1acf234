"""What every handler of the sandbox works with: its configuration, storage, clock, the dispatcher's doorbell
(rung after a webhook is queued so that it goes out at once) and where webhooks go now."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

from ..http.redaction import passes_luhn
from .clock import SandboxClock
from .config import SandboxConfig
from .store import Store
from .webhook_target import WebhookTarget

__all__ = ["Context", "digits", "new_token", "ticket_number"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_HAS_PORT = re.compile(r":[0-9]+$")


@dataclass(frozen=True)
class Context:
    config: SandboxConfig
    store: Store
    clock: SandboxClock
    webhook_queued: Callable[[], None]
    """Rung after a webhook is queued (or its address changed): the dispatcher delivers without waiting."""
    webhook_target: WebhookTarget

    def public_url(self, scope: Mapping[str, Any]) -> str:
        """Where payers and browsers reach the sandbox: ``public_url`` when configured, else the address the
        server socket is bound to (``scope["server"]``), never the Host header, which the caller chooses."""
        if self.config.public_url is not None:
            return self.config.public_url.rstrip("/")
        host, port = scope.get("server") or ("127.0.0.1", 80)
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{port}"

    def own_origins(self, scope: Mapping[str, Any]) -> dict[str, str]:
        """The sandbox's own addresses, ``host:port`` -> origin: the address it is bound to, 127.0.0.1 and
        localhost on its port, and the public URL."""
        host, port = scope.get("server") or ("127.0.0.1", 80)
        own = {name: f"http://{name}" for name in (f"{host}:{port}", f"localhost:{port}", f"127.0.0.1:{port}")}
        if self.config.public_url is not None:
            public = urlsplit(self.config.public_url)
            netloc = public.netloc.lower()
            own[netloc if public.port else f"{netloc}:{_DEFAULT_PORTS[public.scheme]}"] = f"{public.scheme}://{netloc}"
        return own

    def is_own_host(self, scope: Mapping[str, Any], host: str) -> bool:
        """Whether a ``Host`` header names one of :meth:`own_origins` (its default port left out or not): a site
        that rebinds its DNS name to 127.0.0.1 sends its own name, and is refused."""
        name = host.lower()
        if not _HAS_PORT.search(name):
            name = f"{name}:{_DEFAULT_PORTS.get(str(scope.get('scheme', 'http')), 80)}"
        return name in self.own_origins(scope)


def new_token() -> str:
    """A token: 32 lowercase hex digits."""
    return secrets.token_hex(16)


def digits(count: int) -> str:
    """``count`` random decimal digits (ticket numbers, reference numbers, codes)."""
    return "".join(str(secrets.randbelow(10)) for _ in range(count))


def ticket_number() -> str:
    """18 random digits that fail the Luhn check: the access log masks digit runs that pass it as card numbers
    (:func:`pasarela.http.redaction.mask_card_numbers`), and never hides a ticket number this way."""
    first = digits(17)
    last = next(digit for digit in "0123456789" if not passes_luhn(first + digit))
    return first + last
