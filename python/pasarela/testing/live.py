"""A sandbox for a test suite: served on a free loopback port, its clock in the test's hands, the payer's actions
and the webhooks it sent at hand, reset between tests without a restart.

    with LiveSandbox() as sandbox:
        token = sandbox.transfers.create_token(TransferTokenRequest.colombia_qr(amount=amount)).token
        sandbox.transfers.init(TransferInitRequest(token=token, amount=amount))
        sandbox.advance(minutes=11)                       # the QR's 10 minutes are over
        assert sandbox.transfers.status(token).status == "expiredTransaction"

The pytest plugin (:mod:`pasarela.testing.plugin`) hands one out as the ``pasarela_sandbox`` fixture.

Time stands still: the sandbox clock is the moment the sandbox started (or was last reset), moved only by
:meth:`LiveSandbox.advance`. So a QR expires, a Mexico transfer settles by itself (``settle_after``, 5 s) and a
webhook retry comes due exactly when the test says, never because the machine was slow. The ``X-Kushki-Id`` of
each delivery is still the wall clock's, as the service sends it, so a receiver checking freshness sees it fresh.
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Union

from .._closing import ClosesOnExit
from ..errors import missing_extra
from .served import ServedApp

try:
    from ..sandbox.payments import expire, pay
    from ..sandbox.scenarios import Outcome
    from ..sandbox.service import Sandbox
    from ..sandbox.simulator import redeliver
    from ..sandbox.transfers import status_record
    from ..sandbox.webhooks import Sender
except ModuleNotFoundError as exc:
    raise missing_extra(exc, "pasarela.testing", "testing") from exc
from ..sandbox.config import SandboxConfig
from ..sandbox.jsontext import loads
from ..sandbox.store import Attempt, OutboxEntry
from ..transfers.responses import TransferStatus

if TYPE_CHECKING:
    import pasarela.httpx

    from ..cards.client import CardClient
    from ..http.config import ServiceConfig
    from ..transfers.client import TransferClient

__all__ = ["DeliveryAttempt", "LiveSandbox", "SentWebhook"]

_ALL_WEBHOOKS = 100_000
_POLL = 0.01


@dataclass(frozen=True)
class DeliveryAttempt:
    """One delivery of a webhook: when (sandbox clock, Unix seconds), where, the exact headers it carried, and
    what the receiver answered (``status`` ``None``: no answer; ``error`` says why it was not a 200; ``answer``:
    its first bytes); ``chaos``: what the sandbox did on purpose (:meth:`LiveSandbox.set_webhook_chaos`)."""

    at: float
    url: str
    status: Optional[int]
    latency_ms: float
    error: Optional[str]
    headers: Mapping[str, str] = field(repr=False)
    answer: Optional[str] = None
    chaos: Optional[str] = None


@dataclass(frozen=True)
class SentWebhook:
    """A webhook the sandbox queued: its event id, transfer token, status word (``approvedTransaction``,
    ``declinedTransaction``), the body as sent (``raw``, and parsed as ``body``) and every delivery attempt."""

    id: str
    token: str
    status: str
    delivered: bool
    attempts: tuple[DeliveryAttempt, ...]
    body: Mapping[str, Any] = field(repr=False)
    raw: bytes = field(repr=False)


def _sent(entry: OutboxEntry, attempts: Sequence[Attempt]) -> SentWebhook:
    body = loads(entry.body)
    return SentWebhook(
        id=entry.id, token=entry.token, status=str(body.get("status", "")), delivered=entry.delivered_at is not None,
        attempts=tuple(DeliveryAttempt(attempt.at, attempt.url, attempt.status, attempt.latency_ms, attempt.error,
                                       dict(attempt.headers), attempt.answer, attempt.chaos) for attempt in attempts),
        body=body, raw=entry.body)


def _last_outcome(hook: SentWebhook) -> str:
    if hook.delivered:
        return "delivered"
    return (hook.attempts[-1].error or "not delivered") if hook.attempts else "not sent"


def _seconds(seconds: float, minutes: float, hours: float, days: float) -> float:
    total = seconds + 60 * minutes + 3600 * hours + 86400 * days
    parts = (seconds, minutes, hours, days)
    if any(isinstance(part, bool) or not isinstance(part, (int, float)) for part in parts) \
            or not math.isfinite(total) or total < 0:
        raise ValueError("advance() takes non-negative numbers of seconds, minutes, hours and days")
    return float(total)


class _StillClock:
    """The base of the sandbox clock: a moment that moves only when reset (the advances are the sandbox's)."""

    def __init__(self, at: Optional[float] = None) -> None:
        self._at = time.time() if at is None else at

    def __call__(self) -> float:
        return self._at

    def restart(self) -> None:
        self._at = time.time()


class LiveSandbox(ClosesOnExit):
    """A :class:`~pasarela.sandbox.Sandbox` served by uvicorn on ``127.0.0.1:<free port>`` in a background thread.

    ``config`` is the sandbox's (keys, webhook URL, ``settle_after``...; its ``public_url`` defaults to the address
    it is served at); ``db`` is ``:memory:`` or a SQLite file; ``start`` the moment its clock starts at (Unix
    seconds; default now); ``sender`` delivers its webhooks (default: HTTP, with the service's 5 s timeout). Close it
    (or use ``with``): the server stops, the clients close.
    """

    def __init__(self, config: Optional[SandboxConfig] = None, *, db: Union[str, os.PathLike[str]] = ":memory:",
                 start: Optional[float] = None, sender: Optional[Sender] = None) -> None:
        self._clock = _StillClock(start)
        sandbox_config = config if config is not None else SandboxConfig()
        self._served = ServedApp(lifespan="off")  # the port first: the sandbox's links need its address
        if sandbox_config.public_url is None:
            sandbox_config = dataclasses.replace(sandbox_config, public_url=self._served.url)
        self.config = sandbox_config
        try:
            self.sandbox = Sandbox(sandbox_config, db=db, clock=self._clock, sender=sender)
        except BaseException:
            self._served.stop()
            raise
        """The :class:`~pasarela.sandbox.Sandbox` itself (store, dispatcher, app)."""
        self._served.app = self.sandbox.app
        self._clients: dict[str, Any] = {}
        self._clients_lock = threading.Lock()
        self.sandbox.start()
        try:
            self._served.start()
        except BaseException:
            self.sandbox.close()
            raise

    # --- where it is, and clients pointed at it
    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``: the ``base_url`` of the clients."""
        return self._served.url

    @property
    def terminal_url(self) -> str:
        return self.url + "/terminal"

    @property
    def cdn_url(self) -> str:
        """Where the CDN stand-ins are, for ``CheckoutV2(...).render(sandbox.cdn_url)``."""
        return self.sandbox.cdn_url

    @property
    def service_config(self) -> ServiceConfig:
        """A :class:`~pasarela.http.ServiceConfig` for this sandbox's address and keys (for your own clients, the
        async ones included)."""
        from ..http.config import ServiceConfig

        return ServiceConfig(base_url=self.url, public_merchant_id=self.config.public_key,
                             private_merchant_id=self.config.private_key)

    def _client(self, name: str, make: Any) -> Any:
        with self._clients_lock:
            if name not in self._clients:
                self._clients[name] = make()
            return self._clients[name]

    @property
    def transfers(self) -> TransferClient:
        """A :class:`~pasarela.transfers.TransferClient` pointed at this sandbox (closed with it)."""
        from ..transfers.client import TransferClient

        return self._client("transfers", lambda: TransferClient(self.service_config))  # type: ignore[no-any-return]

    @property
    def cards(self) -> CardClient:
        """A :class:`~pasarela.cards.CardClient` pointed at this sandbox (closed with it)."""
        from ..cards.client import CardClient

        return self._client("cards", lambda: CardClient(self.service_config))  # type: ignore[no-any-return]

    @property
    def terminal(self) -> pasarela.httpx.TerminalClient:
        """A :class:`pasarela.httpx.TerminalClient` for the simulated terminal, with the sandbox's credentials."""
        from ..httpx import TerminalClient
        from ..terminal.envelope import Terminal

        def make() -> pasarela.httpx.TerminalClient:
            return TerminalClient(self.terminal_url, Terminal(business_code=self.config.business_code,
                                                              terminal_serial=self.config.terminal_serial))

        return self._client("terminal", make)  # type: ignore[no-any-return]

    # --- time
    def now(self) -> float:
        """The sandbox clock, Unix seconds."""
        return self.sandbox.clock.now()

    def advance(self, *, seconds: float = 0, minutes: float = 0, hours: float = 0, days: float = 0) -> float:
        """Move the sandbox clock forward: a QR past its 10 minutes expires, due transfers settle (their webhooks
        go out), due webhook retries go out. Returns the new now."""
        return self.sandbox.advance(_seconds(seconds, minutes, hours, days))

    # --- the payer
    def pay(self, token: str, outcome: Optional[str] = None) -> TransferStatus:
        """The payer pays the transfer of ``token``, as the payer page's Pay button does: approved, or declined
        for documentNumber 999999990 (spec 8); ``outcome`` (``"approved"``, ``"declined"``) decides instead. Its
        webhook is queued. Returns the status record; a transfer that cannot be paid (final, cancelled, expired,
        a scenario that stays initialized) raises :class:`~pasarela.sandbox.errors.SandboxError` (409)."""
        paid = pay(self.sandbox.context, token, None if outcome is None else Outcome(outcome))
        return TransferStatus.from_json(status_record(paid, self.now()))

    def decline(self, token: str) -> TransferStatus:
        """The payer's payment is declined (``declinedTransaction``, a webhook follows)."""
        return self.pay(token, Outcome.DECLINED.value)

    def expire(self, token: str) -> TransferStatus:
        """The payment window of a pending transfer ends now (``expiredTransaction``: no longer payable, it does
        not settle by itself); 409 :class:`~pasarela.sandbox.errors.SandboxError` when it is not pending."""
        return TransferStatus.from_json(status_record(expire(self.sandbox.context, token, "test"), self.now()))

    # --- webhooks
    @property
    def webhook_url(self) -> Optional[str]:
        """Where webhooks go now; assign a URL (your receiver) or ``None`` (they wait in the outbox)."""
        return self.sandbox.context.webhook_target.url

    @webhook_url.setter
    def webhook_url(self, url: Optional[str]) -> None:
        self.sandbox.context.webhook_target.change(url)
        self.sandbox.dispatcher.notify()

    def set_webhook_chaos(self, *kinds: str, rate: float = 1.0, seed: Optional[int] = None) -> None:
        """Deliver the next events the hostile ways named (``"duplicate"``, ``"concurrent"``, ``"reorder"``,
        ``"late"``; none: no chaos), each event's first delivery with probability ``rate``; ``seed`` makes the
        choices repeatable. Each attempt made on purpose says so (:attr:`DeliveryAttempt.chaos`). A reset undoes it."""
        self.sandbox.dispatcher.chaos.set(kinds, rate, seed)

    def webhooks(self, token: Optional[str] = None) -> list[SentWebhook]:
        """Every webhook queued since the start or the last reset (``token``: of that transfer), oldest first, with
        each delivery attempt."""
        with self.sandbox.store.read() as tx:
            entries = tx.outbox(_ALL_WEBHOOKS, token=token)
            attempts = tx.attempts(None if token is None else [entry.id for entry in entries])
        by_event: dict[str, list[Attempt]] = {}
        for attempt in attempts:
            by_event.setdefault(attempt.event_id, []).append(attempt)
        return [_sent(entry, by_event.get(entry.id, ())) for entry in reversed(entries)]

    def wait_for_webhooks(self, count: int = 1, *, token: Optional[str] = None, delivered: bool = True,
                          timeout: float = 10.0) -> list[SentWebhook]:
        """Wait until ``count`` webhooks (of ``token``) were delivered (``delivered=False``: attempted at least
        once), and return them all; a TimeoutError saying what was seen after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            sent = self.webhooks(token)
            done = [hook for hook in sent if (hook.delivered if delivered else hook.attempts)]
            if len(done) >= count:
                return sent
            if time.monotonic() > deadline:
                seen = ", ".join(f"{hook.status}: {len(hook.attempts)} attempt(s), {_last_outcome(hook)}"
                                 for hook in sent) or "none queued"
                target = self.webhook_url or "no webhook URL: set sandbox.webhook_url"
                raise TimeoutError(f"{len(done)} of {count} webhook(s) {'delivered' if delivered else 'attempted'} "
                                   f"within {timeout:g} s ({target}); seen: {seen}")
            time.sleep(_POLL)

    def redeliver(self, webhook_id: str) -> None:
        """Send the webhook ``webhook_id`` (a :attr:`SentWebhook.id`) again now, delivered before or not, as the
        dashboard's Redeliver button does: a receiver that deduplicates sees it once."""
        redeliver(self.sandbox.context, webhook_id)

    def deliver_due(self) -> int:
        """Try every webhook due now once, synchronously; how many were delivered (the background dispatcher
        delivers them too, a moment later)."""
        return self.sandbox.dispatcher.deliver_due()

    # --- life
    def reset(self) -> None:
        """Start again from nothing, in milliseconds and without a restart: state, outbox and access log emptied,
        the clock back to the real now and standing still, the webhook URL and the delivery chaos back to the
        configured ones."""
        self._clock.restart()
        self.sandbox.reset()

    def close(self) -> None:
        with self._clients_lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()
        try:
            self._served.stop()
        finally:
            self.sandbox.close()

    def __repr__(self) -> str:
        return f"LiveSandbox({self.url}, {self.config!r})"

