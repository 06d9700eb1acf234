"""pasarela: exact, fast envelopes for the payment service's terminal API.

    >>> from pasarela import Terminal
    >>> sealed = Terminal(business_code="...", terminal_serial="...").seal({"amount": 100})
    >>> sealed.headers, sealed.body

The documentation site (README.md and docs/) has the guides and the reference.
"""

from ._version import __version__
from .errors import (
    ApiError,
    AuthError,
    ConfigurationError,
    CredentialsError,
    FinalStatusError,
    NativeError,
    PasarelaError,
    PayloadError,
    PendingTransferError,
    QrCodeError,
    ResponseShapeError,
    StoreUnavailableError,
    TimestampError,
    TransportError,
    ValidationError,
    WebhookSignatureError,
)
from .terminal.diagnose import Diagnosis, diagnose
from .terminal.envelope import Terminal, canonical_json, seal_batch
from .terminal.request import Sealed

__all__ = [
    "ApiError",
    "AuthError",
    "ConfigurationError",
    "CredentialsError",
    "Diagnosis",
    "FinalStatusError",
    "NativeError",
    "PasarelaError",
    "PayloadError",
    "PendingTransferError",
    "QrCodeError",
    "ResponseShapeError",
    "Sealed",
    "StoreUnavailableError",
    "Terminal",
    "TimestampError",
    "TransportError",
    "ValidationError",
    "WebhookSignatureError",
    "__version__",
    "canonical_json",
    "diagnose",
    "seal_batch",
]
