"""The sandbox's OpenAPI 3.0 document, served at ``/openapi.json``.

Request bodies are checked against these very schemas (:mod:`.body_schema`, with jsonschema), so what the document
promises and what the sandbox enforces are one thing. Rules a schema cannot say (an amount adding up
to more than zero, a cryptogram only with ``isNetworkToken``) come from the client's own models and
are answered with the same 400 naming the field.
"""

from __future__ import annotations

import re
from typing import Any

from .._version import __version__
from ..transfers.amounts import MINOR_UNITS

__all__ = ["COMPONENTS", "document"]

_MAX_AMOUNT = 999_999_999_999


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _object(properties: dict[str, Any], required: tuple[str, ...] = (), *, closed: bool = False,
            description: str = "") -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    if description:
        schema["description"] = description
    return schema


def _string(pattern: str = "", description: str = "", **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", **extra}
    if pattern:
        schema["pattern"] = pattern
    if description:
        schema["description"] = description
    return schema


_TEXT = _string(r"\S", minLength=1, maxLength=255)
_MONEY = {"type": "number", "minimum": 0, "maximum": _MAX_AMOUNT, "multipleOf": 0.01}
_UUID = _string("^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_EPOCH_MS = {"type": "integer", "minimum": 0, "description": "epoch milliseconds"}
_FULL_RESPONSE = {"description": "\"v2\" or true ask for the full answer (a Colombia QR's details); any other value is "
                                  "accepted and asks for nothing more, on every operation that takes it"}
_AMOUNT_MEMBERS = {"subtotalIva": _MONEY, "subtotalIva0": _MONEY, "iva": _MONEY}
_CURRENCIES = sorted(MINOR_UNITS)
_TRANSFER_STATUSES = ["initializedTransaction", "approvedTransaction", "declinedTransaction", "expiredTransaction"]
_SPEC_STATUSES = ["initialized", "PAID", "rejected"]
_VERDICT = {"type": "string", "enum": ["pass", "fail", "not_observed", "check_yourself"]}
_APPROVED_CHARGE = {
    "ticketNumber": _string("^[0-9]{18}$"),
    "transactionReference": _UUID,
    "approvalCode": _string("^[0-9]{6}$"),
    "transactionStatus": {"type": "string", "enum": ["APPROVAL"]},
}
"""What an approved charge answers (all required), and its record repeats."""

COMPONENTS: dict[str, Any] = {
    # --- requests
    "ExtraTaxes": _object({name: _MONEY for name in ("propina", "tasaAeroportuaria", "agenciaDeViaje", "iac")}),
    "TransferAmount": _object(
        {**_AMOUNT_MEMBERS, "ice": _MONEY, "extraTaxes": _ref("ExtraTaxes")},
        ("subtotalIva", "subtotalIva0", "iva"),
        description="Spec 2.4. Colombia QR test scenarios are chosen by subtotalIva0 + subtotalIva + iva.",
    ),
    "TransferFlow": _object(
        {"processorName": {"type": "string", "enum": ["BRE-B"]}, "type": {"type": "string", "enum": ["QR"]}},
        ("processorName", "type"),
    ),
    "TransferTokenRequest": _object(
        {
            "userType": {"type": "string", "enum": ["0", "1"], "description": "0 natural person, 1 legal person"},
            "documentType": _TEXT,
            "documentNumber": _string(r"\S", "999999990 is declined (Mexico, Ecuador)", minLength=1, maxLength=255),
            "paymentDescription": _TEXT,
            "email": _string(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$", maxLength=255),
            "currency": {"type": "string", "enum": ["MXN", "USD", "COP"],
                         "description": "MXN Mexico (CLABE), USD Ecuador, COP Colombia: QR with flow, PSE with "
                                        "bankId (a code of /transfer/v1/bankList) and no flow"},
            "amount": _ref("TransferAmount"),
            "callbackUrl": _string(r"^https?://[^\s/?#]+[^\s]*$", maxLength=2048),
            "bankId": _TEXT,
            "flow": _ref("TransferFlow"),
        },
        ("currency", "amount"),
    ),
    "TransferInitRequest": _object(
        {
            "token": _TEXT,
            "amount": _ref("TransferAmount"),
            "metadata": {"type": "object"},
            "fullResponse": _FULL_RESPONSE,
        },
        ("token", "amount"),
    ),
    "Card": _object(
        {
            "name": _TEXT,
            "number": _string("^[0-9]{12,19}$", "card number, or network token number with isNetworkToken"),
            "expiryMonth": _string("^(0[1-9]|1[0-2])$"),
            "expiryYear": _string("^[0-9]{2}$"),
            "cvv": _string("^[0-9]{3,4}$"),
            "cryptogram": _string("^[A-Za-z0-9]{20,28}$", "network token cryptogram (isNetworkToken only)"),
        },
        ("name", "number", "expiryMonth", "expiryYear"),
    ),
    "NetworkToken": _object(
        {
            "deviceType": _TEXT,
            "requestorId": _TEXT,
            "source": _TEXT,
            "walletId": {"type": "string", "enum": ["01", "04"]},
            "authenticationLevel": _TEXT,
            "mvv": _string("^[0-9]{10}$", "Visa cards only (numbers starting with 4)"),
        }
    ),
    "CardTokenRequest": _object(
        {
            "card": _ref("Card"),
            "totalAmount": _MONEY,
            "currency": {"type": "string", "enum": _CURRENCIES,
                         "description": "COP, CLP, PEN or MXN with isNetworkToken; any of these for a plain card"},
            "isNetworkToken": {"type": "boolean"},
            "networkToken": _ref("NetworkToken"),
        },
        ("card", "totalAmount", "currency"),
    ),
    "ChargeAmount": _object(
        {**_AMOUNT_MEMBERS, "ice": _MONEY, "extraTaxes": _ref("ExtraTaxes"),
         "currency": {"type": "string", "enum": _CURRENCIES}},
        ("subtotalIva", "subtotalIva0", "iva", "currency"),
    ),
    "Capabilities": {"type": "array", "items": {"type": "string", "enum": ["networkToken"]}, "maxItems": 1,
                     "uniqueItems": True,
                     "description": "networkToken: also tokenize the card with a network token (Creation)"},
    "ChargeRequest": _object(
        {"token": _TEXT, "amount": _ref("ChargeAmount"), "capabilities": _ref("Capabilities"),
         "fullResponse": _FULL_RESPONSE},
        ("token", "amount"),
        description="Other members of a charge are not shown in the spec: they are accepted and ignored.",
    ),
    "TokenlessChargeRequest": _object(
        {
            "card": _ref("Card"),
            "amount": _ref("ChargeAmount"),
            "isNetworkToken": {"type": "boolean"},
            "networkToken": _ref("NetworkToken"),
            "capabilities": _ref("Capabilities"),
            "fullResponse": _FULL_RESPONSE,
        },
        ("card", "amount"),
    ),
    "ReversalRequest": _object(
        {"amount": {"type": "object", "description": "accepted and not checked: the whole charge is reversed"},
         "fullResponse": _FULL_RESPONSE},
        description="Optional body of a void or refund (the official PHP SDK sends one).",
    ),
    "PaymentRequest": _object(
        {
            "token": _TEXT,
            "clabe": _string("^[0-9]{18}$", "Mexico: the CLABE the payer pays"),
            "referenceCode": _string("^[0-9]{6}$", "Ecuador wallet: the 6-digit code"),
            "outcome": {"type": "string", "enum": ["approved", "declined"],
                        "description": "default: the spec's rule (documentNumber 999999990 declined, else approved)"},
        },
        description="Exactly one of token, clabe, referenceCode.",
    ),
    "ClockAdvance": _object({"seconds": {"type": "number", "minimum": 0, "maximum": 31_536_000}}, ("seconds",)),
    "WebhookUrlChange": _object(
        {"url": {"type": "string", "minLength": 1, "maxLength": 2048,
                 "description": "an absolute http(s) URL (loopback only while the documented private key is in "
                                "use)"}}, ("url",),
        description="Where webhooks go from now on (docs/sandbox.md, Webhooks)."),
    "WebhookUrl": _object({"webhookUrl": {"type": "string", "nullable": True}}, ("webhookUrl",), closed=True),
    # --- responses
    "Error": _object(
        {"code": {"type": "string"}, "message": {"type": "string"}, "field": {"type": "string"}},
        ("code", "message"),
        closed=True,
    ),
    "AuthFailure": _object(
        {"type": {"type": "string", "enum": ["AUTH"]}, "code": {"type": "string", "enum": ["AUTH-001"]},
         "message": {"type": "string", "enum": ["Invalid or expired credentials"]}},
        ("type", "code", "message"),
        closed=True,
    ),
    "Token": _object({"token": _string("^[0-9a-f]{32}$")}, ("token",), closed=True),
    "MexicoClabe": _object(
        {
            "bank": {"type": "string"},
            "referenceNumber": _string("^[0-9]{7}$"),
            "referenceProcessor": _string("^[0-9]{18}$", "the CLABE, with a correct check digit"),
            "ticketNumber": _string("^[0-9]{18}$"),
            "transactionReference": _UUID,
        },
        ("bank", "referenceNumber", "referenceProcessor", "ticketNumber", "transactionReference"),
        closed=True,
    ),
    "EcuadorRedirect": _object({"redirectUrl": _string("^https?://"), "transactionReference": _UUID},
                               ("redirectUrl", "transactionReference"), closed=True),
    "EcuadorWallet": _object(
        {
            "qr": _string("^data:image/png;base64,"),
            "redirectUrl": _string("", "deep link opening the wallet"),
            "referenceCode": _string("^[0-9]{6}$"),
            "transactionReference": _UUID,
        },
        ("qr", "redirectUrl", "referenceCode", "transactionReference"),
        closed=True,
    ),
    "QrDetails": _object(
        {
            "status": {"type": "string", "enum": _TRANSFER_STATUSES[:3]},
            "amount": _object(
                {"currency": {"type": "string", "enum": ["COP"]}, **_AMOUNT_MEMBERS},
                ("currency", "iva", "subtotalIva", "subtotalIva0"),
                closed=True,
            ),
            "created": _EPOCH_MS,
            "merchantId": {"type": "string"},
            "merchantName": {"type": "string"},
        },
        ("status", "amount", "created", "merchantId", "merchantName"),
        closed=True,
    ),
    "ColombiaQr": _object(
        {"qr": _string("^data:image/png;base64,"), "transactionReference": _UUID, "details": _ref("QrDetails")},
        ("qr", "transactionReference"),
        closed=True,
    ),
    "ColombiaPse": _object(
        {"redirectUrl": _string("^https?://", "the payer's bank (the sandbox's payer page)"),
         "trazabilityCode": _string("^[0-9]{10}$"), "transactionReference": _UUID},
        ("redirectUrl", "trazabilityCode", "transactionReference"),
        closed=True,
    ),
    "TransferInit": {"anyOf": [_ref("MexicoClabe"), _ref("EcuadorRedirect"), _ref("EcuadorWallet"),
                               _ref("ColombiaQr"), _ref("ColombiaPse")]},
    "BankList": {"type": "array", "items": _object({"code": {"type": "string"}, "name": {"type": "string"}},
                                                   ("code", "name"), closed=True)},
    "TransferStatus": _object(
        {
            "token": {"type": "string"},
            "transactionReference": _UUID,
            "status": {"type": "string", "enum": _TRANSFER_STATUSES,
                       "description": "the service's webhook vocabulary (expiredTransaction: a QR left unpaid)"},
            "transactionStatus": {"type": "string", "enum": _SPEC_STATUSES, "description": "the spec's word"},
            "processorState": {"type": "string", "enum": ["OK", "NOT_AUTHORIZED"], "description": "once final"},
            "completedAt": _EPOCH_MS,
            "country": {"type": "string", "enum": ["MX", "EC", "CO"]},
            "currency": {"type": "string", "enum": ["MXN", "USD", "COP"]},
            "amount": {"type": "object"},
            "ticketNumber": _string("^[0-9]{18}$"),
            "created": _EPOCH_MS,
            "updated": _EPOCH_MS,
            "cancelled": {"type": "boolean"},
            "qrStatus": {"type": "string", "enum": ["valid", "expired", "cancelled"],
                         "description": "Colombia QR and Ecuador wallet"},
            "qrExpiresAt": _EPOCH_MS,
        },
        ("token", "transactionReference", "status", "transactionStatus", "country", "currency", "amount",
         "ticketNumber", "created", "updated", "cancelled"),
        closed=True,
        description="The status record (its fields are not shown in the spec: this is the sandbox's).",
    ),
    "NetworkInfo": _object(
        {
            "wallet": {"type": "string"},
            "walletId": {"type": "string"},
            "isNetworkToken": {"type": "boolean"},
            "tmsMaskedCardNumber": _string("^[0-9]{6}X+[0-9]{4}$"),
            "tmsLastFourDigits": _string("^[0-9]{4}$"),
            "tmsBin": _string("^[0-9]{6}$"),
            "tmsIntegration": {"type": "string", "enum": ["transport", "creation"]},
        },
        ("wallet", "walletId", "isNetworkToken", "tmsMaskedCardNumber", "tmsLastFourDigits", "tmsBin",
         "tmsIntegration"),
        closed=True,
    ),
    "ChargeResult": _object({**_APPROVED_CHARGE, "network": _ref("NetworkInfo")}, tuple(_APPROVED_CHARGE),
                            closed=True),
    "Reversal": _object(
        {
            "ticketNumber": _string("^[0-9]{18}$", "the void's or refund's own ticket number"),
            "transactionReference": _UUID,
            "transactionStatus": {"type": "string", "enum": ["APPROVAL"]},
            "transactionType": {"type": "string", "enum": ["VOID", "REFUND"],
                                "description": "VOID within a day of the charge, REFUND later"},
            "created": _EPOCH_MS,
        },
        ("ticketNumber", "transactionReference", "transactionStatus", "transactionType", "created"),
        closed=True,
    ),
    "ChargeRecord": _object(
        {
            **_APPROVED_CHARGE,
            "transactionType": {"type": "string", "enum": ["SALE", "PREAUTHORIZATION"]},
            "network": _ref("NetworkInfo"),
            "amount": {"type": "object"},
            "created": _EPOCH_MS,
            "reversal": _ref("Reversal"),
        },
        (*_APPROVED_CHARGE, "transactionType", "created"),
        closed=True,
    ),
    "Webhook": _object(
        {
            "id": {"type": "string"},
            "token": {"type": "string"},
            "status": {"type": "string", "enum": ["approvedTransaction", "declinedTransaction"]},
            "delivered": {"type": "boolean"},
            "attempts": {"type": "integer", "minimum": 0},
            "created": _EPOCH_MS,
            "nextAttemptAt": _EPOCH_MS,
            "deliveredAt": _EPOCH_MS,
            "lastError": {"type": "string"},
            "chaos": {"type": "string",
                      "description": "late: its first delivery held back on purpose (--webhook-chaos)"},
            "body": {"type": "object", "description": "the body as sent (card data and keys in metadata redacted)"},
            "deliveries": {"type": "array", "items": _ref("WebhookDelivery"), "description": "oldest first"},
        },
        ("id", "token", "status", "delivered", "attempts", "created", "body", "deliveries"),
        closed=True,
    ),
    "WebhookDelivery": _object(
        {
            "id": {"type": "integer", "description": "the delivery's id (evidence delivery:<id>)"},
            "at": _EPOCH_MS,
            "url": {"type": "string"},
            "headers": {"type": "object", "additionalProperties": {"type": "string"},
                        "description": "the signed headers as sent (X-Kushki-Id, X-Kushki-Signature, ...)"},
            "status": {"type": "integer", "nullable": True, "description": "the receiver's answer; null: none"},
            "latencyMs": {"type": "number", "minimum": 0},
            "error": {"type": "string"},
            "answer": {"type": "string", "description": "the first 512 bytes of the receiver's answer, as text"},
            "chaos": {"type": "string", "description": "what the sandbox did on purpose with this attempt "
                                                       "(--webhook-chaos): duplicate, concurrent, reorder, late"},
        },
        ("id", "at", "url", "headers", "status", "latencyMs"),
        closed=True,
    ),
    "Feed": _object(
        {"requests": {"type": "array", "items": _ref("RecordedRequest"), "description": "oldest first"},
         "attempts": {"type": "array", "items": _ref("FeedAttempt"), "description": "oldest first"},
         "requestsCursor": {"type": "integer", "minimum": 0, "description": "pass back as requestsAfter"},
         "attemptsCursor": {"type": "integer", "minimum": 0, "description": "pass back as attemptsAfter"},
         "webhookUrl": {"type": "string", "nullable": True}},
        ("requests", "attempts", "requestsCursor", "attemptsCursor", "webhookUrl"), closed=True),
    "WebhookList": _object(
        {"webhookUrl": {"type": "string", "nullable": True, "description": "where webhooks go; null: nowhere yet"},
         "webhooks": {"type": "array", "items": _ref("Webhook")}},
        ("webhookUrl", "webhooks"),
        closed=True,
    ),
    "RecordedRequest": _object(
        {
            "id": {"type": "integer", "description": "its number in the access log (evidence request:<id>)"},
            "at": _EPOCH_MS,
            "kind": {"type": "string", "enum": ["api", "terminal", "page", "cdn"]},
            "method": {"type": "string"},
            "path": {"type": "string", "description": "as sent, percent-encoded"},
            "status": {"type": "integer"},
            "ms": {"type": "number", "minimum": 0},
            "key": {"type": "string", "enum": ["public", "private", "none", "wrong"],
                    "description": "which merchant key it carried, never its value"},
            "token": {"type": "string", "nullable": True},
            "headers": {"type": "object", "additionalProperties": {"type": "string"},
                        "description": "values kept for an allow-list of headers (Content-Type, User-Agent, "
                                       "Public-Merchant-Id, ...), any other one [REDACTED] (Private-Merchant-Id, "
                                       "Authorization, X-Api-Key, ...); the configured secrets redacted everywhere"},
            "body": {"description": "JSON the sandbox reads, secrets redacted and card numbers masked; any other "
                                    "body as a note of its length and media type (never its text); null when "
                                    "empty"},
            "response": {"description": "the answer's body, likewise (not kept for the simulator's listings)"},
            "verdict": {"type": "string", "description": "terminal requests: valid, or the AUTH-001 cause"},
        },
        ("id", "at", "kind", "method", "path", "status", "ms", "key", "token", "headers", "body", "response"),
        closed=True,
    ),
    "HistoryEntry": _object(
        {"at": _EPOCH_MS,
         "state": {"type": "string", "enum": ["initialized", "PAID", "rejected", "cancelled", "expired"]},
         "cause": {"type": "string", "description": "init, payer, scenario, settled, cancel or dashboard"}},
        ("at", "state", "cause"), closed=True),
    "CertificationPart": _object(
        {"part": {"type": "string"}, "verdict": _VERDICT, "summary": {"type": "string"},
         "evidence": {"type": "array", "items": {"type": "string"}}},
        ("part", "verdict", "summary", "evidence"), closed=True),
    "CertificationRule": _object(
        {"rule": {"type": "integer", "minimum": 1, "maximum": 9}, "title": {"type": "string"}, "verdict": _VERDICT,
         "summary": {"type": "string"},
         "evidence": {"type": "array", "items": {"type": "string"},
                      "description": "request:<id> (access log), delivery:<id> (webhook attempt), transfer:<token>"},
         "parts": {"type": "array", "items": _ref("CertificationPart")}},
        ("rule", "title", "verdict", "summary", "evidence"), closed=True),
    "Certification": _object(
        {"rules": {"type": "array", "items": _ref("CertificationRule"), "minItems": 9, "maxItems": 9}},
        ("rules",), closed=True,
        description="Spec section 8's certification rules, judged from the traffic the sandbox observed."),
    "Clock": _object({"now": _EPOCH_MS}, ("now",), closed=True),
    "TerminalEnvelope": _object(
        {"data": _string("^[0-9a-f]{32}:[0-9a-f]+$", "<iv_hex>:<ciphertext_hex>")}, ("data",), closed=True
    ),
}



def _listed(item: str, extra: dict[str, Any]) -> dict[str, Any]:
    """A listing's item: the closed schema ``item`` with more members."""
    schema = COMPONENTS[item]
    return _object({**schema["properties"], **extra}, tuple(schema["required"]), closed=True)


def _page_of(item: str) -> dict[str, Any]:
    return _object({"items": {"type": "array", "items": _ref(item)},
                    "nextCursor": {"type": "string", "nullable": True,
                                   "description": "pass it as cursor for the next page; null on the last"}},
                   ("items", "nextCursor"), closed=True)


COMPONENTS["FeedAttempt"] = _object(
    {**COMPONENTS["WebhookDelivery"]["properties"],
     "event": {"type": "string", "description": "the webhook's id"}, "token": {"type": "string"},
     "eventStatus": {"type": "string", "enum": ["approvedTransaction", "declinedTransaction"]},
     "delivered": {"type": "boolean", "description": "whether the webhook is delivered now"},
     "nextAttemptAt": _EPOCH_MS},
    (*COMPONENTS["WebhookDelivery"]["required"], "event", "token", "eventStatus", "delivered"), closed=True,
    description="A delivery attempt, with what its webhook is and where it stands now.")
COMPONENTS.update({
    "TransferListItem": _listed("TransferStatus", {
        "flow": {"type": "string", "enum": ["clabe", "bank", "wallet", "qr", "pse"]},
        "documentNumber": {"type": "string"}}),
    "ChargeListItem": _listed("ChargeRecord", {
        "kind": {"type": "string", "enum": ["charge", "tokenless", "preAuthorization"]}}),
})
COMPONENTS.update({
    "TransferPage": _page_of("TransferListItem"),
    "ChargePage": _page_of("ChargeListItem"),
    "RequestPage": _object(
        {**_page_of("RecordedRequest")["properties"],
         "notRecorded": {"type": "integer", "minimum": 0,
                         "description": "requests since start whose record could not be stored: each dropped alone "
                                        "(the sandbox's log says so), never blocking the others"}},
        ("items", "nextCursor", "notRecorded"), closed=True),
    "TransferDetail": _object(
        {"transfer": _ref("TransferListItem"),
         "tokenRequest": {"type": "object", "nullable": True, "description": "the token request as accepted"},
         "history": {"type": "array", "items": _ref("HistoryEntry")},
         "requests": {"type": "array", "items": _ref("RecordedRequest"), "description": "newest first"},
         "webhooks": {"type": "array", "items": _ref("Webhook")}},
        ("transfer", "tokenRequest", "history", "requests", "webhooks"), closed=True),
})

_JSON = "application/json"
_HTML = "text/html"


def _response(description: str, schema: str, media: str = _JSON) -> dict[str, Any]:
    return {"description": description, "content": {media: {"schema": _ref(schema)}}}


def _html(description: str) -> dict[str, Any]:
    return {"description": description, "content": {_HTML: {"schema": {"type": "string"}}}}


def _error(description: str) -> dict[str, Any]:
    return _response(description, "Error")


_UNAUTHORIZED = _error("the merchant key header is missing or wrong")
_INVALID = _error("the body breaks the schema or a rule of the spec; field names it")
_TOKEN_PARAMETER = {"name": "token", "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
Security = list[dict[str, list[str]]]
_PUBLIC: Security = [{"PublicMerchantId": []}]
_PRIVATE: Security = [{"PrivateMerchantId": []}]
_TERMINAL: Security = [{"TerminalSignature": [], "TerminalTimestamp": []}]


_FLOW = {"processorName": "BRE-B", "type": "QR"}
_EXAMPLES: dict[str, dict[str, Any]] = {
    "TransferTokenRequest": {
        "colombiaQrPaid": {"summary": "Colombia QR, sum 10000: PAID with a webhook", "value": {
            "currency": "COP", "amount": {"subtotalIva": 0, "subtotalIva0": 10000, "iva": 0}, "flow": _FLOW}},
        "mexico": {"summary": "Mexico CLABE (documentNumber 999999990 would be declined)", "value": {
            "currency": "MXN", "amount": {"subtotalIva": 1000, "subtotalIva0": 0, "iva": 160}, "userType": "1",
            "documentType": "CURP", "documentNumber": "123456789", "email": "payer@example.com"}},
        "ecuador": {"summary": "Ecuador: bank redirect or wallet, by the configured processor", "value": {
            "currency": "USD", "amount": {"subtotalIva": 100, "subtotalIva0": 0, "iva": 15}, "userType": "1",
            "documentType": "CI", "documentNumber": "123456789",
            "callbackUrl": "https://shop.example/return"}},
    },
    "CardTokenRequest": {
        "transport": {"summary": "Transport: a network token and its cryptogram", "value": {
            "card": {"name": "Ana Gomez", "number": "4000000000000002", "expiryMonth": "12", "expiryYear": "29",
                     "cryptogram": "AgAAAAAAAIR8CQrXcIhbQAAAAAA"},
            "totalAmount": 119000, "currency": "COP", "isNetworkToken": True,
            "networkToken": {"walletId": "01", "mvv": "0123456789"}}},
        "card": {"summary": "A plain card (ask for networkToken in the charge: Creation)", "value": {
            "card": {"name": "Ana Gomez", "number": "5100000000000008", "expiryMonth": "12", "expiryYear": "29",
                     "cvv": "123"},
            "totalAmount": 119000, "currency": "COP"}},
    },
    "ClockAdvance": {"tenMinutes": {"summary": "let a Colombia QR expire", "value": {"seconds": 600}}},
}


def _json_body(schema: str) -> dict[str, Any]:
    media: dict[str, Any] = {"schema": _ref(schema)}
    if schema in _EXAMPLES:
        media["examples"] = _EXAMPLES[schema]
    return {"required": True, "content": {_JSON: media}}


def _operation(operation_id: str, summary: str, security: Security, responses: dict[str, Any], *,
               body: str = "", parameters: tuple[dict[str, Any], ...] = (), tags: tuple[str, ...] = ()
               ) -> dict[str, Any]:
    operation: dict[str, Any] = {"operationId": operation_id, "summary": summary, "security": security,
                                 "responses": responses}
    if body:
        operation["requestBody"] = _json_body(body)
        responses.setdefault("413", _error("the body is larger than 1 MiB"))
        responses.setdefault("415", _error("the body is not sent as application/json"))
    if parameters:
        operation["parameters"] = list(parameters)
    if tags:
        operation["tags"] = list(tags)
    return operation


_BY_TICKET = {"ticketNumber": "$response.body#/ticketNumber"}
_CHARGE_LINKS = {"VoidCharge": {"operationId": "voidCharge", "parameters": _BY_TICKET},
                 "GetCharge": {"operationId": "getCharge", "parameters": _BY_TICKET}}


def _charge(operation_id: str, summary: str, body: str) -> dict[str, Any]:
    return {"post": _operation(operation_id, summary, _PRIVATE, {
        "201": _linked(_response("approved: ticketNumber, transactionReference, and network when a network token was"
                                 " used", "ChargeResult"), _CHARGE_LINKS),
        "400": _INVALID, "401": _UNAUTHORIZED}, body=body, tags=("cards",))}


_TICKET_PARAMETER = {"name": "ticketNumber", "in": "path", "required": True,
                     "schema": {"type": "string", "minLength": 1}}


def _reversal(operation_id: str, summary: str) -> dict[str, Any]:
    operation = _operation(operation_id, summary, _PRIVATE, {
        "200": _response("voided (within a day of the charge) or refunded", "Reversal"),
        "400": _error("CHARGE_ALREADY_REVERSED, or a body that breaks the schema"), "401": _UNAUTHORIZED,
        "404": _error("no charge has this ticketNumber"), "415": _error("a body that is not JSON")},
        body="ReversalRequest", parameters=(_TICKET_PARAMETER,), tags=("cards",))
    operation["requestBody"]["required"] = False
    return operation


def _query(name: str, schema: dict[str, Any], description: str = "") -> dict[str, Any]:
    parameter: dict[str, Any] = {"name": name, "in": "query", "required": False, "schema": schema}
    if description:
        parameter["description"] = description
    return parameter


_PAGING = (_query("limit", {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}),
           _query("cursor", _string("^[0-9]{1,18}$"), "the nextCursor of the previous page"))


def _listing(operation_id: str, summary: str, page: str, *filters: dict[str, Any]) -> dict[str, Any]:
    return _operation(operation_id, summary, _PRIVATE, {
        "200": _response("a page, newest first", page), "400": _error("a bad limit, cursor or filter, named"),
        "401": _UNAUTHORIZED}, parameters=(*_PAGING, *filters), tags=("simulator",))


_MISDIRECTED = _error("asked by a name other than the sandbox's own address (DNS rebinding)")
_DASHBOARD_PAGES = (
    ("/sandbox/", "dashboardTransfers", "Dashboard: transfers, filtered by status, country and flow", True),
    ("/sandbox/transfers/{token}", "dashboardTransfer", "Dashboard: one transfer, its history, requests, webhooks",
     False),
    ("/sandbox/charges", "dashboardCharges", "Dashboard: card charges", True),
    ("/sandbox/webhooks", "dashboardWebhooks", "Dashboard: webhooks and every delivery attempt", False),
    ("/sandbox/terminal", "dashboardTerminal", "Dashboard: terminal requests, verdict and AUTH-001 cause", True),
    ("/sandbox/requests", "dashboardRequests", "Dashboard: the access log", True),
    ("/sandbox/requests/{id}", "dashboardRequest", "Dashboard: one request, its headers and bodies", False),
    ("/sandbox/certification", "dashboardCertification", "Dashboard: certification readiness", False),
    ("/sandbox/search", "dashboardSearch", "Dashboard: transfers and charges by token, transaction reference, ticket "
                                           "or document number (q)", True),
)
_DASHBOARD_ACTIONS = (
    ("/sandbox/actions/transfers/{token}/{action}", "dashboardTransferAction",
     "Dashboard form: approve, decline or expire a pending transfer"),
    ("/sandbox/actions/webhooks/{id}/redeliver", "dashboardRedeliver", "Dashboard form: redeliver a webhook"),
    ("/sandbox/actions/clock", "dashboardClock", "Dashboard form: advance the clock"),
    ("/sandbox/actions/webhook-url", "dashboardWebhookUrl",
     "Dashboard form: deliver webhooks to another URL (loopback only with the documented private key)"),
)


def _path_parameters(path: str) -> list[dict[str, Any]]:
    return [{"name": name, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
            for name in re.findall(r"{(\w+)}", path)]


def _dashboard_pages() -> dict[str, Any]:
    """The dashboard's pages and forms (HTML, no key: it listens on 127.0.0.1; its forms carry a page token)."""
    paths: dict[str, Any] = {}
    for path, operation_id, summary, paged in _DASHBOARD_PAGES:
        responses = {"200": _html("the page"), "404": _html("no such transfer or request"), "421": _MISDIRECTED}
        if paged:
            responses["400"] = _error("a filter or cursor that is not one of its values")
        operation: dict[str, Any] = {"operationId": operation_id, "summary": summary, "security": [],
                                     "tags": ["dashboard"], "responses": responses}
        if _path_parameters(path):
            operation["parameters"] = _path_parameters(path)
        if path == "/sandbox/search":
            operation["parameters"] = [_query("q", {"type": "string"}, "what to look for")]
            responses["303"] = {"description": "one transfer matches: its page",
                                "headers": {"Location": {"schema": {"type": "string"}}}}
        paths[path] = {"get": operation}
    form = _object({"page_token": {"type": "string", "description": "the per-page token of the form"},
                    "back": {"type": "string", "description": "the dashboard page to return to"},
                    "seconds": {"type": "string", "description": "the clock form: seconds to advance"},
                    "url": {"type": "string", "description": "the webhook URL form: where to deliver (empty: "
                                                             "nowhere)"}},
                   ("page_token",))
    for path, operation_id, summary in _DASHBOARD_ACTIONS:
        operation = {"operationId": operation_id, "summary": summary, "security": [], "tags": ["dashboard"],
                     "requestBody": {"required": True,
                                     "content": {"application/x-www-form-urlencoded": {"schema": form}}},
                     "responses": {"303": {"description": "done: back to the page",
                                           "headers": {"Location": {"schema": {"type": "string"}}}},
                                   "400": _html("a bad number of seconds, a webhook URL that may not be set"),
                                   "403": _html("the page token is missing, wrong or too old, or a cross-site post"),
                                   "404": _html("no such transfer, webhook or action"),
                                   "409": _html("the transfer is not pending"), "421": _MISDIRECTED}}
        if _path_parameters(path):
            operation["parameters"] = _path_parameters(path)
        paths[path] = {"post": operation}
    assets = {"/sandbox/assets/dashboard.css": ("dashboardStyle", "text/css"),
              "/sandbox/assets/dashboard.js": ("dashboardScript", "text/javascript")}
    for path, (operation_id, media) in assets.items():
        paths[path] = {"get": {"operationId": operation_id, "summary": "The dashboard's own asset", "security": [],
                               "tags": ["dashboard"], "responses": {"200": {
                                   "description": "served by the sandbox itself",
                                   "content": {media: {"schema": {"type": "string"}}}}}}}
    paths["/sandbox/changes"] = {"get": {
        "operationId": "dashboardChanges", "summary": "Dashboard polling: a version that changes with the state",
        "security": [], "tags": ["dashboard"], "responses": {
            "200": {"description": "the state's version", "content": {_JSON: {"schema": _object(
                {"version": {"type": "string"}}, ("version",), closed=True)}}}, "421": _MISDIRECTED}}}
    paths["/"] = {"get": {"operationId": "home", "summary": "To the dashboard", "security": [], "tags": ["dashboard"],
                          "responses": {"303": {"description": "to /sandbox/",
                                                "headers": {"Location": {"schema": {"type": "string"}}}}}}}
    return paths


def _status(operation_id: str, summary: str, security: Security) -> dict[str, Any]:
    return {"get": _operation(operation_id, summary, security, {
        "200": _response("the status record", "TransferStatus"),
        "401": _UNAUTHORIZED, "404": _error("no transfer was started with this token")},
        parameters=(_TOKEN_PARAMETER,), tags=("transfers",))}


def _terminal_get(operation_id: str, summary: str) -> dict[str, Any]:
    return {"get": _operation(operation_id, summary, _TERMINAL, {
        "200": _response("the payload, echoed encrypted with the request's key", "TerminalEnvelope"),
        "400": _response("encrypted error naming the missing field", "TerminalEnvelope"),
        "401": _response("AUTH-001, whatever the cause", "AuthFailure")},
        parameters=({"name": "data", "in": "query", "required": True,
                     "schema": _string("^[0-9a-f]{32}:[0-9a-f]+$")},), tags=("terminal",))}


def _linked(response: dict[str, Any], links: dict[str, Any]) -> dict[str, Any]:
    """A response with OpenAPI links: how its values feed the next call (also drives stateful API tests)."""
    return {**response, "links": links}


_BY_TOKEN = {"token": "$request.body#/token"}
_TRANSFER_LINKS = {
    "TransferStatus": {"operationId": "transferStatus", "parameters": _BY_TOKEN},
    "Status": {"operationId": "status", "parameters": _BY_TOKEN},
    "CancelTransfer": {"operationId": "cancelTransfer", "parameters": _BY_TOKEN},
    "PayTransfer": {"operationId": "payTransfer", "requestBody": _BY_TOKEN},
    "PayerPage": {"operationId": "payerPage", "parameters": _BY_TOKEN},
}

_PATHS: dict[str, Any] = {
    "/transfer/v1/bankList": {"get": _operation("bankList", "Colombia PSE: the banks the payer chooses from",
                                                _PUBLIC, {"200": _response("code and name of each bank", "BankList"),
                                                          "401": _UNAUTHORIZED}, tags=("transfers",))},
    "/transfer/v1/tokens": {"post": _operation("createTransferToken", "Transfer token (spec 2.5)", _PUBLIC, {
        "201": _linked(_response("the token, for init, status and cancel", "Token"), {
            "InitTransfer": {"operationId": "initTransfer",
                             "requestBody": {"token": "$response.body#/token", "amount": "$request.body#/amount"}}}),
        "400": _INVALID, "401": _UNAUTHORIZED}, body="TransferTokenRequest", tags=("transfers",))},
    "/transfer/v1/init": {"post": _operation(
        "initTransfer", "Start the transfer (spec 2.6, 2.7; Colombia scenarios of 8)", _PRIVATE, {
        "201": _linked(_response("Mexico CLABE, Ecuador redirect or wallet, Colombia QR or PSE", "TransferInit"),
                       _TRANSFER_LINKS),
        "400": _error("schema error, unknown or used token, or QR-CODE-0059 (Colombia sum 99999999)"),
        "401": _UNAUTHORIZED,
        "500": _error("QR-CODE-0001 (Colombia sum 11000)"),
        "504": _error("TIMEOUT (Colombia sum 13000): sent only after the configured delay, unanswered until then"),
    }, body="TransferInitRequest", tags=("transfers",))},
    "/transfer/v1/status/{token}": _status("transferStatus", "Transfer status", _PRIVATE),
    "/status/{token}": _status("status", "Transfer status (either merchant key)",
                               [{"PrivateMerchantId": []}, {"PublicMerchantId": []}]),
    "/transfer/v1/cancel/{token}": {"patch": _operation("cancelTransfer", "Cancel a transfer that is not final",
                                                        _PRIVATE, {
        "204": {"description": "cancelled: the QR is invalidated, the payer can no longer pay"},
        "400": _error("T023: Transaction has a final status."),
        "401": _UNAUTHORIZED, "404": _error("no transfer was started with this token")},
        parameters=(_TOKEN_PARAMETER,), tags=("transfers",))},
    "/card/v1/tokens": {"post": _operation("createCardToken", "Card token (spec 2.2)", _PUBLIC, {
        "201": _linked(_response("the card token", "Token"), {
            "Charge": {"operationId": "charge", "requestBody": {
                "token": "$response.body#/token",
                "amount": {"subtotalIva": 0, "subtotalIva0": "$request.body#/totalAmount", "iva": 0,
                           "currency": "$request.body#/currency"}}}}),
        "400": _INVALID, "401": _UNAUTHORIZED},
        body="CardTokenRequest", tags=("cards",))},
    "/card/v1/charges": _charge("charge", "Charge a card token (spec 2.3)", "ChargeRequest"),
    "/card/v1/preAuthorization": _charge("preAuthorize", "Pre-authorize a card token", "ChargeRequest"),
    "/card/v2/charges": _charge("chargeTokenless", "Tokenless charge, network-token fields allowed",
                                "TokenlessChargeRequest"),
    "/card/v1/charges/{ticketNumber}": {"delete": _reversal("voidCharge", "Void or refund a charge, once")},
    "/v1/charges": _charge("legacyCharge", "Charge a card token (the older path)", "ChargeRequest"),
    "/v1/charges/{ticketNumber}": {
        "delete": _reversal("legacyVoidCharge", "Void or refund a charge, once (the older path)"),
        "get": _operation("getCharge", "A charge and its void or refund, if any", _PRIVATE, {
            "200": _response("the charge", "ChargeRecord"), "401": _UNAUTHORIZED,
            "404": _error("no charge has this ticketNumber")}, parameters=(_TICKET_PARAMETER,), tags=("cards",)),
    },
    "/sandbox/v1/payments": {"post": _operation(
        "payTransfer", "Simulator: the payer pays (CLABE, wallet, QR, bank) or is declined", _PRIVATE, {
            "200": _response("the transfer after the payment (a webhook is on its way)", "TransferStatus"),
            "400": _INVALID, "401": _UNAUTHORIZED, "404": _error("no such transfer"),
            "409": _error("already final, cancelled, QR expired, or a scenario that stays initialized")},
        body="PaymentRequest", tags=("simulator",))},
    "/sandbox/v1/clock": {"post": _operation(
        "advanceClock", "Simulator: move the clock forward (QR expiry)", _PRIVATE, {
            "200": _response("the sandbox's now", "Clock"), "400": _INVALID, "401": _UNAUTHORIZED},
        body="ClockAdvance", tags=("simulator",))},
    "/sandbox/v1/webhooks": {"get": _operation(
        "listWebhooks", "Simulator: the webhook outbox, newest first, each with its delivery attempts", _PRIVATE, {
            "200": _response("deliveries and their state", "WebhookList"), "401": _UNAUTHORIZED},
        parameters=(_query("token", {"type": "string"}, "this transfer's webhooks only"),), tags=("simulator",))},
    "/sandbox/v1/webhook-url": {
        "put": _operation("changeWebhookUrl", "Simulator: deliver webhooks to another URL from now on", _PRIVATE, {
            "200": _response("the URL in force", "WebhookUrl"), "400": _INVALID, "401": _UNAUTHORIZED},
            body="WebhookUrlChange", tags=("simulator",)),
        "delete": _operation("clearWebhookUrl", "Simulator: deliver webhooks nowhere (they wait in the outbox)",
                             _PRIVATE, {"200": _response("no URL in force", "WebhookUrl"), "401": _UNAUTHORIZED},
                             tags=("simulator",))},
    "/sandbox/v1/webhooks/{id}/redeliver": {"post": _operation(
        "redeliverWebhook", "Simulator: send a webhook again now, delivered before or not", _PRIVATE, {
            "202": _response("queued: the webhook as it now stands", "Webhook"), "401": _UNAUTHORIZED,
            "404": _error("no webhook has this id")},
        parameters=({"name": "id", "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}},),
        tags=("simulator",))},
    "/sandbox/v1/transfers": {"get": _listing(
        "listTransfers", "Simulator: transfers, newest first", "TransferPage",
        _query("status", {"type": "string", "enum": [*_SPEC_STATUSES, *_TRANSFER_STATUSES[:3]]},
               "the spec's word or the service's"),
        _query("country", {"type": "string", "enum": ["MX", "EC", "CO"]}),
        _query("flow", {"type": "string", "enum": ["clabe", "bank", "wallet", "qr", "pse"]}))},
    "/sandbox/v1/transfers/{token}": {"get": _operation(
        "getTransfer", "Simulator: one transfer, its history, requests and webhooks", _PRIVATE, {
            "200": _response("the transfer whole", "TransferDetail"), "401": _UNAUTHORIZED,
            "404": _error("no transfer was started with this token")},
        parameters=(_TOKEN_PARAMETER,), tags=("simulator",))},
    "/sandbox/v1/charges": {"get": _listing(
        "listCharges", "Simulator: card charges, newest first", "ChargePage",
        _query("kind", {"type": "string", "enum": ["charge", "tokenless", "preAuthorization"]}))},
    "/sandbox/v1/requests": {"get": _listing(
        "listRequests", "Simulator: the access log, newest first (the newest 5000 requests are kept)",
        "RequestPage", _query("kind", {"type": "string", "enum": ["api", "terminal", "page", "cdn"]}),
        _query("method", {"type": "string", "enum": ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]}),
        _query("token", {"type": "string"}, "the requests of this transfer or card token"))},
    "/sandbox/v1/feed": {"get": _operation(
        "feed", "Simulator: the requests and webhook attempts recorded after two cursors, oldest first (what "
                "`pasarela sandbox tail` follows); without a cursor, none of that kind and the cursor of now",
        _PRIVATE, {"200": _response("what happened since the cursors", "Feed"), "400": _INVALID,
                   "401": _UNAUTHORIZED},
        parameters=(_query("requestsAfter", {"type": "string", "pattern": "^[0-9]{1,18}$"}),
                    _query("attemptsAfter", {"type": "string", "pattern": "^[0-9]{1,18}$"}),
                    _PAGING[0]),
        tags=("simulator",))},
    "/sandbox/v1/certification": {"get": _operation(
        "certification", "Simulator: certification readiness, rule by rule (spec 8)", _PRIVATE, {
            "200": _response("a verdict for each rule 1 to 9", "Certification"), "401": _UNAUTHORIZED},
        tags=("simulator",))},
    **_dashboard_pages(),
    "/cdn/": {"get": {"operationId": "cdnIndex", "summary": "CDN stand-ins: what is here and how to point at it",
                      "security": [], "tags": ["cdn"], "responses": {"200": _html("links to the two stand-ins")}}},
    **{f"/cdn/{name}": {"get": {
        "operationId": operation_id, "summary": summary, "security": [], "tags": ["cdn"], "responses": {
            "200": {"description": "the sandbox's stand-in, talking to this sandbox",
                    "content": {"text/javascript": {"schema": {"type": "string"}}}}}}}
       for name, operation_id, summary in (
           ("kushki.min.js", "cdnClientLibrary", "CDN stand-in: the client library (new Kushki, requestTransferToken)"),
           ("kushki-checkout.js", "cdnCheckout", "CDN stand-in: the hosted checkout v1 and v2 (new KushkiCheckout)"))},
    "/sandbox/pay/{token}": {
        "get": {"operationId": "payerPage", "summary": "Payer page: the bank portal, the wallet, the QR's landing page",
                "security": [], "tags": ["simulator"], "parameters": [_TOKEN_PARAMETER],
                "responses": {"200": _html("the transfer, and Pay and Decline buttons"),
                              "404": _html("no such transfer")}},
        "post": {"operationId": "payerPageSubmit", "summary": "Payer page form: pay or decline, then callbackUrl",
                 "security": [], "tags": ["simulator"], "parameters": [_TOKEN_PARAMETER],
                 "requestBody": {"required": True, "content": {"application/x-www-form-urlencoded": {"schema": _object(
                     {"action": {"type": "string", "enum": ["pay", "decline"]},
                      "page_token": {"type": "string", "description": "the per-page token of the form"}},
                     ("action", "page_token"))}}},
                 "responses": {
                     "303": {"description": "back to callbackUrl?token=...",
                             "headers": {"Location": {"schema": {"type": "string"}}}},
                     "200": _html("the result (the token request had no callbackUrl)"),
                     "400": _html("action missing"), "404": _html("no such transfer"),
                     "403": _html("the page token is missing, wrong, too old, or the post came from another site"),
                     "409": _html("already final, cancelled, QR expired, or a scenario that stays initialized")}},
    },
    "/openapi.json": {"get": {"operationId": "openapi", "summary": "This document", "security": [],
                              "responses": {"200": {"description": "OpenAPI 3.0", "content": {
                                  _JSON: {"schema": {"type": "object", "required": ["openapi", "paths"]}}}}}}},
    "/terminal/v1/sync/charge": {"post": _operation(
        "terminalCharge", "Terminal API (any POST, PUT or PATCH path under /terminal/): the payload echoed",
        _TERMINAL, {"200": _response("the payload, encrypted with the request's key", "TerminalEnvelope"),
                    "401": _response("AUTH-001, whatever the cause", "AuthFailure")},
        body="TerminalEnvelope", tags=("terminal",))},
    "/terminal/v1/sync/abort": _terminal_get("terminalSyncAbort", "Abort; identifier inside the payload, or {}"),
    "/terminal/v1/async/abort": _terminal_get("terminalAsyncAbort", "Abort; identifier inside the payload, or {}"),
    "/terminal/v1/print/status": _terminal_get("terminalPrintStatus", "Print job status; printJobId inside"),
}


def _preflight(operation: dict[str, Any]) -> dict[str, Any]:
    """The OPTIONS of a call the payer's browser makes (the public key's): the only CORS the sandbox answers."""
    header = [{"name": name, "in": "header", "required": False, "schema": {"type": "string"}}
              for name in ("Origin", "Access-Control-Request-Method", "Access-Control-Request-Headers")]
    return {"operationId": f"{operation['operationId']}Preflight", "security": [], "tags": operation.get("tags", []),
            "summary": "CORS preflight (only the calls made with the public key, from the browser, answer one)",
            "parameters": header, "responses": {
                "200": {"description": "a preflight from an allowed origin: the Access-Control-Allow-* headers"},
                "204": {"description": "not a preflight: the Allow header"},
                "400": {"description": "a preflight from an origin, or for a method or header, not allowed",
                        "content": {"text/plain": {"schema": {"type": "string"}}}}}}


def _add_preflights(paths: dict[str, Any]) -> None:
    for item in paths.values():
        public = [operation for operation in item.values() if operation.get("security") == _PUBLIC]
        if public:
            item["options"] = _preflight(public[0])


def _add_misdirected(paths: dict[str, Any]) -> None:
    """Every route under /sandbox/ answers only at the sandbox's own address (pasarela.sandbox.endpoint)."""
    for path, item in paths.items():
        if path.startswith("/sandbox/"):
            for operation in item.values():
                operation["responses"].setdefault("421", _MISDIRECTED)


_IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key", "in": "header", "required": False,
    "description": "Run this POST once: the same key with the same request answers the first answer again "
                   "(Idempotent-Replayed: true) and creates nothing; kept 24 hours (pasarela.sandbox.idempotency)",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[ -~]+$"}}


def _also(responses: dict[str, Any], status: str, description: str) -> None:
    """Document one more cause of ``status`` (an error of its own when the operation had none)."""
    if status in responses:
        responses[status] = {**responses[status], "description": f"{responses[status]['description']}; or "
                                                                 f"{description}"}
    else:
        responses[status] = _error(description)


def _add_idempotency(paths: dict[str, Any]) -> None:
    """Every POST made with a merchant key honours Idempotency-Key (pasarela.sandbox.endpoint)."""
    for item in paths.values():
        operation = item.get("post")
        if operation is not None and operation.get("security") in (_PUBLIC, _PRIVATE):
            operation.setdefault("parameters", []).append(_IDEMPOTENCY_KEY)
            responses = operation["responses"]
            _also(responses, "400", "Idempotency-Key is not 1 to 255 printable ASCII characters")
            _also(responses, "409", "IDEMPOTENCY_KEY_IN_USE: a request with this Idempotency-Key is still running")
            _also(responses, "422", "IDEMPOTENCY_KEY_REUSED: this Idempotency-Key was first used with another "
                                    "request")


_add_preflights(_PATHS)
_add_misdirected(_PATHS)
_add_idempotency(_PATHS)


def document() -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "pasarela sandbox",
            "version": __version__,
            "description": "A local, stateful simulator of the payment service: cards (4.2), transfers (4.3) with "
                           "the test behaviours of section 8, webhooks (6), and the terminal API (4.1, 5.1). "
                           "See docs/sandbox.md.",
        },
        "paths": _PATHS,
        "components": {
            "schemas": COMPONENTS,
            "securitySchemes": {
                "PublicMerchantId": {"type": "apiKey", "in": "header", "name": "Public-Merchant-Id"},
                "PrivateMerchantId": {"type": "apiKey", "in": "header", "name": "Private-Merchant-Id"},
                "TerminalSignature": {"type": "apiKey", "in": "header", "name": "Authorization",
                                      "description": "Basic <SHA-512 hex of the signed payload> (spec 5.1)"},
                "TerminalTimestamp": {"type": "apiKey", "in": "header", "name": "timestamp",
                                      "description": "Unix seconds, 10 digits"},
            },
        },
    }
