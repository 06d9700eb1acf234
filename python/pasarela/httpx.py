"""Terminal API calls over httpx, blocking and asyncio: seal, send, open the answer.

    from pasarela import Terminal
    from pasarela.httpx import TerminalClient

    with TerminalClient("https://terminal.example", Terminal(business_code, serial)) as client:
        answer = client.post("/payments", {"amount": 100, "currency": "COP"})
        client.get("/sync/abort")  # nothing to send: {} is signed and encrypted

The payload is serialized once, by ``seal``, and those bytes are sent as they are (no auth hook re-reads
the body). Encrypted answers (``{"data": "<iv>:<ct>"}``) are decrypted with the request's key; an AUTH-001
answer raises :class:`~pasarela.errors.AuthError`, other error statuses :class:`~pasarela.errors.ApiError`,
and a failed connection :class:`~pasarela.errors.TransportError`. Needs ``pip install "pasarela[http]"``.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Optional, TypeVar

from . import _telemetry
from .errors import TransportError, missing_extra

try:
    import httpx
except ModuleNotFoundError as exc:
    raise missing_extra(exc, "pasarela.httpx", "http") from exc

from .terminal.calls import BlockingTerminalClient, Call, SealingTerminal, prepare, read_answer

__all__ = ["AsyncTerminalClient", "TerminalClient"]

_AsyncClient = TypeVar("_AsyncClient", bound="AsyncTerminalClient")


def _arguments(call: Call) -> dict[str, Any]:
    return {"headers": call.headers, "content": call.content, "params": call.params}


def _failure(exc: httpx.TransportError) -> TransportError:
    return TransportError(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


class TerminalClient(BlockingTerminalClient):
    """Blocking terminal API client. ``http_client`` lets you bring a configured ``httpx.Client``
    (proxies, certificates, timeouts), which then stays yours to close."""

    def __init__(self, base_url: str, terminal: SealingTerminal, *, http_client: Optional[httpx.Client] = None,
                 timeout: float = 30.0) -> None:
        self.base_url = base_url
        self._terminal = terminal
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.Client(timeout=timeout)

    def request(self, method: str, path: str, payload: Any = None) -> Any:
        call = prepare(self.base_url, self._terminal, method, path, payload)
        with _telemetry.client_call(call.method, _telemetry.TERMINAL_OPERATION, "", self.base_url) as note:
            try:
                answer = self._http.request(call.method, call.url, **_arguments(call))
            except httpx.TransportError as exc:
                raise _failure(exc) from exc
            note.answered(answer.status_code)
            return read_answer(call.sealed, answer.status_code, answer.content)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()


class AsyncTerminalClient:
    """The asyncio twin of :class:`TerminalClient` (``await client.aclose()``, ``async with``)."""

    def __init__(self, base_url: str, terminal: SealingTerminal, *,
                 http_client: Optional[httpx.AsyncClient] = None, timeout: float = 30.0) -> None:
        self.base_url = base_url
        self._terminal = terminal
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.AsyncClient(timeout=timeout)

    async def request(self, method: str, path: str, payload: Any = None) -> Any:
        call = prepare(self.base_url, self._terminal, method, path, payload)
        with _telemetry.client_call(call.method, _telemetry.TERMINAL_OPERATION, "", self.base_url) as note:
            try:
                answer = await self._http.request(call.method, call.url, **_arguments(call))
            except httpx.TransportError as exc:
                raise _failure(exc) from exc
            note.answered(answer.status_code)
            return read_answer(call.sealed, answer.status_code, answer.content)

    async def post(self, path: str, payload: Any = None) -> Any:
        return await self.request("POST", path, payload)

    async def put(self, path: str, payload: Any = None) -> Any:
        return await self.request("PUT", path, payload)

    async def patch(self, path: str, payload: Any = None) -> Any:
        return await self.request("PATCH", path, payload)

    async def get(self, path: str, params: Any = None) -> Any:
        return await self.request("GET", path, params)

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self: _AsyncClient) -> _AsyncClient:
        return self

    async def __aexit__(self, kind: Optional[type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r}, {self._terminal!r})"
