"""The sandbox's dashboard in a real browser (Debian's chromium through Selenium: tests/support/browser.py), with data
from real flows over HTTP (the sandbox and the merchant's webhook receiver under uvicorn: test_sandbox_workbench's
``bench``). Every page renders what the flows left, every action changes the sandbox's state, the pages update
by themselves, and the page's defences hold: its CSP lets nothing be refused on its own pages (the console stays
clean), a form posted from another site is refused, and the dashboard does not answer under a foreign host name.
Each test leaves screenshots (build/artifacts/screenshots)."""

from __future__ import annotations

import html
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select
from selenium.webdriver.support.wait import WebDriverWait
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from pasarela import Terminal
from support.browser import NAVIGATION_TIMEOUT, Browser
from support.local_server import LocalServer
from support.waiting import wait_for
from support.workbench import BUSINESS_CODE, SERIAL, Bench, bench, colombia_qr, mexico


@pytest.fixture(scope="module")
def workbench() -> Iterator[Bench]:
    with bench() as started:
        yield started


def _clean_console(browser: Browser) -> None:
    """Nothing the page asked for was refused (a CSP violation, a failed asset) and no script failed."""
    problems = [line for line in browser.console() if "favicon" not in line]
    assert problems == [], problems


def _receiver_answers(workbench: Bench, *statuses: int) -> None:
    """The webhook receiver answers the next deliveries with ``statuses`` (what earlier tests left is dropped)."""
    workbench.receiver.reset()
    for status in statuses:
        workbench.receiver.reply("POST", "/hooks", status)


def _status(workbench: Bench, token: str) -> dict[str, Any]:
    return dict(workbench.get(f"/sandbox/v1/transfers/{token}")["transfer"])


def _open(browser: Browser, workbench: Bench, path: str) -> None:
    browser.driver.get(workbench.url + path)
    browser.wait_loaded()


def test_root_leads_to_the_transfers_and_the_filters_narrow_them(browser: Browser, workbench: Bench) -> None:
    _receiver_answers(workbench, 200)
    paid = workbench.start(colombia_qr(10000))
    pending = workbench.start(mexico(document_number="55501"))
    _open(browser, workbench, "/")
    assert browser.driver.current_url == f"{workbench.url}/sandbox/"
    assert browser.driver.title == "Transfers · pasarela sandbox"
    text = browser.text()
    assert paid in text and pending in text and "PAID" in text
    browser.screenshot("dashboard_transfers")
    Select(browser.driver.find_element(By.NAME, "status")).select_by_value("PAID")
    browser.click("Filter")
    assert browser.driver.current_url.endswith("/sandbox/?status=PAID&country=&flow=")
    assert paid in browser.text() and pending not in browser.text()
    _clean_console(browser)


@pytest.mark.parametrize(("button", "state"), [("Approve", "PAID"), ("Decline", "rejected"),
                                                ("Expire", "expiredTransaction")])
def test_a_pending_transfer_is_approved_declined_or_expired_from_its_page(
        browser: Browser, workbench: Bench, button: str, state: str) -> None:
    _receiver_answers(workbench, 200)
    token = workbench.start(mexico(document_number=f"doc-{button}"))
    _open(browser, workbench, f"/sandbox/transfers/{token}")
    assert "History" in browser.text() and "initialized" in browser.text()
    browser.screenshot(f"dashboard_transfer_before_{button}")

    browser.click(button)

    assert browser.driver.current_url == f"{workbench.url}/sandbox/transfers/{token}"
    status = _status(workbench, token)
    assert state in (status["transactionStatus"], status["status"])
    history = [entry["cause"] for entry in workbench.get(f"/sandbox/v1/transfers/{token}")["history"]]
    assert history == ["init", "dashboard"]
    assert browser.driver.find_elements(By.XPATH, f"//button[normalize-space()='{button}']") == []
    if button != "Expire":  # the webhook the payment caused is on the page, with its delivery
        wait_for(lambda: any(hook["delivered"] for hook in workbench.webhooks(token)), "the webhook")
        _open(browser, workbench, f"/sandbox/transfers/{token}")
        sent = {"Approve": "approvedTransaction", "Decline": "declinedTransaction"}[button]
        assert sent in browser.text() and "delivered" in browser.text()
    browser.screenshot(f"dashboard_transfer_after_{button}")
    _clean_console(browser)


def test_the_webhooks_page_shows_each_attempt_and_redelivers(browser: Browser, workbench: Bench) -> None:
    _receiver_answers(workbench, 500, 200)
    token = workbench.start(colombia_qr(12000))  # rejected at once, with a webhook
    [hook] = wait_for(lambda: [hook for hook in workbench.webhooks(token) if hook["deliveries"]], "an attempt")
    _open(browser, workbench, "/sandbox/webhooks")
    section = browser.driver.find_element(By.ID, f"webhook-{hook['id']}")
    assert "declinedTransaction" in section.text and "failed" in section.text
    headers = browser.driver.find_element(By.XPATH, f"//span[@id='delivery-{hook['deliveries'][0]['id']}']"
                                                    "/ancestor::tr//details")
    headers.click()  # open the signed headers of the attempt
    assert hook["deliveries"][0]["headers"]["X-Kushki-Signature"] in headers.text
    browser.screenshot("dashboard_webhooks_failed_attempt")
    headers.click()

    first = browser.driver.find_element(By.XPATH, "//form[contains(@action, '/redeliver')]")
    assert hook["id"] in first.get_attribute("action")  # newest first: this test's webhook
    browser.click("Redeliver")

    wait_for(lambda: any(item["delivered"] for item in workbench.webhooks(token)), "the redelivery")
    _open(browser, workbench, "/sandbox/webhooks")
    section = browser.driver.find_element(By.ID, f"webhook-{hook['id']}")
    assert "delivered" in section.text
    browser.screenshot("dashboard_webhooks_redelivered")
    _clean_console(browser)


def test_terminal_requests_access_log_and_one_request(browser: Browser, workbench: Bench) -> None:
    terminal = Terminal(business_code=BUSINESS_CODE, terminal_serial=SERIAL)
    sealed = terminal.seal({"amount": 7}, method="POST")
    headers = {**sealed.headers, "timestamp": sealed.headers["timestamp"] + "000"}  # milliseconds: AUTH-001
    assert workbench.http.post("/terminal/v1/sync/charge", content=sealed.body, headers=headers).status_code == 401
    _open(browser, workbench, "/sandbox/terminal")
    assert "timestamp_milliseconds" in browser.text()
    browser.screenshot("dashboard_terminal")

    _open(browser, workbench, "/sandbox/requests")
    assert "/terminal/v1/sync/charge" in browser.text()
    browser.click_link(browser.driver.find_element(By.CSS_SELECTOR, "tbody tr td a").text)
    assert browser.driver.title.startswith("Request ")
    assert "Request headers" in browser.text() and "Response body" in browser.text()
    browser.screenshot("dashboard_request")
    _clean_console(browser)


def test_the_certification_page_links_to_its_evidence(browser: Browser, workbench: Bench) -> None:
    token = workbench.token(colombia_qr(3000))
    refused = workbench.init(token, {"subtotalIva": 0, "subtotalIva0": 3001, "iva": 0})  # not the token's amount
    assert refused.status_code == 400
    _open(browser, workbench, "/sandbox/certification")
    row = browser.driver.find_element(By.XPATH, "//tbody/tr[1]")
    assert row.text.startswith("1 Tax and total amount calculations are correct. fail")
    evidence = [link.text for link in row.find_elements(By.TAG_NAME, "a")]
    assert evidence and all(item.startswith("request:") for item in evidence)
    browser.screenshot("dashboard_certification")
    browser.click_link(evidence[-1])
    assert "differs from the amount of the token request" in html.unescape(browser.text())
    _clean_console(browser)


def test_the_clock_form_moves_the_sandbox_clock(browser: Browser, workbench: Bench) -> None:
    token = workbench.start(colombia_qr(4000))
    assert _status(workbench, token)["qrStatus"] == "valid"
    _open(browser, workbench, f"/sandbox/transfers/{token}")
    field = browser.driver.find_element(By.NAME, "seconds")
    field.clear()
    field.send_keys("601")
    browser.click("Advance clock")
    assert _status(workbench, token)["qrStatus"] == "expired"  # the QR's 10 minutes are over
    assert "expired" in browser.text()
    _clean_console(browser)


def test_the_page_updates_by_itself(browser: Browser, workbench: Bench) -> None:
    _open(browser, workbench, "/sandbox/")
    token = workbench.start(mexico(document_number="by-itself"))
    WebDriverWait(browser.driver, NAVIGATION_TIMEOUT).until(lambda driver: token in browser.text())
    browser.screenshot("dashboard_updated_by_itself")
    _clean_console(browser)


def _attacker(target: str, page_token: str) -> Starlette:
    async def attack(request: Request) -> HTMLResponse:
        return HTMLResponse(
            f'<!doctype html><title>Win a prize</title><body onload="document.forms[0].submit()">'
            f'<form method="post" action="{html.escape(target)}"><input type="hidden" name="page_token" '
            f'value="{html.escape(page_token)}"><input type="hidden" name="back" value="/sandbox/"></form></body>')

    return Starlette(routes=[Route("/attack", attack)])


@pytest.mark.parametrize("leaked_page_token", [False, True], ids=["no_page_token", "leaked_page_token"])
def test_a_form_posted_from_another_site_is_refused(browser: Browser, workbench: Bench,
                                                    leaked_page_token: bool) -> None:
    token = workbench.start(mexico(document_number=f"attacked-{leaked_page_token}"))
    page = workbench.http.get(f"/sandbox/transfers/{token}").text
    stolen = html.unescape(page.split('name="page_token" value="', 1)[1].split('"', 1)[0])
    target = f"{workbench.url}/sandbox/actions/transfers/{token}/approve"
    with ExitStack() as stack:
        site = stack.enter_context(LocalServer(_attacker(target, stolen if leaked_page_token else "")))
        browser.driver.get(f"http://attacker.test:{site.port}/attack")
        browser.wait_for_title("Action refused")
    assert _status(workbench, token)["transactionStatus"] == "initialized"
    browser.screenshot(f"dashboard_cross_site_refused_{leaked_page_token}")


def test_the_dashboard_does_not_answer_under_another_host_name(browser: Browser, workbench: Bench) -> None:
    port = workbench.url.rsplit(":", 1)[1]
    browser.driver.get(f"http://rebound.test:{port}/sandbox/")  # a DNS name rebound to 127.0.0.1
    assert "MISDIRECTED_REQUEST" in browser.text()
    assert "Transfers" not in browser.driver.title
