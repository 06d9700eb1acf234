"""Transfer webhooks (spec 6.1): built and queued with the state change, delivered from the outbox.

The body carries ``token``, ``transactionReference``, ``status`` (``approvedTransaction`` or
``declinedTransaction``), ``amount``, ``currency``, ``ticketNumber``, ``created`` (epoch ms) and
the merchant's ``metadata``. It is signed as :mod:`pasarela.transfers.webhook_signature` verifies:
``X-Kushki-Id`` (the wall-clock time of each attempt in Unix milliseconds, as the service's sender
sets it: so a retry after a long outage is still fresh for a receiver that refuses stale ids),
``X-Kushki-Signature`` (HMAC-SHA256 of ``<body>.<id>`` with the webhook secret, computed afresh for
each attempt), ``X-Kushki-SimpleSignature`` (of the id) and ``X-Kushki-Key`` (the public merchant key).

:class:`Dispatcher` POSTs each pending event until the receiver answers 200, waiting
``backoff * 2**(attempts-1)`` (capped, with jitter) between tries. Up to ``webhook_concurrency``
deliveries run at once (a thread pool), so a receiver that hangs on one event holds one of them
while the others go out; the events of one transfer still go out one at a time, in order (the
outbox hands out only the oldest undelivered event of each transfer). The outbox lives in SQLite
(:mod:`.store`): a sandbox killed and restarted delivers every event still pending. Delivery is at
least once (a kill between the receiver's 200 and the write that records it means one more
delivery of the same event, same body): a receiver that deduplicates on the event (transaction
reference and status, as :class:`~pasarela.transfers.TransferWebhookReceiver` does) sees it exactly once.
"""

from __future__ import annotations

import http.client
import logging
import random
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol, Union
from urllib.parse import urljoin, urlsplit

from .._version import __version__
from ..http.redaction import Redactor
from ..transfers.webhook_signature import WebhookHeaders, body_signature, id_signature
from .background import Background
from .chaos import LATE_SECONDS, REORDER, WebhookChaos
from .clock import SandboxClock
from .config import SandboxConfig
from .jsontext import dumps
from .states import TransferStatus
from .store import OutboxEntry, Store, Transfer, Tx
from .webhook_target import WebhookTarget

__all__ = ["ANSWER_BYTES", "Answer", "Backoff", "Dispatcher", "HttpSender", "Sender", "enqueue_event", "event_body",
           "signed_headers"]

_log = logging.getLogger("pasarela.sandbox.webhooks")
_HEADERS = WebhookHeaders()
INITIALIZED_STATUS = TransferStatus.INITIALIZED.webhook_status
_BATCH = 32
ANSWER_BYTES = 512
"""The first bytes of a receiver's answer kept with each attempt (the dashboard and ``pasarela sandbox tail`` show
them: "invalid signature", a stack trace's first line...)."""


def event_body(transfer: Transfer, status: TransferStatus) -> dict[str, Any]:
    body: dict[str, Any] = {
        "token": transfer.token,
        "transactionReference": transfer.reference,
        "status": status.webhook_status,
        "transactionStatus": status.value,
        "processorState": status.processor_state,
        "amount": dict(transfer.amount),
        "currency": transfer.currency,
        "ticketNumber": transfer.ticket_number,
        "created": int(transfer.created * 1000),
        "paymentMethod": "transfer",
        "country": transfer.country,
    }
    if transfer.metadata is not None:
        body["metadata"] = dict(transfer.metadata)
    return body


def enqueue_event(tx: Tx, transfer: Transfer, status: TransferStatus, now: float) -> str:
    """Queue the webhook of ``transfer`` reaching ``status``, in the caller's transaction; returns its id."""
    event_id = str(uuid.uuid4())
    tx.enqueue(event_id, transfer.token, dumps(event_body(transfer, status)).encode("utf-8"), now)
    return event_id


def signed_headers(config: SandboxConfig, event_id: str, body: bytes) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": f"pasarela-sandbox/{__version__}",
        _HEADERS.webhook_id: event_id,
        _HEADERS.signature: body_signature(config.webhook_secret, body, event_id),
        _HEADERS.simple_signature: id_signature(config.webhook_secret, event_id),
        _HEADERS.merchant_id: config.public_key,
    }


@dataclass(frozen=True)
class Answer:
    """A receiver's answer: its status, its body's first :data:`ANSWER_BYTES` bytes and, for a redirect, where it
    pointed."""

    status: int
    body: bytes = b""
    location: Optional[str] = None
    """A redirect's ``Location`` header, never followed (the service does not follow one either)."""


def not_delivered(url: str, answer: Answer) -> Optional[str]:
    """Why the delivery to ``url`` failed, and what to change (``None``: answered 200, delivered)."""
    if answer.status == 200:
        return None
    if not 300 <= answer.status < 400:
        return f"HTTP {answer.status} (the receiver must answer 200)"
    location = "".join(ch if ch.isprintable() else "?" for ch in answer.location or "")[:300] or "(no Location)"
    why = f"HTTP {answer.status}, a redirect to {location}, not followed (the service follows none): "
    if urljoin(url, answer.location or "") == url + "/":
        # Starlette's Mount (FastAPI's app.mount) answers its path without the trailing slash so
        return why + ("route the webhook path itself to the receiver, Route(path, receiver, methods=[\"POST\"]), not "
                      f"Mount; or start the sandbox with --webhook-url {location}")
    return why + f"the receiver must answer 200 at {url} itself; or start the sandbox with --webhook-url {location}"


class Sender(Protocol):
    def __call__(self, url: str, headers: Mapping[str, str], body: bytes) -> Union[int, Answer]:
        """POST ``body``; the answer (or only its HTTP status). Raises OSError when there is none."""


class HttpSender:
    """POSTs over http.client (one connection per delivery; receivers are the merchant's, anywhere)."""

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout

    def __call__(self, url: str, headers: Mapping[str, str], body: bytes) -> Answer:
        parts = urlsplit(url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = kind(parts.hostname or "", parts.port, timeout=self._timeout)
        try:
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            connection.request("POST", target, body=body, headers=dict(headers))
            answer = connection.getresponse()
            first = answer.read(ANSWER_BYTES)  # the rest is not read: the connection is closed after it
            return Answer(answer.status, first, answer.getheader("Location"))
        except http.client.HTTPException as exc:
            raise OSError(f"{type(exc).__name__}: {exc}") from None
        finally:
            connection.close()


@dataclass(frozen=True)
class _Sent:
    """One POST as it went: the signed headers, and the receiver's status, error and answer's first bytes."""

    headers: Mapping[str, str]
    status: Optional[int]
    error: Optional[str]
    answer: Optional[str]
    latency_ms: float


@dataclass(frozen=True)
class Backoff:
    """Retry *n* waits between half and all of ``min(maximum, base * 2**(n-1))`` seconds."""

    base: float
    maximum: float
    jitter: Callable[[], float] = random.random

    def delay(self, attempts: int) -> float:
        ceiling = min(self.maximum, self.base * 2.0 ** min(attempts - 1, 60))
        return ceiling / 2 + self.jitter() * ceiling / 2


class Dispatcher(Background):
    """Delivers the outbox: a background thread (:meth:`start`) handing due events to a bounded pool of
    senders, or one pass at a time (:meth:`deliver_due`)."""

    def __init__(self, store: Store, config: SandboxConfig, clock: SandboxClock, sender: Sender,
                 backoff: Optional[Backoff] = None, target: Optional[WebhookTarget] = None) -> None:
        self._store = store
        self._config = config
        self.target = target if target is not None else WebhookTarget(config.webhook_url)
        """Where events go: read on each pass, so a change applies from the next attempt on."""
        self._clock = clock
        self._sender = sender
        self._backoff = backoff or Backoff(config.webhook_backoff, config.webhook_backoff_max)
        self._redactor = Redactor((config.private_key, config.webhook_secret, config.business_code))
        """A receiver's answer is kept as the access log keeps what it records: secrets and card numbers out."""
        self.chaos = WebhookChaos(config.webhook_chaos, config.webhook_chaos_rate)
        """Delivery chaos in force (:mod:`.chaos`): changeable while it runs."""
        super().__init__("pasarela-sandbox-webhooks", _log, "webhook dispatcher", 1.0)
        self._pool = self._new_pool()
        self._in_flight: set[str] = set()
        """Ids of the events handed to the pool and not finished: never handed out twice at once."""
        self._in_flight_lock = threading.Lock()

    def _new_pool(self) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(self._config.webhook_concurrency, thread_name_prefix="pasarela-sandbox-webhook")

    def _submit_due(self) -> list[Future[int]]:
        """Hand every event due now and not in flight to the pool; their futures (1 delivered, 0 not)."""
        url = self.target.url
        if url is None:
            return []
        with self._in_flight_lock:
            busy = set(self._in_flight)
        with self._store.read() as tx:
            due = [entry for entry in tx.due(self._clock.now(), _BATCH + len(busy)) if entry.id not in busy][:_BATCH]
        submitted: list[Future[int]] = []
        for entry in due:
            if self._stopping.is_set():
                break
            with self._in_flight_lock:
                self._in_flight.add(entry.id)
            submitted.append(self._pool.submit(self._attempt_then_release, url, entry))
        return submitted

    def _attempt_then_release(self, url: str, entry: OutboxEntry) -> int:
        try:
            return self._attempt(url, entry)
        finally:
            with self._in_flight_lock:
                self._in_flight.discard(entry.id)
            self._wake.set()  # the transfer's next event, if any, may go now

    def deliver_due(self) -> int:
        """Try every event due now once (concurrently) and wait for them; returns how many were delivered."""
        return sum(future.result() for future in self._submit_due())

    def _send(self, url: str, body: bytes) -> _Sent:
        """One POST of ``body``, signed now; what came back (never raises for the receiver's failures)."""
        # The wall clock, not the simulator's: the id dates this transmission for the receiver's clock.
        headers = signed_headers(self._config, str(int(time.time() * 1000)), body)
        started = time.perf_counter()
        answer_text: Optional[str] = None
        try:
            answer = self._sender(url, headers, body)
            if isinstance(answer, Answer):
                answer_text = self._redactor.text(answer.body[:ANSWER_BYTES].decode("utf-8", "replace"))
            else:
                answer = Answer(answer)  # a sender that tells only the status
            status: Optional[int] = answer.status
            error = not_delivered(url, answer)
        except OSError as exc:
            status, error = None, f"{type(exc).__name__}: {exc}"
        return _Sent(headers, status, error, answer_text, (time.perf_counter() - started) * 1000)

    def _record(self, entry: OutboxEntry, url: str, sent: Sequence[_Sent], chaos: Optional[str],
                settles: bool = True) -> int:
        """Record the attempts ``sent``; when ``settles``, the event is delivered if one got a 200, else retried."""
        now = self._clock.now()
        delivered = any(attempt.error is None for attempt in sent)
        with self._store.write() as tx:
            for attempt in sent:
                tx.add_attempt(entry.id, now, url, attempt.headers, attempt.status, attempt.latency_ms,
                               attempt.error, attempt.answer, chaos)
            if settles and delivered:
                tx.delivered(entry.id, now)
            elif settles:
                tx.failed(entry.id, str(sent[-1].error), now + self._backoff.delay(entry.attempts + 1))
        if not settles:
            return 0
        if not delivered:
            _log.info("webhook %s not delivered (attempt %d): %s", entry.id, entry.attempts + 1, sent[-1].error)
        return int(delivered)

    def _attempt(self, url: str, entry: OutboxEntry) -> int:
        chaos = self.chaos.pick() if entry.attempts == 0 and entry.chaos is None else None
        if chaos == "late":
            with self._store.write() as tx:
                tx.hold_back(entry.id, self._clock.now() + LATE_SECONDS, "late")
            return 0
        if chaos == "concurrent":
            twin: list[_Sent] = []
            other = threading.Thread(target=lambda: twin.append(self._send(url, entry.body)),
                                     name="pasarela-sandbox-webhook-twin")
            other.start()
            first = self._send(url, entry.body)
            other.join()
            return self._record(entry, url, [first, *twin], chaos)
        held = "late" if entry.chaos == "late" and entry.attempts == 0 else None
        delivered = self._record(entry, url, [self._send(url, entry.body)], held)
        if delivered and chaos == "duplicate":
            self._record(entry, url, [self._send(url, entry.body)], chaos, settles=False)
        if delivered and chaos == REORDER:
            older = self._older_event(entry)
            if older is not None:
                self._record(entry, url, [self._send(url, older)], f"{REORDER}: an older {INITIALIZED_STATUS} sent "
                                                                   "after it", settles=False)
        return delivered

    def _older_event(self, entry: OutboxEntry) -> Optional[bytes]:
        with self._store.read() as tx:
            transfer = tx.transfer(entry.token)
        if transfer is None:
            return None
        return dumps(event_body(transfer, TransferStatus.INITIALIZED)).encode("utf-8")

    def _pause(self, submitted: bool) -> float:
        with self._store.read() as tx:
            next_due = tx.next_due_at()
        if next_due is None or self.target.url is None:
            return 1.0
        wait = next_due - self._clock.now()
        if wait <= 0 and not submitted:
            return 1.0  # what is due is in flight: its end wakes the loop
        return min(1.0, max(0.0, wait))

    def _pass(self) -> float:
        return self._pause(bool(self._submit_due()))

    def start(self) -> None:
        if self._thread is None and self._stopping.is_set():  # stopped before: the old pool was shut down
            self._pool = self._new_pool()
        super().start()

    def stop(self, timeout: float = 10.0) -> None:
        running = self._thread is not None
        super().stop(timeout)
        if running:
            # Deliveries not started stay in the outbox for the next start; those under way finish.
            self._pool.shutdown(wait=False, cancel_futures=True)
