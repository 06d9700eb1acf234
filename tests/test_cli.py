"""What ``pasarela --help`` tells a newcomer: plain text (no reStructuredText markup), every command, and
option names that say what they do."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from pasarela.cli import build_parser


def _help(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "pasarela", *args, "--help"], capture_output=True, text=True,
                            timeout=60, env={**os.environ, "COLUMNS": "100"})
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_help_is_plain_text_and_lists_every_command() -> None:
    text = _help()
    assert "``" not in text and ":mod:" not in text and ":class:" not in text
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert set(commands) == {"seal", "diagnose", "sandbox"}
    for command in commands:
        assert re.search(rf"^ +{command} +\S", text, flags=re.MULTILINE), f"{command} is not described:\n{text}"
    # option names are never broken across lines
    assert "PASARELA_BUSINESS_CODE" in text and "--terminal-serial" in text


@pytest.mark.parametrize("command", ["seal", "diagnose"])
def test_each_command_help_is_plain_text(command: str) -> None:
    text = _help(command)
    assert "``" not in text and f"usage: pasarela {command}" in text


def test_diagnose_names_its_output_format_as_such() -> None:
    text = _help("diagnose")
    assert "--output {text,json}" in text
    assert "--json" not in text  # the old name stays accepted, not offered
