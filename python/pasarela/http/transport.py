"""The sync and async drivers of :func:`~pasarela.http.exchange.exchange` over httpx, and the client bases.

All behaviour lives in the exchange generator; a driver only sends the requests it yields, sleeps
the pauses it yields and hands back what happened. httpx is imported only when a client is built,
so ``import pasarela`` (and the models, webhooks, checkout and pending modules) work without it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar, Union, cast

from .. import _telemetry
from .._closing import ClosesOnExit
from ..errors import missing_extra
from .config import ServiceConfig
from .exchange import Exchange, Failed, OutgoingRequest, Pause, Received, Reply, ServiceCall, exchange

if TYPE_CHECKING:
    import httpx

__all__ = ["AsyncServiceClient", "AsyncSleep", "Sleep", "SyncServiceClient"]

Sleep = Callable[[float], None]
AsyncSleep = Callable[[float], Awaitable[None]]
_Client = TypeVar("_Client", bound="_ServiceClientBase")
Step = Union[OutgoingRequest, Pause, Reply]


def _advance(flow: Exchange, outcome: Union[Received, Failed, None]) -> Step:
    try:
        return flow.send(outcome)
    except StopIteration as done:
        return cast(Reply, done.value)


class _ServiceClientBase:
    def __init__(self, config: ServiceConfig, owns_http: bool) -> None:
        try:
            import httpx
        except ModuleNotFoundError as exc:
            raise missing_extra(exc, f"{type(self).__name__} (the card and transfer clients)", "http") from exc

        self._config = config
        self._owns_http = owns_http
        self._transport_errors = httpx.TransportError

    def _arguments(self, request: OutgoingRequest) -> dict[str, Any]:
        return {"headers": request.headers, "content": request.content, "timeout": self._config.timeout}

    def _failure(self, exc: Exception) -> Failed:
        # httpx exception texts name the host and the failure, never the request headers.
        return Failed(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._config!r})"


class SyncServiceClient(_ServiceClientBase, ClosesOnExit):
    """What every blocking client shares: the config, one ``httpx.Client``, ``close`` and ``with``.

    ``sleep`` waits between retries (inject a recorder in tests); ``http_client`` lets you bring a
    configured ``httpx.Client`` (proxies, certificates), which then stays yours to close.
    """

    def __init__(
        self, config: ServiceConfig, *, sleep: Sleep = time.sleep, http_client: Optional[httpx.Client] = None
    ) -> None:
        super().__init__(config, owns_http=http_client is None)
        import httpx

        self._sleep = sleep
        self._http = http_client if http_client is not None else httpx.Client()

    def _deliver(self, request: OutgoingRequest) -> Union[Received, Failed]:
        try:
            answer = self._http.request(request.method, request.url, **self._arguments(request))
        except self._transport_errors as exc:
            return self._failure(exc)
        return Received(answer.status_code, answer.content)

    def _send(self, call: ServiceCall) -> Reply:
        with _telemetry.client_call(call.method, call.operation, call.template or "", self._config.base_url) as note:
            flow = exchange(call, self._config)
            step = _advance(flow, None)
            while not isinstance(step, Reply):
                if isinstance(step, Pause):
                    self._sleep(step.seconds)
                    step = _advance(flow, None)
                else:
                    outcome = self._deliver(step)
                    note.answered(outcome.status if isinstance(outcome, Received) else None)
                    step = _advance(flow, outcome)
            return step

    def close(self) -> None:
        if self._owns_http:
            self._http.close()


class AsyncServiceClient(_ServiceClientBase):
    """The asyncio twin of :class:`SyncServiceClient` (``await client.aclose()``, ``async with``)."""

    def __init__(
        self,
        config: ServiceConfig,
        *,
        sleep: Optional[AsyncSleep] = None,
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        super().__init__(config, owns_http=http_client is None)
        import asyncio

        import httpx

        self._sleep: AsyncSleep = sleep if sleep is not None else asyncio.sleep
        self._http = http_client if http_client is not None else httpx.AsyncClient()

    async def _deliver(self, request: OutgoingRequest) -> Union[Received, Failed]:
        try:
            answer = await self._http.request(request.method, request.url, **self._arguments(request))
        except self._transport_errors as exc:
            return self._failure(exc)
        return Received(answer.status_code, answer.content)

    async def _send(self, call: ServiceCall) -> Reply:
        with _telemetry.client_call(call.method, call.operation, call.template or "", self._config.base_url) as note:
            flow = exchange(call, self._config)
            step = _advance(flow, None)
            while not isinstance(step, Reply):
                if isinstance(step, Pause):
                    await self._sleep(step.seconds)
                    step = _advance(flow, None)
                else:
                    outcome = await self._deliver(step)
                    note.answered(outcome.status if isinstance(outcome, Received) else None)
                    step = _advance(flow, outcome)
            return step

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self: _Client) -> _Client:
        return self

    async def __aexit__(
        self, kind: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        await self.aclose()
