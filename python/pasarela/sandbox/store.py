"""The sandbox's state in SQLite: tokens, transfers, card charges and the webhook outbox.

One connection, shared by the server's event loop and the webhook dispatcher under a lock
(each statement takes microseconds). On a file, the journal is WAL with ``synchronous=NORMAL``:
a committed transaction survives the process being killed (SIGKILL), which is what the outbox
promises. A state change and the webhook it causes are written in one transaction
(:meth:`Store.write`), so a webhook is never lost nor sent for a change that did not happen.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional, Union

from .._closing import ClosesOnExit
from .jsontext import dumps, loads
from .states import PaymentWindow, TransferStatus

__all__ = ["Attempt", "CardToken", "Charge", "HistoryEntry", "LastDelivery", "LoggedCall", "NewRequest", "OutboxEntry",
           "Page", "RequestRecord", "Store", "Transfer", "TransferLife", "TransferToken", "Tx", "request_row"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS transfer_tokens (
    token TEXT PRIMARY KEY,
    request TEXT NOT NULL,
    created REAL NOT NULL,
    used INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS transfers (
    token TEXT PRIMARY KEY,
    reference TEXT NOT NULL UNIQUE,
    country TEXT NOT NULL,
    variant TEXT NOT NULL,
    status TEXT NOT NULL,
    currency TEXT NOT NULL,
    amount TEXT NOT NULL,
    ticket_number TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    cancelled INTEGER NOT NULL DEFAULT 0,
    locked INTEGER NOT NULL DEFAULT 0,
    expires_at REAL,
    document_number TEXT,
    callback_url TEXT,
    clabe TEXT,
    reference_code TEXT,
    metadata TEXT,
    settle_at REAL
);
CREATE TABLE IF NOT EXISTS card_tokens (
    token TEXT PRIMARY KEY,
    card TEXT NOT NULL,
    created REAL NOT NULL,
    used INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS charges (
    reference TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    ticket_number TEXT NOT NULL,
    answer TEXT NOT NULL,
    created REAL NOT NULL,
    amount TEXT,
    reversal TEXT
);
CREATE TABLE IF NOT EXISTS outbox (
    id TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    body BLOB NOT NULL,
    created REAL NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,
    delivered_at REAL,
    last_error TEXT
);
CREATE TABLE IF NOT EXISTS transfer_history (
    token TEXT NOT NULL,
    at REAL NOT NULL,
    state TEXT NOT NULL,
    cause TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS webhook_attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL,
    at REAL NOT NULL,
    url TEXT NOT NULL,
    headers TEXT NOT NULL,
    status INTEGER,
    latency_ms REAL NOT NULL,
    error TEXT
);
CREATE TABLE IF NOT EXISTS requests (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    method TEXT NOT NULL,
    path TEXT NOT NULL,
    status INTEGER NOT NULL,
    ms REAL NOT NULL,
    key TEXT NOT NULL,
    token TEXT,
    headers TEXT NOT NULL,
    body TEXT,
    response TEXT,
    verdict TEXT
);
CREATE TABLE IF NOT EXISTS idempotency (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    request TEXT NOT NULL,
    created REAL NOT NULL,
    status INTEGER,
    media_type TEXT,
    body BLOB,
    PRIMARY KEY (scope, key)
);
CREATE INDEX IF NOT EXISTS idempotency_by_age ON idempotency (created);
CREATE INDEX IF NOT EXISTS history_by_transfer ON transfer_history (token, at);
CREATE INDEX IF NOT EXISTS attempts_by_event ON webhook_attempts (event_id, id);
CREATE INDEX IF NOT EXISTS requests_by_token ON requests (token) WHERE token IS NOT NULL;
CREATE INDEX IF NOT EXISTS transfers_clabe ON transfers (clabe) WHERE clabe IS NOT NULL;
CREATE INDEX IF NOT EXISTS transfers_code ON transfers (reference_code) WHERE reference_code IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_due ON outbox (next_attempt_at) WHERE delivered_at IS NULL;
CREATE INDEX IF NOT EXISTS charges_ticket ON charges (ticket_number);
CREATE INDEX IF NOT EXISTS outbox_pending_by_transfer ON outbox (token, created) WHERE delivered_at IS NULL;
"""
_TABLES = ("transfer_tokens", "transfers", "card_tokens", "charges", "outbox", "transfer_history",
           "webhook_attempts", "requests", "idempotency")
"""Every table of :data:`_SCHEMA`, in the order :meth:`Store.clear` empties them."""
_log = logging.getLogger("pasarela.sandbox")
_SETTLE_INDEX = "CREATE INDEX IF NOT EXISTS transfers_settle ON transfers (settle_at) WHERE settle_at IS NOT NULL"
_NEW_COLUMNS = (("transfers", "settle_at", "REAL"), ("charges", "amount", "TEXT"), ("charges", "reversal", "TEXT"),
                ("webhook_attempts", "answer", "TEXT"), ("webhook_attempts", "chaos", "TEXT"),
                ("outbox", "chaos", "TEXT"))
"""Columns added since the first release: a database written by it gains them when opened."""


@dataclass(frozen=True)
class TransferToken:
    token: str
    request: Mapping[str, Any]
    """The token request as received (validated): currency, amount, document, callbackUrl, flow."""
    created: float
    used: bool


@dataclass(frozen=True)
class Transfer:
    token: str
    reference: str
    country: str
    """``MX``, ``EC`` or ``CO``."""
    variant: str
    """``clabe``, ``bank``, ``wallet`` or ``qr``."""
    status: TransferStatus
    currency: str
    amount: Mapping[str, Any]
    ticket_number: str
    created: float
    updated: float
    window: PaymentWindow
    document_number: Optional[str]
    callback_url: Optional[str]
    clabe: Optional[str]
    reference_code: Optional[str]
    """The Ecuador wallet's 6-digit code, or the 10-digit trazability code of a Colombia PSE transfer."""
    metadata: Optional[Mapping[str, Any]]
    settle_at: Optional[float] = None
    """When the transfer settles by itself if the payer has not paid (``None``: only by the payer)."""


@dataclass(frozen=True)
class CardToken:
    token: str
    card: Mapping[str, Any]
    """What a charge needs to know of the card: BIN, last four, network-token data (never the number)."""
    used: bool


@dataclass(frozen=True)
class Charge:
    reference: str
    kind: str
    """``charge``, ``preAuthorization`` or ``tokenless``."""
    ticket_number: str
    answer: Mapping[str, Any]
    """What the charge call answered."""
    created: float
    amount: Optional[Mapping[str, Any]]
    reversal: Optional[Mapping[str, Any]]
    """What the void or refund answered (``None`` while the charge stands)."""


@dataclass(frozen=True)
class OutboxEntry:
    id: str
    token: str
    body: bytes
    created: float
    attempts: int
    next_attempt_at: float
    delivered_at: Optional[float]
    last_error: Optional[str]
    chaos: Optional[str] = None
    """The delivery chaos the dispatcher chose for this event on purpose (``late``: its first attempt held back)."""


@dataclass(frozen=True)
class HistoryEntry:
    """One step of a transfer's life: ``state`` (``initialized``, ``PAID``, ``rejected``, ``cancelled``,
    ``expired``) reached at ``at`` because of ``cause`` (``init``, ``payer``, ``scenario``, ``settled``,
    ``cancel``, ``dashboard``...)."""

    at: float
    state: str
    cause: str


@dataclass(frozen=True)
class Attempt:
    """One delivery attempt of a webhook: what was sent (the headers; the body is the event's) and what came back."""

    id: int
    event_id: str
    at: float
    url: str
    headers: Mapping[str, str]
    status: Optional[int]
    """The receiver's HTTP status; ``None`` when it did not answer."""
    latency_ms: float
    error: Optional[str]
    answer: Optional[str] = None
    """The first bytes of the receiver's answer as text (secrets and card numbers masked); ``None``: no answer."""
    chaos: Optional[str] = None
    """What the sandbox did on purpose with this attempt (:mod:`.chaos`): ``duplicate``, ``concurrent``, ``reorder``,
    ``late``; ``None``: a plain delivery."""


@dataclass(frozen=True)
class NewRequest:
    """A request the access log hands to :meth:`Store.record_request`, headers and body already redacted."""

    at: float
    kind: str
    """``api`` (the service's API and the simulator's), ``terminal``, ``page`` (payer pages) or ``cdn``."""
    method: str
    path: str
    status: int
    ms: float
    key: str
    """Which merchant key the request carried: ``public``, ``private``, ``none`` or ``wrong`` (never the value)."""
    token: Optional[str]
    """The transfer or card token the request concerns, when one could be read from it."""
    headers: Mapping[str, str]
    body: Any
    response: Any
    """The answer as sent, text (the sandbox's answers hold no secret); read back, JSON is parsed."""
    verdict: Optional[str]
    """Terminal requests: ``valid`` or the AUTH-001 cause :func:`pasarela.diagnose` names."""


@dataclass(frozen=True)
class RequestRecord(NewRequest):
    """A request of the access log as stored: its number there (evidence ``request:<id>``)."""

    id: int = 0


class LoggedCall(NamedTuple):
    """A request of the access log as the certification reads it: no headers, no bodies; the answer of a refusal
    (400) only, the one answer it reads (thousands of rows: a tuple, each JSON column left unread)."""

    id: int
    method: str
    path: str
    status: int
    token: Optional[str]
    refusal: Optional[Mapping[str, Any]]
    """The answer of a 400 (``field``, ``message``); ``None`` for any other status."""


class TransferLife(NamedTuple):
    """A transfer as the certification reads it: its flow, its payer's document, when it began and stopped being
    initialized (final, cancelled or expired; ``None``: it has not)."""

    token: str
    variant: str
    created: float
    document_number: Optional[str]
    ended_at: Optional[float]


class LastDelivery(NamedTuple):
    """The last delivery attempt of a webhook: its id (evidence ``delivery:<id>``), the status, the error."""

    id: int
    event_id: str
    status: Optional[int]
    error: Optional[str]


@dataclass(frozen=True)
class Page:
    """One page of a listing, newest first; ``next_cursor`` fetches the next one (``None``: this was the last)."""

    items: list[Any]
    next_cursor: Optional[str]


MAX_RECORDED_REQUESTS = 5_000
"""The access log keeps this many requests, the newest (the certification reads the same records)."""
_PRUNE_EVERY = 100
_REQUEST_BATCH = 64
"""Recorded requests wait in memory for the next write transaction, a read that needs them, or this many."""


_TRANSFER_COLUMNS = (
    "token, reference, country, variant, status, currency, amount, ticket_number, created, updated,"
    " cancelled, locked, expires_at, document_number, callback_url, clabe, reference_code, metadata, settle_at"
)
_OUTBOX_COLUMNS = "id, token, body, created, attempts, next_attempt_at, delivered_at, last_error, chaos"
# Statements are assembled from these constant column lists only; values always travel as parameters.
_FILTERABLE = frozenset({"status", "country", "variant", "kind", "method", "token", "path"})
_SELECT_TRANSFERS = f"SELECT {_TRANSFER_COLUMNS} FROM transfers"  # noqa: S608
_INSERT_TRANSFER = f"INSERT INTO transfers ({_TRANSFER_COLUMNS}) VALUES ({', '.join('?' * 19)})"  # noqa: S608
_SELECT_OUTBOX = f"SELECT {_OUTBOX_COLUMNS} FROM outbox"  # noqa: S608
_DUE_OUTBOX = (
    f"{_SELECT_OUTBOX} AS event WHERE delivered_at IS NULL AND next_attempt_at <= ? AND NOT EXISTS ("  # noqa: S608
    " SELECT 1 FROM outbox AS earlier WHERE earlier.token = event.token AND earlier.delivered_at IS NULL"
    " AND (earlier.created < event.created OR (earlier.created = event.created AND earlier.rowid < event.rowid)))"
    " ORDER BY next_attempt_at, created LIMIT ?"
)


def _transfer(row: tuple[Any, ...]) -> Transfer:
    return Transfer(
        token=row[0],
        reference=row[1],
        country=row[2],
        variant=row[3],
        status=TransferStatus(row[4]),
        currency=row[5],
        amount=loads(row[6]),
        ticket_number=row[7],
        created=row[8],
        updated=row[9],
        window=PaymentWindow(cancelled=bool(row[10]), locked=bool(row[11]), expires_at=row[12]),
        document_number=row[13],
        callback_url=row[14],
        clabe=row[15],
        reference_code=row[16],
        metadata=loads(row[17]) if row[17] is not None else None,
        settle_at=row[18],
    )


def _outbox(row: tuple[Any, ...]) -> OutboxEntry:
    return OutboxEntry(row[0], row[1], bytes(row[2]), row[3], row[4], row[5], row[6], row[7], row[8])


_ATTEMPT_COLUMNS = "id, event_id, at, url, headers, status, latency_ms, error, answer, chaos"
_REQUEST_COLUMNS = "id, at, kind, method, path, status, ms, key, token, headers, body, response, verdict"
_CHARGE_COLUMNS = "reference, kind, ticket_number, answer, created, amount, reversal"


def _attempt(row: tuple[Any, ...]) -> Attempt:
    return Attempt(row[0], row[1], row[2], row[3], loads(row[4]), row[5], row[6], row[7], row[8], row[9])


def _request(row: tuple[Any, ...]) -> RequestRecord:
    return RequestRecord(row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], loads(row[9]),
                         None if row[10] is None else loads(row[10]), _answer(row[11]), row[12], id=row[0])


def _answer(text: Optional[str]) -> Any:
    """A recorded answer: JSON as its value, anything else (a page, a note) as the text."""
    if text is None:
        return None
    try:
        return loads(text)
    except (ValueError, RecursionError):
        return text


def _earliest(*moments: Optional[float]) -> Optional[float]:
    return min((moment for moment in moments if moment is not None), default=None)


def _refusal(text: str) -> Optional[Mapping[str, Any]]:
    answer = _answer(text)
    return answer if isinstance(answer, Mapping) else None


def _charge(row: tuple[Any, ...]) -> Charge:
    return Charge(row[0], row[1], row[2], loads(row[3]), row[4],
                  None if row[5] is None else loads(row[5]), None if row[6] is None else loads(row[6]))


_INSERT_REQUEST = (f"INSERT INTO requests ({_REQUEST_COLUMNS.removeprefix('id, ')})"  # noqa: S608
                   " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")


def request_row(record: NewRequest) -> tuple[Any, ...]:
    """The row of ``record``, its JSON written now: ValueError (or TypeError) when a value cannot be written."""
    return (float(record.at), record.kind, record.method, record.path, int(record.status), float(record.ms),
            record.key, record.token, dumps(dict(record.headers)), None if record.body is None else dumps(record.body),
            record.response, record.verdict)


def _cursor_value(cursor: Optional[str]) -> Optional[int]:
    """A listing's cursor is the row number of the last item shown (checked by the caller: digits only)."""
    return None if cursor is None else int(cursor)


class Tx:
    """The statements of one transaction (from :meth:`Store.read` or :meth:`Store.write`)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    # --- transfer tokens
    def add_transfer_token(self, token: str, request: Mapping[str, Any], created: float) -> None:
        self._db.execute(
            "INSERT INTO transfer_tokens (token, request, created) VALUES (?, ?, ?)", (token, dumps(request), created)
        )

    def transfer_token(self, token: str) -> Optional[TransferToken]:
        row = self._db.execute(
            "SELECT token, request, created, used FROM transfer_tokens WHERE token = ?", (token,)
        ).fetchone()
        return None if row is None else TransferToken(row[0], loads(row[1]), row[2], bool(row[3]))

    def use_transfer_token(self, token: str) -> None:
        self._db.execute("UPDATE transfer_tokens SET used = 1 WHERE token = ?", (token,))

    # --- transfers
    def add_transfer(self, transfer: Transfer) -> None:
        window = transfer.window
        self._db.execute(
            _INSERT_TRANSFER,
            (
                transfer.token, transfer.reference, transfer.country, transfer.variant, transfer.status.value,
                transfer.currency, dumps(transfer.amount), transfer.ticket_number, transfer.created,
                transfer.updated, int(window.cancelled), int(window.locked), window.expires_at,
                transfer.document_number, transfer.callback_url, transfer.clabe, transfer.reference_code,
                None if transfer.metadata is None else dumps(transfer.metadata), transfer.settle_at,
            ),
        )
        self.add_history(transfer.token, transfer.created, transfer.status.value, "init")

    def transfer(self, token: str) -> Optional[Transfer]:
        row = self._db.execute(f"{_SELECT_TRANSFERS} WHERE token = ?", (token,)).fetchone()
        return None if row is None else _transfer(row)

    def payable_by(self, column: str, value: str) -> Optional[Transfer]:
        """The transfer whose ``clabe`` or ``reference_code`` is ``value``: the newest initialized, not cancelled
        one (the payer pays what they were shown; a 6-digit code is reused once its transfer has ended), else
        the newest one, final or cancelled, so that paying it is refused as for its token (409), not 404."""
        if column not in ("clabe", "reference_code"):
            raise ValueError(f"transfers are not looked up by {column}")
        row = self._db.execute(
            f"{_SELECT_TRANSFERS} WHERE {column} = ? ORDER BY (status = ? AND cancelled = 0) DESC, created DESC"
            " LIMIT 1",
            (value, TransferStatus.INITIALIZED.value),
        ).fetchone()
        return None if row is None else _transfer(row)

    def set_status(self, token: str, status: TransferStatus, updated: float, cause: str) -> None:
        self._db.execute("UPDATE transfers SET status = ?, updated = ? WHERE token = ?", (status.value, updated, token))
        self.add_history(token, updated, status.value, cause)

    def expire_transfer(self, token: str, at: float, cause: str = "dashboard") -> None:
        """End the transfer's payment window now: the payer can no longer pay it (a new token and init are needed)."""
        self._db.execute("UPDATE transfers SET expires_at = ?, settle_at = NULL, updated = ? WHERE token = ?",
                         (at, at, token))
        self.add_history(token, at, "expired", cause)

    def add_history(self, token: str, at: float, state: str, cause: str) -> None:
        self._db.execute("INSERT INTO transfer_history (token, at, state, cause) VALUES (?, ?, ?, ?)",
                         (token, at, state, cause))

    def history(self, token: str) -> list[HistoryEntry]:
        rows = self._db.execute("SELECT at, state, cause FROM transfer_history WHERE token = ? ORDER BY at, rowid",
                                (token,)).fetchall()
        return [HistoryEntry(*row) for row in rows]

    def transfers(self, limit: int, cursor: Optional[str] = None, **equal: Optional[str]) -> Page:
        """Transfers newest first; ``equal`` filters columns (``status``, ``country``, ``variant``) by value."""
        return self._page(f"SELECT rowid, {_TRANSFER_COLUMNS} FROM transfers", equal, limit, cursor,  # noqa: S608
                          lambda row: _transfer(row[1:]))

    def search_transfers(self, text: str, limit: int) -> list[Transfer]:
        """Transfers whose token, transaction reference, ticket number, document number, CLABE or reference code is
        ``text``, or (token, reference, ticket) starts with it; newest first."""
        prefix = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self._db.execute(
            f"{_SELECT_TRANSFERS} WHERE ? IN (token, reference, ticket_number, document_number, clabe, reference_code)"
            " OR token LIKE ? ESCAPE '\\' OR reference LIKE ? ESCAPE '\\' OR ticket_number LIKE ? ESCAPE '\\'"
            " ORDER BY created DESC, rowid DESC LIMIT ?", (text, prefix, prefix, prefix, limit)).fetchall()
        return [_transfer(row) for row in rows]

    def search_charges(self, text: str, limit: int) -> list[Charge]:
        """Card charges whose ticket number or transaction reference is ``text``; newest first."""
        rows = self._db.execute(f"SELECT {_CHARGE_COLUMNS} FROM charges WHERE ? IN (ticket_number, reference)"  # noqa: S608
                                " ORDER BY created DESC LIMIT ?", (text, limit)).fetchall()
        return [_charge(row) for row in rows]

    def all_transfers(self) -> list[Transfer]:
        return [_transfer(row) for row in self._db.execute(f"{_SELECT_TRANSFERS} ORDER BY created, rowid")]

    def transfer_lives(self) -> list[TransferLife]:
        """Every transfer, oldest first, with when it ended (one statement: the history is indexed by transfer)."""
        rows = self._db.execute(
            "SELECT token, variant, created, document_number, expires_at, (SELECT min(at) FROM transfer_history"
            " WHERE transfer_history.token = transfers.token AND state != 'initialized')"
            " FROM transfers ORDER BY created, rowid")
        return [TransferLife(token, variant, created, document, _earliest(expires_at, left))
                for token, variant, created, document, expires_at, left in rows]

    def transfer_tokens(self) -> list[TransferToken]:
        rows = self._db.execute("SELECT token, request, created, used FROM transfer_tokens ORDER BY created, rowid")
        return [TransferToken(row[0], loads(row[1]), row[2], bool(row[3])) for row in rows]

    def _page(self, select: str, equal: Mapping[str, Optional[str]], limit: int, cursor: Optional[str],
              make: Any, rowid: str = "rowid") -> Page:
        conditions: list[str] = []
        values: list[Any] = []
        for column, value in equal.items():
            if column not in _FILTERABLE:
                raise ValueError(f"no filter on {column}")
            if value is not None:
                conditions.append(f"{column} = ?")
                values.append(value)
        after = _cursor_value(cursor)
        if after is not None:
            conditions.append(f"{rowid} < ?")
            values.append(after)
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        rows = self._db.execute(f"{select}{where} ORDER BY {rowid} DESC LIMIT ?", (*values, limit + 1)).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        return Page([make(row) for row in rows], str(rows[-1][0]) if more else None)

    def due_settlements(self, now: float, token: Optional[str] = None) -> list[Transfer]:
        """Initialized transfers, not cancelled nor locked, whose ``settle_at`` has come (``token``: that one only)."""
        query = (f"{_SELECT_TRANSFERS} WHERE settle_at IS NOT NULL AND settle_at <= ? AND status = ? AND cancelled = 0"
                 " AND locked = 0")
        values: tuple[Any, ...] = (now, TransferStatus.INITIALIZED.value)
        if token is not None:
            query, values = query + " AND token = ?", (*values, token)
        return [_transfer(row) for row in self._db.execute(query + " ORDER BY settle_at", values).fetchall()]

    def next_settle_at(self) -> Optional[float]:
        row = self._db.execute(
            "SELECT MIN(settle_at) FROM transfers WHERE settle_at IS NOT NULL AND status = ? AND cancelled = 0"
            " AND locked = 0", (TransferStatus.INITIALIZED.value,)).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def cancel_transfer(self, token: str, updated: float) -> None:
        self._db.execute("UPDATE transfers SET cancelled = 1, updated = ? WHERE token = ?", (updated, token))
        self.add_history(token, updated, "cancelled", "cancel")

    # --- cards
    def add_card_token(self, token: str, card: Mapping[str, Any], created: float) -> None:
        self._db.execute(
            "INSERT INTO card_tokens (token, card, created) VALUES (?, ?, ?)", (token, dumps(card), created)
        )

    def card_token(self, token: str) -> Optional[CardToken]:
        row = self._db.execute("SELECT token, card, used FROM card_tokens WHERE token = ?", (token,)).fetchone()
        return None if row is None else CardToken(row[0], loads(row[1]), bool(row[2]))

    def use_card_token(self, token: str) -> None:
        self._db.execute("UPDATE card_tokens SET used = 1 WHERE token = ?", (token,))

    def add_charge(
        self, reference: str, kind: str, ticket_number: str, answer: Mapping[str, Any], created: float,
        amount: Mapping[str, Any],
    ) -> None:
        self._db.execute(
            "INSERT INTO charges (reference, kind, ticket_number, answer, created, amount) VALUES (?, ?, ?, ?, ?, ?)",
            (reference, kind, ticket_number, dumps(answer), created, dumps(amount)),
        )

    def charge(self, ticket_number: str) -> Optional[Charge]:
        row = self._db.execute(f"SELECT {_CHARGE_COLUMNS} FROM charges WHERE ticket_number = ?",  # noqa: S608
                               (ticket_number,)).fetchone()
        return None if row is None else _charge(row)

    def charges(self, limit: int, cursor: Optional[str] = None, kind: Optional[str] = None) -> Page:
        return self._page(f"SELECT rowid, {_CHARGE_COLUMNS} FROM charges", {"kind": kind}, limit, cursor,  # noqa: S608
                          lambda row: _charge(row[1:]))

    def reverse_charge(self, ticket_number: str, reversal: Mapping[str, Any]) -> bool:
        """Record the void or refund of a standing charge; False when it was already reversed."""
        changed = self._db.execute("UPDATE charges SET reversal = ? WHERE ticket_number = ? AND reversal IS NULL",
                                   (dumps(reversal), ticket_number)).rowcount
        return changed == 1

    # --- outbox
    def enqueue(self, event_id: str, token: str, body: bytes, created: float) -> None:
        self._db.execute(
            "INSERT INTO outbox (id, token, body, created, next_attempt_at) VALUES (?, ?, ?, ?, ?)",
            (event_id, token, body, created, created),
        )

    def due(self, now: float, limit: int) -> list[OutboxEntry]:
        """Undelivered events whose time has come, each the oldest undelivered one of its transfer (a transfer's
        events go out in order: a later one waits while an earlier one is retried)."""
        rows = self._db.execute(
            _DUE_OUTBOX, (now, limit),
        ).fetchall()
        return [_outbox(row) for row in rows]

    def next_due_at(self) -> Optional[float]:
        row = self._db.execute("SELECT MIN(next_attempt_at) FROM outbox WHERE delivered_at IS NULL").fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def delivered(self, event_id: str, at: float) -> None:
        self._db.execute(
            "UPDATE outbox SET delivered_at = ?, attempts = attempts + 1, last_error = NULL WHERE id = ?",
            (at, event_id),
        )

    def failed(self, event_id: str, error: str, next_attempt_at: float) -> None:
        self._db.execute(
            "UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE id = ?",
            (error, next_attempt_at, event_id),
        )

    def hold_back(self, event_id: str, until: float, chaos: str) -> None:
        """Delay an event's first attempt on purpose (delivery chaos), saying why."""
        self._db.execute("UPDATE outbox SET next_attempt_at = ?, chaos = ? WHERE id = ?", (until, chaos, event_id))

    def outbox(self, limit: int, token: Optional[str] = None) -> list[OutboxEntry]:
        """The newest events (``token``: of that transfer only)."""
        where, values = ("", ()) if token is None else (" WHERE token = ?", (token,))
        rows = self._db.execute(
            f"{_SELECT_OUTBOX}{where} ORDER BY created DESC, rowid DESC LIMIT ?", (*values, limit)
        ).fetchall()
        return [_outbox(row) for row in rows]

    def outbox_entry(self, event_id: str) -> Optional[OutboxEntry]:
        row = self._db.execute(f"{_SELECT_OUTBOX} WHERE id = ?", (event_id,)).fetchone()
        return None if row is None else _outbox(row)

    def redeliver(self, event_id: str, now: float) -> bool:
        """Send the event again now, delivered or not (at least once: the receiver may see it twice)."""
        return self._db.execute("UPDATE outbox SET delivered_at = NULL, next_attempt_at = ? WHERE id = ?",
                                (now, event_id)).rowcount == 1

    def add_attempt(self, event_id: str, at: float, url: str, headers: Mapping[str, str], status: Optional[int],
                    latency_ms: float, error: Optional[str], answer: Optional[str] = None,
                    chaos: Optional[str] = None) -> int:
        """Record an attempt of an event of the outbox; 0 (nothing recorded) when the event is gone (the store
        was cleared while the attempt was under way)."""
        cursor = self._db.execute(
            "INSERT INTO webhook_attempts (event_id, at, url, headers, status, latency_ms, error, answer, chaos)"
            " SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM outbox WHERE id = ?)",
            (event_id, at, url, dumps(dict(headers)), status, latency_ms, error, answer, chaos, event_id))
        return int(cursor.lastrowid or 0) if cursor.rowcount == 1 else 0

    def attempts(self, event_ids: Optional[list[str]] = None) -> list[Attempt]:
        """The attempts of these events (``None``: of all), oldest first."""
        select = f"SELECT {_ATTEMPT_COLUMNS} FROM webhook_attempts"  # noqa: S608
        if event_ids is None:
            rows = self._db.execute(f"{select} ORDER BY id").fetchall()
        else:
            marks = ", ".join("?" * len(event_ids))
            rows = self._db.execute(f"{select} WHERE event_id IN ({marks}) ORDER BY id", event_ids).fetchall()
        return [_attempt(row) for row in rows]

    def clear(self) -> None:
        """Delete every row of every table (:meth:`Store.clear`)."""
        for table in _TABLES:
            self._db.execute(f"DELETE FROM {table}")  # noqa: S608 (a constant list of names)

    # --- Idempotency-Key (:mod:`.idempotency`)
    def idempotency_key(self, scope: str, key: str) -> Optional[tuple[str, Optional[int], Optional[str], bytes]]:
        """The request a key was taken for, and its answer (status ``None``: still running)."""
        row = self._db.execute("SELECT request, status, media_type, body FROM idempotency WHERE scope = ? AND key = ?",
                               (scope, key)).fetchone()
        return None if row is None else (row[0], row[1], row[2], bytes(row[3] or b""))

    def claim_idempotency_key(self, scope: str, key: str, request: str, now: float) -> None:
        self._db.execute("INSERT INTO idempotency (scope, key, request, created) VALUES (?, ?, ?, ?)",
                         (scope, key, request, now))

    def keep_idempotent_answer(self, scope: str, key: str, status: int, media_type: Optional[str],
                               body: bytes) -> None:
        self._db.execute("UPDATE idempotency SET status = ?, media_type = ?, body = ? WHERE scope = ? AND key = ?",
                         (status, media_type, body, scope, key))

    def forget_idempotency_key(self, scope: str, key: str) -> None:
        self._db.execute("DELETE FROM idempotency WHERE scope = ? AND key = ?", (scope, key))

    def forget_idempotency_keys(self, taken_before: float, keep_newest: int) -> None:
        """Drop the keys taken before ``taken_before`` and all but the newest ``keep_newest``."""
        self._db.execute("DELETE FROM idempotency WHERE created < ?", (taken_before,))
        self._db.execute("DELETE FROM idempotency WHERE rowid <= (SELECT MAX(rowid) FROM idempotency) - ?",
                         (keep_newest,))

    def attempts_after(self, after: int, limit: int) -> list[Attempt]:
        """The attempts recorded after attempt ``after``, oldest first (what ``pasarela sandbox tail`` follows)."""
        rows = self._db.execute(f"SELECT {_ATTEMPT_COLUMNS} FROM webhook_attempts WHERE id > ? ORDER BY id"  # noqa: S608
                                " LIMIT ?", (after, limit)).fetchall()
        return [_attempt(row) for row in rows]

    def last_attempt_id(self) -> int:
        return int(self._db.execute("SELECT COALESCE(MAX(id), 0) FROM webhook_attempts").fetchone()[0])

    def last_deliveries(self) -> list[LastDelivery]:
        """The last attempt of every webhook attempted, in the order of their first attempts."""
        rows = self._db.execute(
            "SELECT attempt.id, attempt.event_id, attempt.status, attempt.error FROM webhook_attempts AS attempt"
            " JOIN (SELECT min(id) AS first, max(id) AS last FROM webhook_attempts GROUP BY event_id) AS event"
            " ON attempt.id = event.last ORDER BY event.first")
        return [LastDelivery(*row) for row in rows]

    # --- the access log
    def requests_after(self, after: int, limit: int) -> list[RequestRecord]:
        """The requests recorded after request ``after``, oldest first."""
        rows = self._db.execute(f"SELECT {_REQUEST_COLUMNS} FROM requests WHERE id > ? ORDER BY id LIMIT ?",  # noqa: S608
                                (after, limit)).fetchall()
        return [_request(row) for row in rows]

    def last_request_id(self) -> int:
        return int(self._db.execute("SELECT COALESCE(MAX(id), 0) FROM requests").fetchone()[0])

    def add_request(self, row: tuple[Any, ...]) -> int:
        """Insert a row :func:`request_row` made; every :data:`_PRUNE_EVERY` rows, drop those past the newest
        :data:`MAX_RECORDED_REQUESTS`."""
        cursor = self._db.execute(_INSERT_REQUEST, row)
        new_id = int(cursor.lastrowid or 0)
        if new_id % _PRUNE_EVERY == 0:
            self._db.execute("DELETE FROM requests WHERE id <= ?", (new_id - MAX_RECORDED_REQUESTS,))
        return new_id

    def request(self, request_id: int) -> Optional[RequestRecord]:
        row = self._db.execute(f"SELECT {_REQUEST_COLUMNS} FROM requests WHERE id = ?",  # noqa: S608
                               (request_id,)).fetchone()
        return None if row is None else _request(row)

    def requests(self, limit: int, cursor: Optional[str] = None, **equal: Optional[str]) -> Page:
        """The access log newest first; ``equal`` filters ``kind``, ``method``, ``status``, ``token``, ``path``."""
        return self._page(f"SELECT {_REQUEST_COLUMNS} FROM requests", equal, limit, cursor, _request,  # noqa: S608
                          rowid="id")

    def logged_calls(self, kind: str) -> list[LoggedCall]:
        """Every recorded request of ``kind``, oldest first, as the certification reads them."""
        rows = self._db.execute("SELECT id, method, path, status, token, CASE status WHEN 400 THEN response END"
                                " FROM requests WHERE kind = ? ORDER BY id", (kind,))
        return [LoggedCall(id, method, path, status, token, None if refusal is None else _refusal(refusal))
                for id, method, path, status, token, refusal in rows]


class Store(ClosesOnExit):
    """``Store(":memory:")`` or ``Store("sandbox.sqlite3")``; safe to share between threads.

    It holds one SQLite connection: :meth:`close` it (or use it as ``with Store(path) as store:``). One never
    closed is closed when it is collected or at exit, without a ``ResourceWarning``, losing only the recorded
    requests still waiting in memory (as a killed sandbox does), never state."""

    def __init__(self, path: Union[str, os.PathLike[str]] = ":memory:") -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._closed = False
        self._unwritten: list[tuple[Any, ...]] = []
        self.dropped_requests = 0
        """Access-log records that could not be stored since start: each dropped alone, never blocking the rest."""
        self.version = 0
        """Counts the write transactions committed: a page showing the state knows when it is stale."""
        self._db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None, check_same_thread=False)
        try:
            self._create_schema()
        except BaseException:  # e.g. not a database: no Store to close() later, so no connection left open
            self._db.close()
            raise
        self._close_connection = weakref.finalize(self, self._db.close)

    def _create_schema(self) -> None:
        with self._lock:
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            for table, column, kind in _NEW_COLUMNS:
                present = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
                if column not in present:
                    self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            self._db.execute(_SETTLE_INDEX)
            # A request still running when the last process stopped will never answer: its key is free again.
            self._db.execute("DELETE FROM idempotency WHERE status IS NULL")

    @contextmanager
    def write(self) -> Iterator[Tx]:
        """One write transaction: every statement inside commits together or not at all. The recorded requests
        waiting in memory are written in it too (one commit for many: the access log costs every request)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                tx = Tx(self._db)
                for row in self._unwritten:
                    try:  # a failed INSERT undoes itself only: the transaction goes on
                        tx.add_request(row)
                    except (sqlite3.Error, ValueError, OverflowError) as exc:  # e.g. text SQLite cannot encode
                        self._drop(exc)
                yield tx
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            self._unwritten.clear()
            self.version += 1

    @contextmanager
    def read(self, *, recorded_requests: bool = False) -> Iterator[Tx]:
        """``recorded_requests``: the read looks at the access log, so what waits in memory is written first."""
        if recorded_requests:
            self.flush_requests()
        with self._lock:
            yield Tx(self._db)

    def flush_requests(self) -> None:
        """Write the recorded requests waiting in memory (:meth:`record_request`)."""
        if self._unwritten:
            with self.write():
                pass

    def record_request(self, record: NewRequest) -> bool:
        """Add ``record`` to the access log: kept in memory until the next write transaction, a read of the
        log, or :data:`_REQUEST_BATCH` of them (a sandbox killed loses at most those, never state).

        Its row is made now: a record that cannot be written (a value JSON cannot hold) is dropped here, counted
        in :attr:`dropped_requests` and logged, and False returned; it never reaches, hence never blocks, the
        transactions of the state (a record that failed there once failed every write after it)."""
        try:
            row = request_row(record)
        except (ValueError, TypeError, OverflowError, RecursionError) as exc:
            self.count_dropped_request(exc)
            return False
        with self._lock:
            if self._closed:  # a request answered while the sandbox shut down
                return False
            self._unwritten.append(row)
            full = len(self._unwritten) >= _REQUEST_BATCH
        if full:
            self.flush_requests()
        return True

    def count_dropped_request(self, exc: BaseException) -> None:
        """A record of the access log could not even be made (``exc``): counted and logged as one dropped."""
        with self._lock:
            self._drop(exc)

    def _drop(self, exc: BaseException) -> None:
        """(Under the lock.) One record of the access log is lost: counted and said, its content never."""
        self.dropped_requests += 1
        _log.warning("an access-log record could not be stored (%s): dropped, %d so far", type(exc).__name__,
                     self.dropped_requests)

    def clear(self) -> None:
        """Forget everything (transfers, charges, the outbox, the access log) in one transaction: what a test
        suite does between tests instead of a restart. An attempt under way while it runs is not recorded."""
        with self._lock:
            self._unwritten.clear()
            self.dropped_requests = 0
        with self.write() as tx:
            tx.clear()

    def close(self) -> None:
        """Close the database; a file's write-ahead log is checkpointed into it first (no -wal left behind)."""
        if not self._closed:
            self.flush_requests()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self.path != ":memory:":
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._close_connection()

    def __repr__(self) -> str:
        return f"Store({self.path!r})"
