"""Code that runs inside a call, on this thread: finalizers run by the cyclic GC collecting after (nearly) every
allocation, and a profile hook at every call and return. Used by the tests that prove a seal or open run in the
middle of another, on the same thread, cannot change the other's result.

Up to 3.11 the collector runs inside the allocations of a C call, so a finalizer can run in the middle of one;
from 3.12 it runs only at the interpreter's check points (between bytecodes, around calls), which are the only
places where Python code can run during a call made of several steps: the profile hook forces a collection
at each of those, so the tests reach every window the interpreter has, on every version, instead of hoping for
a collection there."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, Optional


@contextmanager
def finalizer_at_each_collection(action: Callable[[], bool]) -> Iterator[None]:
    """Inside the block, every collection of the cyclic GC (one per allocation of a GC-tracked object) runs a
    finalizer that calls `action()` on this thread, as long as `action()` returns True; and every call and return
    seen by the profile hook (sys.setprofile: Python functions and the C functions they call) forces a collection.
    On leaving, the profile hook is removed, the chain
    stops (each finalizer made the garbage for the next collection: left running, it went on acting in the tests
    that came after), the GC's thresholds and enabled state are restored, and the remaining garbage is collected."""
    running = [True]

    class Acting:
        def __init__(self) -> None:
            self.cycle = self  # garbage only the cyclic GC frees

        def __del__(self) -> None:
            if running[0] and action():
                Acting()  # garbage for the next collection

    def at_check_point(frame: FrameType, event: str, arg: Any) -> None:
        if running[0]:
            gc.collect(0)  # the chain's garbage is young: its finalizer acts, inside a collection as always

    threshold, enabled = gc.get_threshold(), gc.isenabled()
    previous_profile: Optional[Callable[..., Any]] = sys.getprofile()
    gc.collect()
    gc.disable()
    Acting()
    gc.set_threshold(1)
    try:
        gc.enable()
        sys.setprofile(at_check_point)
        yield
    finally:
        sys.setprofile(previous_profile)
        running[0] = False
        gc.set_threshold(*threshold)
        gc.collect()
        if not enabled:
            gc.disable()
