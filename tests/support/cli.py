"""``pasarela``'s CLI called in this process, as a shell would run it: its arguments, what it reads on stdin, and
what it answers (exit status, stdout, stderr)."""

from __future__ import annotations

import io
import sys

import pytest

from pasarela.cli import main


def run_cli(args: list[str], stdin: str, monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err
