"""Terminal.open: round trips, tamper tests, the timestamp window, Node-sealed requests, every refusal.

Every refusal is an AuthError whose body is the same AUTH-001; ``str(err)`` and ``.body`` never carry the
reason, and nothing carries a secret.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pasarela
from pasarela import AuthError, diagnose, reference
from pasarela.errors import AUTH_001_BODY, BAD_DATA, NOT_VERIFIED, SIGNATURE_FORMAT
from pasarela.terminal import reference as primitives
from support.faulty_clients import BUSINESS_CODE, NOON, SERIAL
from support.node_envelope import NodeEnvelope
from support.strategies import sealable_objects

IMPLEMENTATIONS = [pasarela.Terminal, reference.Terminal]
IMPL_IDS = ["c", "reference"]
METHODS = ["GET", "POST", "PUT", "PATCH"]
PAYLOAD = {"amount": 100, "currency": "COP", "reference": "order-1042"}
IV = bytes(range(16))
_DERIVED = primitives.derive(BUSINESS_CODE.encode(), SERIAL.encode(), NOON)
SECRETS = [BUSINESS_CODE, _DERIVED.password, _DERIVED.encoded_key, _DERIVED.aes_key.decode("ascii")]


def _refused(terminal: Any, method: str, headers: dict[str, str], body: Any = None, params: Any = None, *,
             now: float = NOON, tolerance: float = 300) -> AuthError:
    """Opens a request that must be refused, and checks that the refusal says nothing."""
    with pytest.raises(AuthError) as info:
        terminal.open(method, headers, body, params, now=now, tolerance=tolerance)
    err = info.value
    assert err.body == AUTH_001_BODY
    assert err.status == 401
    assert str(err) == "AUTH-001: Invalid or expired credentials"
    assert err.reason and err.reason not in str(err) and err.reason not in json.dumps(err.body)
    for secret in SECRETS:
        assert secret not in str(err) and secret not in repr(err) and secret not in err.reason
    return err


def _wire(sealed: pasarela.Sealed) -> tuple[dict[str, str], Optional[bytes], Optional[dict[str, str]]]:
    return dict(sealed.headers), sealed.body, sealed.params


# --- round trips ---------------------------------------------------------------------------------



def _int_as_opened(text: str) -> Any:
    value = int(text)
    return value if float(value) == value else float(text)


def as_opened(plaintext: bytes) -> Any:
    """What open returns for canonical text: json.loads, with the integers that are not exactly a double
    as the doubles JSON.parse made them."""
    return json.loads(plaintext, parse_int=_int_as_opened)

@given(payload=sealable_objects(), sealer=st.sampled_from(IMPLEMENTATIONS),
       method=st.sampled_from(METHODS), delay=st.integers(min_value=-300, max_value=300))
def test_open_returns_what_was_sealed(payload: dict[str, Any], sealer: Any, method: str, delay: int) -> None:
    sealed = sealer(BUSINESS_CODE, SERIAL).seal(payload, method=method, timestamp=NOON, iv=IV)
    headers, body, params = _wire(sealed)
    for opener in IMPLEMENTATIONS:
        opened = opener(BUSINESS_CODE, SERIAL).open(method, headers, body, params, now=NOON + delay)
        assert opened == as_opened(sealed.plaintext)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
@pytest.mark.parametrize("payload", [None, {}])
def test_open_abort_with_nothing_to_send_is_braces(impl: Any, payload: Any) -> None:
    terminal = impl(BUSINESS_CODE, SERIAL)
    sealed = terminal.seal(payload, method="GET", timestamp=NOON)
    assert terminal.open("GET", sealed.headers, params=sealed.params, now=NOON) == {}


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
def test_open_accepts_every_body_form(impl: Any) -> None:
    terminal = impl(BUSINESS_CODE, SERIAL)
    sealed = terminal.seal(PAYLOAD, timestamp=NOON)
    assert sealed.body is not None
    lowered = {name.lower(): value for name, value in sealed.headers.items()}
    for body in (sealed.body, sealed.body.decode(), json.loads(sealed.body)):
        assert terminal.open("post", lowered, body, now=NOON) == PAYLOAD
    get = terminal.seal(PAYLOAD, method="GET", timestamp=NOON)
    query = f"data={get.data}"
    assert terminal.open("GET", get.headers, params=query, now=NOON) == PAYLOAD
    assert terminal.open("GET", get.headers, params={"data": [get.data]}, now=NOON) == PAYLOAD


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
def test_open_reads_bodies_of_the_sealed_shape_as_json(impl: Any) -> None:
    """The C path takes the data of a body of seal's exact shape without parsing it as JSON; such a body
    must still mean what its JSON means: hex digits written as escapes open, a raw control character is
    not JSON, a non-ASCII or DEL character is not hex."""
    terminal = impl(BUSINESS_CODE, SERIAL)
    sealed = terminal.seal(PAYLOAD, timestamp=NOON)
    data = sealed.data.encode("ascii")
    escaped = b'{"data":"\\u00' + b"%02x" % data[0] + data[1:] + b'"}'
    assert terminal.open("POST", sealed.headers, escaped, now=NOON) == PAYLOAD
    for inserted, reason in ((b"\x01", "body is not JSON"), (b"\x1f\x1f", "body is not JSON"),
                             ("é".encode(), BAD_DATA), (b"\x7f", BAD_DATA), (b"\xff", "body is not JSON")):
        body = b'{"data":"' + data[:40] + inserted + data[40:] + b'"}'
        assert _refused(terminal, "POST", sealed.headers, body).reason == reason, inserted


# --- tampering -----------------------------------------------------------------------------------


def _flip_hex(text: str, index: int) -> str:
    return text[:index] + "0123456789abcdef"[int(text[index], 16) ^ 1] + text[index + 1:]


def _tampered_requests() -> list[tuple[str, dict[str, str], bytes]]:
    """(what, headers, body): one byte of the header, IV, ciphertext or timestamp changed, each way."""
    sealed = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal(PAYLOAD, timestamp=NOON, iv=IV)
    headers, body, _ = _wire(sealed)
    assert body is not None
    iv_hex, ct_hex = sealed.data.split(":")
    out: list[tuple[str, dict[str, str], bytes]] = []

    def with_data(data: str) -> bytes:
        return json.dumps({"data": data}).encode()

    authorization = headers["Authorization"]
    for i in range(len(authorization)):
        changed = _flip_hex(authorization, i) if i >= 6 else authorization[:i] + "X" + authorization[i + 1:]
        out.append((f"Authorization[{i}]", {**headers, "Authorization": changed}, body))
    for i, digit in enumerate(headers["timestamp"]):
        for other in "0123456789":
            if other != digit:
                changed = headers["timestamp"][:i] + other + headers["timestamp"][i + 1:]
                out.append((f"timestamp[{i}]={other}", {**headers, "timestamp": changed}, body))
    raw_iv, raw_ct = bytes.fromhex(iv_hex), bytes.fromhex(ct_hex)
    for i in range(len(raw_iv)):
        for bit in range(8):
            flipped = raw_iv[:i] + bytes([raw_iv[i] ^ (1 << bit)]) + raw_iv[i + 1:]
            out.append((f"iv[{i}]^{1 << bit}", headers, with_data(f"{flipped.hex()}:{ct_hex}")))
    for i in range(len(raw_ct)):
        for bit in range(8):
            flipped = raw_ct[:i] + bytes([raw_ct[i] ^ (1 << bit)]) + raw_ct[i + 1:]
            out.append((f"ct[{i}]^{1 << bit}", headers, with_data(f"{iv_hex}:{flipped.hex()}")))
    return out


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
def test_open_refuses_every_tampered_byte(impl: Any) -> None:
    terminal = impl(BUSINESS_CODE, SERIAL)
    cases = _tampered_requests()
    assert len(cases) > 500
    bodies = set()
    for what, headers, body in cases:
        try:
            err = _refused(terminal, "POST", headers, body)
        except pytest.fail.Exception:
            raise AssertionError(f"tampering {what} was accepted") from None
        bodies.add(json.dumps(err.body, sort_keys=True))
    assert bodies == {json.dumps(AUTH_001_BODY, sort_keys=True)}


# --- the timestamp window ------------------------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
@pytest.mark.parametrize("timestamp", [NOON - 1, NOON, NOON + 59, NOON + 60], ids=["11:59:59", "12:00:00",
                                                                                    "12:00:59", "12:01:00"])
def test_open_across_minute_boundaries(impl: Any, timestamp: int) -> None:
    # The password changes each minute, but it is derived from the request's own timestamp: a request
    # sealed at …:59 still opens once the server's clock has passed …:00.
    terminal = impl(BUSINESS_CODE, SERIAL)
    sealed = terminal.seal(PAYLOAD, timestamp=timestamp, iv=IV)
    for now in (timestamp - 1, timestamp, timestamp + 1, timestamp + 61):
        assert terminal.open("POST", sealed.headers, sealed.body, now=now) == PAYLOAD


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
def test_open_password_of_another_minute_is_refused(impl: Any) -> None:
    # Sealed at 11:59:59 with 12:00's password (a client reading the clock twice): refused.
    terminal = impl(BUSINESS_CODE, SERIAL)
    derived = primitives.derive(BUSINESS_CODE.encode(), SERIAL.encode(), NOON)
    ts = NOON - 1
    password = derived.password
    encoded_key = base64.b64encode(f"{password}{ts}".encode()).decode()
    plaintext = primitives.canonical_json(PAYLOAD)
    data = primitives.encrypt(f"{ts}___{password}"[:32].encode(), IV, plaintext)
    headers = {"Authorization": "Basic " + primitives.sign(plaintext, encoded_key), "timestamp": str(ts)}
    _refused(terminal, "POST", headers, {"data": data}, now=ts)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
@pytest.mark.parametrize(
    ("skew", "accepted"),
    [(0, True), (300, True), (-300, True), (300.5, False), (-300.5, False), (301, False), (-301, False),
     (299.9, True), (-299.9, True)],
)
def test_open_tolerance_edges(impl: Any, skew: float, accepted: bool) -> None:
    # skew = server clock minus timestamp; spec: within plus or minus 5 minutes (inclusive)
    terminal = impl(BUSINESS_CODE, SERIAL)
    sealed = terminal.seal(PAYLOAD, timestamp=NOON, iv=IV)
    if accepted:
        assert terminal.open("POST", sealed.headers, sealed.body, now=NOON + skew) == PAYLOAD
    else:
        err = _refused(terminal, "POST", sealed.headers, sealed.body, now=NOON + skew)
        assert "tolerance" in err.reason or impl is pasarela.Terminal


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
def test_open_custom_tolerance(impl: Any) -> None:
    terminal = impl(BUSINESS_CODE, SERIAL)
    sealed = terminal.seal(PAYLOAD, timestamp=NOON, iv=IV)
    assert terminal.open("POST", sealed.headers, sealed.body, now=NOON + 30, tolerance=30) == PAYLOAD
    _refused(terminal, "POST", sealed.headers, sealed.body, now=NOON + 31, tolerance=30)


# --- requests sealed by the independent Node implementation ----------------------------------------

NODE_PAYLOADS = [
    {},
    {"amount": 100, "currency": "COP"},
    {"amount": 100.5, "tip": 0, "items": [{"sku": "café", "qty": 2, "price": 1e21}], "note": "\u2028 \U0001f600"},
    {"10": "index keys first", "b": None, "a": [True, False, [], {}], "01": -0.0, "big": 9007199254740991},
    {"transactionId": "abc-123"},
]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
@pytest.mark.parametrize("payload", NODE_PAYLOADS)
@pytest.mark.parametrize("method", METHODS)
def test_open_request_sealed_by_node(node_envelope: NodeEnvelope, impl: Any, payload: dict[str, Any],
                                     method: str) -> None:
    plaintext = json.dumps(payload, ensure_ascii=False).encode("utf-8")  # Node re-serializes it itself
    sealed = node_envelope.seal(BUSINESS_CODE, SERIAL, NOON, IV, plaintext)
    headers = {"Authorization": sealed["authorization"], "timestamp": str(NOON), "Content-Type": "application/json"}
    terminal = impl(BUSINESS_CODE, SERIAL)
    if method == "GET":
        opened = terminal.open(method, headers, params={"data": sealed["data"]}, now=NOON + 120)
    else:
        opened = terminal.open(method, headers, json.dumps({"data": sealed["data"]}), now=NOON + 120)
    assert opened == json.loads(json.dumps(payload))
    _refused(impl("bc-other", SERIAL), "POST", headers, {"data": sealed["data"]})


@given(payload=sealable_objects())
def test_open_node_sealed_property(node_envelope: NodeEnvelope, payload: dict[str, Any]) -> None:
    plaintext = pasarela.canonical_json(payload)
    sealed = node_envelope.seal(BUSINESS_CODE, SERIAL, NOON, IV, plaintext)
    headers = {"Authorization": sealed["authorization"], "timestamp": str(NOON)}
    opened = pasarela.Terminal(BUSINESS_CODE, SERIAL).open("POST", headers, {"data": sealed["data"]}, now=NOON)
    assert opened == as_opened(plaintext)


# --- every refusal reason ------------------------------------------------------------------------


def _sealed_headers(timestamp: int = NOON) -> tuple[dict[str, str], str]:
    sealed = reference.Terminal(BUSINESS_CODE, SERIAL).seal(PAYLOAD, timestamp=timestamp, iv=IV)
    return dict(sealed.headers), sealed.data


def _forged(plaintext: bytes, *, sign_over: Optional[bytes] = None, pad: bool = True) -> tuple[dict[str, str], str]:
    """A request encrypted with the right key around arbitrary plaintext, signed as the server would sign
    sign_over (default: the plaintext)."""
    derived = primitives.derive(BUSINESS_CODE.encode(), SERIAL.encode(), NOON)
    if pad:
        data = primitives.encrypt(derived.aes_key, IV, plaintext)
    else:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        encryptor = Cipher(algorithms.AES(derived.aes_key), modes.CBC(IV)).encryptor()
        data = f"{IV.hex()}:{(encryptor.update(plaintext) + encryptor.finalize()).hex()}"
    signature = primitives.sign(sign_over if sign_over is not None else plaintext, derived.encoded_key)
    return {"Authorization": "Basic " + signature, "timestamp": str(NOON)}, data


def _refusal_cases() -> list[tuple[str, str, dict[str, str], Any, Any, str]]:
    """(id, method, headers, body, params, a word of the reason)."""
    headers, data = _sealed_headers()
    body = {"data": data}
    signature = headers["Authorization"][6:]
    iv_hex, ct_hex = data.split(":")
    cases: list[tuple[str, str, dict[str, str], Any, Any, str]] = []
    for bad in ["", "abc", "176381280", "17638128000", "1763812800000", " 1763812800", "1763812800.0",
                "".join(chr(0xFF10 + int(c)) for c in "1763812800"), "+763812800"]:  # fullwidth digits
        cases.append((f"timestamp {bad!r}", "POST", {**headers, "timestamp": bad}, body, None, "timestamp"))
    no_ts = {k: v for k, v in headers.items() if k != "timestamp"}
    cases.append(("no timestamp", "POST", no_ts, body, None, "timestamp"))
    no_auth = {k: v for k, v in headers.items() if k != "Authorization"}
    cases.append(("no Authorization", "POST", no_auth, body, None, "Authorization"))
    for label, value in [("missing Basic", signature), ("Bearer", "Bearer " + signature),
                         ("lowercase basic", "basic " + signature), ("two spaces", "Basic  " + signature)]:
        cases.append((label, "POST", {**headers, "Authorization": value}, body, None, "Basic"))
    for label, value in [("uppercase hex", signature.upper()), ("127 hex", signature[:-1]),
                         ("129 hex", signature + "0"), ("not hex", signature[:-1] + "g")]:
        cases.append((label, "POST", {**headers, "Authorization": "Basic " + value}, body, None, "hex"))
    wrong = ("0" if signature[0] != "0" else "1") + signature[1:]
    cases.append(("wrong signature", "POST", {**headers, "Authorization": "Basic " + wrong}, body, None, NOT_VERIFIED))
    for label, value, word in [
        ("bad hex", f"{iv_hex}:{ct_hex[:-1]}z", "hex"), ("odd hex", f"{iv_hex}:{ct_hex}0", "hex"),
        ("no colon", iv_hex + ct_hex, "hex"), ("two colons", f"{iv_hex}:{ct_hex}:00", "hex"),
        ("IV 15 bytes", f"{iv_hex[2:]}:{ct_hex}", "IV"), ("IV 17 bytes", f"{iv_hex}00:{ct_hex}", "IV"),
        ("IV empty", f":{ct_hex}", "IV"), ("ciphertext 15 bytes", f"{iv_hex}:{ct_hex[2:]}", "ciphertext"),
        ("ciphertext empty", f"{iv_hex}:", "ciphertext"),
        ("non-ASCII data", f"{iv_hex}:{ct_hex[:-2]}é", "hex"), ("non-ASCII IV", f"é{iv_hex[1:]}:{ct_hex}", "hex"),
    ]:
        cases.append((label, "POST", headers, {"data": value}, None, word))
    cases.append(("body not JSON", "POST", headers, b"data=" + data.encode(), None, "JSON"))
    cases.append(("body without data", "POST", headers, {"dat": data}, None, "data"))
    cases.append(("data not a string", "POST", headers, {"data": [data]}, None, "data"))
    cases.append(("POST without body", "POST", headers, None, None, "body"))
    cases.append(("POST with data in the query", "POST", headers, None, {"data": data}, "body"))
    cases.append(("GET without data", "GET", headers, body, None, "data"))
    cases.append(("GET with data twice", "GET", headers, None, {"data": [data, data]}, "data"))
    cases.append(("DELETE", "DELETE", headers, body, None, "method"))
    padless_headers, padless = _forged(b'{"a":"' + b"x" * 24 + b'"}', pad=False)  # 32 bytes, ends in "}"
    # after decryption, one reason for every cause (errors.NOT_VERIFIED: a forger must not tell them apart)
    cases.append(("bad padding", "POST", padless_headers, {"data": padless}, None, NOT_VERIFIED))
    for label, plaintext in [("non-JSON plaintext", b"amount=100"), ("Python repr plaintext", b"{'amount': 100}"),
                             ("array plaintext", b"[1,2]"), ("string plaintext", b'"{}"'), ("empty plaintext", b""),
                             ("invalid UTF-8", b'{"a":"\xff"}')]:
        forged_headers, forged = _forged(plaintext, sign_over=b"{}")
        cases.append((label, "POST", forged_headers, {"data": forged}, None, NOT_VERIFIED))
    key_headers, key_data = _forged(b'{"amount":100,"key":"x"}')
    cases.append(("plaintext with key", "POST", key_headers, {"data": key_data}, None, NOT_VERIFIED))
    proto_headers, proto_data = _forged(PROTO_PLAINTEXT)
    cases.append(("plaintext with __proto__", "POST", proto_headers, {"data": proto_data}, None, NOT_VERIFIED))
    return cases


PROTO_PLAINTEXT = b'{"__proto__":{"admin":true},"amount":100}'


REFUSALS = _refusal_cases()


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
@pytest.mark.parametrize(("method", "headers", "body", "params", "word"), [case[1:] for case in REFUSALS],
                         ids=[case[0] for case in REFUSALS])
def test_open_refuses(impl: Any, method: str, headers: dict[str, str], body: Any, params: Any, word: str) -> None:
    err = _refused(impl(BUSINESS_CODE, SERIAL), method, headers, body, params)
    if word == NOT_VERIFIED:  # decided after decryption: the one reason, in every implementation
        assert err.reason == NOT_VERIFIED
    elif impl is reference.Terminal:  # the reason is for operators; the C path may word it differently
        assert word.lower() in err.reason.lower(), err.reason


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
@pytest.mark.parametrize("signed", [PROTO_PLAINTEXT, b'{"amount":100}'], ids=["obj.key=", "Object.assign"])
def test_open_refuses_top_level_proto_whatever_was_signed(impl: Any, signed: bytes) -> None:
    # signed as a server keeping the member (obj.key = ...) or dropping it (Object.assign({}, obj)) would:
    # either way the request is refused, with the one reason of a refusal after decryption; diagnose says why
    headers, data = _forged(PROTO_PLAINTEXT, sign_over=signed)
    assert _refused(impl(BUSINESS_CODE, SERIAL), "POST", headers, {"data": data}).reason == NOT_VERIFIED
    verdict = diagnose("POST", headers, {"data": data}, business_code=BUSINESS_CODE, terminal_serial=SERIAL, now=NOON)
    assert verdict.cause == "proto_in_payload"


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
def test_open_keeps_nested_proto_as_data(impl: Any) -> None:
    plaintext = b'{"amount":100,"meta":{"__proto__":{"admin":true}}}'
    headers, data = _forged(plaintext)
    opened = impl(BUSINESS_CODE, SERIAL).open("POST", headers, {"data": data}, now=NOON)
    assert opened == {"amount": 100, "meta": {"__proto__": {"admin": True}}}


def test_open_refusals_all_answer_the_same() -> None:
    answers = set()
    for _, method, headers, body, params, _word in REFUSALS:
        for impl in IMPLEMENTATIONS:
            with pytest.raises(AuthError) as info:
                impl(BUSINESS_CODE, SERIAL).open(method, headers, body, params, now=NOON)
            answers.add((str(info.value), json.dumps(info.value.body), info.value.status))
    assert answers == {("AUTH-001: Invalid or expired credentials", json.dumps(AUTH_001_BODY), 401)}


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
@pytest.mark.parametrize("mangle", [str.upper, lambda s: s[:-1] + "g", lambda s: s[:-1] + "é", lambda s: s[:-1],
                                    lambda s: " " + s[1:], lambda s: s[:-1] + "_"],
                         ids=["uppercase", "g", "non-ASCII", "127", "space", "underscore"])
def test_open_names_a_malformed_signature_in_both_implementations(impl: Any, mangle: Any) -> None:
    """The hex check runs only once a signature failed to match: the reason is the same as when it ran first."""
    headers, data = _sealed_headers()
    headers["Authorization"] = "Basic " + mangle(headers["Authorization"][6:])
    err = _refused(impl(BUSINESS_CODE, SERIAL), "POST", headers, {"data": data}, None)
    assert err.reason == SIGNATURE_FORMAT


# --- the C core's reading of a POST request (headers and body) against the Python reading ---------


def _outcome(terminal: Any, method: str, headers: dict[str, str], body: Any, now: float) -> Any:
    try:
        return terminal.open(method, headers, body, now=now)
    except AuthError as exc:
        return ("refused", exc.reason)


def _sealed_bytes_request() -> tuple[dict[str, str], bytes]:
    sealed = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal(PAYLOAD, timestamp=NOON, iv=IV)
    return dict(sealed.headers), sealed.body or b""


_MUTATIONS: list[Any] = [
    lambda h, b: (h, b),
    lambda h, b: ({**h, "timestamp": str(NOON + 301)}, b),
    lambda h, b: ({**h, "timestamp": str(NOON - 300)}, b),
    lambda h, b: ({**h, "timestamp": "\uff11763812800"}, b),
    lambda h, b: ({**h, "timestamp": "0000000000"}, b),
    lambda h, b: ({k: v for k, v in h.items() if k != "timestamp"}, b),
    lambda h, b: ({k.lower(): v for k, v in h.items()}, b),
    lambda h, b: ({k.upper(): v for k, v in h.items()}, b),
    lambda h, b: ({"AUTHORIZATION": "Basic " + "0" * 128, **{k.lower(): v for k, v in h.items()}}, b),
    lambda h, b: ({**h, "Authorization": h["Authorization"].upper()}, b),
    lambda h, b: ({**h, "Authorization": h["Authorization"][:-1] + "é"}, b),
    lambda h, b: ({**h, "Authorization": h["Authorization"][:40] + "é" + h["Authorization"][41:]}, b),
    lambda h, b: ({**h, "Authorization": "Basic\u00a0" + h["Authorization"][6:]}, b),
    lambda h, b: ({**h, "Authorization": "basic " + h["Authorization"][6:]}, b),
    lambda h, b: ({**h, "Authorization": h["Authorization"] + "0"}, b),
    lambda h, b: (h, b[:-1]),
    lambda h, b: (h, b[:-3] + b'"}'),
    lambda h, b: (h, b.replace(b'{"data":"', b'{"data": "')),
    lambda h, b: (h, b.replace(b":", b"\\u003a", 2).replace(b'{"data"\\u003a', b'{"data":')),
    lambda h, b: (h, b[:9] + b[9:].replace(b"a", b"\\u0061", 1)),
    lambda h, b: (h, b[:-2] + b'\\"}'),
    lambda h, b: (h, b[:20] + bytes([b[20] ^ 1]) + b[21:]),
    lambda h, b: (h, b[:-6] + (b"0" if b[-3:-2] != b"0" else b"1") + b[-5:]),
    lambda h, b: (h, b[:-4] + b'"}'),
    lambda h, b: (h, b'{"data":"' + b[9:41] + b'"}'),
    lambda h, b: (h, b"{}"),
    lambda h, b: (h, b""),
]


@pytest.mark.parametrize("mutation", range(len(_MUTATIONS)))
@pytest.mark.parametrize("now", [NOON, NOON + 0.5, float("nan")])
def test_the_c_reading_of_a_post_agrees_with_the_python_reading(mutation: int, now: float) -> None:
    """"POST" with a bytes body is read by pasarela_open_request; "post" takes read_request_bytes: the same
    payload or the same refusal, whatever was changed in the request."""
    headers, body = _MUTATIONS[mutation](*_sealed_bytes_request())
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    assert _outcome(terminal, "POST", headers, body, now) == _outcome(terminal, "post", headers, body, now)


@given(payload=sealable_objects(), index=st.integers(min_value=0), bit=st.integers(min_value=0, max_value=7))
def test_the_c_reading_agrees_with_the_python_reading_on_any_flipped_bit(payload: dict[str, Any], index: int,
                                                                          bit: int) -> None:
    sealed = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal(payload, timestamp=NOON)
    body = bytearray(sealed.body or b"")
    body[index % len(body)] ^= 1 << bit
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    headers = dict(sealed.headers)
    assert _outcome(terminal, "POST", headers, bytes(body), NOON) == _outcome(terminal, "post", headers,
                                                                             bytes(body), NOON)


def test_open_post_is_the_path_a_sealed_request_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    from pasarela import _binding

    headers, body = _sealed_bytes_request()
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    # through pasarela._fastcall (CPython): the payload itself, built by the C core
    opened = _binding.open_post(terminal._native, headers, body, NOON, 300)
    assert opened == {"amount": 100, "currency": "COP", "reference": "order-1042"}
    late = _binding.open_post(terminal._native, headers, body, NOON + 301, 300)
    assert late in _binding._READ_THE_SLOWER_WAY  # outside the window: read the slower way, which names it
    assert _binding.open_post_grown(terminal._native, headers, body, NOON + 301, 300, late) == late
    assert _binding.settle_open_post(headers, late) is None
    monkeypatch.setattr(_binding, "open_post", _binding._open_post_cffi)  # through cffi (PyPy): the text, for Python
    opened = _binding.open_post(terminal._native, headers, body, NOON, 300)
    assert type(opened) is tuple and opened[0] == b'{"amount":100,"currency":"COP","reference":"order-1042"}'
    late = _binding.open_post(terminal._native, headers, body, NOON + 301, 300)
    assert late in _binding._READ_THE_SLOWER_WAY
    assert _binding.open_post_grown(terminal._native, headers, body, NOON + 301, 300, late) == late
    assert _binding.settle_open_post(headers, late) is None


# JSON.stringify writes these with 17 digits or more; JSON.parse reads them back as the doubles they are
LONG_INT_PLAINTEXT = b'{"a":9.87654321e19,"b":[1.5e20,-9.87654321e19],"c":"12345678901234567890"}'
LONG_INT_CANONICAL = b'{"a":98765432100000000000,"b":[150000000000000000000,-98765432100000000000],' \
                     b'"c":"12345678901234567890"}'


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
def test_open_reads_long_integers_of_a_non_canonical_plaintext_as_the_doubles_json_parse_makes(impl: Any) -> None:
    headers, data = _forged(LONG_INT_PLAINTEXT, sign_over=LONG_INT_CANONICAL)
    opened = impl(BUSINESS_CODE, SERIAL).open("POST", headers, json.dumps({"data": data}, separators=(",", ":"))
                                              .encode(), now=NOON)
    assert opened == as_opened(LONG_INT_CANONICAL)
    assert type(opened["a"]) is float and opened["a"] == 9.87654321e19  # not the int 98765432100000000000
    assert type(opened["b"][0]) is int  # 1.5e20 is that integer exactly
    assert opened["c"] == "12345678901234567890"


@pytest.mark.parametrize("fastcall", [True, False], ids=["fastcall", "cffi"])
def test_the_canonicalizer_reports_long_integer_literals(fastcall: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from pasarela import _binding

    if not fastcall:
        monkeypatch.setattr(_binding, "open_post", _binding._open_post_cffi)
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)  # alive while its credentials' address is in use
    headers, data = _forged(LONG_INT_PLAINTEXT, sign_over=LONG_INT_CANONICAL)
    opened = _binding.open_post(terminal._native, headers,
                                b'{"data":"' + data.encode() + b'"}', NOON, 300)
    # left to Python either way: JSON.parse rounds such integers, which the C core's reader would not
    assert type(opened) is tuple and opened[0] == LONG_INT_CANONICAL and opened[1] & _binding.FACT_LONG_INT
    short_headers, short_data = _forged(b'{"a":1.5e15,"c":"12345678901234567890"}',
                                        sign_over=b'{"a":1500000000000000,"c":"12345678901234567890"}')
    short = _binding.open_post(terminal._native, short_headers,
                               b'{"data":"' + short_data.encode() + b'"}', NOON, 300)
    if fastcall:
        assert short == {"a": 1500000000000000, "c": "12345678901234567890"} and type(short["a"]) is int
    else:
        assert type(short) is tuple and not short[1] & _binding.FACT_LONG_INT


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
@pytest.mark.parametrize(("now", "tolerance"), [(float("nan"), 300), (NOON, float("nan"))], ids=["now", "tolerance"])
def test_open_refuses_every_request_when_the_clock_or_the_tolerance_is_nan(impl: Any, now: float,
                                                                            tolerance: float) -> None:
    headers, body = _sealed_bytes_request()
    assert "timestamp" in _refused(impl(BUSINESS_CODE, SERIAL), "POST", headers, body, now=now,
                                   tolerance=tolerance).reason


def test_the_lower_case_headers_of_an_asgi_server_are_read_by_the_c_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """TerminalAuthMiddleware hands open the header names in lower case, as ASGI servers give them."""
    from pasarela.terminal import envelope

    def python_reading(*args: Any) -> Any:
        raise AssertionError("read in Python")

    headers, body = _sealed_bytes_request()
    monkeypatch.setattr(envelope, "read_request_bytes", python_reading)
    opened = pasarela.Terminal(BUSINESS_CODE, SERIAL).open("POST", {k.lower(): v for k, v in headers.items()}, body,
                                                          now=NOON)
    assert opened == PAYLOAD


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
def test_header_names_and_values_given_as_bytes_are_read_as_latin_1(impl: Any) -> None:
    """An ASGI server's raw headers are bytes: read as Starlette reads them, they open as their str spelling."""
    headers, body = _sealed_bytes_request()
    terminal = impl(BUSINESS_CODE, SERIAL)
    as_bytes = {name.lower().encode("latin-1"): value.encode("latin-1") for name, value in headers.items()}
    assert terminal.open("POST", as_bytes, body, now=NOON) == PAYLOAD
    values_only = {name: bytearray(value.encode("latin-1")) for name, value in headers.items()}
    assert terminal.open("POST", values_only, body, now=NOON) == PAYLOAD


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
@pytest.mark.parametrize(("name", "value", "spelled"), [
    ("timestamp", NOON, "timestamp"),  # an int where the text of its digits belongs
    ("Authorization", 12345, "Authorization"),
    ("authorization", ["Basic"], "Authorization"),
    ("TimeStamp", 1.5, "timestamp"),
])
def test_a_header_value_that_is_not_text_is_refused_by_name(impl: Any, name: str, value: Any, spelled: str) -> None:
    """No HTTP request carries a header value other than text: one given in-process (an int timestamp) is refused
    as AUTH-001 whose reason names the header and the type, never a bare TypeError or AttributeError."""
    headers: dict[str, Any] = dict(_sealed_bytes_request()[0])
    body = _sealed_bytes_request()[1]
    for existing in [key for key in headers if key.lower() == name.lower()]:
        del headers[existing]
    headers[name] = value
    reason = _refused(impl(BUSINESS_CODE, SERIAL), "POST", headers, body).reason
    assert f"the {spelled} header is {type(value).__name__}, not text" in reason
