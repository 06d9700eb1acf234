"""The one error the sandbox's handlers raise: an HTTP status and the JSON body the caller gets.

Every refusal has ``code`` and ``message``; a schema error also names the ``field`` (its wire
path, ``amount.subtotalIva``). Messages never quote a key, a secret or a card number.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..errors import reduce_error

__all__ = ["SandboxError"]


class SandboxError(Exception):
    def __reduce__(self) -> tuple[Callable[..., BaseException], tuple[Any, ...]]:
        return reduce_error(self)  # (pickles as it is: pasarela.errors.reduce_error)

    def __init__(self, status: int, code: str, message: str, *, field: Optional[str] = None) -> None:
        super().__init__(f"HTTP {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.field = field

    @property
    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field is not None:
            body["field"] = self.field
        return body

    @classmethod
    def invalid(cls, field: str, reason: str) -> SandboxError:
        """400 naming the field that breaks the schema or a rule of the spec."""
        return cls(400, "INVALID_REQUEST", f"{field}: {reason}", field=field)

    @classmethod
    def not_found(cls, what: str) -> SandboxError:
        return cls(404, "NOT_FOUND", what)

    @classmethod
    def conflict(cls, code: str, message: str) -> SandboxError:
        return cls(409, code, message)
