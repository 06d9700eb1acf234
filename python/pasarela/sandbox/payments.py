"""The payer's side of a transfer: paying the CLABE, the wallet, the QR or at the bank portal.

Completing a payment moves an initialized transfer to PAID or rejected (:mod:`.states`) and queues
its webhook in the same transaction. Without an explicit outcome the spec's test rule decides:
documentNumber 999999990 is declined, anything else approved.
"""

from __future__ import annotations

from typing import Optional

from .context import Context
from .errors import SandboxError
from .scenarios import Outcome, document_outcome
from .states import complete
from .store import Transfer, Tx
from .webhooks import enqueue_event

__all__ = ["expire", "find_payable", "pay"]


def find_payable(tx: Tx, *, token: Optional[str] = None, clabe: Optional[str] = None,
                 reference_code: Optional[str] = None) -> Transfer:
    """The transfer the payer means, by its token, the CLABE shown to them or the wallet's 6-digit code."""
    if token is not None:
        found = tx.transfer(token)
    elif clabe is not None:
        found = tx.payable_by("clabe", clabe)
    elif reference_code is not None:
        found = tx.payable_by("reference_code", reference_code)
    else:
        raise SandboxError.invalid("token", "is required (or clabe, or referenceCode)")
    if found is None:
        raise SandboxError.not_found("no transfer to pay matches")
    return found


def pay(context: Context, transfer_token: str, outcome: Optional[Outcome], cause: str = "payer") -> Transfer:
    """Complete the payment of the transfer of ``transfer_token``; returns the transfer as it now is. ``cause`` goes
    into its history (the payer, or the dashboard acting for them)."""
    now = context.clock.now()
    with context.store.write() as tx:
        transfer = find_payable(tx, token=transfer_token)
        final = complete(transfer.status, transfer.window, outcome or document_outcome(transfer.document_number), now)
        tx.set_status(transfer.token, final, now, cause)
        enqueue_event(tx, transfer, final, now)
        updated = tx.transfer(transfer.token)
    context.webhook_queued()
    assert updated is not None  # written in this very transaction
    return updated


def expire(context: Context, transfer_token: str, cause: str = "dashboard") -> Transfer:
    """End the payment window of a pending transfer now (``expiredTransaction``: the payer can no longer pay, it no
    longer settles by itself); 404 for an unknown token, 409 when it is not pending."""
    now = context.clock.now()
    with context.store.write() as tx:
        transfer = tx.transfer(transfer_token)
        if transfer is None:
            raise SandboxError.not_found("no transfer was started with this token")
        if transfer.status.is_final or transfer.window.qr_status(now) != "valid":
            raise SandboxError.conflict("NOT_PENDING", "only a transfer that is pending (initialized, not "
                                                       "cancelled nor expired) can expire")
        tx.expire_transfer(transfer_token, now, cause)
        updated = tx.transfer(transfer_token)
    assert updated is not None  # written in this very transaction
    return updated
