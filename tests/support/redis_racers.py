"""Processes racing on the Redis pending-transfer guard (multiprocessing's spawn imports this module)."""

from __future__ import annotations

import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier

import redis
import redis.backoff
import redis.retry

from pasarela.errors import PendingTransferError, StoreUnavailableError
from pasarela.transfers.pending_redis import RedisPendingTransfers
from support.redis_faults import RETRIES, SOCKET_TIMEOUT


def reserve_each_order(url: str, order_ids: list[str], start: Barrier, wins: Queue[tuple[str, int]],
                       racer: int) -> None:
    """For each order in turn: wait for every racer, then try to reserve it; report the orders won."""
    with redis.Redis.from_url(url) as client:
        guard = RedisPendingTransfers(client)
        for order_id in order_ids:
            start.wait(timeout=60)
            try:
                guard.reserve(order_id, f"tok-{racer}-{order_id}")
            except PendingTransferError:
                continue
            wins.put((order_id, racer))


def reserve_each_order_under_faults(url: str, order_ids: list[str], ready: Barrier, start: Barrier,
                                    verdicts: Queue[tuple[str, int, str]], racer: int) -> None:
    """As :func:`reserve_each_order`, with the short timeout and the retries of tests/support/redis_faults.py, while the
    test makes Redis misbehave (from ``ready`` on): report each verdict, 'won', 'refused'
    (PendingTransferError) or 'error'."""
    with redis.Redis.from_url(url, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=SOCKET_TIMEOUT,
                              retry=redis.retry.Retry(redis.backoff.NoBackoff(), RETRIES)) as client:
        guard = RedisPendingTransfers(client)
        guard.reserve(f"order-warm-up-{racer}", f"tok-warm-up-{racer}")  # connected, and Redis has the scripts,
        guard.release(f"order-warm-up-{racer}")  # as in a running application
        ready.wait(timeout=60)
        for order_id in order_ids:
            time.sleep(0.1)  # paced, so that the orders meet every kind of fault the test cycles through
            start.wait(timeout=60)
            try:
                guard.reserve(order_id, f"tok-{racer}-{order_id}")
            except PendingTransferError:
                verdicts.put((order_id, racer, "refused"))
            except StoreUnavailableError:
                verdicts.put((order_id, racer, "error"))
            else:
                verdicts.put((order_id, racer, "won"))
