"""The real OpenTelemetry SDK for the tests: one MeterProvider with an InMemoryMetricReader and one TracerProvider
with an InMemorySpanExporter, installed once per process (the API accepts a provider once)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

Key = tuple[str, frozenset[tuple[str, Any]]]


@dataclass
class Sdk:
    reader: InMemoryMetricReader
    spans: InMemorySpanExporter

    def points(self) -> dict[Key, Any]:
        """(metric name, attributes) -> a counter's value, or a histogram's count."""
        found: dict[Key, Any] = {}
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        value = point.count if isinstance(point, HistogramDataPoint) else point.value
                        found[(metric.name, frozenset(point.attributes.items()))] = value
        return found

    def attribute_values(self) -> Iterable[str]:
        """Every attribute value of every metric point and finished span, as text."""
        for _, attributes in self.points():
            yield from (str(value) for _, value in attributes)
        for span in self.spans.get_finished_spans():
            yield span.name
            yield from (str(value) for value in (span.attributes or {}).values())


_sdk: Sdk | None = None


def installed() -> Sdk:
    global _sdk
    if _sdk is None:
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        _sdk = Sdk(reader, exporter)
    return _sdk


def delta(before: dict[Key, Any], after: dict[Key, Any]) -> dict[Key, Any]:
    """What changed between two readings (the counters are cumulative over the process)."""
    return {key: value - before.get(key, 0) for key, value in after.items() if value != before.get(key, 0)}


def key(name: str, **attributes: Any) -> Key:
    return (name, frozenset(attributes.items()))


OPENS = "pasarela.terminal.opens"


def opened(sdk: Sdk, before: dict[Any, Any]) -> dict[str, int]:
    return {dict(attributes)["outcome"]: value for (name, attributes), value in delta(before, sdk.points()).items()
            if name == OPENS}
