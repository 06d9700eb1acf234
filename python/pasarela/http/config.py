"""What a card or transfer client needs to talk to the service: where, with which keys, how patiently."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, NoReturn, Optional
from urllib.parse import urlsplit

from .._version import __version__
from ..errors import ConfigurationError
from .audit import AuditHook
from .retry import RetryPolicy, is_seconds

__all__ = ["MerchantKey", "ServiceConfig"]


class MerchantKey(Enum):
    """Which merchant key a call carries, and in which header (spec 5.2)."""

    PUBLIC = "Public-Merchant-Id"
    """Token creation: the public key, also used by the browser."""
    PRIVATE = "Private-Merchant-Id"
    """Init, status, cancel and charges: the private key, back end only."""

    @property
    def header(self) -> str:
        return self.value


def _new_idempotency_key() -> str:
    return str(uuid.uuid4())


def _check_key(name: str, value: Optional[str]) -> None:
    if value is None:
        return
    if not isinstance(value, str) or not value or any(ch.isspace() or not ch.isprintable() for ch in value):
        # Never show the value: it may be the private key.
        raise ConfigurationError(f"{name} must be a non-empty string without blanks or control characters")


@dataclass(frozen=True, repr=False)
class ServiceConfig:
    """Base URL, merchant keys and call policy shared by :class:`CardClient` and :class:`TransferClient`.

    ``base_url`` is the test or production address the service gave you (``{base_url}`` in the
    spec; production keys are issued after certification). A client needs ``public_merchant_id``
    only to create tokens and ``private_merchant_id`` for everything else; the private key is kept
    out of ``repr``, audit records, logs and exceptions, and this object refuses to be pickled.
    ``timeout`` (seconds) bounds each attempt; ``audit`` receives a redacted record of every attempt;
    ``clock`` stamps the records; ``idempotency_keys`` makes the ``Idempotency-Key`` of each POST.
    """

    base_url: str
    public_merchant_id: Optional[str] = None
    private_merchant_id: Optional[str] = None
    timeout: float = 30.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    audit: Optional[AuditHook] = None
    clock: Callable[[], float] = time.time
    idempotency_keys: Callable[[], str] = _new_idempotency_key
    user_agent: str = f"pasarela/{__version__}"

    def __post_init__(self) -> None:
        if not isinstance(self.base_url, str):
            raise ConfigurationError("base_url must be a string")
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
            raise ConfigurationError("base_url must be an absolute http(s) URL without query or fragment")
        object.__setattr__(self, "base_url", self.base_url.rstrip("/"))
        _check_key("public_merchant_id", self.public_merchant_id)
        _check_key("private_merchant_id", self.private_merchant_id)
        if not is_seconds(self.timeout) or self.timeout == 0:
            raise ConfigurationError("timeout must be a positive number of seconds")

    def key_header(self, key: MerchantKey) -> tuple[str, str]:
        """The header carrying ``key``; a missing key is a ConfigurationError naming it."""
        value = self.public_merchant_id if key is MerchantKey.PUBLIC else self.private_merchant_id
        if value is None:
            wanted = "public_merchant_id" if key is MerchantKey.PUBLIC else "private_merchant_id"
            raise ConfigurationError(f"this call needs {wanted} in the ServiceConfig")
        return key.header, value

    def __repr__(self) -> str:
        private = "<hidden>" if self.private_merchant_id is not None else None
        return (
            f"ServiceConfig(base_url={self.base_url!r}, public_merchant_id={self.public_merchant_id!r}, "
            f"private_merchant_id={private}, timeout={self.timeout!r})"
        )

    def __reduce__(self) -> NoReturn:
        raise TypeError("ServiceConfig holds the private merchant key and cannot be pickled")
