"""The merchant key headers of spec 5.2, checked on every call that needs one.

Refusals are 401 with a body that says which header the call needs and what was wrong with it,
without ever repeating the value that was sent (it may be a real key sent to the wrong place).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from enum import Enum

from .config import SandboxConfig
from .errors import SandboxError

__all__ = ["PRIVATE_HEADER", "PUBLIC_HEADER", "KeyRule", "check_key", "same_key"]

PUBLIC_HEADER = "Public-Merchant-Id"
PRIVATE_HEADER = "Private-Merchant-Id"


class KeyRule(Enum):
    NONE = "none"
    PUBLIC = "public"
    """Token creation: the public key (the call a browser makes)."""
    PRIVATE = "private"
    """Init, status, cancel, charges and the simulator: the private key."""
    EITHER = "either"
    """``GET /status/{token}``: "merchant id header" in the spec, either key."""


def same_key(sent: str, expected: str) -> bool:
    """In constant time (the sent value may be a guess)."""
    return hmac.compare_digest(sent.encode("utf-8", "replace"), expected.encode("utf-8"))


def _unauthorized(message: str) -> SandboxError:
    return SandboxError(401, "UNAUTHORIZED", message)


def check_key(headers: Mapping[str, str], rule: KeyRule, config: SandboxConfig) -> None:
    """``headers``: a case-insensitive mapping (Starlette's)."""
    if rule is KeyRule.NONE:
        return
    public = headers.get(PUBLIC_HEADER)
    private = headers.get(PRIVATE_HEADER)
    if rule is KeyRule.EITHER:
        if (private is not None and same_key(private, config.private_key)) or (
            public is not None and same_key(public, config.public_key)
        ):
            return
        if private is None and public is None:
            raise _unauthorized(f"this call needs the {PRIVATE_HEADER} or the {PUBLIC_HEADER} header")
        raise _unauthorized(f"neither {PRIVATE_HEADER} nor {PUBLIC_HEADER} holds this sandbox's merchant key")
    if rule is KeyRule.PUBLIC:
        name, sent, expected, other = PUBLIC_HEADER, public, config.public_key, config.private_key
        role = "the public merchant key"
    else:
        name, sent, expected, other = PRIVATE_HEADER, private, config.private_key, config.public_key
        role = "the private merchant key"
    if sent is None:
        raise _unauthorized(f"this call needs the {name} header ({role})")
    if same_key(sent, expected):
        return
    if same_key(sent, other):
        wrong = "public" if rule is KeyRule.PRIVATE else "private"
        raise _unauthorized(f"{name} holds the {wrong} key: this call needs {role}")
    raise _unauthorized(f"{name} is not this sandbox's {role.removeprefix('the ')}")
