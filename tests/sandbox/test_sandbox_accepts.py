"""Item 3 of issue 12 with plain HTTP: what real clients of the service send is accepted (``fullResponse: true``,
``userType "0"``, a Colombian tip in ``amount.extraTaxes``, a plain card tokenized in USD), while the rules
that are the service's own (network tokens in COP/CLP/PEN/MXN only, ICE in Ecuador only) still refuse."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from pasarela.sandbox import Sandbox, SandboxConfig

PUBLIC, PRIVATE = "pk-accepts", "sk-accepts"
PUBLIC_KEY = {"Public-Merchant-Id": PUBLIC}
PRIVATE_KEY = {"Private-Merchant-Id": PRIVATE}
FLOW = {"processorName": "BRE-B", "type": "QR"}
CARD = {"name": "Ana Gomez", "number": "5100000000000008", "expiryMonth": "12", "expiryYear": "29", "cvv": "123"}


@pytest.fixture
def client() -> Iterator[TestClient]:
    with Sandbox(SandboxConfig(public_key=PUBLIC, private_key=PRIVATE, settle_after=None)) as sandbox:
        app: Any = sandbox.app
        with TestClient(app) as client:
            yield client


def _qr_init(client: TestClient, full_response: Any) -> dict[str, Any]:
    amount = {"subtotalIva": 0, "subtotalIva0": 5000, "iva": 0}
    token = client.post("/transfer/v1/tokens", json={"currency": "COP", "amount": amount, "flow": FLOW},
                        headers=PUBLIC_KEY).json()["token"]
    answer = client.post("/transfer/v1/init", json={"token": token, "amount": amount, "fullResponse": full_response},
                         headers=PRIVATE_KEY)
    assert answer.status_code == 201, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_full_response_true_is_the_full_answer(client: TestClient) -> None:
    assert _qr_init(client, True)["details"]["status"] == "initializedTransaction"
    assert _qr_init(client, "v2")["details"]["merchantId"] == PUBLIC
    assert "details" not in _qr_init(client, False)


def _tokenless_charge(client: TestClient, full_response: Any) -> dict[str, Any]:
    amount = {"subtotalIva": 0, "subtotalIva0": 5000, "iva": 0, "currency": "COP"}
    charge = client.post("/card/v2/charges", headers=PRIVATE_KEY,
                         json={"card": CARD, "amount": amount, "fullResponse": full_response})
    assert charge.status_code == 201, charge.text
    body: dict[str, Any] = charge.json()
    return body


@pytest.mark.parametrize("full_response", [1, 0, 2.5, "1", "true", "v1", "", None, [], {"v": 2}])
def test_any_other_full_response_is_accepted_alike_by_charges_reversals_and_transfer_init(
        client: TestClient, full_response: Any) -> None:
    # Lenient as the service's charges, which take members they do not know: asks for nothing more.
    assert "details" not in _qr_init(client, full_response)
    charge = _tokenless_charge(client, full_response)
    assert set(charge) == set(_tokenless_charge(client, "v2"))
    reversed_ = client.request("DELETE", f"/card/v1/charges/{charge['ticketNumber']}", headers=PRIVATE_KEY,
                               json={"fullResponse": full_response})
    assert reversed_.status_code == 200, reversed_.text


@pytest.mark.parametrize("user_type", ["0", "1"])
def test_user_type_natural_or_legal_person(client: TestClient, user_type: str) -> None:
    created = client.post("/transfer/v1/tokens", headers=PUBLIC_KEY, json={
        "currency": "MXN", "amount": {"subtotalIva": 1000, "subtotalIva0": 0, "iva": 160}, "userType": user_type,
        "documentType": "CURP", "documentNumber": "123456789", "email": "payer@example.mx"})
    assert created.status_code == 201, created.text


def test_a_colombian_charge_with_a_tip_in_extra_taxes(client: TestClient) -> None:
    token = client.post("/card/v1/tokens", json={"card": CARD, "totalAmount": 11000, "currency": "COP"},
                        headers=PUBLIC_KEY).json()["token"]
    charge = client.post("/card/v1/charges", headers=PRIVATE_KEY, json={
        "token": token, "amount": {"subtotalIva": 0, "subtotalIva0": 10000, "iva": 0, "currency": "COP",
                                   "extraTaxes": {"propina": 1000}}})
    assert charge.status_code == 201, charge.text
    assert charge.json()["transactionStatus"] == "APPROVAL"


def test_ice_stays_ecuador_only(client: TestClient) -> None:
    token = client.post("/card/v1/tokens", json={"card": CARD, "totalAmount": 100, "currency": "COP"},
                        headers=PUBLIC_KEY).json()["token"]
    charge = client.post("/card/v1/charges", headers=PRIVATE_KEY, json={
        "token": token, "amount": {"subtotalIva": 0, "subtotalIva0": 100, "iva": 0, "ice": 5, "currency": "COP"}})
    assert charge.status_code == 400 and charge.json()["field"] == "amount.ice"


def test_a_plain_card_token_in_usd_and_its_charge(client: TestClient) -> None:
    created = client.post("/card/v1/tokens", json={"card": CARD, "totalAmount": 115, "currency": "USD"},
                          headers=PUBLIC_KEY)
    assert created.status_code == 201, created.text
    charge = client.post("/card/v1/charges", headers=PRIVATE_KEY, json={
        "token": created.json()["token"], "amount": {"subtotalIva": 100, "subtotalIva0": 0, "iva": 15,
                                                     "currency": "USD"}})
    assert charge.status_code == 201, charge.text


def test_a_network_token_in_usd_is_still_refused(client: TestClient) -> None:
    card = {**CARD, "number": "4000000000000002", "cryptogram": "AgAAAAAAAIR8CQrXcIhbQAAAAAA"}
    del card["cvv"]
    refused = client.post("/card/v1/tokens", headers=PUBLIC_KEY,
                          json={"card": card, "totalAmount": 115, "currency": "USD", "isNetworkToken": True})
    assert refused.status_code == 400 and refused.json()["field"] == "currency"
