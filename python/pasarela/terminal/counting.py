"""Terminal's seals and opens counted for OpenTelemetry, installed once, when pasarela[otel] is in use.

Terminal's methods hold no telemetry: with ``pasarela._telemetry.ENABLED``, :func:`install` (run when
``pasarela.terminal`` is imported) wraps the ways through them that its fast paths do not take, once. The fast paths,
``seal`` of a dict and ``open`` and ``open_bytes`` of a POST's bytes, end in one C call that counts the result it
makes (``csrc/cpython/counting.h``): a Python wrapper around them would cost 7% of a 256 B seal, beyond the goal of
2% (docs/performance.md, "What OpenTelemetry costs"). Everything else, which their fast path hands on, goes through
``Terminal._seal_text`` and ``Terminal._open_rest``, wrapped here. Where ``pasarela._fastcall`` is not built (PyPy,
``PASARELA_NO_FASTCALL=1``), nothing is counted in C: ``seal``, ``open`` and ``open_bytes`` themselves are wrapped.
Each wrapper counts a call as it begins (a refusal by its cause as it ends), and times the first call and one in
``SAMPLE_EVERY`` after it."""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

from .. import _telemetry
from .envelope import Terminal
from .request import check_method

__all__ = ["install"]

F = TypeVar("F", bound=Callable[..., Any])


def _counted_seal_text(seal_text: F) -> F:
    """Terminal._seal_text (self, payload, method, timestamp, iv, declined) counted, by its method: positional
    arguments only (a wrapper taking *args and reading the Sealed's method cost this way twice as much)."""
    next_seal, other, sample_mask, clock, took = (_telemetry.next_seal, _telemetry.OTHER_SEALED,
                                                  _telemetry.SAMPLE_MASK, _telemetry.clock, _telemetry.seal_took)

    @functools.wraps(seal_text)
    def counted(self: Terminal, payload: Any, method: str, timestamp: Any, iv: Any, declined: bool) -> Any:
        if method != "POST":
            other[method]()
        if next_seal() & sample_mask:
            return seal_text(self, payload, method, timestamp, iv, declined)
        start = clock()
        request = seal_text(self, payload, method, timestamp, iv, declined)
        took(start, method)
        return request

    return counted  # type: ignore[return-value]


def _counted_seal(seal: F) -> F:
    """Terminal.seal itself (where no C call counts), counted by its method (checked as seal checks it)."""
    def seal_checked(self: Terminal, payload: Any, method: str, timestamp: Any, iv: Any, _declined: bool) -> Any:
        return seal(self, payload, method=method, timestamp=timestamp, iv=iv)

    counted_text = _counted_seal_text(seal_checked)

    @functools.wraps(seal)
    def counted(self: Terminal, payload: Any = None, *, method: str = "POST", timestamp: Any = None,
                iv: Any = None) -> Any:
        return counted_text(self, payload, check_method(method), timestamp, iv, False)

    return counted  # type: ignore[return-value]


def _counted_open(open_: F) -> F:
    """open or open_bytes (or their slower way, Terminal._open_rest) counted: a refusal by its cause."""
    next_open, sample_mask, clock, failed, took = (_telemetry.next_open, _telemetry.SAMPLE_MASK, _telemetry.clock,
                                                   _telemetry.open_failed, _telemetry.open_took)

    @functools.wraps(open_)
    def counted(*args: Any, **kwargs: Any) -> Any:
        start = 0 if next_open() & sample_mask else clock()
        try:
            result = open_(*args, **kwargs)
        except Exception as exc:
            failed(exc, start)
            raise
        if start:
            took(start, "ok")
        return result

    return counted  # type: ignore[return-value]


def install() -> None:
    """Wraps Terminal's ways through seal and open that no C call counts (once: a second call does nothing)."""
    if not _telemetry.ENABLED or hasattr(vars(Terminal)["open_bytes" if not _telemetry.FAST_PATHS_COUNTED
                                              else "_open_rest"], "__wrapped__"):
        return
    if _telemetry.FAST_PATHS_COUNTED:
        Terminal._seal_text = _counted_seal_text(Terminal._seal_text)  # type: ignore[method-assign]
        Terminal._open_rest = _counted_open(Terminal._open_rest)  # type: ignore[method-assign]
    else:
        Terminal.seal = _counted_seal(Terminal.seal)  # type: ignore[method-assign]
        Terminal.open = _counted_open(Terminal.open)  # type: ignore[method-assign]
        Terminal.open_bytes = _counted_open(Terminal.open_bytes)  # type: ignore[method-assign]
