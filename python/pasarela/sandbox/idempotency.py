"""``Idempotency-Key`` on the sandbox's POST calls, as payment services honour it (Stripe's idempotent requests;
the IETF draft draft-ietf-httpapi-idempotency-key-header for the status codes).

A POST carrying ``Idempotency-Key`` (1 to :data:`MAX_KEY_LENGTH` printable ASCII characters) whose body passed the
route's schema is run once: its answer (status and body) is kept, and the same key with the same request (method,
path and body, the body compared as JSON: spacing and member order do not count) gets that answer again, with
``Idempotent-Replayed: true``, and creates nothing. The same key with another request is refused with 422
``IDEMPOTENCY_KEY_REUSED``; while the first request is still running, the same key gets 409
``IDEMPOTENCY_KEY_IN_USE`` (retry it once the first has answered). What is kept:

- answers of requests that ran, refusals of the handler's rules and the spec's scenarios included (the 500
  ``QR-CODE-0001``, the 504 ``TIMEOUT``), as Stripe keeps its 500s; not a request refused before it ran (key,
  media type, size, JSON, schema: fix it and send it again with the same key), nor one that failed unexpectedly
  (a 500 ``SANDBOX_ERROR``: its write transaction was rolled back, nothing was created, so running it again is
  safe);
- per merchant credential: a key sent with the public key and the same key sent with the private key are two
  keys (a browser holding the public key never reads an answer given to the back end);
- for :data:`KEY_LIFETIME` seconds of the sandbox clock (24 hours, as Stripe and most services keep them;
  ``POST /sandbox/v1/clock`` moves past it), and at most :data:`MAX_KEPT` keys (the oldest go first), so a client
  sending a fresh key with every request cannot grow the database without bound. An expired key is a new key.

The keys live in the sandbox's database: a restart keeps them, but forgets requests that were still running
(they cannot finish any more).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Optional, Union

from .errors import SandboxError
from .jsontext import plain
from .store import Store

__all__ = [
    "IDEMPOTENCY_HEADER",
    "KEY_LIFETIME",
    "MAX_KEPT",
    "MAX_KEY_LENGTH",
    "REPLAYED_HEADER",
    "Claim",
    "Claimed",
    "IdempotencyKeys",
    "check_idempotency_key",
    "fingerprint",
]

IDEMPOTENCY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY_LENGTH = 255
"""Stripe's limit."""
KEY_LIFETIME = 86_400.0
"""Seconds of the sandbox clock a key is kept (24 hours)."""
MAX_KEPT = 10_000


def check_idempotency_key(value: str) -> None:
    """A 400 naming the header unless ``value`` is 1 to 255 printable ASCII characters (the key is stored and
    compared, never quoted back)."""
    if not (1 <= len(value) <= MAX_KEY_LENGTH and value.isascii() and value.isprintable()):
        raise SandboxError(400, "INVALID_REQUEST", f"{IDEMPOTENCY_HEADER}: must be 1 to {MAX_KEY_LENGTH} printable "
                                                   "ASCII characters (a UUID, say)", field=IDEMPOTENCY_HEADER)


def fingerprint(method: str, path: str, body: Any) -> str:
    """What makes two requests the same request: method, path and the body as JSON (members sorted, numbers as
    their values: ``10.50`` and ``10.5`` are one amount)."""
    text = json.dumps(plain(body), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(f"{method} {path}\n{text}".encode()).hexdigest()


@dataclass(frozen=True)
class Kept:
    """An answer kept for a key."""

    status: int
    media_type: Optional[str]
    body: bytes


class Claim(Enum):
    NEW = "new"
    """The key was free: run the request, then :meth:`IdempotencyKeys.keep` its answer (or ``forget`` it)."""


@dataclass(frozen=True)
class Claimed:
    """The key was taken before: the kept answer to give again."""

    answer: Kept


class IdempotencyKeys:
    """The keys of one sandbox, in its store (table ``idempotency``)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def claim(self, scope: str, key: str, request: str, now: float) -> Union[Claim, Claimed]:
        """Take ``key`` of ``scope`` (the merchant credential) for ``request`` (its :func:`fingerprint`); the kept
        answer when it was taken for the same request; 409 while that request runs; 422 for another request."""
        with self._store.write() as tx:
            tx.forget_idempotency_keys(now - KEY_LIFETIME, MAX_KEPT)
            found = tx.idempotency_key(scope, key)
            if found is None:
                tx.claim_idempotency_key(scope, key, request, now)
                return Claim.NEW
        taken_for, status, media_type, body = found
        if taken_for != request:
            raise SandboxError(422, "IDEMPOTENCY_KEY_REUSED",
                               f"this {IDEMPOTENCY_HEADER} was first used with another request (method, path or "
                               "body): send a new key with a new request")
        if status is None:
            raise SandboxError.conflict("IDEMPOTENCY_KEY_IN_USE",
                                        f"a request with this {IDEMPOTENCY_HEADER} is still running: retry once it "
                                        "has answered")
        return Claimed(Kept(status, media_type, body))

    def keep(self, scope: str, key: str, status: int, headers: Mapping[str, str], body: bytes) -> None:
        """Keep the answer of the request that claimed ``key``."""
        with self._store.write() as tx:
            tx.keep_idempotent_answer(scope, key, status, headers.get("content-type"), body)

    def forget(self, scope: str, key: str) -> None:
        """Free ``key``: its request failed before answering (nothing it did was committed)."""
        with self._store.write() as tx:
            tx.forget_idempotency_key(scope, key)
