"""``pasarela sandbox --metrics``: pasarela's OpenTelemetry metrics of the sandbox's own traffic, served as Prometheus
text at ``/metrics`` (the terminal requests it opens, the webhooks and stores it uses).

It installs the OpenTelemetry SDK's MeterProvider with the Prometheus exporter's reader, as an application would;
it needs ``pip install "pasarela[otel]" opentelemetry-sdk opentelemetry-exporter-prometheus``.
"""

from __future__ import annotations

from collections.abc import Awaitable, MutableMapping
from typing import Any, Callable

from .. import _telemetry

__all__ = ["METRICS_PATH", "MetricsUnavailable", "with_metrics"]

METRICS_PATH = "/metrics"
Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


class MetricsUnavailable(Exception):
    """What --metrics needs is not installed (or PASARELA_OTEL turns it off): the message says what to do."""


def with_metrics(app: ASGIApp) -> ASGIApp:
    """``app``, with ``GET /metrics`` answered with the Prometheus text of pasarela's metrics."""
    if not _telemetry.ENABLED:
        raise MetricsUnavailable('--metrics needs opentelemetry-api (pip install "pasarela[otel]") and PASARELA_OTEL '
                                 "not set to off")
    try:
        from opentelemetry import metrics
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from opentelemetry.sdk.metrics import MeterProvider
        from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
    except ModuleNotFoundError as exc:
        raise MetricsUnavailable(f"--metrics needs {exc.name}: pip install opentelemetry-sdk "
                                 "opentelemetry-exporter-prometheus") from None
    metrics.set_meter_provider(MeterProvider(metric_readers=[PrometheusMetricReader()]))
    content_type = CONTENT_TYPE_LATEST.encode("latin-1")

    async def serve(scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
                    ) -> None:
        if scope["type"] != "http" or scope["path"] != METRICS_PATH:
            await app(scope, receive, send)
            return
        status, body = (200, generate_latest(REGISTRY)) if scope["method"] in ("GET", "HEAD") else (405, b"GET only\n")
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})

    return serve
