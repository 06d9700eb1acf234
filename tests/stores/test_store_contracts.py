"""One contract for each shared store, held by every backend (tests/support/store_backends.py): in memory, on Redis and
on PostgreSQL, the latter two sync and asyncio, each on the real server the tests start.

- the replay store: a signature's first use once, its replays refused on every node, the record gone after the
  window, one winner among nodes racing, a verifier refusing on another node what one accepted;
- the webhook ledger: claim / confirm / release with leases (a lease ends by itself), a redelivery "handled",
  another final of a finished transaction "superseded", a second delivery during the first "in progress";
- the pending-transfer guard: one transfer per order until released, confirm and release by token or reference,
  one winner among racing nodes, a reservation expiring after its ttl;
- the webhook receiver on each ledger and on the PostgreSQL inbox: the same answers to the same deliveries, each
  event handed over once (the inbox: its effects committed once), a failing handler's event handled again;
- every networked backend fails closed (StoreUnavailableError) when its server cannot be reached.
"""

# ruff: noqa: S105, S106, S608 (test tokens and secrets are fixtures; the tests' own schema names in SQL)

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest

import pasarela
from pasarela import AuthError
from pasarela.errors import PendingTransferError, StoreUnavailableError, ValidationError
from pasarela.terminal.replay import Verifier
from pasarela.transfers import PendingTransfers, TransferEvent, TransferWebhookReceiver, body_signature
from pasarela.transfers.webhook_dedup import Claim, EventKey
from support.faulty_clients import BUSINESS_CODE, NOON, SERIAL
from support.postgres_server import fresh_schema
from support.redis_server import free_port
from support.store_backends import BACKENDS, NETWORKED, Backend, Stores, settle

TERMINAL = pasarela.Terminal(BUSINESS_CODE, SERIAL)
SIGNATURE = "ab" * 64
SECRET = "whsec-contract"
LATE = 4e9  # an expiry far ahead: the window is still open


def backend_for(request: pytest.FixtureRequest, name: str) -> Backend:
    if name.startswith("redis"):
        from support.redis_memory import declare_new

        server = request.getfixturevalue("redis_server")
        with server.client() as client:
            client.flushall()
        declare_new(server)  # a new Redis, as its operator declares it (the stores judge at once)
        return Backend(name, server)
    if name.startswith("postgres") or name.startswith("inbox"):
        server = request.getfixturevalue("postgres_server")
        return Backend(name.replace("inbox", "postgres"), server, fresh_schema(server))
    return Backend(name)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    return backend_for(request, request.param)


@pytest.fixture(params=NETWORKED)
def networked(request: pytest.FixtureRequest) -> Backend:
    return Backend(request.param)


def concurrently(count: int, attempt: Any) -> None:
    """``attempt(index)`` in ``count`` threads released together."""
    barrier = threading.Barrier(count)

    def run(index: int) -> None:
        barrier.wait()
        attempt(index)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


async def racing(backend: Backend, count: int, attempt: Any) -> None:
    """``await attempt(index)`` ``count`` times at once: tasks of one loop (asyncio stores) or threads."""
    if backend.is_async:
        await asyncio.gather(*(attempt(index) for index in range(count)))
    else:
        concurrently(count, lambda index: asyncio.run(attempt(index)))


# --- the replay store -------------------------------------------------------------------------------------------


def test_replay_store_first_use_once_per_signature(backend: Backend) -> None:
    async def body(stores: Stores) -> list[bool]:
        store = stores.replay()
        return [await settle(store.first_use(signature, LATE)) for signature in (SIGNATURE, SIGNATURE, "cd" * 64,
                                                                                 "not-hex", "not-hex", SIGNATURE)]

    assert backend.run(body) == [True, False, True, True, False, False]


def test_replay_store_forgets_a_signature_once_its_window_has_passed(backend: Backend) -> None:
    async def body(stores: Stores) -> list[bool]:
        store = stores.replay(clock_skew=0)
        window_end = time.time() + 0.05
        verdicts = [await settle(store.first_use(SIGNATURE, window_end)),
                    await settle(store.first_use(SIGNATURE, window_end))]
        deadline = time.monotonic() + 10
        while not (again := await settle(store.first_use(SIGNATURE, window_end))) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return [*verdicts, again]

    assert backend.run(body) == [True, False, True]


def test_replay_store_one_winner_among_nodes_racing(backend: Backend) -> None:
    async def body(stores: Stores) -> list[bool]:
        nodes = [stores.replay() for _ in range(8)]
        outcomes: list[bool] = []

        async def attempt(index: int) -> None:
            for signature in range(40):
                outcomes.append(await settle(nodes[index].first_use(f"{signature:0128x}", LATE)))

        await racing(backend, len(nodes), attempt)
        return outcomes

    outcomes = backend.run(body)
    assert len(outcomes) == 8 * 40 and outcomes.count(True) == 40  # each signature won exactly once


def test_a_verifier_refuses_on_another_node_what_one_accepted(backend: Backend) -> None:
    sealed = TERMINAL.seal({"amount": 100}, timestamp=NOON)

    async def body(stores: Stores) -> list[Any]:
        verdicts: list[Any] = []
        for node in (Verifier(TERMINAL, replay_store=stores.replay(clock=lambda: NOON), clock=lambda: NOON),
                     Verifier(TERMINAL, replay_store=stores.replay(clock=lambda: NOON + 1), clock=lambda: NOON + 1)):
            try:
                verdicts.append(await node.open_async("POST", sealed.headers, sealed.body))
            except AuthError as refused:
                verdicts.append(refused.reason)
        return verdicts

    first, second = backend.run(body)
    assert first == {"amount": 100} and "replay" in second


# --- the webhook ledger -----------------------------------------------------------------------------------------


def test_ledger_claims_releases_confirms_and_supersedes(backend: Backend) -> None:
    paid, initialized = EventKey("ref-1", "PAID", final=True), EventKey("ref-1", "initialized", final=False)
    long_key = EventKey("x" * 1000, "PAID", final=True)

    async def body(stores: Stores) -> list[Claim]:
        ledger = stores.ledger(ttl=3600, lease=60)
        claims = [await settle(ledger.claim(initialized, "a")),
                  await settle(ledger.claim(initialized, "a")),  # its own claim, sent again
                  await settle(ledger.claim(paid, "b"))]  # one delivery per transaction at once
        await settle(ledger.release(initialized, "b"))  # not b's lease: nothing happens
        claims.append(await settle(ledger.claim(initialized, "c")))
        await settle(ledger.release(initialized, "a"))  # the handler failed
        claims.append(await settle(ledger.claim(initialized, "c")))
        await settle(ledger.confirm(initialized, "c"))
        await settle(ledger.confirm(initialized, "c"))  # sent again: the same record
        claims += [await settle(ledger.claim(initialized, "d")), await settle(ledger.claim(paid, "e"))]
        await settle(ledger.confirm(paid, "e"))
        claims += [await settle(ledger.claim(paid, "f")),
                   await settle(ledger.claim(EventKey("ref-1", "declined", final=True), "g")),
                   await settle(ledger.claim(initialized, "h")),  # handled before the final: still a duplicate
                   await settle(ledger.claim(long_key, "i")), await settle(ledger.claim(long_key, "j"))]
        return claims

    assert backend.run(body) == [
        Claim.CLAIMED, Claim.CLAIMED, Claim.IN_PROGRESS, Claim.IN_PROGRESS, Claim.CLAIMED, Claim.HANDLED,
        Claim.CLAIMED, Claim.HANDLED, Claim.SUPERSEDED, Claim.HANDLED, Claim.CLAIMED, Claim.IN_PROGRESS]


def test_ledger_lease_ends_by_itself(backend: Backend) -> None:
    """A process that died while handling frees the transaction when its lease ends; its late confirmation
    records the event and leaves the new lease alone."""
    event = EventKey("ref-1", "PAID", final=True)

    async def body(stores: Stores) -> list[Claim]:
        ledger = stores.ledger(lease=0.05)
        claims = [await settle(ledger.claim(event, "crashed")), await settle(ledger.claim(event, "redelivery"))]
        deadline = time.monotonic() + 10
        while await settle(ledger.claim(event, "redelivery")) is Claim.IN_PROGRESS and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        claims.append(await settle(ledger.claim(event, "redelivery")))
        await settle(ledger.confirm(event, "crashed"))
        claims += [await settle(ledger.claim(event, "redelivery")), await settle(ledger.claim(event, "another"))]
        return claims

    assert backend.run(body) == [Claim.CLAIMED, Claim.IN_PROGRESS, Claim.CLAIMED, Claim.CLAIMED, Claim.HANDLED]


def test_ledger_one_claim_among_deliveries_racing(backend: Backend) -> None:
    event = EventKey("ref-race", "PAID", final=True)

    async def body(stores: Stores) -> list[Claim]:
        nodes = [stores.ledger() for _ in range(8)]
        claims: list[Claim] = []

        async def attempt(index: int) -> None:
            claims.append(await settle(nodes[index].claim(event, f"token-{index}")))

        await racing(backend, len(nodes), attempt)
        return claims

    claims = backend.run(body)
    assert sorted(claim.value for claim in claims) == ["claimed"] + ["in progress"] * 7


# --- the pending-transfer guard ---------------------------------------------------------------------------------


def test_guard_refuses_a_second_transfer_until_released(backend: Backend) -> None:
    async def body(stores: Stores) -> None:
        guard = stores.guard(clock=lambda: NOON)
        await settle(guard.reserve("order-1", "tok-1"))
        with pytest.raises(PendingTransferError) as refused:
            await settle(guard.reserve("order-1", "tok-2"))
        assert refused.value.order_id == "order-1"
        await settle(guard.reserve("order-2", "tok-3"))
        pending = await settle(guard.pending("order-1"))
        assert pending is not None
        assert (pending.order_id, pending.token, pending.confirmed, pending.reserved_at,
                pending.transaction_reference) == ("order-1", "tok-1", False, NOON, None)
        await settle(guard.release("order-1"))
        assert await settle(guard.pending("order-1")) is None
        await settle(guard.reserve("order-1", "tok-4"))
        assert (await settle(guard.pending("order-1"))).token == "tok-4"

    backend.run(body)


def test_guard_confirm_then_release_by_reference_or_token(backend: Backend) -> None:
    async def body(stores: Stores) -> None:
        guard = stores.guard()
        await settle(guard.reserve("order-1", "tok-1"))
        await settle(guard.confirm("order-1", "ref-1", token="tok-other"))  # another transfer's: nothing
        assert not (await settle(guard.pending("order-1"))).confirmed
        await settle(guard.confirm("order-1", "ref-1", token="tok-1"))
        pending = await settle(guard.pending("order-1"))
        assert pending is not None and pending.confirmed and pending.transaction_reference == "ref-1"
        assert await settle(guard.release_transfer(transaction_reference="ref-1")) == "order-1"
        assert await settle(guard.pending("order-1")) is None
        assert await settle(guard.release_transfer(transaction_reference="ref-1")) is None
        await settle(guard.reserve("order-2", "tok-2"))
        await settle(guard.confirm("order-2", None, token="tok-2"))
        assert await settle(guard.release_transfer(token="tok-unknown")) is None
        assert await settle(guard.release_transfer()) is None
        assert await settle(guard.pending("order-2")) is not None
        assert await settle(guard.release_transfer(token="tok-2")) == "order-2"
        await settle(guard.confirm("order-2", "ref-late", token="tok-2"))  # released meanwhile: nothing recreated
        assert await settle(guard.pending("order-2")) is None
        await settle(guard.reserve("order-2", "tok-5"))  # free again

    backend.run(body)


def test_guard_one_winner_among_nodes_racing(backend: Backend) -> None:
    async def body(stores: Stores) -> tuple[list[str], Any]:
        nodes = [stores.guard() for _ in range(8)]
        winners: list[str] = []

        async def attempt(index: int) -> None:
            try:
                await settle(nodes[index].reserve("order-1", f"tok-{index}"))
            except PendingTransferError:
                return
            winners.append(f"tok-{index}")

        await racing(backend, len(nodes), attempt)
        return winners, await settle(nodes[0].pending("order-1"))

    winners, pending = backend.run(body)
    assert len(winners) == 1 and pending is not None and pending.token == winners[0]


@pytest.mark.parametrize("name", [name for name in BACKENDS if name != "memory"])  # (SQLite's guard has no ttl)
def test_guard_reservation_expires_after_its_ttl(name: str, request: pytest.FixtureRequest) -> None:
    async def body(stores: Stores) -> None:
        guard = stores.guard(ttl=0.05)
        await settle(guard.reserve("order-1", "tok-1"))
        with pytest.raises(PendingTransferError):
            await settle(guard.reserve("order-1", "tok-2"))
        deadline = time.monotonic() + 10
        while await settle(guard.pending("order-1")) is not None and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        await settle(guard.reserve("order-1", "tok-3"))  # an order whose result never came frees itself
        assert (await settle(guard.pending("order-1"))).token == "tok-3"

    backend_for(request, name).run(body)


# --- the webhook receiver on each ledger, and on the inbox ------------------------------------------------------

RECEIVERS = [*BACKENDS, "inbox-sync", "inbox-async"]


def delivery(reference: str, status: str) -> tuple[dict[str, str], bytes]:
    body = json.dumps({"token": f"tok-{reference}", "transactionReference": reference, "status": status}).encode()
    webhook_id = str(int(time.time() * 1000))
    return {"X-Kushki-Id": webhook_id, "X-Kushki-Signature": body_signature(SECRET, body, webhook_id)}, body


class Merchant:
    """The merchant's handler: remembers each event it was handed (and, under the inbox, writes it as a row of
    its own table in the inbox's transaction); fails when told to; waits while ``hold`` is clear. For an asyncio
    receiver (``is_async``) it is a coroutine function, as an application's would be."""

    def __init__(self, backend: Backend, *, own_table: bool = False) -> None:
        """``own_table``: create the table it writes to under the inbox (merchant_effects)."""
        if own_table:
            with backend.server.connect() as admin:
                admin.execute(f"CREATE TABLE {backend.schema}.merchant_effects (event text NOT NULL)")
        self.handed: list[str] = []
        self.fail: set[str] = set()
        self.hold = threading.Event()
        self.held = threading.Event()
        self.hold.set()
        self._schema = backend.schema
        self.handle: Any = self._handle_async if backend.is_async else self._handle

    def _insert(self, event: TransferEvent, tx: Any) -> Any:
        return tx.execute(f"INSERT INTO {self._schema}.merchant_effects (event) VALUES (%s)",
                          (event.dedup_key,))

    def _handle(self, event: TransferEvent, tx: Any = None) -> None:
        self.handed.append(event.dedup_key)
        if tx is not None:
            self._insert(event, tx)
        self.held.set()
        self.hold.wait(timeout=30)
        self._maybe_fail(event)

    async def _handle_async(self, event: TransferEvent, tx: Any = None) -> None:
        self.handed.append(event.dedup_key)
        if tx is not None:
            await self._insert(event, tx)
        self.held.set()
        deadline = time.monotonic() + 30
        while not self.hold.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        self._maybe_fail(event)

    def _maybe_fail(self, event: TransferEvent) -> None:
        if event.dedup_key in self.fail:
            self.fail.discard(event.dedup_key)
            raise RuntimeError("the handler failed")


@pytest.fixture(params=RECEIVERS)
def receiver_backend(request: pytest.FixtureRequest) -> tuple[str, Backend]:
    return request.param, backend_for(request, request.param)


def test_the_receiver_answers_alike_on_every_ledger_and_on_the_inbox(receiver_backend: tuple[str, Backend]) -> None:
    mode, backend = receiver_backend
    inbox = mode.startswith("inbox")
    merchant = Merchant(backend, own_table=inbox)

    async def body(stores: Stores) -> list[str]:
        guard = stores.guard()
        await settle(guard.reserve("order-2", "tok-ref-2"))
        options: dict[str, Any] = {"inbox": stores.inbox()} if inbox else {"ledger": stores.ledger()}
        receiver = TransferWebhookReceiver(merchant.handle, secret=SECRET, pending=guard, **options)

        async def deliver(reference: str, status: str) -> str:
            try:
                reply = await receiver.handle_async(*delivery(reference, status))
            except RuntimeError:
                return "failed"
            return str(json.loads(reply.body)["status"])

        answers = [await deliver("ref-1", "initialized"), await deliver("ref-1", "initialized")]
        merchant.fail.add("ref-1:PAID")
        answers += [await deliver("ref-1", "PAID"), await deliver("ref-1", "PAID"), await deliver("ref-1", "PAID"),
                    await deliver("ref-1", "initialized"), await deliver("ref-1", "declined"),
                    await deliver("ref-2", "PAID"), await deliver("ref-2", "initialized")]
        assert await settle(guard.pending("order-2")) is None  # the final event released its order
        return answers

    assert backend.run(body) == ["received", "duplicate", "failed", "received", "duplicate", "duplicate",
                                 "superseded", "received", "superseded"]
    assert merchant.handed == ["ref-1:initialized", "ref-1:PAID", "ref-1:PAID", "ref-2:PAID"]
    if inbox:  # the failed handler's row was rolled back with its claim
        with backend.server.connect() as admin:
            rows = admin.execute(f"SELECT event FROM {backend.schema}.merchant_effects ORDER BY event").fetchall()
        assert [row[0] for row in rows] == ["ref-1:PAID", "ref-1:initialized", "ref-2:PAID"]


def test_a_twin_delivered_while_the_first_is_handled_is_never_handled_twice(
    receiver_backend: tuple[str, Backend]
) -> None:
    """The second delivery meets the first one's lease (503 "in progress") or, on the inbox, waits for its commit
    and finds it handled (200 "duplicate"); it is never handed over."""
    mode, backend = receiver_backend
    inbox = mode.startswith("inbox")
    merchant = Merchant(backend, own_table=inbox)
    headers, body_bytes = delivery("ref-twin", "PAID")

    async def body(stores: Stores) -> list[str]:
        options: dict[str, Any] = {"inbox": stores.inbox(lock_wait=10)} if inbox else {"ledger": stores.ledger()}
        receivers = [TransferWebhookReceiver(merchant.handle, secret=SECRET, **options) for _ in range(2)]
        merchant.hold.clear()

        async def deliver(receiver: TransferWebhookReceiver) -> str:
            return str(json.loads((await receiver.handle_async(headers, body_bytes)).body)["status"])

        async def twin() -> str:
            while not merchant.held.is_set():
                await asyncio.sleep(0.01)
            if inbox:  # the twin waits on the first one's row, which commits meanwhile
                threading.Timer(0.3, merchant.hold.set).start()
                return await deliver(receivers[1])
            answer = await deliver(receivers[1])
            merchant.hold.set()
            return answer

        if backend.is_async:
            return list(await asyncio.gather(deliver(receivers[0]), twin()))
        # a sync store blocks its caller: each delivery in a thread (and an event loop) of its own
        return list(await asyncio.gather(asyncio.to_thread(asyncio.run, deliver(receivers[0])),
                                         asyncio.to_thread(asyncio.run, twin())))

    answers = backend.run(body)
    assert sorted(answers) == (["duplicate", "received"] if inbox else ["in progress", "received"]), answers
    assert merchant.handed == ["ref-twin:PAID"]


# --- unreachable ------------------------------------------------------------------------------------------------


def test_every_store_fails_closed_when_its_server_cannot_be_reached(networked: Backend) -> None:
    async def body(stores: Stores) -> list[str]:
        calls = [lambda: stores.replay().first_use(SIGNATURE, LATE),
                 lambda: stores.ledger().claim(EventKey("ref-1", "PAID", final=True), "a"),
                 lambda: stores.guard().reserve("order-1", "tok-1"),
                 lambda: stores.guard().release_transfer(token="tok-1")]
        refusals = []
        for call in calls:
            with pytest.raises(StoreUnavailableError) as refused:
                await settle(call())
            assert refused.value.status == 503 and refused.value.__cause__ is None
            assert SIGNATURE not in str(refused.value)
            refusals.append(refused.value.store)
        return refusals

    family = "Redis" if networked.family == "redis" else "PostgreSQL"
    assert networked.run_unreachable(body, free_port()) == [
        f"replay store ({family})", f"webhook ledger ({family})", f"pending-transfer guard ({family})",
        f"pending-transfer guard ({family})"]


@pytest.mark.parametrize(("reference", "status"), [("ref-\ud800", "PAID"), ("ref-lone", "PAID\udc00"),
                                                    ("\udfff" * 300, "declined")])
def test_a_lone_surrogate_in_a_signed_body_is_an_event_like_any_other(
    receiver_backend: tuple[str, Backend], reference: str, status: str
) -> None:
    """A JSON escape (``"\\ud800"``) gives a string UTF-8 cannot encode: every ledger, the inbox and every guard
    still take the event (Redis as its bytes, PostgreSQL hashed, a guard finding no reservation for it) and a
    redelivery is a duplicate. The Redis stores and the SQLite guard raised UnicodeEncodeError: a 500."""
    mode, backend = receiver_backend
    handed: list[str] = []

    def handle(event: TransferEvent, tx: Any = None) -> None:
        handed.append(event.dedup_key)

    async def handle_async(event: TransferEvent, tx: Any = None) -> None:
        handle(event)

    async def body(stores: Stores) -> list[str]:
        options: dict[str, Any] = {"inbox": stores.inbox()} if mode.startswith("inbox") else {"ledger": stores.ledger()}
        receiver = TransferWebhookReceiver(handle_async if backend.is_async else handle, secret=SECRET,
                                           pending=stores.guard(), **options)
        answers = []
        for _ in range(2):
            reply = await receiver.handle_async(*delivery(reference, status))
            answers.append(str(json.loads(reply.body)["status"]))
        return answers

    assert backend.run(body) == ["received", "duplicate"]
    assert handed == [f"{reference}:{status}"]


def test_the_sqlite_guard_refuses_by_name_what_it_cannot_hold() -> None:
    guard = PendingTransfers()
    with pytest.raises(ValidationError, match=r"^token: holds a lone surrogate"):
        guard.reserve("order-1", "tok-\ud800")
    guard.reserve("order-1", "tok-1")
    with pytest.raises(ValidationError, match=r"^transaction_reference: holds a lone surrogate"):
        guard.confirm("order-1", "ref-\udc00", token="tok-1")
    assert guard.release_transfer(transaction_reference="ref-\udc00") is None
    assert guard.release_transfer(token="tok-1") == "order-1"
    guard.close()
