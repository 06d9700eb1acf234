"""The access log stores no card number, CVV or key whatever shape the request had (issue 53, item 4): a body that
is not JSON the sandbox reads (a trailing comma, truncated, invalid UTF-8, a comment, multipart, free text) is
kept as its length and media type only; a CVV under any name that says so (``securityCode``, ``cardCvv``) is
replaced; a card number in the path or in any text is masked; the configured private key is replaced wherever it
was put (``Public-Merchant-Id``, ``X-Api-Key``, ``Proxy-Authorization``, a ``merchantKey`` member, a member's
name, the path); headers outside an allow-list are kept by name only. Checked in what the listing answers, in the
dashboard's pages of each request, and in the line on stderr."""



from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from pasarela.http.redaction import REDACTED, Redactor, mask_card_numbers
from pasarela.sandbox import Sandbox, SandboxConfig

PUBLIC, PRIVATE = "pk-redaction", "sk-redaction-0123456789"
PAN, SPACED_PAN = "4111111111111111", "4111 1111 1111 1111"
CVV = "9753"
JSON_TYPE = {"Content-Type": "application/json"}
CARD = f'{{"card": {{"name": "Ana", "number": "{PAN}", "cvv": "{CVV}", "expiryMonth": "12", "expiryYear": "29"}}'

# (name, body, content type): bodies the sandbox cannot read, each holding the card number and the CVV in clear
UNREADABLE = [
    ("trailing_comma", f'{CARD}, "totalAmount": 10,}}', "application/json"),
    ("truncated", f'{CARD}, "totalAmount": 10', "application/json"),
    ("invalid_utf8", f'{CARD}, "note": "\udcff"}}'.encode("utf-8", "surrogateescape").decode("latin-1"),
     "application/json"),
    ("comment", f'{CARD} /* cvv {CVV} */, "totalAmount": 10}}', "application/json"),
    ("multipart", f'--b\r\nContent-Disposition: form-data; name="number"\r\n\r\n{PAN}\r\n'
                  f'--b\r\nContent-Disposition: form-data; name="cvv"\r\n\r\n{CVV}\r\n--b--\r\n',
     "multipart/form-data; boundary=b"),
    ("free_text", f"please charge {SPACED_PAN}, cvv {CVV}, exp 12/29", "text/plain"),
    ("form", f"number={PAN}&securityCode={CVV}", "application/x-www-form-urlencoded"),
    ("nan", f'{CARD}, "totalAmount": NaN}}', "application/json"),
]


@pytest.fixture
def client() -> Iterator[TestClient]:
    config = SandboxConfig(public_key=PUBLIC, private_key=PRIVATE, settle_after=None)
    with Sandbox(config) as sandbox:
        app: Any = sandbox.app
        with TestClient(app, base_url="http://localhost:8790", raise_server_exceptions=False) as http:
            yield http


def _log(client: TestClient) -> list[dict[str, Any]]:
    answer = client.get("/sandbox/v1/requests", params={"limit": 200}, headers={"Private-Merchant-Id": PRIVATE})
    assert answer.status_code == 200
    return list(answer.json()["items"])


def _nothing_secret_in(text: str) -> None:
    for secret in (PAN, SPACED_PAN, PRIVATE, base64.b64encode(f"user:{PRIVATE}".encode()).decode()):
        assert secret not in text


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, member in value.items():
            yield str(key)
            yield from _strings(member)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


@pytest.mark.parametrize(("shape", "body", "content_type"), UNREADABLE, ids=[shape for shape, _, _ in UNREADABLE])
def test_a_body_the_sandbox_cannot_read_is_kept_as_its_length_and_type(
        client: TestClient, shape: str, body: str, content_type: str) -> None:
    content = body.encode("latin-1") if shape == "invalid_utf8" else body.encode()
    client.post("/card/v1/tokens", content=content, headers={"Public-Merchant-Id": PUBLIC,
                                                             "Content-Type": content_type})
    [record] = _log(client)
    media = content_type.split(";")[0]
    assert record["body"].startswith(f"({len(content)} bytes of {media}, not recorded: the body "), record["body"]
    _nothing_secret_in(json.dumps(_log(client)))
    assert not any(CVV in text for text in _strings(record["body"]))


@pytest.mark.parametrize("member", ["cvv", "securityCode", "cardCvv", "card_security_code", "CVC2", "cvn"])
def test_a_cvv_under_any_name_that_says_so_is_replaced(client: TestClient, member: str) -> None:
    body = {"card": {"name": "Ana", "number": PAN, member: CVV, "expiryMonth": "12", "expiryYear": "29"},
            "totalAmount": 10, "currency": "COP"}
    client.post("/card/v1/tokens", json=body, headers={"Public-Merchant-Id": PUBLIC})
    [record] = _log(client)
    assert record["body"]["card"][member] == REDACTED
    assert record["body"]["card"]["number"] == "411111******1111"


def test_a_card_number_in_the_path_or_in_any_text_is_masked(client: TestClient,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    keys = {"Private-Merchant-Id": PRIVATE}
    with caplog.at_level(logging.INFO, logger="pasarela.sandbox.access"):
        client.get(f"/v1/charges/{PAN}", headers=keys)
        client.delete(f"/card/v1/charges/{SPACED_PAN.replace(' ', '%20')}", headers=keys)
        client.post("/transfer/v1/init", json={"token": "t" * 32, "amount": {"subtotalIva": 1},
                                               "metadata": {"note": f"paid with {SPACED_PAN}", "pan": PAN}},
                    headers=keys)
    init, deleted, looked_up = _log(client)
    assert looked_up["path"] == "/v1/charges/411111******1111"
    assert deleted["path"] == "/card/v1/charges/4111%2011**%20****%201111"
    assert init["body"]["metadata"] == {"note": "paid with 4111 11** **** 1111", "pan": "411111******1111"}
    _nothing_secret_in(json.dumps(_log(client)) + caplog.text)
    assert "/v1/charges/411111******1111" in caplog.text  # the line on stderr names the path masked too


def test_the_private_key_is_replaced_wherever_it_was_put(client: TestClient,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    proxy = "Basic " + base64.b64encode(f"user:{PRIVATE}".encode()).decode()
    escaped = PRIVATE.replace("-", "%2D")
    with caplog.at_level(logging.INFO, logger="pasarela.sandbox.access"):
        client.post("/transfer/v1/tokens", json={"currency": "COP"}, headers={"Public-Merchant-Id": PRIVATE})
        client.post("/transfer/v1/tokens", json={"currency": "COP", "merchantKey": PRIVATE, "x": {PRIVATE: 1},
                                                 "paymentDescription": f"key={PRIVATE}"},
                    headers={"Public-Merchant-Id": PUBLIC, "X-Api-Key": PRIVATE, "Proxy-Authorization": proxy,
                             "X-Trace": f"k={PRIVATE}"})
        client.get(f"/transfer/v1/status/{escaped}", headers={"Authorization": f"Bearer {PRIVATE}"})
    status, body, wrong_header = _log(client)
    assert wrong_header["key"] == "wrong"  # which key, never its value
    assert wrong_header["headers"]["public-merchant-id"] == REDACTED
    for header in ("x-api-key", "proxy-authorization", "x-trace"):  # not on the allow-list: by name only
        assert body["headers"][header] == REDACTED
    assert body["headers"]["content-type"] == "application/json"  # on the allow-list: kept
    assert body["body"]["merchantKey"] == REDACTED and body["body"]["paymentDescription"] == f"key={REDACTED}"
    assert body["body"]["x"] == {REDACTED: 1}  # a member named by the key
    assert status["path"] == f"/transfer/v1/status/{REDACTED}" and status["headers"]["authorization"] == REDACTED
    everything = json.dumps(_log(client)) + caplog.text
    _nothing_secret_in(everything)
    assert escaped not in everything
    for page in [f"/sandbox/requests/{item['id']}" for item in (status, body, wrong_header)] + ["/sandbox/requests"]:
        shown = client.get(page)
        assert shown.status_code == 200
        _nothing_secret_in(shown.text)


def test_an_answer_naming_a_member_the_caller_sent_is_kept_without_the_key(client: TestClient) -> None:
    client.post("/card/v1/tokens", json={PRIVATE: 1}, headers={"Public-Merchant-Id": PUBLIC})
    [record] = _log(client)
    assert record["status"] == 400
    _nothing_secret_in(json.dumps(record))


def test_the_redactor_rules() -> None:
    redactor = Redactor([PRIVATE, "abc"])  # a short secret: replaced only where a whole value is it
    assert redactor.text("abc") == REDACTED and redactor.text("abcdef") == "abcdef"
    assert redactor.text(f"x{PRIVATE}y") == f"x{REDACTED}y"
    assert PRIVATE not in repr(redactor) and "abc" not in repr(redactor)
    assert mask_card_numbers("4242424242424241") == "4242424242424241"  # fails the Luhn check: not a card
    assert mask_card_numbers("a4111111111111111") == "a4111111111111111"  # part of a word (a hex token)
    assert mask_card_numbers("378282246310005") == "378282*****0005"  # 15 digits (Amex)
    assert mask_card_numbers("4111-1111-1111-1111") == "4111-11**-****-1111"
    assert mask_card_numbers("12345678901234567890") == "12345678901234567890"  # 20 digits: no card
