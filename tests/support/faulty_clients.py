"""Terminal clients that follow spec 5.1 step by step, and faulty ones that each make exactly one mistake.

:class:`SpecClient` writes each step as its own method, from the pure-Python primitives (hashlib, base64,
json, and pasarela.reference's canonical_json, sign and encrypt); each faulty client overrides the one
step it gets wrong. They exist to prove that :func:`pasarela.diagnose` names each mistake.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Optional

from pasarela.terminal import reference

BUSINESS_CODE = "bc-7f3a1c2e9d"
SERIAL = "SN-0042"
NOON = 1763812800  # 2025-11-22 12:00:00 UTC


@dataclass(frozen=True)
class Captured:
    """A request as a server receives it (and as ``pasarela diagnose`` reads it)."""

    method: str
    headers: dict[str, str]
    body: Optional[bytes] = None
    params: Optional[dict[str, str]] = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.method, "headers": self.headers}
        if self.body is not None:
            out["body"] = self.body.decode("utf-8")
        if self.params is not None:
            out["params"] = self.params
        return out


class SpecClient:
    """Spec 5.1, one method per step; correct."""

    def __init__(self, business_code: str = BUSINESS_CODE, terminal_serial: str = SERIAL) -> None:
        self.business_code = business_code
        self.terminal_serial = terminal_serial
        self.secrets: set[str] = {business_code}

    # step 1
    def timestamp(self, now: int) -> str:
        return str(now)

    # step 2
    def formatted_date(self, timestamp: int) -> str:
        return datetime.datetime.fromtimestamp(timestamp, tz=datetime.timezone.utc).strftime("%Y:%m:%d:%H:%M")

    # step 3
    def password(self, timestamp: int) -> str:
        key = self.business_code + self.terminal_serial + self.formatted_date(timestamp)
        return hashlib.md5(key.ljust(32, "0").encode("utf-8")).hexdigest()  # noqa: S324 - the protocol's choice

    # step 4
    def encoded_key(self, password: str, timestamp_text: str) -> str:
        return base64.b64encode((password + timestamp_text).encode("ascii")).decode("ascii")

    def request_json(self, payload: Optional[dict[str, Any]]) -> bytes:
        """requestData serialized once (the literal {} when empty)."""
        return reference.canonical_json(payload)

    # step 5
    def signed(self, payload: Optional[dict[str, Any]], request_json: bytes, encoded_key: str) -> bytes:
        if request_json == b"{}":
            return b'{"key":"' + encoded_key.encode("ascii") + b'"}'
        return request_json[:-1] + b',"key":"' + encoded_key.encode("ascii") + b'"}'

    def signature(self, signed: bytes) -> str:
        return hashlib.sha512(base64.b64encode(signed)).hexdigest()

    def authorization(self, signature: str) -> str:
        return "Basic " + signature

    # step 6
    def aes_key(self, timestamp_text: str, password: str) -> bytes:
        return (timestamp_text + "___" + password)[:32].encode("ascii")

    def encrypted_plaintext(self, request_json: bytes, signed: bytes) -> bytes:
        return request_json

    # step 7
    def request(self, payload: Optional[dict[str, Any]], *, method: str = "POST", now: int = NOON,
                iv: bytes = bytes(range(16))) -> Captured:
        timestamp_text = self.timestamp(now)
        password = self.password(now)
        encoded_key = self.encoded_key(password, timestamp_text)
        aes_key = self.aes_key(timestamp_text, password)
        self.secrets |= {password, encoded_key, aes_key.decode("ascii")}
        request_json = self.request_json(payload)
        signed = self.signed(payload, request_json, encoded_key)
        data = reference.encrypt(aes_key, iv, self.encrypted_plaintext(request_json, signed))
        headers = {"Authorization": self.authorization(self.signature(signed)), "timestamp": timestamp_text,
                   "Content-Type": "application/json"}
        if method == "GET":
            return Captured(method, headers, params={"data": data})
        return Captured(method, headers, body=json.dumps({"data": data}).encode("ascii"))


class MillisecondsClient(SpecClient):
    def timestamp(self, now: int) -> str:
        return str(now * 1000 + 123)


class SkewedClockClient(SpecClient):
    """A machine whose clock is off: the whole request is computed at the wrong time."""

    def __init__(self, skew: int) -> None:
        super().__init__()
        self.skew = skew

    def request(self, payload: Optional[dict[str, Any]], *, method: str = "POST", now: int = NOON,
                iv: bytes = bytes(range(16))) -> Captured:
        return super().request(payload, method=method, now=now + self.skew, iv=iv)


class LocalTimeClient(SpecClient):
    def __init__(self, offset_minutes: int) -> None:
        super().__init__()
        self.offset_minutes = offset_minutes

    def formatted_date(self, timestamp: int) -> str:
        local = datetime.timezone(datetime.timedelta(minutes=self.offset_minutes))
        return datetime.datetime.fromtimestamp(timestamp, tz=local).strftime("%Y:%m:%d:%H:%M")


class KeyInPayloadClient(SpecClient):
    def encrypted_plaintext(self, request_json: bytes, signed: bytes) -> bytes:
        return signed


class EmptyStringClient(SpecClient):
    """An abort call with nothing to send: signs (and encrypts) an empty string instead of {}."""

    def request_json(self, payload: Optional[dict[str, Any]]) -> bytes:
        return b"" if not payload else super().request_json(payload)

    def signed(self, payload: Optional[dict[str, Any]], request_json: bytes, encoded_key: str) -> bytes:
        return b"" if not request_json else super().signed(payload, request_json, encoded_key)


class EmptyStringSignedOnlyClient(EmptyStringClient):
    """Signs an empty string but encrypts {}."""

    def encrypted_plaintext(self, request_json: bytes, signed: bytes) -> bytes:
        return request_json or b"{}"


class ReserializingClient(SpecClient):
    """Signs ``json.dumps(dataWithKey, **options)`` of the payload while encrypting the canonical bytes."""

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.options = options

    def signed(self, payload: Optional[dict[str, Any]], request_json: bytes, encoded_key: str) -> bytes:
        return json.dumps({**(payload or {}), "key": encoded_key}, **self.options).encode("utf-8")


class NoBasicPrefixClient(SpecClient):
    def authorization(self, signature: str) -> str:
        return signature


class UppercaseHexClient(SpecClient):
    def signature(self, signed: bytes) -> str:
        return super().signature(signed).upper()


class SingleUnderscoreClient(SpecClient):
    def aes_key(self, timestamp_text: str, password: str) -> bytes:
        return (timestamp_text + "_" + password)[:32].encode("ascii")


class WrongCredentialsClient(SpecClient):
    def __init__(self) -> None:
        super().__init__(business_code="bc-0000000000")


class MinuteMismatchClient(SpecClient):
    """Reads the clock again for formattedDate, a second later: at …:59 that is the next minute."""

    def formatted_date(self, timestamp: int) -> str:
        return super().formatted_date(timestamp + 1)


class UnsignedKeyClient(SpecClient):
    def signed(self, payload: Optional[dict[str, Any]], request_json: bytes, encoded_key: str) -> bytes:
        return request_json


class NoBase64Client(SpecClient):
    def signature(self, signed: bytes) -> str:
        return hashlib.sha512(signed).hexdigest()


# A request of each kind a terminal side tells apart, with the outcome it is refused (or opened) under: made by the
# clients above (each making one mistake), or by hand where no client would send it.
FAULTY: list[tuple[str, Callable[[], Captured]]] = [
    ("ok", lambda: SpecClient().request({"amount": 1})),
    ("not_verified", lambda: WrongCredentialsClient().request({"amount": 1})),
    ("clock_skew", lambda: SkewedClockClient(3600).request({"amount": 1})),
    ("malformed_timestamp", lambda: MillisecondsClient().request({"amount": 1})),
    ("missing_basic_prefix", lambda: NoBasicPrefixClient().request({"amount": 1})),
    ("malformed_signature", lambda: UppercaseHexClient().request({"amount": 1})),
    ("not_verified", lambda: ReserializingClient(indent=2).request({"amount": 1})),
    ("not_verified", lambda: KeyInPayloadClient().request({"amount": 1})),
]


def _without(captured: Captured, name: str) -> Captured:
    return Captured(captured.method, {k: v for k, v in captured.headers.items() if k != name}, captured.body)


HANDMADE: list[tuple[str, Callable[[], Captured]]] = [
    ("missing_header", lambda: _without(SpecClient().request({"amount": 1}), "Authorization")),
    ("malformed_data", lambda: Captured("POST", SpecClient().request({}).headers, b'{"data":"not hex"}')),
    ("malformed_data", lambda: Captured("POST", SpecClient().request({}).headers, b"not json")),
    ("unsupported_method", lambda: Captured("DELETE", SpecClient().request({}).headers, b"{}")),
]
