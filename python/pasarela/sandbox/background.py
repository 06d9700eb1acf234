"""The sandbox's background threads: a pass, then a pause of the seconds that pass asked for, until stopped.

The settler (:class:`~.settlement.Settler`) and the webhook dispatcher (:class:`~.webhooks.Dispatcher`) each
run one; :meth:`Background.notify` cuts a pause short when there is new work.
"""

from __future__ import annotations

import logging
import threading
from typing import Optional

__all__ = ["Background"]


class Background:
    """A daemon thread named ``name`` running :meth:`_pass` again and again, pausing after each the seconds
    it returns; a pass that raises is logged to ``log`` (``what`` names it) and followed by ``failed_pause``,
    so a broken database never kills the thread silently."""

    def __init__(self, name: str, log: logging.Logger, what: str, failed_pause: float) -> None:
        self._name = name
        self._log = log
        self._what = what
        self._failed_pause = failed_pause
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def _pass(self) -> float:
        """One pass of the work; the seconds to pause before the next."""
        raise NotImplementedError

    def notify(self) -> None:
        """There is new work: start the next pass now, without waiting for the pause to end."""
        self._wake.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                pause = self._pass()
            except Exception:
                self._log.exception("%s pass failed", self._what)
                pause = self._failed_pause
            self._wake.wait(pause)
            self._wake.clear()

    def start(self) -> None:
        if self._thread is None:
            self._stopping.clear()
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread, waiting at most ``timeout`` seconds for its pass to end."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stopping.set()
            self._wake.set()
            thread.join(timeout)
