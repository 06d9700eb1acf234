"""Issue 56 item 1: the pytest plugin. Each test runs a real inner pytest session (``pytester``, in a subprocess, so
the plugin is loaded as a user's pytest loads it: through the ``pytest11`` entry point of the installed package),
the sandbox served by uvicorn on a loopback port, webhooks delivered over HTTP to a real TransferWebhookReceiver."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

HEAVY = ("pasarela.sandbox.service", "pasarela.testing.live", "starlette", "uvicorn", "httpx", "jsonschema", "segno")

# The inner sessions' shared helpers: a Colombia QR transfer started through the typed clients.
HELPERS = '''
import json, os
from pasarela.transfers import Amount, TransferInitRequest, TransferTokenRequest, TransferState

def start_qr(sandbox, total=25000):
    amount = Amount.untaxed(total, currency="COP")
    token = sandbox.transfers.create_token(TransferTokenRequest.colombia_qr(amount=amount)).token
    sandbox.transfers.init(TransferInitRequest(token=token, amount=amount))
    return token

def start_mexico(sandbox, document="123456789"):
    amount = Amount.untaxed(1000, currency="MXN")
    request = TransferTokenRequest.mexico(amount=amount, document_number=document, email="payer@example.mx")
    token = sandbox.transfers.create_token(request).token
    sandbox.transfers.init(TransferInitRequest(token=token, amount=amount))
    return token
'''


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester whose sessions do not believe they are the outer run's xdist workers."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID", "PYTEST_ADDOPTS"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(helpers=HELPERS)
    return pytester


def test_the_plugin_is_the_pytest11_entry_point_of_the_package() -> None:
    plugins = {point.name: point.value for point in entry_points(group="pytest11")}
    assert plugins.get("pasarela") == "pasarela.testing.plugin"


def test_loading_the_plugin_imports_nothing_heavy() -> None:
    probe = ("import sys, pasarela.testing.plugin, pasarela.testing; "
             f"print([name for name in {HEAVY!r} if name in sys.modules])")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_a_session_that_asks_for_no_fixture_imports_nothing_heavy(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_plain=f'''
        import sys
        def test_plain():
            assert "pasarela.testing.plugin" in sys.modules  # loaded by its entry point
            assert [name for name in {HEAVY!r} if name in sys.modules] == []
    ''')
    inner.runpytest_subprocess("-p", "no:schemathesis", "-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_fixture_clock_payer_webhooks_and_reset(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_kit='''
        import pytest
        from pasarela.sandbox.errors import SandboxError
        from pasarela.testing import ServedApp
        from pasarela.transfers import TransferWebhookReceiver
        from helpers import start_qr, start_mexico, TransferState

        def test_advance_expires_a_qr(pasarela_sandbox):
            token = start_qr(pasarela_sandbox)
            before = pasarela_sandbox.now()
            assert pasarela_sandbox.transfers.status(token).status == "initializedTransaction"
            assert pasarela_sandbox.advance(minutes=11) == pytest.approx(before + 660)
            assert pasarela_sandbox.transfers.status(token).status == "expiredTransaction"
            with pytest.raises(SandboxError, match="QR_EXPIRED"):
                pasarela_sandbox.pay(token)

        def test_the_clock_stands_still_until_advanced(pasarela_sandbox):
            token = start_mexico(pasarela_sandbox)             # settles by itself 5 s after init...
            first = pasarela_sandbox.now()
            assert pasarela_sandbox.transfers.status(token).status == "initializedTransaction"
            assert pasarela_sandbox.now() == first             # ...of the sandbox clock, which stands still
            pasarela_sandbox.advance(seconds=5)
            assert pasarela_sandbox.transfers.status(token).state is TransferState.APPROVED

        def test_pay_decline_expire_and_the_webhooks_delivered(pasarela_sandbox):
            events = []
            receiver = TransferWebhookReceiver(events.append, secret=pasarela_sandbox.config.webhook_secret,
                                               merchant_id=pasarela_sandbox.config.public_key)
            with ServedApp(receiver) as hooks:
                pasarela_sandbox.webhook_url = hooks.url + "/hooks"
                paid, declined, expired = (start_qr(pasarela_sandbox) for _ in range(3))
                assert pasarela_sandbox.pay(paid).state is TransferState.APPROVED
                assert pasarela_sandbox.decline(declined).state is TransferState.REJECTED
                assert pasarela_sandbox.expire(expired).status == "expiredTransaction"
                sent = pasarela_sandbox.wait_for_webhooks(2)
            assert {(hook.token, hook.status) for hook in sent} == {(paid, "approvedTransaction"),
                                                                     (declined, "declinedTransaction")}
            assert all(hook.delivered and hook.attempts[-1].status == 200 for hook in sent)
            assert sorted(event.token for event in events) == sorted([paid, declined])
            assert sent[0].attempts[0].url == hooks.url + "/hooks"
            assert pasarela_sandbox.webhooks(token=paid)[0].body["transactionStatus"] == "PAID"

        def test_reset_left_nothing_behind(pasarela_sandbox):
            assert pasarela_sandbox.webhooks() == []
            assert pasarela_sandbox.webhook_url is None        # the configured one again
            assert abs(pasarela_sandbox.now() - __import__("time").time()) < 60   # the advances undone
            with pasarela_sandbox.sandbox.store.read() as tx:
                assert tx.all_transfers() == []

        @pytest.mark.pasarela_sandbox(settle_after=None, ecuador_processor="wallet")
        def test_a_marker_gives_a_sandbox_of_its_own(pasarela_sandbox, pasarela_sandbox_session):
            assert pasarela_sandbox.config.settle_after is None
            assert pasarela_sandbox.config.ecuador_processor == "wallet"
            assert pasarela_sandbox.url != pasarela_sandbox_session.url

        def test_the_factory_starts_and_stops_its_own(pasarela_sandbox_factory):
            other = pasarela_sandbox_factory(merchant_name="Shop two")
            assert other.config.merchant_name == "Shop two"
            token = start_qr(other)
            assert other.transfers.status(token).status == "initializedTransaction"
    ''')
    result = inner.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=6)


def test_the_session_variant_keeps_its_state_and_the_function_one_does_not(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_scopes='''
        from helpers import start_qr

        def test_first(pasarela_sandbox_session, pasarela_sandbox):
            start_qr(pasarela_sandbox_session)
            start_qr(pasarela_sandbox)

        def test_second(pasarela_sandbox_session, pasarela_sandbox):
            with pasarela_sandbox_session.sandbox.store.read() as tx:
                assert len(tx.all_transfers()) == 1                 # the first test's, kept
            with pasarela_sandbox.sandbox.store.read() as tx:
                assert tx.all_transfers() == []                     # reset before this test
    ''')
    inner.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_a_file_database_and_a_configuration_from_conftest(inner: pytest.Pytester) -> None:
    inner.makeini("[pytest]\npasarela_sandbox_db = file\n")
    inner.makeconftest('''
        import pytest

        @pytest.fixture(scope="session")
        def pasarela_sandbox_config():
            return {"public_key": "pk-shop", "private_key": "sk-shop", "merchant_name": "Shop"}
    ''')
    inner.makepyfile(test_config='''
        from pathlib import Path
        from helpers import start_qr

        def test_configured(pasarela_sandbox):
            assert pasarela_sandbox.service_config.public_merchant_id == "pk-shop"
            start_qr(pasarela_sandbox)
            assert Path(pasarela_sandbox.sandbox.store.path).is_file()
    ''')
    inner.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_bad_ini_value_is_a_usage_error(inner: pytest.Pytester) -> None:
    inner.makeini("[pytest]\npasarela_sandbox_db = disk\n")
    inner.makepyfile(test_any="def test_any(pasarela_sandbox):\n    pass\n")
    result = inner.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pasarela_sandbox_db = disk: give one of memory, file"])


def test_pytest_xdist_workers_each_get_their_own_sandbox(inner: pytest.Pytester, tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    seen.mkdir()
    inner.makepyfile(test_parallel=f'''
        import json, os, time
        import pytest
        from helpers import start_qr

        @pytest.mark.parametrize("n", range(8))
        def test_alone(pasarela_sandbox, n):
            mine = {{start_qr(pasarela_sandbox) for _ in range(3)}}
            time.sleep(0.05)                                    # the other worker's tests run meanwhile
            with pasarela_sandbox.sandbox.store.read() as tx:
                assert {{transfer.token for transfer in tx.all_transfers()}} == mine
            record = {{"worker": os.environ["PYTEST_XDIST_WORKER"], "url": pasarela_sandbox.url,
                      "db": pasarela_sandbox.sandbox.store.path}}
            (__import__("pathlib").Path({str(seen)!r}) / f"{{n}}.json").write_text(json.dumps(record))
    ''')
    inner.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2").assert_outcomes(passed=8)
    records = [json.loads(path.read_text()) for path in seen.glob("*.json")]
    workers = {record["worker"]: record["url"] for record in records}
    assert len(records) == 8 and sorted(workers) == ["gw0", "gw1"]
    assert len(set(workers.values())) == 2                 # a port each
    assert all(record["url"] == workers[record["worker"]] for record in records)   # one server per worker


def test_wait_for_webhooks_says_what_it_saw(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_wait='''
        import pytest
        from helpers import start_qr

        def test_nothing_listens(pasarela_sandbox):
            pasarela_sandbox.webhook_url = "http://127.0.0.1:9/hooks"   # the discard port: nobody answers
            pasarela_sandbox.pay(start_qr(pasarela_sandbox))
            with pytest.raises(TimeoutError) as refused:
                pasarela_sandbox.wait_for_webhooks(1, timeout=1)
            message = str(refused.value)
            assert "0 of 1 webhook(s) delivered within 1 s (http://127.0.0.1:9/hooks)" in message
            assert "approvedTransaction: 1 attempt(s), ConnectionRefusedError" in message

        def test_no_url(pasarela_sandbox):
            pasarela_sandbox.pay(start_qr(pasarela_sandbox))
            with pytest.raises(TimeoutError, match="no webhook URL: set sandbox.webhook_url.*not sent"):
                pasarela_sandbox.wait_for_webhooks(1, timeout=0.2)
    ''')
    inner.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_the_outer_suite_has_the_fixture_too(pasarela_sandbox: object) -> None:
    """This very suite loads the plugin through its entry point (no conftest declares it)."""
    from pasarela.testing import LiveSandbox

    assert isinstance(pasarela_sandbox, LiveSandbox)
