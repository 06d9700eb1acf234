"""Card payments clients (spec 4.2): token, charge, pre-authorization, tokenless charge, and the void (or
refund) of a charge by its ticket number (``DELETE /card/v1/charges/{ticketNumber}``, the call the service's
official PHP SDK makes).

The spec does not show the headers of the card endpoints; these clients send the public key on
token creation (the call a browser can make) and the private key on the charges (back end only),
as the transfer endpoints do. No call is retried (see :mod:`pasarela.http.retry`); pass your own
``idempotency_key`` to tell a deliberate repeat from a new charge. A second void of the same charge is
refused by the service (an ApiError).
"""

from __future__ import annotations

from typing import Optional

from ..http.config import MerchantKey
from ..http.exchange import Endpoint
from ..http.transport import AsyncServiceClient, SyncServiceClient
from .models import CardTokenRequest, ChargeRequest, TokenlessChargeRequest
from .responses import CardToken, ChargeResult, ChargeReversal

__all__ = ["AsyncCardClient", "CardClient"]

TOKENS = Endpoint("POST", "/card/v1/tokens", MerchantKey.PUBLIC)
CHARGES = Endpoint("POST", "/card/v1/charges", MerchantKey.PRIVATE)
PRE_AUTHORIZATIONS = Endpoint("POST", "/card/v1/preAuthorization", MerchantKey.PRIVATE)
TOKENLESS_CHARGES = Endpoint("POST", "/card/v2/charges", MerchantKey.PRIVATE)
VOIDS = Endpoint("DELETE", "/card/v1/charges/{ticket_number}", MerchantKey.PRIVATE)


class CardClient(SyncServiceClient):
    """Blocking client: ``CardClient(ServiceConfig(base_url=..., public_merchant_id=..., private_merchant_id=...))``."""

    def create_token(self, request: CardTokenRequest, *, idempotency_key: Optional[str] = None) -> CardToken:
        return CardToken.from_json(self._send(TOKENS.call(request.to_wire(), idempotency_key=idempotency_key)).json())

    def charge(self, request: ChargeRequest, *, idempotency_key: Optional[str] = None) -> ChargeResult:
        reply = self._send(CHARGES.call(request.to_wire(), idempotency_key=idempotency_key))
        return ChargeResult.from_json(reply.json())

    def pre_authorize(self, request: ChargeRequest, *, idempotency_key: Optional[str] = None) -> ChargeResult:
        reply = self._send(PRE_AUTHORIZATIONS.call(request.to_wire(), idempotency_key=idempotency_key))
        return ChargeResult.from_json(reply.json())

    def charge_tokenless(
        self, request: TokenlessChargeRequest, *, idempotency_key: Optional[str] = None
    ) -> ChargeResult:
        reply = self._send(TOKENLESS_CHARGES.call(request.to_wire(), idempotency_key=idempotency_key))
        return ChargeResult.from_json(reply.json())

    def void_charge(self, ticket_number: str) -> ChargeReversal:
        """Void the charge (or refund it, once the service's void window has passed)."""
        return ChargeReversal.from_json(self._send(VOIDS.call(ticket_number=ticket_number)).json())


class AsyncCardClient(AsyncServiceClient):
    """The asyncio twin of :class:`CardClient`."""

    async def create_token(self, request: CardTokenRequest, *, idempotency_key: Optional[str] = None) -> CardToken:
        reply = await self._send(TOKENS.call(request.to_wire(), idempotency_key=idempotency_key))
        return CardToken.from_json(reply.json())

    async def charge(self, request: ChargeRequest, *, idempotency_key: Optional[str] = None) -> ChargeResult:
        reply = await self._send(CHARGES.call(request.to_wire(), idempotency_key=idempotency_key))
        return ChargeResult.from_json(reply.json())

    async def pre_authorize(self, request: ChargeRequest, *, idempotency_key: Optional[str] = None) -> ChargeResult:
        reply = await self._send(PRE_AUTHORIZATIONS.call(request.to_wire(), idempotency_key=idempotency_key))
        return ChargeResult.from_json(reply.json())

    async def charge_tokenless(
        self, request: TokenlessChargeRequest, *, idempotency_key: Optional[str] = None
    ) -> ChargeResult:
        reply = await self._send(TOKENLESS_CHARGES.call(request.to_wire(), idempotency_key=idempotency_key))
        return ChargeResult.from_json(reply.json())

    async def void_charge(self, ticket_number: str) -> ChargeReversal:
        return ChargeReversal.from_json((await self._send(VOIDS.call(ticket_number=ticket_number))).json())
