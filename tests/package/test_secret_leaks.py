"""Secrets never reach an error: not in its message, not in the exceptions chained to it (``__context__``,
``__cause__``; ``raise ... from None`` hides the context from tracebacks but keeps it on the object), not
in what a validation error echoes, not as a warning-free command line."""

# ruff: noqa: S105 (test keys and secrets are fixtures)

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

import pasarela
from pasarela.errors import CredentialsError, PayloadError, ValidationError
from pasarela.terminal import reference
from pasarela.terminal.diagnose import diagnose
from pasarela.transfers import Amount
from pasarela.transfers import fields as check
from support.cli import run_cli
from support.faulty_clients import BUSINESS_CODE, SERIAL

SURROGATE_CODE = "biz-\ud800-SECRET-7788"
INVALID_UTF8_CODE = b"biz-\xff-SECRET-7788"
CARD_NUMBER = 4000056655665556123  # 19 digits, beyond 2**53: refused, and must not be quoted


def chain(exc: BaseException) -> Iterator[BaseException]:
    """exc and every exception chained to it."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo.extend(linked for linked in (current.__context__, current.__cause__) if linked is not None)


def assert_carries_nothing_of(exc: BaseException, secret: str) -> None:
    for linked in chain(exc):
        assert not isinstance(linked, UnicodeError), f"chained {type(linked).__name__} holds the whole value"
        for text in (str(linked), repr(linked.args), repr(vars(linked))):
            assert secret not in text


@pytest.mark.parametrize("make", [pasarela.Terminal, reference.Terminal], ids=["c", "reference"])
def test_a_business_code_with_a_lone_surrogate_is_not_chained_to_the_error(make: type) -> None:
    with pytest.raises(CredentialsError, match="business_code is not valid text") as refused:
        make(SURROGATE_CODE, SERIAL)
    assert_carries_nothing_of(refused.value, "SECRET-7788")


def test_the_reference_refuses_a_business_code_that_is_not_utf8_without_chaining_it() -> None:
    terminal = reference.Terminal(INVALID_UTF8_CODE, SERIAL)
    with pytest.raises(CredentialsError, match="must be UTF-8 text") as refused:
        terminal.seal({"a": 1})
    assert_carries_nothing_of(refused.value, "SECRET-7788")


@pytest.mark.parametrize("code", [SURROGATE_CODE, INVALID_UTF8_CODE], ids=["surrogate", "invalid-utf8"])
def test_diagnose_does_not_chain_the_business_code_to_its_error(code: object) -> None:
    sealed = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal({"a": 1})
    with pytest.raises(CredentialsError) as refused:
        diagnose("POST", sealed.headers, sealed.body, business_code=code, terminal_serial=SERIAL)  # type: ignore[arg-type]
    assert_carries_nothing_of(refused.value, "SECRET-7788")


@pytest.mark.parametrize("make", [pasarela.Terminal, reference.Terminal], ids=["c", "reference"])
@pytest.mark.parametrize("number", [CARD_NUMBER, -CARD_NUMBER, 2**53 + 1, 10**400])
def test_a_payload_error_keeps_the_path_but_never_quotes_an_out_of_range_integer(make: type, number: int) -> None:
    terminal = make(BUSINESS_CODE, SERIAL)
    with pytest.raises(PayloadError) as refused:
        terminal.seal({"card": {"number": number}})
    assert refused.value.path == "$.card.number"
    assert "not exactly representable" in refused.value.reason
    for linked in chain(refused.value):
        assert str(abs(number))[:15] not in str(linked) + repr(linked.args)


def test_choice_errors_do_not_echo_the_value_received() -> None:
    secret = "4242424242424242"
    with pytest.raises(ValidationError) as refused:
        check.choice(secret, "networkToken.walletId", {"APPLE_PAY", "GOOGLE_PAY"})
    assert refused.value.field == "networkToken.walletId" and "APPLE_PAY, GOOGLE_PAY" in refused.value.reason
    assert secret not in str(refused.value)
    with pytest.raises(ValidationError) as through_the_api:
        Amount.from_total(100, currency=secret, iva_rate=0)
    assert through_the_api.value.field == "currency" and secret not in str(through_the_api.value)


# --- the CLI ----------------------------------------------------------------------------------------------


def test_seal_warns_when_the_business_code_is_on_the_command_line(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("PASARELA_BUSINESS_CODE", raising=False)
    args = ["seal", "--business-code", BUSINESS_CODE, "--terminal-serial", SERIAL]
    code, out, err = run_cli(args, '{"a": 1}', monkeypatch, capsys)
    assert code == 0 and "Authorization" in out
    assert "warning: --business-code on the command line is visible" in err and "PASARELA_BUSINESS_CODE" in err
    assert BUSINESS_CODE not in err + out


def test_diagnose_warns_when_the_business_code_is_on_the_command_line(monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    sealed = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal({"a": 1})
    captured = json.dumps({"method": "POST", "headers": sealed.headers, "body": sealed.body.decode()})
    code, out, err = run_cli(["diagnose", "--business-code", BUSINESS_CODE, "--terminal-serial", SERIAL],
                             captured, monkeypatch, capsys)
    assert code == 0 and out.startswith("verdict: valid")
    assert "pasarela diagnose: warning: --business-code" in err and BUSINESS_CODE not in err + out


def test_no_warning_when_the_credentials_come_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PASARELA_BUSINESS_CODE", BUSINESS_CODE)
    monkeypatch.setenv("PASARELA_TERMINAL_SERIAL", SERIAL)
    code, _, err = run_cli(["seal", "--terminal-serial", SERIAL], '{"a": 1}', monkeypatch, capsys)
    assert code == 0 and err == ""
