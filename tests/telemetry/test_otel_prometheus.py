"""End to end: ``pasarela sandbox --metrics`` in its own process (uvicorn, TerminalAuthMiddleware in front of the
terminal API, the OpenTelemetry SDK with the Prometheus exporter), terminal requests sent over HTTP, ``/metrics``
scraped over HTTP and parsed with prometheus_client's parser: the counts are exact."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from pasarela import Terminal
from support.sandbox_process import sandbox_process
from support.without_extras import run_without

CODE = "bc-prometheus-1"
SERIAL = "SN-PROM-1"
OPERATING = Path(__file__).resolve().parents[2] / "docs" / "operating.md"
ENVIRONMENT = {"PASARELA_BUSINESS_CODE": CODE, "PASARELA_TERMINAL_SERIAL": SERIAL}


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of the Prometheus text by (name, labels), without the exporter's otel_scope_* labels."""
    answer = httpx.get(url + "/metrics", timeout=10)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            labels = {name: text for name, text in sample.labels.items() if not name.startswith("otel_scope_")}
            samples[(sample.name, frozenset(labels.items()))] = sample.value
    return samples


def value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_terminal_requests_are_counted_by_outcome_in_the_prometheus_text() -> None:
    good, wrong = Terminal(CODE, SERIAL), Terminal("bc-not-this-one", SERIAL)
    with sandbox_process(["--db", ":memory:", "--metrics", "--access-log", "off"], environment=ENVIRONMENT) as started:
        assert f"  --metrics         {started.url}/metrics" in started.banner
        before = scrape(started.url)
        with httpx.Client(base_url=started.url, timeout=10) as client:
            for number in range(5):
                sealed = good.seal({"n": number})
                assert client.post("/terminal/v1/echo", content=sealed.body, headers=sealed.headers).status_code == 200
            for number in range(3):
                sealed = wrong.seal({"n": number})
                assert client.post("/terminal/v1/echo", content=sealed.body, headers=sealed.headers).status_code == 401
            skewed = good.seal({"n": 9}, timestamp=int(time.time()) - 3600)
            assert client.post("/terminal/v1/echo", content=skewed.body, headers=skewed.headers).status_code == 401
            unsigned = good.seal({"n": 10})
            headers = {**unsigned.headers, "Authorization": "Basic " + "0" * 128}
            assert client.post("/terminal/v1/echo", content=unsigned.body, headers=headers).status_code == 401
        after = scrape(started.url)

    def counted(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    opens = "pasarela_terminal_opens_total"
    assert counted(opens, outcome="ok") == 5
    assert counted(opens, outcome="not_verified") == 4  # 3 wrong credentials, 1 wrong signature: one outcome
    assert counted(opens, outcome="clock_skew") == 1
    assert counted("pasarela_terminal_seals_total", method="POST") == 5  # the sandbox's sealed answers
    total = sum(counted(opens, outcome=outcome) for outcome in ("ok", "not_verified", "clock_skew"))
    assert total == 10
    # a sample of the calls: the process's first open, then one in 64
    assert counted("pasarela_terminal_open_duration_seconds_count", outcome="ok") == 1
    assert value(after, "pasarela_terminal_open_duration_seconds_bucket", outcome="ok", le="+Inf") == 1


def test_metrics_without_the_sdk_is_a_clear_error() -> None:
    result = run_without("opentelemetry", """
        import sys
        from pasarela.sandbox.server import main
        sys.exit(main(["--db", ":memory:", "--port", "0", "--metrics"]))
        """)
    assert result.returncode == 2
    assert 'error: --metrics needs opentelemetry-api (pip install "pasarela[otel]")' in result.stderr


def test_the_operating_guides_recipe_serves_the_metrics_to_prometheus() -> None:
    """The start-up recipe of docs/operating.md (its ``observe.py`` up to what the application then does), as written
    but on a free port, in a process of its own; then seals and opens there, and its /metrics scraped over HTTP."""
    [observe] = re.findall(r"^```python\n(# observe\.py.*?)^```$", OPERATING.read_text("utf-8"),
                           flags=re.MULTILINE | re.DOTALL)
    recipe = observe.split("# --- what your application then does", 1)[0]
    assert 'start_http_server(9464, addr="127.0.0.1")' in recipe  # loopback: it has no authentication
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    served = recipe.replace("start_http_server(9464,", f"start_http_server({port},")
    program = served + textwrap.dedent(f"""
        import httpx
        from pasarela import Terminal
        terminal = Terminal("{CODE}", "{SERIAL}")
        for _ in range(3):
            sealed = terminal.seal({{"amount": 1}})
            terminal.open("POST", sealed.headers, sealed.body)
        logging.getLogger("pasarela.http").warning("a line through the formatter")
        print(httpx.get("http://127.0.0.1:{port}/metrics", timeout=10).text)
        """)
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    samples = {}
    for family in text_string_to_metric_families(result.stdout):
        for sample in family.samples:
            labels = {name: text for name, text in sample.labels.items() if not name.startswith("otel_scope_")}
            samples[(sample.name, frozenset(labels.items()))] = sample.value
    assert value(samples, "pasarela_terminal_seals_total", method="POST") == 3
    assert value(samples, "pasarela_terminal_opens_total", outcome="ok") == 3
    assert json.loads(result.stderr.splitlines()[-1])["message"] == "a line through the formatter"
