"""What the rest of the package tells OpenTelemetry: plain counters on the hot paths, and the hooks they call.

:data:`ENABLED` is True when ``opentelemetry-api`` is installed (``pip install "pasarela[otel]"``) and the
environment does not say ``PASARELA_OTEL=off``; otherwise nothing of OpenTelemetry is imported and every hook
here does nothing. Seals and opens are counted once, where their result is made (:data:`FAST_PATHS_COUNTED`: the
fast paths by ``pasarela._fastcall``'s C calls, at no cost in Python; the others by the wrappers
:mod:`pasarela.terminal.counting` installs, with ``itertools.count``, one C call, atomic under the GIL) and read at
collection time by :mod:`pasarela._otel`'s observable counters; one call in
:data:`SAMPLE_EVERY` is timed for the duration histograms. Attribute values come from fixed sets only (a method,
a cause, a verdict, an operation name, a status class, a store name): never a key, a token, a code or an amount.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Optional

from . import _binding
from .errors import BAD_DATA, BAD_LENGTH, NOT_VERIFIED, SIGNATURE_FORMAT, AuthError

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["ENABLED", "KNOWN_METHODS", "METHODS", "OPEN_OUTCOMES", "OTHER_SEALED", "SAMPLE_EVERY", "STORES",
           "TERMINAL_OPERATION", "WEBHOOK_VERDICTS", "ClientCall", "client_call", "clock", "http_method",
           "middleware_refused", "next_open", "next_seal", "open_failed", "open_refused", "open_took", "refusal_cause",
           "seal_took", "sealed_many", "span_ids", "store_error", "tracing", "verify_span", "webhook_verdict"]


def _load_otel() -> Optional[ModuleType]:
    if os.environ.get("PASARELA_OTEL", "").strip().lower() in {"off", "0", "false", "no"}:
        return None
    try:
        from . import _otel
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] != "opentelemetry":
            raise
        return None
    return _otel


_otel_module = _load_otel()
ENABLED = _otel_module is not None

SAMPLE_EVERY = 64
"""One seal and one open in this many is timed for the duration histograms (a power of two)."""
SAMPLE_MASK = SAMPLE_EVERY - 1
clock = time.perf_counter_ns

METHODS = ("GET", "POST", "PUT", "PATCH")
_seal_count = itertools.count()
next_seal: Callable[[], int] = _seal_count.__next__
"""Counts one seal made in Python (pasarela.terminal.counting's wrappers) and returns how many there were before it
(the first call, and every SAMPLE_EVERY-th after it, is timed): one C call."""
_other_seals = {method: itertools.count() for method in METHODS if method != "POST"}
OTHER_SEALED: Mapping[str, Callable[[], int]] = {method: count.__next__ for method, count in _other_seals.items()}
"""By method: counts one of those seals whose method is not the default POST (the per-method split is made at
collection time)."""
_open_count = itertools.count()
next_open: Callable[[], int] = _open_count.__next__
"""Counts one open made in Python (as next_seal; its refusals counted by cause: open_failed)."""

FAST_PATHS_COUNTED = ENABLED and _binding.FASTCALL
"""Terminal.seal of a dict and Terminal.open and Terminal.open_bytes of a POST's bytes are counted, and one call in
SAMPLE_EVERY timed, by the one C call each makes when it makes their result (pasarela._fastcall's seal_payload,
open_post and open_post_bytes: csrc/cpython/counting.h), installed here once; every other way through them is
counted by pasarela.terminal.counting, which wraps Terminal's slower ways once (or, where pasarela._fastcall is not
built, Terminal's methods themselves). _fastcall times the C call alone (a seal's or open's argument checks before it
are not in its samples)."""
FastCounts = tuple[tuple[int, ...], int, list[tuple[int, int]], list[tuple[int, int]]]


def _no_fast_counts() -> FastCounts:
    return (0,) * len(METHODS), 0, [], []


_fast_counts: Callable[[], FastCounts] = _no_fast_counts
"""(seals by method, opens, seal samples, open samples) of the fast paths: _fastcall.counts (its docstring)."""
if FAST_PATHS_COUNTED:
    from . import _fastcall

    _fastcall.set_counting(True)
    _fast_counts = _fastcall.counts

OPEN_OUTCOMES = (
    "ok", "clock_skew", "malformed_timestamp", "missing_header", "malformed_header", "missing_basic_prefix",
    "malformed_signature", "not_verified", "malformed_data", "unsupported_method", "replayed", "rate_limited", "error",
)
"""Every ``outcome`` of ``pasarela.terminal.opens``: ``ok`` or the refusal's cause. ``not_verified`` is every refusal
decided after decryption (a bad padding, a plaintext that is not UTF-8, not JSON, not an object, with a top-level
``key`` or ``__proto__``, a signature that does not match: errors.NOT_VERIFIED), one outcome because a forger
chooses between them and any difference would be a padding oracle; the others are decided from what the request
shows (its headers, its timestamp, its data's form, its method) or after it verified (``replayed``), and tell a
forger nothing it did not send. ``error`` is an exception that is no AuthError."""

_EXACT_CAUSES = {
    NOT_VERIFIED: "not_verified", BAD_DATA: "malformed_data", BAD_LENGTH: "malformed_data",
    SIGNATURE_FORMAT: "malformed_signature",
    "no timestamp header": "missing_header", "no Authorization header": "missing_header",
    "Authorization does not start with 'Basic '": "missing_basic_prefix", "body is not JSON": "malformed_data",
    "no data string in the request": "malformed_data", "GET request without a data query parameter": "malformed_data",
    "query parameters beside data: they would travel unsigned and unencrypted": "malformed_data",
}
_PREFIX_CAUSES = (  # the reasons with a detail after a fixed beginning (inbound.py, asgi.py, replay.py)
    ("timestamp is ", "clock_skew"), ("timestamp header ", "malformed_timestamp"), ("IV is ", "malformed_data"),
    ("ciphertext is ", "malformed_data"), ("method ", "unsupported_method"), ("the ", "malformed_header"),
    ("repeated ", "malformed_header"), ("replayed request", "replayed"), ("too many AUTH-001 failures", "rate_limited"),
)


def refusal_cause(reason: Optional[str]) -> str:
    """The cause (one of :data:`OPEN_OUTCOMES`) of an ``AuthError.reason``; None (not an AuthError): ``error``.
    Every refusal after decryption has the one reason NOT_VERIFIED, a new string each time: the same lookup, the
    same time, whichever it was."""
    if reason is None:
        return "error"
    exact = _EXACT_CAUSES.get(reason)
    if exact is not None:
        return exact
    if reason.endswith("request without a body"):
        return "malformed_data"
    for prefix, cause in _PREFIX_CAUSES:
        if reason.startswith(prefix):
            return cause
    return "error"


_lock = threading.Lock()
_batch_seals = dict.fromkeys(METHODS, 0)
_reported_post = 0
_refusals = dict.fromkeys(OPEN_OUTCOMES[1:], 0)
_reported_ok = 0

WEBHOOK_VERDICTS = ("handled", "duplicate", "superseded", "in_progress", "bad_signature", "stale", "unreadable",
                    "too_large", "unavailable", "not_post")
_webhooks = dict.fromkeys(WEBHOOK_VERDICTS, 0)
STORES = {"replay store (Redis)": "replay", "pending-transfer guard (Redis)": "pending",
          "webhook ledger (Redis)": "webhook_ledger"}
_store_errors = dict.fromkeys([*STORES.values(), "other"], 0)
_client_calls: dict[tuple[tuple[str, str], ...], int] = {}


def sealed_many(method: str, count: int) -> None:
    """seal_many and seal_batch: ``count`` requests sealed at once."""
    if ENABLED:
        with _lock:
            _batch_seals[method] += count


def open_refused(reason: Optional[str]) -> str:
    """Count a refused open (its ``AuthError.reason``, None for another exception); returns its cause."""
    cause = refusal_cause(reason)
    if ENABLED:
        with _lock:
            _refusals[cause] += 1
    return cause


def open_failed(exc: Exception, start: int) -> None:
    """Terminal.open raised ``exc``: count its cause; ``start``: the clock when the call was sampled, else 0."""
    open_refused(exc.reason if isinstance(exc, AuthError) else None)
    if start:
        open_took(start, "refused")


def middleware_refused(reason: str, was_opened: bool) -> str:
    """TerminalAuthMiddleware refused a request (AuthError.reason); ``was_opened``: Terminal.open was called for it (and
    counted what it refused itself). Counts what open did not see: a refusal before it (the limiter, a repeated
    header, a query), counted as one more open, or a replay after it accepted the request. Returns the cause."""
    cause = refusal_cause(reason)
    if ENABLED and not was_opened:
        next_open()
        open_refused(reason)
    elif was_opened and cause == "replayed":
        open_refused(reason)
    return cause


MAX_PENDING_SAMPLES = 10_000
_pending_samples: list[tuple[bool, int, str]] = []
"""Sampled durations not yet handed to the histograms: (seal?, nanoseconds, attribute value). The SDK's
Histogram.record takes about 8 us, five seals' worth: the hot path only appends here, and the observable counters'
callbacks, which the SDK runs at collection time before it reads the histograms, record them. Without an SDK
nothing collects: past MAX_PENDING_SAMPLES the samples are dropped."""


def seal_took(start: int, method: str) -> None:
    if len(_pending_samples) < MAX_PENDING_SAMPLES:
        _pending_samples.append((True, clock() - start, method))


def open_took(start: int, outcome: str) -> None:
    if len(_pending_samples) < MAX_PENDING_SAMPLES:
        _pending_samples.append((False, clock() - start, outcome))


def _record_samples(fast_seals: list[tuple[int, int]], fast_opens: list[tuple[int, int]]) -> None:
    """Hands the sampled durations to the histograms: those of the Python paths and those the C calls took
    (fast_seals and fast_opens, as _fastcall.counts gives them: (nanoseconds, a seal's method's index in METHODS))."""
    if _otel_module is None:
        return
    samples = _pending_samples[:]
    del _pending_samples[:len(samples)]  # (other threads append at the end meanwhile)
    samples += [(True, nanoseconds, METHODS[label]) for nanoseconds, label in fast_seals]
    samples += [(False, nanoseconds, "ok") for nanoseconds, _ in fast_opens]
    for seal, nanoseconds, value in samples:
        if seal:
            _otel_module.SEAL_DURATION.record(nanoseconds / 1e9, {"method": value})
        else:
            _otel_module.OPEN_DURATION.record(nanoseconds / 1e9, {"outcome": value})


def webhook_verdict(verdict: str) -> None:
    if ENABLED:
        with _lock:
            _webhooks[verdict] += 1


def store_error(store: str) -> None:
    """A shared store (Redis) failed closed; ``store`` as StoreUnavailableError names it."""
    if ENABLED:
        with _lock:
            _store_errors[STORES.get(store, "other")] += 1


def _read(count: itertools.count[int]) -> int:
    return int(repr(count)[6:-1])  # "count(n)": n values were taken (the count starts at 0)


def _seal_readings() -> Mapping[tuple[tuple[str, str], ...], int]:
    global _reported_post
    fast_seals, _, seal_samples, open_samples = _fast_counts()
    _record_samples(seal_samples, open_samples)
    with _lock:
        others = {method: _read(count) for method, count in _other_seals.items()}
        counts = {method: _batch_seals[method] + fast + others.get(method, 0)
                  for method, fast in zip(METHODS, fast_seals)}
        # the wrappers count a method other than POST just before every seal: read between the two, a call would be
        # taken away from POST for a moment
        _reported_post = max(_reported_post, _read(_seal_count) - sum(others.values()))
        counts["POST"] += _reported_post
    return {(("method", method),): count for method, count in counts.items()}


def _open_readings() -> Mapping[tuple[tuple[str, str], ...], int]:
    global _reported_ok
    _, fast_opens, seal_samples, open_samples = _fast_counts()
    _record_samples(seal_samples, open_samples)
    with _lock:
        refused = dict(_refusals)
        # opens are counted on entry and a refusal on their way out: read between the two, a call is neither yet
        _reported_ok = max(_reported_ok, _read(_open_count) + fast_opens - sum(refused.values()))
        ok = _reported_ok
    return {(("outcome", "ok"),): ok, **{(("outcome", cause),): value for cause, value in refused.items()}}


def _snapshot(counts: Mapping[Any, int], key: str) -> Callable[[], Mapping[tuple[tuple[str, str], ...], int]]:
    def readings() -> Mapping[tuple[tuple[str, str], ...], int]:
        with _lock:
            return {((key, name),): value for name, value in counts.items()}
    return readings


def _client_readings() -> Mapping[tuple[tuple[str, str], ...], int]:
    with _lock:
        return dict(_client_calls)


KNOWN_METHODS = frozenset({"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE", "QUERY"})
"""The HTTP methods an ``http.request.method`` attribute names as they are (the semantic conventions' list)."""


def http_method(method: str) -> str:
    """The value of ``http.request.method``: the method when it is a known one, else ``_OTHER``, as the HTTP semantic
    conventions say. The method is the client's choice, so a value of its own would let any client add a value of
    the attribute per request (an unbounded set, for the tracing backend and for whoever reads it); the conventions'
    ``http.request.method_original`` is left out for the same reason (the server's access log has it)."""
    return method if method in KNOWN_METHODS else "_OTHER"


TERMINAL_OPERATION = "terminal.request"
"""The ``operation`` of the terminal clients' calls (pasarela.httpx, pasarela.requests_adapter)."""


class ClientCall:
    """One call of a service client (card, transfer): its span, then its count and duration when it ends."""

    def __init__(self, method: str, operation: str, template: str) -> None:
        self.method, self.operation, self.template = method, operation, template
        self.attempts = 0
        self.status: Optional[int] = None
        self.span: Any = None

    def answered(self, status: Optional[int]) -> None:
        """An attempt ended: the HTTP status, or None when no answer came."""
        self.attempts += 1
        self.status = status

    def attributes(self) -> dict[str, str]:
        status = "error" if self.status is None else f"{self.status // 100}xx"
        return {"operation": self.operation, "http.request.method": http_method(self.method), "status_class": status,
                "retried": "true" if self.attempts > 1 else "false"}


@contextmanager
def client_call(method: str, operation: str, template: str, base_url: str) -> Iterator[ClientCall]:
    """A span (kind CLIENT, HTTP semantic conventions: the URL template, never the filled path) around one call,
    then ``pasarela.client.requests`` and ``pasarela.client.duration``."""
    call = ClientCall(method, operation, template)
    if _otel_module is None:
        yield call
        return
    from urllib.parse import urlsplit

    from opentelemetry.trace import SpanKind, Status, StatusCode

    url = urlsplit(base_url)
    start = clock()
    attributes = {"http.request.method": http_method(method), "server.address": url.hostname or "",
                  "server.port": url.port or (443 if url.scheme == "https" else 80), "pasarela.operation": operation}
    if template:  # (the terminal clients' paths are the caller's: no template, and the span is named by the method)
        attributes["url.template"] = template
    with _otel_module.tracer.start_as_current_span(f"{method} {template}".rstrip(), kind=SpanKind.CLIENT,
                                                    attributes=attributes, record_exception=False) as span:
        call.span = span
        try:
            yield call
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR))
            raise
        finally:
            if call.status is not None:
                span.set_attribute("http.response.status_code", call.status)
            if call.attempts > 1:
                span.set_attribute("http.request.resend_count", call.attempts - 1)
            final = call.attributes()
            key = tuple(sorted(final.items()))
            with _lock:
                _client_calls[key] = _client_calls.get(key, 0) + 1
            _otel_module.CLIENT_DURATION.record((clock() - start) / 1e9, final)


def span_ids() -> dict[str, str]:
    """The trace and span ids (hex) of the span recording now, for a log record made now; {} when there is none."""
    if _otel_module is None:
        return {}
    context = _otel_module.trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {}
    return {"trace_id": format(context.trace_id, "032x"), "span_id": format(context.span_id, "016x")}


_tracing_seen = False  # an SDK's TracerProvider was found installed (the API accepts one once: it stays)


def tracing() -> bool:
    """Whether spans are recorded: OpenTelemetry is on and an SDK's TracerProvider is installed (the API's default,
    its ProxyTracerProvider or a NoOpTracerProvider, records nothing, and opening a no-op span still costs
    microseconds). Checked on every call until a real provider is seen, then known: the API sets a provider once."""
    global _tracing_seen
    if _tracing_seen:
        return True
    if _otel_module is None:
        return False
    trace = _otel_module.trace
    _tracing_seen = not isinstance(trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider))
    return _tracing_seen


@contextmanager
def verify_span(method: str) -> Iterator[Any]:
    """TerminalAuthMiddleware's span around one request's verification (kind INTERNAL: it nests under the HTTP
    server span of uvicorn's or Starlette's instrumentation), or None without OpenTelemetry; the middleware sets
    ``pasarela.terminal.outcome`` on it."""
    if _otel_module is None:
        yield None
        return
    with _otel_module.tracer.start_as_current_span("pasarela.terminal.verify", attributes={
            "http.request.method": http_method(method)}, record_exception=False) as span:
        yield span


if _otel_module is not None:
    _otel_module.observe("pasarela.terminal.seals", "Terminal requests sealed (seal_many: each request)",
                         _seal_readings)
    _otel_module.observe("pasarela.terminal.opens", "Terminal requests opened, by outcome (ok or the refusal's cause)",
                         _open_readings)
    _otel_module.observe("pasarela.webhooks.received", "Transfer webhook deliveries, by the receiver's verdict",
                         _snapshot(_webhooks, "verdict"))
    _otel_module.observe("pasarela.client.requests", "Calls of the card and transfer clients to the service",
                         _client_readings)
    _otel_module.observe("pasarela.store.errors", "Failures of a shared store (Redis): the call failed closed",
                         _snapshot(_store_errors, "store"))
