"""Hostile JSON nested far deeper than anything sent in practice: every place that parses or re-serializes it
answers with its own typed refusal (AuthError, PayloadError, ResponseShapeError, a placeholder in the audit
record), never a RecursionError, an HTTP 500 or a crash. The ASGI middleware and the webhook receiver have
their own tests (test_asgi_hardening.py, test_webhooks.py)."""

from __future__ import annotations

import io
from typing import Any

import pytest

import pasarela
from pasarela.cli import main
from pasarela.errors import AuthError, PayloadError, ResponseShapeError
from pasarela.http import RetryPolicy, ServiceConfig
from pasarela.http.audit import TOO_DEEP, AuditRecord, recordable_body
from pasarela.http.json_tree import write_compact
from pasarela.terminal import reference
from pasarela.terminal.calls import read_answer
from pasarela.terminal.diagnose import diagnose
from pasarela.transfers import TransferClient
from support.faulty_clients import BUSINESS_CODE, SERIAL
from support.local_server import ScriptedService, scripted_service_fixtures

TERMINAL = pasarela.Terminal(BUSINESS_CODE, SERIAL)
REFERENCE = reference.Terminal(BUSINESS_CODE, SERIAL)
DEEP = 100_000


def nested_object(depth: int) -> bytes:
    """An object whose member nests arrays to ``depth`` levels in all."""
    return b'{"a":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


def sealed_by_hand(plaintext: bytes) -> tuple[dict[str, str], bytes]:
    """A request encrypted and signed with the right key over any plaintext (seal itself refuses deep text)."""
    timestamp = 1_700_000_000
    derived = reference.derive(BUSINESS_CODE.encode(), SERIAL.encode(), timestamp)
    signature = reference.sign(plaintext, derived.encoded_key)
    body = b'{"data":"' + reference.encrypt(derived.aes_key, bytes(16), plaintext).encode() + b'"}'
    return {"Authorization": f"Basic {signature}", "timestamp": str(timestamp)}, body


@pytest.mark.parametrize("depth", [995, 999, 1000, 1001, DEEP])
@pytest.mark.parametrize("terminal", [TERMINAL, REFERENCE], ids=["c", "reference"])
def test_open_answers_deep_payloads_with_a_payload_or_auth_001(terminal: Any, depth: int) -> None:
    headers, body = sealed_by_hand(nested_object(depth))
    try:
        payload = terminal.open("POST", headers, body, now=1_700_000_000)
    except AuthError as refusal:
        assert refusal.body["code"] == "AUTH-001"
        assert depth > 1000 or "deeper" in refusal.reason  # within the limit, refused only for Python's own
    else:
        assert depth <= 1000 and isinstance(payload["a"], list)


@pytest.mark.parametrize("depth", [995, 999, 1000])
def test_the_reference_canonical_json_of_deep_text_is_a_payload_error_at_worst(depth: int) -> None:
    text = nested_object(depth)
    try:
        assert reference.canonical_json(text) == text
    except PayloadError as refusal:
        assert refusal.path == "$" and "deeper" in refusal.reason


def test_seal_refuses_text_deeper_than_1000_with_a_payload_error() -> None:
    for terminal in (TERMINAL, REFERENCE):
        with pytest.raises(PayloadError, match="nesting deeper than 1000"):
            terminal.seal(nested_object(DEEP))


def test_a_deep_encrypted_response_is_auth_001() -> None:
    sealed = REFERENCE.seal({"n": 1}, timestamp=1_700_000_000)
    derived = reference.derive(BUSINESS_CODE.encode(), SERIAL.encode(), 1_700_000_000)
    answer = {"data": reference.encrypt(derived.aes_key, bytes(16), b"[" * DEEP + b"]" * DEEP)}
    with pytest.raises(AuthError, match="AUTH-001"):
        sealed.open_response(answer)


def test_a_deep_plain_answer_to_a_terminal_call_is_a_typed_error() -> None:
    sealed = TERMINAL.seal({"n": 1})
    deep = b"[" * DEEP + b"]" * DEEP
    with pytest.raises(ResponseShapeError, match="not JSON"):
        read_answer(sealed, 200, deep)
    with pytest.raises(pasarela.errors.ApiError) as refused:
        read_answer(sealed, 502, deep)
    assert refused.value.status == 502


@pytest.mark.parametrize("depth", [990, DEEP])
def test_audit_records_a_placeholder_for_json_too_deep_to_redact(depth: int) -> None:
    deep = b'{"number":"4242424242424242","x":' + b"[" * depth + b"]" * depth + b"}"
    recorded = recordable_body(deep)
    assert recorded == TOO_DEEP or recorded["number"] == "424242******4242"
    assert "4242424242424242" not in write_compact(recorded, str)  # (str() of 990 levels would recurse)
    if depth == DEEP:
        assert recorded == TOO_DEEP


scripted_server, service = scripted_service_fixtures()


def test_a_deep_service_answer_is_a_response_shape_error_and_is_audited(service: ScriptedService) -> None:
    records: list[AuditRecord] = []
    service.reply("GET", "/transfer/v1/status/tok-1", 200, raw=b"[" * DEEP + b"]" * DEEP)
    service.reply("GET", "/transfer/v1/status/tok-1", 500, raw=b"[" * DEEP + b"]" * DEEP)
    config = ServiceConfig(base_url=service.base_url, private_merchant_id="priv-1", audit=records.append,
                           retry=RetryPolicy(max_attempts=1))
    with TransferClient(config) as client:
        with pytest.raises(ResponseShapeError, match="not JSON"):
            client.status("tok-1")
        with pytest.raises(pasarela.errors.ApiError) as refused:
            client.status("tok-1")
    assert refused.value.status == 500 and refused.value.code is None
    assert [record.response_body for record in records] == [TOO_DEEP, TOO_DEEP]


def test_diagnose_refuses_a_request_nested_too_deep_with_a_payload_error(monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    sealed = TERMINAL.seal({"a": 1})
    deep = b'{"data":' + b"[" * DEEP + b"]" * DEEP + b"}"
    with pytest.raises(PayloadError, match="nests too deep to diagnose"):
        diagnose("POST", sealed.headers, deep, business_code=BUSINESS_CODE, terminal_serial=SERIAL)
    monkeypatch.setenv("PASARELA_BUSINESS_CODE", BUSINESS_CODE)
    monkeypatch.setenv("PASARELA_TERMINAL_SERIAL", SERIAL)
    captured = '{"method": "POST", "headers": {}, "body": ' + "[" * DEEP + "]" * DEEP + "}"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(captured.encode())))
    assert main(["diagnose"]) == 2
    assert "pasarela diagnose: error:" in capsys.readouterr().err
