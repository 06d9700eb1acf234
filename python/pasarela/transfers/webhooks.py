"""Receiving transfer webhooks (spec 6.1; certification rule 4: answer HTTP 200, inform the customer).

:class:`TransferWebhookReceiver` verifies the signature and the freshness of ``X-Kushki-Id`` when a
secret is configured (see :mod:`.webhook_signature`), parses the body, drops redeliveries, hands
each new event to your handler, releases the order in the pending-transfer guard when the event is
final, and answers 200. It is an ASGI app (mount it in
Starlette/FastAPI or run it under uvicorn) and, through :meth:`~TransferWebhookReceiver.handle`,
a plain callable for any other framework::

    reply = receiver.handle(request.headers, request.get_data())   # Flask
    return reply.body, reply.status, reply.headers

The payload is "not shown" in the spec. An event is read leniently: ``token``,
``transactionReference`` and the status (see :mod:`.status`) when present, everything in ``raw``.
Redeliveries are recognized by ``<transactionReference or token>:<status>`` when the body has
them, else by the SHA-256 of the body; never by ``X-Kushki-Id``, which the service sets afresh on
each attempt. The handler gets the events of one transaction one at a time (a delivery arriving while
another of its transaction is being handled is answered 503 "in progress", so the service delivers it
again), each once, and none after the transaction's final event: a later event of it, an older state
arriving late or a contradicting final one, is answered 200 "superseded" (the final state wins). See
:mod:`.webhook_dedup`.

Only the body signature (``X-Kushki-Signature``) authenticates the body. A receiver that opts in
to deliveries signed with ``X-Kushki-SimpleSignature`` alone (``allow_simple_signature=True``) must
give a ``status_query``: the body of such a delivery is read only for the transfer's token, and the
handler gets an event built from the status the service returns for it, never from the body.

The handler runs before the 200 goes out, so a handler that raises gets no 200 (the claim is
released, the service may deliver it again): keep it short, queue the slow work. Once the handler has
returned the answer is 200, even when the ledger could not record the event (logged at ERROR: a
redelivery would reach the handler again); only a final event whose order could not be released after
it was recorded gets 503, and its redelivery, a duplicate then, releases the order.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from .. import _telemetry
from .._asgi_body import read_body
from .._maybe_async import settled, synchronously
from ..errors import (
    ConfigurationError,
    PasarelaError,
    ResponseShapeError,
    StoreUnavailableError,
    ValidationError,
    WebhookSignatureError,
)
from ..http.path import path_segment
from ..http.response_reader import ResponseReader
from ..terminal.stringify import loads
from .pending import AnyGuard
from .responses import TransferStatus
from .status import TransferState, find_status
from .webhook_dedup import AnyInbox, AnyLedger, Claim, EventKey, SeenEvents
from .webhook_signature import (
    DEFAULT_MAX_AGE,
    DEFAULT_MAX_AHEAD,
    Secret,
    VerifiedWebhook,
    WebhookHeaders,
    verify_webhook_signature,
)

__all__ = ["StatusQuery", "TransferEvent", "TransferWebhookReceiver", "WebhookReply"]

_log = logging.getLogger("pasarela.webhooks")
_JSON = (("content-type", "application/json"),)


def _parse(body: bytes) -> Any:
    """The body's JSON: up to MAX_DEPTH (1000) levels on every interpreter and at any caller depth, deeper
    refused before any recursive parser sees it (stringify.loads)."""
    try:
        return loads(body)
    except ValueError:  # PayloadError (nesting deeper than MAX_DEPTH) is one
        raise ResponseShapeError("$", "the webhook body is not JSON (or nests too deep)") from None


@dataclass(frozen=True)
class TransferEvent:
    """One transfer webhook: the final result of a transfer (approved or rejected)."""

    token: Optional[str]
    transaction_reference: Optional[str]
    status: Optional[str]
    state: TransferState
    merchant_id: Optional[str]
    """The ``X-Kushki-Key`` header (the merchant the event is for), when sent."""
    raw: Mapping[str, Any] = field(repr=False)
    """The webhook body; or the status record, when the event comes from a status query."""
    key: EventKey = field(repr=False, default=EventKey("", "", final=False))
    """What recognizes its redeliveries and its transaction (see :mod:`.webhook_dedup`)."""

    @property
    def dedup_key(self) -> str:
        """``<transactionReference or token>:<status>``, or ``sha256:<hex of the body>`` for a body without them."""
        return self.key.dedup_key

    @classmethod
    def from_body(cls, body: bytes, merchant_id: Optional[str] = None) -> TransferEvent:
        reader = ResponseReader.of(_parse(body))
        token = reader.optional_text("token")
        reference = reader.optional_text("transactionReference")
        status = find_status(reader.raw)
        state = TransferState.of(status)
        identity = reference or token
        if identity is not None and status is not None:
            key = EventKey(identity, status, state.is_final)
        else:
            key = EventKey("sha256:" + hashlib.sha256(body).hexdigest(), "", state.is_final)
        return cls(token, reference, status, state, merchant_id, reader.raw, key)

    @classmethod
    def from_status(cls, token: str, record: TransferStatus, merchant_id: Optional[str] = None) -> TransferEvent:
        """The event as the service's status record of ``token`` tells it (nothing from a webhook body)."""
        reference = record.transaction_reference
        return cls(token, reference, record.status, record.state, merchant_id, record.raw,
                   EventKey(reference or token, record.status or "", record.state.is_final))


@dataclass(frozen=True)
class WebhookReply:
    """What to answer the service: status, JSON body, headers."""

    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=lambda: dict(_JSON))
    verdict: str = field(default="", compare=False, repr=False)
    """For metrics and logs (one of ``pasarela._telemetry.WEBHOOK_VERDICTS``), never sent."""

    @classmethod
    def of(cls, status: int, outcome: str, verdict: Optional[str] = None) -> WebhookReply:
        return cls(status, json.dumps({"status": outcome}).encode("ascii"), verdict=verdict or _VERDICTS[outcome])


_VERDICTS = {"received": "handled", "duplicate": "duplicate", "superseded": "superseded", "in progress": "in_progress",
             "invalid signature": "bad_signature", "body too large": "too_large", "unreadable body": "unreadable",
             "no token to query": "unreadable", "token cannot be queried": "unreadable",
             "status unavailable": "unavailable", "try again later": "unavailable", "POST only": "not_post"}


def _note(verdict: str, status: int) -> None:
    """Count and log the verdict on a delivery."""
    _telemetry.webhook_verdict(verdict)
    _log.info("transfer webhook %s (HTTP %d)", verdict, status,
              extra={"pasarela": {"event": "webhook.verdict", "verdict": verdict, "status": status,
                                  **_telemetry.span_ids()}})


def _counted(reply: WebhookReply) -> WebhookReply:
    _note(reply.verdict, reply.status)
    return reply


EventHandler = Callable[[TransferEvent], Optional[Awaitable[None]]]
InboxHandler = Callable[[TransferEvent, Any], Optional[Awaitable[None]]]
"""A handler under an inbox: the event, and the open transaction its writes go through (a psycopg connection)."""
StatusRecord = Union[TransferStatus, Mapping[str, Any]]
StatusQuery = Callable[[str], Union[StatusRecord, Awaitable[StatusRecord]]]
"""The transfer's status by its token: ``TransferClient.status``, ``AsyncTransferClient.status``, or your
own function returning a :class:`~.responses.TransferStatus` or the status record as parsed JSON."""


@dataclass(frozen=True)
class _StatusLookup:
    """A delivery authenticated by the simple signature only: the token to query (read from the
    unauthenticated body, so at worst it names another transfer, whose true state is then reported)."""

    token: str
    merchant_id: Optional[str]
    query: StatusQuery


def _status_function(source: object) -> StatusQuery:
    """A status query from a function or from a client with a ``status(token)`` method."""
    if callable(source):
        return source
    method = getattr(source, "status", None)
    if callable(method):
        return method  # type: ignore[no-any-return]
    raise ConfigurationError("status_query must be a function of the token or a transfers client (with .status)")


def _check_ledger_ttl(ledger: Union[AnyLedger, AnyInbox], window: float) -> None:
    """A ledger forgetting handled events before their deliveries leave the freshness window would let a
    replay through."""
    ttl = getattr(ledger, "ttl", None)
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise ConfigurationError("the ledger must say how long it remembers a handled event (a ttl in seconds)")
    if ttl < window:
        raise ConfigurationError(f"the ledger remembers handled events {ttl:g} s, less than the freshness window "
                                 f"(max_age + max_ahead = {window:g} s): a replay inside it would be handled again")


def _check_seconds(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise ConfigurationError(f"{name} must be a finite number of seconds >= 0")
    return float(value)


class TransferWebhookReceiver:
    """``TransferWebhookReceiver(on_event, secret=..., pending=...)``.

    ``on_event`` gets each new :class:`TransferEvent`; under ASGI it may be a coroutine function.
    ``secret`` is the merchant's webhook secret (without it signatures are not checked, and a
    warning says so once); ``merchant_id`` additionally requires ``X-Kushki-Key`` to match;
    ``header_names`` renames the headers; ``ledger`` stores seen events (a :class:`SeenEvents` in memory by
    default; its ``ttl`` must cover ``max_age + max_ahead``);
    ``pending`` is released when an event is final; bodies over ``max_body_bytes`` get 413.

    ``inbox`` (instead of a ledger; e.g. :class:`~.inbox_postgres.PostgresInbox`): exactly-once effects. The
    handler is then ``on_event(event, tx)``: it writes through ``tx``, the inbox's open transaction, which
    commits the claim, those writes and the record of the event together, or rolls all of them back.

    Freshness: a delivery whose ``X-Kushki-Id`` (Unix milliseconds) is more than ``max_age``
    seconds old or more than ``max_ahead`` seconds ahead of ``clock()`` is refused (401), and so is
    an id that is not a timestamp unless ``allow_non_timestamp_id``.

    ``allow_simple_signature=True`` also accepts deliveries signed with ``X-Kushki-SimpleSignature``
    only, and then requires ``status_query`` (a function of the token, or a transfers client): the
    event handed over is built from the status it returns, never from the body. When the query fails
    the delivery is answered 503 (the service delivers it again).
    """

    def __init__(
        self,
        on_event: Union[EventHandler, InboxHandler],
        *,
        secret: Optional[Secret] = None,
        merchant_id: Optional[str] = None,
        header_names: Optional[WebhookHeaders] = None,
        allow_simple_signature: bool = False,
        status_query: Optional[object] = None,
        max_age: float = DEFAULT_MAX_AGE,
        max_ahead: float = DEFAULT_MAX_AHEAD,
        allow_non_timestamp_id: bool = False,
        clock: Callable[[], float] = time.time,
        ledger: Optional[AnyLedger] = None,
        pending: Optional[AnyGuard] = None,
        max_body_bytes: int = 1 << 20,
        inbox: Optional[AnyInbox] = None,
    ) -> None:
        if secret is not None and not secret:
            raise ConfigurationError("secret must not be empty (pass None to skip signature checks)")
        if allow_simple_signature and (secret is None or status_query is None):
            raise ConfigurationError(
                "allow_simple_signature=True needs the secret and a status_query (TransferClient.status or a "
                "function of the token): the simple signature does not authenticate the body, so the event's "
                "state must come from the service's status of the transfer"
            )
        if status_query is not None and not allow_simple_signature:
            raise ConfigurationError("status_query is used only with allow_simple_signature=True")
        if inbox is not None and ledger is not None:
            raise ConfigurationError("give a ledger or an inbox, not both (the inbox is its own ledger)")
        if secret is None:
            _log.warning("transfer webhooks are accepted without signature verification: configure the secret")
        self._on_event: Callable[..., Optional[Awaitable[None]]] = on_event
        self._secret = secret
        self._merchant_id = merchant_id
        self._names = header_names or WebhookHeaders()
        self._allow_simple = allow_simple_signature
        self._status_query = _status_function(status_query) if status_query is not None else None
        self._max_age = _check_seconds("max_age", max_age)
        self._max_ahead = _check_seconds("max_ahead", max_ahead)
        self._allow_non_timestamp_id = allow_non_timestamp_id
        self._clock = clock
        self._ledger: AnyLedger = ledger if ledger is not None else SeenEvents()
        self._inbox = inbox
        _check_ledger_ttl(inbox if inbox is not None else self._ledger,
                          self._max_age + self._max_ahead if secret is not None else 0.0)
        self._pending = pending
        self._max_body_bytes = max_body_bytes

    def __repr__(self) -> str:
        secret = "<hidden>" if self._secret is not None else None
        return f"TransferWebhookReceiver(secret={secret}, merchant_id={self._merchant_id!r})"

    def _verify(self, headers: Mapping[str, str], body: bytes) -> Union[WebhookReply, VerifiedWebhook, None]:
        """The reply refusing the delivery, what its signature proves, or None when no secret is set."""
        if self._secret is None:
            return None
        try:
            return verify_webhook_signature(
                headers,
                body,
                self._secret,
                names=self._names,
                allow_simple_signature=self._allow_simple,
                merchant_id=self._merchant_id,
                max_age=self._max_age,
                max_ahead=self._max_ahead,
                allow_non_timestamp_id=self._allow_non_timestamp_id,
                clock=self._clock,
            )
        except WebhookSignatureError as exc:
            _log.warning("transfer webhook refused: %s", exc)
            stale = "stale or replayed" in str(exc) or "in the future (more than" in str(exc)  # webhook_signature's
            return WebhookReply.of(401, "invalid signature", "stale" if stale else None)

    def _admit(self, headers: Mapping[str, str], body: bytes) -> Union[WebhookReply, TransferEvent, _StatusLookup]:
        """Verify and parse: an event to claim and hand over, a status to query first, or the reply that
        ends the delivery here."""
        if len(body) > self._max_body_bytes:
            return WebhookReply.of(413, "body too large")
        verified = self._verify(headers, body)
        if isinstance(verified, WebhookReply):
            return verified
        merchant = {name.lower(): value for name, value in headers.items()}.get(self._names.merchant_id.lower())
        if self._merchant_id is not None and merchant != self._merchant_id:
            _log.warning("transfer webhook refused: %s does not name this merchant", self._names.merchant_id)
            return WebhookReply.of(401, "invalid signature")
        try:
            if verified is None:
                return TransferEvent.from_body(body, merchant)
            if verified.body is not None:
                return TransferEvent.from_body(verified.body, merchant)
            return self._lookup(body, merchant)
        except ResponseShapeError as exc:
            _log.warning("transfer webhook refused: %s", exc)
            return WebhookReply.of(400, "unreadable body")

    def _lookup(self, body: bytes, merchant: Optional[str]) -> Union[WebhookReply, _StatusLookup]:
        token = ResponseReader.of(_parse(body)).optional_text("token")
        if not token or self._status_query is None:  # the constructor requires the query with the simple signature
            _log.warning("transfer webhook refused: signed with the simple signature only and no token to query")
            return WebhookReply.of(400, "no token to query")
        try:
            path_segment("token", token)  # what the status query would refuse, refused here once and for all
        except ValidationError as exc:
            # a 503 would have the service redeliver, forever, a body whose token can never be queried
            _log.warning("transfer webhook refused: its token cannot be queried: %s", exc)
            return WebhookReply.of(400, "token cannot be queried")
        return _StatusLookup(token, merchant, self._status_query)

    @staticmethod
    def _queried(lookup: _StatusLookup, record: object) -> TransferEvent:
        if isinstance(record, Mapping):
            record = TransferStatus.from_json(record, lookup.token)
        if not isinstance(record, TransferStatus):
            raise TypeError(f"status_query must return a TransferStatus or a mapping, got {type(record).__name__}")
        return TransferEvent.from_status(lookup.token, record, lookup.merchant_id)

    @staticmethod
    def _unavailable(exc: PasarelaError) -> WebhookReply:
        _log.warning("transfer webhook not handled: the status query failed: %s", exc)
        return WebhookReply.of(503, "status unavailable")

    def _earliest_receipt(self, headers: Mapping[str, str]) -> Optional[float]:
        """The earliest any node can have received this (verified) delivery: its signed id, Unix milliseconds,
        less ``max_ahead``; None when it is not dated (no secret, or an id that is not a fresh timestamp). The
        ledger refuses a delivery it cannot tell from one received before Redis lost its memory."""
        if self._secret is None:
            return None
        webhook_id = {name.lower(): value for name, value in headers.items()}.get(self._names.webhook_id.lower(), "")
        if not (webhook_id.isascii() and webhook_id.isdigit() and len(webhook_id) <= 20):
            return None
        sent, now = int(webhook_id) / 1000, self._clock()
        return sent - self._max_ahead if now - self._max_age <= sent <= now + self._max_ahead else None

    def _release(self, event: TransferEvent) -> object:
        """Settle the guard once a final event was handled (what the guard returned, awaitable if async)."""
        if self._pending is not None and event.state.is_final:
            return self._pending.release_transfer(token=event.token, transaction_reference=event.transaction_reference)
        return None

    def handle(self, headers: Mapping[str, str], body: bytes) -> WebhookReply:
        """Process one delivery with a synchronous handler, status query, ledger and guard; answer with the reply.

        Claim the event (a redelivery ends here), run the handler (forget the claim if it fails), release the guard.
        """
        try:
            return _counted(self._handle(headers, body))
        except StoreUnavailableError:
            _note("unavailable", StoreUnavailableError.status)
            raise

    def _handle(self, headers: Mapping[str, str], body: bytes) -> WebhookReply:
        admitted = self._admit(headers, body)
        if isinstance(admitted, _StatusLookup):
            try:
                record = admitted.query(admitted.token)
            except PasarelaError as exc:
                return self._unavailable(exc)
            _refuse_awaitable(record, "the status query")
            admitted = self._queried(admitted, record)
        if not isinstance(admitted, TransferEvent):
            return admitted
        if self._inbox is not None:
            return self._handle_in_inbox(admitted, self._inbox)
        ledger, key, token = self._ledger, admitted.key, secrets.token_hex(16)  # the token: this delivery's claim
        try:
            claim = synchronously(ledger.claim(key, token, earliest_receipt=self._earliest_receipt(headers)),
                                  _ASYNC_STORE)
        except StoreUnavailableError:
            _quietly(lambda: ledger.release(key, token))  # the claim may have run
            raise
        if claim is not Claim.CLAIMED:
            if claim is Claim.HANDLED:
                # Release the order again: an earlier delivery may have been recorded but not released it.
                synchronously(self._release(admitted), _ASYNC_STORE)
            return _unclaimed(admitted, claim)
        try:
            _refuse_awaitable(self._on_event(admitted), "the handler")
        except BaseException:
            _quietly(lambda: ledger.release(key, token))
            raise
        recorded = _quietly(lambda: ledger.confirm(key, token), admitted)
        try:
            synchronously(self._release(admitted), _ASYNC_STORE)
        except StoreUnavailableError as exc:
            _guard_not_released(exc, recorded)
        return WebhookReply.of(200, "received")

    def _handle_in_inbox(self, event: TransferEvent, inbox: AnyInbox) -> WebhookReply:
        """Claim, handler and record in the inbox's one transaction; then, as after a ledger's, the guard (a
        StoreUnavailableError there: 503, and the redelivery, a duplicate by then, releases the order)."""
        on_event = self._on_event
        claim = synchronously(inbox.handle_once(event.key, lambda tx: _refuse_awaitable(on_event(event, tx),
                                                                                       "the handler")), _ASYNC_STORE)
        if claim in _RELEASING:
            synchronously(self._release(event), _ASYNC_STORE)
        return _inbox_reply(event, claim)

    async def _handle_in_inbox_async(self, event: TransferEvent, inbox: AnyInbox) -> WebhookReply:
        on_event = self._on_event
        claim = await settled(inbox.handle_once(event.key, lambda tx: on_event(event, tx)))
        if claim in _RELEASING:
            await settled(self._release(event))
        return _inbox_reply(event, claim)

    async def handle_async(self, headers: Mapping[str, str], body: bytes) -> WebhookReply:
        """As :meth:`handle`, awaiting the handler, the status query, the ledger and the guard when they are
        asynchronous. A blocking status query (``TransferClient.status``) runs in a worker thread, off the
        event loop."""
        try:
            return _counted(await self._handle_async(headers, body))
        except StoreUnavailableError:
            _note("unavailable", StoreUnavailableError.status)
            raise

    async def _handle_async(self, headers: Mapping[str, str], body: bytes) -> WebhookReply:
        admitted = self._admit(headers, body)
        if isinstance(admitted, _StatusLookup):
            query = admitted.query
            try:
                if inspect.iscoroutinefunction(query):
                    record = await query(admitted.token)
                else:
                    record = await settled(await asyncio.to_thread(query, admitted.token))
            except PasarelaError as exc:
                return self._unavailable(exc)
            admitted = self._queried(admitted, record)
        if not isinstance(admitted, TransferEvent):
            return admitted
        if self._inbox is not None:
            return await self._handle_in_inbox_async(admitted, self._inbox)
        ledger, key, token = self._ledger, admitted.key, secrets.token_hex(16)
        try:
            claim = await settled(ledger.claim(key, token, earliest_receipt=self._earliest_receipt(headers)))
        except StoreUnavailableError:
            await _quietly_async(lambda: ledger.release(key, token))
            raise
        if claim is not Claim.CLAIMED:
            if claim is Claim.HANDLED:
                await settled(self._release(admitted))
            return _unclaimed(admitted, claim)
        try:
            await settled(self._on_event(admitted))
        except BaseException:
            await _quietly_async(lambda: ledger.release(key, token))
            raise
        recorded = await _quietly_async(lambda: ledger.confirm(key, token), admitted)
        try:
            await settled(self._release(admitted))
        except StoreUnavailableError as exc:
            _guard_not_released(exc, recorded)
        return WebhookReply.of(200, "received")

    async def __call__(
        self,
        scope: Mapping[str, Any],
        receive: Callable[[], Awaitable[Mapping[str, Any]]],
        send: Callable[[Mapping[str, Any]], Awaitable[None]],
    ) -> None:
        """The ASGI app: POST only; any path (mount it where the service was told to deliver)."""
        if scope["type"] == "lifespan":
            await _serve_lifespan(receive, send)
            return
        if scope["type"] != "http":
            raise ConfigurationError(f"the webhook receiver serves HTTP, not {scope['type']}")
        if scope["method"] != "POST":
            await _respond(send, _counted(WebhookReply.of(405, "POST only")))
            return
        body = await read_body(receive, self._max_body_bytes)
        if body is None:  # the sender went away
            return
        if len(body) > self._max_body_bytes:
            await _respond(send, _counted(WebhookReply.of(413, "body too large")))
            return
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        try:
            reply = await self.handle_async(headers, body)
        except StoreUnavailableError as exc:  # fail closed: not handled, so the service delivers it again
            _log.error("transfer webhook not handled: %s", exc)  # (counted unavailable by handle_async)
            reply = WebhookReply.of(503, "try again later")
        await _respond(send, reply)


_RELEASING = (Claim.CLAIMED, Claim.HANDLED)
"""Claims after which the guard is released: the event just handled, or handled before (whose delivery may
have been recorded but not released the order)."""


def _inbox_reply(event: TransferEvent, claim: Claim) -> WebhookReply:
    return WebhookReply.of(200, "received") if claim is Claim.CLAIMED else _unclaimed(event, claim)


def _unclaimed(event: TransferEvent, claim: Claim) -> WebhookReply:
    """The answer to a delivery whose event is not handed over."""
    if claim is Claim.HANDLED:
        return WebhookReply.of(200, "duplicate")
    if claim is Claim.SUPERSEDED:
        _log.warning("transfer webhook %s not handed over: its transaction's final event was handled before "
                     "(the final state wins)", event.dedup_key)
        return WebhookReply.of(200, "superseded")
    # Not 200: the service delivers it again, and by then the delivery handling the transaction has finished.
    return WebhookReply.of(503, "in progress")


def _quietly(step: Callable[[], object], handled: Optional[TransferEvent] = None) -> bool:
    """Run a ledger step whose failure must not change the answer: True when it went through, else log it."""
    try:
        synchronously(step(), _ASYNC_STORE)
    except StoreUnavailableError as exc:
        _not_recorded(exc, handled)
        return False
    return True


async def _quietly_async(step: Callable[[], object], handled: Optional[TransferEvent] = None) -> bool:
    try:
        await settled(step())
    except StoreUnavailableError as exc:
        _not_recorded(exc, handled)
        return False
    return True


def _not_recorded(exc: StoreUnavailableError, handled: Optional[TransferEvent]) -> None:
    if handled is None:  # a claim not released: its lease ends by itself
        _log.warning("transfer webhook: the claim could not be released (its lease ends by itself): %s", exc)
    else:
        _log.error("transfer webhook %s handled but not recorded: a redelivery would reach the handler again: %s",
                   handled.dedup_key, exc)


def _guard_not_released(exc: StoreUnavailableError, recorded: bool) -> None:
    """The handler took a final event but its order could not be released."""
    if recorded:
        raise exc  # 503: the service delivers it again, a duplicate now, and that delivery releases the order
    _log.error("transfer webhook: the order stays reserved until a status query or the guard's ttl frees it: %s",
               exc)


def _refuse_awaitable(outcome: object, what: str) -> None:
    if inspect.isawaitable(outcome):
        if inspect.iscoroutine(outcome):
            outcome.close()
        raise TypeError(f"{what} is async: mount the receiver as an ASGI app or use handle_async()")


_ASYNC_STORE = "this webhook ledger or pending-transfer guard"


async def _respond(send: Callable[[Mapping[str, Any]], Awaitable[None]], reply: WebhookReply) -> None:
    headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in reply.headers.items()]
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.body})


async def _serve_lifespan(
    receive: Callable[[], Awaitable[Mapping[str, Any]]], send: Callable[[Mapping[str, Any]], Awaitable[None]]
) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
