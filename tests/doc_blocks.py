"""The fenced code blocks of a Markdown page (the README, docs/*.md), as the tests that run them read them."""

from __future__ import annotations

import re
from pathlib import Path

_FENCED = re.compile(r"^```(\w*)\n(.*?)^```$", flags=re.MULTILINE | re.DOTALL)


def blocks(path: Path) -> list[tuple[str, str]]:
    """Every block of the page in order: its language (``""`` when it names none) and its text."""
    return _FENCED.findall(path.read_text(encoding="utf-8"))


def snippets(path: Path, language: str = "python") -> list[str]:
    """The texts of the page's blocks in ``language``, in order."""
    return [text for kind, text in blocks(path) if kind == language]
