"""Processes racing on the Redis pending-transfer guard (multiprocessing's spawn imports this module)."""

from __future__ import annotations

from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier

import redis

from pasarela.errors import PendingTransferError
from pasarela.transfers.pending_redis import RedisPendingTransfers


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
