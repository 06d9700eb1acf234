"""Receiving transfer webhooks (spec 6.1; certification rule 4: answer HTTP 200, inform the customer).

:class:`TransferWebhookReceiver` verifies the signature when a secret is configured, parses the
body, drops redeliveries, hands each new event to your handler, releases the order in the
pending-transfer guard when the event is final, and answers 200. It is an ASGI app (mount it in
Starlette/FastAPI or run it under uvicorn) and, through :meth:`~TransferWebhookReceiver.handle`,
a plain callable for any other framework::

    reply = receiver.handle(request.headers, request.get_data())   # Flask
    return reply.body, reply.status, reply.headers

The payload is "not shown" in the spec. An event is read leniently: ``token``,
``transactionReference`` and the status (see :mod:`.status`) when present, everything in ``raw``.
Redeliveries are recognized by ``<transactionReference or token>:<status>`` when the body has
them, else by the SHA-256 of the body. The handler runs before the 200 goes out, so a handler that
raises gets no 200 (the event is forgotten, the service may deliver it again): keep it short,
queue the slow work.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from .._asgi_body import read_body
from .._maybe_async import settled, synchronously
from ..errors import ConfigurationError, ResponseShapeError, StoreUnavailableError, WebhookSignatureError
from ..http.response_reader import ResponseReader
from .pending import AnyGuard
from .status import TransferState, find_status
from .webhook_dedup import AnyLedger, SeenEvents
from .webhook_signature import Secret, WebhookHeaders, verify_webhook_signature

__all__ = ["TransferEvent", "TransferWebhookReceiver", "WebhookReply"]

_log = logging.getLogger("pasarela.webhooks")
_JSON = (("content-type", "application/json"),)


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
    dedup_key: str = field(repr=False, default="")

    @classmethod
    def from_body(cls, body: bytes, merchant_id: Optional[str] = None) -> TransferEvent:
        try:
            parsed = json.loads(body)
        except ValueError:
            raise ResponseShapeError("$", "the webhook body is not JSON") from None
        reader = ResponseReader.of(parsed)
        token = reader.optional_text("token")
        reference = reader.optional_text("transactionReference")
        status = find_status(reader.raw)
        identity = reference or token
        if identity is not None and status is not None:
            key = f"{identity}:{status}"
        else:
            key = "sha256:" + hashlib.sha256(body).hexdigest()
        return cls(token, reference, status, TransferState.of(status), merchant_id, reader.raw, key)


@dataclass(frozen=True)
class WebhookReply:
    """What to answer the service: status, JSON body, headers."""

    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=lambda: dict(_JSON))

    @classmethod
    def of(cls, status: int, outcome: str) -> WebhookReply:
        return cls(status, json.dumps({"status": outcome}).encode("ascii"))


EventHandler = Callable[[TransferEvent], Optional[Awaitable[None]]]


class TransferWebhookReceiver:
    """``TransferWebhookReceiver(on_event, secret=..., pending=...)``.

    ``on_event`` gets each new :class:`TransferEvent`; under ASGI it may be a coroutine function.
    ``secret`` is the merchant's webhook secret (without it signatures are not checked, and a
    warning says so once); ``merchant_id`` additionally requires ``X-Kushki-Key`` to match;
    ``header_names`` renames the headers; ``ledger`` stores seen events (in memory by default);
    ``pending`` is released when an event is final; bodies over ``max_body_bytes`` get 413.
    """

    def __init__(
        self,
        on_event: EventHandler,
        *,
        secret: Optional[Secret] = None,
        merchant_id: Optional[str] = None,
        header_names: Optional[WebhookHeaders] = None,
        allow_simple_signature: bool = True,
        ledger: Optional[AnyLedger] = None,
        pending: Optional[AnyGuard] = None,
        max_body_bytes: int = 1 << 20,
    ) -> None:
        if secret is not None and not secret:
            raise ConfigurationError("secret must not be empty (pass None to skip signature checks)")
        if secret is None:
            _log.warning("transfer webhooks are accepted without signature verification: configure the secret")
        self._on_event = on_event
        self._secret = secret
        self._merchant_id = merchant_id
        self._names = header_names or WebhookHeaders()
        self._allow_simple = allow_simple_signature
        self._ledger: AnyLedger = ledger if ledger is not None else SeenEvents()
        self._pending = pending
        self._max_body_bytes = max_body_bytes

    def __repr__(self) -> str:
        secret = "<hidden>" if self._secret is not None else None
        return f"TransferWebhookReceiver(secret={secret}, merchant_id={self._merchant_id!r})"

    def _admit(self, headers: Mapping[str, str], body: bytes) -> Union[WebhookReply, TransferEvent]:
        """Verify and parse: an event to claim and hand over, or the reply that ends the delivery here."""
        if len(body) > self._max_body_bytes:
            return WebhookReply.of(413, "body too large")
        if self._secret is not None:
            try:
                verify_webhook_signature(
                    headers,
                    body,
                    self._secret,
                    names=self._names,
                    allow_simple_signature=self._allow_simple,
                    merchant_id=self._merchant_id,
                )
            except WebhookSignatureError as exc:
                _log.warning("transfer webhook refused: %s", exc)
                return WebhookReply.of(401, "invalid signature")
        merchant = {name.lower(): value for name, value in headers.items()}.get(self._names.merchant_id.lower())
        if self._merchant_id is not None and merchant != self._merchant_id:
            _log.warning("transfer webhook refused: %s does not name this merchant", self._names.merchant_id)
            return WebhookReply.of(401, "invalid signature")
        try:
            event = TransferEvent.from_body(body, merchant)
        except ResponseShapeError as exc:
            _log.warning("transfer webhook refused: %s", exc)
            return WebhookReply.of(400, "unreadable body")
        return event

    def _release(self, event: TransferEvent) -> object:
        """Settle the guard once a final event was handled (what the guard returned, awaitable if async)."""
        if self._pending is not None and event.state.is_final:
            return self._pending.release_transfer(token=event.token, transaction_reference=event.transaction_reference)
        return None

    def handle(self, headers: Mapping[str, str], body: bytes) -> WebhookReply:
        """Process one delivery with a synchronous handler (and sync ledger and guard); answer with the reply.

        Claim the event (a redelivery ends here), run the handler (forget the claim if it fails), release the guard.
        """
        admitted = self._admit(headers, body)
        if not isinstance(admitted, TransferEvent):
            return admitted
        if not synchronously(self._ledger.claim(admitted.dedup_key), _ASYNC_STORE):
            return WebhookReply.of(200, "duplicate")
        try:
            _refuse_awaitable(self._on_event(admitted))
        except BaseException:
            synchronously(self._ledger.forget(admitted.dedup_key), _ASYNC_STORE)
            raise
        synchronously(self._release(admitted), _ASYNC_STORE)
        return WebhookReply.of(200, "received")

    async def handle_async(self, headers: Mapping[str, str], body: bytes) -> WebhookReply:
        """As :meth:`handle`, awaiting the handler, the ledger and the guard when they are asynchronous."""
        admitted = self._admit(headers, body)
        if not isinstance(admitted, TransferEvent):
            return admitted
        if not await settled(self._ledger.claim(admitted.dedup_key)):
            return WebhookReply.of(200, "duplicate")
        try:
            await settled(self._on_event(admitted))
        except BaseException:
            await settled(self._ledger.forget(admitted.dedup_key))
            raise
        await settled(self._release(admitted))
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
            await _respond(send, WebhookReply.of(405, "POST only"))
            return
        body = await read_body(receive, self._max_body_bytes)
        if body is None:  # the sender went away
            return
        if len(body) > self._max_body_bytes:
            await _respond(send, WebhookReply.of(413, "body too large"))
            return
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        try:
            reply = await self.handle_async(headers, body)
        except StoreUnavailableError as exc:  # fail closed: not handled, so the service delivers it again
            _log.error("transfer webhook not handled: %s", exc)
            reply = WebhookReply.of(503, "try again later")
        await _respond(send, reply)


def _refuse_awaitable(outcome: object) -> None:
    if inspect.isawaitable(outcome):
        if inspect.iscoroutine(outcome):
            outcome.close()
        raise TypeError("the handler is async: mount the receiver as an ASGI app or use handle_async()")


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
