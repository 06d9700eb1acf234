"""Per-page tokens of the payer page's form: a forged page on another site cannot pay or decline a transfer.

Each rendering of ``GET /sandbox/pay/{token}`` carries a fresh token in a hidden field: a random nonce,
the time it was issued and an HMAC-SHA256 over (transfer token, nonce, time) under a key drawn at start-up.
The form's POST must bring it back, for the same transfer, within :data:`PAGE_TOKEN_LIFETIME` seconds;
another site's page cannot read it (the same-origin policy), so it cannot forge the POST. Compared in
constant time. A restart draws a new key: a page opened before it must be reloaded.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import struct
from typing import Optional

__all__ = ["PAGE_TOKEN_LIFETIME", "PageTokens"]

PAGE_TOKEN_LIFETIME = 3600.0
_NONCE_BYTES = 16
_TIME = struct.Struct(">Q")
_TAG_BYTES = 32
_LENGTH = _NONCE_BYTES + _TIME.size + _TAG_BYTES


class PageTokens:
    def __init__(self, key: Optional[bytes] = None) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)

    def _tag(self, transfer_token: str, nonce: bytes, issued: int) -> bytes:
        message = transfer_token.encode("utf-8", "surrogatepass") + b"\x00" + nonce + _TIME.pack(issued)
        return hmac.new(self._key, message, hashlib.sha256).digest()

    def issue(self, transfer_token: str, now: float) -> str:
        nonce, issued = secrets.token_bytes(_NONCE_BYTES), int(now)
        raw = nonce + _TIME.pack(issued) + self._tag(transfer_token, nonce, issued)
        return base64.urlsafe_b64encode(raw).decode("ascii")

    def is_valid(self, transfer_token: str, presented: Optional[str], now: float) -> bool:
        if not presented or len(presented) > 4 * _LENGTH:
            return False
        try:
            raw = base64.urlsafe_b64decode(presented.encode("ascii"))
        except (ValueError, UnicodeEncodeError):
            return False
        if len(raw) != _LENGTH:
            return False
        nonce, issued = raw[:_NONCE_BYTES], _TIME.unpack(raw[_NONCE_BYTES:_NONCE_BYTES + _TIME.size])[0]
        genuine = hmac.compare_digest(raw[_NONCE_BYTES + _TIME.size:], self._tag(transfer_token, nonce, issued))
        return genuine and 0 <= now - issued <= PAGE_TOKEN_LIFETIME
