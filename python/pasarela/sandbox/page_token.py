"""Per-page tokens of the forms of the payer page and the dashboard: a forged page on another site cannot pay,
decline or approve a transfer.

Each rendering of a page (``GET /sandbox/pay/{token}``, a dashboard page) carries a fresh token in a hidden
field: a random nonce, the time it was issued and an HMAC-SHA256 over (subject, nonce, time) under a key drawn
at start-up, the subject being the transfer token (payer page) or the dashboard. The form's POST must bring it
back, for the same subject, within :data:`PAGE_TOKEN_LIFETIME` seconds, and it is good once: a token read by
somebody (a page that leaked, a proxy's log) and replayed is refused, since the post it came with used it.
Another site's page cannot read it (the same-origin policy), so it cannot forge the POST. Compared in constant
time. A restart draws a new key: a page opened before it must be reloaded.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import struct
import threading
from typing import Optional

__all__ = ["PAGE_TOKEN_LIFETIME", "PageTokens"]

PAGE_TOKEN_LIFETIME = 3600.0
_NONCE_BYTES = 16
_TIME = struct.Struct(">Q")
_TAG_BYTES = 32
_LENGTH = _NONCE_BYTES + _TIME.size + _TAG_BYTES
_PRUNE_PAST = 1024
"""Used nonces kept before those past their lifetime (refused by the time anyway) are forgotten."""


class PageTokens:
    def __init__(self, key: Optional[bytes] = None) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)
        self._used: dict[bytes, int] = {}
        """The nonces of the tokens redeemed, each with the time it was issued."""
        self._prune_at = _PRUNE_PAST
        self._lock = threading.Lock()

    def _tag(self, transfer_token: str, nonce: bytes, issued: int) -> bytes:
        message = transfer_token.encode("utf-8", "surrogatepass") + b"\x00" + nonce + _TIME.pack(issued)
        return hmac.new(self._key, message, hashlib.sha256).digest()

    def issue(self, transfer_token: str, now: float) -> str:
        nonce, issued = secrets.token_bytes(_NONCE_BYTES), int(now)
        raw = nonce + _TIME.pack(issued) + self._tag(transfer_token, nonce, issued)
        return base64.urlsafe_b64encode(raw).decode("ascii")

    def redeem(self, transfer_token: str, presented: Optional[str], now: float) -> bool:
        """Whether ``presented`` is a token issued for this subject, in its lifetime and not redeemed before; it
        is redeemed now (a second post with it is refused)."""
        genuine = self._genuine(transfer_token, presented, now)
        if genuine is None:
            return False
        nonce, issued = genuine
        with self._lock:
            if nonce in self._used:
                return False
            if len(self._used) >= self._prune_at:  # (amortized: the next prune waits until twice what is left)
                self._used = {used: at for used, at in self._used.items() if now - at <= PAGE_TOKEN_LIFETIME}
                self._prune_at = max(_PRUNE_PAST, 2 * len(self._used))
            self._used[nonce] = issued
        return True

    def _genuine(self, transfer_token: str, presented: Optional[str], now: float) -> Optional[tuple[bytes, int]]:
        """The nonce and issue time of ``presented`` when it is a token issued for this subject in its lifetime."""
        if not presented or len(presented) > 4 * _LENGTH:
            return None
        try:
            raw = base64.urlsafe_b64decode(presented.encode("ascii"))
        except (ValueError, UnicodeEncodeError):
            return None
        if len(raw) != _LENGTH:
            return None
        nonce, issued = raw[:_NONCE_BYTES], _TIME.unpack(raw[_NONCE_BYTES:_NONCE_BYTES + _TIME.size])[0]
        genuine = hmac.compare_digest(raw[_NONCE_BYTES + _TIME.size:], self._tag(transfer_token, nonce, issued))
        return (nonce, issued) if genuine and 0 <= now - issued <= PAGE_TOKEN_LIFETIME else None
