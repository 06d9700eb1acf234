"""Hand-off: a webhook handler that only enqueues the event on an RQ queue, so the service gets its 200 at once
(it waits 5 s) and a worker does the slow work (extra ``pasarela[rq]``; RQ runs on the Redis you have).

    from redis import Redis
    from rq import Queue
    from pasarela.transfers.handoff_rq import RQHandOff
    from pasarela.transfers.webhook_dedup_redis import RedisEventLedger

    redis = Redis.from_url("redis://queue.internal:6379/0", socket_timeout=0.5)
    hand_off = RQHandOff(Queue("transfer-events", connection=redis), "shop.jobs.fulfil")
    receiver = TransferWebhookReceiver(hand_off, secret=..., ledger=RedisEventLedger(redis))

    # shop/jobs.py, run by `rq worker transfer-events`
    def fulfil(event: TransferEvent) -> None: ...

Each event becomes one job whose id is derived from the event's key (:func:`job_id`: the same on every node), and
it is enqueued with RQ's ``unique=True``: one atomic script that creates the job only if no job of that id
exists. The ledger in front already drops redeliveries; the job id covers what the ledger cannot know, a node
that enqueued and died before the ledger recorded the event (the redelivery runs the handler again, finds the
job, and enqueues nothing). So duplicate deliveries enqueue one job, as long as RQ keeps the job: queued until
a worker takes it, then ``keep`` seconds after it finished or failed (default 7 days, the ledgers' ttl; each
kept job is a Redis hash of about a kilobyte). A failed job stays in RQ's failed registry: requeue it there
(``rq requeue``), or give ``retry=Retry(...)``; a redelivery does not enqueue it again.

What the job does may still happen twice (a worker killed mid-job and the job retried): write its effects
exactly once with :class:`~pasarela.transfers.inbox_postgres.PostgresInbox` (``inbox.handle_once(event.key,
...)`` inside the job), or make them idempotent. When Redis cannot be reached the handler raises
:class:`~pasarela.errors.StoreUnavailableError`: the receiver answers 503 and the service delivers the event
again. The enqueue is one round trip, run where the handler runs (under ASGI, on the event loop: give the
Redis client a short ``socket_timeout``).
"""

from __future__ import annotations

import hashlib
from contextlib import suppress
from typing import Any, Callable, Union

from ..errors import ConfigurationError, missing_extra
from .webhook_dedup import DEFAULT_TTL, EventKey
from .webhooks import TransferEvent

try:
    from rq import Queue
    from rq.exceptions import DuplicateJobError
except ModuleNotFoundError as exc:  # pragma: no cover - the tests install rq
    raise missing_extra(exc, "pasarela.transfers.handoff_rq", "rq") from exc

from .._redis_store import failing_closed, seconds

__all__ = ["RQHandOff", "job_id"]

_STORE = "job queue (RQ)"
_OWN_OPTIONS = frozenset({"job_id", "unique", "result_ttl", "failure_ttl", "ttl", "args", "kwargs"})
"""Options of ``Queue.enqueue`` that the hand-off sets itself (``ttl``: a job must never expire unrun)."""


def job_id(event: EventKey) -> str:
    """The id of the job of ``event``: ``transfer-event-`` and the SHA-256 of its key, in hex (RQ accepts only
    letters, digits, ``-`` and ``_`` in an id, and an event's key may hold anything its webhook body held)."""
    digest = hashlib.sha256(event.dedup_key.encode("utf-8", "surrogatepass")).hexdigest()
    return f"transfer-event-{digest}"


class RQHandOff:
    """A handler for :class:`~pasarela.transfers.TransferWebhookReceiver` that enqueues ``job(event)`` on ``queue``
    (an ``rq.Queue``) once per event. ``job``: the function, or its dotted name (the web node need not import it).
    ``keep``: seconds a finished or failed job is kept, and so duplicates are recognized. Other keyword
    arguments go to ``Queue.enqueue`` (``job_timeout``, ``retry``, ``at_front``, ``description``, ...)."""

    def __init__(self, queue: Queue, job: Union[Callable[..., Any], str], *, keep: float = DEFAULT_TTL,
                 **enqueue_options: Any) -> None:
        if not isinstance(queue, Queue):
            raise ConfigurationError("RQHandOff takes an rq.Queue")
        if not callable(job) and not (isinstance(job, str) and job):
            raise ConfigurationError("job must be a function or its dotted name")
        taken = _OWN_OPTIONS & enqueue_options.keys()
        if taken:
            raise ConfigurationError(f"RQHandOff sets {', '.join(sorted(taken))} itself")
        self._queue = queue
        self._job: Any = job  # (enqueue types a function or a name, each apart: not their union)
        self._keep = max(1, round(seconds(keep, "keep")))
        self._options = enqueue_options

    @property
    def queue(self) -> Queue:
        return self._queue

    def __call__(self, event: TransferEvent) -> None:
        """Enqueue the event's job, unless a job of its id is queued, running or kept."""
        # DuplicateJobError: this event's job was enqueued before, by an earlier delivery, here or on another node
        with failing_closed(_STORE), suppress(DuplicateJobError):
            self._queue.enqueue(self._job, event, job_id=job_id(event.key), unique=True, result_ttl=self._keep,
                                failure_ttl=self._keep, **self._options)

    def __repr__(self) -> str:
        return f"RQHandOff(queue={self._queue.name!r})"
