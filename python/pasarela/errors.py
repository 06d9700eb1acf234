"""One exception hierarchy for pasarela.

Every exception raised on purpose by pasarela derives from :class:`PasarelaError`.
Errors caused by bad input also derive from :class:`ValueError`, so code that already
catches ``ValueError`` keeps working. No message ever contains a secret.
"""

from __future__ import annotations

__all__ = [
    "PasarelaError",
    "PayloadError",
    "TimestampError",
    "CredentialsError",
    "NativeError",
]


class PasarelaError(Exception):
    """Root of every error pasarela raises on purpose."""


class PayloadError(PasarelaError, ValueError):
    """The payload cannot be represented exactly as JSON.stringify would write it.

    ``path`` is the JSON path of the offending value (``$`` is the payload itself,
    ``$.items[2].price`` a nested member), ``reason`` says what is wrong with it.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class TimestampError(PasarelaError, ValueError):
    """The timestamp is not whole UTC seconds written with 10 digits."""


class CredentialsError(PasarelaError, ValueError):
    """A business code or terminal serial is missing or malformed (the value itself is never shown)."""


class NativeError(PasarelaError, RuntimeError):
    """The C core reported a failure that valid input cannot cause (a bug: please report it)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"pasarela C core: {message} (status {status})")
        self.status = status
