"""The Python snippets of docs/cards-and-transfers.md run as written: in order, in one session, against
the sandbox with its documented defaults (served on a free port instead of 8790, the one change made)."""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from local_server import LocalServer
from pasarela.sandbox import Sandbox, SandboxConfig

DOCS = Path(__file__).resolve().parent.parent / "docs"
DOCUMENTED_SANDBOX = "http://127.0.0.1:8790"  # `pasarela sandbox` with its default port


def python_snippets(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", path.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)


@pytest.fixture
def sandbox_url(tmp_path: Path) -> Iterator[str]:
    with Sandbox(SandboxConfig(), db=str(tmp_path / "sandbox.sqlite3")) as sandbox:
        app: Any = sandbox.app
        with LocalServer(app, max_lifetime=120) as server:
            yield server.base_url


def test_the_snippets_are_found() -> None:
    snippets = python_snippets(DOCS / "cards-and-transfers.md")
    assert len(snippets) == 9
    assert sum(snippet.count(DOCUMENTED_SANDBOX) for snippet in snippets) == 1


def test_cards_and_transfers_snippets_run_as_written(sandbox_url: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the snippets write payments.jsonl and pending.sqlite3 where they run
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    printed = io.StringIO()
    for number, snippet in enumerate(python_snippets(DOCS / "cards-and-transfers.md"), 1):
        code = compile(snippet.replace(DOCUMENTED_SANDBOX, sandbox_url), f"cards-and-transfers.md snippet {number}",
                       "exec")
        with contextlib.redirect_stdout(printed):
            exec(code, namespace)  # noqa: S102 (the project's own documentation)
    # what the snippets did, seen from outside them
    assert printed.getvalue() == "400000XXXXXX0002 400000\n"  # the charge's network token (the card snippet prints it)
    assert namespace["state"].is_final  # 10000 COP is the sandbox's approved transfer
    assert namespace["status"].state is namespace["state"]  # the Ecuador-style callback reads the same transfer
    assert namespace["transfer_webhook"]({}, b"{}")[1] == 401
    assert "kushki-checkout.js" in namespace["html"]
    assert (tmp_path / "payments.jsonl").stat().st_size > 0
    assert (tmp_path / "pending.sqlite3").exists()
