"""The nesting limit (MAX_DEPTH, 1000 levels) of webhook bodies, the sandbox's access log and audit records, and
the closer one of the sandbox's request bodies (MAX_BODY_DEPTH, 64 levels, before jsonschema), is pasarela's own
count, made before any recursive parser or validator: the same on every CPython (json's recursive scanner
refused near 990 levels on 3.10 and 3.11, parsed 1400 on 3.12 and 5000 on 3.13) and under a raised recursion
limit. Payloads and terminal requests: tests/core/test_deep_stack.py. Plain tests, no @given: Hypothesis raises the
recursion limit inside its tests, which would hide what these check."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from pasarela.http.audit import TOO_DEEP, AuditRecord, JsonlAuditLog, recordable_body
from pasarela.http.json_depth import MAX_DEPTH, nesting_too_deep
from pasarela.http.redaction import REDACTED, redact_json
from pasarela.sandbox import Sandbox, SandboxConfig
from pasarela.sandbox.endpoint import parse_json
from pasarela.sandbox.errors import SandboxError
from pasarela.sandbox.jsontext import MAX_BODY_DEPTH, dumps, loads
from pasarela.transfers import TransferWebhookReceiver
from pasarela.transfers.webhook_signature import body_signature
from support.recursion_limit import recursion_limit

SECRET = "whsec-0123456789"  # noqa: S105 (a test secret)
NOW = 1_700_000_000.0
WEBHOOK_ID = "1700000000000"  # the sender's clock in Unix milliseconds: NOW
LEVELS = [999, 1000, 1001, 100_000]


def _webhook(levels: int) -> bytes:
    """A webhook body nesting `levels` deep in all (the event's own object is the first level)."""
    inner = levels - 1
    return b'{"token":"tok-1","status":"PAID","x":' + b"[" * inner + b"]" * inner + b"}"


def _signed(body: bytes) -> dict[str, str]:
    return {"X-Kushki-Id": WEBHOOK_ID, "X-Kushki-Signature": body_signature(SECRET, body, WEBHOOK_ID),
            "X-Kushki-Key": "merchant-1"}


def _at_depth(frames: int, call: Any) -> Any:
    """call() from `frames` Python frames deeper than here."""
    return call() if frames == 0 else _at_depth(frames - 1, call)


def test_the_count_is_of_levels_not_of_brackets() -> None:
    assert nesting_too_deep("[" * 1000 + "]" * 1000) is None
    assert nesting_too_deep("[" * 1001 + "]" * 1001) == 1000
    assert nesting_too_deep('["' + "[" * 5000 + '"]' + "[]" * 5000) is None  # brackets in a string, siblings
    assert MAX_DEPTH == 1000


@pytest.mark.parametrize("levels", LEVELS)
@pytest.mark.parametrize("frames", [0, 600])
def test_a_webhook_body_is_read_up_to_1000_levels_and_refused_beyond(levels: int, frames: int) -> None:
    body = _webhook(levels)
    events: list[Any] = []
    receiver = TransferWebhookReceiver(events.append, secret=SECRET, clock=lambda: NOW)
    reply = _at_depth(frames, lambda: receiver.handle(_signed(body), body))
    if levels <= MAX_DEPTH:
        assert reply.status == 200 and len(events) == 1
    else:
        assert reply.status == 400 and events == []


@pytest.mark.parametrize("levels", [1001, 100_000])
def test_a_webhook_body_beyond_1000_levels_is_refused_under_a_raisedrecursion_limit(levels: int) -> None:
    body = _webhook(levels)
    receiver = TransferWebhookReceiver(lambda event: None, secret=SECRET, clock=lambda: NOW)
    with recursion_limit(5000):
        assert receiver.handle(_signed(body), body).status == 400


@pytest.mark.parametrize("levels", LEVELS)
def test_an_audit_record_beyond_1000_levels_is_the_placeholder_under_a_raisedrecursion_limit(levels: int) -> None:
    body = b'{"number":"4242424242424242","x":' + b"[" * (levels - 1) + b"]" * (levels - 1) + b"}"
    with recursion_limit(5000):  # enough for json and the redaction to go 1000 levels deep, not 100,000
        recorded = recordable_body(body)
    if levels <= MAX_DEPTH:
        assert recorded["number"] == "424242******4242"
    else:
        assert recorded == TOO_DEEP


@pytest.mark.parametrize("levels", [1001, 100_000])
def test_an_audit_record_beyond_1000_levels_is_the_placeholder(levels: int) -> None:
    body = b"[" * levels + b"]" * levels
    assert recordable_body(body) == TOO_DEEP
    assert _at_depth(600, lambda: recordable_body(body)) == TOO_DEEP


def _innermost(value: Any) -> tuple[Any, int]:
    """The value inside a chain of one-item lists and one-member objects, and how many levels it took."""
    levels = 0
    while isinstance(value, (list, dict)) and len(value) == 1:
        value, levels = next(iter(value.values())) if isinstance(value, dict) else value[0], levels + 1
    return value, levels


@pytest.mark.parametrize("levels", LEVELS)
@pytest.mark.parametrize("frames", [0, 600])
def test_redaction_walks_any_depth_from_any_caller(levels: int, frames: int) -> None:
    """What an audit record redacts (a parsed body within MAX_DEPTH; 100,000 levels: the walk has no limit of its
    own) is redacted whole from a shallow or a deep caller: the walk does not recurse."""
    chain: Any = {"pan": "4242424242424242", "cvv": "123"}  # the last level
    for _ in range(levels - 2):
        chain = [chain]
    redacted = _at_depth(frames, lambda: redact_json({"x": chain}))  # `levels` deep in all
    leaf, depth = _innermost(redacted)
    assert depth == levels - 1  # the levels above the last
    assert leaf == {"pan": "424242******4242", "cvv": REDACTED}


@pytest.mark.parametrize("levels", [MAX_BODY_DEPTH, MAX_BODY_DEPTH + 1, *LEVELS])
@pytest.mark.parametrize("frames", [0, 600])
def test_the_sandbox_reads_a_body_up_to_64_levels_from_any_caller(levels: int, frames: int) -> None:
    """Every sandbox request body goes through parse_json (amounts as Decimal): within MAX_BODY_DEPTH it is read
    whole from a shallow or a deep caller, beyond it refused by the count (jsonschema never sees it)."""
    assert MAX_BODY_DEPTH == 64
    body = b'{"amount":1.10,"x":' + b"[" * (levels - 1) + b"]" * (levels - 1) + b"}"
    if levels > MAX_BODY_DEPTH:
        with pytest.raises(SandboxError, match="nests deeper than 64 levels"):
            _at_depth(frames, lambda: parse_json(body))
        return
    parsed = _at_depth(frames, lambda: parse_json(body))
    assert type(parsed["amount"]) is Decimal and str(parsed["amount"]) == "1.10"
    assert _innermost(parsed["x"]) == ([], levels - 2)  # levels - 1 lists, the last empty


@pytest.mark.parametrize("levels", [999, 1000])
@pytest.mark.parametrize("frames", [0, 600])
def test_a_stored_row_is_read_back_from_any_caller(levels: int, frames: int) -> None:
    """The sandbox's rows hold bodies it accepted (within MAX_DEPTH): read back the same from any caller."""
    text = '{"a":' * (levels - 1) + "[2.5]" + "}" * (levels - 1)
    value, depth = _innermost(_at_depth(frames, lambda: loads(text)))
    assert (value, depth) == (2.5, levels)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[TestClient]:
    with Sandbox(SandboxConfig(public_key="pk-depth", private_key="sk-depth", settle_after=None)) as running:
        app: Any = running.app
        with TestClient(app, raise_server_exceptions=False) as client:
            yield client


@pytest.mark.parametrize("levels", [65, 999, 1000, 1001, 100_000])
def test_the_sandbox_refuses_a_body_beyond_64_levels_by_its_count(sandbox: TestClient, levels: int) -> None:
    body = b'{"currency":"USD","x":' + b"[" * (levels - 1) + b"]" * (levels - 1) + b"}"
    with recursion_limit(5000):  # the count, not the interpreter's recursion, refuses it
        answer = sandbox.post("/transfer/v1/tokens", content=body,
                              headers={"Public-Merchant-Id": "pk-depth", "Content-Type": "application/json"})
    assert answer.status_code == 400
    assert answer.json()["message"] == "body: nests deeper than 64 levels"


@pytest.mark.parametrize("levels", [999, 1000])
@pytest.mark.parametrize("frames", [0, 600])
def test_an_audit_record_within_1000_levels_is_recorded_from_any_caller(levels: int, frames: int) -> None:
    """What the sandbox's access log records of a body it accepted (recordable_body, the parse of pasarela's client
    audit too): parsed and redacted from a shallow or a deep caller, never the placeholder."""
    body = b'{"number":"4242424242424242","x":' + b"[" * (levels - 1) + b"]" * (levels - 1) + b"}"
    recorded = _at_depth(frames, lambda: recordable_body(body))
    assert recorded != TOO_DEEP
    assert recorded["number"] == "424242******4242"
    assert _innermost(recorded["x"]) == ([], levels - 2)


@pytest.mark.parametrize("levels", [999, 1000])
@pytest.mark.parametrize("frames", [0, 600])
def test_a_row_is_written_to_the_store_from_any_caller(levels: int, frames: int) -> None:
    """What the sandbox stores (jsontext.dumps: a body it accepted, within MAX_DEPTH, amounts as Decimal) is written
    whole, as json.dumps writes it, from a shallow or a deep caller."""
    value: Any = [Decimal("1.10")]
    for _ in range(levels - 1):
        value = {"a": value}
    expected = '{"a":' * (levels - 1) + "[1.1]" + "}" * (levels - 1)
    assert _at_depth(frames, lambda: dumps(value)) == expected


@pytest.mark.parametrize("levels", [999, 1000])
@pytest.mark.parametrize("frames", [0, 600])
def test_a_jsonl_audit_log_writes_a_record_within_1000_levels_from_any_caller(tmp_path: Path, levels: int,
                                                                            frames: int) -> None:
    """The ready audit hook writes the whole record of a body within MAX_DEPTH, from a shallow or a deep caller (it
    raised RecursionError, logged and ignored by notify: the record was lost)."""
    body = b'{"cvv":"123","x":' + b"[" * (levels - 1) + b"]" * (levels - 1) + b"}"
    record = AuditRecord(at=NOW, attempt=1, method="POST", url="https://api.example/charges",
                         request_headers={"Content-Type": "application/json"}, request_body=recordable_body(body),
                         idempotency_key=None, status=201, response_body=None, error=None)
    log = JsonlAuditLog(tmp_path / "audit.jsonl")
    _at_depth(frames, lambda: log(record))
    with recursion_limit(5000):  # the record is one level deeper than its body: read back by json, given the room
        written = json.loads((tmp_path / "audit.jsonl").read_text())
    assert written["request_body"]["cvv"] == REDACTED
    assert _innermost(written["request_body"]["x"]) == ([], levels - 2)
    assert written["request_headers"] == {"Content-Type": "application/json"} and written["status"] == 201


@pytest.mark.parametrize("levels", [MAX_BODY_DEPTH, 999, 1000])
def test_the_sandbox_access_log_records_a_body_as_the_handlers_read_it(sandbox: TestClient, levels: int) -> None:
    """The sandbox's audited request path: a body within MAX_BODY_DEPTH is recorded parsed and redacted, stored and
    listed whole; a deeper one, which the handlers refuse, as its length and type (the dashboard renders every
    record with json's recursive writer: 1000 levels had made a transfer's page a 500)."""
    body = b'{"currency":"USD","cvv":"987","x":' + b"[" * (levels - 1) + b"]" * (levels - 1) + b"}"
    sandbox.post("/transfer/v1/tokens", content=body,
                 headers={"Public-Merchant-Id": "pk-depth", "Content-Type": "application/json"})
    listed = sandbox.get("/sandbox/v1/requests", params={"limit": 1}, headers={"Private-Merchant-Id": "sk-depth"})
    assert listed.status_code == 200
    recorded = listed.json()["items"][0]["body"]
    if levels > MAX_BODY_DEPTH:
        assert recorded == f"({len(body)} bytes of application/json, not recorded: the body nests deeper than " \
                           "64 levels)"
        return
    assert recorded != TOO_DEEP and recorded["cvv"] == REDACTED
    assert _innermost(recorded["x"]) == ([], levels - 2)
