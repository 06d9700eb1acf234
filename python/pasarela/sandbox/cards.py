"""The card payments API with network tokens (spec 2.2, 2.3, 4.2).

Every charge is approved. The ``network`` object appears when a network token was used, and says
which way: ``tmsIntegration`` is ``transport`` when the card token carried a network token
(``isNetworkToken: true``; ``wallet`` is its ``networkToken.source``, ``walletId`` its own, "04"
when not given) and ``creation`` when the charge asked for ``capabilities: ["networkToken"]`` on a
plain card (``wallet`` "pasarela-sandbox", ``walletId`` "04"). A network token that is transported
and also asked for is not created again: it stays ``transport``. The masked number shows the first
6 and last 4 digits of the number the card token was made with. The sandbox keeps only those digits,
never the card number, CVV or cryptogram.

A charge can be reversed once by ``DELETE /card/v1/charges/{ticketNumber}`` (also the legacy
``/v1/charges/{ticketNumber}``): within a day of the charge (sandbox clock) it is a void, later a
refund, as the service's documentation describes the same call ("Devoluciones, anulaciones y
reembolsos"); a second reversal is refused (400 :data:`ALREADY_REVERSED`).
``GET /v1/charges/{ticketNumber}`` reads a charge and its reversal.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Optional

from starlette.responses import Response
from starlette.routing import Route

from ..cards.models import Card, NetworkTokenData
from ..cards.validation import NETWORK_TOKEN_CAPABILITY
from .auth import KeyRule
from .context import Context, digits, new_token, ticket_number
from .endpoint import Call, api_route, json_reply
from .errors import SandboxError
from .store import Charge, Tx
from .wire import card_token_request, charge_request, tokenless_charge_request

__all__ = ["CHARGE_KINDS", "charge_record", "network_info", "routes"]

CREATION_WALLET = "pasarela-sandbox"
DEFAULT_WALLET_ID = "04"


def _card_facts(card: Card, is_network_token: bool, network_token: Optional[NetworkTokenData]) -> dict[str, Any]:
    return {
        "bin": card.number[:6],
        "lastFour": card.number[-4:],
        "length": len(card.number),
        "isNetworkToken": is_network_token,
        "source": network_token.source if network_token is not None else None,
        "walletId": network_token.wallet_id if network_token is not None else None,
    }


def network_info(card: Mapping[str, Any], capabilities: tuple[str, ...]) -> Optional[dict[str, Any]]:
    """The ``network`` object of a charge, or ``None`` when no network token was involved."""
    if card["isNetworkToken"]:
        wallet, wallet_id = card["source"] or "merchant", card["walletId"] or DEFAULT_WALLET_ID
        integration = "transport"
    elif NETWORK_TOKEN_CAPABILITY in capabilities:
        wallet, wallet_id, integration = CREATION_WALLET, DEFAULT_WALLET_ID, "creation"
    else:
        return None
    return {
        "wallet": wallet,
        "walletId": wallet_id,
        "isNetworkToken": True,
        "tmsMaskedCardNumber": card["bin"] + "X" * (card["length"] - 10) + card["lastFour"],
        "tmsLastFourDigits": card["lastFour"],
        "tmsBin": card["bin"],
        "tmsIntegration": integration,
    }


def _approve(tx: Tx, kind: str, network: Optional[dict[str, Any]], amount: dict[str, Any],
             now: float) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "ticketNumber": ticket_number(),
        "transactionReference": str(uuid.uuid4()),
        "approvalCode": digits(6),
        "transactionStatus": "APPROVAL",
    }
    if network is not None:
        answer["network"] = network
    tx.add_charge(answer["transactionReference"], kind, answer["ticketNumber"], answer, now, amount)
    return answer


class CardApi:
    def __init__(self, context: Context) -> None:
        self._context = context

    async def create_token(self, call: Call) -> Response:
        request = card_token_request(call.body)
        facts = _card_facts(request.card, request.is_network_token, request.network_token)
        facts["currency"] = request.currency
        token = new_token()
        with self._context.store.write() as tx:
            tx.add_card_token(token, facts, self._context.clock.now())
        return json_reply(201, {"token": token})

    def _charge_with_token(self, call: Call, kind: str) -> Response:
        request = charge_request(call.body)
        with self._context.store.write() as tx:
            token = tx.card_token(request.token)
            if token is None:
                raise SandboxError.invalid("token", "is not a card token of this sandbox")
            if token.used:
                raise SandboxError.invalid("token", "was already used: card tokens are single-use")
            if request.amount.currency != token.card["currency"]:
                raise SandboxError.invalid("amount.currency", "differs from the currency of the card token")
            tx.use_card_token(request.token)
            answer = _approve(tx, kind, network_info(token.card, request.capabilities),
                              request.amount.to_wire(), self._context.clock.now())
        return json_reply(201, answer)

    async def charge(self, call: Call) -> Response:
        return self._charge_with_token(call, "charge")

    async def pre_authorize(self, call: Call) -> Response:
        return self._charge_with_token(call, "preAuthorization")

    async def charge_tokenless(self, call: Call) -> Response:
        request = tokenless_charge_request(call.body)
        facts = _card_facts(request.card, request.is_network_token, request.network_token)
        with self._context.store.write() as tx:
            answer = _approve(tx, "tokenless", network_info(facts, request.capabilities),
                              request.amount.to_wire(), self._context.clock.now())
        return json_reply(201, answer)

    async def reverse(self, call: Call) -> Response:
        """Void (within a day of the charge) or refund (later) a standing charge, once."""
        ticket = call.params["ticketNumber"]
        now = self._context.clock.now()
        with self._context.store.write() as tx:
            charge = _standing_charge(tx, ticket)
            kind = "VOID" if now - charge.created < VOID_WINDOW_SECONDS else "REFUND"
            reversal = {"ticketNumber": ticket_number(), "transactionReference": str(uuid.uuid4()),
                        "transactionStatus": "APPROVAL", "transactionType": kind, "created": int(now * 1000)}
            if not tx.reverse_charge(ticket, reversal):
                raise _already_reversed()
        return json_reply(200, reversal)

    async def lookup(self, call: Call) -> Response:
        with self._context.store.read() as tx:
            charge = tx.charge(call.params["ticketNumber"])
        if charge is None:
            raise SandboxError.not_found("no charge has this ticketNumber")
        return json_reply(200, charge_record(charge))


def charge_record(charge: Charge) -> dict[str, Any]:
    """What ``GET /v1/charges/{ticketNumber}`` answers: the charge's answer, its type, amount and reversal."""
    record: dict[str, Any] = {**charge.answer, "transactionType": _TRANSACTION_TYPES[charge.kind],
                              "created": int(charge.created * 1000)}
    if charge.amount is not None:
        record["amount"] = dict(charge.amount)
    if charge.reversal is not None:
        record["reversal"] = dict(charge.reversal)
    return record


VOID_WINDOW_SECONDS = 86_400.0
_TRANSACTION_TYPES = {"charge": "SALE", "tokenless": "SALE", "preAuthorization": "PREAUTHORIZATION"}
CHARGE_KINDS = tuple(_TRANSACTION_TYPES)
"""``charge`` (with a card token), ``tokenless`` and ``preAuthorization``."""
ALREADY_REVERSED = "CHARGE_ALREADY_REVERSED"
"""The sandbox's code: the service's own code for a second void is not in its public documentation."""


def _already_reversed() -> SandboxError:
    return SandboxError(400, ALREADY_REVERSED, "this charge was already voided or refunded")


def _standing_charge(tx: Tx, ticket: str) -> Charge:
    charge = tx.charge(ticket)
    if charge is None:
        raise SandboxError.not_found("no charge has this ticketNumber")
    if charge.reversal is not None:
        raise _already_reversed()
    return charge


def routes(context: Context) -> list[Route]:
    api = CardApi(context)
    return [
        api_route(context, "POST", "/card/v1/tokens", KeyRule.PUBLIC, api.create_token, "CardTokenRequest"),
        api_route(context, "POST", "/card/v1/charges", KeyRule.PRIVATE, api.charge, "ChargeRequest"),
        api_route(context, "POST", "/card/v1/preAuthorization", KeyRule.PRIVATE, api.pre_authorize, "ChargeRequest"),
        api_route(context, "POST", "/card/v2/charges", KeyRule.PRIVATE, api.charge_tokenless, "TokenlessChargeRequest"),
        api_route(context, "DELETE", "/card/v1/charges/{ticketNumber}", KeyRule.PRIVATE, api.reverse,
                  "ReversalRequest", optional_body=True),
        # The older paths some clients still call (a community TypeScript client among them).
        api_route(context, "POST", "/v1/charges", KeyRule.PRIVATE, api.charge, "ChargeRequest"),
        api_route(context, "DELETE", "/v1/charges/{ticketNumber}", KeyRule.PRIVATE, api.reverse, "ReversalRequest",
                  optional_body=True),
        api_route(context, "GET", "/v1/charges/{ticketNumber}", KeyRule.PRIVATE, api.lookup),
    ]
