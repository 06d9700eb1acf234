"""The nesting limit of every JSON text pasarela parses, counted without recursion: payloads and requests
(:mod:`pasarela.terminal.stringify`), webhook bodies, the sandbox's request bodies and audit records. Here, below
every module that parses, so that the limit is one number and one count, the same on every interpreter and at
any caller depth (json's recursive scanner counts against Python's recursion limit, which each CPython spends
differently: 3.10 and 3.11 refuse near 990 levels from a shallow caller, 3.12 parses thousands)."""

from __future__ import annotations

import re
from typing import Optional

__all__ = ["MAX_DEPTH", "nesting_too_deep"]

MAX_DEPTH = 1000
"""Deepest accepted nesting of arrays and objects (the outermost container is depth 1)."""

_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def nesting_too_deep(s: str, limit: int = MAX_DEPTH) -> Optional[int]:
    """The index in JSON text *s* of the bracket that opens a level deeper than ``limit`` (MAX_DEPTH unless a
    caller bounds its own input closer, as the sandbox does its request bodies), or None: counted
    without recursion (brackets inside strings skipped), so that a recursive parser (json's C scanner, which
    counts against Python's recursion limit and overflows the C stack when that limit is raised) only ever
    sees text within the limit, and the limit is the same at any caller depth. Text with at most ``limit``
    brackets in all is answered by two counts."""
    if s.count("[") + s.count("{") <= limit:
        return None
    depth = 0
    for m in _STRING_OR_BRACKET.finditer(s):
        c = m.group()
        if c == "[" or c == "{":
            depth += 1
            if depth > limit:
                return m.start()
        elif c == "]" or c == "}":
            depth -= 1
    return None
