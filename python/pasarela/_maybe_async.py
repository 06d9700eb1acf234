"""Stores that may be sync or async (an SQLite guard, a redis.asyncio ledger) behind one parameter."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import TypeVar, Union

__all__ = ["settled", "synchronously"]

T = TypeVar("T")


def synchronously(value: Union[T, Awaitable[T]], what: str) -> T:
    """``value`` from a call made in sync code; TypeError when an async store returned an awaitable."""
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()  # a coroutine never awaited would warn
        raise TypeError(f"{what} is asynchronous: use it from the asyncio API")
    return value


async def settled(value: Union[T, Awaitable[T]]) -> T:
    """``value``, awaited when an async store returned an awaitable."""
    return await value if inspect.isawaitable(value) else value
