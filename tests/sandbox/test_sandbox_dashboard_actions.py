"""The dashboard's actions from the server's side (issue 53, item 3; the browser's side is
tests/browser/test_browser_foreign_origin.py): a post is taken only from the sandbox's own origin (``Origin`` one of its
addresses, ``Sec-Fetch-Site`` same-origin when sent: another port of 127.0.0.1 is same-site, not same-origin)
and with a page token good once; a token replayed, or brought by a post the origin check refused, changes
nothing. The payer page's tokens are good once too. The dashboard and the listings send no CORS header to any
origin, and answer no preflight; the token routes still do."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from pasarela.sandbox import Sandbox, SandboxConfig

PUBLIC, PRIVATE = "pk-actions", "sk-actions"
OWN = "http://localhost:8790"
SAME_ORIGIN = {"Origin": OWN, "Sec-Fetch-Site": "same-origin"}
MEXICO = {"currency": "MXN", "amount": {"subtotalIva": 100, "subtotalIva0": 0, "iva": 16}, "userType": "1",
          "documentType": "CURP", "documentNumber": "123456789", "email": "a@example.com",
          "paymentDescription": "order"}


@pytest.fixture
def client() -> Iterator[TestClient]:
    with Sandbox(SandboxConfig(public_key=PUBLIC, private_key=PRIVATE, settle_after=None)) as sandbox:
        app: Any = sandbox.app
        with TestClient(app, base_url=OWN, raise_server_exceptions=False) as http:  # Host localhost:8790: its own
            yield http


def _pending(client: TestClient) -> str:
    token: str = client.post("/transfer/v1/tokens", json=MEXICO, headers={"Public-Merchant-Id": PUBLIC}).json()["token"]
    assert client.post("/transfer/v1/init", json={"token": token, "amount": MEXICO["amount"]},
                       headers={"Private-Merchant-Id": PRIVATE}).status_code == 201
    return token


def _page_token(client: TestClient, page: str) -> str:
    found = re.search(r'name="page_token" value="([^"]+)"', client.get(page).text)
    assert found is not None
    return html.unescape(found.group(1))


def _approve(client: TestClient, token: str, page_token: str, headers: dict[str, str]) -> httpx.Response:
    return client.post(f"/sandbox/actions/transfers/{token}/approve",
                       data={"page_token": page_token, "back": "/sandbox/"}, headers=headers, follow_redirects=False)


def _status(client: TestClient, token: str) -> str:
    status: str = client.get(f"/transfer/v1/status/{token}", headers={"Private-Merchant-Id": PRIVATE}).json()["status"]
    return status


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.test", "Sec-Fetch-Site": "cross-site"},
    {"Origin": "http://127.0.0.1:9999", "Sec-Fetch-Site": "same-site"},  # another port of the same host
    {"Origin": "http://localhost:8791"},  # an old browser: no Sec-Fetch-Site
    {"Origin": "null", "Sec-Fetch-Site": "cross-site"},  # a sandboxed frame, a data: page
    {"Origin": OWN, "Sec-Fetch-Site": "same-site"},  # forged Origin, the browser's own word on the fetch
    {"Sec-Fetch-Site": "cross-site"},
], ids=["cross_site", "same_site_other_port", "other_origin_no_fetch_metadata", "null_origin",
        "same_site_fetch", "cross_site_no_origin"])
def test_an_action_from_another_origin_is_refused_and_leaves_its_token_unused(
        client: TestClient, headers: dict[str, str]) -> None:
    token = _pending(client)
    page_token = _page_token(client, f"/sandbox/transfers/{token}")
    refused = _approve(client, token, page_token, headers)
    assert refused.status_code == 403 and "Action refused" in refused.text
    assert _status(client, token) == "initializedTransaction"
    assert _approve(client, token, page_token, SAME_ORIGIN).status_code == 303  # the page itself still can
    assert _status(client, token) == "approvedTransaction"


def test_a_page_token_is_good_once(client: TestClient) -> None:
    first, second = _pending(client), _pending(client)
    page_token = _page_token(client, f"/sandbox/transfers/{first}")
    assert _approve(client, first, page_token, SAME_ORIGIN).status_code == 303
    replayed = _approve(client, second, page_token, SAME_ORIGIN)
    assert replayed.status_code == 403 and "posted already" in replayed.text
    assert _status(client, second) == "initializedTransaction"
    clock = client.post("/sandbox/actions/clock", data={"page_token": page_token, "seconds": "60"}, headers=SAME_ORIGIN)
    assert clock.status_code == 403
    assert _approve(client, second, _page_token(client, "/sandbox/"), {}).status_code == 303  # curl: no Origin


def test_a_payer_page_token_is_good_once(client: TestClient) -> None:
    token = _pending(client)
    page_token = _page_token(client, f"/sandbox/pay/{token}")
    declined = client.post(f"/sandbox/pay/{token}", data={"action": "decline", "page_token": page_token})
    assert declined.status_code == 200 and _status(client, token) == "declinedTransaction"
    again = client.post(f"/sandbox/pay/{token}", data={"action": "pay", "page_token": page_token})
    assert again.status_code == 403 and "posted already" in again.text


@pytest.mark.parametrize("path", ["/sandbox/", "/sandbox/changes", "/sandbox/requests", "/sandbox/v1/transfers",
                                  "/sandbox/v1/requests", "/sandbox/v1/certification", "/transfer/v1/status/x",
                                  "/openapi.json", "/sandbox/actions/clock"])
def test_the_dashboard_and_the_listings_send_no_cors_header(client: TestClient, path: str) -> None:
    preflight = client.options(path, headers={"Origin": "http://evil.test", "Access-Control-Request-Method": "GET",
                                              "Access-Control-Request-Headers": "private-merchant-id"})
    simple = client.get(path, headers={"Origin": "http://evil.test", "Private-Merchant-Id": PRIVATE})
    for answer in (preflight, simple):
        assert not [name for name in answer.headers if name.lower().startswith("access-control-")], answer.headers
    assert preflight.status_code == 405


@pytest.mark.parametrize(("path", "method"), [("/transfer/v1/tokens", "POST"), ("/card/v1/tokens", "POST"),
                                              ("/transfer/v1/bankList", "GET")])
def test_the_calls_the_payers_browser_makes_still_answer_cors(client: TestClient, path: str, method: str) -> None:
    preflight = client.options(path, headers={"Origin": "https://shop.example", "Access-Control-Request-Method": method,
                                              "Access-Control-Request-Headers": "public-merchant-id, content-type"})
    assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == "*"
    assert preflight.headers["access-control-allow-methods"] == method
    other = client.options(path, headers={"Origin": "https://shop.example", "Access-Control-Request-Method": "DELETE"})
    assert other.status_code == 400  # only the route's own method


@pytest.mark.parametrize("path", ["/sandbox/v1/transfers", "/sandbox/v1/requests", "/sandbox/v1/certification",
                                  "/sandbox/", "/sandbox/pay/" + "0" * 32])
def test_the_sandbox_own_routes_refuse_a_rebound_host_name(client: TestClient, path: str) -> None:
    """A site rebinding its DNS name to 127.0.0.1 is same-origin with what it fetches there: CORS cannot stop it,
    the Host it sends does (the documented default key would open every listing to it)."""
    rebound = client.get(path, headers={"Host": "rebound.test:8790", "Private-Merchant-Id": PRIVATE})
    assert rebound.status_code == 421 and rebound.json()["code"] == "MISDIRECTED_REQUEST"
    own = client.get(path, headers={"Private-Merchant-Id": PRIVATE})
    assert own.status_code in (200, 404)
    for host in ("localhost:8790", "127.0.0.1:8790"):
        assert client.get(path, headers={"Host": host, "Private-Merchant-Id": PRIVATE}).status_code != 421
