"""The Ecuador return (spec 3, rule 2; 6.2): the bank sends the payer back by GET to ``callbackUrl``
with the transaction token in the ``token`` query parameter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Union
from urllib.parse import parse_qs, urlsplit

from ..errors import ValidationError

__all__ = ["token_from_callback"]


def token_from_callback(callback: Union[str, Mapping[str, str]]) -> str:
    """The token of a return: from the full URL the payer arrived at, its query string, or the query
    parameters your framework already parsed. Exactly one non-empty ``token`` is required."""
    if isinstance(callback, Mapping):
        values = [callback["token"]] if "token" in callback else []
    else:
        query = urlsplit(callback).query if "?" in callback or "://" in callback else callback
        values = parse_qs(query, keep_blank_values=True).get("token", [])
    if len(values) != 1 or not isinstance(values[0], str) or not values[0].strip():
        raise ValidationError("token", "the callback must carry exactly one non-empty token query parameter")
    return values[0]
