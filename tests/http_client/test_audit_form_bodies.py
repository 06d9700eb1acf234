"""Certification rule 3 for bodies that are not JSON: a form body (``name=value&...``) goes into the audit
record with its secret fields masked as JSON members are, whatever the notation of the field names."""

from __future__ import annotations

import pytest

from pasarela.http.audit import recordable_body


@pytest.mark.parametrize(
    ("body", "recorded"),
    [
        (b"card_number=4242424242424242&cvv=123&name=Ana",
         "card_number=424242******4242&cvv=%5BREDACTED%5D&name=Ana"),
        (b"card%5Bnumber%5D=4000000000000002&card%5Bcvc%5D=987&amount=10",
         "card%5Bnumber%5D=400000******0002&card%5Bcvc%5D=%5BREDACTED%5D&amount=10"),
        (b"card.number=5555555555554444&card.CVV2=12%33", "card.number=555555******4444&card.CVV2=%5BREDACTED%5D"),
        (b"private-merchant-id=k3y&pan=4242+4242", "private-merchant-id=%5BREDACTED%5D&pan=%5BREDACTED%5D"),
        (b"cryptogram=AbC%3D%3D&token=tok-1", "cryptogram=%5BREDACTED%5D&token=tok-1"),
    ],
)
def test_secret_fields_of_a_form_body_are_redacted(body: bytes, recorded: str) -> None:
    assert recordable_body(body) == recorded


def test_a_form_longer_than_a_record_is_redacted_and_cut() -> None:
    recorded = recordable_body(b"cvv=123&number=4242424242424242&notes=" + b"x" * 100_000)
    assert recorded.startswith("cvv=%5BREDACTED%5D&number=424242******4242&notes=xxx") and len(recorded) == 65536


def test_text_that_is_no_form_is_recorded_as_it_was_and_a_form_field_only_by_its_name() -> None:
    for text in ["Internal error: a=b & c", "x=1&&y", "<html>cvv</html>", "cvv", "=123&"]:
        assert recordable_body(text.encode()) == text
    assert recordable_body(b"error=cvv%3D123&cvv=9") == "error=cvv%3D123&cvv=%5BREDACTED%5D"
    # a name that holds a secret's word is one (cardCvv, securityCode, "cvv " with its blank)
    assert recordable_body(b"cvv =1&cardCvv=2&securityCode=3") == \
        "cvv =%5BREDACTED%5D&cardCvv=%5BREDACTED%5D&securityCode=%5BREDACTED%5D"
