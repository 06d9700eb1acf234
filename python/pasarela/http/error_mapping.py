"""From an error answer of the service to the exception that names it (spec section 7)."""

from __future__ import annotations

import json
from typing import Optional

from ..errors import ApiError, FinalStatusError, QrCodeError

__all__ = ["api_error"]

_FINAL_STATUS_CODE = "T023"
_QR_CODE_PREFIX = "QR-CODE-"


def api_error(status: int, content: bytes) -> ApiError:
    """The exception for a non-2xx answer: ``FinalStatusError`` for T023, ``QrCodeError`` for QR-CODE-*,
    else ``ApiError``. ``code`` and ``message`` are read from a JSON body when it has them (``error``
    stands in for ``message``, as in the client-side token failures)."""
    body = content.decode("utf-8", errors="replace")
    code: Optional[str] = None
    message: Optional[str] = None
    try:
        parsed = json.loads(body) if body else None
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict):
        code = _string(parsed.get("code"))
        message = _string(parsed.get("message")) or _string(parsed.get("error"))
    kind = ApiError
    if code == _FINAL_STATUS_CODE:
        kind = FinalStatusError
    elif code is not None and code.startswith(_QR_CODE_PREFIX):
        kind = QrCodeError
    return kind(status, code, message, body)


def _string(value: object) -> Optional[str]:
    return value if isinstance(value, str) and value else None
