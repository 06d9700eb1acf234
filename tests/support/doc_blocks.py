"""The fenced code blocks of a Markdown page (the README, docs/*.md), as the tests that run them read them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FRAGMENT = "<!-- fragment -->"
"""The comment before a block that is a fragment of the page's program, not a program
(tests/support/guide_runner.py)."""
_FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(frozen=True)
class Block:
    language: str
    """``""`` when the fence names none."""
    code: str
    line: int
    """Where it starts in the page (1-based), for the messages."""
    fragment: bool


def fenced(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, in order; a MyST directive (```` ```{include} ````, toctree, eval-rst) holds
    no code and is skipped whole."""
    found: list[Block] = []
    lines = page.read_text("utf-8").splitlines()
    number = 0
    while number < len(lines):
        if lines[number].startswith("```{"):
            number = next(index for index in range(number + 1, len(lines)) if lines[index] == "```") + 1
            continue
        opened = _FENCE.match(lines[number])
        if opened is None:
            number += 1
            continue
        before = next((line.strip() for line in reversed(lines[:number]) if line.strip()), "")
        end = next(index for index in range(number + 1, len(lines)) if lines[index] == "```")
        found.append(Block(opened.group(1), "\n".join(lines[number + 1:end]) + "\n", number + 1, before == FRAGMENT))
        number = end + 1
    return found


def blocks(path: Path) -> list[tuple[str, str]]:
    """Every block of the page in order: its language (``""`` when it names none) and its text."""
    return [(block.language, block.code) for block in fenced(path)]


def snippets(path: Path, language: str = "python") -> list[str]:
    """The texts of the page's blocks in ``language``, in order."""
    return [text for kind, text in blocks(path) if kind == language]
