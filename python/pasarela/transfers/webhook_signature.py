"""Webhook signatures as the service's public documentation describes them (the spec says "not shown").

With the merchant's webhook secret as the HMAC-SHA256 key:

- ``X-Kushki-Signature`` is the hex digest of ``<raw body>.<X-Kushki-Id>`` (the exact bytes
  received, a dot, the id): it binds the body.
- ``X-Kushki-SimpleSignature`` is the hex digest of the id alone: it proves the sender knows the
  secret but does not bind the body.

:func:`verify_webhook_signature` checks the body signature when it is present (and then only it),
falls back to the simple one only when allowed, compares in constant time and, when given the
expected merchant id, also checks ``X-Kushki-Key``. Header names are configurable
(:class:`WebhookHeaders`) and looked up case-insensitively.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional, Union

from ..errors import WebhookSignatureError

__all__ = ["WebhookHeaders", "body_signature", "id_signature", "verify_webhook_signature"]

Secret = Union[str, bytes]


@dataclass(frozen=True)
class WebhookHeaders:
    webhook_id: str = "X-Kushki-Id"
    signature: str = "X-Kushki-Signature"
    simple_signature: str = "X-Kushki-SimpleSignature"
    merchant_id: str = "X-Kushki-Key"


def _key(secret: Secret) -> bytes:
    return secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)


def body_signature(secret: Secret, body: bytes, webhook_id: str) -> str:
    """Hex HMAC-SHA256 of ``body + b"." + webhook_id``."""
    return hmac.new(_key(secret), body + b"." + webhook_id.encode("utf-8"), hashlib.sha256).hexdigest()


def id_signature(secret: Secret, webhook_id: str) -> str:
    """Hex HMAC-SHA256 of the webhook id alone."""
    return hmac.new(_key(secret), webhook_id.encode("utf-8"), hashlib.sha256).hexdigest()


def _matches(received: str, expected: str) -> bool:
    return hmac.compare_digest(received.strip().lower().encode("ascii", "replace"), expected.encode("ascii"))


def verify_webhook_signature(
    headers: Mapping[str, str],
    body: bytes,
    secret: Secret,
    *,
    names: WebhookHeaders = WebhookHeaders(),
    allow_simple_signature: bool = True,
    merchant_id: Optional[str] = None,
) -> None:
    """Raise WebhookSignatureError unless the headers prove ``body`` came from the service."""
    lowered = {name.lower(): value for name, value in headers.items()}
    webhook_id = lowered.get(names.webhook_id.lower())
    if not webhook_id:
        raise WebhookSignatureError(f"missing {names.webhook_id} header")
    if merchant_id is not None and lowered.get(names.merchant_id.lower()) != merchant_id:
        raise WebhookSignatureError(f"{names.merchant_id} does not name this merchant")
    signature = lowered.get(names.signature.lower())
    if signature is not None:
        if not _matches(signature, body_signature(secret, body, webhook_id)):
            raise WebhookSignatureError(f"{names.signature} does not match the body")
        return
    simple = lowered.get(names.simple_signature.lower())
    if simple is None or not allow_simple_signature:
        raise WebhookSignatureError(f"missing {names.signature} header")
    if not _matches(simple, id_signature(secret, webhook_id)):
        raise WebhookSignatureError(f"{names.simple_signature} does not match")
