"""Transfer states (spec 3) as the service spells them, folded into four.

The spec names the states initialized (``initializedTransaction`` in ``details.status``,
"Initialized" in its guidance), PAID (approved) and rejected (declined), and leaves the others
and the status record's fields "not shown". The service's public webhook documentation spells
``status`` initializedTransaction / approvedTransaction / declinedTransaction / expiredTransaction
and ``processorState`` OK / NOT_AUTHORIZED / FAILED; clients in the wild read either. Every one of
those spellings is read here, compared case-insensitively: an expired transfer can no longer be
paid, so it counts as rejected (final, no money). The status is looked up in ``status``, then
``transactionStatus``, ``details.status`` and ``processorState``: the first recognized spelling
wins. Anything unrecognized is :attr:`TransferState.UNKNOWN`, which is not final: a guard keeps an
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
    "expired": TransferState.REJECTED,
    "expiredtransaction": TransferState.REJECTED,
    # processorState
    "ok": TransferState.APPROVED,
    "not_authorized": TransferState.REJECTED,
    "failed": TransferState.REJECTED,
}


def find_status(raw: Mapping[str, Any]) -> Optional[str]:
    """The status string of a status record or webhook body, wherever the service put it: the first
    recognized spelling, else the first string present (which then reads as UNKNOWN)."""
    details = raw.get("details")
    candidates = (raw.get("status"), raw.get("transactionStatus"),
                  details.get("status") if isinstance(details, Mapping) else None, raw.get("processorState"))
    present = [candidate for candidate in candidates if isinstance(candidate, str) and candidate]
    for candidate in present:
        if TransferState.of(candidate) is not TransferState.UNKNOWN:
            return candidate
    return present[0] if present else None
