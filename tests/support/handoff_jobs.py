"""What tests/stores/test_handoff_rq.py's real RQ worker runs (``rq worker`` imports this module from tests/): the jobs,
and the worker's class."""

from __future__ import annotations

import os

from rq import Worker, get_current_job

from pasarela.transfers import TransferEvent


def record(event: TransferEvent) -> None:
    """The merchant's slow work: one line per run in the Redis list ``<queue>:effects`` (what the test counts), with
    what the job was given."""
    job = get_current_job()
    assert job is not None
    line = f"{type(event).__name__} {event.dedup_key} {event.state.name} {os.getpid()}"
    job.connection.rpush(f"{job.origin}:effects", line)


def fail(event: TransferEvent) -> None:
    """A job that fails: RQ keeps it in its failed registry."""
    raise RuntimeError(f"the merchant's job failed on {event.dedup_key}")


class BurstWorker(Worker):
    """RQ's worker without its command channel (``rq`` sends stop and kill commands through a pub/sub channel, which
    a ``--burst`` run that stops by itself needs not). Under redis-py 8.2, RQ 3.0's worker may wait 60 s at exit
    for that channel's thread: the thread's ``stop()`` now joins it, and it may be waiting 60 s for a message (a
    race, lost in one exit of three here). The jobs run as under ``Worker``."""

    def subscribe(self) -> None:
        pass

    def unsubscribe(self) -> None:
        pass
