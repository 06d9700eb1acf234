"""What the tests measure of a JSON text without parsing it (a parser may refuse it, which is what is tested)."""

from __future__ import annotations


def text_depth(text: str | bytes) -> int:
    """How deep the text's arrays and objects nest (the top-level object is 1), strings skipped; bytes are read
    byte by byte (every structural character is ASCII: a text that is not UTF-8 has a depth too)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text.decode("latin-1") if isinstance(text, bytes) else text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest
