"""The sandbox's HTTP layer driven with plain HTTP (Starlette's TestClient in process, httpx against a real
uvicorn server): one JSON error shape with a code for 404/405/413/415, CORS for browser front ends, and
the addresses the sandbox hands out (configured public URL, else the bound address, never the Host header)."""



from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from pasarela.sandbox import Sandbox, SandboxConfig
from pasarela.sandbox.bank_page import callback_location
from pasarela.sandbox.endpoint import MAX_BODY_BYTES
from support.local_server import LocalServer

PUBLIC, PRIVATE = "pk-http", "sk-http"
PUBLIC_KEY = {"Public-Merchant-Id": PUBLIC}
PRIVATE_KEY = {"Private-Merchant-Id": PRIVATE}
ECUADOR_TOKEN = {"currency": "USD", "amount": {"subtotalIva": 100, "subtotalIva0": 0, "iva": 15},
                 "documentType": "CI", "documentNumber": "123456789", "callbackUrl": "https://shop.example/return"}
AMOUNT = {"subtotalIva": 100, "subtotalIva0": 0, "iva": 15}


def _client(**changes: Any) -> Iterator[TestClient]:
    config = SandboxConfig(public_key=PUBLIC, private_key=PRIVATE, settle_after=None, **changes)
    with Sandbox(config) as sandbox:
        app: Any = sandbox.app
        with TestClient(app, raise_server_exceptions=False) as client:
            yield client


@pytest.fixture
def client() -> Iterator[TestClient]:
    yield from _client()


def _is_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert body["code"] == code and isinstance(body["message"], str) and body["message"]
    assert set(body) <= {"code", "message", "field"}
    return body


# --- one error shape ------------------------------------------------------------------------------


def test_unknown_path_is_a_json_404(client: TestClient) -> None:
    body = _is_error(client.get("/nope"), 404, "NOT_FOUND")
    assert "/openapi.json" in body["message"] and "nope" not in body["message"]
    _is_error(client.post("/card/v9/charges", json={}), 404, "NOT_FOUND")


def test_wrong_method_is_a_json_405_with_allow(client: TestClient) -> None:
    response = client.put("/transfer/v1/tokens", json={}, headers=PUBLIC_KEY)
    _is_error(response, 405, "METHOD_NOT_ALLOWED")
    assert response.headers["allow"] == "OPTIONS, POST"  # a browser's call: its CORS preflight too


def test_a_body_that_is_not_json_media_is_a_415(client: TestClient) -> None:
    for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
        headers = {**PUBLIC_KEY, **({"Content-Type": content_type} if content_type else {})}
        response = client.post("/transfer/v1/tokens", content=b'{"currency": "USD"}', headers=headers)
        _is_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")
    charset = client.post("/transfer/v1/tokens", content=httpx.Request("POST", "/", json=ECUADOR_TOKEN).content,
                          headers={**PUBLIC_KEY, "Content-Type": "application/json; charset=utf-8"})
    assert charset.status_code == 201


def test_a_body_over_the_limit_is_a_json_413(client: TestClient) -> None:
    padding = "x" * (MAX_BODY_BYTES + 1)
    response = client.post("/transfer/v1/tokens", json={"pad": padding}, headers=PUBLIC_KEY)
    _is_error(response, 413, "BODY_TOO_LARGE")


def test_the_key_is_checked_before_the_body(client: TestClient) -> None:
    _is_error(client.post("/transfer/v1/init", content=b"nope", headers={"Content-Type": "text/plain"}),
              401, "UNAUTHORIZED")


def test_an_unexpected_failure_is_a_json_500_without_details(client: TestClient,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from pasarela.sandbox import transfers

    def broken(*args: Any) -> Any:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(transfers, "status_record", broken)
    token = client.post("/transfer/v1/tokens", json=ECUADOR_TOKEN, headers=PUBLIC_KEY).json()["token"]
    client.post("/transfer/v1/init", json={"token": token, "amount": AMOUNT}, headers=PRIVATE_KEY)
    body = _is_error(client.get(f"/transfer/v1/status/{token}", headers=PRIVATE_KEY), 500, "SANDBOX_ERROR")
    assert "secret detail" not in body["message"]


# --- CORS ----------------------------------------------------------------------------------------


def test_a_preflight_from_any_origin_is_answered_by_default(client: TestClient) -> None:
    preflight = client.options("/transfer/v1/tokens", headers={
        "Origin": "https://shop.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "public-merchant-id, content-type"})
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] in ("*", "https://shop.example")
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert "public-merchant-id" in preflight.headers["access-control-allow-headers"].lower()
    token = client.post("/transfer/v1/tokens", json=ECUADOR_TOKEN,
                        headers={**PUBLIC_KEY, "Origin": "https://shop.example"})
    assert token.status_code == 201 and token.headers["access-control-allow-origin"] == "*"


def test_cors_origins_are_configurable() -> None:
    for client in _client(cors_origins=("https://shop.example",)):
        allowed = client.options("/card/v1/tokens", headers={
            "Origin": "https://shop.example", "Access-Control-Request-Method": "POST"})
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == "https://shop.example"
        refused = client.options("/card/v1/tokens", headers={
            "Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
        assert refused.status_code == 400 and "access-control-allow-origin" not in refused.headers
        simple = client.post("/card/v1/tokens", json={}, headers={**PUBLIC_KEY, "Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in simple.headers


# --- the addresses the sandbox hands out ---------------------------------------------------------


def _ecuador_redirect(base_url: str, host: str = "") -> str:
    headers = {"Host": host} if host else {}
    with httpx.Client(base_url=base_url, timeout=10) as http:
        token = http.post("/transfer/v1/tokens", json=ECUADOR_TOKEN, headers={**PUBLIC_KEY, **headers}).json()["token"]
        answer = http.post("/transfer/v1/init", json={"token": token, "amount": AMOUNT},
                           headers={**PRIVATE_KEY, **headers})
        assert answer.status_code == 201, answer.text
        url: str = answer.json()["redirectUrl"]
        assert url.endswith(f"/sandbox/pay/{token}")
        return url


def test_links_use_the_bound_address_never_the_host_header() -> None:
    config = SandboxConfig(public_key=PUBLIC, private_key=PRIVATE, settle_after=None)
    with Sandbox(config) as sandbox, LocalServer(sandbox.app) as server:  # type: ignore[arg-type]
        url = _ecuador_redirect(server.base_url, host="evil.example")
        assert url.startswith(f"{server.base_url}/sandbox/pay/")


def test_links_use_the_public_url_when_given() -> None:
    config = SandboxConfig(public_key=PUBLIC, private_key=PRIVATE, settle_after=None,
                           public_url="https://sandbox.shop.example/")
    with Sandbox(config) as sandbox, LocalServer(sandbox.app) as server:  # type: ignore[arg-type]
        url = _ecuador_redirect(server.base_url, host="evil.example")
        assert url.startswith("https://sandbox.shop.example/sandbox/pay/")


# --- the payer page refuses forged cross-site posts (issue 11) -----------------------------------


def _colombia_transfer(client: TestClient) -> str:
    amount = {"subtotalIva": 0, "subtotalIva0": 5000, "iva": 0}
    token: str = client.post("/transfer/v1/tokens", headers=PUBLIC_KEY, json={
        "currency": "COP", "amount": amount, "flow": {"processorName": "BRE-B", "type": "QR"}}).json()["token"]
    assert client.post("/transfer/v1/init", json={"token": token, "amount": amount},
                       headers=PRIVATE_KEY).status_code == 201
    return token


def _page_token(page: str) -> str:
    found = re.search(r'name="page_token" value="([^"]+)"', page)
    assert found is not None, page
    return found.group(1)


def _state(client: TestClient, token: str) -> str:
    status: str = client.get(f"/transfer/v1/status/{token}", headers=PRIVATE_KEY).json()["status"]
    return status


def test_a_forged_cross_site_post_cannot_pay(client: TestClient) -> None:
    token = _colombia_transfer(client)
    # What a page on another site can send: a form post with the action, from its own origin.
    forged = client.post(f"/sandbox/pay/{token}", data={"action": "pay"},
                         headers={"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
    assert forged.status_code == 403
    assert client.post(f"/sandbox/pay/{token}", data={"action": "pay", "page_token": "x" * 40}).status_code == 403
    assert _state(client, token) == "initializedTransaction"


def test_a_page_token_is_bound_to_its_transfer_and_refused_cross_site(client: TestClient) -> None:
    first, second = _colombia_transfer(client), _colombia_transfer(client)
    other_page = _page_token(client.get(f"/sandbox/pay/{second}").text)
    assert client.post(f"/sandbox/pay/{first}", data={"action": "pay", "page_token": other_page}).status_code == 403
    own = _page_token(client.get(f"/sandbox/pay/{first}").text)
    refused = client.post(f"/sandbox/pay/{first}", data={"action": "pay", "page_token": own},
                          headers={"Sec-Fetch-Site": "cross-site"})
    assert refused.status_code == 403 and _state(client, first) == "initializedTransaction"
    paid = client.post(f"/sandbox/pay/{first}", data={"action": "pay", "page_token": own},
                       headers={"Sec-Fetch-Site": "same-origin"})
    assert paid.status_code == 200 and _state(client, first) == "approvedTransaction"


def test_the_payer_page_cannot_be_framed(client: TestClient) -> None:
    page = client.get(f"/sandbox/pay/{_colombia_transfer(client)}")
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


def _ecuador_payer_page(client: TestClient, callback_url: str) -> str:
    token: str = client.post("/transfer/v1/tokens", headers=PUBLIC_KEY,
                             json={**ECUADOR_TOKEN, "callbackUrl": callback_url}).json()["token"]
    assert client.post("/transfer/v1/init", json={"token": token, "amount": AMOUNT},
                       headers=PRIVATE_KEY).status_code == 201
    return f"/sandbox/pay/{token}"


def test_the_payer_page_form_may_reach_its_own_callback_origin_and_nothing_else(client: TestClient) -> None:
    page = client.get(_ecuador_payer_page(client, "https://Shop.example:8443/return?order=1"))
    assert "; form-action 'self' https://shop.example:8443;" in page.headers["content-security-policy"]
    without_callback = client.get(f"/sandbox/pay/{_colombia_transfer(client)}")
    assert "; form-action 'self';" in without_callback.headers["content-security-policy"]


@pytest.mark.parametrize("callback_url", ["http://a;script-src*/back", "http://[::1]:8000/back?order=1",
                                          "http://shop_1.example/back"])
def test_a_callback_origin_the_policy_cannot_name_is_not_added_and_is_reached_by_a_link(
        client: TestClient, callback_url: str) -> None:
    path = _ecuador_payer_page(client, callback_url)
    page = client.get(path)
    assert "; form-action 'self';" in page.headers["content-security-policy"]
    paid = client.post(path, data={"action": "pay", "page_token": _page_token(page.text)}, follow_redirects=False)
    assert paid.status_code == 200, paid.text
    token = path.rsplit("/", 1)[1]
    assert f'<a href="{html.escape(callback_location(callback_url, token))}">Return to the merchant</a>' in paid.text


def test_a_405_allow_header_names_every_method_of_the_path_even_across_routes(client: TestClient) -> None:
    # GET and DELETE of /v1/charges/{ticketNumber} are two routes: Starlette alone names only the first
    answer = client.request("OPTIONS", "/v1/charges/0")
    assert answer.status_code == 405
    assert set(answer.headers["allow"].split(", ")) == {"GET", "HEAD", "DELETE"}
    assert answer.json()["code"] == "METHOD_NOT_ALLOWED"
