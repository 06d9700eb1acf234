"""Error mapping (spec section 7), configuration checks, secrets out of reprs, httpx imported lazily."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys

import pytest

from pasarela.errors import (
    ApiError,
    ConfigurationError,
    FinalStatusError,
    PasarelaError,
    QrCodeError,
    ResponseShapeError,
    ValidationError,
)
from pasarela.http import ServiceConfig
from pasarela.http.error_mapping import api_error
from pasarela.http.exchange import Reply
from pasarela.http.response_reader import ResponseReader

PRIVATE_KEY = "priv-0123456789abcdef"


def test_t023_is_a_final_status_error() -> None:
    error = api_error(400, b'{"code":"T023","message":"Transaction has a final status."}')
    assert type(error) is FinalStatusError
    assert (error.status, error.code, error.message) == (400, "T023", "Transaction has a final status.")
    assert error.body == '{"code":"T023","message":"Transaction has a final status."}'
    assert str(error) == "HTTP 400: T023 Transaction has a final status."


@pytest.mark.parametrize(("status", "code"), [(500, "QR-CODE-0001"), (400, "QR-CODE-0059")])
def test_qr_codes_are_qr_code_errors(status: int, code: str) -> None:
    error = api_error(status, f'{{"code":"{code}"}}'.encode())
    assert type(error) is QrCodeError
    assert (error.status, error.code, error.message) == (status, code, None)


def test_other_errors_are_api_errors_with_raw_body() -> None:
    error = api_error(401, b'{"type":"AUTH","code":"AUTH-001","message":"Invalid or expired credentials"}')
    assert type(error) is ApiError and error.code == "AUTH-001" and error.message == "Invalid or expired credentials"
    client_side = api_error(400, b'{"code":"017","error":"Tarjeta no valida"}')
    assert client_side.message == "Tarjeta no valida"
    html = api_error(502, b"<html>Bad Gateway</html>")
    assert (html.code, html.message, html.body) == (None, None, "<html>Bad Gateway</html>")
    assert str(html) == "HTTP 502: no error code in the body"
    odd = api_error(400, b'{"code": 17, "message": ["x"]}')
    assert (odd.code, odd.message) == (None, None)
    assert isinstance(api_error(404, b""), PasarelaError)


def test_validation_errors_are_value_errors_naming_the_field() -> None:
    error = ValidationError("card.expiryMonth", "must be a month from 01 to 12")
    assert isinstance(error, ValueError) and isinstance(error, PasarelaError)
    assert str(error) == "card.expiryMonth: must be a month from 01 to 12"


def test_reply_json_refuses_a_non_json_body() -> None:
    assert Reply(200, b'{"a":1}').json() == {"a": 1}
    with pytest.raises(ResponseShapeError, match="not JSON"):
        Reply(201, b"<html>").json()


def test_response_reader_distinguishes_types() -> None:
    reader = ResponseReader.of({"flag": True, "count": 3, "price": 1.5, "name": "x"})
    assert reader.boolean("flag") is True and reader.integer("count") == 3
    assert str(reader.decimal("price")) == "1.5" and str(reader.decimal("count")) == "3"
    for accessor, key in (
        (reader.integer, "flag"),
        (reader.boolean, "count"),
        (reader.decimal, "flag"),
        (reader.text, "count"),
    ):
        with pytest.raises(ResponseShapeError) as caught:
            accessor(key)
        assert caught.value.field == f"$.{key}"


# --- configuration ------------------------------------------------------------------------------


def test_config_repr_and_pickling_never_expose_the_private_key() -> None:
    config = ServiceConfig(base_url="https://api.example/", public_merchant_id="pub-1", private_merchant_id=PRIVATE_KEY)
    assert config.base_url == "https://api.example"
    assert PRIVATE_KEY not in repr(config) and "private_merchant_id=<hidden>" in repr(config)
    with pytest.raises(TypeError):
        pickle.dumps(config)
    with pytest.raises(TypeError):
        copy.copy(config)


@pytest.mark.parametrize(
    "changes",
    [
        {"base_url": "api.example"},
        {"base_url": "ftp://api.example"},
        {"base_url": "https://api.example?x=1"},
        {"private_merchant_id": ""},
        {"private_merchant_id": "abc\r\nX-Injected: 1"},
        {"public_merchant_id": "pub 1"},
        {"timeout": 0},
        {"timeout": float("nan")},
        {"timeout": True},
    ],
)
def test_config_refuses_nonsense(changes: dict[str, object]) -> None:
    settings: dict[str, object] = {"base_url": "https://api.example", "private_merchant_id": PRIVATE_KEY}
    settings.update(changes)
    with pytest.raises(ConfigurationError) as caught:
        ServiceConfig(**settings)  # type: ignore[arg-type]
    assert PRIVATE_KEY not in str(caught.value)
    assert "X-Injected" not in str(caught.value)


def test_core_imports_do_not_import_httpx() -> None:
    code = (
        "import sys, pasarela, pasarela.cards, pasarela.transfers, pasarela.http\n"
        "from pasarela.transfers import webhooks, checkout, pending\n"
        "assert 'httpx' not in sys.modules, 'httpx imported eagerly'\n"
        "from pasarela.cards import CardClient\n"
        "from pasarela.http import ServiceConfig\n"
        "CardClient(ServiceConfig(base_url='https://api.example')).close()\n"
        "assert 'httpx' in sys.modules\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert completed.returncode == 0, completed.stderr
