"""Area C: bank transfers (Mexico CLABE, Ecuador bank redirect and wallet, Colombia instant QR and Colombia PSE).

Models and validation (:mod:`.models`, :mod:`.validation`, :mod:`.amounts`), responses
(:mod:`.responses`), clients (:mod:`.client`), the rule-6 guard (:mod:`.pending`), webhooks
(:mod:`.webhooks`) and the client-side configuration (:mod:`.checkout`). Nothing here imports
httpx until a client is built.
"""

from __future__ import annotations

from .amounts import MINOR_UNITS, Amount, ExtraTaxes
from .callback import token_from_callback
from .checkout import CheckoutV1, CheckoutV2, ClientLibraryConfig
from .client import AsyncTransferClient, TransferClient
from .models import BRE_B, QR, TransferCountry, TransferFlow, TransferInitRequest, TransferTokenRequest
from .pending import PendingTransfer, PendingTransfers, TransferGuard
from .responses import (
    Bank,
    ColombiaPse,
    ColombiaQr,
    EcuadorRedirect,
    EcuadorWallet,
    MexicoClabe,
    QrDetails,
    QrDetailsAmount,
    TransferInit,
    TransferStatus,
    TransferToken,
    parse_transfer_init,
)
from .status import TransferState
from .webhook_dedup import Claim, EventKey, EventLedger, SeenEvents
from .webhook_signature import VerifiedWebhook, WebhookHeaders, body_signature, id_signature, verify_webhook_signature
from .webhooks import StatusQuery, TransferEvent, TransferWebhookReceiver, WebhookReply

__all__ = [
    "BRE_B",
    "MINOR_UNITS",
    "QR",
    "Amount",
    "AsyncTransferClient",
    "Bank",
    "CheckoutV1",
    "CheckoutV2",
    "Claim",
    "ClientLibraryConfig",
    "ColombiaPse",
    "ColombiaQr",
    "EcuadorRedirect",
    "EcuadorWallet",
    "EventKey",
    "EventLedger",
    "ExtraTaxes",
    "MexicoClabe",
    "PendingTransfer",
    "PendingTransfers",
    "QrDetails",
    "QrDetailsAmount",
    "SeenEvents",
    "StatusQuery",
    "TransferClient",
    "TransferCountry",
    "TransferEvent",
    "TransferFlow",
    "TransferGuard",
    "TransferInit",
    "TransferInitRequest",
    "TransferState",
    "TransferStatus",
    "TransferToken",
    "TransferTokenRequest",
    "TransferWebhookReceiver",
    "VerifiedWebhook",
    "WebhookHeaders",
    "WebhookReply",
    "body_signature",
    "id_signature",
    "parse_transfer_init",
    "token_from_callback",
    "verify_webhook_signature",
]
