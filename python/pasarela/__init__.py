"""pasarela: exact, fast envelopes for the payment service's terminal API.

    >>> from pasarela import Terminal
    >>> sealed = Terminal(business_code="...", terminal_serial="...").seal({"amount": 100})
    >>> sealed.headers, sealed.body

See README.md for the whole tour.
"""

from ._version import __version__
from .errors import AuthError, CredentialsError, NativeError, PasarelaError, PayloadError, TimestampError
from .terminal.diagnose import Diagnosis, diagnose
from .terminal.envelope import Terminal, canonical_json, seal_batch
from .terminal.request import Sealed

__all__ = [
    "AuthError",
    "CredentialsError",
    "Diagnosis",
    "NativeError",
    "PasarelaError",
    "PayloadError",
    "Sealed",
    "Terminal",
    "TimestampError",
    "__version__",
    "canonical_json",
    "diagnose",
    "seal_batch",
]
