"""The sandbox's state in SQLite: tokens, transfers, card charges and the webhook outbox.

One connection, shared by the server's event loop and the webhook dispatcher under a lock
(each statement takes microseconds). On a file, the journal is WAL with ``synchronous=NORMAL``:
a committed transaction survives the process being killed (SIGKILL), which is what the outbox
promises. A state change and the webhook it causes are written in one transaction
(:meth:`Store.write`), so a webhook is never lost nor sent for a change that did not happen.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Optional, Union

from .jsontext import dumps
from .states import PaymentWindow, TransferStatus

__all__ = ["CardToken", "Charge", "OutboxEntry", "Store", "Transfer", "TransferToken", "Tx"]

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
CREATE INDEX IF NOT EXISTS transfers_clabe ON transfers (clabe) WHERE clabe IS NOT NULL;
CREATE INDEX IF NOT EXISTS transfers_code ON transfers (reference_code) WHERE reference_code IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_due ON outbox (next_attempt_at) WHERE delivered_at IS NULL;
CREATE INDEX IF NOT EXISTS charges_ticket ON charges (ticket_number);
CREATE INDEX IF NOT EXISTS outbox_pending_by_transfer ON outbox (token, created) WHERE delivered_at IS NULL;
"""
_SETTLE_INDEX = "CREATE INDEX IF NOT EXISTS transfers_settle ON transfers (settle_at) WHERE settle_at IS NOT NULL"
_NEW_COLUMNS = (("transfers", "settle_at", "REAL"), ("charges", "amount", "TEXT"), ("charges", "reversal", "TEXT"))
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


_TRANSFER_COLUMNS = (
    "token, reference, country, variant, status, currency, amount, ticket_number, created, updated,"
    " cancelled, locked, expires_at, document_number, callback_url, clabe, reference_code, metadata, settle_at"
)
_OUTBOX_COLUMNS = "id, token, body, created, attempts, next_attempt_at, delivered_at, last_error"
# Statements are assembled from these constant column lists only; values always travel as parameters.
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
        amount=json.loads(row[6]),
        ticket_number=row[7],
        created=row[8],
        updated=row[9],
        window=PaymentWindow(cancelled=bool(row[10]), locked=bool(row[11]), expires_at=row[12]),
        document_number=row[13],
        callback_url=row[14],
        clabe=row[15],
        reference_code=row[16],
        metadata=json.loads(row[17]) if row[17] is not None else None,
        settle_at=row[18],
    )


def _outbox(row: tuple[Any, ...]) -> OutboxEntry:
    return OutboxEntry(row[0], row[1], bytes(row[2]), row[3], row[4], row[5], row[6], row[7])


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
        return None if row is None else TransferToken(row[0], json.loads(row[1]), row[2], bool(row[3]))

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

    def set_status(self, token: str, status: TransferStatus, updated: float) -> None:
        self._db.execute("UPDATE transfers SET status = ?, updated = ? WHERE token = ?", (status.value, updated, token))

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

    # --- cards
    def add_card_token(self, token: str, card: Mapping[str, Any], created: float) -> None:
        self._db.execute(
            "INSERT INTO card_tokens (token, card, created) VALUES (?, ?, ?)", (token, dumps(card), created)
        )

    def card_token(self, token: str) -> Optional[CardToken]:
        row = self._db.execute("SELECT token, card, used FROM card_tokens WHERE token = ?", (token,)).fetchone()
        return None if row is None else CardToken(row[0], json.loads(row[1]), bool(row[2]))

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
        row = self._db.execute(
            "SELECT reference, kind, ticket_number, answer, created, amount, reversal FROM charges"
            " WHERE ticket_number = ?", (ticket_number,)).fetchone()
        if row is None:
            return None
        return Charge(row[0], row[1], row[2], json.loads(row[3]), row[4],
                      None if row[5] is None else json.loads(row[5]), None if row[6] is None else json.loads(row[6]))

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

    def outbox(self, limit: int) -> list[OutboxEntry]:
        rows = self._db.execute(
            f"{_SELECT_OUTBOX} ORDER BY created DESC, id LIMIT ?", (limit,)
        ).fetchall()
        return [_outbox(row) for row in rows]


class Store:
    """``Store(":memory:")`` or ``Store("sandbox.sqlite3")``; safe to share between threads."""

    def __init__(self, path: Union[str, os.PathLike[str]] = ":memory:") -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None, check_same_thread=False)
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

    @contextmanager
    def write(self) -> Iterator[Tx]:
        """One write transaction: every statement inside commits together or not at all."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield Tx(self._db)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextmanager
    def read(self) -> Iterator[Tx]:
        with self._lock:
            yield Tx(self._db)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __repr__(self) -> str:
        return f"Store({self.path!r})"
