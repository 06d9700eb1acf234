"""The test-environment behaviours of spec section 8, as data.

Mexico and Ecuador: the payer's ``documentNumber`` 999999990 is declined, any other approved
(applied when the payer completes the payment). Colombia QR: the scenario is chosen by
``subtotalIva0 + subtotalIva + iva`` of the init request, exactly that sum (so the mirrored form
of 2.4, 10000 + 10000, sums to 20000: generic success).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Optional

from .errors import SandboxError

__all__ = ["DECLINED_DOCUMENT_NUMBER", "ColombiaScenario", "Outcome", "colombia_scenario", "document_outcome"]

DECLINED_DOCUMENT_NUMBER = "999999990"


class Outcome(Enum):
    """How a payer's payment ends."""

    APPROVED = "approved"
    DECLINED = "declined"


@dataclass(frozen=True)
class ColombiaScenario:
    name: str
    http_status: Optional[int]
    """The status of the init answer; ``None`` for the timeout (no answer within the delay)."""
    error_code: Optional[str] = None
    error_message: Optional[str] = None
    immediate_outcome: Optional[Outcome] = None
    """Completed at once, with a webhook (10000 PAID, 12000 rejected)."""
    locked: bool = False
    """Stays initialized: the payer cannot complete it (9999, 13000)."""

    def refusal(self) -> Optional[SandboxError]:
        """The error answer of a scenario that creates no transaction (QR-CODE-0001, QR-CODE-0059)."""
        if self.error_code is None or self.http_status is None:
            return None
        return SandboxError(self.http_status, self.error_code, self.error_message or self.error_code)


_HAPPY = ColombiaScenario("paid", 201, immediate_outcome=Outcome.APPROVED)
_STAYS_INITIALIZED = ColombiaScenario("stays-initialized", 201, locked=True)
_PROCESSOR_ERROR = ColombiaScenario("processor-error", 500, "QR-CODE-0001", "Error generating the QR code")
_REJECTED = ColombiaScenario("rejected", 201, immediate_outcome=Outcome.DECLINED)
_TIMEOUT = ColombiaScenario("timeout", None, locked=True)
_OUT_OF_RANGE = ColombiaScenario("out-of-range", 400, "QR-CODE-0059", "Amount out of range")
GENERIC = ColombiaScenario("generic-success", 201)

_BY_SUM = {
    Decimal(10000): _HAPPY,
    Decimal(9999): _STAYS_INITIALIZED,
    Decimal(11000): _PROCESSOR_ERROR,
    Decimal(12000): _REJECTED,
    Decimal(13000): _TIMEOUT,
    Decimal(99999999): _OUT_OF_RANGE,
}


def colombia_scenario(subtotal_iva0: Decimal, subtotal_iva: Decimal, iva: Decimal) -> ColombiaScenario:
    return _BY_SUM.get(subtotal_iva0 + subtotal_iva + iva, GENERIC)


def document_outcome(document_number: Optional[str]) -> Outcome:
    """Mexico and Ecuador: how the payer's payment ends, by the document number of the token request."""
    return Outcome.DECLINED if document_number == DECLINED_DOCUMENT_NUMBER else Outcome.APPROVED
