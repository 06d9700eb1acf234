"""Writes the seed corpora of the fuzz targets: csrc/fuzz/corpus/<target>/<name>.

The seeds are committed; this script documents their binary layouts and regenerates them
(`python3 csrc/fuzz/seeds.py`). A new target adds a function here and an entry in SEEDS.
Only the standard library: ciphertexts come from the C core's own known answers, not from here.
"""

from __future__ import annotations

import struct
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"

JSON_TEXTS: dict[str, bytes] = {
    "charge": b'{"amount":100.0,"currency":"COP","reference":"ORDER-1"}',
    "empty-object": b"{}",
    "whitespace": b' {\n\t"a" : [ 1 , 2.50 , true , false , null ] ,\r\n "b" : { } } ',
    "integer-keys": b'{"b":1,"10":2,"2":3,"a":4,"4294967294":5,"4294967295":6,"01":7,"-1":8}',
    "numbers": b'{"n":[1e21,1e-7,0.000001,-0,-0.0,1E+2,123456789012345,0.1,5e-324,1.7976931348623157e308,'
               b"9007199254740991,-9007199254740991,2.5e-5,1e20]}",
    "long-digits": b'{"x":0.30000000000000004,"y":12345678901234567}',
    "unsafe-integer": b'{"big":9007199254740992}',
    "strings": b'{"s":"\\u0041\\u00e9\\u20ac\\ud83d\\ude00\\ud800\\udfff\\u001f\\/\\b\\f\\n\\r\\t\\"\\\\",'
               b'"raw":"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x7f"}',
    "lone-surrogates": b'{"hi":"\\ud800","lo":"\\udc00","pair":"\\ud83d\\ude00x"}',
    "nested": b'{"a":{"b":{"c":[[[{"d":[]}]]]}},"items":[{"price":1.5,"qty":2},{"price":0.25,"qty":10}]}',
    "key-member": b'{"amount":1,"key":"x"}',
    "nested-key": b'{"inner":{"key":"allowed below the top level"}}',
    "duplicate-keys": b'{"a":1,"b":2,"a":3}',
    "not-object": b'[1,2,3]',
    "deep": b'{"a":' + b"[" * 40 + b"0" + b"]" * 40 + b"}",
    "bad-syntax": b'{"a":1,}',
    "bad-utf8": b'{"a":"\xc0\xaf\xed\xa0\x80"}',
    "bad-escape": b'{"a":"\\x"}',
}


_ALNUM = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _fnv1a_step(h: int, block: bytes) -> int:
    for byte in block:
        h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return h


def fnv1a_colliding_keys(doublings: int) -> list[bytes]:
    """2**doublings distinct alphanumeric keys with one 32-bit FNV-1a hash (the hash json.c once grouped
    keys by, so that such an object took quadratic time). At each step, two 4-byte blocks that take the
    hash from the same state to the same state; every key makes one choice per step. The last byte of a
    block only changes the low 7 bits before the final multiplication, so a collision is two 3-byte
    prefixes whose states agree on their top 25 bits and last bytes that make up the difference."""
    h, pairs = 2166136261, []
    for _ in range(doublings):
        by_top: dict[int, tuple[bytes, int]] = {}
        found = None
        for a in _ALNUM:
            ha = (h ^ a) * 16777619 & 0xFFFFFFFF
            for b in _ALNUM:
                hb = (ha ^ b) * 16777619 & 0xFFFFFFFF
                for c in _ALNUM:
                    prefix = bytes((a, b, c))
                    x = (hb ^ c) * 16777619 & 0xFFFFFFFF
                    other = by_top.setdefault(x >> 7, (prefix, x))
                    if other[0] == prefix:
                        continue
                    delta = (x ^ other[1]) & 0x7F
                    for d in _ALNUM:
                        if (d ^ delta) in _ALNUM:
                            found = (other[0] + bytes((d ^ delta,)), prefix + bytes((d,)))
                            break
                    if found:
                        break
                if found:
                    break
            if found:
                break
        if found is None:  # pragma: no cover - 62**3 prefixes are far more than these searches need
            raise RuntimeError("no FNV-1a collision among 4-byte blocks")
        assert _fnv1a_step(h, found[0]) == _fnv1a_step(h, found[1])
        pairs.append(found)
        h = _fnv1a_step(h, found[0])
    keys = [b""]
    for pair in pairs:
        keys = [key + block for key in keys for block in pair]
    return keys


def colliding_keys_object(doublings: int = 13) -> bytes:
    """A JSON object whose 2**doublings distinct keys all have the same FNV-1a hash."""
    return b"{" + b",".join(b'"' + key + b'":0' for key in fnv1a_colliding_keys(doublings)) + b"}"


def json_canonicalize() -> dict[str, bytes]:
    """selector (bit 0: shortest digits, bit 1: undersized buffers too) + JSON text."""
    seeds = {f"{name}": b"\x00" + text for name, text in JSON_TEXTS.items()}
    seeds.update({f"{name}-shortest": b"\x03" + text for name, text in JSON_TEXTS.items()})
    colliding = colliding_keys_object()
    seeds["fnv1a-colliding-keys"] = b"\x00" + colliding
    first_member = colliding[1:colliding.index(b",")]
    seeds["fnv1a-colliding-keys-duplicate"] = b"\x00" + colliding[:-1] + b"," + first_member + b"}"
    return seeds


def seal_json() -> dict[str, bytes]:
    """Header (see _header), then the JSON text."""
    seeds = {name: _header(0b110, 1_700_000_000, b"demo-business-code", b"DEMO-0001") + text
             for name, text in JSON_TEXTS.items()}
    seeds["utf8-credentials"] = (_header(0b111, 1_700_000_000, "código-ñ".encode(), "SN-\U0001f600".encode())
                                 + JSON_TEXTS["charge"])
    seeds["empty-credentials"] = _header(0b110, 1_000_000_000, b"", b"") + b"{}"
    seeds["max-timestamp"] = _header(0b100, 9_999_999_999, b"b", b"s") + b'{"a":1}'
    seeds["millisecond-timestamp"] = _header(0b100, 1_700_000_000_000, b"b", b"s") + b'{"a":1}'
    seeds["block-boundaries"] = _header(0b110, 1_700_000_000, b"b" * 40, b"s" * 40) + b'{"p":"' + b"x" * 100 + b'"}'
    return seeds


def seal_batch() -> dict[str, bytes]:
    """selector, timestamp (u64 big-endian), two credential pairs (one length byte each), then items separated
    by 0xFF: each a credentials byte (bit 0) and a JSON text."""
    def header(selector: int, timestamp: int = 1_700_000_000) -> bytes:
        return (bytes([selector]) + struct.pack(">Q", timestamp) + b"\x12demo-business-code\x09DEMO-0001"
                + "\x0ccódigo-ñ\x06SN-€".encode())
    texts = list(JSON_TEXTS.values())
    mixed = b"\xff".join(bytes([i % 2]) + text for i, text in enumerate(texts))
    sizes = b"\xff".join(b"\x00" + b'{"p":"' + b"x" * n + b'"}' for n in range(0, 600, 37))
    return {
        "mixed-terminals": header(0b00010) + mixed,
        "mixed-shortest": header(0b00011) + mixed,
        "from-pool": header(0b00110) + mixed,
        "no-key-cache": header(0b01010) + mixed,
        "small-output": header(0b10010) + sizes,
        "lengths": header(0b00011) + sizes,
        "bad-timestamp": header(0b00000, 1_700_000_000_000) + mixed,
        "one-item": header(0b00010) + b"\x01" + JSON_TEXTS["charge"],
    }


def _header(selector: int, timestamp: int, business_code: bytes, serial: bytes) -> bytes:
    """selector, timestamp (u64 big-endian), iv[16], business code and serial (one length byte each)."""
    return (bytes([selector]) + struct.pack(">Q", timestamp) + bytes(range(16)) + bytes([len(business_code)])
            + business_code + bytes([len(serial)]) + serial)


# A request sealed by pasarela.reference (the first known answer of csrc/tests/test_roundtrip.c).
KNOWN_SIGNATURE = (b"2959b46b60da0c576878df68803514372e3634c46b76d79fabe233ea104b5be1"
                   b"798397dcc84540437b3998e93ce7a26c510e81038897a6490c1e2097577c7a8d")
KNOWN_DATA = b"000102030405060708090a0b0c0d0e0f:c51548a3153f167d59a02dc7b490c99d599e9122001a118e7c7a223601286d97"


def open_() -> dict[str, bytes]:
    """Header, then: raw mode (selector bit 0) the signature and the data string; sealed mode a plaintext
    (bit 2: a corrupted signature; bit 3: the plaintext signed as sent, canonical or not)."""
    known = _header(0b001, 1_700_000_000, b"demo-business-code", b"DEMO-0001")
    seeds = {
        "raw-valid": known + KNOWN_SIGNATURE + KNOWN_DATA,
        "raw-bad-signature": known + KNOWN_SIGNATURE[:-1] + b"e" + KNOWN_DATA,
        "raw-no-colon": known + KNOWN_SIGNATURE + KNOWN_DATA.replace(b":", b"-"),
        "raw-odd-hex": known + KNOWN_SIGNATURE + KNOWN_DATA[:-1],
        "raw-short": known + KNOWN_SIGNATURE + KNOWN_DATA[:33 + 30],
        "raw-uppercase": known + KNOWN_SIGNATURE + KNOWN_DATA.upper(),
    }
    for name, text in JSON_TEXTS.items():
        seeds[f"sealed-{name}"] = _header(0b010, 1_700_000_000, b"demo-business-code", b"DEMO-0001") + text
    for name in ("charge", "whitespace", "numbers", "duplicate-keys", "strings"):
        seeds[f"sealed-as-sent-{name}"] = _header(0b1010, 1_700_000_000, b"b", b"s") + JSON_TEXTS[name]
    seeds["sealed-corrupt-signature"] = _header(0b110, 1_700_000_000, b"b", b"s") + JSON_TEXTS["charge"]
    seeds["sealed-bad-timestamp"] = _header(0b000, 1_700_000_000_000, b"b", b"s") + JSON_TEXTS["charge"]
    seeds["sealed-fnv1a-colliding-keys"] = (_header(0b010, 1_700_000_000, b"demo-business-code", b"DEMO-0001")
                                            + colliding_keys_object())
    return seeds


def hex_decode() -> dict[str, bytes]:
    return {
        "iv": b"000102030405060708090a0b0c0d0e0f",
        "mixed-case": b"0123456789abcdefABCDEF",
        "odd-length": b"abc",
        "not-hex": b"0g",
        "colon": b"00:11",
        "high-bytes": b"\xff\x80",
    }


def aes_cbc_decrypt() -> dict[str, bytes]:
    """key[32] iv[16] selector (bit 0: cpu without AES, bit 1: output one byte short), ciphertext."""
    key, iv = bytes(range(32)), bytes(range(16))
    # FIPS-197 C.3 AES-256 block (a one-block ciphertext with arbitrary padding) and arbitrary lengths
    block = bytes.fromhex("8ea2b7ca516745bfeafc49904b496089")
    return {
        "one-block": key + iv + b"\x00" + block,
        "two-blocks": key + iv + b"\x00" + block + bytes(16),
        "no-hw-aes": key + iv + b"\x01" + block,
        "short-output": key + iv + b"\x02" + block,
        "partial-block": key + iv + b"\x00" + bytes(15),
        "empty": key + iv + b"\x00",
    }


SEEDS = {
    "json_canonicalize": json_canonicalize,
    "seal_json": seal_json,
    "hex_decode": hex_decode,
    "aes_cbc_decrypt": aes_cbc_decrypt,
    "open": open_,
    "seal_batch": seal_batch,
}


def main() -> None:
    for target, make in SEEDS.items():
        folder = CORPUS / target
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
        for name, data in make().items():
            (folder / name).write_bytes(data)


if __name__ == "__main__":
    main()
