"""One call to the service, from request to typed reply, without doing any I/O itself.

:func:`exchange` is a generator: it yields the :class:`OutgoingRequest` to send (or a
:class:`Pause` to sleep), is sent back what happened (:class:`Received` or :class:`Failed`), and
finally returns the :class:`Reply` or raises the mapped error. The sync and async transports
(:mod:`pasarela.http.transport`) only drive it, so headers, retries, the idempotency key, error
mapping and auditing exist once for both.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from .. import _telemetry
from ..errors import ResponseShapeError, TransportError
from .audit import AuditRecord, notify, recordable_body
from .config import MerchantKey, ServiceConfig
from .error_mapping import api_error
from .path import path_segment
from .redaction import redact_headers

__all__ = [
    "Endpoint",
    "Exchange",
    "Failed",
    "OutgoingRequest",
    "Pause",
    "Received",
    "Reply",
    "ServiceCall",
    "exchange",
]

IDEMPOTENCY_HEADER = "Idempotency-Key"
_log = logging.getLogger("pasarela.http")
_IDEMPOTENT_METHODS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True)
class ServiceCall:
    """A call ready to go: method, path below the base URL, key, JSON body."""

    method: str
    path: str
    key: MerchantKey
    body: Optional[Mapping[str, Any]] = field(default=None, repr=False)  # may hold a card
    idempotency_key: Optional[str] = None
    """POST only: the caller's own key (to repeat a call safely); a fresh one is made when ``None``."""
    template: Optional[str] = None
    """The documented path with its parameters unfilled (what spans and metrics name: never a token)."""

    @property
    def idempotent(self) -> bool:
        return self.method in _IDEMPOTENT_METHODS

    @property
    def operation(self) -> str:
        """What spans, metrics and logs call it: the service and the path's last fixed segment ("transfer.init",
        "card.charges"), from the template; "other" for a call made without one."""
        if self.template is None:
            return "other"
        segments = [part for part in self.template.split("/") if part and not part.startswith("{")]
        return f"{segments[0]}.{segments[-1]}" if len(segments) > 1 else "other"


@dataclass(frozen=True)
class Endpoint:
    """A documented operation: method, path template (``{token}``: a named path parameter) and the key it needs."""

    method: str
    path: str
    key: MerchantKey

    def call(
        self, body: Optional[Mapping[str, Any]] = None, *, idempotency_key: Optional[str] = None, **parameters: str
    ) -> ServiceCall:
        """The call with each path parameter put in as one segment (:func:`~.path.path_segment`): a
        ValidationError naming the parameter, before anything is sent, when a value would change the path."""
        path = self.path.format_map({name: path_segment(name, value) for name, value in parameters.items()})
        return ServiceCall(self.method, path, self.key, body, idempotency_key, self.path)


@dataclass(frozen=True)
class OutgoingRequest:
    method: str
    url: str
    headers: Mapping[str, str] = field(repr=False)  # holds the private key
    content: Optional[bytes] = field(repr=False)


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Received:
    status: int
    content: bytes


@dataclass(frozen=True)
class Failed:
    """The request got no answer; ``description`` names the failure (never a header)."""

    description: str


@dataclass(frozen=True)
class Reply(Received):
    """A 2xx answer: what was received, the call's result."""

    def json(self) -> Any:
        """The body parsed as JSON; a body that is not JSON is a ResponseShapeError."""
        try:
            return json.loads(self.content)
        except (ValueError, RecursionError):
            raise ResponseShapeError("$", f"the body of the HTTP {self.status} answer is not JSON "
                                          "(or nests too deep)") from None


Exchange = Generator[Union[OutgoingRequest, Pause], Union[Received, Failed, None], Reply]


def _prepare(call: ServiceCall, config: ServiceConfig) -> tuple[OutgoingRequest, Optional[str]]:
    key_name, key_value = config.key_header(call.key)
    headers = {"Accept": "application/json", "User-Agent": config.user_agent, key_name: key_value}
    content = None
    if call.body is not None:
        content = json.dumps(call.body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
        headers["Content-Type"] = "application/json"
    idempotency_key = None
    if call.method == "POST":
        idempotency_key = call.idempotency_key or config.idempotency_keys()
        headers[IDEMPOTENCY_HEADER] = idempotency_key
    return OutgoingRequest(call.method, config.base_url + call.path, headers, content), idempotency_key


def exchange(call: ServiceCall, config: ServiceConfig) -> Exchange:
    """Drive one call: send, record, retry idempotent calls on failure or 5xx, map errors."""
    request, idempotency_key = _prepare(call, config)
    attempt = 0
    while True:
        attempt += 1
        outcome = yield request
        if outcome is None:
            raise RuntimeError("the transport must send back what became of the request")
        notify(config.audit, _record(config, request, idempotency_key, attempt, outcome))
        failed = isinstance(outcome, Failed) or outcome.status >= 500
        if failed and call.idempotent and config.retry.allows_another(attempt):
            delay = config.retry.delay(attempt)
            _log.info("retrying %s after attempt %d (%s) in %.3f s", call.operation, attempt,
                      outcome.description if isinstance(outcome, Failed) else f"HTTP {outcome.status}", delay,
                      extra={"pasarela": {"event": "client.retry", "operation": call.operation, "attempt": attempt,
                                          "status": None if isinstance(outcome, Failed) else outcome.status,
                                          **_telemetry.span_ids()}})
            yield Pause(delay)
            continue
        if isinstance(outcome, Failed):
            raise TransportError(f"{call.method} {call.path}: {outcome.description} (after {attempt} attempt(s))",
                                 idempotency_key=idempotency_key)
        if not 200 <= outcome.status < 300:
            raise api_error(outcome.status, outcome.content)
        return Reply(outcome.status, outcome.content)


def _record(
    config: ServiceConfig,
    request: OutgoingRequest,
    idempotency_key: Optional[str],
    attempt: int,
    outcome: Union[Received, Failed],
) -> AuditRecord:
    if isinstance(outcome, Received):
        status, response_body, error = outcome.status, recordable_body(outcome.content), None
    else:
        status, response_body, error = None, None, outcome.description
    return AuditRecord(
        at=config.clock(),
        attempt=attempt,
        method=request.method,
        url=request.url,
        request_headers=redact_headers(request.headers),
        request_body=recordable_body(request.content),
        idempotency_key=idempotency_key,
        status=status,
        response_body=response_body,
        error=error,
    )
