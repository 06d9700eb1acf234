"""OpenTelemetry with the real SDK on the terminal side: pasarela.terminal.seals by method (seal_many counted per
request), pasarela.terminal.opens by outcome for a good request and each kind of bad one (the faulty clients of
tests/support/faulty_clients.py, each making one mistake), the sampled durations, and TerminalAuthMiddleware's span per
request with its outcome; no attribute holds a secret."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import subprocess
import sys
import threading
from typing import Any, Callable

import pytest

import pasarela._telemetry as telemetry
from pasarela import AuthError, Terminal, _binding
from pasarela.asgi import TerminalAuthMiddleware
from pasarela.auth_limit import AuthFailureLimiter
from pasarela.logging import JSONFormatter
from pasarela.terminal.replay import InMemoryReplayStore
from support.faulty_clients import (
    BUSINESS_CODE,
    FAULTY,
    HANDMADE,
    NOON,
    SERIAL,
    Captured,
    SpecClient,
    WrongCredentialsClient,
)
from support.otel_sdk import OPENS, Sdk, delta, installed, key, opened


@pytest.fixture(scope="module")
def sdk() -> Sdk:
    assert telemetry.ENABLED, "opentelemetry-api must be installed for these tests (the dev extra has it)"
    return installed()


def test_seals_are_counted_by_method_and_seal_many_per_request(sdk: Sdk) -> None:
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    before = sdk.points()
    terminal.seal({"amount": 1})
    terminal.seal(None, method="PUT")
    terminal.seal(b'{"a":1}', method="get")
    terminal.seal_many([{"n": n} for n in range(70)])
    changed = delta(before, sdk.points())
    seals = {dict(attributes)["method"]: value for (name, attributes), value in changed.items()
             if name == "pasarela.terminal.seals"}
    assert seals == {"POST": 71, "PUT": 1, "GET": 1}


def test_the_first_seal_and_open_and_then_one_in_64_are_timed(sdk: Sdk) -> None:
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    before = sdk.points()
    sealed = [terminal.seal({"n": n}) for n in range(2 * telemetry.SAMPLE_EVERY)]
    for one in sealed:
        terminal.open("POST", one.headers, one.body, now=one.timestamp)
    changed = delta(before, sdk.points())
    assert changed[key("pasarela.terminal.seal.duration", method="POST")] == 2
    assert changed[key("pasarela.terminal.open.duration", outcome="ok")] == 2


def test_counts_stay_exact_with_threads_sharing_a_terminal(sdk: Sdk) -> None:
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    one = terminal.seal({"amount": 1})
    before = sdk.points()

    def work() -> None:
        for _ in range(500):
            terminal.seal({"amount": 1})
            terminal.open("POST", one.headers, one.body, now=one.timestamp)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    changed = delta(before, sdk.points())
    assert changed[key("pasarela.terminal.seals", method="POST")] == 2000
    assert changed[key(OPENS, outcome="ok")] == 2000


def _in_python() -> tuple[int, int]:
    """The seals and the opens counted so far by pasarela.terminal.counting's wrappers."""
    return telemetry._read(telemetry._seal_count), telemetry._read(telemetry._open_count)


def test_the_fast_paths_are_counted_by_their_c_call_the_other_ways_by_the_wrappers(sdk: Sdk) -> None:
    # issue 40: an itertools.count call per seal cost 2-4% of a seal at 256 B; seal of a dict and open of a POST's
    # bytes are counted by pasarela._fastcall's call instead, the other ways (and, where pasarela._fastcall is not
    # built, every way) by the wrappers pasarela.terminal.counting installs once (issue 54)
    assert telemetry.FAST_PATHS_COUNTED == _binding.FASTCALL
    in_python_too = 0 if telemetry.FAST_PATHS_COUNTED else 1
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    one = terminal.seal({"amount": 1})
    before = sdk.points()
    in_python = _in_python()
    terminal.seal({"amount": 2})
    terminal.seal({"amount": 3}, method="PUT")
    terminal.open("POST", one.headers, one.body, now=one.timestamp)
    assert _in_python() == (in_python[0] + 2 * in_python_too, in_python[1] + in_python_too)
    terminal.seal(b'{"amount":4}')  # the other ways: counted by the wrappers
    terminal.open("PUT", one.headers, one.body, now=one.timestamp)
    assert _in_python() == (in_python[0] + 2 * in_python_too + 1, in_python[1] + in_python_too + 1)
    changed = delta(before, sdk.points())
    assert changed[key("pasarela.terminal.seals", method="POST")] == 2
    assert changed[key("pasarela.terminal.seals", method="PUT")] == 1
    assert changed[key(OPENS, outcome="ok")] == 2


def test_counting_is_installed_once_and_terminal_s_methods_hold_none() -> None:
    # issue 54: no telemetry in seal, open or open_bytes; with pasarela[otel] the ways their fast path hands on are
    # wrapped once (and install() again changes nothing)
    from pasarela.terminal import counting, envelope

    wrapped = {"_seal_text", "_open_rest"} if telemetry.FAST_PATHS_COUNTED else {"seal", "open", "open_bytes"}
    before = {name: Terminal.__dict__[name] for name in ("seal", "open", "open_bytes", "_seal_text", "_open_rest")}
    assert {name for name, method in before.items() if hasattr(method, "__wrapped__")} == wrapped
    counting.install()
    assert before == {name: Terminal.__dict__[name] for name in before}
    source = inspect.getsource(envelope)
    assert "_COUNTING" not in source and "next_seal" not in source and "open_failed" not in source


def test_the_cffi_path_in_the_c_functions_place_is_counted_by_the_wrappers() -> None:
    # PASARELA_NO_FASTCALL=1 (as on PyPy): no C call counts, so seal, open and open_bytes themselves are wrapped
    probe = """
import json, pasarela, pasarela._telemetry as telemetry
from pasarela import AuthError, Terminal
terminal = Terminal("bc-1", "SN-1")
one = terminal.seal({"amount": 1})
terminal.seal({"amount": 2}, method="GET")
terminal.open("POST", one.headers, one.body, now=one.timestamp)
terminal.open_bytes("POST", one.headers, one.body, now=one.timestamp)
try:
    terminal.open("POST", {**one.headers, "Authorization": "Basic " + "0" * 128}, one.body, now=one.timestamp)
except AuthError:
    pass
seals = {m[0][1]: n for m, n in telemetry._seal_readings().items()}
print(json.dumps({"fast": telemetry.FAST_PATHS_COUNTED, "seals": seals,
                  "opens": {o[0][1]: n for o, n in telemetry._open_readings().items() if n}}))
"""
    out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "PASARELA_NO_FASTCALL": "1"},
                         capture_output=True, text=True, check=True, timeout=60).stdout
    assert json.loads(out) == {"fast": False, "seals": {"GET": 1, "POST": 1, "PUT": 0, "PATCH": 0},
                               "opens": {"ok": 2, "not_verified": 1}}


def test_an_open_whose_workspace_grows_is_counted_once(sdk: Sdk) -> None:
    # a thread's first workspace holds 4 KiB of JSON: open_post reports it too small, and is called again once it grew
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    big = terminal.seal({"note": "n" * 20_000})
    before = sdk.points()
    opened_payloads: list[Any] = []
    thread = threading.Thread(target=lambda: opened_payloads.append(
        terminal.open("POST", big.headers, big.body, now=big.timestamp)))
    thread.start()
    thread.join()
    assert opened_payloads == [{"note": "n" * 20_000}]
    assert opened(sdk, before) == {"ok": 1}


@pytest.mark.parametrize(("outcome", "make"), FAULTY + HANDMADE, ids=[o for o, _ in FAULTY + HANDMADE])
def test_each_kind_of_request_is_counted_under_its_outcome(sdk: Sdk, outcome: str,
                                                           make: Callable[[], Captured]) -> None:
    captured = make()
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    before = sdk.points()
    try:
        terminal.open(captured.method, captured.headers, captured.body, captured.params, now=NOON)
    except AuthError as exc:
        assert outcome != "ok", exc.reason
        assert telemetry.refusal_cause(exc.reason) == outcome, exc.reason
    assert opened(sdk, before) == {outcome: 1}


def test_every_cause_is_an_outcome_and_the_unknown_is_error() -> None:
    assert telemetry.refusal_cause("something new") == "error"
    assert telemetry.refusal_cause(None) == "error"
    assert set(telemetry.OPEN_OUTCOMES) >= {cause for cause, _ in FAULTY + HANDMADE}


# --- TerminalAuthMiddleware: a span per request, replays and the limiter counted, the refusal logged -----------


async def _app(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def _call(app: Any, captured: Captured, headers: dict[str, str] | None = None) -> int:
    raw = [(name.lower().encode(), value.encode()) for name, value in (headers or captured.headers).items()]
    scope = {"type": "http", "method": captured.method, "path": "/pay", "headers": raw, "query_string": b"",
             "client": ("127.0.0.1", 5000)}
    sent: list[Any] = []

    async def receive() -> Any:
        return {"type": "http.request", "body": captured.body or b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return int(sent[0]["status"])


def test_the_middleware_makes_a_span_per_request_with_its_outcome(sdk: Sdk, caplog: pytest.LogCaptureFixture
                                                                  ) -> None:
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    limiter = AuthFailureLimiter(max_failures=3, window=60, clock=lambda: NOON)
    app = TerminalAuthMiddleware(_app, terminal, replay_store=InMemoryReplayStore(clock=lambda: NOON),
                                 clock=lambda: NOON, failure_limiter=limiter)
    good = SpecClient().request({"amount": 1})
    bad = WrongCredentialsClient().request({"amount": 1})
    before = sdk.points()
    sdk.spans.clear()
    with caplog.at_level(logging.WARNING, logger="pasarela.asgi"):
        statuses = [_call(app, good), _call(app, good),  # accepted, then replayed
                    _call(app, bad), _call(app, bad),  # with the replay, three failures: the limit
                    _call(app, SpecClient().request({"amount": 2}, iv=bytes(16)),
                          {**good.headers, "X-Request-ID": "req-42"})]  # refused unopened
    assert statuses == [200, 401, 401, 401, 401]
    assert opened(sdk, before) == {"ok": 1, "replayed": 1, "not_verified": 2, "rate_limited": 1}
    spans = [span for span in sdk.spans.get_finished_spans() if span.name == "pasarela.terminal.verify"]
    assert [span.attributes["pasarela.terminal.outcome"] for span in spans if span.attributes] == [
        "ok", "replayed", "not_verified", "not_verified", "rate_limited"]
    assert all(span.kind.name == "INTERNAL" and span.name == "pasarela.terminal.verify" for span in spans)
    refusal = caplog.records[-1]
    fields = refusal.pasarela  # type: ignore[attr-defined]
    ids = {"trace_id": format(spans[-1].context.trace_id, "032x"), "span_id": format(spans[-1].context.span_id, "016x")}
    assert fields == {"event": "terminal.refused", "cause": "rate_limited", "terminal_serial": SERIAL,
                      "request_id": "req-42", "status": 401, **ids}
    line = json.loads(JSONFormatter().format(refusal))  # formatted later, outside the span: the ids it was logged in
    assert (line["event"], line["cause"], line["request_id"]) == ("terminal.refused", "rate_limited", "req-42")
    assert (line["trace_id"], line["span_id"]) == (ids["trace_id"], ids["span_id"])
    values = [str(value) for span in spans for value in (span.attributes or {}).values()]
    for secret in (BUSINESS_CODE, json.loads(good.body or b"{}")["data"], good.headers["Authorization"][6:]):
        assert all(secret not in value for value in values)


NO_SDK_THEN_SDK = """
import asyncio
from opentelemetry import context, trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pasarela import Terminal
from pasarela.asgi import TerminalAuthMiddleware

seen = []

async def app(scope, receive, send):
    seen.append(dict(context.get_current()))  # a span opened around the app, even a no-op one, is in the context
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})

terminal = Terminal("bc-spans", "SN-1")
middleware = TerminalAuthMiddleware(app, terminal)

def call():
    sealed = terminal.seal({"amount": 1})
    scope = {"type": "http", "method": "POST", "path": "/", "query_string": b"",
             "headers": [(name.lower().encode(), value.encode()) for name, value in sealed.headers.items()]}
    async def receive():
        return {"type": "http.request", "body": sealed.body, "more_body": False}
    async def send(message):
        pass
    asyncio.run(middleware(scope, receive, send))

call()
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
call()
print(len(seen[0]), len(seen[1]) > 0, [span.name for span in exporter.get_finished_spans()])
"""


def test_the_middleware_opens_a_span_only_once_an_sdk_records_them() -> None:
    # the API alone (no SDK) records nothing: the middleware opens no span (a no-op span cost ~25 us of a server's CPU
    # per request); once the application installs an SDK, in the same process, every request has its span
    result = subprocess.run([sys.executable, "-c", NO_SDK_THEN_SDK], capture_output=True, text=True, timeout=60,
                            env={key: value for key, value in os.environ.items() if key != "PASARELA_OTEL"})
    assert result.returncode == 0, result.stderr
    assert result.stdout == "0 True ['pasarela.terminal.verify']\n"
