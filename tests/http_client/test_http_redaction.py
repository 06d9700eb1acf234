"""Certification rule 3: every request and response recorded, with secrets redacted."""

# ruff: noqa: S105 (test tokens, keys and secrets are fixtures)

from __future__ import annotations

import json
import logging
import os
import socket
import stat
from decimal import Decimal
from pathlib import Path

import pytest

from pasarela.cards import Card, CardClient, CardTokenRequest
from pasarela.http import (
    REDACTED,
    AuditRecord,
    JsonlAuditLog,
    ServiceConfig,
    mask_card_number,
    redact_headers,
    redact_json,
)
from pasarela.http.audit import recordable_body
from pasarela.transfers import TransferClient
from support.local_server import ScriptedService, scripted_service_fixtures

VISA = "4000000000000002"
CRYPTOGRAM = "AgAAAAAAAIR8CQrXcIhbQAAAAAA"
PRIVATE_KEY = "priv-0123456789abcdef"


scripted_server, service = scripted_service_fixtures()


def test_mask_card_number_keeps_first_six_and_last_four() -> None:
    assert mask_card_number("4242424242424242") == "424242******4242"
    assert mask_card_number("4000000000000000002") == "400000*********0002"
    assert mask_card_number("123456789012") == REDACTED  # too short to show anything
    assert mask_card_number("4242 4242 4242 4242") == REDACTED
    assert mask_card_number(4242424242424242) == REDACTED


def test_redact_json_at_any_depth_and_any_case() -> None:
    body = {
        "card": {"number": VISA, "cvv": "123", "Cryptogram": CRYPTOGRAM, "name": "Ana", "expiryMonth": "12"},
        "items": [{"CVV": "999", "cardNumber": "5100000000000008"}],
        "privateMerchantId": PRIVATE_KEY,
        "documentNumber": "123456789",
        "ticketNumber": "123456789012345678",
    }
    redacted = redact_json(body)
    text = json.dumps(redacted)
    for secret in (VISA, '123"', CRYPTOGRAM, "999", "5100000000000008", PRIVATE_KEY):
        assert secret not in text
    assert redacted["card"]["number"] == "400000******0002"
    assert redacted["card"]["name"] == "Ana" and redacted["documentNumber"] == "123456789"
    assert redacted["ticketNumber"] == "123456789012345678"  # needed to reconcile, not a secret
    assert body["card"]["cvv"] == "123"  # the original is untouched


def test_redact_headers_removes_the_private_key() -> None:
    headers = {"Private-Merchant-Id": PRIVATE_KEY, "Public-Merchant-Id": "pub-1", "Authorization": "Basic x"}
    assert redact_headers(headers) == {
        "Private-Merchant-Id": REDACTED,
        "Public-Merchant-Id": "pub-1",
        "Authorization": REDACTED,
    }


def test_recordable_body_handles_json_text_and_empty() -> None:
    assert recordable_body(b"") is None
    assert recordable_body(b'{"cvv":"123"}') == {"cvv": REDACTED}
    assert recordable_body(b"<html>oops</html>") == "<html>oops</html>"
    assert len(recordable_body(b"x" * 100_000)) == 65536


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le"])
def test_recordable_body_reads_json_in_every_encoding_json_loads_reads(encoding: str) -> None:
    # (the body a server's json.loads accepts is parsed and redacted, never recorded as text with its secrets)
    text = json.dumps({"card": {"cvv": "123", "number": VISA}, "amount": 5})
    recorded = recordable_body(text.encode(encoding))
    expected = {"card": {"cvv": REDACTED, "number": mask_card_number(VISA)}, "amount": 5}
    assert recorded == recordable_body(text.encode("utf-8")) == expected


def token_request() -> CardTokenRequest:
    card = Card(name="Ana", number=VISA, expiry_month="12", expiry_year="29", cvv="321", cryptogram=CRYPTOGRAM)
    return CardTokenRequest(card=card, total_amount=Decimal(100), currency="COP", is_network_token=True)


def test_every_attempt_is_recorded_redacted(service: ScriptedService) -> None:
    service.reply("POST", "/card/v1/tokens", 200, {"token": "tok-1", "cvv": "000"})
    service.reply("GET", "/transfer/v1/status/tok-1", 500, {"code": "E"})
    service.reply("GET", "/transfer/v1/status/tok-1", 200, {"status": "PAID"})
    records: list[AuditRecord] = []
    settings = ServiceConfig(
        base_url=service.base_url,
        public_merchant_id="pub-1",
        private_merchant_id=PRIVATE_KEY,
        audit=records.append,
        clock=lambda: 1700000000.5,
    )
    with CardClient(settings) as cards:
        cards.create_token(token_request(), idempotency_key="key-1")
    with TransferClient(settings, sleep=lambda _: None) as transfers:
        transfers.status("tok-1")
    assert [(r.method, r.status, r.attempt) for r in records] == [("POST", 200, 1), ("GET", 500, 1), ("GET", 200, 2)]
    first = records[0]
    assert first.at == 1700000000.5 and first.idempotency_key == "key-1"
    assert first.url == service.base_url + "/card/v1/tokens"
    assert first.request_body["card"] == {
        "name": "Ana",
        "number": "400000******0002",
        "expiryMonth": "12",
        "expiryYear": "29",
        "cvv": REDACTED,
        "cryptogram": REDACTED,
    }
    assert first.response_body == {"token": "tok-1", "cvv": REDACTED}
    assert records[1].request_headers["Private-Merchant-Id"] == REDACTED
    everything = json.dumps([r.to_json() for r in records])
    for secret in (VISA, CRYPTOGRAM, PRIVATE_KEY, '"321"'):
        assert secret not in everything
    # ...while the service did receive the real values
    assert service.requests[0].json()["card"]["number"] == VISA
    assert service.requests[1].headers["private-merchant-id"] == PRIVATE_KEY


def test_transport_failures_are_recorded_too() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    refused_url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    probe.close()
    records: list[AuditRecord] = []
    settings = ServiceConfig(base_url=refused_url, private_merchant_id=PRIVATE_KEY, audit=records.append)
    with TransferClient(settings, sleep=lambda _: None) as transfers, pytest.raises(Exception, match="ConnectError"):
        transfers.status("tok-1")
    assert len(records) == 3
    assert all(r.status is None and r.error and "ConnectError" in r.error for r in records)


def test_jsonl_audit_log_appends_one_private_line_per_record(service: ScriptedService, tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = JsonlAuditLog(path)
    service.reply("POST", "/card/v1/tokens", 200, {"token": "tok-1"})
    service.reply("POST", "/card/v1/tokens", 400, {"code": "K001", "message": "Tarjeta no válida"})
    settings = ServiceConfig(base_url=service.base_url, public_merchant_id="pub-1", audit=log)
    with CardClient(settings) as cards:
        cards.create_token(token_request())
        with pytest.raises(Exception, match="K001"):
            cards.create_token(token_request())
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    entries = [json.loads(line) for line in lines]
    assert [e["status"] for e in entries] == [200, 400]
    assert entries[1]["response_body"] == {"code": "K001", "message": "Tarjeta no válida"}
    assert VISA not in path.read_text(encoding="utf-8") and CRYPTOGRAM not in path.read_text(encoding="utf-8")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert repr(log) == f"JsonlAuditLog({str(path)!r})"


def test_a_failing_audit_hook_is_logged_not_raised(service: ScriptedService, caplog: pytest.LogCaptureFixture) -> None:
    def broken(record: AuditRecord) -> None:
        raise OSError("disk full")

    service.reply("POST", "/card/v1/tokens", 200, {"token": "tok-1"})
    settings = ServiceConfig(base_url=service.base_url, public_merchant_id="pub-1", audit=broken)
    with caplog.at_level(logging.ERROR, logger="pasarela.audit"), CardClient(settings) as cards:
        assert cards.create_token(token_request()).token == "tok-1"
    assert "audit hook failed" in caplog.text
    assert VISA not in caplog.text
