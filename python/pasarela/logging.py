"""A JSON log formatter with a stable field set, for log pipelines (Loki, Elasticsearch, CloudWatch).

.. code-block:: python

    import logging
    from pasarela.logging import JSONFormatter

    handler = logging.StreamHandler()
    handler.setFormatter(JSONFormatter())
    logging.getLogger("pasarela").addHandler(handler)

Every record is one line of JSON with ``time`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger`` and
``message``; ``trace_id`` and ``span_id`` (hex) of the OpenTelemetry span recording where the record was made
(pasarela's events carry them, as do records of opentelemetry-instrumentation-logging; any other record is given
those of the span recording where it is formatted); ``exception`` when the record carries one. pasarela's own
events add ``event`` and their fields (:data:`EVENT_FIELDS`):

- ``terminal.refused`` (logger ``pasarela.asgi``): ``cause`` (one of ``pasarela._telemetry.OPEN_OUTCOMES``),
  ``terminal_serial``, ``request_id`` (the request's ``X-Request-ID`` header, or null), ``status`` (401 or 503);
- ``webhook.verdict`` (``pasarela.webhooks``): ``verdict``, ``status``;
- ``client.retry`` (``pasarela.http``): ``operation``, ``attempt``, ``status`` (null: no answer).

No field ever holds a key, a signature, a token, a business code or an amount: the values are the fixed words
above, a terminal serial (public: it travels in the clear), and numbers.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from typing import Any

from . import _telemetry

__all__ = ["EVENT_FIELDS", "JSONFormatter"]

EVENT_FIELDS = {
    "terminal.refused": ("cause", "terminal_serial", "request_id", "status"),
    "webhook.verdict": ("verdict", "status"),
    "client.retry": ("operation", "attempt", "status"),
}
"""Each event's fields, besides ``time``, ``level``, ``logger``, ``message``, ``event``, ``trace_id``, ``span_id``."""


def _span_ids(record: logging.LogRecord, fields: Any) -> dict[str, str]:
    """The ids pasarela's event took when it was logged, else those opentelemetry-instrumentation-logging put on the
    record, else the span recording now (a record formatted where it was made)."""
    if isinstance(fields, dict) and "trace_id" in fields:
        return {"trace_id": fields["trace_id"], "span_id": fields["span_id"]}
    trace_id, span_id = getattr(record, "otelTraceID", "0"), getattr(record, "otelSpanID", "0")
    if trace_id.strip("0") and span_id.strip("0"):
        return {"trace_id": trace_id, "span_id": span_id}
    return _telemetry.span_ids()


class JSONFormatter(logging.Formatter):
    """Formats each record as one line of JSON (see the module's description for the fields)."""

    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.fromtimestamp(record.created, timezone.utc)
        line: dict[str, Any] = {
            "time": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "pasarela", None)
        if isinstance(fields, dict) and fields.get("event") in EVENT_FIELDS:
            line["event"] = fields["event"]
            line.update({name: fields.get(name) for name in EVENT_FIELDS[fields["event"]]})
        line.update(_span_ids(record, fields))
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)
