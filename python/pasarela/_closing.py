"""The base of the objects that close themselves at the end of a ``with`` block."""

from __future__ import annotations

from types import TracebackType
from typing import Optional, TypeVar

__all__ = ["ClosesOnExit"]

_Closing = TypeVar("_Closing", bound="ClosesOnExit")


class ClosesOnExit:
    """``with thing:`` gives ``thing`` itself and calls its ``close()`` when the block ends, however it ends (an
    exception raised in the block goes on)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _Closing) -> _Closing:
        return self

    def __exit__(
        self, kind: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.close()
