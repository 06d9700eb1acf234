"""Reading typed fields out of a JSON object from the service, with a clear error on a wrong shape.

A missing member or one of the wrong type raises :class:`~pasarela.errors.ResponseShapeError`
naming its path (``$.network.tmsBin``) at parse time, instead of an AttributeError later.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Optional, TypeVar, Union

from ..errors import ResponseShapeError

__all__ = ["ResponseReader", "TokenReply"]

_Token = TypeVar("_Token", bound="TokenReply")


class ResponseReader:
    """A JSON object and its path; each accessor checks one member."""

    def __init__(self, raw: Mapping[str, Any], path: str = "$") -> None:
        self.raw = raw
        self.path = path

    @classmethod
    def of(cls, value: object, path: str = "$") -> ResponseReader:
        if not isinstance(value, Mapping):
            raise ResponseShapeError(path, f"expected a JSON object, got {_kind(value)}")
        return cls(value, path)

    def where(self, key: str) -> str:
        return f"{self.path}.{key}"

    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None

    def _get(self, key: str, expected: Union[type, tuple[type, ...]], label: str) -> Any:
        value = self.raw.get(key)
        if value is None:
            raise ResponseShapeError(self.where(key), f"missing (expected {label})")
        if isinstance(value, bool) != (expected is bool) or not isinstance(value, expected):
            raise ResponseShapeError(self.where(key), f"expected {label}, got {_kind(value)}")
        return value

    def text(self, key: str) -> str:
        value: str = self._get(key, str, "a string")
        return value

    def optional_text(self, key: str) -> Optional[str]:
        return self.text(key) if self.has(key) else None

    def boolean(self, key: str) -> bool:
        value: bool = self._get(key, bool, "a boolean")
        return value

    def optional_boolean(self, key: str) -> Optional[bool]:
        return self.boolean(key) if self.has(key) else None

    def integer(self, key: str) -> int:
        value: int = self._get(key, int, "an integer")
        return value

    def decimal(self, key: str) -> Decimal:
        value = self._get(key, (int, float), "a number")
        return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)

    def uuid(self, key: str) -> str:
        value = self.text(key)
        try:
            uuid.UUID(value)
        except ValueError:
            raise ResponseShapeError(self.where(key), "expected a UUID") from None
        return value

    def optional_uuid(self, key: str) -> Optional[str]:
        return self.uuid(key) if self.has(key) else None

    def digits(self, key: str, length: int) -> str:
        value = self.text(key)
        if not (len(value) == length and value.isascii() and value.isdigit()):
            raise ResponseShapeError(self.where(key), f"expected {length} digits")
        return value

    def child(self, key: str) -> ResponseReader:
        if not self.has(key):
            raise ResponseShapeError(self.where(key), "missing (expected an object)")
        return ResponseReader.of(self.raw[key], self.where(key))

    def optional_child(self, key: str) -> Optional[ResponseReader]:
        return self.child(key) if self.has(key) else None


@dataclass(frozen=True)
class TokenReply:
    """An answer whose one documented member is ``token`` (card and transfer token creation)."""

    token: str
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls: type[_Token], value: object) -> _Token:
        reader = ResponseReader.of(value)
        return cls(reader.text("token"), reader.raw)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, Mapping) else type(value).__name__
