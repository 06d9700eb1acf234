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

__all__ = ["ECUADOR_PROCESSORS", "SandboxConfig"]

ECUADOR_PROCESSORS = ("bank", "wallet")


def _check_key(name: str, value: object) -> None:
    if not isinstance(value, str) or not value or any(ch.isspace() or not ch.isprintable() for ch in value):
        raise ConfigurationError(f"{name} must be a non-empty string without blanks or control characters")


def _check_seconds(name: str, value: object, *, allow_zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigurationError(f"{name} must be a number of seconds")
    if value < 0 or (value == 0 and not allow_zero):
        raise ConfigurationError(f"{name} must be {'non-negative' if allow_zero else 'positive'}")


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
            parts = urlsplit(self.webhook_url) if isinstance(self.webhook_url, str) else None
            if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
                raise ConfigurationError("webhook_url must be an absolute http(s) URL")
        _check_seconds("timeout_delay", self.timeout_delay, allow_zero=True)
        _check_seconds("webhook_backoff", self.webhook_backoff)
        _check_seconds("webhook_backoff_max", self.webhook_backoff_max)
        _check_seconds("webhook_timeout", self.webhook_timeout)

    def __repr__(self) -> str:
        return (
            f"SandboxConfig(public_key={self.public_key!r}, private_key=<hidden>, webhook_url={self.webhook_url!r},"
            f" webhook_secret=<hidden>, business_code=<hidden>, terminal_serial={self.terminal_serial!r},"
            f" ecuador_processor={self.ecuador_processor!r})"
        )

    def __reduce__(self) -> NoReturn:
        raise TypeError("SandboxConfig holds secrets and cannot be pickled")
