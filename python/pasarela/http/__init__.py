"""The HTTP machinery the card and transfer clients share.

One exchange (:mod:`.exchange`) builds the request with the right merchant key header and an
``Idempotency-Key`` on POSTs, retries idempotent calls with jittered backoff (:mod:`.retry`),
maps error answers to exceptions (:mod:`.error_mapping`), reads responses by shape
(:mod:`.response_reader`) and records every attempt, redacted (:mod:`.audit`, :mod:`.redaction`).
:mod:`.transport` drives it over httpx, blocking or asyncio. Nothing here imports httpx at import time.
"""

from __future__ import annotations

from .audit import AuditHook, AuditRecord, JsonlAuditLog
from .config import MerchantKey, ServiceConfig
from .redaction import REDACTED, mask_card_number, redact_headers, redact_json
from .retry import NO_RETRY, RetryPolicy

__all__ = [
    "NO_RETRY",
    "REDACTED",
    "AuditHook",
    "AuditRecord",
    "JsonlAuditLog",
    "MerchantKey",
    "RetryPolicy",
    "ServiceConfig",
    "mask_card_number",
    "redact_headers",
    "redact_json",
]
