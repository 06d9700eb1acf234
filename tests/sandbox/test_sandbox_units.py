"""The sandbox's pieces without a server: CLABE, QR PNG, scenarios, state machine, schema checks, the
OpenAPI document, webhook signing and the outbox dispatcher (clock and sender injected), storage, config."""

# ruff: noqa: S106 (test keys and secrets are fixtures)

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import struct
import subprocess
import sys
import time
import uuid
import zlib
from collections.abc import Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import segno
from starlette.routing import Route

from pasarela.errors import ConfigurationError
from pasarela.sandbox import SandboxConfig
from pasarela.sandbox.body_schema import check_body
from pasarela.sandbox.clabe import check_digit, is_valid, make_clabe
from pasarela.sandbox.clock import SandboxClock
from pasarela.sandbox.errors import SandboxError
from pasarela.sandbox.openapi import COMPONENTS, document
from pasarela.sandbox.qr import PNG_DATA_URI_PREFIX, png_data_uri
from pasarela.sandbox.scenarios import Outcome, colombia_scenario, document_outcome
from pasarela.sandbox.service import Sandbox
from pasarela.sandbox.states import PaymentWindow, TransferStatus, cancel, complete
from pasarela.sandbox.store import Store, Transfer
from pasarela.sandbox.webhooks import Answer, Backoff, Dispatcher, signed_headers
from pasarela.transfers import TransferWebhookReceiver
from pasarela.transfers.webhook_signature import verify_webhook_signature
from support.clocks import ManualClock

# --- CLABE ----------------------------------------------------------------------------------------


def test_clabe_check_digit_matches_a_published_example() -> None:
    # Banco del Bajío's example CLABE, 032 180 00011835971 9.
    assert check_digit("03218000011835971") == "9"
    assert is_valid("032180000118359719")


def test_clabe_is_valid_rejects_a_wrong_check_digit() -> None:
    assert not is_valid("032180000118359710")
    assert not is_valid("03218000011835971")


@pytest.mark.parametrize("seed", ["a", "token-1", "0" * 32, "ñ"])
def test_make_clabe_gives_18_digits_with_a_correct_check_digit(seed: str) -> None:
    clabe = make_clabe(seed)
    assert len(clabe) == 18 and clabe.isdigit() and is_valid(clabe)
    assert clabe.startswith("646180")


# --- QR -------------------------------------------------------------------------------------------


def _png_gray_rows(png: bytes) -> list[list[int]]:
    """Decode a greyscale or palette PNG (bit depth 1 to 8, one sample a pixel) into rows of samples."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    offset, idat, header = 8, b"", b""
    while offset < len(png):
        (length,) = struct.unpack(">I", png[offset:offset + 4])
        kind, data = png[offset + 4:offset + 8], png[offset + 8:offset + 8 + length]
        assert zlib.crc32(kind + data) == struct.unpack(">I", png[offset + 8 + length:offset + 12 + length])[0]
        header = data if kind == b"IHDR" else header
        idat += data if kind == b"IDAT" else b""
        offset += 12 + length
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert color in (0, 3) and depth in (1, 2, 4, 8) and interlace == 0
    raw, stride = zlib.decompress(idat), (width * depth + 7) // 8
    rows: list[list[int]] = []
    previous = bytearray(stride)
    for y in range(height):
        line = raw[y * (stride + 1):(y + 1) * (stride + 1)]
        row_filter, current = line[0], bytearray(line[1:])
        for i in range(stride):
            left = current[i - 1] if i else 0
            up, corner = previous[i], previous[i - 1] if i else 0
            if row_filter == 1:
                current[i] = (current[i] + left) & 0xFF
            elif row_filter == 2:
                current[i] = (current[i] + up) & 0xFF
            elif row_filter == 3:
                current[i] = (current[i] + (left + up) // 2) & 0xFF
            elif row_filter == 4:
                estimate = left + up - corner
                nearest = min((abs(estimate - left), 0, left), (abs(estimate - up), 1, up),
                              (abs(estimate - corner), 2, corner))[2]
                current[i] = (current[i] + nearest) & 0xFF
        bits = "".join(f"{byte:08b}" for byte in current)
        rows.append([int(bits[x * depth:(x + 1) * depth], 2) for x in range(width)])
        previous = current
    return rows


def test_png_data_uri_is_a_real_png_of_the_qr_of_its_content() -> None:
    content = "http://127.0.0.1:8790/sandbox/pay/0123456789abcdef0123456789abcdef"
    uri = png_data_uri(content)
    assert uri.startswith(PNG_DATA_URI_PREFIX)
    rows = _png_gray_rows(base64.b64decode(uri[len(PNG_DATA_URI_PREFIX):], validate=True))
    expected = segno.make_qr(content, error="m", boost_error=False).matrix
    scale, border = 4, 4
    modules = len(rows) // scale - 2 * border
    assert modules == len(expected)
    dark = min(min(row) for row in rows)
    decoded = [[int(rows[(border + y) * scale][(border + x) * scale] == dark) for x in range(modules)]
               for y in range(modules)]
    assert decoded == [list(row) for row in expected]


# --- scenarios and states -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("figures", "name", "status", "code"),
    [
        ((10000, 0, 0), "paid", 201, None),
        ((0, 8403.36, 1596.64), "paid", 201, None),
        ((9999, 0, 0), "stays-initialized", 201, None),
        ((11000, 0, 0), "processor-error", 500, "QR-CODE-0001"),
        ((12000, 0, 0), "rejected", 201, None),
        ((13000, 0, 0), "timeout", None, None),
        ((99999999, 0, 0), "out-of-range", 400, "QR-CODE-0059"),
        ((10000, 10000, 0), "generic-success", 201, None),  # the mirrored form of 2.4 sums to 20000
        ((5000, 0, 0), "generic-success", 201, None),
    ],
)
def test_colombia_scenario_by_sum_of_the_three_fields(
    figures: tuple[float, float, float], name: str, status: Any, code: Any
) -> None:
    scenario = colombia_scenario(*(Decimal(str(figure)) for figure in figures))
    assert (scenario.name, scenario.http_status, scenario.error_code) == (name, status, code)


def test_document_outcome_declines_only_999999990() -> None:
    assert document_outcome("999999990") is Outcome.DECLINED
    assert document_outcome("123456789") is Outcome.APPROVED
    assert document_outcome(None) is Outcome.APPROVED


_OPEN = PaymentWindow(cancelled=False, locked=False, expires_at=1000.0)


def test_complete_moves_initialized_to_paid_or_rejected() -> None:
    assert complete(TransferStatus.INITIALIZED, _OPEN, Outcome.APPROVED, 10.0) is TransferStatus.PAID
    assert complete(TransferStatus.INITIALIZED, _OPEN, Outcome.DECLINED, 10.0) is TransferStatus.REJECTED


@pytest.mark.parametrize(
    ("status", "window", "now", "code"),
    [
        (TransferStatus.PAID, _OPEN, 10.0, "TRANSACTION_FINAL"),
        (TransferStatus.INITIALIZED, PaymentWindow(True, False, 1000.0), 10.0, "PAYMENT_CANCELLED"),
        (TransferStatus.INITIALIZED, _OPEN, 1000.0, "QR_EXPIRED"),
        (TransferStatus.INITIALIZED, PaymentWindow(False, True, None), 10.0, "SCENARIO_STAYS_INITIALIZED"),
    ],
)
def test_complete_refuses_what_cannot_be_paid(
    status: TransferStatus, window: PaymentWindow, now: float, code: str
) -> None:
    with pytest.raises(SandboxError) as caught:
        complete(status, window, Outcome.APPROVED, now)
    assert (caught.value.status, caught.value.code) == (409, code)


def test_cancel_on_a_final_status_is_t023() -> None:
    cancel(TransferStatus.INITIALIZED)
    for final in (TransferStatus.PAID, TransferStatus.REJECTED):
        with pytest.raises(SandboxError) as caught:
            cancel(final)
        assert caught.value.status == 400
        assert caught.value.body == {"code": "T023", "message": "Transaction has a final status."}


def test_qr_status_expires_after_ten_minutes() -> None:
    window = PaymentWindow(cancelled=False, locked=False, expires_at=600.0)
    assert window.qr_status(599.999) == "valid"
    assert window.qr_status(600.0) == "expired"
    assert PaymentWindow(True, False, 600.0).qr_status(0.0) == "cancelled"


def test_sandbox_clock_advances_only_forward() -> None:
    clock = SandboxClock(lambda: 1000.0)
    assert clock.advance(600) == 1600.0 and clock.now_ms() == 1_600_000
    with pytest.raises(ValueError):
        clock.advance(-1)


# --- schema checks and the document ---------------------------------------------------------------


def test_every_reference_in_the_document_resolves() -> None:
    text = json.dumps(document())
    for reference in {part.split('"')[0] for part in text.split('"$ref": "#/components/schemas/')[1:]}:
        assert reference in COMPONENTS


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ({"currency": "COP"}, "amount", "is required"),
        ({"currency": "EUR", "amount": {}}, "currency", "must be one of MXN, USD, COP"),
        ({"currency": "COP", "amount": {"subtotalIva": "1", "subtotalIva0": 0, "iva": 0}}, "amount.subtotalIva",
         "must be a number, got string"),
        ({"currency": "COP", "amount": {"subtotalIva": 0, "subtotalIva0": Decimal("1.001"), "iva": 0}},
         "amount.subtotalIva0", "must be a multiple of 0.01"),
        ({"currency": "COP", "amount": {"subtotalIva": 0, "subtotalIva0": -1, "iva": 0}}, "amount.subtotalIva0",
         "must be at least 0"),
        ({"currency": "COP", "amount": {"subtotalIva": 0, "subtotalIva0": 1, "iva": True}}, "amount.iva",
         "must be a number, got boolean"),
        ({"currency": "COP", "amount": {"subtotalIva": 0, "subtotalIva0": 1, "iva": 0}, "flow": {"type": "QR"}},
         "flow.processorName", "is required"),
        ({"currency": "COP", "amount": {"subtotalIva": 0, "subtotalIva0": 1, "iva": 0}, "email": "no at sign"},
         "email", "must be an e-mail address, such as name@example.com"),
        ({"currency": "COP", "amount": {"subtotalIva": 0, "subtotalIva0": 1, "iva": 0}, "documentNumber": " "},
         "documentNumber", "must not be blank"),
        ([], "body", "must be an object, got array"),
    ],
)
def test_check_names_the_field_that_breaks_the_schema(body: Any, field: str, reason: str) -> None:
    with pytest.raises(SandboxError) as caught:
        check_body(body, "TransferTokenRequest")
    assert caught.value.status == 400 and caught.value.field == field
    assert caught.value.message.startswith(f"{field}: {reason}")


def test_every_pattern_of_the_document_is_said_in_words() -> None:
    """A refusal for a pattern reaches people (the checkout shows it to the payer): never ``must match \\S``."""
    from pasarela.sandbox.body_schema import PATTERN_WORDS

    def patterns(schema: Any) -> Iterator[str]:
        if isinstance(schema, dict):
            if isinstance(schema.get("pattern"), str):
                yield schema["pattern"]
            for value in schema.values():
                yield from patterns(value)
        elif isinstance(schema, list):
            for value in schema:
                yield from patterns(value)

    used = set(patterns(document()))
    assert used == set(PATTERN_WORDS)  # each in words, and no words for a pattern the document no longer has
    for words in PATTERN_WORDS.values():
        assert words.startswith("must ") and "\\" not in words and "[" not in words


def test_check_names_array_items_and_closed_objects() -> None:
    with pytest.raises(SandboxError) as caught:
        check_body({"token": "t", "amount": {"subtotalIva": 0, "subtotalIva0": 1, "iva": 0, "currency": "COP"},
                    "capabilities": ["creation"]}, "ChargeRequest")
    assert caught.value.field == "capabilities[0]"
    with pytest.raises(SandboxError) as caught:
        check_body({"code": "x", "message": "y", "extra": 1}, "Error")
    assert caught.value.field == "extra"


def test_check_never_quotes_the_value_it_refuses() -> None:
    number = "4111111111111111111111"
    with pytest.raises(SandboxError) as caught:
        check_body({"card": {"name": "A", "number": number, "expiryMonth": "12", "expiryYear": "29"},
                    "totalAmount": 1, "currency": "COP"}, "CardTokenRequest")
    assert caught.value.field == "card.number"
    assert number not in str(caught.value) and number not in json.dumps(caught.value.body)


def test_multiple_of_is_decided_in_decimal_arithmetic() -> None:
    # 0.07 / 0.01 is 7.000000000000001 in binary floating point: a float check would refuse it.
    check_body({"currency": "COP", "amount": {"subtotalIva": Decimal("0.07"), "subtotalIva0": Decimal("10.01"),
                                              "iva": 0}, "flow": {"processorName": "BRE-B", "type": "QR"}},
               "TransferTokenRequest")


def test_check_accepts_a_valid_body() -> None:
    check_body({"currency": "MXN", "amount": {"subtotalIva": 1000, "subtotalIva0": 0, "iva": Decimal("160.00")},
                "documentType": "CURP", "documentNumber": "123", "email": "a@b.mx", "unknown": [1]},
               "TransferTokenRequest")


def test_every_route_is_in_the_document_and_every_path_is_served() -> None:
    with Sandbox() as sandbox:
        served = {(method, route.path) for route in sandbox.app.starlette.routes if isinstance(route, Route)
                  for method in route.methods or () if method != "HEAD"}
    documented = {(method.upper(), path) for path, item in document()["paths"].items() for method in item}
    terminal = {entry for entry in documented if entry[1].startswith("/terminal/")}
    assert served == documented - terminal


# --- webhooks -------------------------------------------------------------------------------------

_CONFIG = SandboxConfig(webhook_url="http://127.0.0.1:9/hooks", webhook_secret="s3cret-hook",
                        webhook_backoff=2.0, webhook_backoff_max=30.0)


def _transfer(token: str = "t" * 32) -> Transfer:
    reference = str(uuid.uuid5(uuid.NAMESPACE_URL, token))
    return Transfer(token=token, reference=reference, country="CO", variant="qr",
                    status=TransferStatus.INITIALIZED, currency="COP",
                    amount={"subtotalIva": 0, "subtotalIva0": 10000, "iva": 0}, ticket_number="1" * 18,
                    created=1000.0, updated=1000.0, window=PaymentWindow(False, False, 1600.0), document_number=None,
                    callback_url=None, clabe=None, reference_code=None, metadata={"order": "42"})


def test_signed_headers_verify_with_the_receiver_and_by_hand() -> None:
    body = b'{"token":"abc","status":"approvedTransaction"}'
    headers = signed_headers(_CONFIG, "1700000000000", body)
    verify_webhook_signature(headers, body, "s3cret-hook", merchant_id=_CONFIG.public_key, clock=lambda: 1.7e9)
    by_hand = hmac.new(b"s3cret-hook", body + b".1700000000000", hashlib.sha256).hexdigest()
    assert headers["X-Kushki-Signature"] == by_hand
    assert headers["X-Kushki-SimpleSignature"] == hmac.new(b"s3cret-hook", b"1700000000000", hashlib.sha256).hexdigest()
    assert headers["X-Kushki-Key"] == _CONFIG.public_key
    assert "s3cret-hook" not in json.dumps(headers)


def test_backoff_doubles_up_to_the_maximum_with_jitter() -> None:
    low, high = Backoff(2.0, 30.0, jitter=lambda: 0.0), Backoff(2.0, 30.0, jitter=lambda: 0.999)
    assert [low.delay(n) for n in (1, 2, 3, 4, 5, 6)] == [1.0, 2.0, 4.0, 8.0, 15.0, 15.0]
    assert high.delay(1) == pytest.approx(2.0, abs=0.01) and high.delay(9) == pytest.approx(30.0, abs=0.1)


class Recorder:
    """A webhook receiver stand-in: answers from a script, remembers every delivery."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.deliveries: list[tuple[str, Mapping[str, str], bytes]] = []
        self.received_at: list[float] = []

    def __call__(self, url: str, headers: Mapping[str, str], body: bytes) -> Answer:
        self.deliveries.append((url, headers, body))
        self.received_at.append(time.time())
        answer = self.answers.pop(0) if self.answers else 200
        if isinstance(answer, Exception):
            raise answer
        return Answer(int(answer))


def _sandbox_with(sender: Recorder, clock: ManualClock, config: SandboxConfig = _CONFIG) -> Sandbox:
    return Sandbox(config, clock=clock, sender=sender, backoff=Backoff(2.0, 30.0, jitter=lambda: 0.0))


def _queue(sandbox: Sandbox, status: TransferStatus) -> None:
    from pasarela.sandbox.webhooks import enqueue_event

    with sandbox.store.write() as tx:
        enqueue_event(tx, _transfer(), status, sandbox.clock.now())


def test_dispatcher_retries_with_backoff_until_200_then_never_again() -> None:
    clock, sender = ManualClock(1000.0), Recorder(503, ConnectionRefusedError("refused"), 204, 200)
    sandbox = _sandbox_with(sender, clock)
    _queue(sandbox, TransferStatus.PAID)
    dispatcher: Dispatcher = sandbox.dispatcher
    first_pass = time.time()
    assert dispatcher.deliver_due() == 0  # 503
    assert dispatcher.deliver_due() == 0  # not due before 1 s
    clock.now += 1.0
    assert dispatcher.deliver_due() == 0  # refused
    clock.now += 1.999
    assert dispatcher.deliver_due() == 0 and len(sender.deliveries) == 2
    clock.now += 0.001
    assert dispatcher.deliver_due() == 0  # 204 is not 200
    clock.now += 4.0
    assert dispatcher.deliver_due() == 1
    clock.now += 3600.0
    assert dispatcher.deliver_due() == 0 and len(sender.deliveries) == 4
    bodies = {body for _, _, body in sender.deliveries}
    assert len(bodies) == 1  # every retry is the same event, same bytes
    # ...but each attempt carries the wall-clock time it was sent at (not the simulator's clock, which says
    # 1970 here and jumped an hour), signed afresh: a retry after a long outage is still fresh.
    sent_at = [int(headers["X-Kushki-Id"]) for _, headers, _ in sender.deliveries]
    assert int(first_pass * 1000) <= sent_at[0] and sent_at == sorted(sent_at)
    assert all(sent <= received * 1000 for sent, received in zip(sent_at, sender.received_at))
    for _, headers, body in sender.deliveries:
        verify_webhook_signature(headers, body, "s3cret-hook", merchant_id=_CONFIG.public_key)
    with sandbox.store.read() as tx:
        [entry] = tx.outbox(10)
    assert entry.delivered_at == clock.now - 3600.0 and entry.attempts == 4 and entry.last_error is None
    sandbox.close()


def test_dispatcher_body_carries_the_documented_fields() -> None:
    clock, sender = ManualClock(1000.0), Recorder()
    sandbox = _sandbox_with(sender, clock)
    _queue(sandbox, TransferStatus.REJECTED)
    assert sandbox.dispatcher.deliver_due() == 1
    url, headers, body = sender.deliveries[0]
    event = json.loads(body)
    assert url == _CONFIG.webhook_url
    assert event["status"] == "declinedTransaction" and event["token"] == "t" * 32
    assert event["amount"] == {"subtotalIva": 0, "subtotalIva0": 10000, "iva": 0}
    assert event["ticketNumber"] == "1" * 18 and event["created"] == 1_000_000
    assert event["transactionReference"] == _transfer().reference and event["metadata"] == {"order": "42"}
    received: list[Any] = []
    receiver = TransferWebhookReceiver(received.append, secret="s3cret-hook", merchant_id=_CONFIG.public_key)
    assert receiver.handle(headers, body).status == 200
    assert received[0].state.value == "rejected"
    sandbox.close()


def test_dispatcher_without_a_url_keeps_events_pending() -> None:
    clock, sender = ManualClock(1000.0), Recorder()
    sandbox = _sandbox_with(sender, clock, SandboxConfig())
    _queue(sandbox, TransferStatus.PAID)
    assert sandbox.dispatcher.deliver_due() == 0 and not sender.deliveries
    with sandbox.store.read() as tx:
        assert tx.due(clock.now, 10)
    sandbox.close()


def test_store_keeps_committed_state_and_drops_a_failed_transaction(tmp_path: Path) -> None:
    path = tmp_path / "sandbox.sqlite3"
    store = Store(path)
    with store.write() as tx:
        tx.add_transfer(_transfer("a" * 32))
    with pytest.raises(RuntimeError), store.write() as tx:
        tx.add_transfer(_transfer("b" * 32))
        raise RuntimeError("half-way")
    store.close()
    reopened = Store(path)
    with reopened.read() as tx:
        assert tx.transfer("a" * 32) is not None and tx.transfer("b" * 32) is None
        mode = tx._db.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    reopened.close()


# --- configuration --------------------------------------------------------------------------------


def test_config_repr_hides_the_secrets() -> None:
    config = SandboxConfig(private_key="priv-XYZ", webhook_secret="hook-XYZ", business_code="biz-XYZ")
    text = repr(config)
    assert "XYZ" not in text and "<hidden>" in text
    with pytest.raises(TypeError):
        __import__("pickle").dumps(config)


@pytest.mark.parametrize(
    "changes",
    [{"ecuador_processor": "card"}, {"private_key": "sandbox-public-key"}, {"webhook_url": "ftp://x"},
     {"public_key": "has space"}, {"timeout_delay": -1}, {"webhook_backoff": 0}, {"settle_after": -1},
     {"public_url": "127.0.0.1:8790"}, {"cors_origins": "*"}, {"webhook_concurrency": 0},
     {"cors_origins": ("https://shop.test/",)}, {"cors_origins": ("shop.test",)}],
)
def test_config_refuses_bad_values(changes: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        SandboxConfig(**changes)


def test_import_pasarela_does_not_import_the_sandbox_nor_its_dependencies() -> None:
    probe = ("import sys, pasarela, pasarela.cards, pasarela.transfers, pasarela.sandbox;"
             "print(sorted(m for m in ('uvicorn', 'segno', 'starlette', 'jsonschema', 'pasarela.sandbox.app')"
             " if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"
