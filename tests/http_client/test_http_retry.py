"""Retries with jittered exponential backoff (idempotent calls only), idempotency keys, timeouts."""

from __future__ import annotations

import asyncio
import socket

import pytest

from pasarela.errors import ApiError, ConfigurationError, TransportError
from pasarela.http import RetryPolicy, ServiceConfig
from pasarela.http.config import MerchantKey
from pasarela.http.exchange import Failed, OutgoingRequest, Pause, Received, ServiceCall, exchange
from pasarela.http.transport import AsyncServiceClient, SyncServiceClient
from support.local_server import ScriptedService, scripted_service_fixtures

STATUS_PATH = "/transfer/v1/status/tok"


scripted_server, service = scripted_service_fixtures()


def config(base_url: str, **changes: object) -> ServiceConfig:
    settings: dict[str, object] = {
        "base_url": base_url,
        "public_merchant_id": "pub-1",
        "private_merchant_id": "priv-secret-1",
        "retry": RetryPolicy(max_attempts=3, base_delay=0.5, max_delay=8.0, jitter=lambda: 0.5),
    }
    settings.update(changes)
    return ServiceConfig(**settings)  # type: ignore[arg-type]


def closed_port_url() -> str:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now: connections are refused
    return f"http://127.0.0.1:{port}"


GET = ServiceCall("GET", STATUS_PATH, MerchantKey.PRIVATE)
POST = ServiceCall("POST", "/transfer/v1/init", MerchantKey.PRIVATE, {"token": "t"})


# --- the policy ---------------------------------------------------------------------------------


def test_delay_grows_exponentially_with_equal_jitter_and_is_capped() -> None:
    low = RetryPolicy(base_delay=0.5, max_delay=3.0, jitter=lambda: 0.0)
    high = RetryPolicy(base_delay=0.5, max_delay=3.0, jitter=lambda: 1.0)
    assert [low.delay(n) for n in (1, 2, 3, 4, 5)] == [0.25, 0.5, 1.0, 1.5, 1.5]
    assert [high.delay(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]


def test_default_jitter_stays_within_bounds() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=10.0)
    for _ in range(200):
        assert 2.0 <= policy.delay(3) < 4.0


@pytest.mark.parametrize(
    "changes", [{"max_attempts": 0}, {"max_attempts": True}, {"base_delay": -1}, {"max_delay": float("inf")}]
)
def test_policy_refuses_nonsense(changes: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        RetryPolicy(**changes)  # type: ignore[arg-type]


# --- the exchange, without I/O ------------------------------------------------------------------


def test_exchange_retries_get_on_5xx_and_failures_then_returns() -> None:
    flow = exchange(GET, config("https://api.example"))
    request = next(flow)
    assert isinstance(request, OutgoingRequest) and request.method == "GET"
    assert flow.send(Received(503, b"")) == Pause(0.375)
    assert flow.send(None) is request
    assert flow.send(Failed("ConnectError: refused")) == Pause(0.75)
    assert flow.send(None) is request
    with pytest.raises(StopIteration) as done:
        flow.send(Received(200, b'{"status":"PAID"}'))
    assert done.value.value.json() == {"status": "PAID"}


def test_exchange_gives_up_after_max_attempts() -> None:
    flow = exchange(GET, config("https://api.example", retry=RetryPolicy(max_attempts=2, jitter=lambda: 0.0)))
    next(flow)
    assert isinstance(flow.send(Received(500, b"")), Pause)
    flow.send(None)
    with pytest.raises(ApiError) as caught:
        flow.send(Received(500, b'{"code":"E500","message":"down"}'))
    assert caught.value.status == 500 and caught.value.code == "E500"


def test_exchange_never_retries_a_post() -> None:
    flow = exchange(POST, config("https://api.example"))
    next(flow)
    with pytest.raises(ApiError):
        flow.send(Received(503, b""))
    flow = exchange(POST, config("https://api.example"))
    next(flow)
    with pytest.raises(TransportError, match="after 1 attempt"):
        flow.send(Failed("ReadTimeout: timed out"))


# --- over real HTTP -----------------------------------------------------------------------------


def test_get_is_retried_on_5xx_with_the_injected_sleep(service: ScriptedService) -> None:
    service.reply("GET", STATUS_PATH, 503)
    service.reply("GET", STATUS_PATH, 502, {"code": "BAD"})
    service.reply("GET", STATUS_PATH, 200, {"status": "PAID"})
    sleeps: list[float] = []
    with SyncServiceClient(config(service.base_url), sleep=sleeps.append) as client:
        assert client._send(GET).json() == {"status": "PAID"}
    assert sleeps == [0.375, 0.75]
    assert len(service.requests) == 3


def test_post_is_not_retried_on_5xx(service: ScriptedService) -> None:
    service.reply("POST", "/transfer/v1/init", 503, {"code": "DOWN", "message": "try later"})
    sleeps: list[float] = []
    with SyncServiceClient(config(service.base_url), sleep=sleeps.append) as client, pytest.raises(ApiError) as caught:
        client._send(POST)
    assert caught.value.status == 503 and caught.value.message == "try later"
    assert sleeps == [] and len(service.requests) == 1


def test_connection_refused_is_retried_for_get_only() -> None:
    url = closed_port_url()
    sleeps: list[float] = []
    with SyncServiceClient(config(url), sleep=sleeps.append) as client:
        with pytest.raises(TransportError, match=r"ConnectError.*after 3 attempt"):
            client._send(GET)
        assert sleeps == [0.375, 0.75]
        sleeps.clear()
        with pytest.raises(TransportError, match="after 1 attempt"):
            client._send(POST)
        assert sleeps == []


def test_timeout_ends_a_hanging_call(service: ScriptedService) -> None:
    service.hang("GET", STATUS_PATH)
    service.reply("GET", STATUS_PATH, 200, {"status": "PAID"})
    sleeps: list[float] = []
    with SyncServiceClient(config(service.base_url, timeout=0.2), sleep=sleeps.append) as client:
        assert client._send(GET).json() == {"status": "PAID"}
    assert sleeps == [0.375]
    service.hang("POST", "/transfer/v1/init")
    quick = config(service.base_url, timeout=0.2)
    with SyncServiceClient(quick, sleep=sleeps.append) as client, pytest.raises(TransportError, match="Timeout"):
        client._send(POST)


def test_async_client_retries_with_the_injected_async_sleep(service: ScriptedService) -> None:
    service.reply("GET", STATUS_PATH, 500)
    service.reply("GET", STATUS_PATH, 200, {"status": "rejected"})
    sleeps: list[float] = []

    async def record(seconds: float) -> None:
        sleeps.append(seconds)

    async def main() -> object:
        async with AsyncServiceClient(config(service.base_url), sleep=record) as client:
            return (await client._send(GET)).json()

    assert asyncio.run(main()) == {"status": "rejected"}
    assert sleeps == [0.375]


def test_post_carries_an_idempotency_key_and_get_does_not(service: ScriptedService) -> None:
    service.reply("POST", "/transfer/v1/init", 200, {})
    service.reply("POST", "/transfer/v1/init", 200, {})
    service.reply("GET", STATUS_PATH, 200, {})
    keys = iter(["generated-1"])
    with SyncServiceClient(
        config(service.base_url, idempotency_keys=lambda: next(keys)), sleep=lambda _: None
    ) as client:
        client._send(POST)
        mine = ServiceCall("POST", "/transfer/v1/init", MerchantKey.PRIVATE, {}, idempotency_key="mine-42")
        client._send(mine)
        client._send(GET)
    assert [r.headers.get("idempotency-key") for r in service.requests] == ["generated-1", "mine-42", None]


def test_default_idempotency_keys_are_unique_uuids(service: ScriptedService) -> None:
    for _ in range(3):
        service.reply("POST", "/transfer/v1/init", 200, {})
    with SyncServiceClient(config(service.base_url)) as client:
        for _ in range(3):
            client._send(POST)
    keys = [r.headers["idempotency-key"] for r in service.requests]
    assert len(set(keys)) == 3 and all(len(key) == 36 for key in keys)
