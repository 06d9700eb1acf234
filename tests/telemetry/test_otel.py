"""OpenTelemetry with the real SDK (InMemoryMetricReader, InMemorySpanExporter): every metric pasarela documents
appears with the right attributes after a real flow, the client's span follows the HTTP conventions, and no
attribute value holds a secret. Without opentelemetry installed nothing of it is imported."""

# ruff: noqa: S106 (test keys and secrets are fixtures)

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

import pasarela._telemetry as telemetry
from pasarela import Terminal
from pasarela.asgi import TerminalAuthMiddleware
from pasarela.errors import StoreUnavailableError, TransportError
from pasarela.http import RetryPolicy, ServiceConfig
from pasarela.httpx import TerminalClient
from pasarela.requests_adapter import TerminalClient as RequestsTerminalClient
from pasarela.sandbox import Sandbox, SandboxConfig
from pasarela.terminal.replay_redis import RedisReplayStore
from pasarela.transfers import SeenEvents, TransferClient, TransferEvent, TransferStatus, TransferWebhookReceiver
from support.local_server import LocalServer
from support.otel_sdk import Sdk, delta, installed, key
from support.signed_webhooks import BODY, FORGED, NOW, REFERENCE, SECRET, Clock, at, signed, simple_only
from support.without_extras import run_without

PUBLIC = "pk-otel-public-4242"
PRIVATE = "sk-otel-private-4242"
SECRETS = (PUBLIC, PRIVATE, SECRET, "tok-1", REFERENCE, "10000", "bc-otel-1")


@pytest.fixture(scope="module")
def sdk() -> Sdk:
    assert telemetry.ENABLED, "opentelemetry-api must be installed for these tests (the dev extra has it)"
    return installed()


class FailsFirst(httpx.BaseTransport):
    """A network that drops the first request (connection refused), then carries the rest over real HTTP."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.dropped = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not self.dropped:
            self.dropped = True
            raise httpx.ConnectError("connection refused", request=request)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture(scope="module")
def sandbox_url() -> Iterator[str]:
    settings = SandboxConfig(public_key=PUBLIC, private_key=PRIVATE, webhook_url=None, business_code="bc-otel-1",
                             terminal_serial="SN-OTEL-1")
    with Sandbox(settings) as sandbox, LocalServer(sandbox.app, max_lifetime=60) as server:  # type: ignore[arg-type]
        yield server.base_url


def test_a_client_call_with_a_retry_is_one_span_and_one_count(sdk: Sdk, sandbox_url: str) -> None:
    config = ServiceConfig(base_url=sandbox_url, public_merchant_id=PUBLIC, private_merchant_id=PRIVATE,
                           retry=RetryPolicy(max_attempts=2, base_delay=0.0, jitter=lambda: 0.0))
    before = sdk.points()
    sdk.spans.clear()
    with httpx.Client(transport=FailsFirst()) as http, \
            TransferClient(config, http_client=http, sleep=lambda seconds: None) as client:
        banks = client.bank_list()
    assert banks
    changed = delta(before, sdk.points())
    attributes = {"operation": "transfer.bankList", "http.request.method": "GET", "status_class": "2xx",
                  "retried": "true"}
    assert changed == {key("pasarela.client.requests", **attributes): 1,
                       key("pasarela.client.duration", **attributes): 1}
    [span] = [span for span in sdk.spans.get_finished_spans() if span.name == "GET /transfer/v1/bankList"]
    assert span.kind.name == "CLIENT"
    port = int(sandbox_url.rsplit(":", 1)[1])
    assert dict(span.attributes or {}) == {
        "http.request.method": "GET", "url.template": "/transfer/v1/bankList", "server.address": "127.0.0.1",
        "server.port": port, "pasarela.operation": "transfer.bankList", "http.response.status_code": 200,
        "http.request.resend_count": 1}


@pytest.mark.parametrize("client_class", [TerminalClient, RequestsTerminalClient])
def test_a_terminal_client_call_is_a_client_span_named_by_its_method(sdk: Sdk, sandbox_url: str,
                                                                    client_class: Any) -> None:
    before = sdk.points()
    sdk.spans.clear()
    with client_class(sandbox_url + "/terminal", Terminal("bc-otel-1", "SN-OTEL-1")) as client:
        assert client.post("/v1/echo", {"amount": 10000}) == {"amount": 10000}
    attributes = {"operation": "terminal.request", "http.request.method": "POST", "status_class": "2xx",
                  "retried": "false"}
    changed = {name: value for name, value in delta(before, sdk.points()).items() if name[0].startswith("pasarela.cl")}
    assert changed == {key("pasarela.client.requests", **attributes): 1,
                       key("pasarela.client.duration", **attributes): 1}
    [span] = [span for span in sdk.spans.get_finished_spans() if span.kind.name == "CLIENT"]
    assert span.name == "POST" and (span.attributes or {})["http.response.status_code"] == 200
    assert "url.template" not in (span.attributes or {})  # the caller's path is no template


def test_a_failed_call_is_counted_as_an_error_and_its_span_says_why(sdk: Sdk) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # nothing listens there once the socket is closed
    config = ServiceConfig(base_url=f"http://127.0.0.1:{port}", public_merchant_id=PUBLIC,
                           private_merchant_id=PRIVATE, retry=RetryPolicy(max_attempts=1))
    before = sdk.points()
    sdk.spans.clear()
    with TransferClient(config) as client, pytest.raises(TransportError):
        client.status("tok-1")
    attributes = {"operation": "transfer.status", "http.request.method": "GET", "status_class": "error",
                  "retried": "false"}
    assert delta(before, sdk.points()) == {key("pasarela.client.requests", **attributes): 1,
                                           key("pasarela.client.duration", **attributes): 1}
    # this call's span (named by the template: the token is in no attribute); a thread left by an earlier test of
    # the worker may finish a span of its own meanwhile (wheel-check's 3.10 run: two spans)
    [span] = [span for span in sdk.spans.get_finished_spans() if span.name == "GET /transfer/v1/status/{token}"]
    assert span.attributes is not None and span.attributes["error.type"] == "TransportError"
    assert span.status.status_code.name == "ERROR"


def verdicts(sdk: Sdk, before: dict[Any, Any]) -> dict[str, int]:
    return {dict(attributes)["verdict"]: value for (name, attributes), value in delta(before, sdk.points()).items()
            if name == "pasarela.webhooks.received"}


def test_each_webhook_verdict_is_counted(sdk: Sdk) -> None:
    before = sdk.points()
    clock = Clock(NOW)
    receiver = TransferWebhookReceiver(lambda event: None, secret=SECRET, clock=clock)
    assert receiver.handle(signed(), BODY).status == 200  # handled
    assert receiver.handle(signed(webhook_id=at(1.0)), BODY).status == 200  # duplicate
    later = json.dumps({"token": "tok-1", "transactionReference": REFERENCE, "status": "declined"}).encode()
    assert json.loads(receiver.handle(signed(later), later).body) == {"status": "superseded"}
    assert receiver.handle(signed(secret="not-the-secret"), BODY).status == 401  # bad_signature
    clock.now = NOW + 601
    assert receiver.handle(signed(), BODY).status == 401  # stale
    clock.now = NOW
    assert receiver.handle(signed(b"[1]"), b"[1]").status == 400  # unreadable
    assert receiver.handle(signed(), b" " * (1 << 21)).status == 413  # too_large

    ledger = SeenEvents()
    other = json.dumps({"token": "tok-2", "status": "PAID"}).encode()
    busy = TransferWebhookReceiver(lambda event: None, secret=SECRET, clock=clock, ledger=ledger)
    event = TransferEvent.from_body(other, None)
    ledger.claim(event.key, "another delivery's claim")
    assert busy.handle(signed(other), other).status == 503  # in_progress

    def down(token: str) -> TransferStatus:
        raise TransportError("connection refused")

    querying = TransferWebhookReceiver(lambda event: None, secret=SECRET, allow_simple_signature=True,
                                       status_query=down, clock=clock)
    assert querying.handle(simple_only(), FORGED).status == 503  # unavailable (the status query)
    full = TransferWebhookReceiver(lambda event: None, ledger=SeenEvents(max_entries=1))
    full.handle({}, BODY)  # handled
    with pytest.raises(StoreUnavailableError):
        full.handle({}, other)  # unavailable (the ledger)
    assert verdicts(sdk, before) == {"handled": 2, "duplicate": 1, "superseded": 1, "bad_signature": 1, "stale": 1,
                                     "unreadable": 1, "too_large": 1, "in_progress": 1, "unavailable": 2}


def test_a_webhook_that_is_no_post_is_counted_over_asgi(sdk: Sdk) -> None:
    receiver = TransferWebhookReceiver(lambda event: None, secret=SECRET)
    before = sdk.points()
    with LocalServer(receiver, max_lifetime=30) as server:  # type: ignore[arg-type]
        assert httpx.get(server.base_url + "/hooks").status_code == 405
    assert verdicts(sdk, before) == {"not_post": 1}


def test_a_method_the_client_made_up_is_other_on_the_verify_span(sdk: Sdk) -> None:
    """Issue 53 item 7: ``http.request.method`` is the method when it is a known one, else ``_OTHER`` (the HTTP
    semantic conventions): a client choosing a new method per request must not add a value of the attribute each."""

    async def app(scope: Any, receive: Any, send: Any) -> None:  # never reached: every request here is refused
        raise AssertionError("a refused request reached the app")

    gateway = TerminalAuthMiddleware(app, Terminal("bc-otel-1", "serial-otel-1"))
    made_up = [f"BREW{index}" for index in range(20)] + ["get", "PROPFIND", "X-CUSTOM"]
    sdk.spans.clear()
    with LocalServer(gateway, max_lifetime=30, http="h11") as server:  # type: ignore[arg-type]
        for method in [*made_up, "POST", "PUT"]:
            assert httpx.request(method, server.base_url + "/terminal").status_code == 401
    seen = [str((span.attributes or {})["http.request.method"]) for span in sdk.spans.get_finished_spans()
            if span.name == "pasarela.terminal.verify"]
    assert sorted(seen) == sorted(["_OTHER"] * (len(made_up) - 1) + ["GET", "POST", "PUT"])


def test_a_redis_store_failing_closed_is_counted_by_store(sdk: Sdk) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    before = sdk.points()
    store = RedisReplayStore(redis.Redis(port=port, socket_connect_timeout=1))
    with pytest.raises(StoreUnavailableError):
        store.first_use("a" * 128, NOW + 300)
    assert delta(before, sdk.points()) == {key("pasarela.store.errors", store="replay"): 1}


def test_no_attribute_value_holds_a_secret(sdk: Sdk, sandbox_url: str) -> None:
    test_a_client_call_with_a_retry_is_one_span_and_one_count(sdk, sandbox_url)
    test_each_webhook_verdict_is_counted(sdk)
    test_a_terminal_client_call_is_a_client_span_named_by_its_method(sdk, sandbox_url, TerminalClient)
    values = list(sdk.attribute_values())
    assert values
    for value in values:
        for secret in SECRETS:
            assert secret not in value, (secret, value)


def test_without_opentelemetry_nothing_of_it_is_imported_and_pasarela_works() -> None:
    result = run_without("opentelemetry", """
        import json, sys
        import pasarela, pasarela._telemetry, pasarela.logging
        from pasarela import Terminal
        from pasarela.transfers import TransferWebhookReceiver
        terminal = Terminal("bc-no-otel", "SN-1")
        sealed = terminal.seal({"amount": 1})
        assert terminal.open("POST", sealed.headers, sealed.body) == {"amount": 1}
        assert TransferWebhookReceiver(lambda event: None).handle({}, b'{"token":"t","status":"PAID"}').status == 200
        print(pasarela._telemetry.ENABLED, sorted(name for name in sys.modules if name.startswith("opentelemetry")))
        """)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "False []\n"


def test_pasarela_otel_off_turns_it_off_with_the_api_installed() -> None:
    program = "import sys, pasarela._telemetry as t; print(t.ENABLED, 'opentelemetry' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PASARELA_OTEL": "off"})
    assert result.stdout == "False False\n", result.stderr
    on = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert on.stdout == "True True\n", on.stderr

