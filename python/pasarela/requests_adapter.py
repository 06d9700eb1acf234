"""Terminal API calls over requests: the blocking :class:`pasarela.httpx.TerminalClient`, on a
``requests.Session`` (``pip install "pasarela[requests]"``).

    from pasarela.requests_adapter import TerminalClient

    client = TerminalClient("https://terminal.example", terminal)
    client.post("/payments", {"amount": 100, "currency": "COP"})

Same behaviour: the payload is serialized once, by ``seal``; answers are decrypted with the request's
key; AUTH-001 raises AuthError, other error statuses ApiError, a failed connection TransportError.
"""

from __future__ import annotations

from typing import Any, Optional

from . import _telemetry
from .errors import TransportError, missing_extra

try:
    import requests
except ModuleNotFoundError as exc:
    raise missing_extra(exc, "pasarela.requests_adapter", "requests") from exc

from .terminal.calls import BlockingTerminalClient, SealingTerminal, prepare, read_answer

__all__ = ["TerminalClient"]


class TerminalClient(BlockingTerminalClient):
    """``session`` lets you bring a configured ``requests.Session``, which then stays yours to close."""

    def __init__(self, base_url: str, terminal: SealingTerminal, *, session: Optional[requests.Session] = None,
                 timeout: float = 30.0) -> None:
        self.base_url = base_url
        self._terminal = terminal
        self._timeout = timeout
        self._owns_session = session is None
        self._session = session if session is not None else requests.Session()

    def request(self, method: str, path: str, payload: Any = None) -> Any:
        call = prepare(self.base_url, self._terminal, method, path, payload)
        with _telemetry.client_call(call.method, _telemetry.TERMINAL_OPERATION, "", self.base_url) as note:
            try:
                answer = self._session.request(call.method, call.url, headers=call.headers, data=call.content,
                                               params=call.params, timeout=self._timeout)
            except (requests.ConnectionError, requests.Timeout) as exc:
                raise TransportError(f"{type(exc).__name__}: {exc}") from exc
            note.answered(answer.status_code)
            return read_answer(call.sealed, answer.status_code, answer.content)

    def close(self) -> None:
        if self._owns_session:
            self._session.close()
