"""The merchant's front end offline: pages rendered by ``pasarela.transfers.checkout`` against the sandbox's CDN
stand-ins (``render(sandbox.cdn_url)``), in a real browser (Debian's chromium through Selenium).

The merchant is another site, ``merchant.test`` (a local server the browser reaches by that name): its checkout
page loads the stand-in script from the sandbox, the payer fills the hosted form, the script obtains the
transfer token from the sandbox in the browser (a cross-origin call with the public key) and posts it to the
merchant's form action; the merchant's back end starts the transfer (init, private key) and sends the payer to
the bank, who pays; the payer comes back to the callbackUrl and the transfer is PAID. The client library's
``requestTransferToken`` gives its callback the token, or the error shape of spec section 7.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from pasarela.sandbox import Sandbox, SandboxConfig
from pasarela.transfers import Amount, CheckoutV1, CheckoutV2, ClientLibraryConfig
from support.browser import Browser
from support.local_server import LocalServer

PUBLIC, PRIVATE = "pk-checkout", "sk-checkout"
TOTAL = 25


@dataclass
class Merchant:
    """The merchant's site: checkout pages (v2, v1, the client library), the form action (``/pay``, the back end
    starting the transfer) and the page the payer comes back to."""

    sandbox_url: str = ""
    cdn_url: str = ""
    port: int = 0
    tokens: list[str] = field(default_factory=list)
    """The kushkiToken of each post to /pay, and what else the form carried."""
    posted: list[dict[str, str]] = field(default_factory=list)

    def page(self, title: str, body: str) -> HTMLResponse:
        return HTMLResponse(f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
                            f"</head><body><h1>{html.escape(title)}</h1>{body}</body></html>")

    async def v2(self, request: Request) -> HTMLResponse:
        checkout = CheckoutV2(kform_id="kf-sandbox", form="pay-form", public_merchant_id=PUBLIC,
                              amount=Amount.untaxed(TOTAL))
        return self.page("Shop: checkout v2", checkout.render(self.cdn_url, action="/pay"))

    async def v1(self, request: Request) -> HTMLResponse:
        checkout = CheckoutV1(form="pay-form", merchant_id=PUBLIC, amount=Amount.untaxed(TOTAL), currency="USD",
                              callback_url=f"http://merchant.test:{self.port}/back?order=v1", in_test_environment=True)
        return self.page("Shop: checkout v1", checkout.render(self.cdn_url, action="/pay"))

    async def library(self, request: Request) -> HTMLResponse:
        """The client library, and the merchant's own code: a button asking for a token, then posting it."""
        body = {"currency": "USD", "amount": Amount.untaxed(TOTAL).to_wire(with_currency=False), "userType": "0",
                "documentType": "CI", "documentNumber": "1710034065", "email": "payer@example.com",
                "paymentDescription": "order lib", "callbackUrl": f"http://merchant.test:{self.port}/back?order=lib"}
        snippet = ClientLibraryConfig(merchant_id=PUBLIC, in_test_environment=True).render(self.cdn_url)
        own = (f'<form id="pay" method="post" action="/pay"><input type="hidden" name="kushkiToken"></form>'
               f'<button id="buy" data-body="{html.escape(json.dumps(body))}">Buy</button><p id="result"></p>'
               "<script>document.getElementById('buy').addEventListener('click', function () {"
               " var button = this; button.disabled = true;"
               " kushki.requestTransferToken(JSON.parse(button.dataset.body), function (answer) {"
               "  if (answer.token) { var form = document.getElementById('pay');"
               "   form.kushkiToken.value = answer.token; form.submit(); }"
               "  else { document.getElementById('result').textContent = answer.code + ': ' + answer.message;"
               "   button.disabled = false; } }); });</script>")
        return self.page("Shop: client library", snippet + own)

    async def pay(self, request: Request) -> Response:
        """The back end: init with the token the front end posted, then the payer goes to the bank."""
        form = {name: values[0] for name, values in parse_qs((await request.body()).decode()).items()}
        self.posted.append(form)
        answer = httpx.post(f"{self.sandbox_url}/transfer/v1/init", headers={"Private-Merchant-Id": PRIVATE},
                            json={"token": form["kushkiToken"], "amount": Amount.untaxed(TOTAL).to_wire(
                                with_currency=False)}, timeout=10)
        if answer.status_code != 201:
            return self.page("Init refused", f"<p>{html.escape(answer.text)}</p>")
        return RedirectResponse(answer.json()["redirectUrl"], status_code=303)

    async def back(self, request: Request) -> HTMLResponse:
        return self.page("Back at the shop", f"<p>token={html.escape(request.query_params.get('token', ''))}</p>")

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v2", self.v2), Route("/v1", self.v1), Route("/library", self.library),
                                 Route("/pay", self.pay, methods=["POST"]), Route("/back", self.back),
                                 Route("/favicon.ico", lambda request: Response())])


class Later:
    """An ASGI app set once the server's address is known (the sandbox's public_url is that address)."""

    app: Any = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


@dataclass
class Shop:
    merchant: Merchant
    sandbox: Sandbox

    def url(self, path: str) -> str:
        return f"http://merchant.test:{self.merchant.port}{path}"

    def status(self, token: str) -> dict[str, Any]:
        answer = httpx.get(f"{self.merchant.sandbox_url}/transfer/v1/status/{token}",
                           headers={"Private-Merchant-Id": PRIVATE}, timeout=10)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())


@pytest.fixture(scope="module")
def shop() -> Iterator[Shop]:
    merchant, later = Merchant(), Later()
    with ExitStack() as stack:
        served = stack.enter_context(LocalServer(later, max_lifetime=300))
        sandbox = stack.enter_context(Sandbox(SandboxConfig(public_key=PUBLIC, private_key=PRIVATE,
                                                            public_url=served.base_url, settle_after=None)))
        later.app = sandbox.app
        merchant.sandbox_url, merchant.cdn_url = served.base_url, sandbox.cdn_url
        merchant.port = stack.enter_context(LocalServer(merchant.app(), max_lifetime=300)).port
        yield Shop(merchant, sandbox)


def _fill_the_hosted_form(browser: Browser, document_number: str) -> None:
    browser.driver.find_element(By.NAME, "kushki-document-number").send_keys(document_number)
    browser.driver.find_element(By.NAME, "kushki-email").send_keys("payer@example.com")


def _pays_at_the_bank(browser: Browser, shop: Shop) -> str:
    """The payer is on the sandbox's bank portal for the token the merchant received: pays, comes back."""
    token = shop.merchant.posted[-1]["kushkiToken"]
    assert browser.driver.title == "Banco Sandbox: virtual portal", browser.text()
    assert urlsplit(browser.driver.current_url).path == f"/sandbox/pay/{token}"
    browser.click("Pay")
    landed = urlsplit(browser.driver.current_url)
    assert landed.hostname == "merchant.test" and parse_qs(landed.query)["token"] == [token]
    assert shop.status(token)["transactionStatus"] == "PAID"
    return token


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_a_hosted_checkout_obtains_a_token_in_the_browser_and_the_transfer_is_paid(
        browser: Browser, shop: Shop, version: str) -> None:
    browser.driver.get(shop.url(f"/{version}"))
    browser.wait_loaded()
    assert browser.driver.find_element(By.CSS_SELECTOR, "#pay-form fieldset").get_attribute("data-version") == \
        version[1]
    _fill_the_hosted_form(browser, "1710034065")
    browser.screenshot(f"checkout_{version}_filled")

    browser.click("Pay by transfer")

    posted = shop.merchant.posted[-1]
    assert posted["kushkiPaymentMethod"] == "transfer" and len(posted["kushkiToken"]) == 32
    token = _pays_at_the_bank(browser, shop)
    if version == "v1":  # v1's callback_url; v2's is the checkout page (its console setting, here)
        assert parse_qs(urlsplit(browser.driver.current_url).query)["order"] == ["v1"]
    browser.screenshot(f"checkout_{version}_back_at_the_shop")
    log = httpx.get(f"{shop.merchant.sandbox_url}/sandbox/v1/requests", params={"token": token},
                    headers={"Private-Merchant-Id": PRIVATE}, timeout=10).json()["items"]
    created = next(item for item in log if item["path"] == "/transfer/v1/tokens")
    assert created["headers"]["origin"] == f"http://merchant.test:{shop.merchant.port}"  # made by the browser
    assert created["body"]["documentNumber"] == "1710034065" and created["key"] == "public"


def test_the_cdn_index_says_what_is_there_and_links_each_stand_in(browser: Browser, shop: Shop) -> None:
    """``/cdn/``, the start-up banner's link (issue 58: it was a JSON 404)."""
    browser.driver.get(shop.merchant.cdn_url + "/")
    browser.wait_for_title("Sandbox CDN stand-ins")
    text = browser.text()
    assert f"CheckoutV2(...).render('{shop.merchant.cdn_url}', action=...)" in text
    browser.screenshot("cdn_index")
    for name in ("kushki.min.js", "kushki-checkout.js"):
        browser.driver.get(shop.merchant.cdn_url + "/")
        browser.wait_for_title("Sandbox CDN stand-ins")
        browser.driver.find_element(By.LINK_TEXT, name).click()
        WebDriverWait(browser.driver, 10).until(lambda driver, name=name: driver.current_url.endswith(name))
        assert "sandbox" in browser.text().lower()  # the script itself, as text
    assert not [line for line in browser.console() if "SEVERE" in line]


def test_the_hosted_checkout_shows_a_refusal_and_lets_the_payer_try_again(browser: Browser, shop: Shop) -> None:
    browser.driver.get(shop.url("/v2"))
    browser.wait_loaded()
    browser.driver.find_element(By.NAME, "kushki-email").send_keys("payer@example.com")
    browser.driver.find_element(By.NAME, "kushki-document-number").send_keys(" ")  # blank: refused by the sandbox
    posts = len(shop.merchant.posted)
    browser.driver.find_element(By.XPATH, "//button[normalize-space()='Pay by transfer']").click()
    alert = browser.driver.find_element(By.CSS_SELECTOR, "[role=alert]")
    WebDriverWait(browser.driver, 10).until(lambda driver: alert.text)
    # in the form's words (issue 58: "documentNumber: must match \\S (INVALID_REQUEST)")
    assert alert.text == "Document number: must not be blank"
    assert alert.get_attribute("data-code") == "INVALID_REQUEST"
    assert browser.driver.find_element(By.XPATH, "//button[normalize-space()='Pay by transfer']").is_enabled()
    assert len(shop.merchant.posted) == posts  # nothing reached the merchant
    browser.screenshot("checkout_v2_refused")


def test_the_client_library_gives_the_token_to_its_callback_and_the_transfer_is_paid(
        browser: Browser, shop: Shop) -> None:
    browser.driver.get(shop.url("/library"))
    browser.wait_loaded()
    browser.click("Buy")
    token = _pays_at_the_bank(browser, shop)
    assert parse_qs(urlsplit(browser.driver.current_url).query)["order"] == ["lib"]
    assert shop.merchant.posted[-1]["kushkiToken"] == token
    browser.screenshot("client_library_back_at_the_shop")


def test_a_refused_token_request_gives_the_callback_code_error_and_message(browser: Browser, shop: Shop) -> None:
    browser.driver.get(shop.url("/library"))
    browser.wait_loaded()
    answer = browser.driver.execute_async_script(
        "var done = arguments[arguments.length - 1];"
        "kushki.requestTransferToken({currency: 'EUR', amount: {subtotalIva: 0, subtotalIva0: 5, iva: 0}}, done);")
    assert answer == {"code": "INVALID_REQUEST", "error": "invalid currency",
                      "message": "currency: must be one of MXN, USD, COP"}
    wrong_key = browser.driver.execute_async_script(
        "var done = arguments[arguments.length - 1];"
        "new Kushki({merchantId: 'not-the-key', inTestEnvironment: true}).requestTransferToken("
        " {currency: 'USD', amount: {subtotalIva: 0, subtotalIva0: 5, iva: 0}}, done);")
    assert set(wrong_key) == {"code", "error", "message"} and wrong_key["code"] == "UNAUTHORIZED"
    assert "not-the-key" not in wrong_key["message"]


def test_the_cdn_url_is_the_sandboxs_and_plain_http_only_on_this_machine(shop: Shop) -> None:
    assert shop.sandbox.cdn_url == f"{shop.merchant.sandbox_url}/cdn"
    tags = ClientLibraryConfig(merchant_id=PUBLIC, in_test_environment=True).render(shop.sandbox.cdn_url)
    assert f'<script src="{shop.merchant.sandbox_url}/cdn/kushki.min.js"></script>' in tags
    script = httpx.get(f"{shop.merchant.sandbox_url}/cdn/kushki.min.js", timeout=10)
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    with pytest.raises(ValueError, match="cdn_url"):
        ClientLibraryConfig(merchant_id=PUBLIC, in_test_environment=True).render("http://cdn.example/cdn")
