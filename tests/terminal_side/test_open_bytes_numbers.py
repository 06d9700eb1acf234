"""open_bytes of number literals as a client may write them, at the edges of the C canonicalizer's copy of a number
that is already in JSON.stringify's form (csrc/json.c, plain_number_length: at most 15 significant digits, no leading
zero, no "-0", a fraction not ending in 0, at most five zeros after "0.", no exponent): 14 to 18 digits, 0.000001
against 0.0000001, 1e21 and its neighbours, trailing and leading zeros, signs, exponents from -330 to 330. Each text is
signed as the server signs it (node's JSON.stringify of its JSON.parse) and must come out of open_bytes as node's
text, or be refused exactly when node refuses it, as the reference answers.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from hypothesis import example, given
from hypothesis import strategies as st
from test_open_as_sent import _request

import pasarela
from pasarela import AuthError, reference
from support.faulty_clients import BUSINESS_CODE, NOON, SERIAL

digits = st.text("0123456789", min_size=1, max_size=18)
signs = st.sampled_from(["", "-"])


@st.composite
def number_literals(draw: st.DrawFn) -> str:
    """A literal of one of the forms the copy decides on, with digit counts around its limit of 15."""
    d = draw(digits)
    form = draw(st.integers(min_value=0, max_value=6))
    if form == 0:  # an integer, maybe with leading zeros (refused by JSON) or all zeros
        body = d if draw(st.booleans()) else (d.lstrip("0") or "0")
    elif form == 1:  # a decimal point somewhere in the digits
        k = draw(st.integers(min_value=0, max_value=len(d)))
        body = (d[:k].lstrip("0") or "0") + "." + (d[k:] or "0")
    elif form == 2:  # 0.000...digits: plain notation down to 1e-6, exponent form below
        body = "0." + "0" * draw(st.integers(min_value=0, max_value=9)) + d
    elif form == 3:  # an exponent
        mantissa = d[:1] + ("." + d[1:] if len(d) > 1 else "")
        body = mantissa + draw(st.sampled_from(["e", "E", "e+", "e-", "E-"])) + str(draw(st.integers(0, 330)))
    elif form == 4:  # trailing zeros after an integer: around 1e21, where JSON.stringify switches to an exponent
        body = (d.lstrip("0") or "1") + "0" * draw(st.integers(min_value=0, max_value=22))
    elif form == 5:  # trailing zeros after the point
        body = (d.lstrip("0") or "0") + "." + d[:3] + "0" * draw(st.integers(min_value=1, max_value=3))
    else:  # not JSON: a bare point or a lone sign
        body = draw(st.sampled_from(["1.", ".5", "-", "01.5", "1.e5", "1e", "+1"]))
    return draw(signs) + body


def _answer(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except AuthError as err:
        return ("refused", err.reason)


def _node_text(node_stringify: Callable[[bytes], bytes], text: bytes) -> Optional[bytes]:
    try:
        return node_stringify(text)
    except ValueError:  # NodeJSONError: JSON.parse refuses it
        return None


@example(literals=["999999999999999", "9999999999999999", "123456789012345.6", "0.000001", "0.0000001", "-0",
                   "0.0", "1.50", "1e21", "100000000000000000000", "1000000000000000000000", "1e-7", "01"])
@given(literals=st.lists(number_literals(), min_size=1, max_size=4))
def test_open_bytes_of_number_literals_is_node_s_text(node_stringify: Callable[[bytes], bytes],
                                                      literals: list[str]) -> None:
    for literal in literals:  # each alone (a refusal of one hides nothing of the others), then all together
        _check(node_stringify, ('{"a":' + literal + "}").encode())
    _check(node_stringify, ('{"a":' + literals[0] + ',"b":[' + ",".join(literals) + "]}").encode())


def _check(node_stringify: Callable[[bytes], bytes], text: bytes) -> None:
    node_text = _node_text(node_stringify, text)
    headers, body = _request(text, sign_over=node_text)
    ours = _answer(lambda: pasarela.Terminal(BUSINESS_CODE, SERIAL).open_bytes("POST", headers, body, now=NOON))
    theirs = _answer(lambda: reference.Terminal(BUSINESS_CODE, SERIAL).open_bytes("POST", headers, body, now=NOON))
    assert ours == theirs or ours[0] == theirs[0] == "refused", (text, ours, theirs)  # (reasons worded apart)
    if node_text is None:  # JSON.parse refuses it
        assert ours[0] == "refused", (text, ours)
    else:
        assert ours == node_text, (text, ours, node_text)
