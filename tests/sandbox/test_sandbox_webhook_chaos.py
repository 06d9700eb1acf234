"""Issue 56 item 3: delivery chaos as a sandbox switch (``--webhook-chaos``, ``SandboxConfig.webhook_chaos``,
``LiveSandbox.set_webhook_chaos`` per test): duplicates, concurrent twins, an older event after the final, a late
first delivery, at a rate; every attempt made on purpose is recorded as such in the listings, the dashboard and the
feed. Over real HTTP, against a receiver that records every delivery and the project's TransferWebhookReceiver
behind it (which must see each event once)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Callable

import httpx
import pytest

from pasarela.errors import ConfigurationError
from pasarela.sandbox import SandboxConfig
from pasarela.sandbox.server import _config, build_parser
from pasarela.testing import LiveSandbox, ServedApp
from pasarela.transfers import Amount, TransferEvent, TransferInitRequest, TransferTokenRequest, TransferWebhookReceiver
from support.answering_receiver import read_all

PRIVATE = {"Private-Merchant-Id": "sandbox-private-key"}
SECRET = SandboxConfig().webhook_secret  # the documented default


class Recording:
    """Records every delivery (its id header and body's status), then hands it to a TransferWebhookReceiver."""

    def __init__(self) -> None:
        self.deliveries: list[tuple[str, str]] = []
        self.handled: list[str] = []
        self.lock = threading.Lock()
        self.receiver = TransferWebhookReceiver(self._handled, secret=SECRET,
                                                merchant_id="sandbox-public-key")

    def _handled(self, event: TransferEvent) -> None:
        with self.lock:
            self.handled.append(str(event.status))

    async def __call__(self, scope: Mapping[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] != "http":
            await self.receiver(scope, receive, send)
            return
        body = await read_all(receive)
        headers = {name.decode().lower(): value.decode() for name, value in scope["headers"]}
        with self.lock:
            self.deliveries.append((headers["x-kushki-id"], json.loads(body)["status"]))
        replayed = iter([{"type": "http.request", "body": body, "more_body": False}])

        async def again() -> Mapping[str, Any]:
            return next(replayed, {"type": "http.disconnect"})

        await self.receiver(scope, again, send)


@pytest.fixture
def receiving(live: LiveSandbox) -> Iterator[Recording]:
    live.reset()
    recording = Recording()
    with ServedApp(recording) as hooks:
        live.webhook_url = f"{hooks.url}/hooks"
        yield recording


def _paid(live: LiveSandbox) -> str:
    amount = Amount.untaxed(25000, currency="COP")
    token = live.transfers.create_token(TransferTokenRequest.colombia_qr(amount=amount)).token
    live.transfers.init(TransferInitRequest(token=token, amount=amount))
    live.pay(token)
    return token


def _attempts_settled(live: LiveSandbox, token: str, count: int) -> list[Any]:
    for _ in range(500):
        (hook,) = live.webhooks(token)
        if len(hook.attempts) >= count:
            return list(hook.attempts)
        threading.Event().wait(0.01)
    raise AssertionError(f"{count} attempts not recorded: {live.webhooks(token)}")


def test_duplicate_delivers_the_event_again_after_its_200(live: LiveSandbox, receiving: Recording) -> None:
    live.set_webhook_chaos("duplicate")
    token = _paid(live)
    first, again = _attempts_settled(live, token, 2)
    assert (first.status, first.chaos, again.status, again.chaos) == (200, None, 200, "duplicate")
    assert len(receiving.deliveries) == 2 and receiving.deliveries[0][0] != receiving.deliveries[1][0]  # fresh ids
    assert receiving.handled == ["approvedTransaction"]                        # the receiver's dedup held
    assert first.answer == '{"status": "received"}' and again.answer == '{"status": "duplicate"}'


def test_concurrent_sends_twins_at_the_same_instant(live: LiveSandbox, receiving: Recording) -> None:
    live.set_webhook_chaos("concurrent")
    token = _paid(live)
    twins = _attempts_settled(live, token, 2)
    assert [attempt.chaos for attempt in twins] == ["concurrent", "concurrent"]
    assert twins[0].at == twins[1].at and len(receiving.deliveries) == 2
    assert receiving.handled == ["approvedTransaction"]
    assert live.webhooks(token)[0].delivered


def test_reorder_sends_an_older_event_after_the_final(live: LiveSandbox, receiving: Recording) -> None:
    live.set_webhook_chaos("reorder")
    token = _paid(live)
    final, older = _attempts_settled(live, token, 2)
    assert final.chaos is None and older.chaos == "reorder: an older initializedTransaction sent after it"
    assert [status for _, status in receiving.deliveries] == ["approvedTransaction", "initializedTransaction"]
    assert receiving.handled == ["approvedTransaction"] and older.answer == '{"status": "superseded"}'


def test_late_holds_the_first_delivery_until_the_clock_passes_it(live: LiveSandbox, receiving: Recording) -> None:
    live.set_webhook_chaos("late")
    token = _paid(live)
    threading.Event().wait(0.3)
    (held,) = live.webhooks(token)
    assert held.attempts == () and not held.delivered and receiving.deliveries == []
    listed = httpx.get(f"{live.url}/sandbox/v1/webhooks", params={"token": token}, headers=PRIVATE).json()
    assert listed["webhooks"][0]["chaos"] == "late"
    live.advance(minutes=11)
    (delivered,) = _attempts_settled(live, token, 1)
    assert (delivered.status, delivered.chaos) == (200, "late")
    assert receiving.handled == ["approvedTransaction"]


def test_the_rate_decides_how_many_events_get_it(live: LiveSandbox, receiving: Recording) -> None:
    live.set_webhook_chaos("duplicate", rate=0.5, seed=56)
    tokens = [_paid(live) for _ in range(12)]
    chosen = [len(_attempts_settled(live, token, 1)) for token in tokens]
    threading.Event().wait(0.3)
    counts = [len(live.webhooks(token)[0].attempts) for token in tokens]
    assert 0 < counts.count(2) < 12 and set(counts) == {1, 2} and chosen


def test_a_reset_and_no_kind_switch_it_off(live: LiveSandbox, receiving: Recording) -> None:
    live.set_webhook_chaos("duplicate")
    live.set_webhook_chaos()
    token = _paid(live)
    threading.Event().wait(0.3)
    assert [attempt.chaos for attempt in live.webhooks(token)[0].attempts] == [None]
    live.set_webhook_chaos("late")
    live.reset()
    assert live.sandbox.dispatcher.chaos.kinds == ()


def test_what_was_done_on_purpose_shows_in_the_listing_the_dashboard_and_the_feed(live: LiveSandbox,
                                                                                  receiving: Recording) -> None:
    live.set_webhook_chaos("duplicate")
    token = _paid(live)
    _attempts_settled(live, token, 2)
    listed = httpx.get(f"{live.url}/sandbox/v1/webhooks", headers=PRIVATE).json()["webhooks"][0]
    assert [delivery.get("chaos") for delivery in listed["deliveries"]] == [None, "duplicate"]
    page = httpx.get(f"{live.url}/sandbox/webhooks").text
    assert "On purpose" in page and ">duplicate<" in page
    feed = httpx.get(f"{live.url}/sandbox/v1/feed", params={"attemptsAfter": "0"}, headers=PRIVATE).json()
    assert [attempt.get("chaos") for attempt in feed["attempts"]] == [None, "duplicate"]


def test_the_configuration_and_the_command_line_take_it() -> None:
    config = SandboxConfig(webhook_chaos=("duplicate", "late"), webhook_chaos_rate=0.25)
    assert config.webhook_chaos == ("duplicate", "late")
    with pytest.raises(ConfigurationError, match="bogus is not a kind of delivery chaos"):
        SandboxConfig(webhook_chaos=("bogus",))
    with pytest.raises(ConfigurationError, match="webhook_chaos_rate"):
        SandboxConfig(webhook_chaos=("duplicate",), webhook_chaos_rate=0)
    args = build_parser().parse_args(["--webhook-chaos", "duplicate, reorder", "--webhook-chaos-rate", "1"])
    parsed, _ = _config(args)
    assert (parsed.webhook_chaos, parsed.webhook_chaos_rate) == (("duplicate", "reorder"), 1.0)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--webhook-chaos", "duplicate,bogus"])


def test_the_command_line_refuses_an_unknown_kind_in_one_line() -> None:
    run = subprocess.run([sys.executable, "-m", "pasarela", "sandbox", "--webhook-chaos", "duplicate,bogus"],
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 2 and run.stderr.count("\n") == 1
    assert "bogus is not a kind: give some of duplicate, concurrent, reorder, late, comma-separated" in run.stderr
