"""pasarela's OpenTelemetry instruments: the meter and tracer, made once at import (``pip install "pasarela[otel]"``).

Imported only by :mod:`pasarela._telemetry`, and only when ``opentelemetry-api`` is installed. The API is a no-op
until the application installs an SDK (``metrics.set_meter_provider``, ``trace.set_tracer_provider``), as every
OpenTelemetry instrumentation does. Counts are observable instruments read at collection time from the plain
counters :mod:`pasarela._telemetry` keeps (a synchronous ``Counter.add`` costs about as much as a seal); the
durations are histograms fed a sample of the calls (:data:`pasarela._telemetry.SAMPLE_EVERY`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Callable

from opentelemetry import metrics, trace
from opentelemetry.metrics import CallbackOptions, Observation

from ._version import __version__

__all__ = ["CLIENT_DURATION", "OPEN_DURATION", "SEAL_DURATION", "meter", "observe", "trace", "tracer"]

meter = metrics.get_meter("pasarela", __version__)
tracer = trace.get_tracer("pasarela", __version__)

# A seal takes 1-10 us, an open 2-20 us, an HTTP call to the service 10 ms-30 s: buckets in seconds.
_FAST = (1e-6, 2e-6, 3e-6, 5e-6, 7.5e-6, 1e-5, 1.5e-5, 2e-5, 3e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 1e-2)
_SLOW = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 30.0)

SEAL_DURATION = meter.create_histogram(
    "pasarela.terminal.seal.duration", unit="s", explicit_bucket_boundaries_advisory=_FAST,
    description="Duration of Terminal.seal, for a sample of the calls (one in SAMPLE_EVERY)")
OPEN_DURATION = meter.create_histogram(
    "pasarela.terminal.open.duration", unit="s", explicit_bucket_boundaries_advisory=_FAST,
    description="Duration of Terminal.open, accepted or refused, for a sample of the calls (one in SAMPLE_EVERY)")
CLIENT_DURATION = meter.create_histogram(
    "pasarela.client.duration", unit="s", explicit_bucket_boundaries_advisory=_SLOW,
    description="Duration of a call of the card or transfer client to the service, retries and pauses included")

Readings = Callable[[], Mapping[tuple[tuple[str, str], ...], int]]


def observe(name: str, description: str, readings: Readings) -> None:
    """An observable counter ``name`` reporting ``readings()``: {attributes as (key, value) pairs: count}."""

    def callback(options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(value, dict(attributes)) for attributes, value in readings().items()]

    meter.create_observable_counter(name, [callback], unit="{" + name.rsplit(".", 1)[-1] + "}",
                                    description=description)
