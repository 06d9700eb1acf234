"""What ``pasarela --help`` tells a newcomer: plain text (no reStructuredText markup), every command, and
option names that say what they do."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

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


@pytest.mark.parametrize("command", ["seal", "diagnose"])
@pytest.mark.parametrize("given", [{}, {"PASARELA_BUSINESS_CODE": "demo-business-code"},
                                   {"PASARELA_TERMINAL_SERIAL": "DEMO-0001"}])
def test_missing_credentials_are_each_named_with_option_and_variable(command: str, given: dict[str, str],
                                                                      tmp_path: Path) -> None:
    request = tmp_path / "request.json"  # what each command reads: a payload, or a captured request
    request.write_text('{"amount": 100}' if command == "seal" else '{"headers": {}, "body": "{}"}')
    environment = {name: value for name, value in os.environ.items() if not name.startswith("PASARELA_")}
    result = subprocess.run([sys.executable, "-m", "pasarela", command, str(request)], capture_output=True, text=True,
                            timeout=60, env={**environment, **given})
    assert result.returncode == 2 and result.stdout == ""
    for name, option, variable in [("business code", "--business-code", "PASARELA_BUSINESS_CODE"),
                                   ("terminal serial", "--terminal-serial", "PASARELA_TERMINAL_SERIAL")]:
        named = f"no {name}" in result.stderr and option in result.stderr and variable in result.stderr
        assert named == (variable not in given), result.stderr
