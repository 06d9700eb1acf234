"""A terminal gateway as docs/operating.md's recipe sets it up, for tests/terminal_side/test_refusal_channels.py:
uvicorn serving TerminalAuthMiddleware (an in-memory replay store) in front of an echo app, the OpenTelemetry SDK with
the Prometheus exporter (prometheus_client's own HTTP server on loopback) and a span exporter writing each finished span
as a JSON line, and pasarela's JSON log lines, each channel to where an operator (or whoever can read it) reads it.

Run: python tests/support/refusal_channels_server.py APP_PORT METRICS_PORT SPANS_FILE LOG_FILE
(the credentials: faulty_clients' BUSINESS_CODE and SERIAL).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for support.*

import uvicorn
from opentelemetry import metrics, trace
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from prometheus_client import start_http_server

from pasarela import Terminal
from pasarela.asgi import TerminalAuthMiddleware
from pasarela.logging import JSONFormatter
from pasarela.terminal.replay import InMemoryReplayStore
from support.faulty_clients import BUSINESS_CODE, SERIAL
from support.local_server import read_body


async def echo(scope: Any, receive: Any, send: Any) -> None:
    body = await read_body(receive)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


def main(app_port: int, metrics_port: int, spans_file: str, log_file: str) -> None:
    metrics.set_meter_provider(MeterProvider(metric_readers=[PrometheusMetricReader()]))
    start_http_server(metrics_port, addr="127.0.0.1")
    spans = open(spans_file, "w", buffering=1)  # noqa: SIM115 - open for the process's life
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(
        out=spans, formatter=lambda span: span.to_json(indent=None) + "\n")))
    trace.set_tracer_provider(provider)
    handler = logging.FileHandler(log_file)
    handler.setFormatter(JSONFormatter())
    logging.getLogger("pasarela").addHandler(handler)
    logging.getLogger("pasarela").setLevel(logging.INFO)
    app = TerminalAuthMiddleware(echo, Terminal(BUSINESS_CODE, SERIAL), replay_store=InMemoryReplayStore())
    uvicorn.run(app, host="127.0.0.1", port=app_port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])
