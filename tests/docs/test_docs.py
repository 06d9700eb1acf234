"""The code blocks of the reference pages run as written (the README and the task guides: tests/docs/test_guides.py).
docs/terminal.md's: its Python snippets in order, in one session, and its shell block with the package's console
script. Those of docs/cards-and-transfers.md and docs/sandbox.md: in order, in one session each, against the sandbox
with its documented defaults (served on a free port instead of 8790, the one change made). A page's other blocks are
not code to run: JSON samples (each must parse) and printed output; docs/sandbox.md's one shell block installs from
PyPI and starts the sandbox until stopped (tests/sandbox/test_sandbox_cli.py starts it). The API reference's: the
examples in the docstrings it shows (``>>>`` lines and ``::`` blocks), each docstring's in one session."""

from __future__ import annotations

import contextlib
import doctest
import importlib
import inspect
import io
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pasarela import Terminal
from pasarela.asgi import TerminalAuthMiddleware
from pasarela.sandbox import Sandbox, SandboxConfig
from pasarela.sandbox.terminal import TerminalEcho
from pasarela.transfers import TransferState
from support.doc_blocks import blocks, snippets
from support.local_server import LocalServer

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
DOCUMENTED_SANDBOX = "http://127.0.0.1:8790"  # `pasarela sandbox` with its default port
DOCUMENTED_TERMINAL = "https://terminal.example"  # the terminal reference's gateway
TERMINAL_PAGE = DOCS / "terminal.md"


def python_snippets(path: Path) -> list[str]:
    return snippets(path, "python")


async def your_application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The terminal reference's `app`, "your ASGI application", which its middleware snippets wrap."""
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def test_the_terminal_reference_snippets_run_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In one session, as a reader types them, with the one name the text supposes (`app`); the terminal gateway
    is a local server that opens the requests with the page's own terminal and answers them sealed."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__terminal__", "app": your_application}
    blocks = python_snippets(TERMINAL_PAGE)
    assert sum(block.count(DOCUMENTED_TERMINAL) for block in blocks) == 1
    with contextlib.ExitStack() as stack:
        for number, block in enumerate(blocks, 1):
            if DOCUMENTED_TERMINAL in block:
                terminal: Terminal = namespace["terminal"]
                gateway = stack.enter_context(LocalServer(TerminalAuthMiddleware(TerminalEcho(terminal), terminal)))
                block = block.replace(DOCUMENTED_TERMINAL, gateway.base_url)
            exec(compile(block, f"terminal.md snippet {number}", "exec"), namespace)  # noqa: S102 (our own docs)
    assert namespace["sealed"].plaintext == b'{"amount":100,"currency":"COP"}'  # as the first snippet says
    assert namespace["payload"] == {"amount": 100, "currency": "COP"}  # opened, then verified once
    assert namespace["verdict"].cause == "valid"
    assert isinstance(namespace["app"], TerminalAuthMiddleware)


def test_the_terminal_reference_shell_block_runs_with_the_console_script() -> None:
    """Each line as a shell runs it, the package's own `pasarela` first on the PATH; each diagnosis is the one
    its comment gives (exit status 0 when valid, 1 for a diagnosed fault)."""
    [block] = snippets(TERMINAL_PAGE, "sh")
    scripts = str(Path(sys.executable).parent)  # where this interpreter's console scripts are
    environment = {name: value for name, value in os.environ.items() if not name.startswith("PASARELA_")}
    environment["PATH"] = scripts + os.pathsep + environment["PATH"]
    outputs = []
    for line in block.splitlines():
        command = line.split("#", 1)[0].strip()
        if line.startswith("export "):
            for assignment in command.split()[1:]:
                name, value = assignment.split("=", 1)
                environment[name] = value
            continue
        result = subprocess.run(["bash", "-c", f"set -o pipefail; {command}"], cwd=ROOT, env=environment,
                                capture_output=True, text=True, timeout=60)
        expected = 1 if "clock_skew" in line else 0
        assert result.returncode == expected, (line, result.stdout, result.stderr)
        assert result.stderr == "", result.stderr  # no warning: the credentials came from the environment
        outputs.append(result.stdout)
    assert outputs[0].startswith("verdict: valid\n")
    assert json.loads(outputs[1])["cause"] == "valid"
    assert outputs[2].startswith("verdict: clock_skew\n")


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


def documented_modules() -> list[str]:
    """The modules the API reference pages document (docs/api/*.md)."""
    pages = "".join(page.read_text("utf-8") for page in sorted((DOCS / "api").glob("*.md")))
    return re.findall(r"^\.\. automodule:: (\S+)$", pages, flags=re.MULTILINE)


def docstring_examples() -> dict[str, str]:
    """The code of each docstring the API reference shows that holds any: its doctest examples, or its literal
    blocks (a paragraph ending in ``::``), keyed by where it is."""
    docstrings: dict[str, str] = {}
    for module_name in documented_modules():
        module = importlib.import_module(module_name)
        docstrings[module_name] = module.__doc__ or ""
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) or inspect.isroutine(value):  # their own docstrings, not one inherited
                docstrings[f"{module_name}.{name}"] = inspect.cleandoc(vars(value).get("__doc__") or "")
            if inspect.isclass(value):
                for member, attribute in vars(value).items():
                    if inspect.isroutine(attribute) or isinstance(attribute, (property, classmethod, staticmethod)):
                        docstrings[f"{module_name}.{name}.{member}"] = inspect.cleandoc(attribute.__doc__ or "")
    code = {}
    for where, docstring in docstrings.items():
        examples = doctest.DocTestParser().get_examples(docstring)
        if examples:
            code[where] = "".join(example.source for example in examples)
        blocks = re.findall(r"::\n\n((?:[ \t]+\S.*\n|[ \t]*\n)+)", docstring + "\n")
        if blocks:
            code[where] = "".join(textwrap.dedent(block) for block in blocks)
    return code


def test_the_api_reference_examples_run() -> None:
    examples = docstring_examples()
    assert {"pasarela", "pasarela.cards", "pasarela.sandbox"} <= set(examples)  # the ones there are today
    for where, code in examples.items():
        exec(compile(code, f"docstring of {where}", "exec"), {"__name__": "__docs__"})  # noqa: S102 (our own)


class PayersReturn:
    """The payer's request to your callbackUrl, back from the payer page with the token of the transfer that the
    guide's session started."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self._namespace = namespace

    @property
    def url(self) -> str:
        return f"https://shop.example/return?token={self._namespace['token']}"


def test_the_sandbox_guide_has_no_other_kind_of_block() -> None:
    found = blocks(DOCS / "sandbox.md")
    assert {language for language, _ in found} <= {"python", "json", "sh", ""}
    assert [language for language, _ in found].count("sh") == 1
    for language, block in found:
        if language == "json":
            json.loads(block)


def test_the_sandbox_guide_snippets_run_as_written(sandbox_url: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """With the names the guide's text supposes: `request` (the payer back at your callbackUrl), `on_transfer`
    (your webhook handler), `my_clock` and `serve` (any ASGI server: here a local uvicorn, asked once)."""
    monkeypatch.chdir(tmp_path)
    served: list[int] = []

    def serve(app: Any) -> None:
        with LocalServer(app, max_lifetime=60) as server:
            served.append(httpx.get(f"{server.base_url}/openapi.json", timeout=30).status_code)

    namespace: dict[str, Any] = {"__name__": "__docs__", "on_transfer": lambda event: None,
                                 "my_clock": lambda: 1763812800.0, "serve": serve}
    namespace["request"] = PayersReturn(namespace)
    for number, snippet in enumerate(python_snippets(DOCS / "sandbox.md"), 1):
        code = compile(snippet.replace(DOCUMENTED_SANDBOX, sandbox_url), f"sandbox.md snippet {number}", "exec")
        exec(code, namespace)  # noqa: S102 (the project's own documentation)
    assert namespace["status"].state is TransferState.APPROVED  # the transfer the callback's token names
    assert served == [200]


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


def test_the_captured_example_is_what_the_terminal_reference_says_it_is() -> None:
    """examples/captured.json: the output of the `pasarela seal` command docs/terminal.md gives, with the method."""
    command = re.search(r"`(pasarela seal --timestamp 1763812800 [^`]+)`", TERMINAL_PAGE.read_text("utf-8"))
    assert command is not None
    environment = {**os.environ, "PASARELA_BUSINESS_CODE": "demo-business-code",
                   "PASARELA_TERMINAL_SERIAL": "DEMO-0001"}
    sealed = subprocess.run([sys.executable, "-m", "pasarela", *command.group(1).split()[1:]], cwd=ROOT,
                            env=environment, capture_output=True, text=True, timeout=60, check=True)
    captured = json.loads((ROOT / "examples" / "captured.json").read_text("utf-8"))
    assert captured == {"method": "POST", **json.loads(sealed.stdout)}
