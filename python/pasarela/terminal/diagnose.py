"""Why a terminal request is refused with AUTH-001: the hypotheses of the spec's table (section 5.1), in order.

The service answers every invalid request with the same AUTH-001, whatever the cause. Given the request
as captured and the terminal's credentials, :func:`diagnose` recomputes what the server computes, tries
the known client mistakes one by one and reports the first that explains the refusal, with its fix:

1. timestamp in milliseconds (13 digits);
2. clock outside the tolerance (and by how much);
3. formattedDate in local time (the UTC offset that makes the request decrypt);
4. ``key`` field inside the encrypted payload;
5. empty string signed instead of ``{}`` (abort calls);
6. body re-serialized after signing (naming the serialization when it is a recognizable one);

then: missing ``Basic`` prefix, uppercase hex, one underscore instead of three in aesKey, formattedDate of
another minute than the timestamp, wrong business code or terminal serial (nothing decrypts), and
malformed headers or data. A request that verifies is diagnosed ``valid``.

No text of a :class:`Diagnosis` ever contains the business code or a value derived from it (password,
encodedKeyTimestamp, aesKey), nor the decrypted payload.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional, Union
from urllib.parse import parse_qs

from .. import _binding
from ..errors import AuthError, CredentialsError, PayloadError
from . import reference
from .inbound import BODY_METHODS, DEFAULT_TOLERANCE, Body, Params, as_bytes, header, raw_as_text, read_data
from .request import encode_credential
from .stringify import canonicalize_text

__all__ = ["CAUSES", "Diagnosis", "diagnose"]

CAUSES = (
    "valid",
    "timestamp_milliseconds",
    "clock_skew",
    "local_time",
    "key_in_payload",
    "proto_in_payload",
    "empty_string_signed",
    "reserialized",
    "missing_basic_prefix",
    "uppercase_signature",
    "single_underscore_key",
    "minute_mismatch",
    "key_not_signed",
    "signed_without_base64",
    "wrong_credentials",
    "unsupported_method",
    "missing_header",
    "malformed_timestamp",
    "malformed_signature",
    "malformed_data",
    "malformed_plaintext",
)
"""Every ``Diagnosis.cause``, in the order the hypotheses are tried (stable identifiers)."""

_SERIALIZE_ONCE = ("Serialize the payload once, as JSON.stringify writes it, and sign and encrypt those same bytes "
                   "(pasarela.Terminal.seal does; pasarela.canonical_json gives the bytes).")


@dataclass(frozen=True)
class Diagnosis:
    """The first hypothesis that explains why a terminal request is (or is not) refused.

    ``cause`` is a stable identifier (see :data:`CAUSES`), ``explanation`` what was found, ``fix`` what
    the client must change. ``offset`` (e.g. ``"UTC-05:00"``) is set for ``local_time``,
    ``skew_seconds`` (timestamp minus server time) for ``clock_skew``, ``serialization`` for
    ``reserialized`` when the serialization was recognized. No field ever holds a secret.
    """

    cause: str
    explanation: str
    fix: str
    offset: Optional[str] = None
    skew_seconds: Optional[int] = None
    serialization: Optional[str] = None

    @property
    def valid(self) -> bool:
        return self.cause == "valid"

    def __str__(self) -> str:
        return f"{self.cause}: {self.explanation}\nfix: {self.fix}"


class _Keys(NamedTuple):
    encoded_key: str
    aes_key: bytes


_HEX_128 = re.compile(r"[0-9a-fA-F]{128}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_BASE64_SHA512 = re.compile(r"[A-Za-z0-9+/]{86}==")
_OFFSETS_MINUTES = [m for m in range(-12 * 60, 14 * 60 + 1, 15) if m != 0]
_EMPTY_SIGNATURES = {
    hashlib.sha512(base64.b64encode(signed)).hexdigest(): signed.decode("ascii") for signed in (b"", b'""')
}


def diagnose(method: str, headers: Mapping[str, str], body: Body = None, params: Params = None, *,
             business_code: Union[str, bytes], terminal_serial: Union[str, bytes], now: Optional[float] = None,
             tolerance: float = DEFAULT_TOLERANCE) -> Diagnosis:
    """Finds why the service refuses (or would accept) this request, trying the spec's hypotheses in order.

    method, headers, body or params: the request as captured (body as bytes, text or parsed JSON; params
    as a mapping or a query string). business_code, terminal_serial: the credentials the server holds.
    now: the server's clock when the request arrived (default: now).
    """
    secret = encode_credential("business_code", business_code) + encode_credential("terminal_serial", terminal_serial)
    prefix = _text_or_none(secret)
    if prefix is None:  # raised outside the except: the UnicodeDecodeError holds the secret bytes
        raise CredentialsError("business_code and terminal_serial must be UTF-8 text")
    try:
        return _Diagnoser(prefix, tolerance).run(method, headers, body, params, time.time() if now is None else now)
    except RecursionError:  # json.loads/dumps of a request nested deeper than Python's stack allows
        raise PayloadError("$", "the captured request nests too deep to diagnose") from None


def _text_or_none(secret: bytes) -> Optional[str]:
    try:
        return secret.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _formatted(seconds: int) -> str:
    return datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc).strftime("%Y:%m:%d:%H:%M")


def _offset_label(minutes: int) -> str:
    sign = "+" if minutes >= 0 else "-"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _duration(seconds: float) -> str:
    whole = round(abs(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min {secs:02d} s"
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


def _decrypt(aes_key: bytes, iv: bytes, ciphertext: bytes) -> Optional[bytes]:
    """The plaintext when aes_key opens the ciphertext (valid padding and UTF-8), else None."""
    if _binding.HAS_HW_AES:
        status, plaintext = _binding.aes256_cbc_decrypt(aes_key, iv, ciphertext)
        if status != 0:
            return None
    else:
        try:
            plaintext = reference.decrypt(aes_key, iv, ciphertext)
        except AuthError:
            return None
    try:
        plaintext.decode("utf-8")
    except UnicodeDecodeError:  # a wrong key that happens to leave valid padding
        return None
    return plaintext


def _sha512_of_base64(signed: bytes) -> str:
    return hashlib.sha512(base64.b64encode(signed)).hexdigest()


def _floats(value: Any) -> Any:
    """value with every integral number as a float, as a Python client holding 100.0 has it."""
    if isinstance(value, dict):
        return {k: _floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_floats(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


_LAYOUTS: list[tuple[list[str], dict[str, Any], str]] = [  # json.dumps arguments, options, what they change
    ([], {}, "', ' and ': ' separators"),
    (['separators=(",", ":")'], {"separators": (",", ":")}, ""),
    (["indent=2"], {"indent": 2}, "indented with 2 spaces, as JSON.stringify(data, null, 2) writes"),
]
_ESCAPED = "non-ASCII characters escaped as \\uXXXX where JSON.stringify writes UTF-8"
_FLOATS = "integral numbers as floats (100.0 where JavaScript writes 100)"


class _Diagnoser:
    def __init__(self, prefix: str, tolerance: float) -> None:
        self._prefix = prefix
        self._tolerance = tolerance

    def _keys(self, timestamp: int, formatted: str, separator: str = "___") -> _Keys:
        key = self._prefix + formatted
        # padded as JavaScript's padEnd counts: UTF-16 code units (as reference.derive)
        padding = "0" * max(0, 32 - len(key.encode("utf-16-le", "surrogatepass")) // 2)
        password = hashlib.md5((key + padding).encode("utf-8")).hexdigest()  # noqa: S324 - the protocol's choice
        encoded_key = base64.b64encode(f"{password}{timestamp}".encode("ascii")).decode("ascii")
        return _Keys(encoded_key, f"{timestamp}{separator}{password}"[:32].encode("ascii"))

    # --- the request, field by field --------------------------------------------------------------

    def run(self, method: str, headers: Mapping[str, str], body: Body, params: Params, now: float) -> Diagnosis:
        method = method.upper() if isinstance(method, str) else ""
        # captured JSON may hold numbers; an ASGI server's raw headers are bytes (read as Latin-1, as by open)
        headers = {str(raw_as_text(name)): str(raw_as_text(value)) for name, value in headers.items()}
        if method not in BODY_METHODS and method != "GET":
            return Diagnosis("unsupported_method", f"method {method[:10]!r} is not GET, POST, PUT or PATCH",
                             "Send terminal calls with GET, POST, PUT or PATCH.")
        text = header(headers, "timestamp")
        if text is None:
            return _missing("timestamp", "the request's Unix time in whole UTC seconds, 10 digits")
        if len(text) == 13 and text.isascii() and text.isdigit():
            return Diagnosis(
                "timestamp_milliseconds",
                f"the timestamp header has 13 digits ({text}): it is in milliseconds; the service expects whole "
                "seconds, 10 digits",
                f"Send whole UTC seconds ({int(text) // 1000} here): int(time.time()) in Python, "
                "Math.floor(Date.now() / 1000) in JavaScript, and use that same value for formattedDate, "
                "encodedKeyTimestamp and aesKey.")
        if not (len(text) == 10 and text.isascii() and text.isdigit()):
            hint = " (fractional seconds)" if re.fullmatch(r"\d{10}\.\d*", text) else ""
            return Diagnosis("malformed_timestamp", f"the timestamp header {text[:24]!r} is not 10 digits{hint}",
                             "Send the Unix time in whole UTC seconds, digits only (10 digits).")
        timestamp = int(text)
        skew = timestamp - now
        if abs(skew) > self._tolerance:
            return self._clock_skew(method, headers, body, params, timestamp, skew)
        return self._signed(method, headers, body, params, timestamp)

    def _clock_skew(self, method: str, headers: Mapping[str, str], body: Body, params: Params, timestamp: int,
                    skew: float) -> Diagnosis:
        direction = "ahead of" if skew > 0 else "behind"
        explanation = (f"the timestamp is {_duration(skew)} {direction} the server clock; the tolerance is "
                       f"±{self._tolerance:g} s")
        rounded = round(abs(skew) / 900) * 900
        if rounded >= 3600 and abs(abs(skew) - rounded) <= 60:
            explanation += (f"; the difference is close to a whole time-zone offset ({_duration(rounded)}): the "
                            "client may compute its timestamp from local time instead of UTC")
        rest = self._signed(method, headers, body, params, timestamp)
        if rest.valid:
            explanation += ". Apart from the clock, the request is correct: it decrypts and its signature verifies"
        else:
            explanation += f". Apart from the clock, it has another fault ({rest.cause}): {rest.explanation}"
        return Diagnosis("clock_skew", explanation,
                         "Synchronize the client's clock (NTP) and take the timestamp when the request is sent; "
                         "a captured request can only be replayed within the tolerance.",
                         skew_seconds=round(skew))

    def _signed(self, method: str, headers: Mapping[str, str], body: Body, params: Params,
                timestamp: int) -> Diagnosis:
        authorization = header(headers, "Authorization")
        if authorization is None:
            return _missing("Authorization", "'Basic ' followed by the SHA-512 signature in hexadecimal")
        notes: list[Diagnosis] = []
        if authorization.startswith("Basic "):
            signature = authorization[6:]
        else:
            scheme, space, rest = authorization.partition(" ")
            signature = rest if space else authorization
            what = f"uses the scheme {scheme[:16]!r}" if space else "is the bare signature"
            notes.append(Diagnosis(
                "missing_basic_prefix", f"the Authorization header {what}: it must start with the word Basic and a "
                "space",
                "Send Authorization: Basic <signature>: the word Basic, one space, then the hexadecimal hash."))
        if not _HEX_128.fullmatch(signature):
            return _malformed_signature(signature)
        if signature != signature.lower():
            notes.append(Diagnosis(
                "uppercase_signature", "the signature is written with uppercase hexadecimal digits; the server "
                "compares it with the lowercase hexadecimal SHA-512 it computes",
                "Send the digest in lowercase hexadecimal (hashlib's hexdigest(), Node's digest('hex'))."))
            signature = signature.lower()
        data, extra_params = _data(method, body, params)
        if isinstance(data, Diagnosis):
            return data
        try:
            iv, ciphertext = read_data(data)
        except AuthError as exc:
            return Diagnosis("malformed_data", f"the data field is malformed: {exc.reason}",
                             "Send data as the 16-byte IV in hexadecimal, a colon, and the AES-256-CBC ciphertext "
                             "in hexadecimal.")
        found = self._decryption(timestamp, iv, ciphertext, signature)
        if found.valid and notes:
            found = notes.pop(0)
        if notes:
            also = "; ".join(note.explanation for note in notes)
            found = Diagnosis(found.cause, f"{found.explanation}. Also: {also}", f"{found.fix} Also: "
                              + " ".join(note.fix for note in notes), found.offset, found.skew_seconds,
                              found.serialization)
        if found.valid and extra_params:
            names = ", ".join(sorted(extra_params))[:80]
            found = Diagnosis("valid", f"{found.explanation}; but the query parameters {names} travel beside data, "
                              "unsigned and unencrypted", "Move every query parameter into the encrypted payload: "
                              "the only query parameter on the wire is data.")
        return found

    # --- decryption: which key opens the ciphertext --------------------------------------------

    def _decryption(self, timestamp: int, iv: bytes, ciphertext: bytes, signature: str) -> Diagnosis:
        keys = self._keys(timestamp, _formatted(timestamp))
        plaintext = _decrypt(keys.aes_key, iv, ciphertext)
        if plaintext is not None:
            found = self._plaintext(plaintext, keys.encoded_key, signature)
            return found or Diagnosis("valid", "the request decrypts and its signature verifies", "Nothing to fix.")
        for minutes in _OFFSETS_MINUTES:
            keys = self._keys(timestamp, _formatted(timestamp + minutes * 60))
            plaintext = _decrypt(keys.aes_key, iv, ciphertext)
            if plaintext is not None:
                offset = _offset_label(minutes)
                return _after(Diagnosis(
                    "local_time",
                    f"the request decrypts only with formattedDate in local time {offset}, not in UTC (this fails "
                    "or not depending on the time of day and the machine's time zone)",
                    "Compute formattedDate from the timestamp in UTC (getUTCHours() and the like in JavaScript, "
                    "datetime.fromtimestamp(ts, tz=timezone.utc) in Python).", offset=offset),
                    self._plaintext(plaintext, keys.encoded_key, signature))
        for delta in (-60, 60):
            keys = self._keys(timestamp, _formatted(timestamp + delta))
            plaintext = _decrypt(keys.aes_key, iv, ciphertext)
            if plaintext is not None:
                which = "previous" if delta < 0 else "next"
                return _after(Diagnosis(
                    "minute_mismatch",
                    f"the request decrypts only with formattedDate of the {which} minute: the client read the "
                    "clock twice, once for the timestamp and once for formattedDate (fails near minute boundaries)",
                    "Read the clock once and use that one timestamp for formattedDate, encodedKeyTimestamp, aesKey "
                    "and the timestamp header."), self._plaintext(plaintext, keys.encoded_key, signature))
        keys = self._keys(timestamp, _formatted(timestamp), separator="_")
        plaintext = _decrypt(keys.aes_key, iv, ciphertext)
        if plaintext is not None:
            return _after(Diagnosis(
                "single_underscore_key",
                "the request decrypts only with aesKey = first 32 characters of timestamp + one underscore + "
                "password; the spec joins them with three underscores",
                "Build aesKey as the first 32 characters of timestamp + '___' (three underscores) + password."),
                self._plaintext(plaintext, keys.encoded_key, signature))
        return Diagnosis(
            "wrong_credentials",
            "nothing decrypts: not with these credentials at this timestamp, in UTC or any UTC offset, in the "
            "neighbouring minutes, or with a one-underscore aesKey; the client uses another business code or "
            "terminal serial (or the data was altered on the way)",
            "Use the business code and terminal serial issued for this terminal at onboarding, the same ones the "
            "server holds.")

    # --- after decryption: the payload and its signature ----------------------------------------

    def _plaintext(self, plaintext: bytes, encoded_key: str, signature: str) -> Optional[Diagnosis]:
        """None when the plaintext verifies, else the first fault of the payload or its signature."""
        if plaintext.strip() in (b"", b'""'):
            return _empty_string("the encrypted payload is an empty string")
        try:
            canonical = canonicalize_text(plaintext)
        except PayloadError as exc:
            hint = " (it looks like a Python repr: single quotes)" if plaintext.lstrip().startswith(b"{'") else ""
            return Diagnosis("malformed_plaintext", f"the payload decrypts but is not JSON{hint}: {exc.reason}",
                             "Encrypt the JSON serialization of requestData (a JSON object).")
        if not canonical.startswith(b"{"):
            return Diagnosis("malformed_plaintext", "the payload decrypts but is not a JSON object",
                             "Encrypt a JSON object; use {} when there is nothing to send.")
        payload: dict[str, Any] = json.loads(canonical.decode("utf-8"))
        if "key" in payload:
            return Diagnosis(
                "key_in_payload", "the decrypted payload has a key member: the client encrypted dataWithKey "
                "instead of requestData",
                "Encrypt requestData without the key field; key is added to a copy used for signing only.")
        if "__proto__" in payload:
            return Diagnosis(
                "proto_in_payload", 'the decrypted payload has a top-level "__proto__" member: JSON.parse makes it '
                "an own property, and whether the text the server signs keeps it depends on how the server adds "
                "key (obj.key = ... and spread keep it, Object.assign({}, obj) drops it), so the request is refused",
                'Rename the "__proto__" member (or nest it inside another object, where it is plain data).')
        if hmac.compare_digest(reference.sign(canonical, encoded_key), signature):
            return None
        if signature in _EMPTY_SIGNATURES:
            signed = _EMPTY_SIGNATURES[signature]
            return _empty_string(f"the signature is the SHA-512 of the Base64 of {signed!r}")
        recognized = _recognize(payload, plaintext, canonical, encoded_key, signature)
        if recognized is not None:
            return recognized
        return Diagnosis(
            "reserialized",
            "the payload decrypts, but the signature is not over JSON.stringify of it with key added: the signed "
            "text is not the sent text (the body was serialized twice, or another payload was signed); the "
            "serialization used was not recognized", _SERIALIZE_ONCE)


def _missing(name: str, what: str) -> Diagnosis:
    return Diagnosis("missing_header", f"the request has no {name} header", f"Send the {name} header: {what}.")


def _malformed_signature(signature: str) -> Diagnosis:
    if _HEX.fullmatch(signature) and len(signature) == 64:
        detail = "64 hexadecimal digits: a SHA-256 digest, where the spec uses SHA-512"
    elif _BASE64_SHA512.fullmatch(signature):
        detail = "the SHA-512 digest in Base64, where the spec uses hexadecimal"
    else:
        detail = f"{len(signature)} characters, not 128 hexadecimal digits"
    return Diagnosis("malformed_signature", f"the signature after 'Basic ' is {detail}",
                     "Send 'Basic ' and the SHA-512 of the Base64 of the signed JSON, as 128 lowercase hex digits.")


def _empty_string(found: str) -> Diagnosis:
    return Diagnosis(
        "empty_string_signed", f"{found}: an empty payload (abort calls) was taken as an empty string",
        "When there is nothing to send, sign and encrypt the literal {} (with key added for signing: "
        '{"key":"..."}); never an empty string.')


def _after(found: Diagnosis, rest: Optional[Diagnosis]) -> Diagnosis:
    """found, noting whether the request verifies once that fault is corrected."""
    if rest is None:
        tail = "; corrected, the request verifies"
    else:
        tail = f"; corrected, it still has another fault ({rest.cause}): {rest.explanation}"
    return Diagnosis(found.cause, found.explanation + tail, found.fix, found.offset, found.skew_seconds,
                     found.serialization)


def _data(method: str, body: Body, params: Params) -> tuple[Union[str, Diagnosis], set[str]]:
    """The data string (or what is wrong with it), and the names of query parameters other than data."""
    query: Mapping[str, Any] = {}
    if isinstance(params, str):
        query = parse_qs(params, keep_blank_values=True)
    elif isinstance(params, Mapping):
        query = params
    parsed: Any = None
    if body is not None and not isinstance(body, Mapping):
        try:
            text = as_bytes(body)  # (json.loads takes no memoryview: one left is of wider items, no JSON text)
            parsed = json.loads(text) if isinstance(text, (str, bytes, bytearray)) and text else (
                ValueError if text else None)
        except (ValueError, UnicodeDecodeError):
            parsed = ValueError
    elif body is not None:
        parsed = body
    in_body = parsed.get("data") if isinstance(parsed, Mapping) else None
    in_query = query.get("data")
    if isinstance(in_query, list):
        in_query = in_query[0] if len(in_query) == 1 else None
    extra = {str(name) for name in query if name != "data"}
    fix = ("On POST, PUT and PATCH send the body {\"data\": \"<iv hex>:<ciphertext hex>\"}; on GET send only the "
           "query parameter data.")
    if method in BODY_METHODS:
        if isinstance(in_body, str):
            return in_body, set()
        if in_query is not None:
            return Diagnosis("malformed_data", f"a {method} request carries data as a query parameter, not in the "
                             "JSON body", fix), extra
        what = "no body" if parsed is None else "a body that is not JSON" if parsed is ValueError else \
            "a JSON body without a data string"
        return Diagnosis("malformed_data", f"the {method} request has {what}", fix), extra
    if isinstance(in_query, str):
        return in_query, extra
    if in_body is not None:
        return Diagnosis("malformed_data", "a GET request carries data in the body, not as a query parameter",
                         fix), extra
    return Diagnosis("malformed_data", "the GET request has no data query parameter", fix), extra


def _recognize(payload: dict[str, Any], plaintext: bytes, canonical: bytes, encoded_key: str,
               signature: str) -> Optional[Diagnosis]:
    """A known mistake that produced this signature over this payload, if any."""
    if hmac.compare_digest(_sha512_of_base64(canonical), signature):
        return Diagnosis("key_not_signed", "the signature is over the payload without the key field",
                         "Sign a copy of requestData with the field key = encodedKeyTimestamp added.")
    signed = canonical[:-1] + (b"," if canonical != b"{}" else b"") + b'"key":"' + encoded_key.encode("ascii") + b'"}'
    if hmac.compare_digest(hashlib.sha512(signed).hexdigest(), signature):
        return Diagnosis("signed_without_base64", "the signature is the SHA-512 of the signed JSON itself, not of "
                         "its Base64", "Hash the Base64 of the JSON text: sha512(base64(json)), in hexadecimal.")
    for label, description, candidate in _serializations(payload, plaintext, canonical, encoded_key):
        if hmac.compare_digest(_sha512_of_base64(candidate), signature):
            return Diagnosis(
                "reserialized",
                f"the payload decrypts, but the signature is over another serialization of it than JSON.stringify "
                f"writes: {label} ({description}); the signed text is not the sent text", _SERIALIZE_ONCE,
                serialization=label)
    return None


def _serializations(payload: dict[str, Any], plaintext: bytes, canonical: bytes,
                    encoded_key: str) -> Iterator[tuple[str, str, bytes]]:
    """(label, description, signed bytes) of the serializations a client commonly signs instead."""
    sources: list[tuple[bool, dict[str, Any]]] = [(False, payload)]
    if plaintext != canonical:  # the client's own text, numbers as it wrote them (canonicalize_text parsed it)
        sources.append((False, json.loads(plaintext)))
    sources.append((True, _floats(payload)))
    seen: set[bytes] = set()
    for floats, data in sources:
        with_key = {**data, "key": encoded_key}
        for sort_keys in (False, True):
            for args, options, layout in _LAYOUTS:
                escaped = json.dumps(with_key, sort_keys=sort_keys, **options).encode("ascii")
                try:
                    raw: Optional[bytes] = json.dumps(with_key, sort_keys=sort_keys, ensure_ascii=False,
                                                      **options).encode("utf-8")
                except UnicodeEncodeError:  # a lone surrogate: only the escaped form exists
                    raw = None
                variants = [(escaped, [], False)] if raw == escaped else \
                    [(escaped, ["ensure_ascii=True"] if args else [], True), (raw, ["ensure_ascii=False"], False)]
                for signed, ascii_args, ascii_matters in variants:
                    if signed is None or signed in seen:
                        continue
                    seen.add(signed)
                    call = ", ".join(["data", *args, *ascii_args, *(["sort_keys=True"] if sort_keys else [])])
                    parts = [part for part, present in ((layout, True), (_ESCAPED, ascii_matters),
                                                         ("keys sorted", sort_keys), (_FLOATS, floats)) if present
                             and part]
                    description = ", ".join(parts) or "numbers written as Python writes them (1e-07, 1e+16)"
                    if not args and not sort_keys and not ascii_args:
                        description = f"Python's json.dumps defaults: {description}"
                    yield f"json.dumps({call})" + (" with integral floats" if floats else ""), description, signed
