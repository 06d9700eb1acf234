"""What one sandbox simulates: the merchant's keys, where webhooks go, the terminal's credentials.

The defaults are public sandbox values (docs/sandbox.md lists them). The private key, the webhook
secret and the business code are still treated as secrets: never in a ``repr``, a log line, an
error or the start-up banner, so that a real key passed by mistake does not leak either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NoReturn, Optional
from urllib.parse import urlsplit

from ..errors import ConfigurationError
from .chaos import check_chaos

__all__ = ["DEFAULT_SETTLE_AFTER", "ECUADOR_PROCESSORS", "MAX_URL_LENGTH", "SandboxConfig", "check_webhook_url",
           "origin_problem"]

ECUADOR_PROCESSORS = ("bank", "wallet")
DEFAULT_SETTLE_AFTER = 5.0
MAX_URL_LENGTH = 2048
"""Longest webhook or public URL taken (what browsers and proxies commonly accept)."""


def _check_key(name: str, value: object) -> None:
    if not isinstance(value, str) or not value or any(ch.isspace() or not ch.isprintable() for ch in value):
        raise ConfigurationError(f"{name} must be a non-empty string without blanks or control characters")


def _check_seconds(name: str, value: object, *, allow_zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigurationError(f"{name} must be a number of seconds")
    if value < 0 or (value == 0 and not allow_zero):
        raise ConfigurationError(f"{name} must be {'non-negative' if allow_zero else 'positive'}")


def _check_absolute_url(name: str, value: object) -> None:
    try:
        parts = urlsplit(value) if isinstance(value, str) and len(value) <= MAX_URL_LENGTH else None
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname \
            or any(ch.isspace() or not ch.isprintable() for ch in str(value)):
        raise ConfigurationError(f"{name} must be an absolute http(s) URL of at most {MAX_URL_LENGTH} characters, "
                                 "without blanks or control characters")


def check_webhook_url(url: object) -> None:
    """A ConfigurationError unless ``url`` is an absolute http(s) URL the dispatcher can POST to."""
    _check_absolute_url("webhook_url", url)


def origin_problem(origin: str) -> Optional[str]:
    """What keeps ``origin`` from being one a browser sends in ``Origin`` (``scheme://host[:port]``, lower case, no
    default port, no path), or ``None`` for an origin (or ``*``, any). CORS compares the header with it as text: an
    origin written otherwise would never match, and the browser's calls would fail for no reason it shows."""
    if origin == "*":
        return None
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return "not an origin: scheme://host[:port], e.g. http://localhost:3000"
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        return "not an origin: scheme://host[:port], e.g. http://localhost:3000"
    if parts.path or parts.query or parts.fragment or origin.endswith(("?", "#")):
        return f"an origin has no path (nor a trailing slash): {parts.scheme}://{parts.netloc}"
    if origin != origin.lower():
        return f"browsers send it in lower case: {origin.lower()}"
    if port == {"http": 80, "https": 443}[parts.scheme]:
        return f"browsers leave the default port out: {parts.scheme}://{parts.hostname}"
    return None


@dataclass(frozen=True, repr=False)
class SandboxConfig:
    public_key: str = "sandbox-public-key"
    """Accepted in ``Public-Merchant-Id`` (token creation); also sent as ``X-Kushki-Key`` on webhooks."""
    private_key: str = "sandbox-private-key"
    """Accepted in ``Private-Merchant-Id`` (init, status, cancel, charges, simulator)."""
    webhook_url: Optional[str] = None
    """Where transfer webhooks are POSTed; without it they wait in the outbox."""
    webhook_secret: str = "sandbox-webhook-secret"  # noqa: S105
    business_code: str = "sandbox-business-code"
    terminal_serial: str = "SANDBOX-0001"
    ecuador_processor: str = "bank"
    """The processor enabled for the merchant in Ecuador: ``bank`` (redirect) or ``wallet`` (QR, deep link, code)."""
    merchant_name: str = "Sandbox merchant"
    timeout_delay: float = 35.0
    """Seconds the 13000 scenario keeps the init unanswered (longer than the clients' default 30 s timeout)."""
    webhook_backoff: float = 1.0
    """Seconds before the first retry of a webhook; doubled each time, up to ``webhook_backoff_max``."""
    webhook_backoff_max: float = 60.0
    webhook_timeout: float = 5.0
    """Seconds a webhook receiver has to answer one delivery."""
    webhook_concurrency: int = 8
    """Deliveries in flight at once: a receiver that hangs on one event holds one of them, not the others."""
    settle_after: Optional[float] = DEFAULT_SETTLE_AFTER
    """Seconds after init at which a Mexico, Ecuador or Colombia ACH transfer the payer has not paid settles by
    itself (the documentNumber rule decides); ``None`` leaves them to the payer page and the simulator."""
    public_url: Optional[str] = None
    """The sandbox's address in the links it hands out (payer pages, QR contents); ``None``: the address the
    server is bound to (never the Host header a client sends)."""
    cors_origins: tuple[str, ...] = ("*",)
    """Origins a browser may call the API from (``*``: any)."""
    webhook_chaos: tuple[str, ...] = ()
    """Delivery chaos on purpose (:mod:`.chaos`): some of ``duplicate``, ``concurrent``, ``reorder``, ``late``."""
    webhook_chaos_rate: float = 0.5
    """The share of events whose first delivery gets one of ``webhook_chaos``."""

    def __post_init__(self) -> None:
        for name in ("public_key", "private_key", "webhook_secret", "business_code", "terminal_serial"):
            _check_key(name, getattr(self, name))
        if self.public_key == self.private_key:
            raise ConfigurationError("the public and the private key must differ")
        if self.ecuador_processor not in ECUADOR_PROCESSORS:
            raise ConfigurationError(f"ecuador_processor must be one of {', '.join(ECUADOR_PROCESSORS)}")
        if not isinstance(self.merchant_name, str) or not self.merchant_name.strip():
            raise ConfigurationError("merchant_name must be a non-empty string")
        if self.webhook_url is not None:
            check_webhook_url(self.webhook_url)
        _check_seconds("timeout_delay", self.timeout_delay, allow_zero=True)
        _check_seconds("webhook_backoff", self.webhook_backoff)
        _check_seconds("webhook_backoff_max", self.webhook_backoff_max)
        _check_seconds("webhook_timeout", self.webhook_timeout)
        if self.settle_after is not None:
            _check_seconds("settle_after", self.settle_after, allow_zero=True)
        if isinstance(self.webhook_concurrency, bool) or not isinstance(self.webhook_concurrency, int) \
                or not 1 <= self.webhook_concurrency <= 256:
            raise ConfigurationError("webhook_concurrency must be an integer from 1 to 256")
        if self.public_url is not None:
            _check_absolute_url("public_url", self.public_url)
        check_chaos(self.webhook_chaos, self.webhook_chaos_rate)
        if isinstance(self.cors_origins, str) or not all(isinstance(origin, str) and origin
                                                         for origin in self.cors_origins):
            raise ConfigurationError("cors_origins must be a tuple of origins (or '*')")
        for origin in self.cors_origins:
            problem = origin_problem(origin)
            if problem is not None:
                raise ConfigurationError(f"cors_origins: {origin!r}: {problem}")

    def __repr__(self) -> str:
        return (
            f"SandboxConfig(public_key={self.public_key!r}, private_key=<hidden>, webhook_url={self.webhook_url!r},"
            f" webhook_secret=<hidden>, business_code=<hidden>, terminal_serial={self.terminal_serial!r},"
            f" ecuador_processor={self.ecuador_processor!r})"
        )

    def __reduce__(self) -> NoReturn:
        raise TypeError("SandboxConfig holds secrets and cannot be pickled")
