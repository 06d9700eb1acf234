"""pasarela.diagnose names each cause of AUTH-001 from a client that makes exactly that mistake."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pasarela
from pasarela import Diagnosis, diagnose, reference
from pasarela.cli import main
from pasarela.terminal.diagnose import CAUSES
from support import faulty_clients as fc
from support.cli import run_cli
from support.faulty_clients import BUSINESS_CODE, NOON, SERIAL, Captured, SpecClient
from support.strategies import sealable_objects

PAYLOAD = {"amount": 100, "currency": "COP", "reference": "order-1042", "note": "café"}


def _diagnose(request: Captured, *, now: float = NOON, business_code: str = BUSINESS_CODE) -> Diagnosis:
    return diagnose(request.method, request.headers, request.body, request.params, business_code=business_code,
                    terminal_serial=SERIAL, now=now)


_DERIVED = reference.derive(BUSINESS_CODE.encode(), SERIAL.encode(), NOON)
SERVER_SECRETS = {BUSINESS_CODE, _DERIVED.password, _DERIVED.encoded_key, _DERIVED.aes_key.decode("ascii")}


def _no_secrets(verdict: Diagnosis, client: SpecClient) -> None:
    texts = [str(verdict), repr(verdict), *(str(v) for v in dataclasses.asdict(verdict).values())]
    for secret in client.secrets | SERVER_SECRETS:
        assert all(secret not in text for text in texts), secret


def _check(client: SpecClient, cause: str, payload: Optional[dict[str, Any]] = PAYLOAD, *, method: str = "POST",
           now: int = NOON, sealed_at: Optional[int] = None) -> Diagnosis:
    request = client.request(payload, method=method, now=now if sealed_at is None else sealed_at)
    verdict = _diagnose(request, now=now)
    assert verdict.cause == cause, str(verdict)
    assert verdict.cause in CAUSES
    assert verdict.explanation and verdict.fix
    _no_secrets(verdict, client)
    if cause != "valid":  # the service refuses what diagnose finds faulty
        with pytest.raises(pasarela.AuthError):
            pasarela.Terminal(BUSINESS_CODE, SERIAL).open(request.method, request.headers, request.body,
                                                          request.params, now=now)
    return verdict


# --- the spec's table, in order --------------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH"])
def test_diagnose_valid_request(method: str) -> None:
    verdict = _check(SpecClient(), "valid", method=method)
    assert verdict.valid


def test_spec_client_is_byte_identical_to_seal() -> None:
    request = SpecClient().request(PAYLOAD, now=NOON, iv=bytes(range(16)))
    sealed = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal(PAYLOAD, timestamp=NOON, iv=bytes(range(16)))
    assert request.headers == sealed.headers
    assert json.loads(request.body or b"") == json.loads(sealed.body or b"")


@given(sealable_objects(), st.sampled_from(["GET", "POST"]))
def test_diagnose_any_sealed_request_is_valid(payload: dict[str, Any], method: str) -> None:
    sealed = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal(payload, method=method, timestamp=NOON)
    verdict = diagnose(method, sealed.headers, sealed.body, sealed.params, business_code=BUSINESS_CODE,
                       terminal_serial=SERIAL, now=NOON)
    assert verdict.valid, str(verdict)


class ProtoClient(SpecClient):
    """A JavaScript client whose payload has a top-level "__proto__" member (JSON.parse makes it an own
    property), signed as a server that keeps the member (obj.key = ...) or drops it (Object.assign) computes."""

    def __init__(self, drops: bool) -> None:
        super().__init__()
        self.drops = drops

    def request_json(self, payload: Optional[dict[str, Any]]) -> bytes:
        return b'{"__proto__":{"admin":true},"amount":100}'

    def signed(self, payload: Optional[dict[str, Any]], request_json: bytes, encoded_key: str) -> bytes:
        return super().signed(payload, b'{"amount":100}' if self.drops else request_json, encoded_key)


@pytest.mark.parametrize("drops", [False, True], ids=["obj.key=", "Object.assign"])
def test_diagnose_names_a_top_level_proto(drops: bool) -> None:
    verdict = _check(ProtoClient(drops), "proto_in_payload")
    assert "__proto__" in verdict.explanation and "Object.assign" in verdict.explanation


def test_diagnose_timestamp_in_milliseconds() -> None:
    verdict = _check(fc.MillisecondsClient(), "timestamp_milliseconds")
    assert "13 digits" in verdict.explanation and str(NOON) in verdict.fix


@pytest.mark.parametrize(("skew", "words"), [(400, "6 min 40 s ahead"), (-301, "5 min 01 s behind"),
                                             (-5 * 3600, "local time")])
def test_diagnose_clock_outside_tolerance(skew: int, words: str) -> None:
    verdict = _check(fc.SkewedClockClient(skew), "clock_skew")
    assert verdict.skew_seconds == skew
    assert words in verdict.explanation
    assert "Apart from the clock, the request is correct" in verdict.explanation


@pytest.mark.parametrize("skew", [300, -300])
def test_diagnose_clock_at_the_tolerance_edge_is_valid(skew: int) -> None:
    _check(fc.SkewedClockClient(skew), "valid")


def test_diagnose_clock_skew_with_another_fault() -> None:
    class SkewedAndUppercase(fc.UppercaseHexClient, fc.SkewedClockClient):
        pass

    verdict = _check(SkewedAndUppercase(900), "clock_skew")
    assert "uppercase_signature" in verdict.explanation


@pytest.mark.parametrize(("minutes", "label"), [(-300, "UTC-05:00"), (-180, "UTC-03:00"), (60, "UTC+01:00"),
                                                (330, "UTC+05:30"), (-570, "UTC-09:30"), (840, "UTC+14:00")])
def test_diagnose_formatted_date_in_local_time(minutes: int, label: str) -> None:
    verdict = _check(fc.LocalTimeClient(minutes), "local_time")
    assert verdict.offset == label
    assert label in verdict.explanation and "corrected, the request verifies" in verdict.explanation


def test_diagnose_local_time_at_midnight() -> None:
    # At 00:30 UTC a UTC-05:00 client is still on the previous day: the date parts differ too.
    _check(fc.LocalTimeClient(-300), "local_time", now=NOON - 11 * 3600 - 1800)


def test_diagnose_key_inside_the_encrypted_payload() -> None:
    _check(fc.KeyInPayloadClient(), "key_in_payload")


@pytest.mark.parametrize("client", [fc.EmptyStringClient(), fc.EmptyStringSignedOnlyClient()],
                         ids=["encrypts-empty", "encrypts-braces"])
def test_diagnose_empty_string_signed_on_abort(client: SpecClient) -> None:
    verdict = _check(client, "empty_string_signed", None, method="GET")
    assert "{}" in verdict.fix


def test_diagnose_abort_signing_braces_is_valid() -> None:
    _check(SpecClient(), "valid", None, method="GET")


@pytest.mark.parametrize(
    ("options", "payload", "serialization"),
    [
        ({}, PAYLOAD, "json.dumps(data)"),
        ({"separators": (",", ":")}, PAYLOAD, 'json.dumps(data, separators=(",", ":"), ensure_ascii=True)'),
        ({"ensure_ascii": False}, PAYLOAD, "json.dumps(data, ensure_ascii=False)"),
        ({"separators": (",", ":"), "ensure_ascii": False, "sort_keys": True}, PAYLOAD,
         'json.dumps(data, separators=(",", ":"), ensure_ascii=False, sort_keys=True)'),
        ({"indent": 2, "ensure_ascii": False}, PAYLOAD, "json.dumps(data, indent=2, ensure_ascii=False)"),
        ({"separators": (",", ":")}, {"amount": 100.0, "currency": "COP"},
         'json.dumps(data, separators=(",", ":")) with integral floats'),
    ],
    ids=["defaults", "ensure_ascii", "spaces", "sorted", "indented", "floats"],
)
def test_diagnose_body_reserialized_after_signing(options: dict[str, Any], payload: dict[str, Any],
                                                  serialization: str) -> None:
    verdict = _check(fc.ReserializingClient(**options), "reserialized", payload)
    assert verdict.serialization == serialization
    assert serialization in verdict.explanation


def test_diagnose_reserialized_unrecognized() -> None:
    class SignsAnotherPayload(SpecClient):
        def signed(self, payload: Optional[dict[str, Any]], request_json: bytes, encoded_key: str) -> bytes:
            return super().signed({"amount": 999}, b'{"amount":999}', encoded_key)

    verdict = _check(SignsAnotherPayload(), "reserialized")
    assert verdict.serialization is None and "not recognized" in verdict.explanation


# --- beyond the table ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client", "cause"),
    [
        (fc.NoBasicPrefixClient(), "missing_basic_prefix"),
        (fc.UppercaseHexClient(), "uppercase_signature"),
        (fc.SingleUnderscoreClient(), "single_underscore_key"),
        (fc.WrongCredentialsClient(), "wrong_credentials"),
        (fc.UnsignedKeyClient(), "key_not_signed"),
        (fc.NoBase64Client(), "signed_without_base64"),
    ],
    ids=lambda value: value if isinstance(value, str) else type(value).__name__,
)
def test_diagnose_other_causes(client: SpecClient, cause: str) -> None:
    _check(client, cause)


def test_diagnose_wrong_serial() -> None:
    _check(SpecClient(terminal_serial="SN-0043"), "wrong_credentials")


def test_diagnose_formatted_date_of_another_minute() -> None:
    # sealed at 11:59:59, formattedDate read a second later: 12:00
    verdict = _check(fc.MinuteMismatchClient(), "minute_mismatch", sealed_at=NOON - 1)
    assert "next minute" in verdict.explanation
    _check(fc.MinuteMismatchClient(), "valid", sealed_at=NOON)  # mid-minute the same mistake goes unseen


def test_diagnose_reports_every_format_fault() -> None:
    class Both(fc.NoBasicPrefixClient, fc.UppercaseHexClient):
        pass

    verdict = _check(Both(), "missing_basic_prefix")
    assert "uppercase" in verdict.explanation and "lowercase" in verdict.fix


def test_diagnose_local_time_then_another_fault() -> None:
    class LocalAndReserialized(fc.LocalTimeClient):
        def signed(self, payload: Optional[dict[str, Any]], request_json: bytes, encoded_key: str) -> bytes:
            return json.dumps({**(payload or {}), "key": encoded_key}).encode()

    verdict = _check(LocalAndReserialized(-300), "local_time")
    assert "reserialized" in verdict.explanation


@pytest.mark.parametrize(
    ("change", "cause", "words"),
    [
        (lambda r: {**r, "headers": {"timestamp": str(NOON)}}, "missing_header", "Authorization"),
        (lambda r: {**r, "headers": {"Authorization": r["headers"]["Authorization"]}}, "missing_header",
         "timestamp"),
        (lambda r: {**r, "headers": {**r["headers"], "timestamp": "1763812800.5"}}, "malformed_timestamp",
         "fractional"),
        (lambda r: {**r, "headers": {**r["headers"], "Authorization": "Basic " + "ab" * 32}}, "malformed_signature",
         "SHA-256"),
        (lambda r: {**r, "body": None, "params": {"data": json.loads(r["body"])["data"]}}, "malformed_data",
         "query parameter"),
        (lambda r: {**r, "body": '{"data": "00:00"}'}, "malformed_data", "IV"),
        (lambda r: {**r, "body": "not json"}, "malformed_data", "not JSON"),
        (lambda r: {**r, "method": "DELETE"}, "unsupported_method", "DELETE"),
    ],
    ids=["no-authorization", "no-timestamp", "fractional-timestamp", "sha256", "post-data-in-query", "short-iv",
         "body-not-json", "delete"],
)
def test_diagnose_malformed_requests(change: Any, cause: str, words: str) -> None:
    request = SpecClient().request(PAYLOAD)
    changed = change({"method": request.method, "headers": request.headers, "body": request.body,
                      "params": request.params})
    verdict = diagnose(changed["method"], changed["headers"], changed["body"], changed["params"],
                       business_code=BUSINESS_CODE, terminal_serial=SERIAL, now=NOON)
    assert verdict.cause == cause and words in verdict.explanation, str(verdict)


def test_diagnose_get_with_query_parameters_beside_data() -> None:
    request = SpecClient().request({"transactionId": "t-1"}, method="GET")
    params = {**(request.params or {}), "transactionId": "t-1"}
    verdict = diagnose("GET", request.headers, params=params, business_code=BUSINESS_CODE, terminal_serial=SERIAL,
                       now=NOON)
    assert verdict.valid and "transactionId" in verdict.explanation and "unsigned" in verdict.explanation


def test_diagnose_plaintext_that_is_not_json() -> None:
    class PythonRepr(SpecClient):
        def encrypted_plaintext(self, request_json: bytes, signed: bytes) -> bytes:
            return repr(PAYLOAD).encode()

    verdict = _check(PythonRepr(), "malformed_plaintext")
    assert "Python repr" in verdict.explanation


@given(
    method=st.sampled_from(["GET", "POST", "get", "DELETE", ""]),
    headers=st.dictionaries(st.sampled_from(["timestamp", "Authorization", "TIMESTAMP", "x"]),
                            st.one_of(st.text(max_size=140), st.sampled_from([str(NOON), "Basic " + "a" * 128]))),
    body=st.one_of(st.none(), st.binary(max_size=80), st.text(max_size=80),
                   st.builds(lambda d: {"data": d}, st.text(alphabet="0123456789abcdef:", max_size=100))),
    params=st.one_of(st.none(), st.text(max_size=40), st.dictionaries(st.text(max_size=5), st.text(max_size=40))),
)
def test_diagnose_never_raises_on_garbage(method: str, headers: dict[str, str], body: Any, params: Any) -> None:
    verdict = diagnose(method, headers, body, params, business_code=BUSINESS_CODE, terminal_serial=SERIAL, now=NOON)
    assert verdict.cause in CAUSES and verdict.cause != "valid"


def test_diagnosis_is_frozen() -> None:
    verdict = _check(SpecClient(), "valid")
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.cause = "x"  # type: ignore[misc]


# --- the command line ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client", "cause", "code"),
    [(SpecClient(), "valid", 0), (fc.LocalTimeClient(-300), "local_time", 1),
     (fc.ReserializingClient(), "reserialized", 1), (fc.WrongCredentialsClient(), "wrong_credentials", 1)],
)
def test_cli_diagnose(client: SpecClient, cause: str, code: int, monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PASARELA_BUSINESS_CODE", BUSINESS_CODE)
    monkeypatch.setenv("PASARELA_TERMINAL_SERIAL", SERIAL)
    captured = {**client.request(PAYLOAD).as_json(), "now": NOON}
    status, out, err = run_cli(["diagnose"], json.dumps(captured), monkeypatch, capsys)
    assert status == code and err == ""
    assert out.startswith(f"verdict: {cause}\n") and "\nfix: " in out
    assert all(secret not in out for secret in client.secrets | SERVER_SECRETS)


def test_cli_diagnose_json_file_and_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    client = fc.LocalTimeClient(-300)
    request = client.request(None, method="GET").as_json()
    del request["method"]  # inferred from params
    path = tmp_path / "captured.json"
    path.write_text(json.dumps(request))
    args = ["diagnose", "--output", "json", "--now", str(NOON), "--business-code", BUSINESS_CODE,
            "--terminal-serial", SERIAL, str(path)]
    status, out, err = run_cli(args, "", monkeypatch, capsys)
    assert status == 1 and "deprecated" not in err
    verdict = json.loads(out)
    assert verdict["cause"] == "local_time" and verdict["offset"] == "UTC-05:00"
    assert all(secret not in out for secret in client.secrets | SERVER_SECRETS)
    # the old spelling still works, says it is deprecated, and is not offered in the help
    status, old, err = run_cli([*args[:1], "--json", *args[3:]], "", monkeypatch, capsys)
    assert (status, old) == (1, out) and "pasarela diagnose: --json is deprecated: use --output json\n" in err
    status, text, _ = run_cli([*args[:2], "text", *args[3:]], "", monkeypatch, capsys)
    assert status == 1 and text.startswith("verdict: local_time\n")


def test_cli_diagnose_reads_the_output_of_seal(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PASARELA_BUSINESS_CODE", BUSINESS_CODE)
    monkeypatch.setenv("PASARELA_TERMINAL_SERIAL", SERIAL)
    status, sealed, _ = run_cli(["seal", "--timestamp", str(NOON)], json.dumps(PAYLOAD), monkeypatch, capsys)
    assert status == 0
    status, out, _ = run_cli(["diagnose", "--now", str(NOON)], sealed, monkeypatch, capsys)
    assert status == 0 and out.startswith("verdict: valid")


@pytest.mark.parametrize("stdin", ["not json", "[1]", '{"headers": 5}', '{"headers": {}, "now": "x"}'])
def test_cli_diagnose_usage_errors(stdin: str, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PASARELA_BUSINESS_CODE", BUSINESS_CODE)
    monkeypatch.setenv("PASARELA_TERMINAL_SERIAL", SERIAL)
    status, out, err = run_cli(["diagnose"], stdin, monkeypatch, capsys)
    assert status == 2 and out == "" and "pasarela diagnose: error:" in err


def test_cli_diagnose_without_credentials(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("PASARELA_BUSINESS_CODE", raising=False)
    monkeypatch.delenv("PASARELA_TERMINAL_SERIAL", raising=False)
    request = json.dumps(SpecClient().request(PAYLOAD).as_json())
    status, _, err = run_cli(["diagnose"], request, monkeypatch, capsys)
    assert status == 2 and "PASARELA_BUSINESS_CODE" in err
    with pytest.raises(SystemExit) as info:
        main(["diagnose", "--now", "soon"])
    assert info.value.code == 2


def test_diagnose_reads_header_names_and_values_given_as_bytes() -> None:
    """An ASGI server's raw headers (bytes) are read as Latin-1, as open reads them: the request is valid."""
    request = SpecClient().request(PAYLOAD, method="POST", now=NOON)
    raw = {name.lower().encode("latin-1"): value.encode("latin-1") for name, value in request.headers.items()}
    assert pasarela.Terminal(BUSINESS_CODE, SERIAL).open("POST", raw, request.body, now=NOON) == PAYLOAD
    verdict = _diagnose(dataclasses.replace(request, headers=raw), now=NOON)  # type: ignore[arg-type]
    assert verdict.valid, str(verdict)
