"""Transfer states (spec 3) as the service spells them, folded into four.

The spec names the states initialized (``initializedTransaction`` in ``details.status``,
"Initialized" in its guidance), PAID (approved) and rejected (declined), and leaves the others
and the status record's fields "not shown". The status is looked up in ``status``, then
``transactionStatus``, then ``details.status``; spellings are compared case-insensitively.
Anything unrecognized is :attr:`TransferState.UNKNOWN`, which is not final: a guard keeps an
order blocked rather than release it on a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any, Optional

__all__ = ["TransferState", "find_status"]


class TransferState(Enum):
    INITIALIZED = "initialized"
    APPROVED = "approved"
    REJECTED = "rejected"
    UNKNOWN = "unknown"

    @property
    def is_final(self) -> bool:
        """Approved or rejected: certification rule 6 lets the order start a new transfer."""
        return self in (TransferState.APPROVED, TransferState.REJECTED)

    @classmethod
    def of(cls, status: Optional[str]) -> TransferState:
        """The state a status string of the service means."""
        if status is None:
            return cls.UNKNOWN
        return _SPELLINGS.get(status.strip().lower(), cls.UNKNOWN)


_SPELLINGS = {
    "initialized": TransferState.INITIALIZED,
    "initializedtransaction": TransferState.INITIALIZED,
    "paid": TransferState.APPROVED,
    "approved": TransferState.APPROVED,
    "approvedtransaction": TransferState.APPROVED,
    "rejected": TransferState.REJECTED,
    "rejectedtransaction": TransferState.REJECTED,
    "declined": TransferState.REJECTED,
    "declinedtransaction": TransferState.REJECTED,
}


def find_status(raw: Mapping[str, Any]) -> Optional[str]:
    """The status string of a status record or webhook body, wherever the service put it."""
    for candidate in (raw.get("status"), raw.get("transactionStatus")):
        if isinstance(candidate, str) and candidate:
            return candidate
    details = raw.get("details")
    if isinstance(details, Mapping) and isinstance(details.get("status"), str) and details["status"]:
        return str(details["status"])
    return None
