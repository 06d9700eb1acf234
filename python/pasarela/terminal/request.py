"""What both implementations of the envelope share: credentials, argument checks, the sealed request."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any, Optional, Protocol, Union

from ..errors import (
    KEY_REASON,
    NOT_OBJECT_REASON,
    PROTO_REASON,
    AuthError,
    CredentialsError,
    PayloadError,
    TimestampError,
)
from .inbound import BODY_METHODS, read_data
from .ivs import fresh_iv
from .stringify import loads

__all__ = [
    "Derived",
    "Sealed",
    "check_iv",
    "check_method",
    "check_no_proto",
    "check_object_text",
    "check_timestamp",
    "encode_credential",
    "reserved_member",
]

_METHODS = BODY_METHODS | {"GET"}

_PROTO_MEMBER = b'"__proto__":'


class Derived(Protocol):
    """The per-request values derived from the credentials and the timestamp (secrets: never log them)."""

    @property
    def password(self) -> str: ...
    @property
    def encoded_key(self) -> str: ...
    @property
    def aes_key(self) -> bytes: ...


class _Deriver(Protocol):
    def _derive(self, timestamp: int) -> Derived: ...
    def _decrypt(self, timestamp: int, iv: bytes, ciphertext: bytes) -> bytes: ...


def _utf8_or_none(value: str) -> Optional[bytes]:
    """UTF-8 of value, None when it holds a lone surrogate.

    Raising from inside the ``except`` would chain the UnicodeEncodeError, whose ``object`` is the whole
    value, as ``__context__`` (``from None`` only hides it from tracebacks): for a secret, test first.
    """
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        return None


def encode_credential(name: str, value: object) -> bytes:
    """UTF-8 bytes of a credential; the error names the credential, never its value (nor chains it)."""
    if isinstance(value, bytes):
        encoded = value
    elif isinstance(value, str):
        converted = _utf8_or_none(value)
        if converted is None:
            raise CredentialsError(f"{name} is not valid text (it contains a lone surrogate)")
        encoded = converted
    else:
        raise CredentialsError(f"{name} must be a str, got {type(value).__name__}")
    if not encoded:
        raise CredentialsError(f"{name} is empty")
    return encoded


def check_timestamp(timestamp: Optional[int]) -> int:
    """Whole UTC seconds with 10 digits; None means now."""
    if timestamp is None:
        return int(time.time())
    if type(timestamp) is int and 10**9 <= timestamp < 10**10:
        return timestamp
    if isinstance(timestamp, bool) or not isinstance(timestamp, int):
        raise TimestampError(
            f"timestamp must be an int of whole UTC seconds (e.g. int(time.time())), got {type(timestamp).__name__}"
        )
    if 10**12 <= timestamp < 10**13:
        raise TimestampError(
            f"timestamp {timestamp} has 13 digits: it is in milliseconds, the service expects seconds "
            f"({timestamp // 1000}); this mistake is the first cause of AUTH-001"
        )
    if not 10**9 <= timestamp < 10**10:
        raise TimestampError(f"timestamp {timestamp} is not 10 digits of whole UTC seconds")
    return timestamp


def check_iv(iv: Optional[bytes]) -> bytes:
    """16 bytes; None means fresh bytes from the operating system's CSPRNG."""
    if iv is None:
        return fresh_iv()
    if not isinstance(iv, (bytes, bytearray, memoryview)):
        raise TypeError(f"iv must be 16 bytes, got {type(iv).__name__}")
    iv = bytes(iv)
    if len(iv) != 16:
        raise ValueError(f"iv must be 16 bytes, got {len(iv)}")
    return iv


def check_method(method: str) -> str:
    upper = method.upper() if isinstance(method, str) else ""
    if upper not in _METHODS:
        raise ValueError(f"method must be one of GET, POST, PUT, PATCH, got {method!r}")
    return upper


def check_object_text(plaintext: bytes) -> None:
    """Refuses canonical JSON text that is not an object."""
    if not (plaintext.startswith(b"{") and plaintext.endswith(b"}")):
        raise PayloadError("$", NOT_OBJECT_REASON)


def reserved_member(payload: Mapping[str, Any]) -> PayloadError:
    """The refusal of a payload with a top-level "key" or "__proto__" member (the caller checked it has one)."""
    if "key" in payload:
        return PayloadError("$.key", KEY_REASON)
    return PayloadError("$.__proto__", PROTO_REASON)


def check_no_proto(canonical: bytes) -> None:
    """Refuses canonical JSON object text with a top-level "__proto__" member (parsed only when the text
    holds one at some depth: nested, it is data)."""
    if _PROTO_MEMBER in canonical and "__proto__" in loads(canonical):  # (at any caller depth)
        raise PayloadError("$.__proto__", PROTO_REASON)


_SIGNATURE_HEX = 128
_DATA_OFFSET = len(b'{"data":"')
_IV_HEX = 32


def _request_len(plaintext_len: int) -> int:
    """The length of a request whose plaintext has plaintext_len bytes: the plaintext, the signature and the
    body {"data":"<iv_hex>:<ciphertext_hex>"} (PKCS#7 always pads: at least one byte, at most a block)."""
    return plaintext_len + _SIGNATURE_HEX + _DATA_OFFSET + _IV_HEX + 1 + 2 * 16 * (plaintext_len // 16 + 1) + 2


class Sealed(tuple[_Deriver, str, int, bytes, int, int]):
    """One sealed terminal request: what to send, and the exact bytes that were encrypted and signed.

    Kept as the bytes the C core writes (plaintext, signature, POST body, back to back); the attributes are
    read from them when asked for. A tuple (terminal, method, timestamp, buffer, plaintext_len, start)
    underneath, read-only: the request is buffer[start:], as long as its plaintext length says. Seals and
    batches make their Sealed objects without running Python code (in C: _fastcall's seal_json and rows); a
    batch's share one buffer per chunk of requests, which stays in memory while any of them does.
    Sealed objects are equal when their terminal, method, timestamp and request bytes are.
    """

    __slots__ = ()

    def __new__(cls, terminal: _Deriver, method: str, timestamp: int, request: bytes, plaintext_len: int) -> Sealed:
        """request: the plaintext, the 128-hex signature and the POST body {"data":"<iv_hex>:<ct_hex>"},
        back to back; plaintext_len: the plaintext's length."""
        return tuple.__new__(cls, (terminal, method, timestamp, request, plaintext_len, 0))

    def __getnewargs__(self) -> tuple[_Deriver, str, int, bytes, int]:  # copy.copy; pickling stops at the terminal
        return (self[0], self[1], self[2], self._request, self[4])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sealed):
            return NotImplemented
        return (self[0], self[1], self[2], self[4], self._request) == (other[0], other[1], other[2], other[4],
                                                                        other._request)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash((self[1], self[2], self._request))

    @property
    def method(self) -> str:
        """GET, POST, PUT or PATCH."""
        return self[1]

    @property
    def timestamp(self) -> int:
        """Whole UTC seconds, 10 digits: the one the keys were derived for."""
        return self[2]

    @property
    def _terminal(self) -> _Deriver:
        return self[0]

    @property
    def _request(self) -> bytes:
        """plaintext, signature and body, back to back."""
        buffer, start = self[3], self[5]
        end = start + _request_len(self[4])
        return buffer if start == 0 and end == len(buffer) else buffer[start:end]

    @property
    def _plaintext_len(self) -> int:
        return self[4]

    @property
    def plaintext(self) -> bytes:
        """The canonical JSON that was encrypted and (with the key) signed: exactly what JSON.stringify writes."""
        start = self[5]
        return self[3][start:start + self[4]]

    @property
    def signature(self) -> str:
        """128 lowercase hex characters: SHA-512 of Base64 of the signed text."""
        p = self[5] + self[4]
        return self[3][p:p + _SIGNATURE_HEX].decode("ascii")

    @property
    def headers(self) -> dict[str, str]:
        """Authorization (Basic <signature>), timestamp and Content-Type: a new dict on each access."""
        p = self[5] + self[4]
        return {"Authorization": "Basic " + self[3][p:p + _SIGNATURE_HEX].decode("ascii"),
                "timestamp": str(self.timestamp), "Content-Type": "application/json"}

    @property
    def body(self) -> Optional[bytes]:
        """The POST body ``{"data":"<iv_hex>:<ct_hex>"}``; None for GET (its data goes to params)."""
        if self.method == "GET":
            return None
        start = self[5] + self[4] + _SIGNATURE_HEX
        return self[3][start:self[5] + _request_len(self[4])]

    @property
    def params(self) -> Optional[dict[str, str]]:
        """``{"data": "<iv_hex>:<ct_hex>"}`` for GET, else None."""
        return {"data": self.data} if self.method == "GET" else None

    @property
    def data(self) -> str:
        """``<iv_hex>:<ciphertext_hex>``, as sent in the body or the ``data`` query parameter."""
        start = self[5] + self[4] + _SIGNATURE_HEX + _DATA_OFFSET
        return self[3][start:self[5] + _request_len(self[4]) - 2].decode("ascii")

    @property
    def iv(self) -> bytes:
        """The 16-byte IV of the encryption."""
        start = self[5] + self[4] + _SIGNATURE_HEX + _DATA_OFFSET
        return bytes.fromhex(self[3][start:start + _IV_HEX].decode("ascii"))

    @property
    def signed(self) -> bytes:
        """The exact bytes whose Base64 was hashed: the plaintext with the ``key`` field spliced in.

        It contains a value derived from the business code: keep it out of logs.
        """
        encoded_key = self._terminal._derive(self.timestamp).encoded_key.encode("ascii")
        plaintext = self.plaintext
        if plaintext == b"{}":
            return b'{"key":"' + encoded_key + b'"}'
        return plaintext[:-1] + b',"key":"' + encoded_key + b'"}'

    def open_response(self, body: Union[bytes, str, Mapping[str, Any]]) -> Any:
        """The service's answer to this request: ``{"data": "<iv>:<ct>"}`` is decrypted with this
        request's key and parsed; plain JSON passes through. An AUTH-001 answer raises AuthError."""
        parsed = body if isinstance(body, Mapping) else json.loads(body)
        if isinstance(parsed, Mapping) and parsed.get("code") == "AUTH-001":
            raise AuthError("the service answered AUTH-001")
        if isinstance(parsed, Mapping) and set(parsed) == {"data"} and isinstance(parsed["data"], str):
            iv, ciphertext = read_data(parsed["data"])
            plaintext = self._terminal._decrypt(self.timestamp, iv, ciphertext)
            try:
                return json.loads(plaintext.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                raise AuthError("the decrypted response is not JSON (or nests too deep)") from None
        return parsed

    def as_dict(self) -> dict[str, object]:
        """The request as the CLI prints it: headers, and body (as text) or params."""
        out: dict[str, object] = {"headers": self.headers}
        body = self.body
        if body is not None:
            out["body"] = body.decode("ascii")
        else:
            out["params"] = self.params or {}
        return out

    def __repr__(self) -> str:
        return (f"Sealed(method={self.method!r}, timestamp={self.timestamp}, plaintext_bytes={self._plaintext_len}, "
                f"signature={self.signature[:16]!r}...)")
