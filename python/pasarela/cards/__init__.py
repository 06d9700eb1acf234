"""Area B: card network tokens in the card payments API (models, validation, clients).

    >>> from decimal import Decimal
    >>> from pasarela.cards import Card, CardTokenRequest
    >>> request = CardTokenRequest(
    ...     card=Card(name="Ana Gómez", number="4000000000000002", expiry_month="12", expiry_year="29",
    ...               cryptogram="AgAAAAAAAIR8CQrXcIhbQAAAAAA"),
    ...     total_amount=Decimal("10000"), currency="COP", is_network_token=True)
"""

from __future__ import annotations

from .client import AsyncCardClient, CardClient
from .models import Card, CardTokenRequest, ChargeRequest, NetworkTokenData, TokenlessChargeRequest
from .responses import CardToken, ChargeResult, ChargeReversal, NetworkTokenInfo
from .validation import NETWORK_TOKEN_CAPABILITY, NETWORK_TOKEN_CURRENCIES, WALLET_IDS

__all__ = [
    "NETWORK_TOKEN_CAPABILITY",
    "NETWORK_TOKEN_CURRENCIES",
    "WALLET_IDS",
    "AsyncCardClient",
    "Card",
    "CardClient",
    "CardToken",
    "CardTokenRequest",
    "ChargeRequest",
    "ChargeResult",
    "ChargeReversal",
    "NetworkTokenData",
    "NetworkTokenInfo",
    "TokenlessChargeRequest",
]
