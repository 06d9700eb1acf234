"""The bank transfer API (spec 4.3): token, init, both status queries, cancel.

Init answers by country (read from the token's currency): Mexico a CLABE, Ecuador the bank
redirect or the wallet (the processor configured with ``--ecuador-processor``), Colombia a QR
(token with ``flow``) with the test scenarios of section 8 (:mod:`.scenarios`), or PSE (token
without ``flow``, with a ``bankId`` of :data:`BANKS`): the bank's ``redirectUrl`` and a
``trazabilityCode``. Every answer links to the payer page
(:mod:`.bank_page`) at the address the caller reached the sandbox by.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Optional

from starlette.responses import Response
from starlette.routing import Route

from ..http.path import path_segment
from .auth import KeyRule
from .clabe import SANDBOX_BANK, make_clabe
from .context import Context, digits, new_token, ticket_number
from .endpoint import Call, api_route, empty, json_reply
from .errors import SandboxError
from .jsontext import plain
from .qr import png_data_uri
from .scenarios import ColombiaScenario, colombia_scenario
from .settlement import settle_due
from .states import QR_VALIDITY_SECONDS, PaymentWindow, TransferStatus, cancel
from .store import Transfer, TransferToken, Tx
from .webhooks import enqueue_event
from .wire import client_rules, transfer_init_request, transfer_token_request

__all__ = ["payer_page_url", "routes", "status_record"]

_COUNTRIES = {"MXN": "MX", "USD": "EC", "COP": "CO"}
BANKS = (("1022", "Banco Sandbox Uno"), ("1051", "Banco Sandbox Dos"), ("1507", "Banco Sandbox Digital"))
"""The sandbox's PSE bank list (the real one is the service's, per merchant): any code is accepted as bankId."""
EXPIRED_STATUS = "expiredTransaction"
_CODE_ATTEMPTS = 50


def payer_page_url(base_url: str, token: str) -> str:
    return f"{base_url}/sandbox/pay/{path_segment('token', token)}"


def status_record(transfer: Transfer, now: float) -> dict[str, Any]:
    """The service's vocabulary: ``status`` as its webhooks spell it (``expiredTransaction`` for a Colombia QR
    left unpaid past its life), ``processorState`` once final; ``transactionStatus`` keeps the spec's word."""
    expired = not transfer.status.is_final and transfer.window.qr_status(now) == "expired"
    record: dict[str, Any] = {
        "token": transfer.token,
        "transactionReference": transfer.reference,
        "status": EXPIRED_STATUS if expired else transfer.status.webhook_status,
        "transactionStatus": transfer.status.value,
        "country": transfer.country,
        "currency": transfer.currency,
        "amount": dict(transfer.amount),
        "ticketNumber": transfer.ticket_number,
        "created": int(transfer.created * 1000),
        "updated": int(transfer.updated * 1000),
        "cancelled": transfer.window.cancelled,
    }
    if transfer.status.processor_state is not None:
        record["processorState"] = transfer.status.processor_state
        record["completedAt"] = int(transfer.updated * 1000)
    if transfer.variant in ("qr", "wallet"):
        record["qrStatus"] = transfer.window.qr_status(now)
        if transfer.window.expires_at is not None:
            record["qrExpiresAt"] = int(transfer.window.expires_at * 1000)
    return record


class TransferApi:
    def __init__(self, context: Context) -> None:
        self._context = context

    async def bank_list(self, call: Call) -> Response:
        return json_reply(200, [{"code": code, "name": name} for code, name in BANKS])

    async def create_token(self, call: Call) -> Response:
        body = call.body
        transfer_token_request(body)  # the client's rules, per country
        token = new_token()
        with self._context.store.write() as tx:
            tx.add_transfer_token(token, plain(body), self._context.clock.now())
        return json_reply(201, {"token": token})

    async def init(self, call: Call) -> Response:
        request = transfer_init_request(call.body)
        amount_wire = request.amount.to_wire(with_currency=False)
        now = self._context.clock.now()
        with self._context.store.write() as tx:
            token = _usable_token(tx, request.token)
            currency = str(token.request["currency"])
            with client_rules():
                request.amount.check_currency(currency)
            _check_same_total(token, request.amount.total)
            scenario = None
            if _variant(token, self._context.config.ecuador_processor) == "qr":
                scenario = colombia_scenario(request.amount.subtotal_iva0, request.amount.subtotal_iva,
                                             request.amount.iva)
                refusal = scenario.refusal()
                if refusal is not None:
                    raise refusal
            transfer = self._new_transfer(tx, token, currency, amount_wire, request.metadata, scenario, now)
            tx.add_transfer(transfer)
            tx.use_transfer_token(token.token)
            if scenario is not None and scenario.immediate_outcome is not None:
                final = TransferStatus.after(scenario.immediate_outcome)
                tx.set_status(transfer.token, final, now, "scenario")
                enqueue_event(tx, transfer, final, now)
        if scenario is not None and scenario.immediate_outcome is not None:
            self._context.webhook_queued()
        if scenario is not None and scenario.http_status is None:
            return await self._time_out(call)
        return json_reply(201, self._init_answer(call.public_url, transfer, request.full_response))

    def _new_transfer(self, tx: Tx, token: TransferToken, currency: str, amount_wire: Mapping[str, Any],
                      metadata: Optional[Mapping[str, Any]], scenario: Optional[ColombiaScenario],
                      now: float) -> Transfer:
        country = _COUNTRIES[currency]
        variant = _variant(token, self._context.config.ecuador_processor)
        return Transfer(
            token=token.token,
            reference=str(uuid.uuid4()),
            country=country,
            variant=variant,
            status=TransferStatus.INITIALIZED,
            currency=currency,
            amount=amount_wire,
            ticket_number=ticket_number(),
            created=now,
            updated=now,
            window=PaymentWindow(
                cancelled=False,
                locked=scenario is not None and scenario.locked,
                expires_at=now + QR_VALIDITY_SECONDS if variant == "qr" else None,
            ),
            document_number=token.request.get("documentNumber"),
            callback_url=token.request.get("callbackUrl"),
            clabe=make_clabe(token.token) if variant == "clabe" else None,
            reference_code=_reference_code(tx, variant),
            metadata=None if metadata is None else dict(metadata),
            settle_at=self._settle_at(variant, now),
        )

    def _settle_at(self, variant: str, now: float) -> Optional[float]:
        """The Colombia QR ends by its scenario or its payer; the others settle by themselves (:mod:`.settlement`)."""
        after = self._context.config.settle_after
        return None if after is None or variant == "qr" else now + after

    def _init_answer(self, base_url: str, transfer: Transfer, full_response: bool) -> dict[str, Any]:
        page = payer_page_url(base_url, transfer.token)
        if transfer.variant == "clabe":
            return {
                "bank": SANDBOX_BANK[0],
                "referenceNumber": digits(7),
                "referenceProcessor": transfer.clabe,
                "ticketNumber": transfer.ticket_number,
                "transactionReference": transfer.reference,
            }
        # Every variant names the transaction (spec 2.7 lists transactionReference for Mexico and Colombia QR
        # only; the service's transfer webhooks carry it for all): the reference the webhook will repeat.
        if transfer.variant == "bank":
            return {"redirectUrl": page, "transactionReference": transfer.reference}
        if transfer.variant == "pse":
            return {"redirectUrl": page, "trazabilityCode": transfer.reference_code,
                    "transactionReference": transfer.reference}
        if transfer.variant == "wallet":
            return {"qr": png_data_uri(page), "redirectUrl": page, "referenceCode": transfer.reference_code,
                    "transactionReference": transfer.reference}
        answer: dict[str, Any] = {"qr": png_data_uri(page), "transactionReference": transfer.reference}
        if full_response:
            answer["details"] = {
                "status": TransferStatus.INITIALIZED.webhook_status,
                "amount": {"currency": transfer.currency, "iva": transfer.amount["iva"],
                           "subtotalIva": transfer.amount["subtotalIva"],
                           "subtotalIva0": transfer.amount["subtotalIva0"]},
                "created": int(transfer.created * 1000),
                "merchantId": self._context.config.public_key,
                "merchantName": self._context.config.merchant_name,
            }
        return answer

    async def _time_out(self, call: Call) -> Response:
        """The 13000 scenario: no answer within the delay (the transaction stays initialized). A client that
        leaves earlier reads nothing; the 504 is still this request's answer (what its Idempotency-Key keeps)."""
        delay = self._context.config.timeout_delay
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(_disconnected(call), timeout=delay)
        raise SandboxError(504, "TIMEOUT", f"the processor did not answer within {delay:g} s; "
                                           "the transaction stays initialized")

    async def status(self, call: Call) -> Response:
        settle_due(self._context, call.params["token"])
        with self._context.store.read() as tx:
            transfer = tx.transfer(call.params["token"])
        if transfer is None:
            raise SandboxError.not_found("no transfer was started with this token")
        return json_reply(200, status_record(transfer, self._context.clock.now()))

    async def cancel(self, call: Call) -> Response:
        now = self._context.clock.now()
        with self._context.store.write() as tx:
            transfer = tx.transfer(call.params["token"])
            if transfer is None:
                raise SandboxError.not_found("no transfer was started with this token")
            cancel(transfer.status)
            tx.cancel_transfer(transfer.token, now)
        return empty()


async def _disconnected(call: Call) -> None:
    while (await call.request.receive())["type"] != "http.disconnect":
        pass


def _variant(token: TransferToken, ecuador_processor: str) -> str:
    currency = token.request["currency"]
    if currency == "MXN":
        return "clabe"
    if currency == "COP":
        return "qr" if token.request.get("flow") is not None else "pse"
    return ecuador_processor


def _usable_token(tx: Tx, token: str) -> TransferToken:
    found = tx.transfer_token(token)
    if found is None:
        raise SandboxError.invalid("token", "is not a transfer token of this sandbox")
    if found.used:
        raise SandboxError.invalid("token", "was already used by an init: create a new token")
    return found


def _check_same_total(token: TransferToken, total: Decimal) -> None:
    with client_rules():
        token_total = transfer_token_request(token.request).amount.total
    if token_total != total:
        raise SandboxError.invalid("amount", "differs from the amount of the token request")


def _reference_code(tx: Tx, variant: str) -> Optional[str]:
    """The Ecuador wallet's 6-digit code the payer types, or the PSE trazability code; none for the others."""
    if variant == "wallet":
        return _free_reference_code(tx)
    return digits(10) if variant == "pse" else None


def _free_reference_code(tx: Tx) -> str:
    for _ in range(_CODE_ATTEMPTS):
        code = digits(6)
        holder = tx.payable_by("reference_code", code)
        if holder is None or holder.status.is_final or holder.window.cancelled:  # no transfer payable by it
            return code
    raise SandboxError(503, "NO_FREE_CODE", "no free 6-digit reference code: start a fresh sandbox database")


def routes(context: Context) -> list[Route]:
    api = TransferApi(context)
    return [
        api_route(context, "GET", "/transfer/v1/bankList", KeyRule.PUBLIC, api.bank_list),
        api_route(context, "POST", "/transfer/v1/tokens", KeyRule.PUBLIC, api.create_token, "TransferTokenRequest"),
        api_route(context, "POST", "/transfer/v1/init", KeyRule.PRIVATE, api.init, "TransferInitRequest"),
        api_route(context, "GET", "/transfer/v1/status/{token}", KeyRule.PRIVATE, api.status),
        api_route(context, "GET", "/status/{token}", KeyRule.EITHER, api.status),
        api_route(context, "PATCH", "/transfer/v1/cancel/{token}", KeyRule.PRIVATE, api.cancel),
    ]
