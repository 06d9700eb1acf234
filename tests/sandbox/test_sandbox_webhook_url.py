"""Issue 56 item 4: the webhook URL changed while the sandbox runs (``PUT``/``DELETE /sandbox/v1/webhook-url``,
the dashboard's form), loopback only while the documented private key (public) is in force, since it makes the
sandbox send requests; and each attempt keeps the receiver's answer's first bytes, secrets masked. Over real HTTP:
the sandbox and the receivers under uvicorn."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from pasarela.sandbox import SandboxConfig
from pasarela.testing import LiveSandbox, ServedApp
from pasarela.transfers import Amount, TransferInitRequest, TransferTokenRequest
from support.answering_receiver import Answering

PRIVATE = {"Private-Merchant-Id": "sandbox-private-key"}


def _paid(live: LiveSandbox) -> str:
    amount = Amount.untaxed(10000, currency="COP")  # spec 8: PAID at init, a webhook queued
    token = live.transfers.create_token(TransferTokenRequest.colombia_qr(amount=amount)).token
    live.transfers.init(TransferInitRequest(token=token, amount=amount))
    return token


def test_a_waiting_webhook_goes_to_the_url_given_at_run_time(live: LiveSandbox, live_http: httpx.Client) -> None:
    receiver = Answering()
    token = _paid(live)
    assert live.webhooks(token)[0].attempts == ()                  # no URL: it waits in the outbox
    with ServedApp(receiver) as hooks:
        changed = live_http.put("/sandbox/v1/webhook-url", json={"url": f"{hooks.url}/hooks"}, headers=PRIVATE)
        assert changed.status_code == 200 and changed.json() == {"webhookUrl": f"{hooks.url}/hooks"}
        (sent,) = live.wait_for_webhooks(1, token=token)
    assert sent.attempts[0].url == f"{hooks.url}/hooks" and receiver.received == 1
    assert live_http.get("/sandbox/v1/webhooks", headers=PRIVATE).json()["webhookUrl"] == f"{hooks.url}/hooks"
    cleared = live_http.delete("/sandbox/v1/webhook-url", headers=PRIVATE)
    assert cleared.json() == {"webhookUrl": None} and live.webhook_url is None


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/hooks", "http://127.8.9.10:9/h", "http://localhost:9/h",
                                 "http://[::1]:9/h", "https://LOCALHOST/h"])
def test_loopback_addresses_are_taken(live_http: httpx.Client, url: str) -> None:
    assert live_http.put("/sandbox/v1/webhook-url", json={"url": url}, headers=PRIVATE).status_code == 200


@pytest.mark.parametrize("url", ["http://192.168.1.10/hooks", "http://10.0.0.1/h", "http://169.254.169.254/latest",
                                 "https://hooks.example.com/h", "http://localhost.example.com/h",
                                 "http://127.0.0.1.nip.io/h", "http://[::ffff:10.0.0.1]/h"])
def test_with_the_documented_key_any_other_address_is_refused(live: LiveSandbox, live_http: httpx.Client,
                                                              url: str) -> None:
    refused = live_http.put("/sandbox/v1/webhook-url", json={"url": url}, headers=PRIVATE)
    assert refused.status_code == 400 and refused.json()["field"] == "url"
    assert "loopback address only" in refused.json()["message"]
    assert live.webhook_url is None


@pytest.mark.parametrize(("body", "why"), [({"url": "ftp://127.0.0.1/h"}, "absolute http(s) URL"),
                                           ({"url": "/hooks"}, "absolute http(s) URL"),
                                           ({"url": "http://127.0.0.1/" + "a" * 2100}, "url"),
                                           ({}, "url")])
def test_a_bad_url_is_a_400_naming_it(live_http: httpx.Client, body: dict[str, Any], why: str) -> None:
    refused = live_http.put("/sandbox/v1/webhook-url", json=body, headers=PRIVATE)
    assert refused.status_code == 400 and refused.json()["field"] == "url" and why in refused.json()["message"]


def test_a_sandbox_with_a_private_key_of_its_own_may_deliver_anywhere() -> None:
    with LiveSandbox(SandboxConfig(private_key="sk-mine")) as live, \
            httpx.Client(base_url=live.url, timeout=10) as client:
        changed = client.put("/sandbox/v1/webhook-url", json={"url": "https://hooks.example.com/h"},
                             headers={"Private-Merchant-Id": "sk-mine"})
        assert changed.status_code == 200 and live.webhook_url == "https://hooks.example.com/h"


def test_changing_it_needs_the_private_key_and_the_sandboxs_own_host(live: LiveSandbox,
                                                                     live_http: httpx.Client) -> None:
    body = {"url": "http://127.0.0.1:9/h"}
    assert live_http.put("/sandbox/v1/webhook-url", json=body).status_code == 401
    assert live_http.put("/sandbox/v1/webhook-url", json=body,
                    headers={"Private-Merchant-Id": "sandbox-public-key"}).status_code == 401
    rebound = live_http.put("/sandbox/v1/webhook-url", json=body, headers={**PRIVATE, "Host": "attacker.example"})
    assert rebound.status_code == 421
    preflight = live_http.options("/sandbox/v1/webhook-url", headers={"Origin": "https://attacker.example",
                                                                  "Access-Control-Request-Method": "PUT"})
    assert "access-control-allow-origin" not in preflight.headers       # no page of another origin may call it
    assert live.webhook_url is None


def test_the_dashboards_form_changes_it_and_refuses_a_post_from_elsewhere(live: LiveSandbox,
                                                                           live_http: httpx.Client) -> None:
    page = live_http.get("/sandbox/webhooks").text
    token = re.search(r'action="/sandbox/actions/webhook-url".*?name="page_token" value="([^"]+)"', page).group(1)
    own = {"Origin": live.url, "Sec-Fetch-Site": "same-origin"}
    form = {"page_token": token, "back": "/sandbox/webhooks", "url": "http://127.0.0.1:9/from-the-dashboard"}
    foreign = live_http.post("/sandbox/actions/webhook-url", data=form,
                        headers={"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"})
    assert foreign.status_code == 403 and live.webhook_url is None
    done = live_http.post("/sandbox/actions/webhook-url", data=form, headers=own)
    assert done.status_code == 303 and live.webhook_url == "http://127.0.0.1:9/from-the-dashboard"
    again = re.search(r'name="page_token" value="([^"]+)"', live_http.get("/sandbox/webhooks").text).group(1)
    outside = live_http.post("/sandbox/actions/webhook-url", headers=own,
                        data={"page_token": again, "back": "/sandbox/webhooks", "url": "http://10.0.0.1/h"})
    assert outside.status_code == 400 and "loopback address only" in outside.text
    assert live.webhook_url == "http://127.0.0.1:9/from-the-dashboard"


def test_each_attempt_keeps_the_first_bytes_of_the_answer_secrets_masked(live: LiveSandbox,
                                                                         live_http: httpx.Client) -> None:
    body = b'{"error":"bad signature for secret sandbox-webhook-secret, card 4111 1111 1111 1111"}' + b"x" * 2000
    receiver = Answering(401, body)
    with ServedApp(receiver) as hooks:
        live.webhook_url = f"{hooks.url}/hooks"
        token = _paid(live)
        live.wait_for_webhooks(1, token=token, delivered=False)
    (listed,) = live_http.get("/sandbox/v1/webhooks", params={"token": token}, headers=PRIVATE).json()["webhooks"]
    answer = listed["deliveries"][0]["answer"]
    assert answer.startswith('{"error":"bad signature for secret [REDACTED], card 4111 11** **** 1111"}')
    assert "sandbox-webhook-secret" not in answer and len(answer) <= 512 + 40
    assert listed["deliveries"][0]["status"] == 401
