"""pasarela.logging.JSONFormatter: one JSON object a line, the documented fields of each event, the trace and span
ids of the active OpenTelemetry span, and no secret."""



from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator

import pytest

from pasarela.http import RetryPolicy, ServiceConfig
from pasarela.logging import EVENT_FIELDS, JSONFormatter
from pasarela.transfers import TransferClient, TransferWebhookReceiver
from support.local_server import ScriptedService, scripted_service_fixtures
from support.otel_sdk import installed
from support.signed_webhooks import BODY, NOW, SECRET, Clock, signed

scripted_server, service = scripted_service_fixtures()
COMMON = {"time", "level", "logger", "message"}


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JSONFormatter())
    root = logging.getLogger("pasarela")
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def records(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_webhook_verdict_is_one_json_line_with_its_fields(lines: io.StringIO) -> None:
    receiver = TransferWebhookReceiver(lambda event: None, secret=SECRET, clock=Clock(NOW))
    receiver.handle(signed(), BODY)
    [line] = [record for record in records(lines) if record.get("event") == "webhook.verdict"]
    assert set(line) == COMMON | {"event", *EVENT_FIELDS["webhook.verdict"]}
    assert (line["verdict"], line["status"], line["logger"], line["level"]) == ("handled", 200, "pasarela.webhooks",
                                                                              "INFO")
    assert str(line["time"]).endswith("Z")


def test_a_client_retry_carries_the_trace_and_span_of_its_call(lines: io.StringIO, service: ScriptedService) -> None:
    sdk = installed()
    sdk.spans.clear()
    service.reply("GET", "/transfer/v1/status/tok-secret-1", 503)
    service.reply("GET", "/transfer/v1/status/tok-secret-1", 200, {"status": "PAID"})
    config = ServiceConfig(base_url=service.base_url, public_merchant_id="pk-1", private_merchant_id="sk-secret-1",
                           retry=RetryPolicy(max_attempts=2, base_delay=0.0, jitter=lambda: 0.0))
    with TransferClient(config, sleep=lambda seconds: None) as client:
        client.status("tok-secret-1")
    [retry] = [record for record in records(lines) if record.get("event") == "client.retry"]
    assert set(retry) == COMMON | {"event", "trace_id", "span_id", *EVENT_FIELDS["client.retry"]}
    assert (retry["operation"], retry["attempt"], retry["status"]) == ("transfer.status", 1, 503)
    [span] = [span for span in sdk.spans.get_finished_spans() if span.name == "GET /transfer/v1/status/{token}"]
    assert retry["trace_id"] == format(span.context.trace_id, "032x")
    assert retry["span_id"] == format(span.context.span_id, "016x")
    assert "tok-secret-1" not in lines.getvalue() and "sk-secret-1" not in lines.getvalue()


def test_records_of_other_loggers_and_exceptions_keep_the_common_fields() -> None:
    formatter = JSONFormatter()
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.getLogger("elsewhere").makeRecord("elsewhere", logging.ERROR, __file__, 1, "failed %s",
                                                           ("here",), exc_info=sys.exc_info())
    line = json.loads(formatter.format(record))
    assert set(line) == COMMON | {"exception"}
    assert line["message"] == "failed here" and "ValueError: boom" in line["exception"]
