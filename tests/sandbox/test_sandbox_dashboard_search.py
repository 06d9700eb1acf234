"""Issue 56 item 6, over HTTP: the dashboard's search (token, transaction reference, ticket number, document number;
one match leads to its page) and the access log's method and token filters.
tests/browser/test_browser_dashboard_search.py does the same in chromium, with the pause toggle and the webhook
URL form."""

from __future__ import annotations

import httpx

from pasarela.cards import Card, CardTokenRequest, ChargeRequest
from pasarela.testing import LiveSandbox
from pasarela.transfers import Amount, TransferInitRequest, TransferTokenRequest


def _mexico(live: LiveSandbox, document: str) -> dict[str, str]:
    amount = Amount.untaxed(1000, currency="MXN")
    token = live.transfers.create_token(TransferTokenRequest.mexico(amount=amount, document_number=document,
                                                                    email="payer@example.mx")).token
    started = live.transfers.init(TransferInitRequest(token=token, amount=amount))
    return {"token": token, "reference": str(started.transaction_reference), "ticket": started.raw["ticketNumber"]}


def test_one_match_leads_to_the_transfer(live: LiveSandbox, live_http: httpx.Client) -> None:
    transfer = _mexico(live, "123456789")
    _mexico(live, "987654321")
    for text in (transfer["token"], transfer["token"][:8], transfer["reference"], f"  {transfer['ticket']} "):
        found = live_http.get("/sandbox/search", params={"q": text})
        assert found.status_code == 303, text
        assert found.headers["location"] == f"/sandbox/transfers/{transfer['token']}"


def test_a_document_number_lists_every_transfer_of_the_payer(live: LiveSandbox, live_http: httpx.Client) -> None:
    first, second = _mexico(live, "55501"), _mexico(live, "55501")
    other = _mexico(live, "55502")
    page = live_http.get("/sandbox/search", params={"q": "55501"})
    assert page.status_code == 200
    assert first["token"] in page.text and second["token"] in page.text and other["token"] not in page.text


def test_a_charge_by_its_ticket_number(live: LiveSandbox, live_http: httpx.Client) -> None:
    card = Card(name="Ana Gomez", number="4000000000000002", expiry_month="12", expiry_year="30", cvv="123")
    token = live.cards.create_token(CardTokenRequest(card=card, total_amount=100, currency="COP")).token
    charged = live.cards.charge(ChargeRequest(token=token, amount=Amount.untaxed(100, currency="COP", in_amount=True)))
    page = live_http.get("/sandbox/search", params={"q": charged.ticket_number})
    assert page.status_code == 200 and charged.ticket_number in page.text and "no transfer matches" in page.text


def test_no_match_and_wildcards_match_nothing(live: LiveSandbox, live_http: httpx.Client) -> None:
    _mexico(live, "123")
    for text in ("%", "_", "nothing-like-it", "\\"):
        page = live_http.get("/sandbox/search", params={"q": text})
        assert page.status_code == 200 and "no transfer matches" in page.text, text
    assert "Search by token" in live_http.get("/sandbox/search").text
    assert live_http.get("/sandbox/search", params={"q": "x" * 201}).status_code == 400


def test_the_search_box_is_on_every_page(live_http: httpx.Client) -> None:
    for path in ("/sandbox/", "/sandbox/webhooks", "/sandbox/requests", "/sandbox/certification"):
        assert 'action="/sandbox/search"' in live_http.get(path).text and 'id="pause"' in live_http.get(path).text


def test_the_access_log_filters_by_method_and_token(live: LiveSandbox, live_http: httpx.Client) -> None:
    transfer = _mexico(live, "777")
    live.transfers.status(transfer["token"])
    by_method = live_http.get("/sandbox/requests", params={"method": "GET"}).text
    assert f"/transfer/v1/status/{transfer['token']}" in by_method and "/transfer/v1/init" not in by_method
    by_token = live_http.get("/sandbox/requests", params={"token": transfer["token"], "method": "POST"}).text
    assert "/transfer/v1/init" in by_token and "/transfer/v1/tokens" in by_token and "/status/" not in by_token
    assert '<option value="POST" selected>' in by_token and f'value="{transfer["token"]}"' in by_token
    assert live_http.get("/sandbox/requests", params={"method": "BREW"}).status_code == 400
    assert live_http.get("/sandbox/requests", params={"token": "t" * 201}).status_code == 400
