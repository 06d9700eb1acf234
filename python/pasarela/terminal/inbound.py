"""Reading a received terminal request: headers, timestamp window, and the ``data`` envelope.

Everything here fails with :class:`~pasarela.errors.AuthError`, whose body is the same AUTH-001
for every cause; the precise cause goes to ``reason``, for the operator only.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any, NamedTuple, Optional, Union
from urllib.parse import parse_qs

import orjson

from ..errors import BAD_DATA, NOT_VERIFIED, SIGNATURE_FORMAT, AuthError, PayloadError
from .stringify import loads

__all__ = [
    "BODY_METHODS",
    "DEFAULT_TOLERANCE",
    "Body",
    "Inbound",
    "Params",
    "has_long_digit_run",
    "header",
    "parse_payload",
    "read_data",
    "read_request",
    "read_request_bytes",
]

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
"""Methods whose sealed payload travels as the JSON body {"data": ...}; GET carries it as a query parameter."""

DEFAULT_TOLERANCE = 300
"""Seconds a timestamp may differ from the server's clock (spec section 8: plus or minus 5 minutes)."""

Body = Union[bytes, bytearray, memoryview, str, Mapping[str, object], None]
Params = Union[Mapping[str, str], Mapping[str, list[str]], str, None]

_DATA = re.compile(r"([0-9a-fA-F]*):([0-9a-fA-F]*)")


class Inbound(NamedTuple):
    """What a request carries, read but not yet verified."""

    method: str
    timestamp: int
    signature: str  # the hex after "Basic "
    data: str  # <iv_hex>:<ciphertext_hex>, not yet checked (see read_data)


def _json_int(text: str) -> Union[int, float]:
    value = int(text)
    # JSON.parse made a double of it: an int when that double is exactly this integer, else the double
    # (canonical text holds no integer literal of 10**21 or more: float() cannot overflow)
    return value if -(2**53) <= value <= 2**53 or float(value) == value else float(text)


_DIGITS_AS_ZEROS = bytes.maketrans(b"123456789", b"000000000")
_SEVENTEEN_ZEROS = b"0" * 17


def has_long_digit_run(text: bytes) -> bool:
    """Whether canonical text may hold an integer literal that is not exactly a double (they have at least
    17 digits: every integer below 10**16 that JSON.stringify writes is the double itself). A translation
    and a substring search: a regex search cost about 25 us per KiB, more than the rest of open."""
    return _SEVENTEEN_ZEROS in text.translate(_DIGITS_AS_ZEROS)


def parse_payload(canonical: bytes) -> dict[str, Any]:
    """The payload of verified canonical JSON object text, as JSON.parse sees it.

    An integer literal comes back as int when the double JSON.parse makes of it is exactly that integer
    (all of them within ±2**53, and 10**16 and the like beyond), else as that double (float): 1152921504606847000
    is what JSON.stringify writes for 2**60, and seal writes the float 2**60 back as the same text. Without a
    run of 17 digits (has_long_digit_run) this is what orjson.loads returns, so the fast path may use it then.
    """
    try:  # at any caller depth (stringify.loads: json.loads within its recursion, else the non-recursive parser)
        payload: dict[str, Any] = loads(canonical, parse_int=_json_int)
    except PayloadError:  # deeper than MAX_DEPTH: no canonical text is, so no signature can match
        raise AuthError(NOT_VERIFIED) from None
    return payload


def raw_as_text(value: object) -> object:
    """A header name or value given as bytes or bytearray (an ASGI server's raw headers) as text, read as Latin-1 as
    Starlette reads them; any other value as it is."""
    return value.decode("latin-1") if isinstance(value, (bytes, bytearray)) else value


def header(headers: Mapping[str, str], name: str) -> Optional[str]:
    """Case-insensitive header lookup (HTTP header names are case-insensitive): name as written, else in
    lower case (how ASGI servers and HTTP/2 spell every name), else in any other case. Names and values given
    as bytes (an ASGI server's raw headers) are read as Latin-1, as Starlette reads them; a value of any other
    type than str or bytes is refused (AuthError naming the header), as no HTTP request can carry one."""
    value = headers.get(name)
    if value is None:
        lowered = name.lower()
        value = headers.get(lowered)
        if value is None:
            for key, candidate in headers.items():
                key_text = raw_as_text(key)
                if isinstance(key_text, str) and key_text.lower() == lowered:
                    value = candidate
                    break
            else:
                return None
    text = raw_as_text(value)
    if text is None or isinstance(text, str):
        return text
    raise AuthError(f"the {name} header is {type(value).__name__}, not text (str or bytes)")


def _data_field(method: str, body: Body, params: Params) -> str:
    if method in BODY_METHODS:
        if body is None:
            raise AuthError(f"{method} request without a body")
        if type(body) is not bytes and isinstance(body, Mapping):  # bytes first: the common case, and cheap
            parsed: object = body
        else:
            try:
                parsed = orjson.loads(body)
            except orjson.JSONDecodeError:
                raise AuthError("body is not JSON") from None
        value = parsed.get("data") if type(parsed) is dict or isinstance(parsed, Mapping) else None
    else:
        if params is None:
            raise AuthError("GET request without a data query parameter")
        query = parse_qs(params, keep_blank_values=True) if isinstance(params, str) else params
        value = query.get("data")
        if isinstance(value, list):
            value = value[0] if len(value) == 1 else None
    if not isinstance(value, str):
        raise AuthError("no data string in the request")
    if not value.isascii():
        raise AuthError(BAD_DATA)
    return value


def read_data(data: str) -> tuple[bytes, bytes]:
    """(iv, ciphertext) from ``<iv_hex>:<ciphertext_hex>``."""
    match = _DATA.fullmatch(data)
    if match is None or len(match.group(1)) % 2 or len(match.group(2)) % 2:
        raise AuthError(BAD_DATA)
    iv, ciphertext = bytes.fromhex(match.group(1)), bytes.fromhex(match.group(2))
    if len(iv) != 16:
        raise AuthError(f"IV is {len(iv)} bytes, not 16")
    if not ciphertext or len(ciphertext) % 16:
        raise AuthError(f"ciphertext is {len(ciphertext)} bytes, not a non-zero multiple of 16")
    return iv, ciphertext


def read_timestamp(headers: Mapping[str, str], now: Optional[float], tolerance: float) -> int:
    text = header(headers, "timestamp")
    if text is None:
        raise AuthError("no timestamp header")
    if not (len(text) == 10 and text.isascii() and text.isdigit()):
        hint = " (13 digits: milliseconds instead of seconds)" if len(text) == 13 and text.isdigit() else ""
        raise AuthError(f"timestamp header {text[:20]!r} is not 10 digits{hint}")
    timestamp = int(text)
    skew = timestamp - (time.time() if now is None else now)
    if not abs(skew) <= tolerance:  # a NaN clock or tolerance refuses too
        raise AuthError(f"timestamp is {skew:+.0f} s from the server clock (tolerance {tolerance:g} s)")
    return timestamp


def _read_headers(method: str, headers: Mapping[str, str], now: Optional[float],
                  tolerance: float) -> tuple[str, int, str]:
    """(method, timestamp, signature) of a request, refusing (AuthError) what is malformed."""
    if method != "POST":  # the common case needs no normalizing
        method = method.upper() if isinstance(method, str) else ""
        if method not in BODY_METHODS and method != "GET":
            raise AuthError(f"method {method!r} is not GET, POST, PUT or PATCH")
    timestamp = read_timestamp(headers, now, tolerance)
    authorization = header(headers, "Authorization")
    if authorization is None:
        raise AuthError("no Authorization header")
    if not authorization.startswith("Basic "):
        raise AuthError("Authorization does not start with 'Basic '")
    signature = authorization[6:]
    if len(signature) != 128 or not signature.isascii():  # the hex check: signature_refusal, on a mismatch
        raise AuthError(SIGNATURE_FORMAT)
    return method, timestamp, signature


def read_request(method: str, headers: Mapping[str, str], body: Body = None, params: Params = None, *,
                 now: Optional[float] = None, tolerance: float = DEFAULT_TOLERANCE) -> Inbound:
    """Reads everything a terminal request must carry, refusing (AuthError) what is malformed."""
    method, timestamp, signature = _read_headers(method, headers, now, tolerance)
    return Inbound(method, timestamp, signature, _data_field(method, body, params))


def as_bytes(body: Body) -> Body:
    """A ``str`` (``request.text``), ``bytearray`` or ``memoryview`` body as the ``bytes`` it holds, so that it takes
    the C core's path as ``bytes`` does (one copy: about 1% of an open); any other body as it is.

    A ``str`` is its UTF-8 (what the client sent and the server reads), unless it holds a lone surrogate, which no
    UTF-8 has: then it stays a ``str``, for read_request's refusal. A memoryview that is not a C-contiguous view of
    bytes (``format`` other than ``B``, ``b`` or ``c``) stays as it is too, read by orjson as before."""
    if isinstance(body, str):
        try:
            return body.encode()
        except UnicodeEncodeError:
            return body
    if type(body) is bytearray:
        return bytes(body)
    if type(body) is memoryview and body.c_contiguous and body.format in _BYTE_FORMATS:
        return body.tobytes()
    return body


_BYTE_FORMATS = frozenset(("B", "b", "c"))
_BODY_OPEN = b'{"data":"'
_BODY_CLOSE = b'"}'


def read_request_bytes(method: str, headers: Mapping[str, str], body: Body, params: Params, now: Optional[float],
                       tolerance: float) -> tuple[int, bytes, bytes, bool]:
    """read_request for the C core: (timestamp, signature, data, raw), signature and data as ASCII bytes.

    raw: the body has the shape seal writes, ``{"data":"<d>"}``, and data is d, not parsed as JSON. The C
    core accepts only hex digits and one colon in d, whose JSON value is then d itself; anything else in
    it (a quote, a backslash, a control or non-ASCII character) it refuses as data of the wrong form
    (BAD_DATA or BAD_LENGTH): on those refusals the caller reads the body with read_request, for its value
    (escaped digits) or its precise refusal.
    """
    method, timestamp, signature = _read_headers(method, headers, now, tolerance)
    if type(body) is bytes and method in BODY_METHODS and body.startswith(_BODY_OPEN) and body.endswith(_BODY_CLOSE):
        return timestamp, signature.encode("ascii"), body[len(_BODY_OPEN):-len(_BODY_CLOSE)], True
    return timestamp, signature.encode("ascii"), _data_field(method, body, params).encode("ascii"), False
