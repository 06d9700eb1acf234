"""Runs a task guide of the documentation (docs/*.md) as its reader would, block by block, against a real sandbox.

A guide is a sequence of fenced blocks, each one of:

- ``sh``: commands, one a line (``#`` starts a comment), each run or stood in for as the reader runs it:
  ``redis-server --port 6379 ...`` (a real one, started by the tests' own helper, on the run's port),
  ``pasarela sandbox [OPTIONS]`` (its options parsed by the sandbox's own parser, the sandbox served in this
  process on the port the guide names; a second one replaces the first, as a restart does), ``uvicorn
  MODULE:APP --port N`` (the module a file block wrote, imported and served under uvicorn on that port),
  ``pasarela ...``, ``python FILE`` and ``pytest ...`` (run for real, in a subprocess, exiting 0 unless the line's
  comment says ``exit status N``), ``pip install ...`` (every
  ``pasarela[extra]`` it names must be one of the package's extras, every other package installed here:
  nothing is installed), ``export NAME=VALUE``. Any other command fails the test, so a guide cannot tell its
  reader to run what no test ran.
- ``python`` whose first line is ``# NAME.py``: a file the reader saves; written into the run's folder.
- ``python``, anything else: a complete program, run as ``__main__`` in a namespace of its own, in the run's
  folder (so ``import shop`` finds a file block), its standard output captured. Preceded by the comment
  ``<!-- fragment -->``, a fragment instead: run in the namespace of the page's fragments so far, given the names
  the text supposes (``completions``).
- ``text`` right after a program or a command: its expected output, compared as doctest compares (``...`` stands
  for any text).
- ``json``: must parse. ``promql``: every pasarela series it queries must be one of the page's metrics table.
  Any other language fails the test.

The ports the guides use, 8790 (the sandbox's default), 8000 (the merchant's back end or the gateway), 9464
(Prometheus's exporter) and 6379 (Redis), are mapped to free loopback ports in every block before it runs; the
servers are bound first, so a sandbox started with ``--webhook-url http://127.0.0.1:8000/...`` delivers to the back
end started after it.
"""

from __future__ import annotations

import contextlib
import doctest
import importlib.metadata
import importlib.util
import io
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Optional

from pasarela.sandbox import Sandbox
from pasarela.sandbox.server import _config as sandbox_config
from pasarela.sandbox.server import build_parser
from support.doc_blocks import Block, fenced
from support.local_server import LocalServer
from support.redis_server import RedisServer, free_port

ROOT = Path(__file__).resolve().parents[2]
SANDBOX_URL = "http://127.0.0.1:8790"
SHOP_URL = "http://127.0.0.1:8000"
_OTHER_PORTS = (9464, 6379)
"""Other ports the guides name, each given a free one: Prometheus's exporter, Redis."""


class Later:
    """An ASGI app set after its server is bound (the guide starts its servers in its own order)."""

    app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.app is None:
            raise RuntimeError("nothing serves this address yet: the guide has not started it")
        await self.app(scope, receive, send)


def _extras() -> set[str]:
    """pyproject.toml's extras, as the installed package declares them."""
    return set(importlib.metadata.metadata("pasarela").get_all("Provides-Extra") or ())


class GuideRun:
    """One guide's run: its servers, its folder, its environment, what its programs printed."""

    def __init__(self, page: Path, folder: Path, completions: Optional[Mapping[str, Any]] = None) -> None:
        self.page = page
        self.folder = folder
        self.fragments: dict[str, Any] = {"__name__": "__guide__", **(completions or {})}
        self.environment: dict[str, str] = {}
        self.outputs: list[str] = []
        """What each program and command printed, in order."""
        self.sandboxes: list[Sandbox] = []
        self._stack = ExitStack()
        self._served = {SANDBOX_URL: Later(), SHOP_URL: Later()}
        self._servers = {url: self._stack.enter_context(LocalServer(app, max_lifetime=300))
                         for url, app in self._served.items()}
        self._ports = {int(url.rsplit(":", 1)[1]): server.port for url, server in self._servers.items()}
        self._ports.update({port: free_port() for port in _OTHER_PORTS})
        self._last_output: Optional[str] = None

    def __enter__(self) -> GuideRun:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stack.close()

    # --- addresses
    def url(self, documented: str) -> str:
        return self._servers[documented].base_url

    def _mapped(self, code: str) -> str:
        """``code`` with each documented port replaced by this run's (where it stands as a number of its own)."""
        for documented, actual in self._ports.items():
            code = re.sub(rf"(?<![\w.]){documented}(?!\w)", str(actual), code)
        return code

    # --- blocks
    def run(self) -> None:
        for block in fenced(self.page):
            where = f"{self.page.name}:{block.line}"
            code = self._mapped(block.code)
            if block.language == "text":
                self._expect(code, where)
                continue
            self._last_output = None
            if block.language == "sh":
                self._shell(code, where)
            elif block.language == "python":
                self._python(code, block, where)
            elif block.language == "json":
                json.loads(code)
            elif block.language == "promql":
                self._promql(code, where)
            else:
                raise AssertionError(f"{where}: a {block.language or 'plain'} block, which no test runs")

    def _promql(self, code: str, where: str) -> None:
        """Each pasarela series a query names is one of the page's metrics table (a counter's ``_total``, a
        histogram's ``_bucket``, ``_count``, ``_sum`` in seconds)."""
        table = re.findall(r"^\| `(pasarela\.[\w.]+)` \| (counter|histogram, s) \|", self.page.read_text("utf-8"),
                           flags=re.MULTILINE)
        series = set()
        for name, kind in table:
            base = name.replace(".", "_")
            series |= {base + "_total"} if kind == "counter" else {
                f"{base}_seconds_{suffix}" for suffix in ("bucket", "count", "sum")}
        named = set(re.findall(r"\bpasarela_\w+", code))
        assert named and named <= series, f"{where}: {sorted(named - series)} are no series of the metrics table"

    def _expect(self, expected: str, where: str) -> None:
        assert self._last_output is not None, f"{where}: expected output after no program nor command"
        checker = doctest.OutputChecker()
        assert checker.check_output(expected, self._last_output, doctest.ELLIPSIS), (
            f"{where}: printed\n{self._last_output}\nwhere the guide says\n{expected}")

    def _python(self, code: str, block: Block, where: str) -> None:
        first = code.splitlines()[0]
        saved = re.fullmatch(r"# ([\w.-]+\.py)\b.*", first)
        if saved and not block.fragment:
            (self.folder / saved.group(1)).write_text(code, "utf-8")
            return
        namespace = self.fragments if block.fragment else {"__name__": "__main__"}
        printed = io.StringIO()
        with self._in_folder(), contextlib.redirect_stdout(printed):
            exec(compile(code, where, "exec"), namespace)  # noqa: S102 (the project's own documentation)
        self._printed(printed.getvalue())

    @contextlib.contextmanager
    def _in_folder(self) -> Iterator[None]:
        before, path, environment = os.getcwd(), list(sys.path), dict(os.environ)
        os.chdir(self.folder)
        sys.path.insert(0, str(self.folder))
        os.environ.clear()
        os.environ.update(self._shell_environment())
        try:
            yield
        finally:
            os.chdir(before)
            sys.path[:] = path
            os.environ.clear()
            os.environ.update(environment)

    def _shell_environment(self) -> dict[str, str]:
        """The reader's shell: this process's environment without pasarela's and pytest's own variables (a reader
        has none set but those the guide exported), and the guide's exports."""
        inherited = {name: value for name, value in os.environ.items()
                     if not name.startswith(("PASARELA_", "PYTEST_"))}  # nor those of the pytest running this
        return {**inherited, **self.environment}

    def _printed(self, text: str) -> None:
        self._last_output = text
        self.outputs.append(text)

    # --- commands
    def _shell(self, code: str, where: str) -> None:
        for line in code.splitlines():
            command, _, comment = line.partition(" #") if not line.lstrip().startswith("#") else ("", "", "")
            status = re.search(r"\bexit status (\d)\b", comment)
            if command.strip():
                self._command(shlex.split(command), f"{where}: {command.strip()}", int(status[1]) if status else 0)

    def _command(self, words: list[str], where: str, status: int) -> None:
        """``status``: the exit status the guide's comment promises (``# exit status 1: ...``), else 0."""
        if words[0] == "export":
            for assignment in words[1:]:
                name, value = assignment.split("=", 1)
                self.environment[name] = value
        elif words[:2] == ["pip", "install"]:
            self._pip(words[2:], where)
        elif words[:2] == ["pasarela", "sandbox"] and words[2:3] != ["certify"]:
            self._sandbox(words[2:], where)
        elif words[0] == "uvicorn":
            self._uvicorn(words[1:], where)
        elif words[0] == "redis-server":
            self._redis(words[1:], where)
        elif words[0] in ("pasarela", "python", "pytest"):
            self._subprocess(words, where, status)
        else:
            raise AssertionError(f"{where}: a command the guides' test does not run")

    def _pip(self, requirements: list[str], where: str) -> None:
        extras = _extras()
        for requirement in requirements:
            named = re.fullmatch(r"pasarela\[([\w,-]+)\]", requirement)
            if named:
                assert set(named.group(1).split(",")) <= extras, f"{where}: no such extra"
            else:
                name = re.sub(r"\[.*\]$", "", requirement)
                try:
                    importlib.metadata.distribution(name)
                except importlib.metadata.PackageNotFoundError:
                    raise AssertionError(f"{where}: {requirement} is not installed here") from None

    def _sandbox(self, options: list[str], where: str) -> None:
        with self._in_folder():  # its defaults read the environment
            args = build_parser().parse_args(options)
            config, _ = sandbox_config(args)
        assert args.db in ("pasarela-sandbox.sqlite3", ":memory:"), f"{where}: a --db of the guide's own"
        sandbox = self._stack.enter_context(Sandbox(config, db=str(self.folder / f"sandbox-{len(self.sandboxes)}.db")))
        if self.sandboxes:  # a restart: the one before stops
            self.sandboxes[-1].close()
        self.sandboxes.append(sandbox)
        self._served[SANDBOX_URL].app = sandbox.app

    def _redis(self, options: list[str], where: str) -> None:
        """A real redis-server (the tests' own: loopback, no persistence) on this run's port for the one named."""
        assert options[:2] == ["--port", str(self._ports[6379])], f"{where}: redis-server --port 6379 ..."
        server = RedisServer()
        server.port, server.url = self._ports[6379], f"redis://127.0.0.1:{self._ports[6379]}/0"
        self._stack.enter_context(server)

    def _uvicorn(self, words: list[str], where: str) -> None:
        target, options = words[0], words[1:]
        assert options[:1] == ["--port"] and int(options[1]) == self._servers[SHOP_URL].port, where
        module_name, _, attribute = target.partition(":")
        path = self.folder / f"{module_name}.py"
        spec = importlib.util.spec_from_file_location(f"guide_{self.page.stem}_{module_name}", path)
        assert spec is not None and spec.loader is not None, f"{where}: no {path.name} was written"
        module = importlib.util.module_from_spec(spec)
        with self._in_folder():
            spec.loader.exec_module(module)
        self._served[SHOP_URL].app = getattr(module, attribute)

    def _subprocess(self, words: list[str], where: str, status: int) -> None:
        executable = {"pasarela": [sys.executable, "-m", "pasarela"], "python": [sys.executable],
                      "pytest": [sys.executable, "-m", "pytest"]}[words[0]]
        result = subprocess.run([*executable, *words[1:]], cwd=self.folder, capture_output=True, text=True,
                                timeout=120, env=self._shell_environment())
        assert result.returncode == status, f"{where}: exit status {result.returncode}\n{result.stdout}{result.stderr}"
        self._printed(result.stdout)
