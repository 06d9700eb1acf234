"""What the sandbox holds, listed (private key): transfers, one transfer whole, card charges, and the access log.

Listings are newest first, ``limit`` items a page (1 to :data:`MAX_LIMIT`, default :data:`DEFAULT_LIMIT`), and
``nextCursor`` (``null`` on the last page) is passed back as ``cursor`` for the next one; filters are exact
values, each checked (an unknown value is a 400 naming the parameter, not an empty page).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from starlette.responses import Response
from starlette.routing import Route

from .access_log import FEED_PATH
from .auth import KeyRule
from .cards import CHARGE_KINDS, charge_record
from .context import Context
from .endpoint import Call, api_route, json_reply
from .errors import SandboxError
from .records import feed_attempt_item, history_item, request_item, transfer_item, webhook_item
from .settlement import settle_due
from .states import TransferStatus
from .store import Page, Tx

__all__ = ["COUNTRIES", "DEFAULT_LIMIT", "MAX_LIMIT", "REQUEST_KINDS", "REQUEST_METHODS", "TRANSFER_FLOWS", "Listing",
           "listing", "routes", "settled_transfer_detail", "transfer_detail"]

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
_CURSOR_DIGITS = 18
TRANSFER_FLOWS = ("clabe", "bank", "wallet", "qr", "pse")
COUNTRIES = ("MX", "EC", "CO")
REQUEST_KINDS = ("api", "terminal", "page", "cdn")
REQUEST_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
_STATUS_WORDS = {status.value: status.value for status in TransferStatus} | {
    status.webhook_status: status.value for status in TransferStatus}
"""A status filter takes the spec's word (``PAID``) or the service's (``approvedTransaction``)."""
_DETAIL_ITEMS = 200


@dataclass(frozen=True)
class Listing:
    """A listing's query: page size, cursor and filters (column -> value), checked."""

    limit: int
    cursor: Optional[str]
    filters: dict[str, Optional[str]]


def _choice(query: Mapping[str, str], name: str, allowed: Sequence[str]) -> Optional[str]:
    value = query.get(name)
    if value is not None and value not in allowed:
        raise SandboxError.invalid(name, f"must be one of {', '.join(allowed)}")
    return value


def listing(query: Mapping[str, str], choices: Mapping[str, Sequence[str]]) -> Listing:
    """``limit``, ``cursor`` and the filters named in ``choices`` from a query string; a 400 names a bad one."""
    text = query.get("limit", str(DEFAULT_LIMIT))
    if not (text.isascii() and text.isdigit() and len(text) <= 4 and 1 <= int(text) <= MAX_LIMIT):
        raise SandboxError.invalid("limit", f"must be a whole number from 1 to {MAX_LIMIT}")
    cursor = query.get("cursor")
    if cursor is not None and not (cursor.isascii() and cursor.isdigit() and len(cursor) <= _CURSOR_DIGITS):
        raise SandboxError.invalid("cursor", "must be the nextCursor of an earlier page")
    return Listing(int(text), cursor, {name: _choice(query, name, allowed) for name, allowed in choices.items()})


def _page(items: list[Any], page: Page) -> dict[str, Any]:
    return {"items": items, "nextCursor": page.next_cursor}


def transfer_detail(tx: Tx, token: str, now: float) -> Optional[dict[str, Any]]:
    """One transfer: its status, history, the requests that concern it and its webhooks with their deliveries."""
    transfer = tx.transfer(token)
    if transfer is None:
        return None
    entries = tx.outbox(_DETAIL_ITEMS, token=token)
    attempts = tx.attempts([entry.id for entry in entries])
    requests = tx.requests(_DETAIL_ITEMS, token=token).items
    token_request = tx.transfer_token(token)
    return {
        "transfer": transfer_item(transfer, now),
        "tokenRequest": None if token_request is None else dict(token_request.request),
        "history": [history_item(entry) for entry in tx.history(token)],
        "requests": [request_item(record) for record in requests],
        "webhooks": [webhook_item(entry, attempts) for entry in entries],
    }


def settled_transfer_detail(context: Context, token: str) -> Optional[dict[str, Any]]:
    """:func:`transfer_detail` as a status query would find it: what was due to settle is settled first."""
    settle_due(context, token)
    with context.store.read(recorded_requests=True) as tx:
        return transfer_detail(tx, token, context.clock.now())


class Listings:
    def __init__(self, context: Context) -> None:
        self._context = context

    async def transfers(self, call: Call) -> Response:
        query = listing(call.request.query_params, {"status": tuple(_STATUS_WORDS), "country": COUNTRIES,
                                                    "flow": TRANSFER_FLOWS})
        settle_due(self._context)
        status = query.filters["status"]
        with self._context.store.read() as tx:
            page = tx.transfers(query.limit, query.cursor, status=None if status is None else _STATUS_WORDS[status],
                                country=query.filters["country"], variant=query.filters["flow"])
        now = self._context.clock.now()
        return json_reply(200, _page([transfer_item(transfer, now) for transfer in page.items], page))

    async def transfer(self, call: Call) -> Response:
        detail = settled_transfer_detail(self._context, call.params["token"])
        if detail is None:
            raise SandboxError.not_found("no transfer was started with this token")
        return json_reply(200, detail)

    async def charges(self, call: Call) -> Response:
        query = listing(call.request.query_params, {"kind": CHARGE_KINDS})
        with self._context.store.read() as tx:
            page = tx.charges(query.limit, query.cursor, kind=query.filters["kind"])
        return json_reply(200, _page([{**charge_record(charge), "kind": charge.kind} for charge in page.items], page))

    async def requests(self, call: Call) -> Response:
        query = listing(call.request.query_params, {"kind": REQUEST_KINDS,
                                                    "method": REQUEST_METHODS})
        token = call.request.query_params.get("token")
        with self._context.store.read(recorded_requests=True) as tx:
            page = tx.requests(query.limit, query.cursor, token=token, **query.filters)
        return json_reply(200, {**_page([request_item(record) for record in page.items], page),
                                "notRecorded": self._context.store.dropped_requests})


def _after(query: Mapping[str, str], name: str) -> Optional[int]:
    text = query.get(name)
    if text is None:
        return None
    if not (text.isascii() and text.isdigit() and len(text) <= _CURSOR_DIGITS):
        raise SandboxError.invalid(name, "must be a cursor of an earlier answer (a whole number)")
    return int(text)


class Feed:
    """``GET /sandbox/v1/feed``: the requests and webhook attempts recorded since two cursors, oldest first, for a
    follower (``pasarela sandbox tail``). Without a cursor: none of that kind, and the cursor of now."""

    def __init__(self, context: Context) -> None:
        self._context = context

    async def feed(self, call: Call) -> Response:
        query = call.request.query_params
        limit = listing(query, {}).limit
        requests_after, attempts_after = _after(query, "requestsAfter"), _after(query, "attemptsAfter")
        with self._context.store.read(recorded_requests=True) as tx:
            records = [] if requests_after is None else tx.requests_after(requests_after, limit)
            attempts = [] if attempts_after is None else tx.attempts_after(attempts_after, limit)
            entries = {attempt.event_id: tx.outbox_entry(attempt.event_id) for attempt in attempts}
            requests_cursor = records[-1].id if records else (requests_after if requests_after is not None
                                                               else tx.last_request_id())
            attempts_cursor = attempts[-1].id if attempts else (attempts_after if attempts_after is not None
                                                                else tx.last_attempt_id())
        listed = [feed_attempt_item(attempt, entry) for attempt in attempts
                  if (entry := entries[attempt.event_id]) is not None]
        return json_reply(200, {"requests": [request_item(record) for record in records], "attempts": listed,
                                "requestsCursor": requests_cursor, "attemptsCursor": attempts_cursor,
                                "webhookUrl": self._context.webhook_target.url})


def routes(context: Context) -> list[Route]:
    listings = Listings(context)
    return [
        api_route(context, "GET", "/sandbox/v1/transfers", KeyRule.PRIVATE, listings.transfers),
        api_route(context, "GET", "/sandbox/v1/transfers/{token}", KeyRule.PRIVATE, listings.transfer),
        api_route(context, "GET", "/sandbox/v1/charges", KeyRule.PRIVATE, listings.charges),
        api_route(context, "GET", "/sandbox/v1/requests", KeyRule.PRIVATE, listings.requests),
        api_route(context, "GET", FEED_PATH, KeyRule.PRIVATE, Feed(context).feed),
    ]
