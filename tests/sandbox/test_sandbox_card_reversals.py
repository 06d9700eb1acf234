"""Item 4 of issue 12 (cards) with plain HTTP: ``DELETE /card/v1/charges/{ticketNumber}`` voids a charge (the
official PHP SDK's call), later than a day it refunds it, a second reversal is a typed 400; the older paths
``POST /v1/charges``, ``DELETE`` and ``GET /v1/charges/{ticketNumber}`` (a community TypeScript client's) work."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from pasarela.sandbox import Sandbox, SandboxConfig
from support.clocks import ShiftedClock

PUBLIC, PRIVATE = "pk-void", "sk-void"
PUBLIC_KEY = {"Public-Merchant-Id": PUBLIC}
PRIVATE_KEY = {"Private-Merchant-Id": PRIVATE}
CARD = {"name": "Ana Gomez", "number": "5100000000000008", "expiryMonth": "12", "expiryYear": "29", "cvv": "123"}
AMOUNT = {"subtotalIva": 100000, "subtotalIva0": 0, "iva": 19000, "currency": "COP"}


@pytest.fixture
def clock() -> ShiftedClock:
    return ShiftedClock()


@pytest.fixture
def client(clock: ShiftedClock) -> Iterator[TestClient]:
    with Sandbox(SandboxConfig(public_key=PUBLIC, private_key=PRIVATE), clock=clock) as sandbox:
        app: Any = sandbox.app
        with TestClient(app) as client:
            yield client


def _charge(client: TestClient, path: str = "/card/v1/charges") -> str:
    token = client.post("/card/v1/tokens", json={"card": CARD, "totalAmount": 119000, "currency": "COP"},
                        headers=PUBLIC_KEY).json()["token"]
    charged = client.post(path, json={"token": token, "amount": AMOUNT}, headers=PRIVATE_KEY)
    assert charged.status_code == 201, charged.text
    ticket: str = charged.json()["ticketNumber"]
    return ticket


def test_a_charge_is_voided_once(client: TestClient) -> None:
    ticket = _charge(client)
    voided = client.delete(f"/card/v1/charges/{ticket}", headers=PRIVATE_KEY)
    assert voided.status_code == 200, voided.text
    body = voided.json()
    assert body["transactionType"] == "VOID" and body["ticketNumber"] != ticket and body["ticketNumber"].isdigit()
    again = client.delete(f"/card/v1/charges/{ticket}", headers=PRIVATE_KEY)
    assert again.status_code == 400 and again.json()["code"] == "CHARGE_ALREADY_REVERSED"
    legacy_again = client.delete(f"/v1/charges/{ticket}", headers=PRIVATE_KEY)
    assert legacy_again.status_code == 400 and legacy_again.json()["code"] == "CHARGE_ALREADY_REVERSED"
    record = client.get(f"/v1/charges/{ticket}", headers=PRIVATE_KEY).json()
    assert record["ticketNumber"] == ticket and record["reversal"] == body and record["amount"] == AMOUNT


def test_after_a_day_the_same_call_is_a_refund(client: TestClient, clock: ShiftedClock) -> None:
    ticket = _charge(client)
    clock.offset = 86_400.0
    refunded = client.delete(f"/card/v1/charges/{ticket}", headers=PRIVATE_KEY)
    assert refunded.status_code == 200 and refunded.json()["transactionType"] == "REFUND"


def test_the_body_the_php_sdk_sends_is_accepted(client: TestClient) -> None:
    ticket = _charge(client)
    voided = client.request("DELETE", f"/card/v1/charges/{ticket}", headers=PRIVATE_KEY,
                            json={"fullResponse": True, "amount": {**AMOUNT, "extraTaxes": {"propina": 0}}})
    assert voided.status_code == 200, voided.text
    not_json = client.request("DELETE", f"/card/v1/charges/{_charge(client)}", content=b"amount=1",
                              headers={**PRIVATE_KEY, "Content-Type": "application/x-www-form-urlencoded"})
    assert not_json.status_code == 415 and not_json.json()["code"] == "UNSUPPORTED_MEDIA_TYPE"


def test_the_legacy_paths(client: TestClient) -> None:
    ticket = _charge(client, "/v1/charges")
    record = client.get(f"/v1/charges/{ticket}", headers=PRIVATE_KEY)
    assert record.status_code == 200
    assert (record.json()["transactionStatus"], record.json()["transactionType"]) == ("APPROVAL", "SALE")
    assert "reversal" not in record.json()
    assert client.delete(f"/v1/charges/{ticket}", headers=PRIVATE_KEY).json()["transactionType"] == "VOID"


def test_unknown_tickets_and_keys(client: TestClient) -> None:
    missing = client.delete("/card/v1/charges/000000000000000000", headers=PRIVATE_KEY)
    assert missing.status_code == 404 and missing.json()["code"] == "NOT_FOUND"
    assert client.get("/v1/charges/000000000000000000", headers=PRIVATE_KEY).status_code == 404
    ticket = _charge(client)
    assert client.delete(f"/card/v1/charges/{ticket}", headers=PUBLIC_KEY).status_code == 401
    assert client.get(f"/v1/charges/{ticket}", headers=PRIVATE_KEY).json().get("reversal") is None
