"""pasarela against independent implementations on this machine: Node (the server's JSON.stringify and
crypto) and the openssl command line. These run in CI; a missing tool fails them, never skips them."""

from __future__ import annotations

import subprocess
from typing import Any, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pasarela import PayloadError, Terminal, canonical_json
from support.node_envelope import NodeEnvelope
from support.strategies import EXACT_BIG_INTS, INEXACT_INTS, big_ints, exact_big_ints, sealable_objects

BUSINESS_CODE = "bc-7f3a1c2e9d"
SERIAL = "SN-0042"

payloads = sealable_objects()
credentials = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=30)
timestamps = st.integers(min_value=10**9, max_value=10**10 - 1)
ivs = st.binary(min_size=16, max_size=16)


@given(payloads)
def test_canonical_json_equals_node_stringify(
    node_stringify: Callable[[bytes], bytes], payload: dict[str, Any]
) -> None:
    ours = canonical_json(payload)
    # what the server computes from our bytes: JSON.stringify(JSON.parse(plaintext)) must give them back
    assert node_stringify(ours) == ours


@given(st.one_of(big_ints, exact_big_ints, st.sampled_from(EXACT_BIG_INTS + INEXACT_INTS)))
def test_int_rule_agrees_with_node(node_stringify: Callable[[bytes], bytes], value: int) -> None:
    """Accepted exactly when JSON.parse of the int's digits gives that int back as a double, and then
    written as JSON.stringify writes it."""
    node = node_stringify(b"[" + str(value).encode() + b"]")
    exact = float(value) == value if abs(value) < 2**1024 else False
    if exact:
        assert canonical_json({"n": value}) == b'{"n":' + node[1:-1] + b"}"
    else:
        with pytest.raises(PayloadError) as info:
            canonical_json({"n": value})
        assert info.value.path == "$.n"
        if abs(value) < 2**1024:  # JavaScript would change the value: its double is another number
            assert float(node[1:-1]) != value


@given(payloads, credentials, credentials, timestamps, ivs)
def test_seal_equals_independent_node_implementation(
    node_envelope: NodeEnvelope,
    payload: dict[str, Any],
    business_code: str,
    serial: str,
    timestamp: int,
    iv: bytes,
) -> None:
    sealed = Terminal(business_code, serial).seal(payload, timestamp=timestamp, iv=iv)
    node = node_envelope.seal(business_code, serial, timestamp, iv, sealed.plaintext)
    assert sealed.headers["Authorization"] == node["authorization"]
    assert sealed.data == node["data"]
    assert sealed.signed == node["signed"].encode("utf-8")


@given(payloads, timestamps, st.sampled_from(["GET", "POST"]))
def test_node_server_accepts_sealed_request(
    node_envelope: NodeEnvelope, payload: dict[str, Any], timestamp: int, method: str
) -> None:
    sealed = Terminal(BUSINESS_CODE, SERIAL).seal(payload, method=method, timestamp=timestamp)
    verdict = node_envelope.verify(
        BUSINESS_CODE, SERIAL, timestamp, sealed.headers["Authorization"], sealed.data
    )
    assert verdict["ok"] is True


def test_node_server_rejects_python_json_dumps_serialization(node_envelope: NodeEnvelope) -> None:
    # The classic bug this library exists to prevent: json.dumps writes 100.0, JavaScript writes 100.
    import base64
    import hashlib
    import json

    from pasarela import reference

    timestamp = 1763812800
    derived = reference.derive(BUSINESS_CODE.encode(), SERIAL.encode(), timestamp)
    signed = json.dumps({"amount": 100.0, "key": derived.encoded_key}, separators=(",", ":")).encode()
    naive_signature = hashlib.sha512(base64.b64encode(signed)).hexdigest()
    sealed = Terminal(BUSINESS_CODE, SERIAL).seal({"amount": 100.0}, timestamp=timestamp)
    verdict = node_envelope.verify(BUSINESS_CODE, SERIAL, timestamp, "Basic " + naive_signature, sealed.data)
    assert verdict["ok"] is False
    assert (
        node_envelope.verify(BUSINESS_CODE, SERIAL, timestamp, sealed.headers["Authorization"], sealed.data)[
            "ok"
        ]
        is True
    )


@settings(max_examples=40)  # one process per example
@given(payloads, timestamps, ivs)
def test_openssl_enc_decrypts_sealed_data(openssl: str, payload: dict[str, Any], timestamp: int, iv: bytes) -> None:
    from pasarela import reference

    sealed = Terminal(BUSINESS_CODE, SERIAL).seal(payload, timestamp=timestamp, iv=iv)
    aes_key = reference.derive(BUSINESS_CODE.encode(), SERIAL.encode(), timestamp).aes_key
    iv_hex, ct_hex = sealed.data.split(":")
    result = subprocess.run(
        [openssl, "enc", "-d", "-aes-256-cbc", "-K", aes_key.hex(), "-iv", iv_hex],
        input=bytes.fromhex(ct_hex),
        capture_output=True,
        check=True,
    )
    assert result.stdout == sealed.plaintext
