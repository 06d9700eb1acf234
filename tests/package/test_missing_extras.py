"""Without an optional dependency, what needs it says which ``pip install`` brings it (in a subprocess in which
a meta-path finder refuses that package, as if it were not installed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support.without_extras import run_without


@pytest.mark.parametrize(
    ("blocked", "code", "command"),
    [
        ("httpx", "import pasarela.httpx", 'pip install "pasarela[http]"'),
        ("httpx", "from pasarela.httpx import TerminalClient", 'pip install "pasarela[http]"'),
        ("requests", "import pasarela.requests_adapter", 'pip install "pasarela[requests]"'),
        ("httpx", """
            from pasarela.cards import CardClient
            from pasarela.http import ServiceConfig
            CardClient(ServiceConfig(base_url="http://127.0.0.1:9", public_merchant_id="p", private_merchant_id="q"))
            """, 'pip install "pasarela[http]"'),
        ("starlette", "from pasarela.testing import LiveSandbox", 'pip install "pasarela[testing]"'),
        ("uvicorn", "from pasarela.testing import ServedApp; ServedApp()", 'pip install "pasarela[testing]"'),
    ],
)
def test_a_missing_extra_names_its_pip_install(blocked: str, code: str, command: str) -> None:
    result = run_without(blocked, code)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: ")
    assert f"needs {blocked} not installed: {command}" in last


def test_the_finder_blocks_only_what_it_is_told() -> None:
    assert run_without("requests", "import pasarela.httpx").returncode == 0
    assert run_without("httpx", "import pasarela, pasarela.requests_adapter, pasarela.cards").returncode == 0


def test_the_error_is_still_a_module_not_found_error_naming_the_module() -> None:
    result = run_without("httpx", """
        try:
            import pasarela.httpx
        except ModuleNotFoundError as exc:
            print(exc.name)
        """)
    assert result.stdout == "httpx\n", result.stderr


def test_the_benchmark_report_says_how_to_get_matplotlib_before_measuring() -> None:
    report = Path(__file__).resolve().parents[2] / "benchmarks" / "report.py"
    result = run_without("matplotlib", f"""
        import runpy, sys
        sys.argv = ["report.py", "--quick"]
        runpy.run_path({str(report)!r}, run_name="__main__")
        """)
    assert result.returncode == 2 and result.stdout == ""
    assert 'run scripts/setup (or pip install "pasarela[bench]"), or pass --no-plot' in result.stderr


@pytest.mark.parametrize(("client", "store", "extra"), [("redis", "replay_redis", "redis"),
                                                        ("psycopg", "replay_postgres", "postgres")])
def test_the_store_backends_are_imported_only_when_asked_for(client: str, store: str, extra: str) -> None:
    """``import pasarela`` (and what a gateway imports with it) connects to no database and imports no database
    client; a store module without its client names the extra that brings it."""
    code = ("import sys, pasarela, pasarela.asgi, pasarela.transfers, pasarela.terminal.replay;"
            f"sys.exit({client!r} in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
    result = run_without(client, f"import pasarela.terminal.{store}")
    assert result.returncode == 1
    assert f'pip install "pasarela[{extra}]"' in result.stderr.strip().splitlines()[-1]
