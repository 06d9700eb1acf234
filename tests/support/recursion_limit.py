"""Tests that set the interpreter's recursion limit for a while, as an application (or a test framework) may."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def recursion_limit(limit: int) -> Iterator[None]:
    """``sys.setrecursionlimit(limit)`` inside the ``with`` block, the limit before it restored after."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)
