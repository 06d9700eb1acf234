"""Finalizers that run inside a call: the cyclic GC collecting after (nearly) every allocation, each collection running
a finalizer on this thread. Used by the tests that prove a seal or open run by a finalizer, on the same thread, in the
middle of another, cannot change the other's result."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def finalizer_at_each_collection(action: Callable[[], bool]) -> Iterator[None]:
    """Inside the block, every collection of the cyclic GC (one per allocation of a GC-tracked object) runs a
    finalizer that calls `action()` on this thread, as long as `action()` returns True. On leaving, the chain
    stops (each finalizer made the garbage for the next collection: left running, it went on acting in the tests
    that came after), the GC's thresholds and enabled state are restored, and the remaining garbage is collected."""
    running = [True]

    class Acting:
        def __init__(self) -> None:
            self.cycle = self  # garbage only the cyclic GC frees

        def __del__(self) -> None:
            if running[0] and action():
                Acting()  # garbage for the next collection

    threshold, enabled = gc.get_threshold(), gc.isenabled()
    gc.collect()
    gc.disable()
    Acting()
    gc.set_threshold(1)
    try:
        gc.enable()
        yield
    finally:
        running[0] = False
        gc.set_threshold(*threshold)
        gc.collect()
        if not enabled:
            gc.disable()
