"""The sandbox as a workbench, over real HTTP (the sandbox and the merchant's webhook receiver each under uvicorn
on 127.0.0.1): the listings of transfers, charges and the access log (paginated, filtered, each answer held to
/openapi.json), one transfer whole, each webhook attempt's signed headers and body as the receiver got them, a
redelivery, and the access log's redaction. The bench itself is tests/support/workbench.py."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from pasarela import Terminal
from support.waiting import wait_for
from support.workbench import (
    BUSINESS_CODE,
    FLOW,
    PRIVATE,
    PUBLIC,
    SERIAL,
    Bench,
    bench,
    colombia_qr,
    conforms,
    mexico,
    untaxed,
)


@pytest.fixture
def workbench() -> Iterator[Bench]:
    with bench() as started:
        yield started


def test_transfers_are_listed_newest_first_in_pages_and_filtered(workbench: Bench) -> None:
    clabe = workbench.start(mexico())
    paid = workbench.start(colombia_qr(10000))       # spec 8: PAID at once
    pending = workbench.start(colombia_qr(25000))    # stays initialized
    first = workbench.get("/sandbox/v1/transfers", limit=2)
    conforms(first, "TransferPage")
    assert [item["token"] for item in first["items"]] == [pending, paid]
    second = workbench.get("/sandbox/v1/transfers", limit=2, cursor=first["nextCursor"])
    assert [item["token"] for item in second["items"]] == [clabe] and second["nextCursor"] is None
    assert second["items"][0]["flow"] == "clabe" and second["items"][0]["documentNumber"] == "123456789"
    for status in ("PAID", "approvedTransaction"):
        assert [item["token"] for item in workbench.get("/sandbox/v1/transfers", status=status)["items"]] == [paid]
    assert [item["token"] for item in workbench.get("/sandbox/v1/transfers", flow="qr", status="initialized")
            ["items"]] == [pending]
    assert [item["token"] for item in workbench.get("/sandbox/v1/transfers", country="MX")["items"]] == [clabe]


@pytest.mark.parametrize(("query", "field"), [
    ({"limit": "0"}, "limit"), ({"limit": "201"}, "limit"), ({"limit": "x"}, "limit"),
    ({"cursor": "abc"}, "cursor"), ({"cursor": "9" * 19}, "cursor"), ({"status": "paid"}, "status"),
    ({"country": "AR"}, "country"), ({"flow": "card"}, "flow"),
])
def test_a_bad_listing_query_is_a_400_naming_the_parameter(workbench: Bench, query: dict[str, str],
                                                           field: str) -> None:
    answer = workbench.http.get("/sandbox/v1/transfers", params=query, headers={"Private-Merchant-Id": PRIVATE})
    assert answer.status_code == 400 and answer.json()["field"] == field, answer.text
    assert workbench.http.get("/sandbox/v1/transfers").status_code == 401


def test_charges_are_listed_and_filtered_by_kind(workbench: Bench) -> None:
    card = {"card": {"name": "Ana Gomez", "number": "5100000000000008", "expiryMonth": "12", "expiryYear": "29",
                     "cvv": "123"}, "amount": {"subtotalIva": 0, "subtotalIva0": 500, "iva": 0, "currency": "COP"}}
    tokenless = workbench.post("/card/v2/charges", card)
    assert tokenless.status_code == 201, tokenless.text
    token = workbench.http.post("/card/v1/tokens", json={"card": card["card"], "totalAmount": 500, "currency": "COP"},
                                headers={"Public-Merchant-Id": PUBLIC}).json()["token"]
    charged = workbench.post("/card/v1/charges", {"token": token, "amount": card["amount"]})
    assert charged.status_code == 201
    listed = workbench.get("/sandbox/v1/charges")
    conforms(listed, "ChargePage")
    assert [item["ticketNumber"] for item in listed["items"]] == [charged.json()["ticketNumber"],
                                                                  tokenless.json()["ticketNumber"]]
    only = workbench.get("/sandbox/v1/charges", kind="tokenless")["items"]
    assert [item["kind"] for item in only] == ["tokenless"] and only[0]["transactionType"] == "SALE"


def test_the_access_log_records_each_request_redacted_and_names_the_terminals_auth_001_cause(
        workbench: Bench) -> None:
    card = {"name": "Ana Gomez", "number": "4000000000000002", "expiryMonth": "12", "expiryYear": "29",
            "cvv": "987"}
    workbench.http.post("/card/v1/tokens", json={"card": card, "totalAmount": 10, "currency": "COP"},
                        headers={"Public-Merchant-Id": PUBLIC})
    terminal = Terminal(business_code=BUSINESS_CODE, terminal_serial=SERIAL)
    sealed = terminal.seal({"amount": 5}, method="POST")
    late = terminal.seal({"amount": 5}, method="POST", timestamp=int(time.time()) - 3600)  # outside ±5 min
    assert workbench.http.post("/terminal/v1/sync/charge", content=sealed.body,
                               headers=sealed.headers).status_code == 200
    assert workbench.http.post("/terminal/v1/sync/charge", content=late.body, headers=late.headers).status_code == 401
    log = workbench.get("/sandbox/v1/requests")
    conforms(log, "RequestPage")
    items = log["items"]
    card_token = next(item for item in items if item["path"] == "/card/v1/tokens")
    assert card_token["key"] == "public" and card_token["status"] == 201
    assert card_token["body"]["card"]["number"] == "400000******0002"
    assert card_token["body"]["card"]["cvv"] == "[REDACTED]"
    assert card_token["token"] == card_token["response"]["token"]
    terminal_verdicts = [item["verdict"] for item in items if item["kind"] == "terminal"]
    assert terminal_verdicts == ["clock_skew", "valid"]  # newest first
    text = workbench.http.get("/sandbox/v1/requests", params={"limit": 200},
                              headers={"Private-Merchant-Id": PRIVATE}).text
    # the CVV as a JSON value: its three digits alone turn up by chance in the log's random hex (tokens, signatures)
    for secret in (PRIVATE, BUSINESS_CODE, '"987"', "4000000000000002"):
        assert secret not in text
    assert workbench.get("/sandbox/v1/requests", kind="terminal", limit=1)["items"][0]["verdict"] == "clock_skew"


def test_the_payer_pages_answer_and_its_form_token_are_not_recorded(workbench: Bench) -> None:
    token = workbench.start({"currency": "USD", "amount": untaxed(25), "documentType": "CI",
                             "documentNumber": "1710034065", "callbackUrl": "https://shop.example/back"})
    page = workbench.http.get(f"/sandbox/pay/{token}")
    assert page.status_code == 200 and 'name="page_token"' in page.text
    [visit] = workbench.get("/sandbox/v1/requests", kind="page")["items"]
    assert (visit["token"], visit["response"]) == (token, "(a page: not recorded)")
    everything = workbench.http.get("/sandbox/v1/requests", params={"limit": 200},
                                    headers={"Private-Merchant-Id": PRIVATE}).text
    assert "page_token" not in everything


def test_one_transfer_whole_history_requests_and_webhook_deliveries(workbench: Bench) -> None:
    workbench.receiver.reply("POST", "/hooks", 200)
    token = workbench.start({**colombia_qr(10000), "callbackUrl": "https://shop.example/back"})
    delivered = wait_for(lambda: [hook for hook in workbench.webhooks(token) if hook["delivered"]], "the webhook")
    detail = workbench.get(f"/sandbox/v1/transfers/{token}")
    conforms(detail, "TransferDetail")
    assert [(entry["state"], entry["cause"]) for entry in detail["history"]] == [("initialized", "init"),
                                                                                 ("PAID", "scenario")]
    assert detail["tokenRequest"]["flow"] == FLOW
    assert [(item["method"], item["path"]) for item in detail["requests"]] == [
        ("POST", "/transfer/v1/init"), ("POST", "/transfer/v1/tokens")]
    assert detail["requests"][0]["headers"]["private-merchant-id"] == "[REDACTED]"
    assert detail["webhooks"] == delivered
    missing = workbench.http.get("/sandbox/v1/transfers/" + "0" * 32, headers={"Private-Merchant-Id": PRIVATE})
    assert missing.status_code == 404


def test_each_delivery_shows_the_signed_headers_and_body_the_receiver_got_and_redelivery_sends_again(
        workbench: Bench) -> None:
    workbench.receiver.reply("POST", "/hooks", 500)
    workbench.receiver.reply("POST", "/hooks", 200)
    token = workbench.start(colombia_qr(12000))  # spec 8: rejected at once, with a webhook
    [failed] = wait_for(lambda: [hook for hook in workbench.webhooks(token) if hook["deliveries"]], "a delivery")
    assert not failed["delivered"] and failed["lastError"].startswith("HTTP 500")
    [attempt] = failed["deliveries"]
    received = workbench.receiver.requests[0]
    assert attempt["status"] == 500 and attempt["url"] == f"{workbench.receiver.base_url}/hooks"
    assert {name.lower(): value for name, value in attempt["headers"].items()} == {
        name: value for name, value in received.headers.items()
        if name not in ("host", "content-length", "accept-encoding", "connection")}
    assert failed["body"] == received.json() and failed["body"]["status"] == "declinedTransaction"
    answer = workbench.post(f"/sandbox/v1/webhooks/{failed['id']}/redeliver")
    assert answer.status_code == 202, answer.text
    conforms(answer.json(), "Webhook")
    [hook] = wait_for(lambda: [hook for hook in workbench.webhooks(token) if hook["delivered"]], "the redelivery")
    assert [item["status"] for item in hook["deliveries"]] == [500, 200]
    assert hook["deliveries"][1]["headers"]["X-Kushki-Signature"] == received_signature(workbench, 1)
    assert workbench.post("/sandbox/v1/webhooks/no-such-id/redeliver").status_code == 404


def received_signature(workbench: Bench, index: int) -> str:
    return workbench.receiver.requests[index].headers["x-kushki-signature"]


def test_webhook_url_is_the_url_or_null() -> None:
    with bench(webhook_url=None) as started:
        listed = started.get("/sandbox/v1/webhooks")
        conforms(listed, "WebhookList")
        assert listed["webhookUrl"] is None
    with bench() as started:
        assert started.get("/sandbox/v1/webhooks")["webhookUrl"] == f"{started.receiver.base_url}/hooks"
