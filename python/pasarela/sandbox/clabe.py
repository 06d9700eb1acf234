"""Mexico's CLABE: 18 digits, bank (3) + branch (3) + account (11) + a check digit.

The check digit weighs the first 17 digits 3, 7, 1, 3, 7, 1, ... and takes each product modulo
10; the digit is (10 - sum mod 10) mod 10.
"""

from __future__ import annotations

import hashlib

from ..http.redaction import passes_luhn

__all__ = ["SANDBOX_BANK", "check_digit", "is_valid", "make_clabe"]

SANDBOX_BANK = ("STP", "646", "180")
"""Bank name, bank code and branch (plaza) code of the CLABEs the sandbox hands out."""
_WEIGHTS = (3, 7, 1)


def check_digit(first17: str) -> str:
    if len(first17) != 17 or not (first17.isascii() and first17.isdigit()):
        raise ValueError("a CLABE's check digit is computed over 17 digits")
    total = sum(int(digit) * _WEIGHTS[index % 3] % 10 for index, digit in enumerate(first17))
    return str((10 - total % 10) % 10)


def is_valid(clabe: str) -> bool:
    return len(clabe) == 18 and clabe.isascii() and clabe.isdigit() and check_digit(clabe[:17]) == clabe[17]


def make_clabe(seed: str) -> str:
    """A valid CLABE at the sandbox bank whose 11-digit account number is derived from ``seed``; never one that
    passes the Luhn check, which the access log would mask as a card number (1 in 10 would)."""
    for attempt in range(100):
        digest = hashlib.sha256(f"{seed}:{attempt}".encode() if attempt else seed.encode("utf-8")).digest()
        account = int.from_bytes(digest[:8], "big") % 10**11
        first17 = f"{SANDBOX_BANK[1]}{SANDBOX_BANK[2]}{account:011d}"
        clabe = first17 + check_digit(first17)
        if not passes_luhn(clabe):
            return clabe
    raise AssertionError("100 CLABEs in a row passed the Luhn check")  # 1 chance in 10**100
