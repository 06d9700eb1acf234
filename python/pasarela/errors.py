"""One exception hierarchy for pasarela.

Every exception raised on purpose by pasarela derives from :class:`PasarelaError`.
Errors caused by bad input also derive from :class:`ValueError`, so code that already
catches ``ValueError`` keeps working. No message ever contains a secret.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Optional, TypeVar

__all__ = [
    "CredentialsError",
    "NativeError",
    "PasarelaError",
    "PayloadError",
    "TimestampError",
]


_Error = TypeVar("_Error", bound=BaseException)


def _rebuilt(kind: type[_Error], args: tuple[Any, ...], attributes: dict[str, Any]) -> _Error:
    error = kind.__new__(kind, *args)  # (BaseException.__new__ keeps args; __init__ is not called again)
    error.__dict__.update(attributes)
    return error


def reduce_error(error: BaseException) -> tuple[Callable[..., BaseException], tuple[Any, ...]]:
    """What pickle makes of ``error`` (an error's ``__reduce__``): the same type, message (``args``) and attributes.
    Python's own rebuilds an error by calling its class with ``args``, the message, which is not what an ``__init__``
    that takes a field and a reason expects: the error raised in a ``multiprocessing`` or ``concurrent.futures``
    worker, or in a job another process runs, could not be read back (TypeError) or came back wrong."""
    return _rebuilt, (type(error), error.args, dict(vars(error)))


class PasarelaError(Exception):
    """Root of every error pasarela raises on purpose. Pickles as it is (the same type, message and attributes),
    so it crosses to another process: a worker's error reaches its pool."""

    def __reduce__(self) -> tuple[Callable[..., BaseException], tuple[Any, ...]]:
        return reduce_error(self)


class PayloadError(PasarelaError, ValueError):
    """The payload cannot be represented exactly as JSON.stringify would write it.

    ``path`` is the JSON path of the offending value (``$`` is the payload itself,
    ``$.items[2].price`` a nested member), ``reason`` says what is wrong with it. For a payload given as text that
    is not JSON, ``offset`` is the byte at which it stops being JSON (else ``None``).
    """

    def __init__(self, path: str, reason: str, offset: Optional[int] = None) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.offset = offset


class TimestampError(PasarelaError, ValueError):
    """The timestamp is not whole UTC seconds written with 10 digits."""


class CredentialsError(PasarelaError, ValueError):
    """A business code or terminal serial is missing or malformed (the value itself is never shown)."""


def missing_extra(exc: ModuleNotFoundError, feature: str, extra: str) -> ModuleNotFoundError:
    """The error to raise when an optional dependency is not installed: it names the pip command that installs it
    (``raise missing_extra(exc, "pasarela.httpx", "http") from exc``)."""
    return ModuleNotFoundError(f'{feature} needs {exc.name or "a package that is"} not installed: '
                               f'pip install "pasarela[{extra}]"', name=exc.name)


class NativeError(PasarelaError, RuntimeError):
    """The C core reported a failure that valid input cannot cause (a bug: please report it)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"pasarela C core: {message} (status {status})")
        self.status = status


# --- Card and transfer APIs (areas B and C) -------------------------------------------------------


class ValidationError(PasarelaError, ValueError):
    """A request field breaks a rule of the spec; nothing was sent.

    ``field`` is the field's path as it travels on the wire (``card.expiryMonth``,
    ``amount.subtotalIva``), ``reason`` says what is wrong. Secret values (card number, CVV,
    cryptogram, keys) are never quoted.
    """

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class ConfigurationError(PasarelaError, ValueError):
    """A client, receiver or builder is set up wrongly (a missing merchant key, a bad base URL)."""


class TransportError(PasarelaError):
    """The service could not be reached (connection refused, timeout) after any allowed retries.

    Whether a non-idempotent call reached the service is unknown: query the status before retrying, or, where the
    service honours ``Idempotency-Key`` (the sandbox does), repeat the call with ``idempotency_key=`` set to this
    error's ``idempotency_key`` (the key the POST carried): a call that did arrive then answers its first answer
    again and creates nothing.
    """

    def __init__(self, message: str, *, idempotency_key: str | None = None) -> None:
        super().__init__(message)
        self.idempotency_key = idempotency_key


class ResponseShapeError(PasarelaError):
    """A response of the service does not have the shape the spec documents.

    ``field`` is the path of the offending member (``$`` for the body itself).
    """

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"unexpected response: {field}: {reason}")
        self.field = field
        self.reason = reason


class ApiError(PasarelaError):
    """The service answered with an error status.

    ``status`` is the HTTP status, ``code`` and ``message`` come from the body when it has them
    (show ``message`` to the payer as is: certification rule 2), ``body`` is the raw body text.
    """

    def __init__(self, status: int, code: str | None, message: str | None, body: str) -> None:
        detail = " ".join(part for part in (code, message) if part) or "no error code in the body"
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body


class FinalStatusError(ApiError):
    """T023: the transfer already has a final status, so it cannot be cancelled."""


class QrCodeError(ApiError):
    """A QR-CODE-* error of the Colombia QR flow (QR-CODE-0001 processor error, QR-CODE-0059 amount out of range)."""


class WebhookSignatureError(PasarelaError):
    """A webhook's signature headers are missing or do not match the configured secret."""


class StoreUnavailableError(PasarelaError):
    """A shared store (Redis) could not be reached or refused the command: the call fails closed.

    Raised by the Redis replay store, pending-transfer guard and webhook ledger instead of letting a
    request, a transfer or a webhook through unchecked. ``store`` names which one; ``status`` is the
    HTTP status a server answers with (503: the request may be retried once the store is back).
    """

    status = 503

    def __init__(self, store: str, reason: str) -> None:
        super().__init__(f"{store} unavailable (request refused, fail closed): {reason}")
        self.store = store
        self.reason = reason


class PendingTransferError(PasarelaError):
    """Certification rule 6: the order already has a transfer that is neither approved nor rejected."""

    def __init__(self, order_id: str) -> None:
        super().__init__(f"order {order_id!r} has a transfer still initialized: wait for approval or rejection")
        self.order_id = order_id


__all__ += [
    "ApiError",
    "ConfigurationError",
    "FinalStatusError",
    "PendingTransferError",
    "QrCodeError",
    "ResponseShapeError",
    "StoreUnavailableError",
    "TransportError",
    "ValidationError",
    "WebhookSignatureError",
]


AUTH_001_BODY: dict[str, str] = {"type": "AUTH", "code": "AUTH-001", "message": "Invalid or expired credentials"}


class AuthError(PasarelaError):
    """AUTH-001: the service's one answer to every invalid terminal request.

    ``body`` is exactly what the service answers (and what a verifier must answer: the same for
    every cause, so an attacker learns nothing); ``status`` is the HTTP status to answer with.
    ``reason`` is the actual cause, for the operator's logs only: never send it to the client.
    """

    status = 401

    def __init__(self, reason: str = "the service answered AUTH-001") -> None:
        super().__init__("AUTH-001: Invalid or expired credentials")
        self.reason = reason

    @property
    def body(self) -> dict[str, str]:
        return dict(AUTH_001_BODY)


# Why a request was refused, for the operator (AuthError.reason), and why a payload cannot be sealed
# (PayloadError.reason): shared by the C path (whose status codes _binding maps to them) and the reference.
NOT_VERIFIED = ("the request does not verify under these credentials (its signature, its padding or what it "
                "decrypts to: pasarela diagnose, given the credentials, tells which)")
"""The one reason of every refusal decided after decryption and before the signature verified: a bad padding, a
valid padding over bytes that are not UTF-8, not JSON, not a JSON object, or with a top-level "key" or "__proto__"
member, and a signature that does not match. A forger chooses between those classes with the bytes it sends, and
whichever of them it met would tell it something of the plaintext (the padding-oracle attack reads a whole request,
a byte at a time, from that one bit), so AuthError.reason, the logs, the metrics and the spans say the same for
all of them. Refusals decided from the request's visible parts alone (a header, the timestamp, the data's hex, the
signature's format) keep their own reasons: they tell a forger only what it sent. The detailed cause is
pasarela.terminal.diagnose's, which holds the credentials and decrypts the request itself."""
BAD_PADDING = "bad padding after decryption: the key is wrong (credentials, timestamp or aesKey)"
BAD_DATA = "data is not <iv hex>:<ciphertext hex>"
BAD_LENGTH = "ciphertext is not a non-zero multiple of 16 bytes"
SIGNATURE_FORMAT = "Authorization is not 'Basic ' and 128 lowercase hex digits"
KEY_REASON = 'a top-level "key" member is reserved: the signature adds its own "key" field'
NOT_OBJECT_REASON = "the payload must be a JSON object (a dict), or None for an empty payload"
PROTO_REASON = (
    'a top-level "__proto__" member is refused: JSON.parse makes it an own property of the object, and whether '
    'the text the server signs keeps it depends on how the server adds "key" (obj.key = ... and spread keep it, '
    "Object.assign({}, obj) drops it)"
)


_SIGNATURE = re.compile(r"[0-9a-f]{128}")


def signature_refusal(signature: str) -> AuthError:
    """The refusal of a 128-character signature whose request did not verify, whatever failed after decryption
    (NOT_VERIFIED): a malformed one is named as such, which its bytes alone decide (read_request checks only the
    length and ASCII, so the hex check costs nothing on accepted requests). A new string each time, for every
    refusal alike: a constant's hash, cached, would make what reads the reason later faster for some."""
    return AuthError("".join((NOT_VERIFIED if _SIGNATURE.fullmatch(signature) else SIGNATURE_FORMAT, "")))
