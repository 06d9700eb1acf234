"""The jobs tests/test_handoff_rq.py's real RQ worker runs (``rq worker`` imports this module from tests/)."""

from __future__ import annotations

import os

from rq import get_current_job

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
