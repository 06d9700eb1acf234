"""The pages the sandbox serves, in a real browser (Debian's chromium through Selenium: tests/support/browser.py).

The payer page (``GET /sandbox/pay/{token}``: the Ecuador bank portal, the PSE bank, the page a Colombia
QR points to) is the only HTML the sandbox serves. Here the sandbox runs under uvicorn on 127.0.0.1 and
the merchant is another site, ``merchant.test`` (a second local server the browser reaches by that name):
paying and declining must bring the payer back to the merchant's ``callbackUrl`` with ``?token=`` (spec 3,
rule 2), which only a browser that enforces the page's own Content-Security-Policy can show; a page of a
third site, ``attacker.test``, that posts to the payer page's form must be refused. Each test leaves a
screenshot (tests/conftest.py's ``browser`` fixture).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from selenium.webdriver.common.by import By
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from pasarela.sandbox import Sandbox, SandboxConfig
from support.browser import Browser
from support.local_server import LocalServer

PRIVATE = "sk-browser-test"
PUBLIC = "pk-browser-test"


@dataclass
class Merchant:
    """The merchant's site: the page the payer comes back to (``/back``), a checkout page showing a QR, and,
    reached as ``attacker.test``, a page that posts to the payer page's form."""

    port: int = 0
    returns: list[dict[str, list[str]]] = field(default_factory=list)
    """The query of each GET the payer made to ``/back``."""
    qr: str = ""
    """The ``qr`` of the last Colombia init answer, shown by ``/checkout``."""

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}{path}"

    async def back(self, request: Request) -> HTMLResponse:
        self.returns.append(parse_qs(request.url.query))
        token = html.escape(request.query_params.get("token", "(none)"))
        return HTMLResponse(f"<!doctype html><title>Merchant</title><h1>Back at the merchant</h1><p>token={token}</p>")

    async def checkout(self, request: Request) -> HTMLResponse:
        return HTMLResponse(f'<!doctype html><title>Checkout</title><h1>Scan to pay</h1><img id="qr" src="{self.qr}">')

    async def attack(self, request: Request) -> HTMLResponse:
        """A form aimed at the payer page, sent as soon as the page loads (the payer only had to visit)."""
        target = html.escape(request.query_params["target"])
        fields = "".join(f'<input type="hidden" name="{html.escape(name)}" value="{html.escape(value)}">'
                         for name, values in parse_qs(request.url.query).items() if name != "target"
                         for value in values)
        return HTMLResponse(f'<!doctype html><title>Win a prize</title><body onload="document.forms[0].submit()">'
                            f'<form method="post" action="{target}">{fields}</form></body>')

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/back", self.back), Route("/checkout", self.checkout),
                                 Route("/attack", self.attack), Route("/favicon.ico", lambda request: Response())])


@dataclass
class Site:
    sandbox_url: str
    merchant: Merchant
    http: httpx.Client

    def start_transfer(self, token_request: dict[str, Any], **init: Any) -> tuple[str, dict[str, Any]]:
        token = self.http.post("/transfer/v1/tokens", json=token_request, headers={"Public-Merchant-Id": PUBLIC})
        assert token.status_code == 201, token.text
        value = token.json()["token"]
        answer = self.http.post("/transfer/v1/init", json={"token": value, "amount": token_request["amount"], **init},
                                headers={"Private-Merchant-Id": PRIVATE})
        assert answer.status_code == 201, answer.text
        return value, answer.json()

    def status(self, token: str) -> str:
        answer = self.http.get(f"/transfer/v1/status/{token}", headers={"Private-Merchant-Id": PRIVATE})
        assert answer.status_code == 200, answer.text
        return str(answer.json()["transactionStatus"])

    def payer_page(self, token: str) -> str:
        return f"{self.sandbox_url}/sandbox/pay/{token}"

    def callback(self, order: str) -> str:
        return self.merchant.url("merchant.test", f"/back?order={order}")


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    """The sandbox and the merchant, each under uvicorn on 127.0.0.1, for the module."""
    merchant = Merchant()
    config = SandboxConfig(public_key=PUBLIC, private_key=PRIVATE, settle_after=None)
    with ExitStack() as stack:
        sandbox = stack.enter_context(Sandbox(config))
        sandbox_app: Any = sandbox.app
        served = stack.enter_context(LocalServer(sandbox_app, max_lifetime=300))
        merchant.port = stack.enter_context(LocalServer(merchant.app(), max_lifetime=300)).port
        http = stack.enter_context(httpx.Client(base_url=served.base_url, timeout=10))
        yield Site(served.base_url, merchant, http)


def _amount(total: int) -> dict[str, int]:
    return {"subtotalIva": 0, "subtotalIva0": total, "iva": 0}


def ecuador(callback_url: str) -> dict[str, Any]:
    return {"currency": "USD", "amount": _amount(25), "documentType": "CI", "documentNumber": "1710034065",
            "callbackUrl": callback_url}


def pse(callback_url: str) -> dict[str, Any]:
    return {"currency": "COP", "amount": _amount(50000), "bankId": "1022", "userType": "0", "documentType": "CC",
            "documentNumber": "1009283738", "callbackUrl": callback_url}


def colombia_qr(callback_url: str) -> dict[str, Any]:
    return {"currency": "COP", "amount": _amount(25000), "flow": {"processorName": "BRE-B", "type": "QR"},
            "callbackUrl": callback_url}


def assert_back_at_merchant(browser: Browser, site: Site, token: str, order: str) -> None:
    """The browser is on the merchant's callbackUrl, with the transfer's token added and the merchant's own
    parameters kept, and the merchant's server saw that GET."""
    landed = urlsplit(browser.driver.current_url)
    assert (landed.hostname, landed.port, landed.path) == ("merchant.test", site.merchant.port, "/back"), \
        browser.driver.current_url
    assert parse_qs(landed.query) == {"order": [order], "token": [token]}
    assert site.merchant.returns[-1] == {"order": [order], "token": [token]}
    assert f"token={token}" in browser.text()


@pytest.mark.parametrize(("make_token_request", "title", "button", "state"), [
    (ecuador, "Banco Sandbox: virtual portal", "Pay", "PAID"),
    (pse, "PSE: Banco Sandbox", "Decline", "rejected"),
], ids=["ecuador_bank_pay", "colombia_pse_decline"])
def test_the_payer_returns_to_the_callback_after_paying_or_declining(
        browser: Browser, site: Site, make_token_request: Callable[[str], dict[str, Any]], title: str, button: str,
        state: str) -> None:
    order = f"order-{button}"
    token, answer = site.start_transfer(make_token_request(site.callback(order)))
    browser.driver.get(answer["redirectUrl"])
    assert browser.driver.title == title
    assert "Status: initialized" in browser.text()
    browser.screenshot(f"payer_page_before_{button}")

    browser.click(button)

    assert_back_at_merchant(browser, site, token, order)
    browser.screenshot(f"merchant_callback_after_{button}")
    assert site.status(token) == state
    browser.driver.get(answer["redirectUrl"])  # the page opened again shows the result, no buttons to press
    assert f"Status: {state}" in browser.text()
    assert browser.driver.find_elements(By.TAG_NAME, "button") == []
    browser.screenshot(f"payer_page_after_{button}")


def test_the_qr_renders_and_its_page_pays_and_returns_the_payer(browser: Browser, site: Site) -> None:
    token, answer = site.start_transfer(colombia_qr(site.callback("qr-1")))
    site.merchant.qr = answer["qr"]
    browser.driver.get(site.merchant.url("merchant.test", "/checkout"))
    width = browser.driver.execute_script("const img = document.getElementById('qr');"
                                          "return img.complete ? img.naturalWidth : -1")
    assert width > 100, "chromium could not draw the init answer's qr"  # 4 px a module: 21 modules and more
    browser.screenshot("merchant_checkout_shows_the_qr")

    browser.driver.get(site.payer_page(token))  # what the payer's phone opens when it scans the QR
    assert browser.driver.title == "Bre-B QR payment"
    assert "Amount: 25000 COP" in browser.text()
    browser.screenshot("payer_page_colombia_qr")
    browser.click("Pay")

    assert_back_at_merchant(browser, site, token, "qr-1")
    assert site.status(token) == "PAID"


def test_a_callback_the_page_policy_cannot_name_is_reached_by_a_link(browser: Browser, site: Site) -> None:
    # A host with an underscore is a valid URL host but no CSP source can name it: the payer follows a link.
    callback = site.merchant.url("merchant_shop.test", "/back?order=ln-1")
    token, answer = site.start_transfer(ecuador(callback))
    browser.driver.get(answer["redirectUrl"])
    browser.click("Pay")
    assert browser.driver.title == "Banco Sandbox: virtual portal"
    browser.screenshot("payer_page_link_back_to_the_merchant")

    browser.click_link("Return to the merchant")

    landed = urlsplit(browser.driver.current_url)
    assert (landed.hostname, landed.path) == ("merchant_shop.test", "/back")
    assert parse_qs(landed.query) == site.merchant.returns[-1] == {"order": ["ln-1"], "token": [token]}
    assert site.status(token) == "PAID"


def _page_token(page: str) -> str:
    found = re.search(r'name="page_token" value="([^"]+)"', page)
    assert found is not None, page
    return html.unescape(found.group(1))


@pytest.mark.parametrize("leaked_page_token", [False, True], ids=["no_page_token", "leaked_page_token"])
def test_a_cross_site_post_is_refused_and_the_payer_can_still_pay(browser: Browser, site: Site,
                                                                  leaked_page_token: bool) -> None:
    token, answer = site.start_transfer(ecuador(site.callback("ec-2")))
    forged = {"target": answer["redirectUrl"], "action": "decline"}
    if leaked_page_token:  # even a genuine page token does not make another site's post acceptable
        forged["page_token"] = _page_token(site.http.get(answer["redirectUrl"]).text)
    returns_before = len(site.merchant.returns)

    browser.driver.get(site.merchant.url("attacker.test", f"/attack?{urlencode(forged)}"))
    browser.wait_for_title("Payment not completed")

    assert browser.driver.current_url == answer["redirectUrl"]
    assert "This form did not come from this payer page" in browser.text()
    browser.screenshot(f"cross_site_post_refused_{'leaked' if leaked_page_token else 'no'}_page_token")
    assert site.status(token) == "initialized"
    assert len(site.merchant.returns) == returns_before

    browser.driver.get(answer["redirectUrl"])
    browser.click("Pay")
    assert_back_at_merchant(browser, site, token, "ec-2")
    assert site.status(token) == "PAID"
