"""The terminal envelope in plain Python (hashlib, base64, cryptography): the reference.

Same API and byte-identical output as :class:`pasarela.Terminal`; the C core is tested against it,
and it is the whole-call fallback on CPUs without AES instructions. It follows spec section 5.1
step by step, with the payload serialized once by :func:`~pasarela.terminal.stringify.stringify`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any, NamedTuple, Optional, Union

from ..errors import (
    BAD_PADDING,
    KEY_REASON,
    NOT_OBJECT_REASON,
    AuthError,
    CredentialsError,
    PayloadError,
    signature_refusal,
)
from .inbound import DEFAULT_TOLERANCE, Body, Params, parse_payload, read_data, read_request
from .request import (
    Sealed,
    check_iv,
    check_method,
    check_no_proto,
    check_object_text,
    check_timestamp,
    encode_credential,
    reserved_member,
)
from .stringify import canonicalize_text, loads, stringify

__all__ = ["Terminal", "canonical_json", "decrypt", "derive", "encrypt", "formatted_date", "sign", "verify"]

Payload = Union[dict[str, Any], bytes, bytearray, memoryview, str, None]


def _cryptography() -> Any:
    try:
        from cryptography.hazmat.primitives import padding
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    except ImportError:  # pragma: no cover - cryptography is in the dev and reference extras
        raise ImportError(
            "pasarela's pure-Python path needs the cryptography package: pip install 'pasarela[reference]'"
        ) from None
    return padding, Cipher, algorithms, modes


class Derived(NamedTuple):
    password: str
    encoded_key: str
    aes_key: bytes


def formatted_date(timestamp: int) -> str:
    """YYYY:MM:DD:HH:mm of the timestamp in UTC (spec 5.1 step 2)."""
    import datetime

    when = datetime.datetime.fromtimestamp(check_timestamp(timestamp), tz=datetime.timezone.utc)
    return when.strftime("%Y:%m:%d:%H:%M")


def _credentials_text(business_code: bytes, terminal_serial: bytes) -> str:
    try:
        return (business_code + terminal_serial).decode("utf-8")
    except UnicodeDecodeError:
        pass
    # Raised here, not in the except: the UnicodeDecodeError holds the business code's bytes.
    raise CredentialsError("business_code and terminal_serial must be UTF-8 text")


def derive(business_code: bytes, terminal_serial: bytes, timestamp: int) -> Derived:
    """password, encodedKeyTimestamp and aesKey (spec 5.1 steps 3, 4, 6)."""
    key = _credentials_text(business_code, terminal_serial) + formatted_date(timestamp)
    # "padded to at least 32 characters", as JavaScript's padEnd counts them: UTF-16 code units
    padding = "0" * max(0, 32 - len(key.encode("utf-16-le")) // 2)
    password = hashlib.md5((key + padding).encode("utf-8")).hexdigest()  # noqa: S324 - the protocol's choice
    encoded_key = base64.b64encode(f"{password}{timestamp}".encode("ascii")).decode("ascii")
    aes_key = f"{timestamp}___{password}"[:32].encode("ascii")
    return Derived(password, encoded_key, aes_key)


def canonical_json(payload: Payload) -> bytes:
    """The exact bytes JSON.stringify writes for payload, in plain Python."""
    if payload is None:
        return b"{}"
    if isinstance(payload, dict):
        if "key" in payload or "__proto__" in payload:
            raise reserved_member(payload)
        return stringify(payload)
    if isinstance(payload, (bytes, bytearray, memoryview, str)):
        text = payload.encode("utf-8", "surrogatepass") if isinstance(payload, str) else bytes(payload)
        plaintext = canonicalize_text(text)
        check_object_text(plaintext)
        top_level = loads(plaintext)  # at any caller depth (canonical: within MAX_DEPTH)
        if "key" in top_level:
            raise PayloadError("$.key", KEY_REASON)
        check_no_proto(plaintext)
        return plaintext
    raise PayloadError("$", f"{NOT_OBJECT_REASON}; got {type(payload).__name__}")


def sign(plaintext: bytes, encoded_key: str) -> str:
    """SHA-512 hex of Base64 of the plaintext with the key field added (spec 5.1 step 5)."""
    if plaintext == b"{}":
        signed = b'{"key":"' + encoded_key.encode("ascii") + b'"}'
    else:
        signed = plaintext[:-1] + b',"key":"' + encoded_key.encode("ascii") + b'"}'
    return hashlib.sha512(base64.b64encode(signed)).hexdigest()


def encrypt(aes_key: bytes, iv: bytes, plaintext: bytes) -> str:
    """iv hex, a colon, AES-256-CBC-PKCS7 ciphertext hex (spec 5.1 step 6)."""
    padding, cipher, algorithms, modes = _cryptography()
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plaintext) + padder.finalize()
    encryptor = cipher(algorithms.AES(aes_key), modes.CBC(iv)).encryptor()
    ciphertext = encryptor.update(padded) + encryptor.finalize()
    return f"{iv.hex()}:{ciphertext.hex()}"


def _decrypt_blocks(aes_key: bytes, iv: bytes, ciphertext: bytes) -> bytes:
    """AES-256-CBC decryption of whole blocks, the padding left in place."""
    _, cipher, algorithms, modes = _cryptography()
    decryptor = cipher(algorithms.AES(aes_key), modes.CBC(iv)).decryptor()
    return bytes(decryptor.update(ciphertext) + decryptor.finalize())


def _padding_length(padded: bytes) -> tuple[int, bool]:
    """(PKCS#7 padding length, valid) of decrypted blocks; an invalid padding counts as none. Each of the
    last 16 bytes is looked at and nothing exits early (the C core does this without branches)."""
    pad = padded[-1]
    bad = int(pad == 0) | int(pad > 16)
    for i, byte in enumerate(padded[:-17:-1]):
        bad |= ((i - pad) >> 31 & 1) & int(byte != pad)  # inside the padding and not equal to it
    return pad * (1 - bad), not bad


def decrypt(aes_key: bytes, iv: bytes, ciphertext: bytes) -> bytes:
    """AES-256-CBC-PKCS7 decryption; a padding failure is an AuthError (a wrong key, nearly always)."""
    padded = _decrypt_blocks(aes_key, iv, ciphertext)
    pad, valid = _padding_length(padded)
    if not valid:
        raise AuthError(BAD_PADDING)
    return padded[:len(padded) - pad]


def _verify_padded(padded: bytes, encoded_key: str, signature: str) -> tuple[bytes, dict[str, Any]]:
    """verify() of decrypted blocks whose padding may be invalid, doing the same work either way (the text
    canonicalized, signed and compared) before refusing a bad padding: the time of a refusal must not
    tell a padding oracle attacker whether the padding was valid."""
    pad, valid = _padding_length(padded)
    refusal: Optional[AuthError] = None
    try:
        # (a copy whatever pad is: padded[:len(padded)] would be padded itself, a copy the less for a bad padding)
        opened = _verify(bytes(memoryview(padded)[:len(padded) - pad]), encoded_key, signature, padded)
    except AuthError as exc:
        refusal = exc
    padding_refusal = signature_refusal(signature)  # made either way, raised the same way as the other refusal
    if not valid:
        raise padding_refusal
    if refusal is not None:
        raise refusal
    return opened


def verify(plaintext: bytes, encoded_key: str, signature: str, *,
           fallback_signed: Optional[bytes] = None) -> dict[str, Any]:
    """What the JavaScript server does with decrypted plaintext: JSON.parse, add key, JSON.stringify,
    Base64, SHA-512, compare. Returns the payload as JSON.parse sees it.

    The signature is computed and compared even for a plaintext that is refused before (of
    fallback_signed, default the plaintext, when it is not JSON), and the refusal chosen at the end."""
    return _verify(plaintext, encoded_key, signature, fallback_signed)[1]


def _verify(plaintext: bytes, encoded_key: str, signature: str, fallback_signed: Optional[bytes]
            ) -> tuple[bytes, dict[str, Any]]:
    """verify()'s work: (the verified canonical text, its payload)."""
    refused = False  # every refusal here is the same one (errors.NOT_VERIFIED), chosen after the same work
    signed = plaintext if fallback_signed is None else fallback_signed
    payload: dict[str, Any] = {}
    try:
        signed = canonicalize_text(plaintext)
    except PayloadError:
        refused = True
    else:
        if not signed.startswith(b"{"):
            refused = True
        else:
            try:
                payload = parse_payload(signed)
            except AuthError:
                refused = True
            else:
                refused = "key" in payload or "__proto__" in payload
    matches = hmac.compare_digest(sign(signed, encoded_key), signature)
    refusal = signature_refusal(signature)
    if refused or not matches:
        raise refusal
    return signed, payload


class Terminal:
    """Pure-Python twin of :class:`pasarela.Terminal`."""

    __slots__ = ("_business_code", "_serial_bytes", "terminal_serial")

    def __init__(self, business_code: Union[str, bytes], terminal_serial: Union[str, bytes]) -> None:
        self._business_code = encode_credential("business_code", business_code)
        self._serial_bytes = encode_credential("terminal_serial", terminal_serial)
        self.terminal_serial = self._serial_bytes.decode("utf-8")

    def __repr__(self) -> str:
        return f"reference.Terminal(terminal_serial={self.terminal_serial!r}, business_code=<redacted>)"

    def __reduce__(self) -> Any:
        raise TypeError("Terminal holds a secret and cannot be pickled")

    def seal(self, payload: Payload = None, *, method: str = "POST", timestamp: Optional[int] = None,
             iv: Optional[bytes] = None) -> Sealed:
        method = check_method(method)
        ts = check_timestamp(timestamp)
        iv = check_iv(iv)
        plaintext = canonical_json(payload)
        derived = self._derive(ts)
        body = b'{"data":"' + encrypt(derived.aes_key, iv, plaintext).encode("ascii") + b'"}'
        return Sealed(self, method, ts, plaintext + sign(plaintext, derived.encoded_key).encode("ascii") + body,
                      len(plaintext))

    def open(self, method: str, headers: Mapping[str, str], body: Body = None, params: Params = None, *,
             now: Optional[float] = None, tolerance: float = DEFAULT_TOLERANCE) -> dict[str, Any]:
        """Verify and decrypt a received terminal request, as the JavaScript server does; returns the payload.

        Every failure raises AuthError with the same AUTH-001 body; ``reason`` says why (operator only).
        """
        return self._open(method, headers, body, params, now, tolerance)[1]

    def open_bytes(self, method: str, headers: Mapping[str, str], body: Body = None, params: Params = None, *,
                   now: Optional[float] = None, tolerance: float = DEFAULT_TOLERANCE) -> bytes:
        """open(), returning the verified plaintext as JSON.stringify writes it (without the "key" member the
        signature adds) instead of the payload: the same checks and refusals."""
        return self._open(method, headers, body, params, now, tolerance)[0]

    def _open(self, method: str, headers: Mapping[str, str], body: Body, params: Params, now: Optional[float],
              tolerance: float) -> tuple[bytes, dict[str, Any]]:
        inbound = read_request(method, headers, body, params, now=now, tolerance=tolerance)
        derived = self._derive(inbound.timestamp)
        return _verify_padded(_decrypt_blocks(derived.aes_key, *read_data(inbound.data)), derived.encoded_key,
                              inbound.signature)

    def _derive(self, timestamp: int) -> Derived:
        return derive(self._business_code, self._serial_bytes, timestamp)

    def _decrypt(self, timestamp: int, iv: bytes, ciphertext: bytes) -> bytes:
        return decrypt(self._derive(timestamp).aes_key, iv, ciphertext)
