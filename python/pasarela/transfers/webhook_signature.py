"""Webhook signatures as the service's public documentation describes them (the spec says "not shown").

With the merchant's webhook secret as the HMAC-SHA256 key:

- ``X-Kushki-Signature`` is the hex digest of ``<body>.<X-Kushki-Id>``, where the body is what the
  sender's ``JSON.stringify`` wrote: it binds the body.
- ``X-Kushki-SimpleSignature`` is the hex digest of the id alone: it proves the sender knows the
  secret but does not bind the body (anyone who saw one delivery can replay the pair with any body).
- ``X-Kushki-Id`` is the sender's clock at send time, in Unix milliseconds (``new Date().getTime()``;
  the documentation calls it a timestamp in UNIX time).

:func:`verify_webhook_signature` requires the body signature unless the caller opts in to the simple
one, checks it against the raw body and, only when that fails, against the ``JSON.stringify`` form
of the parsed body (a proxy that re-spaces JSON must not cause a false refusal), refuses ids older
than ``max_age`` (or more than ``max_ahead`` in the future) and ids that are not timestamps unless
allowed, compares in constant time and, when given the expected merchant id, checks
``X-Kushki-Key``. Header names are configurable (:class:`WebhookHeaders`) and looked up
case-insensitively.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Callable, Optional, Union

from ..errors import PayloadError, WebhookSignatureError
from ..terminal.stringify import canonicalize_text

__all__ = [
    "DEFAULT_MAX_AGE",
    "DEFAULT_MAX_AHEAD",
    "VerifiedWebhook",
    "WebhookHeaders",
    "body_signature",
    "id_signature",
    "verify_webhook_signature",
]

Secret = Union[str, bytes]

DEFAULT_MAX_AGE = 600.0
"""Seconds a delivery stays acceptable after the time in its ``X-Kushki-Id`` (10 minutes)."""
DEFAULT_MAX_AHEAD = 300.0
"""Seconds an ``X-Kushki-Id`` may be ahead of the receiver's clock (the spec's clock tolerance for terminals)."""
_MAX_ID_DIGITS = 16  # milliseconds until the year 318857: longer digit strings are not timestamps


@dataclass(frozen=True)
class WebhookHeaders:
    webhook_id: str = "X-Kushki-Id"
    signature: str = "X-Kushki-Signature"
    simple_signature: str = "X-Kushki-SimpleSignature"
    merchant_id: str = "X-Kushki-Key"


@dataclass(frozen=True)
class VerifiedWebhook:
    """What a valid signature proves.

    ``body`` is the authenticated text (the raw body, or its ``JSON.stringify`` form when only that
    matched: read the event from these bytes, not from the raw ones) or ``None`` when only the simple
    signature was checked: then nothing in the body is authenticated. ``webhook_id`` is the id header.
    """

    webhook_id: str
    body: Optional[bytes]


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


def _check_fresh(name: str, webhook_id: str, now: float, max_age: float, max_ahead: float,
                 allow_non_timestamp_id: bool) -> None:
    if not (webhook_id.isascii() and webhook_id.isdigit() and len(webhook_id) <= _MAX_ID_DIGITS):
        if allow_non_timestamp_id:
            return
        raise WebhookSignatureError(f"{name} is not a Unix timestamp in milliseconds (a replay cannot be dated)")
    age = now - int(webhook_id) / 1000
    if age > max_age:
        raise WebhookSignatureError(f"{name} is {age:.0f} s old (more than {max_age:g} s): stale or replayed")
    if -age > max_ahead:
        raise WebhookSignatureError(f"{name} is {-age:.0f} s in the future (more than {max_ahead:g} s)")


def _canonical(body: bytes) -> Optional[bytes]:
    """JSON.stringify(JSON.parse(body)), or None when the body is not JSON (or nests deeper than 1000)."""
    try:
        return canonicalize_text(body)
    except PayloadError:
        return None


def verify_webhook_signature(
    headers: Mapping[str, str],
    body: bytes,
    secret: Secret,
    *,
    names: WebhookHeaders = WebhookHeaders(),
    allow_simple_signature: bool = False,
    merchant_id: Optional[str] = None,
    max_age: float = DEFAULT_MAX_AGE,
    max_ahead: float = DEFAULT_MAX_AHEAD,
    allow_non_timestamp_id: bool = False,
    clock: Callable[[], float] = time.time,
) -> VerifiedWebhook:
    """Raise WebhookSignatureError unless the headers prove a fresh delivery from the service.

    With ``allow_simple_signature`` a delivery carrying only ``X-Kushki-SimpleSignature`` passes, and
    the result's ``body`` is ``None``: the body is then not authenticated and must not be trusted
    (:class:`~pasarela.transfers.TransferWebhookReceiver` queries the transfer's status instead).
    ``clock`` is the receiver's time in Unix seconds.
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    webhook_id = lowered.get(names.webhook_id.lower())
    if not webhook_id:
        raise WebhookSignatureError(f"missing {names.webhook_id} header")
    if merchant_id is not None and lowered.get(names.merchant_id.lower()) != merchant_id:
        raise WebhookSignatureError(f"{names.merchant_id} does not name this merchant")
    signature = lowered.get(names.signature.lower())
    if signature is not None:
        signed = _signed_text(signature, body, secret, webhook_id)
        if signed is None:
            raise WebhookSignatureError(f"{names.signature} does not match the body")
        verified = VerifiedWebhook(webhook_id, signed)
    else:
        simple = lowered.get(names.simple_signature.lower())
        if simple is None or not allow_simple_signature:
            raise WebhookSignatureError(f"missing {names.signature} header")
        if not _matches(simple, id_signature(secret, webhook_id)):
            raise WebhookSignatureError(f"{names.simple_signature} does not match")
        verified = VerifiedWebhook(webhook_id, None)
    # Dated after the signature: an unsigned id's age says nothing, and a forger learns nothing from it.
    _check_fresh(names.webhook_id, webhook_id, clock(), max_age, max_ahead, allow_non_timestamp_id)
    return verified


def _signed_text(signature: str, body: bytes, secret: Secret, webhook_id: str) -> Optional[bytes]:
    """The text the signature is over: the raw body, else its JSON.stringify form; None when neither."""
    if _matches(signature, body_signature(secret, body, webhook_id)):
        return body
    canonical = _canonical(body)
    if canonical is not None and canonical != body and _matches(signature, body_signature(secret, canonical,
                                                                                           webhook_id)):
        return canonical
    return None
