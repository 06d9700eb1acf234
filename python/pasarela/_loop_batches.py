"""Calls made in one turn of the event loop, sent together: what lets the asyncio Redis replay store make one
script call for the claims of every request that arrived at once.

A caller's item waits in a queue; the first item of a turn schedules the sending with ``call_soon``, which runs
once the loop has run every callback already ready (the other requests of that turn): no timer, no latency added
when a single request arrives. One batch is on its way at a time: the items that arrive meanwhile wait and go
together when it is answered, so a server under load fills each batch by itself. A batch holds at most ``most``
items (the rest go next, at once): one command never keeps Redis busy for long.

Each caller gets its own answer, or the exception that sending its batch raised (raised in the caller's own frame,
where the store turns a Redis error into that request's own StoreUnavailableError).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Callable, Generic, Optional, TypeVar, Union

__all__ = ["LoopBatches"]

Item = TypeVar("Item")
Answer = TypeVar("Answer")


class LoopBatches(Generic[Item, Answer]):
    """``await batches.submit(item)``: item sent with the others of this turn by ``send(items)``, which gives one
    answer per item in order; an answer that is an exception is raised to that caller alone."""

    def __init__(self, send: Callable[[list[Item]], Awaitable[Sequence[Union[Answer, BaseException]]]], *,
                 most: int) -> None:
        if most < 1:
            raise ValueError("most must be at least 1")
        self._send = send
        self._most = most
        self._waiting: list[tuple[Item, asyncio.Future[Answer]]] = []  # not sent yet
        self._sending: Optional[asyncio.Task[None]] = None  # the batch on its way (held: the loop holds it weakly)

    def submit(self, item: Item) -> asyncio.Future[Answer]:
        """The future of item's answer (not a coroutine of its own: one frame less for each of many callers)."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Answer] = loop.create_future()
        self._waiting.append((item, answer))
        if len(self._waiting) == 1 and self._sending is None:  # sent with the rest of this turn's, once it ends
            loop.call_soon(self._send_waiting)
        return answer

    def _send_waiting(self) -> None:
        batch, self._waiting = self._waiting[:self._most], self._waiting[self._most:]
        self._sending = asyncio.ensure_future(self._answer(batch))
        self._sending.add_done_callback(self._sent)

    def _sent(self, _: asyncio.Task[None]) -> None:
        """One batch at a time: the items that arrived while it was on its way go next, together."""
        self._sending = None
        if self._waiting:
            self._send_waiting()

    async def _answer(self, batch: list[tuple[Item, asyncio.Future[Answer]]]) -> None:
        try:
            answers = await self._send([item for item, _ in batch])
            if len(answers) != len(batch):
                raise RuntimeError(f"{len(answers)} answers for a batch of {len(batch)}")
        except asyncio.CancelledError:
            for _, answer in batch:
                answer.cancel()
            raise
        except Exception as exc:  # every caller of the batch raises it
            answers = [exc] * len(batch)
        for (_, answer), result in zip(batch, answers):
            if answer.done():  # (a caller cancelled meanwhile: what was sent for it stands)
                continue
            if isinstance(result, BaseException):
                answer.set_exception(result)
            else:
                answer.set_result(result)
