"""Issue 56 items 4 and 6 in a real browser (Debian's chromium through Selenium, tests/support/browser.py): the
dashboard's search box, the access log's method and token filters, the pause toggle of the live updates, the Webhook URL
form and the receiver's answer on each attempt. The sandbox is the test kit's LiveSandbox under uvicorn; screenshots are
kept (build/artifacts/screenshots)."""

from __future__ import annotations

import time

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select
from selenium.webdriver.support.wait import WebDriverWait

from pasarela.testing import LiveSandbox, ServedApp
from pasarela.transfers import Amount, TransferInitRequest, TransferTokenRequest
from support.answering_receiver import Answering
from support.browser import Browser


def _mexico(live: LiveSandbox, document: str) -> tuple[str, str]:
    amount = Amount.untaxed(1000, currency="MXN")
    token = live.transfers.create_token(TransferTokenRequest.mexico(amount=amount, document_number=document,
                                                                    email="payer@example.mx")).token
    started = live.transfers.init(TransferInitRequest(token=token, amount=amount))
    return token, started.raw["ticketNumber"]


def _open(browser: Browser, live: LiveSandbox, path: str) -> None:
    browser.driver.get(live.url + path)
    browser.wait_loaded()


def _clean_console(browser: Browser) -> None:
    problems = [line for line in browser.console() if "favicon" not in line]
    assert problems == [], problems


def test_the_search_box_finds_a_transfer_by_its_ticket_number(browser: Browser, live: LiveSandbox) -> None:
    token, ticket = _mexico(live, "123456789")
    _mexico(live, "123456789")
    _open(browser, live, "/sandbox/charges")
    browser.driver.find_element(By.NAME, "q").send_keys(ticket)
    browser.click("Search")
    assert browser.driver.current_url == f"{live.url}/sandbox/transfers/{token}"
    browser.screenshot("dashboard_search_ticket")
    browser.driver.find_element(By.NAME, "q").send_keys("123456789")           # the payer's two transfers
    browser.click("Search")
    assert browser.driver.title == "Search · pasarela sandbox" and browser.text().count("initialized") == 2
    _clean_console(browser)


def test_the_access_log_filters_by_method_and_token(browser: Browser, live: LiveSandbox) -> None:
    token, _ = _mexico(live, "55501")
    other, _ = _mexico(live, "55502")
    live.transfers.status(token)
    _open(browser, live, "/sandbox/requests")
    Select(browser.driver.find_element(By.NAME, "method")).select_by_value("POST")
    browser.driver.find_element(By.NAME, "token").send_keys(token)
    browser.click("Filter")
    text = browser.text()
    assert "/transfer/v1/init" in text and "/transfer/v1/tokens" in text
    assert f"/transfer/v1/status/{token}" not in text and other not in text
    browser.screenshot("dashboard_access_log_filters")
    _clean_console(browser)


def test_the_pause_toggle_stops_the_live_updates_until_pressed_again(browser: Browser, live: LiveSandbox) -> None:
    _open(browser, live, "/sandbox/")
    pause = browser.driver.find_element(By.ID, "pause")
    assert pause.text == "Pause updates"
    pause.click()
    assert pause.text == "Resume updates" and pause.get_attribute("aria-pressed") == "true"
    browser.driver.execute_script("window.notReloaded = true;")
    token, _ = _mexico(live, "999")                                             # new data for the page
    WebDriverWait(browser.driver, 10).until(
        lambda driver: driver.find_element(By.ID, "live").text == "paused: new data")
    time.sleep(2)                                                              # more polls than one
    assert browser.driver.execute_script("return window.notReloaded === true;") and token not in browser.text()
    browser.screenshot("dashboard_paused")
    _open(browser, live, "/sandbox/webhooks")                                  # remembered across pages
    assert browser.driver.find_element(By.ID, "pause").text == "Resume updates"
    _open(browser, live, "/sandbox/")
    browser.driver.execute_script("window.notReloaded = true;")
    browser.driver.find_element(By.ID, "pause").click()
    _mexico(live, "1000")
    WebDriverWait(browser.driver, 10).until(lambda driver: driver.execute_script("return !window.notReloaded;"))
    browser.wait_loaded()
    assert token in browser.text() and browser.driver.find_element(By.ID, "pause").text == "Pause updates"
    _clean_console(browser)


def test_the_webhook_url_form_points_it_at_a_receiver_whose_answer_shows(browser: Browser,
                                                                          live: LiveSandbox) -> None:
    amount = Amount.untaxed(10000, currency="COP")                          # spec 8: paid at init, a webhook waits
    token = live.transfers.create_token(TransferTokenRequest.colombia_qr(amount=amount)).token
    live.transfers.init(TransferInitRequest(token=token, amount=amount))
    with ServedApp(Answering(401, b'{"status":"invalid signature"} <script>alert(1)</script>')) as hooks:
        _open(browser, live, "/sandbox/webhooks")
        assert "No webhook URL" in browser.text()
        field = browser.driver.find_element(By.NAME, "url")
        field.clear()
        field.send_keys(f"{hooks.url}/hooks")
        browser.click("Change")
        assert f"Delivered to {hooks.url}/hooks" in browser.text()
        live.wait_for_webhooks(1, token=token, delivered=False)
        _open(browser, live, "/sandbox/webhooks")
        answer = browser.driver.find_element(By.CSS_SELECTOR, "code.answer").text
        assert answer == '{"status":"invalid signature"} <script>alert(1)</script>'  # shown, as text
        browser.screenshot("dashboard_webhook_url_and_answer")
        _clean_console(browser)
        field = browser.driver.find_element(By.NAME, "url")
        field.clear()
        field.send_keys("http://10.1.2.3/hooks")
        browser.click("Change")
        assert "loopback address only" in browser.text()
        assert [line for line in browser.console() if "favicon" not in line] == [
            f"{live.url}/sandbox/actions/webhook-url - Failed to load resource: the server responded with a status "
            "of 400 (Bad Request)"]                                        # the refusal, and nothing else
    assert live.webhook_url == f"{hooks.url}/hooks"
