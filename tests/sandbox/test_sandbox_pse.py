"""Item 4 of issue 12 (Colombia ACH, PSE) with plain HTTP: the bank list, a COP token without ``flow`` with a
``bankId``, an init answering the bank's ``redirectUrl`` and a ``trazabilityCode``, the payer page, the status
query, settling by itself like Mexico and Ecuador, and the webhook; then pasarela's own client on the same flow."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from pasarela.http import NO_RETRY, ServiceConfig
from pasarela.sandbox import Sandbox, SandboxConfig
from pasarela.transfers import (
    Amount,
    ColombiaPse,
    TransferClient,
    TransferInitRequest,
    TransferState,
    TransferTokenRequest,
)
from support.clocks import ShiftedClock
from support.local_server import LocalServer

PUBLIC, PRIVATE = "pk-pse", "sk-pse"
PUBLIC_KEY = {"Public-Merchant-Id": PUBLIC}
PRIVATE_KEY = {"Private-Merchant-Id": PRIVATE}
AMOUNT = {"subtotalIva": 0, "subtotalIva0": 50000, "iva": 0}


@pytest.fixture
def clock() -> ShiftedClock:
    return ShiftedClock()


@pytest.fixture
def client(clock: ShiftedClock) -> Iterator[TestClient]:
    with Sandbox(SandboxConfig(public_key=PUBLIC, private_key=PRIVATE, settle_after=120.0), clock=clock) as sandbox:
        app: Any = sandbox.app
        with TestClient(app) as client:
            yield client


def _token_request(bank_id: str, document: str = "123456789") -> dict[str, Any]:
    return {"currency": "COP", "amount": AMOUNT, "bankId": bank_id, "userType": "0", "documentType": "CC",
            "documentNumber": document, "email": "payer@example.co", "paymentDescription": "Order 42",
            "callbackUrl": "https://shop.example/return?order=42"}


def _start(client: TestClient, document: str = "123456789") -> tuple[str, dict[str, Any]]:
    banks = client.get("/transfer/v1/bankList", headers=PUBLIC_KEY)
    assert banks.status_code == 200
    assert banks.json() and all(set(bank) == {"code", "name"} for bank in banks.json())
    token = client.post("/transfer/v1/tokens", json=_token_request(banks.json()[0]["code"], document),
                        headers=PUBLIC_KEY)
    assert token.status_code == 201, token.text
    started = client.post("/transfer/v1/init", json={"token": token.json()["token"], "amount": AMOUNT},
                          headers=PRIVATE_KEY)
    assert started.status_code == 201, started.text
    return token.json()["token"], started.json()


def test_bank_list_needs_the_public_key(client: TestClient) -> None:
    assert client.get("/transfer/v1/bankList").status_code == 401


def test_a_cop_token_without_flow_needs_a_bank(client: TestClient) -> None:
    body = _token_request("1022")
    del body["bankId"]
    refused = client.post("/transfer/v1/tokens", json=body, headers=PUBLIC_KEY)
    assert refused.status_code == 400 and refused.json()["field"] == "bankId"


def test_pse_init_redirects_to_the_bank_and_the_payer_pays_there(client: TestClient) -> None:
    token, answer = _start(client)
    assert set(answer) == {"redirectUrl", "trazabilityCode", "transactionReference"}
    assert re.fullmatch(r"[0-9]{10}", answer["trazabilityCode"])
    assert answer["redirectUrl"].endswith(f"/sandbox/pay/{token}")
    page = client.get(f"/sandbox/pay/{token}")
    assert page.status_code == 200 and "PSE" in page.text
    page_token = re.search(r'name="page_token" value="([^"]+)"', page.text)
    assert page_token is not None
    back = client.post(f"/sandbox/pay/{token}", data={"action": "pay", "page_token": page_token.group(1)},
                       follow_redirects=False)
    assert back.status_code == 303 and back.headers["location"] == f"https://shop.example/return?order=42&token={token}"
    record = client.get(f"/transfer/v1/status/{token}", headers=PRIVATE_KEY).json()
    assert (record["status"], record["processorState"], record["country"]) == ("approvedTransaction", "OK", "CO")
    hooks = client.get("/sandbox/v1/webhooks", headers=PRIVATE_KEY).json()["webhooks"]
    assert [hook["status"] for hook in hooks if hook["token"] == token] == ["approvedTransaction"]


def test_pse_settles_by_itself_by_the_document_rule(client: TestClient, clock: ShiftedClock) -> None:
    token, _ = _start(client, document="999999990")
    assert client.get(f"/transfer/v1/status/{token}", headers=PRIVATE_KEY).json()["status"] == "initializedTransaction"
    clock.offset = 120.0
    record = client.get(f"/transfer/v1/status/{token}", headers=PRIVATE_KEY).json()
    assert (record["status"], record["processorState"]) == ("declinedTransaction", "NOT_AUTHORIZED")


def test_pse_amounts_are_not_the_qr_scenarios(client: TestClient) -> None:
    amount = {"subtotalIva": 0, "subtotalIva0": 11000, "iva": 0}  # QR-CODE-0001 for a QR; nothing for PSE
    token = client.post("/transfer/v1/tokens", json={**_token_request("1022"), "amount": amount},
                        headers=PUBLIC_KEY).json()["token"]
    assert client.post("/transfer/v1/init", json={"token": token, "amount": amount},
                       headers=PRIVATE_KEY).status_code == 201


def test_pasarela_client_runs_the_pse_flow() -> None:
    config = SandboxConfig(public_key=PUBLIC, private_key=PRIVATE, settle_after=0.0)
    with Sandbox(config) as sandbox, LocalServer(sandbox.app) as server:  # type: ignore[arg-type]
        service = ServiceConfig(base_url=server.base_url, public_merchant_id=PUBLIC, private_merchant_id=PRIVATE,
                                retry=NO_RETRY)
        with TransferClient(service) as transfers:
            bank = transfers.bank_list()[0]
            amount = Amount.untaxed(50000, currency="COP")
            token = transfers.create_token(TransferTokenRequest.colombia_pse(
                amount=amount, bank_id=bank.code, document_type="CC", document_number="123456789",
                callback_url="https://shop.example/return")).token
            answer = transfers.init(TransferInitRequest(token=token, amount=amount))
            assert isinstance(answer, ColombiaPse) and answer.redirect_url.startswith(server.base_url)
            assert transfers.status(token).state is TransferState.APPROVED  # settle_after 0: due at once
