"""The trusted pass's check for text that is already canonical (csrc/json.c, trusted_text_is_canonical).

orjson's text of a payload is most often exactly what JSON.stringify writes; the C core then copies it
instead of rewriting it token by token. The check has two instances on x86-64: SSE2 (what the public
pasarela_json_canonicalize uses) and AVX2 (what sealing uses on a CPU that has it). Each is
held to the token by token pass (PASARELA_JSON_NO_SHORTCUT) and to the pure-Python reference, on payloads
from the shared strategies and on every special token at every offset around the check's 64-byte blocks
(the patterns it looks for span two blocks there).
"""

from __future__ import annotations

from typing import Any, Optional

import orjson
import pytest
from hypothesis import assume, given

from pasarela import _binding
from pasarela.errors import PayloadError
from pasarela.terminal.envelope import _ORJSON_OPTIONS, _default
from pasarela.terminal.stringify import stringify
from support.strategies import json_values

ffi, lib = _binding.ffi, _binding.lib
SHORTEST = lib.PASARELA_JSON_SHORTEST_DIGITS
TOKENS = SHORTEST | lib.PASARELA_JSON_NO_SHORTCUT
TIMESTAMP = 1_700_000_000


def _credentials(without: int) -> _binding.Credentials:
    credentials = _binding.Credentials(b"business", b"SN-1")
    credentials.struct.cpu = _binding.CPU_FEATURES & ~without
    return credentials


# Sealing with each instance of the check this CPU has: AVX2, SSE2 (the CPU bits also choose the SHA-512 and
# Base64 code, which give the same bytes whichever runs).
INSTANCES = [_credentials(0), _credentials(lib.PASARELA_CPU_AVX2 | lib.PASARELA_CPU_AVX512_ALL)]

Result = tuple[int, Optional[bytes], int]  # status, text (None on failure), facts
ALL_FACTS = 2**32 - 1


class _Row(tuple):  # type: ignore[type-arg]  # the row seal_json makes: (request, plaintext_len, 0)
    __slots__ = ()


def canonicalize(text: bytes, flags: int) -> Result:
    """pasarela_json_canonicalize: the SSE2 check (flags SHORTEST) or the token pass alone (TOKENS)."""
    b = _binding._buffers(len(text))  # this thread's workspace, sized as the C core documents
    out_len, facts = ffi.new("size_t *"), ffi.new("unsigned *")
    status = lib.pasarela_json_canonicalize(text, len(text), flags, b.plaintext, b.ws.plaintext_cap, out_len,
                                            b.ws.scratch, b.ws.scratch_cap, ffi.NULL, facts)
    return status, ffi.unpack(b.plaintext_text, out_len[0]) if status == lib.PASARELA_OK else None, facts[0]


def sealed_plaintext(member: bytes) -> Result:
    """The text sealing canonicalizes for the object {"v": member}, the same with every instance of the check."""
    results = []
    for credentials in INSTANCES:
        try:
            out = _binding.seal_json(credentials, TIMESTAMP, b'{"v":' + member + b"}", SHORTEST, bytes(16), _Row, (),
                                     ALL_FACTS)  # (row, facts), or the row alone when there are none
        except PayloadError:
            out = None
        row, facts = (None, 0) if out is None else out if type(out) is tuple else (out, 0)
        results.append((-1, None, 0) if row is None else (lib.PASARELA_OK, row[0][: row[1]], facts))
    assert results[1:] == results[:-1]
    return results[0]


def reference(value: Any) -> Optional[bytes]:
    try:
        return stringify(value)
    except PayloadError:
        return None


def check(value: Any, text: bytes) -> None:
    """Every instance of the check agrees with the token pass and, where it succeeds, with the reference."""
    with_check, tokens = canonicalize(text, SHORTEST), canonicalize(text, TOKENS)
    assert with_check == tokens
    status, canonical, _ = tokens
    if status == lib.PASARELA_OK:
        assert canonical == reference(value)
    sealed = sealed_plaintext(text)
    wrapped = canonicalize(b'{"v":' + text + b"}", TOKENS)
    if wrapped[0] == lib.PASARELA_OK:
        assert sealed == wrapped
    else:
        assert sealed[0] != lib.PASARELA_OK


def orjson_text(value: Any) -> bytes:
    """orjson's text of value, as sealing writes it."""
    return orjson.dumps(value, default=_default, option=_ORJSON_OPTIONS)


@given(json_values())
def test_orjson_text_of_any_payload_canonicalizes_alike_with_and_without_the_check(value: Any) -> None:
    try:
        text: Optional[bytes] = orjson_text(value)
    except (orjson.JSONEncodeError, TypeError):
        text = None  # orjson refuses it (a lone surrogate, an integer beyond 2**53): never the check's input
    assume(text is not None)
    assert text is not None
    check(value, text)


# What the check must send to the token pass, and what it must not be fooled by, each written by orjson.
SPECIAL_VALUES: list[Any] = [
    1.0, -1.0, 100.0, 1e16, 1e21, 1e-7, 5e-324, -0.0, 0.5, -0.5, 10.05, 0.30000000000000004, 1234567890123456.7,
    0, -5, 10**15, 2**53 - 1, -(2**53 - 1), 1234567890123456, None, True, False,
    {"1": 1}, {"a": 1, "42": 2}, {"4294967295": 1}, {"01": 1}, {"key": 1}, {"__proto__": 1}, {"kkey": 1},
    {"__proto__x": 1}, {"qty": 1}, "1", "42x", "2026-11-23", "4111111111111111", 'a"b', "a\\", "\\\\\\", '\\"1',
    "1e5", "-0", "1.0", "key", "null", [1.0], [[{"7": None}]], "\u2028", "\x00",
]


@pytest.mark.parametrize("value", SPECIAL_VALUES, ids=repr)
def test_every_special_token_at_every_offset_around_the_blocks(value: Any) -> None:
    check(value, orjson_text(value))
    for pad in range(0, 140):
        # the token once, from offset 15 + pad: at every position of a 64-byte block, across two boundaries
        # (once only: a second copy elsewhere would send the text to the token pass whatever the first did)
        for payload in ({"p": "x" * pad, "t": value}, {"p": "x" * pad, "u": [value]}):
            check(payload, orjson_text(payload))


def test_escapes_and_quotes_straddling_a_block_boundary() -> None:
    # a run of backslashes, then an escaped quote, wherever the block boundary falls in them; what follows
    # must be read as inside the string ("1.0" there is not a number) or outside it ("q": 1.0 is)
    for pad in range(0, 130):
        for backslashes in range(0, 4):
            value = {"p": "x" * pad + "\\" * backslashes + '"' + "1.0", "7": 1, "q": 1.0}
            check(value, orjson_text(value))
            value = {"p": "x" * pad + "\\" * backslashes, "q": 1.0}
            check(value, orjson_text(value))


# Texts in the flag's contract that orjson does not write (integers beyond 2**53, as json.dumps writes
# them): their runs of digits must reach the token pass, which refuses them, across block boundaries too.
LONG_INTEGERS = [b"9007199254740993", b"-9007199254740993", b"12345678901234567890", b"1" * 40]


@pytest.mark.parametrize("digits", LONG_INTEGERS)
def test_long_integers_at_every_offset_around_the_blocks(digits: bytes) -> None:
    for pad in range(0, 140):
        text = b'{"p":"' + b"x" * pad + b'","t":' + digits + b"}"
        tokens = canonicalize(text, TOKENS)
        assert tokens[0] == lib.PASARELA_E_JSON_UNSAFE_INTEGER
        assert canonicalize(text, SHORTEST) == tokens
        assert sealed_plaintext(text)[0] != lib.PASARELA_OK


def test_the_check_is_in_use_in_both_instances() -> None:
    # Text out of the flag's contract (not JSON) is the one place the check shows: it copies what it has
    # no reason to rewrite, where the token pass finds the syntax error.
    text = b'{"a":tru}'
    assert canonicalize(text, TOKENS)[0] == lib.PASARELA_E_JSON_SYNTAX
    assert canonicalize(text, SHORTEST) == (lib.PASARELA_OK, text, 0)
    assert sealed_plaintext(b"tru") == (lib.PASARELA_OK, b'{"v":tru}', 0)


def test_the_check_drops_the_point_zero_of_integral_numbers_itself() -> None:
    # orjson writes 100.0 (and Decimal("100.00"), as a float) where JavaScript writes 100: the check drops
    # the ".0" from its copy, up to 32 of them; more, and the token pass writes the text.
    text = b'{"a":100.0,"b":[1.0,-2.0,0.0],"c":tru}'
    assert canonicalize(text, TOKENS)[0] == lib.PASARELA_E_JSON_SYNTAX
    assert canonicalize(text, SHORTEST) == (lib.PASARELA_OK, b'{"a":100,"b":[1,-2,0],"c":tru}', 0)
    for count in (31, 32, 33, 200):
        value = {"amounts": [float(i) for i in range(count)], "last": 7.0}
        check(value, orjson_text(value))
        assert canonicalize(orjson_text(value) + b" ", SHORTEST)[0] == lib.PASARELA_OK  # the token pass, then
    value = {"amounts": [float(i) for i in range(31)]}
    with_tru = orjson_text(value)[:-1] + b',"t":tru}'
    assert canonicalize(with_tru, SHORTEST)[0] == lib.PASARELA_OK  # 31: the check's copy
    value = {"amounts": [float(i) for i in range(33)]}
    with_tru = orjson_text(value)[:-1] + b',"t":tru}'
    assert canonicalize(with_tru, SHORTEST)[0] == lib.PASARELA_E_JSON_SYNTAX  # 33: the token pass


def test_the_check_reads_escapes_across_block_boundaries() -> None:
    # The same trick shows that escapes at a block boundary do not make the check give up (a mistake there
    # flips where it thinks strings are, which it notices at the end and leaves the text to the token pass).
    for pad in range(0, 130):
        for backslashes in (1, 2, 3):
            text = b'{"p":"' + b"x" * pad + b"\\\\" * backslashes + b'\\"1.0","q":tru}'
            assert canonicalize(text, TOKENS)[0] == lib.PASARELA_E_JSON_SYNTAX
            assert canonicalize(text, SHORTEST) == (lib.PASARELA_OK, text, 0), (pad, backslashes)
            assert sealed_plaintext(text) == (lib.PASARELA_OK, b'{"v":' + text + b"}", 0), (pad, backslashes)
