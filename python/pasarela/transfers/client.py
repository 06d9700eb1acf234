"""Bank transfer clients (spec 4.3): token, init, status, cancel, the Ecuador return, and the bank list
of Colombia PSE.

Token creation and the bank list carry the public key; init, status and cancel the private key (back end only).
Only the status query (a GET) is retried. Give the client a :class:`~.pending.PendingTransfers`
guard to enforce certification rule 6: ``init`` then needs the ``order_id`` and refuses a second
transfer for an order whose first one is not approved or rejected yet; a final status or a cancel
releases the order. The async client also takes an asyncio guard (``pending_redis.AsyncRedisPendingTransfers``)
and awaits it; a sync guard (SQLite, microseconds) is called directly there.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Optional, Union

from .._maybe_async import settled, synchronously
from ..errors import FinalStatusError
from ..http.config import MerchantKey, ServiceConfig
from ..http.exchange import Endpoint
from ..http.transport import AsyncServiceClient, AsyncSleep, Sleep, SyncServiceClient
from .callback import token_from_callback
from .models import TransferInitRequest, TransferTokenRequest
from .pending import AnyGuard, GuardedInit, TransferGuard
from .responses import Bank, TransferInit, TransferStatus, TransferToken, parse_bank_list, parse_transfer_init

if TYPE_CHECKING:
    import httpx

__all__ = ["AsyncTransferClient", "TransferClient"]

TOKENS = Endpoint("POST", "/transfer/v1/tokens", MerchantKey.PUBLIC)
INIT = Endpoint("POST", "/transfer/v1/init", MerchantKey.PRIVATE)
STATUS = Endpoint("GET", "/transfer/v1/status/{token}", MerchantKey.PRIVATE)
CANCEL = Endpoint("PATCH", "/transfer/v1/cancel/{token}", MerchantKey.PRIVATE)
BANK_LIST = Endpoint("GET", "/transfer/v1/bankList", MerchantKey.PUBLIC)

Callback = Union[str, Mapping[str, str]]
_ASYNC_GUARD = "this pending-transfer guard"


class _TransferGuarding:
    """The guard bookkeeping both clients share; the guard's answer is awaited by the async client."""

    _pending: Optional[AnyGuard]

    def _guarded_init(self, request: TransferInitRequest, order_id: Optional[str]) -> GuardedInit:
        return GuardedInit(self._pending, order_id, request.token)

    def _release(self, token: str, status: Optional[TransferStatus] = None) -> object:
        """Free the order after a final status, or (no status) after a cancel: a cancelled QR is invalidated,
        and T023 means the transfer is already final, so either way the order may start a new transfer."""
        if self._pending is not None and (status is None or status.state.is_final):
            return self._pending.release_transfer(token=token)
        return None


class TransferClient(SyncServiceClient, _TransferGuarding):
    """Blocking client: ``TransferClient(ServiceConfig(base_url=..., private_merchant_id=...), pending=...)``."""

    def __init__(
        self,
        config: ServiceConfig,
        *,
        pending: Optional[TransferGuard] = None,
        sleep: Sleep = time.sleep,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        super().__init__(config, sleep=sleep, http_client=http_client)
        self._pending = pending

    def bank_list(self) -> list[Bank]:
        """Colombia PSE: the banks the payer chooses from (``code`` goes in the token request as ``bank_id``)."""
        return parse_bank_list(self._send(BANK_LIST.call()).json())

    def create_token(self, request: TransferTokenRequest, *, idempotency_key: Optional[str] = None) -> TransferToken:
        reply = self._send(TOKENS.call(request.to_wire(), idempotency_key=idempotency_key))
        return TransferToken.from_json(reply.json())

    def init(
        self, request: TransferInitRequest, *, order_id: Optional[str] = None, idempotency_key: Optional[str] = None
    ) -> TransferInit:
        """Start the transfer; the answer is one of MexicoClabe, EcuadorRedirect, EcuadorWallet, ColombiaQr,
        ColombiaPse."""
        with self._guarded_init(request, order_id) as guard:
            reply = self._send(INIT.call(request.to_wire(), idempotency_key=idempotency_key))
            return guard.done(parse_transfer_init(reply.json()))

    def status(self, token: str) -> TransferStatus:
        status = TransferStatus.from_json(self._send(STATUS.call(token=token)).json(), token)
        synchronously(self._release(token, status), _ASYNC_GUARD)
        return status

    def cancel(self, token: str) -> None:
        """Cancel a transfer that has no final status (Colombia QR: the QR is invalidated).

        Returns on the 204; raises FinalStatusError (T023) when the transfer is already final.
        """
        try:
            self._send(CANCEL.call(token=token))
        except FinalStatusError:
            synchronously(self._release(token), _ASYNC_GUARD)
            raise
        synchronously(self._release(token), _ASYNC_GUARD)

    def status_from_callback(self, callback: Callback) -> TransferStatus:
        """Ecuador: the status of the transfer whose token the payer brought back to ``callbackUrl``."""
        return self.status(token_from_callback(callback))


class AsyncTransferClient(AsyncServiceClient, _TransferGuarding):
    """The asyncio twin of :class:`TransferClient`."""

    def __init__(
        self,
        config: ServiceConfig,
        *,
        pending: Optional[AnyGuard] = None,
        sleep: Optional[AsyncSleep] = None,
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        super().__init__(config, sleep=sleep, http_client=http_client)
        self._pending = pending

    async def bank_list(self) -> list[Bank]:
        return parse_bank_list((await self._send(BANK_LIST.call())).json())

    async def create_token(
        self, request: TransferTokenRequest, *, idempotency_key: Optional[str] = None
    ) -> TransferToken:
        reply = await self._send(TOKENS.call(request.to_wire(), idempotency_key=idempotency_key))
        return TransferToken.from_json(reply.json())

    async def init(
        self, request: TransferInitRequest, *, order_id: Optional[str] = None, idempotency_key: Optional[str] = None
    ) -> TransferInit:
        async with self._guarded_init(request, order_id) as guard:
            reply = await self._send(INIT.call(request.to_wire(), idempotency_key=idempotency_key))
            return await guard.done_async(parse_transfer_init(reply.json()))

    async def status(self, token: str) -> TransferStatus:
        reply = await self._send(STATUS.call(token=token))
        status = TransferStatus.from_json(reply.json(), token)
        await settled(self._release(token, status))
        return status

    async def cancel(self, token: str) -> None:
        try:
            await self._send(CANCEL.call(token=token))
        except FinalStatusError:
            await settled(self._release(token))
            raise
        await settled(self._release(token))

    async def status_from_callback(self, callback: Callback) -> TransferStatus:
        return await self.status(token_from_callback(callback))
