"""Issue 56 item 2: the receiver conformance run, against real endpoints served by uvicorn on loopback ports.

The project's own TransferWebhookReceiver passes every case with its in-memory ledger and with its Redis ledger (a
real redis-server); a deliberately naive receiver (no signature check, no size bound, no dedup) fails exactly the
cases it should, each with its fix; the check can be a function or an HTTP URL; the CLI prints the table and
exits 1 on a failure. (The PostgreSQL inbox receiver of issue 55 is on a branch not merged yet: once it is, it
joins RECEIVERS below as one more parameter.)"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from typing import Any, Callable

import pytest

from pasarela.errors import ConfigurationError
from pasarela.testing import ServedApp
from pasarela.testing.conformance import (
    CASES,
    ConformanceError,
    ConformanceOrder,
    ConformanceReport,
    run_conformance,
)
from pasarela.transfers import TransferEvent, TransferWebhookReceiver
from support.answering_receiver import read_all
from support.redis_server import RedisServer

SECRET, PUBLIC = "sandbox-webhook-secret", "sandbox-public-key"  # the sandbox's documented defaults
NAIVE_FAILS = {"redelivered", "concurrent", "final_then_older", "stale_id", "forged_signature", "wrong_key",
               "oversize", "slow", "retried"}


class Ledger:
    """What the merchant's code applied: order id -> status -> times (the merchant's own table)."""

    def __init__(self) -> None:
        self._applied: dict[str, Counter[str]] = defaultdict(Counter)
        self._lock = threading.Lock()

    def apply(self, order_id: str, status: str) -> None:
        with self._lock:
            self._applied[order_id][status] += 1

    def on_event(self, event: TransferEvent) -> None:
        metadata = event.raw.get("metadata") or {}
        self.apply(str(metadata.get("order")), str(event.status))

    def check(self, order: ConformanceOrder) -> Mapping[str, int]:
        with self._lock:
            return dict(self._applied[order.order_id])


class NaiveReceiver:
    """The receiver a merchant writes in ten minutes: reads any body, trusts it, applies every delivery."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    async def __call__(self, scope: Mapping[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] != "http":
            return
        body = await read_all(receive)
        event = json.loads(body)
        self.ledger.apply(str((event.get("metadata") or {}).get("order")), str(event.get("status")))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


class CheckEndpoint:
    """The merchant's check over HTTP: GET ?order=<id> answers the ledger's counts."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.asked: list[dict[str, str]] = []

    async def __call__(self, scope: Mapping[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] != "http":
            return
        from urllib.parse import parse_qsl

        query = dict(parse_qsl(scope["query_string"].decode()))
        self.asked.append(query)
        counts = self.ledger.check(ConformanceOrder(query["order"], query["token"], query["transactionReference"]))
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(counts).encode()})


def _receiver(applied: Ledger, **options: Any) -> TransferWebhookReceiver:
    return TransferWebhookReceiver(applied.on_event, secret=SECRET, merchant_id=PUBLIC, **options)


@pytest.fixture
def redis_ledger(redis_server: RedisServer, request: pytest.FixtureRequest) -> Iterator[Any]:
    from pasarela.transfers.webhook_dedup_redis import RedisEventLedger

    with redis_server.client() as client:
        ledger = RedisEventLedger(client, prefix=f"conformance:{request.node.name}:")
        ledger.declare_memory_complete()  # a new prefix: nothing handled was forgotten
        yield ledger


def _verdicts(report: ConformanceReport) -> dict[str, bool]:
    return {case.name: case.passed for case in report.cases}


def test_the_project_receiver_with_its_memory_ledger_passes_every_case() -> None:
    ledger = Ledger()
    with ServedApp(_receiver(ledger)) as hooks:
        report = run_conformance(hooks.url + "/hooks", ledger.check)
    report.raise_for_failures()
    assert [case.name for case in report.cases] == [case.name for case in CASES]
    by_name = {case.name: case for case in report.cases}
    assert by_name["concurrent"].answers.count(200) >= 2           # both twins ended in a 200
    assert by_name["retried"].answers == (200, 200, 200, 200)      # 3 answers lost, retried on the clock
    assert by_name["stale_id"].answers == (401,) and by_name["forged_signature"].answers == (401,)
    assert by_name["wrong_key"].answers == (401,)


def test_the_project_receiver_with_its_redis_ledger_passes_every_case(redis_ledger: Any) -> None:
    ledger = Ledger()
    with ServedApp(_receiver(ledger, ledger=redis_ledger)) as hooks:
        report = run_conformance(hooks.url + "/hooks", ledger.check)
    report.raise_for_failures()


def test_a_naive_receiver_fails_exactly_the_cases_it_should_with_their_fixes() -> None:
    ledger = Ledger()
    with ServedApp(NaiveReceiver(ledger)) as hooks:
        report = run_conformance(hooks.url + "/hooks", ledger.check)
    failed = {case.name: case for case in report.failed}
    assert set(failed) == NAIVE_FAILS
    assert not report.passed
    assert "deduplicate on the event" in failed["redelivered"].fix
    assert "claim the event atomically" in failed["concurrent"].fix
    assert "verify X-Kushki-Signature" in failed["forged_signature"].fix
    assert "X-Kushki-Key" in failed["wrong_key"].fix
    assert "bound the body" in failed["oversize"].fix
    assert failed["redelivered"].observed == "approvedTransaction 2x; answers 200, 200"
    assert failed["retried"].applied["approvedTransaction"] == 4
    assert failed["final_then_older"].applied["initializedTransaction"] == 1
    table = report.table()
    assert "FAIL" in table and f"3 of {len(CASES)} cases pass" in table
    with pytest.raises(AssertionError, match="9 conformance case"):
        report.raise_for_failures()


def test_a_receiver_without_merchant_id_fails_wrong_key_only() -> None:
    ledger = Ledger()
    receiver = TransferWebhookReceiver(ledger.on_event, secret=SECRET)
    with ServedApp(receiver) as hooks:
        report = run_conformance(hooks.url + "/hooks", ledger.check)
    assert {case.name for case in report.failed} == {"wrong_key"}


def test_a_receiver_that_never_answers_200_fails_the_genuine_cases_for_it() -> None:
    ledger = Ledger()
    receiver = _receiver(ledger)

    async def accepted_not_ok(scope: Mapping[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        """Handles the event, then answers 202: the service retries anything but 200."""

        async def as_202(message: Mapping[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] == 200:
                message = {**message, "status": 202}
            await send(message)

        await receiver(scope, receive, as_202)

    with ServedApp(accepted_not_ok) as hooks:
        report = run_conformance(hooks.url + "/hooks", ledger.check, cases=["genuine", "redelivered"])
    assert [case.passed for case in report.cases] == [False, False]
    assert report.cases[0].fix.startswith("answer 200 once the event is handled")
    assert report.cases[0].answers[:2] == (202, 202) and len(report.cases[0].answers) == 8


def test_the_check_can_be_an_http_url() -> None:
    ledger = Ledger()
    endpoint = CheckEndpoint(ledger)
    with ServedApp(_receiver(ledger)) as hooks, ServedApp(endpoint) as check:
        report = run_conformance(hooks.url + "/hooks", check.url + "/orders/effects", cases=["genuine", "slow"])
    report.raise_for_failures()
    assert len(endpoint.asked) == 2 and all(set(query) == {"order", "token", "transactionReference"}
                                            for query in endpoint.asked)


def test_a_bad_argument_or_a_broken_check_is_said_plainly() -> None:
    with pytest.raises(ConfigurationError, match="no conformance case nope"):
        run_conformance("http://127.0.0.1:9/hooks", lambda order: {}, cases=["nope"])
    with pytest.raises(ConfigurationError, match="webhook_url must be an absolute"):
        run_conformance("hooks", lambda order: {})
    ledger = Ledger()
    with ServedApp(_receiver(ledger)) as hooks:
        with pytest.raises(ConformanceError, match="count for approvedTransaction must be a whole number"):
            run_conformance(hooks.url, lambda order: {"approvedTransaction": "1"}, cases=["genuine"])
        with pytest.raises(ConformanceError, match=r"the check http://127\.0\.0\.1:9/x could not be asked"):
            run_conformance(hooks.url, "http://127.0.0.1:9/x", cases=["genuine"])


def test_the_cli_prints_the_table_and_exits_1_on_a_failure() -> None:
    ledger = Ledger()
    endpoint = CheckEndpoint(ledger)
    with ServedApp(NaiveReceiver(ledger)) as naive, ServedApp(endpoint) as check:
        run = subprocess.run([sys.executable, "-m", "pasarela", "sandbox", "conformance", "--webhook-url",
                              naive.url + "/hooks", "--check-url", check.url, "--case", "genuine", "--case",
                              "forged_signature"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].split() == ["case", "expected", "observed", "verdict", "how", "to", "fix"]
    assert lines[1].startswith("genuine ") and " pass " in lines[1]
    assert lines[2].startswith("forged_signature ") and " FAIL " in lines[2] and "verify X-Kushki-Signature" in lines[2]
    assert "1 of 2 cases pass" in run.stdout


def test_the_cli_passes_a_good_receiver_as_json_and_refuses_bad_options() -> None:
    ledger = Ledger()
    with ServedApp(_receiver(ledger)) as hooks, ServedApp(CheckEndpoint(ledger)) as check:
        run = subprocess.run([sys.executable, "-m", "pasarela", "sandbox", "conformance", "--webhook-url",
                              hooks.url + "/hooks", "--check-url", check.url, "--output", "json"],
                             capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    answer = json.loads(run.stdout)
    assert answer["passed"] is True and len(answer["cases"]) == len(CASES)
    missing = subprocess.run([sys.executable, "-m", "pasarela", "sandbox", "conformance", "--webhook-url",
                              "http://127.0.0.1:9/h"], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "--check-url" in missing.stderr and len(missing.stderr.splitlines()) == 1
    unreachable = subprocess.run([sys.executable, "-m", "pasarela", "sandbox", "conformance", "--webhook-url",
                                  "http://127.0.0.1:9/h", "--check-url", "http://127.0.0.1:9/c", "--case", "genuine"],
                                 capture_output=True, text=True, timeout=120)
    assert unreachable.returncode == 2, unreachable.stdout + unreachable.stderr
    assert "could not be asked" in unreachable.stderr


def test_the_fixture_runs_it_with_the_session_configuration(pytester: pytest.Pytester,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_ADDOPTS"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest('''
        import pytest

        @pytest.fixture(scope="session")
        def pasarela_sandbox_config():
            return {"webhook_secret": "shop-secret", "public_key": "pk-shop", "private_key": "sk-shop"}
    ''')
    pytester.makepyfile(test_receiver='''
        from collections import Counter
        from pasarela.testing import ServedApp
        from pasarela.transfers import TransferWebhookReceiver

        def test_my_endpoint(pasarela_conformance):
            applied = {}
            def on_event(event):
                applied.setdefault(event.raw["metadata"]["order"], Counter())[event.status] += 1
            receiver = TransferWebhookReceiver(on_event, secret="shop-secret", merchant_id="pk-shop")
            with ServedApp(receiver) as hooks:
                report = pasarela_conformance(hooks.url, lambda order: applied.get(order.order_id, {}))
            report.raise_for_failures()
            assert len(report.cases) == 12
    ''')
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
