"""The transfer state machine of spec section 3.

States: ``initialized``, ``PAID`` and ``rejected`` (the spec's words; the last two are final), spelled
on the wire as the service's webhooks spell them: ``initializedTransaction``, ``approvedTransaction``,
``declinedTransaction`` (:attr:`TransferStatus.webhook_status`). Transitions:

- init succeeds: (none) -> initialized;
- the payer completes the payment: initialized -> PAID or rejected, with a webhook;
- cancel while not final: 204, the state stays initialized (the spec does not show a resulting
  state) and the payment can no longer be completed (the QR is invalidated);
- cancel on a final state: 400 T023, unchanged;
- a Colombia QR unused for 10 minutes is invalid (computed from the clock, no timer runs).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional

from .errors import SandboxError
from .scenarios import Outcome

__all__ = [
    "QR_VALIDITY_SECONDS",
    "PaymentWindow",
    "TransferStatus",
    "cancel",
    "complete",
    "final_status_error",
]

QR_VALIDITY_SECONDS = 600.0


class TransferStatus(Enum):
    INITIALIZED = "initialized"
    PAID = "PAID"
    REJECTED = "rejected"

    @property
    def is_final(self) -> bool:
        return self is not TransferStatus.INITIALIZED

    @property
    def webhook_status(self) -> str:
        """The service's word (its public webhook docs), used by the webhook and the status record alike."""
        return {TransferStatus.INITIALIZED: "initializedTransaction", TransferStatus.PAID: "approvedTransaction",
                TransferStatus.REJECTED: "declinedTransaction"}[self]

    @property
    def processor_state(self) -> Optional[str]:
        """``processorState`` of a final transfer (OK / NOT_AUTHORIZED); none while initialized."""
        return {TransferStatus.PAID: "OK", TransferStatus.REJECTED: "NOT_AUTHORIZED"}.get(self)

    @classmethod
    def after(cls, outcome: Outcome) -> TransferStatus:
        return cls.PAID if outcome is Outcome.APPROVED else cls.REJECTED


def final_status_error() -> SandboxError:
    return SandboxError(400, "T023", "Transaction has a final status.")


@dataclass(frozen=True)
class PaymentWindow:
    """Whether the payer can still pay: not cancelled, not locked by a scenario, QR not expired."""

    cancelled: bool
    locked: bool
    expires_at: Optional[float]
    """Unix seconds after which a Colombia QR is invalid; ``None`` for the other variants."""

    def qr_status(self, now: float) -> str:
        if self.cancelled:
            return "cancelled"
        if self.expires_at is not None and now >= self.expires_at:
            return "expired"
        return "valid"

    def check_payable(self, now: float) -> None:
        if self.cancelled:
            raise SandboxError.conflict("PAYMENT_CANCELLED", "the transfer was cancelled: the payer can no longer pay")
        if self.expires_at is not None and now >= self.expires_at:
            raise SandboxError.conflict(
                "QR_EXPIRED", "the QR was not used within 10 minutes: a new token and a new init are required"
            )
        if self.locked:
            raise SandboxError.conflict(
                "SCENARIO_STAYS_INITIALIZED", "this test scenario keeps the transaction initialized"
            )


def complete(status: TransferStatus, window: PaymentWindow, outcome: Outcome, now: float) -> TransferStatus:
    """initialized -> PAID / rejected; anything else is refused (409)."""
    if status.is_final:
        raise SandboxError.conflict("TRANSACTION_FINAL", f"the transfer is already {status.value}")
    window.check_payable(now)
    return TransferStatus.after(outcome)


def cancel(status: TransferStatus) -> None:
    """Refuse (T023) the cancel of a final transfer; a transfer that is not final may be cancelled."""
    if status.is_final:
        raise final_status_error()
