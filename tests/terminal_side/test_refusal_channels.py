"""What a forger reads is the same for every forgery (issue 53, item 1).

A forger holds no credentials but chooses what it sends: a captured request's ciphertext with its last blocks changed
(the CBC padding-oracle probe: a bad padding, or a valid one over garbage that is not UTF-8), or any other ciphertext,
or the captured headers with another signature. Whatever such a request decrypts to, it is refused before its
signature verifies; which refusal it met would be a padding oracle (one bit a probe, a whole request read back a byte
at a time). So every channel a holder of no credentials may read must be identical between those classes: the HTTP
answer (status, body, headers), the log line and its structured fields, the metrics as Prometheus serves them, and the
spans. The gateway is docs/operating.md's recipe, in a process of its own (tests/support/refusal_channels_server.py):
uvicorn, TerminalAuthMiddleware, the real OpenTelemetry SDK with the real Prometheus exporter, pasarela's JSON log
lines.

Two refusals keep causes of their own and are checked to be what they are: a stale timestamp (``clock_skew``) and a
replay of a genuine request (``replayed``). Both are decided from what the request shows, its timestamp header or a
signature that verified, so they tell the forger nothing it did not send (docs/security.md).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import httpx
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from prometheus_client.parser import text_string_to_metric_families

import pasarela
from pasarela import AuthError, reference
from pasarela.errors import NOT_VERIFIED
from pasarela.terminal import reference as primitives
from pasarela.terminal.replay import Verifier
from support.faulty_clients import BUSINESS_CODE, SERIAL

SERVER = Path(__file__).resolve().parents[1] / "support" / "refusal_channels_server.py"
IV = bytes(range(16))
PLAINTEXT = b'{"amount":125.5,"card":{"number":"4111111111111111","cvv":"123"},"currency":"COP"}'


def _pkcs7(text: bytes) -> bytes:
    pad = 16 - len(text) % 16
    return text + bytes([pad]) * pad


def _request(timestamp: int, blocks: bytes, signed: bytes) -> tuple[dict[str, str], bytes]:
    """Headers and body of a request whose decrypted blocks are exactly ``blocks`` (padding included, valid or not),
    signed as the server would sign ``signed``."""
    derived = primitives.derive(BUSINESS_CODE.encode(), SERIAL.encode(), timestamp)
    encryptor = Cipher(algorithms.AES(derived.aes_key), modes.CBC(IV)).encryptor()
    data = f"{IV.hex()}:{(encryptor.update(blocks) + encryptor.finalize()).hex()}"
    headers = {"Authorization": "Basic " + primitives.sign(signed, derived.encoded_key), "timestamp": str(timestamp),
               "Content-Type": "application/json"}
    return headers, json.dumps({"data": data}, separators=(",", ":")).encode()


def _padding_probe(timestamp: int, last: int, variant: int) -> tuple[dict[str, str], bytes]:
    """The attack's probe of a captured request, C_1..C_(n-2) || R || C_n, its last plaintext byte ``last`` (0x01: a
    valid padding over a garbage block; 0x00: a bad padding), made by a forger from the captured request alone."""
    genuine = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal(json.loads(PLAINTEXT), timestamp=timestamp, iv=IV)
    iv_hex, _, ciphertext_hex = genuine.data.partition(":")
    ciphertext = bytes.fromhex(ciphertext_hex)
    decrypted_last = bytes(p ^ c for p, c in zip(_pkcs7(genuine.plaintext)[-16:], ciphertext[-32:-16]))
    garbage = bytes([0x80 | variant] * 15)  # (a block of 0x8x bytes: the text before the last block is not UTF-8)
    forged = ciphertext[:-32] + garbage + bytes([decrypted_last[15] ^ last]) + ciphertext[-16:]
    body = json.dumps({"data": f"{iv_hex}:{forged.hex()}"}, separators=(",", ":")).encode()
    return dict(genuine.headers), body


def _classes(now: int) -> dict[str, Callable[[int], tuple[dict[str, str], bytes]]]:
    """Every class of forged request, each a function of a variant number (three of each are sent)."""
    def plaintext(text: bytes) -> Callable[[int], tuple[dict[str, str], bytes]]:
        return lambda variant: _request(now, _pkcs7(text + b" " * variant), b'{"amount":1}')

    def wrong_signature(variant: int) -> tuple[dict[str, str], bytes]:
        headers, body = _request(now, _pkcs7(PLAINTEXT), b'{"amount":%d}' % variant)
        return headers, body

    return {
        "bad padding (probe)": lambda variant: _padding_probe(now, 0x00, variant),
        "valid padding over text that is not UTF-8 (probe)": lambda variant: _padding_probe(now, 0x01, variant),
        "bad padding": lambda variant: _request(now, _pkcs7(PLAINTEXT)[:-1] + bytes([17 + variant]), PLAINTEXT),
        "not UTF-8": plaintext(b'{"amount":"\xff\xfe"}'),
        "not JSON": plaintext(b"amount=100&currency=COP"),
        "not an object": plaintext(b"[1,2,3]"),
        "a key member": plaintext(b'{"amount":1,"key":"x"}'),
        "a __proto__ member": plaintext(b'{"__proto__":{"admin":true},"amount":1}'),
        "wrong signature": wrong_signature,
    }


@dataclass
class Gateway:
    url: str
    metrics_url: str
    spans: Path
    log: Path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    folder = tmp_path_factory.mktemp("channels")
    app_port, metrics_port = _free_port(), _free_port()
    spans, log = folder / "spans.jsonl", folder / "log.jsonl"
    output = folder / "output.txt"
    with output.open("wb") as sink:
        process = subprocess.Popen([sys.executable, str(SERVER), str(app_port), str(metrics_port), str(spans),
                                    str(log)], stdout=sink, stderr=subprocess.STDOUT)
    found = Gateway(f"http://127.0.0.1:{app_port}", f"http://127.0.0.1:{metrics_port}/metrics", spans, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(found.url, timeout=1)
                httpx.get(found.metrics_url, timeout=1)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the gateway did not start: {output.read_text()}") from None
                time.sleep(0.1)
        yield found
    finally:
        process.terminate()
        process.wait(timeout=20)


def _counters(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample /metrics serves (pasarela's, and prometheus_client's of the process itself, which the caller
    leaves out: they move with time, not with requests)."""
    samples = {}
    for family in text_string_to_metric_families(httpx.get(url, timeout=10).text):
        for sample in family.samples:
            labels = frozenset((name, text) for name, text in sample.labels.items() if not name.startswith("otel_"))
            samples[(sample.name, labels)] = sample.value
    return samples


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _observed(gateway: Gateway, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """Everything a reader of the answer, the log, /metrics and the spans sees of one request, with what differs
    between any two requests whatever they are (the time, the trace and span ids, a duration) left out."""
    before_metrics = _counters(gateway.metrics_url)
    before_log, before_spans = len(_lines(gateway.log)), len(_lines(gateway.spans))
    answer = httpx.post(gateway.url + "/payments", content=body, headers=headers, timeout=10)
    after_metrics = _counters(gateway.metrics_url)
    changed = {key: after_metrics[key] - before_metrics.get(key, 0.0) for key in after_metrics
               if key[0].startswith("pasarela_") and after_metrics[key] != before_metrics.get(key, 0.0)}
    counted = {(name, labels): delta for (name, labels), delta in changed.items() if name.endswith("_total")}
    # the duration histogram samples one call in 64 whatever the request: its labels are kept, not its values
    sampled = {(name, labels) for name, labels in changed if not name.endswith("_total")}
    log = _lines(gateway.log)[before_log:]
    for line in log:
        assert len(line.pop("trace_id")) == 32 and len(line.pop("span_id")) == 16
        line.pop("time")
    spans = [{"name": span["name"], "kind": span["kind"], "status": span["status"], "attributes": span["attributes"],
              "events": span["events"]} for span in _lines(gateway.spans)[before_spans:]]
    return {"status": answer.status_code, "body": answer.content,
            "headers": sorted((name, value) for name, value in answer.headers.items() if name != "date"),
            "log": log, "counted": counted, "sampled": {labels for _, labels in sampled}, "spans": spans}


def test_every_forgery_reads_the_same_on_every_channel(gateway: Gateway) -> None:
    now = int(time.time())
    seen: dict[str, list[dict[str, Any]]] = {}
    for name, forge in _classes(now).items():
        seen[name] = [_observed(gateway, *forge(variant)) for variant in range(3)]
    first = seen["bad padding (probe)"][0]
    assert first["status"] == 401 and json.loads(first["body"])["code"] == "AUTH-001"
    assert [line["cause"] for line in first["log"]] == ["not_verified"]
    assert first["counted"] == {("pasarela_terminal_opens_total", frozenset({("outcome", "not_verified")})): 1.0}
    assert [span["attributes"] for span in first["spans"]] == [
        {"http.request.method": "POST", "pasarela.terminal.outcome": "not_verified"}]
    for name, observations in seen.items():
        for observed in observations:
            assert observed == first, name

    # decided from what the request shows: the same answer, a cause of its own
    genuine = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal({"amount": 1}, timestamp=now - 3600)
    stale = _observed(gateway, dict(genuine.headers), genuine.body)
    fresh = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal({"amount": 2}, timestamp=now)
    accepted = _observed(gateway, dict(fresh.headers), fresh.body)
    replayed = _observed(gateway, dict(fresh.headers), fresh.body)
    assert accepted["status"] == 200
    for observed, cause in ((stale, "clock_skew"), (replayed, "replayed")):
        assert (observed["status"], observed["body"], observed["headers"]) == (
            first["status"], first["body"], first["headers"])
        assert [line["cause"] for line in observed["log"]] == [cause]
        assert observed["counted"] == {("pasarela_terminal_opens_total", frozenset({("outcome", cause)})): 1.0}


def test_no_channel_holds_the_plaintext_or_the_signature(gateway: Gateway) -> None:
    headers, body = _padding_probe(int(time.time()), 0x01, 7)
    _observed(gateway, headers, body)
    read = gateway.log.read_text() + gateway.spans.read_text() + httpx.get(gateway.metrics_url, timeout=10).text
    assert "4111111111111111" not in read and headers["Authorization"][6:] not in read


ENTRIES: dict[str, Callable[[dict[str, str], bytes, int], Any]] = {
    "Terminal.open": lambda headers, body, now: pasarela.Terminal(BUSINESS_CODE, SERIAL).open(
        "POST", headers, body, now=now),
    "Terminal.open_bytes": lambda headers, body, now: pasarela.Terminal(BUSINESS_CODE, SERIAL).open_bytes(
        "POST", headers, body, now=now),
    "Terminal.open of text": lambda headers, body, now: pasarela.Terminal(BUSINESS_CODE, SERIAL).open(
        "POST", headers, body.decode(), now=now),
    "Verifier": lambda headers, body, now: Verifier(pasarela.Terminal(BUSINESS_CODE, SERIAL),
                                                    clock=lambda: now).open("POST", headers, body),
    "reference": lambda headers, body, now: reference.Terminal(BUSINESS_CODE, SERIAL).open(
        "POST", headers, body, now=now),
}


@pytest.mark.parametrize("entry", ENTRIES)
def test_every_entry_gives_every_forgery_the_one_reason(entry: str) -> None:
    now = 1763812800
    for name, forge in _classes(now).items():
        headers, body = forge(0)
        with pytest.raises(AuthError) as refused:
            ENTRIES[entry](headers, body, now)
        assert refused.value.reason == NOT_VERIFIED, name
        assert str(refused.value) == "AUTH-001: Invalid or expired credentials"
        assert refused.value.__cause__ is None
        assert refused.value.__context__ is None or refused.value.__suppress_context__, name
