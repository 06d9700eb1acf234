"""Issue 38, defect 8, with plain HTTP: every transfer init answer names its transaction
(``transactionReference``, the one its status record and webhook carry), and paying a transfer that can no
longer be paid is the same 409 whichever identifier the payer used (token, CLABE, wallet code), as
docs/sandbox.md says, never a 404 that reads as "no such transfer"."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import jsonschema
import pytest
from starlette.testclient import TestClient

from pasarela.sandbox import Sandbox, SandboxConfig
from pasarela.sandbox.openapi import document

PUBLIC, PRIVATE = "pk-answers", "sk-answers"
PUBLIC_KEY = {"Public-Merchant-Id": PUBLIC}
PRIVATE_KEY = {"Private-Merchant-Id": PRIVATE}
CALLBACK = "https://shop.example/return"
ECUADOR = {"currency": "USD", "amount": {"subtotalIva": 100, "subtotalIva0": 0, "iva": 15}, "documentType": "CI",
           "documentNumber": "1710034065", "callbackUrl": CALLBACK}
PSE = {"currency": "COP", "amount": {"subtotalIva": 0, "subtotalIva0": 50000, "iva": 0}, "bankId": "1022",
       "userType": "0", "documentType": "CC", "documentNumber": "1009283738", "callbackUrl": CALLBACK}
MEXICO = {"currency": "MXN", "amount": {"subtotalIva": 1000, "subtotalIva0": 0, "iva": 160}, "userType": "0",
          "documentType": "CURP", "documentNumber": "123456789", "email": "payer@example.mx"}


@contextmanager
def _client(ecuador_processor: str) -> Iterator[TestClient]:
    config = SandboxConfig(public_key=PUBLIC, private_key=PRIVATE, settle_after=None,
                           ecuador_processor=ecuador_processor)
    with Sandbox(config) as sandbox:
        app: Any = sandbox.app
        with TestClient(app) as client:
            yield client


@pytest.fixture
def bank() -> Iterator[TestClient]:
    with _client("bank") as client:
        yield client


@pytest.fixture
def wallet() -> Iterator[TestClient]:
    with _client("wallet") as client:
        yield client


def _init(client: TestClient, token_request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    token: str = client.post("/transfer/v1/tokens", json=token_request, headers=PUBLIC_KEY).json()["token"]
    answer = client.post("/transfer/v1/init", json={"token": token, "amount": token_request["amount"]},
                         headers=PRIVATE_KEY)
    assert answer.status_code == 201, answer.text
    body: dict[str, Any] = answer.json()
    return token, body


def _served_schema(name: str) -> dict[str, Any]:
    served = document()
    return {"$ref": f"#/components/schemas/{name}", "components": served["components"]}


@pytest.mark.parametrize(("processor", "token_request", "schema"), [
    ("bank", ECUADOR, "EcuadorRedirect"), ("wallet", ECUADOR, "EcuadorWallet"), ("bank", PSE, "ColombiaPse"),
    ("bank", MEXICO, "MexicoClabe"),
], ids=["ecuador_bank", "ecuador_wallet", "colombia_pse", "mexico"])
def test_every_init_answer_names_its_transaction(processor: str, token_request: dict[str, Any], schema: str) -> None:
    with _client(processor) as client:
        token, answer = _init(client, token_request)
        status = client.get(f"/transfer/v1/status/{token}", headers=PRIVATE_KEY).json()
        assert answer["transactionReference"] == status["transactionReference"]
        jsonschema.validate(answer, _served_schema(schema))  # the answer is the one /openapi.json describes


def _pay(client: TestClient, **identifier: str) -> Any:
    return client.post("/sandbox/v1/payments", json=identifier, headers=PRIVATE_KEY)


def test_paying_a_final_wallet_transfer_by_its_code_is_409_as_by_its_token(wallet: TestClient) -> None:
    token, answer = _init(wallet, ECUADOR)
    assert _pay(wallet, referenceCode=answer["referenceCode"]).status_code == 200
    by_code, by_token = _pay(wallet, referenceCode=answer["referenceCode"]), _pay(wallet, token=token)
    assert (by_code.status_code, by_code.json()["code"]) == (409, "TRANSACTION_FINAL")
    assert by_code.json() == by_token.json()


def test_paying_a_cancelled_wallet_transfer_by_its_code_is_409(wallet: TestClient) -> None:
    token, answer = _init(wallet, ECUADOR)
    assert wallet.patch(f"/transfer/v1/cancel/{token}", headers=PRIVATE_KEY).status_code == 204
    refused = _pay(wallet, referenceCode=answer["referenceCode"])
    assert (refused.status_code, refused.json()["code"]) == (409, "PAYMENT_CANCELLED")


def test_paying_a_final_mexico_transfer_by_its_clabe_is_409(bank: TestClient) -> None:
    _, answer = _init(bank, MEXICO)
    assert _pay(bank, clabe=answer["referenceProcessor"]).status_code == 200
    refused = _pay(bank, clabe=answer["referenceProcessor"])
    assert (refused.status_code, refused.json()["code"]) == (409, "TRANSACTION_FINAL")


def test_a_clabe_no_transfer_was_given_is_still_404(bank: TestClient) -> None:
    _init(bank, MEXICO)
    unknown = _pay(bank, clabe="0" * 18)
    assert (unknown.status_code, unknown.json()["code"]) == (404, "NOT_FOUND")
