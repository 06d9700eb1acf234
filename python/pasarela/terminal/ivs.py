"""Fresh IVs from the operating system's CSPRNG, drawn 4 KiB at a time.

One getrandom call serves 256 IVs, which removes a system call from every seal. Each thread has its
own pool, and a forked child discards the pool it inherited, so no IV is ever handed out twice.
This pool serves the pure-Python reference (which must not depend on the C core); the C path takes
its IVs from the same kind of pool kept in each thread's C workspace (pasarela._binding).
"""

from __future__ import annotations

import os
import threading

__all__ = ["fresh_iv"]

_POOL_BYTES = 4096
_IV_BYTES = 16


class _Pool(threading.local):
    def __init__(self) -> None:
        self.bytes = b""
        self.used = 0


_pool = _Pool()


def fresh_iv() -> bytes:
    pool = _pool
    used = pool.used
    if used >= len(pool.bytes):
        pool.bytes = os.urandom(_POOL_BYTES)
        used = 0
    pool.used = used + _IV_BYTES
    return pool.bytes[used:used + _IV_BYTES]


def _forget_after_fork() -> None:
    _pool.bytes = b""
    _pool.used = 0


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forget_after_fork)
