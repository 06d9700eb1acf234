"""Item 1 of issue 12 with plain HTTP: Mexico and Ecuador transfers reach their outcome by the status query
alone (spec 8: "check the outcome with the status query"), by the documentNumber rule, with a webhook;
``settle_after=None`` keeps them for the payer page; moving the sandbox clock settles what is due; and the
status record and webhooks speak the service's vocabulary (item 2)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, Optional

import httpx
import pytest
from starlette.testclient import TestClient

from pasarela.sandbox import Sandbox, SandboxConfig
from support.clocks import ShiftedClock
from support.local_server import LocalServer

PUBLIC, PRIVATE = "pk-settle", "sk-settle"
PUBLIC_KEY = {"Public-Merchant-Id": PUBLIC}
PRIVATE_KEY = {"Private-Merchant-Id": PRIVATE}
DECLINED = "999999990"
MEXICO_AMOUNT = {"subtotalIva": 1000, "subtotalIva0": 0, "iva": 160}
ECUADOR_AMOUNT = {"subtotalIva": 100, "subtotalIva0": 0, "iva": 15}
DEADLINE = 15.0


def _mexico(document: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return ({"currency": "MXN", "amount": MEXICO_AMOUNT, "documentType": "CURP", "documentNumber": document,
             "email": "payer@example.mx", "userType": "1"}, MEXICO_AMOUNT)


def _ecuador(document: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return ({"currency": "USD", "amount": ECUADOR_AMOUNT, "documentType": "CI", "documentNumber": document,
             "callbackUrl": "https://shop.example/return"}, ECUADOR_AMOUNT)


def _start(client: Any, token_request: dict[str, Any], amount: dict[str, Any]) -> str:
    token: str = client.post("/transfer/v1/tokens", json=token_request, headers=PUBLIC_KEY).json()["token"]
    started = client.post("/transfer/v1/init", json={"token": token, "amount": amount}, headers=PRIVATE_KEY)
    assert started.status_code == 201, started.text
    return token


def _status(client: Any, token: str) -> dict[str, Any]:
    answer = client.get(f"/transfer/v1/status/{token}", headers=PRIVATE_KEY)
    assert answer.status_code == 200
    record: dict[str, Any] = answer.json()
    return record


def _webhook_statuses(client: Any, token: str) -> list[str]:
    hooks = client.get("/sandbox/v1/webhooks", headers=PRIVATE_KEY).json()["webhooks"]
    return [hook["status"] for hook in hooks if hook["token"] == token]


@pytest.fixture
def clock() -> ShiftedClock:
    return ShiftedClock()


def _in_process(clock: ShiftedClock, settle_after: Optional[float]) -> Iterator[TestClient]:
    config = SandboxConfig(public_key=PUBLIC, private_key=PRIVATE, settle_after=settle_after)
    with Sandbox(config, clock=clock) as sandbox:
        app: Any = sandbox.app
        with TestClient(app) as client:
            yield client


@pytest.mark.parametrize("country", [_mexico, _ecuador])
@pytest.mark.parametrize(("document", "status", "processor_state"), [
    ("123456789", "approvedTransaction", "OK"), (DECLINED, "declinedTransaction", "NOT_AUTHORIZED")])
def test_an_unpaid_transfer_settles_by_the_document_rule_seen_by_the_status_query_alone(
        clock: ShiftedClock, country: Any, document: str, status: str, processor_state: str) -> None:
    for client in _in_process(clock, settle_after=30.0):
        token = _start(client, *country(document))
        record = _status(client, token)
        assert record["status"] == "initializedTransaction" and "processorState" not in record
        clock.offset = 29.0
        assert _status(client, token)["status"] == "initializedTransaction"
        clock.offset = 30.0
        record = _status(client, token)
        assert (record["status"], record["processorState"]) == (status, processor_state)
        assert record["ticketNumber"].isdigit() and record["transactionReference"]
        assert record["amount"] == (MEXICO_AMOUNT if country is _mexico else ECUADOR_AMOUNT)
        assert record["completedAt"] >= record["created"]
        assert _webhook_statuses(client, token) == [status]  # queued with the change, exactly once
        assert _status(client, token)["status"] == status
        assert _webhook_statuses(client, token) == [status]


def test_moving_the_sandbox_clock_settles_what_is_due(clock: ShiftedClock) -> None:
    for client in _in_process(clock, settle_after=60.0):
        tokens = [_start(client, *_mexico("1")), _start(client, *_ecuador(DECLINED))]
        moved = client.post("/sandbox/v1/clock", json={"seconds": 60}, headers=PRIVATE_KEY)
        assert moved.status_code == 200
        # No status query yet: the webhooks are already queued.
        assert _webhook_statuses(client, tokens[0]) == ["approvedTransaction"]
        assert _webhook_statuses(client, tokens[1]) == ["declinedTransaction"]


def test_never_leaves_the_transfer_to_the_payer(clock: ShiftedClock) -> None:
    for client in _in_process(clock, settle_after=None):
        token = _start(client, *_mexico("1"))
        client.post("/sandbox/v1/clock", json={"seconds": 86_400}, headers=PRIVATE_KEY)
        assert _status(client, token)["status"] == "initializedTransaction"
        assert _webhook_statuses(client, token) == []
        paid = client.post("/sandbox/v1/payments", json={"token": token}, headers=PRIVATE_KEY)
        assert paid.status_code == 200 and paid.json()["status"] == "approvedTransaction"


def test_a_transfer_paid_or_cancelled_before_its_time_is_not_settled_again(clock: ShiftedClock) -> None:
    for client in _in_process(clock, settle_after=10.0):
        paid = _start(client, *_mexico("1"))
        declined_by_payer = client.post("/sandbox/v1/payments", json={"token": paid, "outcome": "declined"},
                                        headers=PRIVATE_KEY)
        assert declined_by_payer.status_code == 200
        cancelled = _start(client, *_ecuador("1"))
        assert client.patch(f"/transfer/v1/cancel/{cancelled}", headers=PRIVATE_KEY).status_code == 204
        clock.offset = 10.0
        assert _status(client, paid)["status"] == "declinedTransaction"
        assert _webhook_statuses(client, paid) == ["declinedTransaction"]
        assert _status(client, cancelled)["status"] == "initializedTransaction"
        assert _webhook_statuses(client, cancelled) == []


def test_colombia_qr_is_not_settled_by_time(clock: ShiftedClock) -> None:
    for client in _in_process(clock, settle_after=1.0):
        amount = {"subtotalIva": 0, "subtotalIva0": 5000, "iva": 0}
        token = _start(client, {"currency": "COP", "amount": amount, "flow": {"processorName": "BRE-B", "type": "QR"}},
                       amount)
        clock.offset = 60.0
        assert _status(client, token)["status"] == "initializedTransaction"
        clock.offset = 600.0
        record = _status(client, token)
        assert (record["status"], record["qrStatus"]) == ("expiredTransaction", "expired")


def test_a_client_that_only_polls_sees_the_outcome_over_real_http() -> None:
    """What the TypeScript client does: poll the status, read ``processorState || status``, never pay."""
    config = SandboxConfig(public_key=PUBLIC, private_key=PRIVATE, settle_after=0.2)
    with Sandbox(config) as sandbox, LocalServer(sandbox.app) as server, \
            httpx.Client(base_url=server.base_url, timeout=10) as client:  # type: ignore[arg-type]
        token = _start(client, *_mexico("1"))
        deadline = time.monotonic() + DEADLINE
        seen = "initializedTransaction"
        while seen == "initializedTransaction" and time.monotonic() < deadline:
            record = _status(client, token)
            seen = record.get("processorState") or record["status"]
            time.sleep(0.05)
        assert seen == "OK"
