"""The transfer webhook receiver in a Starlette application, at the URL the merchant gives the service, delivered to
by the sandbox over real HTTP (both under uvicorn).

Starlette's ``Mount`` (FastAPI's ``app.mount``) answers its own path without the trailing slash with a 307 to the
path with one, and the service follows no redirect (nor does the sandbox): a receiver mounted so never gets a
webhook at the URL without the slash. Routed as the guide routes it (``Route`` at both spellings), it gets them at
either. A delivery answered with a redirect is recorded, shown on the dashboard and judged by rule 4 (``pasarela
sandbox certify``) with where it pointed and what to change (issue 58: the record had said "HTTP 307" alone)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from pasarela.sandbox import Sandbox, SandboxConfig
from pasarela.sandbox.webhooks import Backoff
from pasarela.transfers import TransferEvent, TransferWebhookReceiver
from support.local_server import LocalServer
from support.waiting import wait_for
from support.workbench import PRIVATE, PUBLIC, colombia_qr

SECRET = "mounting-webhook-secret"  # noqa: S105 (a test value)
PATH = "/webhooks/transfers"


def receiver_into(events: list[TransferEvent]) -> TransferWebhookReceiver:
    return TransferWebhookReceiver(events.append, secret=SECRET, merchant_id=PUBLIC)


def routed(receiver: TransferWebhookReceiver) -> Starlette:
    """As docs/cards-and-transfers.md routes it."""
    return Starlette(routes=[Route(PATH, receiver, methods=["POST"]), Route(PATH + "/", receiver, methods=["POST"])])


def mounted(receiver: TransferWebhookReceiver) -> Starlette:
    return Starlette(routes=[Mount(PATH, receiver)])


@contextmanager
def delivering_to(app: Starlette, path: str) -> Iterator[httpx.Client]:
    """A sandbox whose --webhook-url is ``path`` on a server of ``app``; a client of the sandbox (private key)."""
    with ExitStack() as stack:
        shop = stack.enter_context(LocalServer(app))  # type: ignore[arg-type]
        config = SandboxConfig(public_key=PUBLIC, private_key=PRIVATE, webhook_secret=SECRET,
                               webhook_url=shop.base_url + path, settle_after=None)
        sandbox = stack.enter_context(Sandbox(config, backoff=Backoff(3600.0, 3600.0)))
        served = stack.enter_context(LocalServer(sandbox.app, max_lifetime=120))  # type: ignore[arg-type]
        yield stack.enter_context(httpx.Client(base_url=served.base_url, timeout=10,
                                               headers={"Private-Merchant-Id": PRIVATE}))


def paid_transfer(sandbox: httpx.Client) -> dict[str, Any]:
    """A Colombia QR transfer of 10000 COP (PAID at once: spec 8), and its webhook once an attempt was made."""
    request = colombia_qr(10000)
    token = sandbox.post("/transfer/v1/tokens", json=request, headers={"Public-Merchant-Id": PUBLIC}).json()["token"]
    assert sandbox.post("/transfer/v1/init", json={"token": token, "amount": request["amount"]}).status_code == 201

    def attempted() -> list[dict[str, Any]]:
        hooks = sandbox.get("/sandbox/v1/webhooks", params={"token": token}).json()["webhooks"]
        return [hook for hook in hooks if hook["deliveries"]]

    [hook] = wait_for(attempted, "the webhook's first delivery attempt")
    return dict(hook)


@pytest.mark.parametrize("path", [PATH, PATH + "/"])
def test_the_routed_receiver_gets_the_webhook_with_and_without_the_trailing_slash(path: str) -> None:
    events: list[TransferEvent] = []
    with delivering_to(routed(receiver_into(events)), path) as sandbox:
        hook = paid_transfer(sandbox)
    assert hook["delivered"] and [attempt["status"] for attempt in hook["deliveries"]] == [200]
    assert [event.state.name for event in events] == ["APPROVED"]


def test_a_redirect_is_recorded_shown_and_judged_with_what_to_change() -> None:
    """The receiver mounted: Starlette's 307 to the trailing slash, not followed, named with the fix."""
    events: list[TransferEvent] = []
    with delivering_to(mounted(receiver_into(events)), PATH) as sandbox:
        hook = paid_transfer(sandbox)
        [attempt] = hook["deliveries"]
        page = sandbox.get("/sandbox/webhooks").text
        rule = {item["rule"]: item for item in sandbox.get("/sandbox/v1/certification").json()["rules"]}[4]
        certified = subprocess.run([sys.executable, "-m", "pasarela", "sandbox", "certify", "--url",
                                    str(sandbox.base_url)], capture_output=True, text=True, timeout=60,
                                   env={**os.environ, "PASARELA_SANDBOX_PRIVATE_KEY": PRIVATE})
    assert events == [] and not hook["delivered"]
    location = attempt["url"] + "/"
    assert attempt["status"] == 307
    assert attempt["error"].startswith(f"HTTP 307, a redirect to {location}, not followed")
    assert 'Route(path, receiver, methods=["POST"]), not Mount' in attempt["error"]
    assert f"--webhook-url {location}" in attempt["error"]
    assert "Route(path, receiver, methods=[&quot;POST&quot;]), not Mount" in page  # the dashboard's attempt row
    assert rule["verdict"] == "fail" and attempt["error"] in rule["summary"]
    assert certified.returncode == 1 and attempt["error"] in certified.stdout


def test_a_redirect_elsewhere_says_to_answer_at_the_url_itself() -> None:
    async def moved(request: Request) -> Response:
        return Response(status_code=308, headers={"Location": "https://shop.test/in"})

    with delivering_to(Starlette(routes=[Route(PATH, moved, methods=["POST"])]), PATH) as sandbox:
        [attempt] = paid_transfer(sandbox)["deliveries"]
    assert attempt["error"] == (f"HTTP 308, a redirect to https://shop.test/in, not followed (the service follows "
                                f"none): the receiver must answer 200 at {attempt['url']} itself; or start the "
                                "sandbox with --webhook-url https://shop.test/in")
