"""Values placed in a request path: one segment each, never a change of the path.

A token or ticket number may come from the payer (the ``token`` of a callback URL) or from a webhook body.
Put into ``/transfer/v1/status/{token}`` as it is, ``..`` would make the request ``GET /transfer/v1`` (HTTP
clients and servers remove dot segments, RFC 3986 5.2.4), with the private merchant key. So a dot segment is
refused, also percent-encoded (``%2e%2E``: the ``requests`` library and many servers decode it back to ``..``),
and every other character outside RFC 3986's unreserved set is percent-encoded (UTF-8), ``/``, ``?``, ``#``
and ``%`` included.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from ..errors import ValidationError

__all__ = ["MAX_SEGMENT_LENGTH", "is_dot_segment", "path_segment"]

MAX_SEGMENT_LENGTH = 1024
"""Characters of one path value; tokens and ticket numbers are a few dozen."""

_DOT_SEGMENTS = frozenset({".", ".."})


def is_dot_segment(segment: str) -> bool:
    """``.`` or ``..``, as it is or percent-encoded any number of times (``%2e``, ``%252e%252e``)."""
    while True:
        if segment in _DOT_SEGMENTS:
            return True
        decoded = unquote(segment)
        if decoded == segment:
            return False
        segment = decoded


def path_segment(name: str, value: object) -> str:
    """``value`` as one path segment, percent-encoded; a ValidationError naming ``name`` when it cannot be one
    (not a string, empty, longer than :data:`MAX_SEGMENT_LENGTH`, a dot segment, not encodable as UTF-8)."""
    if not isinstance(value, str):
        raise ValidationError(name, f"must be a string, not {type(value).__name__}")
    if not value:
        raise ValidationError(name, "must not be empty")
    if len(value) > MAX_SEGMENT_LENGTH:
        raise ValidationError(name, f"must be at most {MAX_SEGMENT_LENGTH} characters")
    if is_dot_segment(value):
        raise ValidationError(name, "must not be a dot segment ('.' or '..', even percent-encoded)")
    try:
        return quote(value, safe="", encoding="utf-8", errors="strict")
    except UnicodeEncodeError:
        raise ValidationError(name, "must be valid Unicode text (it holds a lone surrogate)") from None
