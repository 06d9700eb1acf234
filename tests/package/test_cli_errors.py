"""Every error of ``pasarela seal`` and ``pasarela diagnose`` is one line on stderr (exit status 2, nothing on stdout)
that names the file or the option it is about and says what to do, in a command line's words: no JSON path's ``$``,
no Python type names (issue 58: ``pasarela seal bad.json`` said ``error: $: not JSON text (error at byte 14)``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CREDENTIALS = {"PASARELA_BUSINESS_CODE": "demo-business-code", "PASARELA_TERMINAL_SERIAL": "DEMO-0001"}
OBJECT = '{"amount": 100}'


def run(tmp_path: Path, *arguments: str, stdin: bytes = b"") -> str:
    """The one line of stderr of ``pasarela ARGUMENTS`` run in ``tmp_path``, after checking how it failed."""
    result = subprocess.run([sys.executable, "-m", "pasarela", *arguments], cwd=tmp_path, input=stdin,
                            capture_output=True, timeout=60, env={**os.environ, **CREDENTIALS})
    stderr = result.stderr.decode()
    assert result.returncode == 2 and result.stdout == b"", stderr
    [line] = stderr.splitlines()
    assert "$" not in line and "dict" not in line and "None" not in line and "Errno" not in line, line
    return line


@pytest.mark.parametrize(("content", "expected"), [
    (b'{"amount": 100,\n "currency": }', 'bad.json: not JSON text at byte 29 (line 2, column 14): the payload is one '
                                         'JSON object, e.g. {"amount": 100, "currency": "COP"}'),
    (b'{"amount": NaN}', "bad.json: not JSON text at byte 11 (line 1, column 12)"),
    ('{"éé": 1, }'.encode(), "bad.json: not JSON text at byte 12 (line 1, column 11)"),  # a column is a character
    (b"[1, 2]", 'bad.json: holds an array, and the payload must be a JSON object, e.g. {"amount": 100}'),
    (b'"text"', "bad.json: holds a string, and the payload must be a JSON object"),
    (b"17", "bad.json: holds a number, and the payload must be a JSON object"),
    (b'{"key": "x"}', 'bad.json, at key: a top-level "key" member is reserved'),
    (b"\xff{}", "bad.json: not UTF-8 text at byte 0: save it as UTF-8"),
])
def test_seal_names_the_file_and_the_place_in_it(tmp_path: Path, content: bytes, expected: str) -> None:
    (tmp_path / "bad.json").write_bytes(content)
    assert run(tmp_path, "seal", "bad.json").startswith("pasarela seal: error: " + expected)


def test_seal_calls_standard_input_so(tmp_path: Path) -> None:
    assert run(tmp_path, "seal", stdin=b"[]").startswith("pasarela seal: error: standard input: holds an array")


@pytest.mark.parametrize("command", ["seal", "diagnose"])
def test_a_file_that_cannot_be_read_is_named_with_what_to_give(tmp_path: Path, command: str) -> None:
    what = "a JSON payload file" if command == "seal" else "a captured request"
    assert run(tmp_path, command, "missing.json") == (f"pasarela {command}: error: missing.json: no such file: give "
                                                      f"the path of {what}, or - to read it from standard input")
    (tmp_path / "folder").mkdir()
    assert run(tmp_path, command, "folder") == (f"pasarela {command}: error: folder: is a folder: give the path of "
                                                f"{what} in it")


@pytest.mark.parametrize(("options", "expected"), [
    (("--method", "DELETE"), "argument --method: invalid choice: 'DELETE' (choose from 'GET', 'POST', 'PUT', 'PATCH')"),
    (("--timestamp", "1763812800123"), "--timestamp 1763812800123 has 13 digits: it is in milliseconds, the service "
                                       "expects seconds (1763812800)"),
    (("--timestamp", "17638128"), "--timestamp 17638128 is not 10 digits of whole UTC seconds"),
    (("--iv", "0011"), "--iv 0011: give 32 hexadecimal characters (16 bytes), or leave it out for a random one"),
    (("--iv", "zz" * 16), "--iv " + "zz" * 16 + ": give 32 hexadecimal characters"),
])
def test_seal_names_the_option(tmp_path: Path, options: tuple[str, ...], expected: str) -> None:
    (tmp_path / "charge.json").write_text(OBJECT)
    result = subprocess.run([sys.executable, "-m", "pasarela", "seal", *options, "charge.json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60, env={**os.environ, **CREDENTIALS})
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines()[-1].startswith("pasarela seal: error: " + expected), result.stderr


def test_seal_takes_a_method_in_any_case(tmp_path: Path) -> None:
    (tmp_path / "charge.json").write_text(OBJECT)
    result = subprocess.run([sys.executable, "-m", "pasarela", "seal", "--method", "get", "charge.json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60, env={**os.environ, **CREDENTIALS})
    assert result.returncode == 0 and '"params"' in result.stdout, result.stderr


@pytest.mark.parametrize(("content", "expected"), [
    (b'{"headers": {},\n "body": }', 'captured.json: not JSON text (line 2, column 10: Expecting value): a captured '
                                     'request is a JSON object {"method", "headers", "body" or "params", "now"}, as '
                                     "pasarela seal writes it"),
    (b"[]", 'captured.json: a captured request is a JSON object with "headers" (an object) and "body" or "params"'),
    (b'{"headers": {}, "body": "{}", "now": "noon"}', 'captured.json: "now" must be the Unix seconds at which the '
                                                      "server received the request (or leave it out: --now, else the "
                                                      "current time)"),
])
def test_diagnose_names_the_file_and_says_what_a_captured_request_is(tmp_path: Path, content: bytes,
                                                                     expected: str) -> None:
    (tmp_path / "captured.json").write_bytes(content)
    assert run(tmp_path, "diagnose", "captured.json").startswith("pasarela diagnose: error: " + expected)
