"""Where the time of seal and open goes, next to the primitives' floor: measured in one run, interleaved.

    python benchmarks/where_time_goes.py [--rounds 5] [--shape string-heavy]

For each size, each round times: orjson.dumps of the payload (what seal serializes), the C call of seal
alone (pasarela_seal_json on that text, no Python around it but the cffi call), Terminal.seal, orjson.loads
of the canonical text and the reader that builds open's payload from it (pasarela._fastcall.parse_canonical),
marshal.loads of the payload (CPython's own quickest maker of these objects, from its binary form: no text to read,
what making the payload's objects costs at the least),
the C call of open alone (pasarela_open_request, which canonicalizes the text: all the C work of Terminal.open_bytes,
and pasarela_open_request_as_sent, which Terminal.open calls first), Terminal.open, Terminal.open_bytes, the C call
that checks the signature of the canonical text alone (pasarela_verify: the Base64 of the signed text, its SHA-512 and
the comparison, the same code seal hashes with: its x Terminal.seal is open_bytes's least against seal, measured in
the same run, since open_bytes must do that and decrypt and confirm the text besides), and the
primitives' floor (`openssl speed`, report.py), with its
SHA-512 part alone: the hash of the signed text's Base64, which verifying a signature cannot skip. It adds a row
computed in each round, open's least: marshal.loads + that SHA-512, below which no open that verifies the signature
and returns the payload's objects can go (the decryption, Base64, parsing and call left out). Payloads of
payloads.SHAPES (--shape: items-heavy, the default, or string-heavy). Prints
the medians over rounds and each part as a multiple of the floor and of Terminal.seal, taken within a round
(this machine's speed swings too much for absolute times to compare across runs). Not a gate: it says which part
to work on.
"""

from __future__ import annotations

import argparse
import marshal
import statistics
import sys
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson

import pasarela
from gate import _ns_per_request
from pasarela import _binding, _fastcall  # _fastcall: CPython
from payloads import SHAPES
from report import BUSINESS_CODE, SERIAL, TIMESTAMP, openssl_ns, primitives_sum_ns, signed_base64_len

SIZES = [64, 256, 1024, 16384]
REPEAT = 100
SHA512 = "SHA-512 of the signed text (`openssl speed`)"
LEAST = "open's least: marshal.loads + SHA-512"
VERIFY = "C verify call (open_bytes's least: Base64 + SHA-512 of the signed text)"


def _parts(size: int, terminal: pasarela.Terminal, shape: str) -> dict[str, Callable[[], object]]:
    payload = SHAPES[shape](size)
    text = orjson.dumps(payload)
    sealed = terminal.seal(payload, timestamp=TIMESTAMP)
    headers, body = sealed.headers, sealed.body or b""
    timestamp_text, authorization = headers["timestamp"].encode(), headers["Authorization"].encode()
    lib, null, credentials = _binding.lib, _binding.ffi.NULL, terminal._native.struct
    buffers = _binding._buffers(4 * max(SIZES))  # the thread's workspace, large enough never to be regrown

    def c_seal() -> None:
        if lib.pasarela_seal_json(credentials, buffers.ws, TIMESTAMP, text, len(text), _binding.SHORTEST_DIGITS,
                                  null) == lib.PASARELA_E_IV_POOL_EMPTY:
            buffers.refill_ivs()

    def c_open() -> None:
        assert lib.pasarela_open_request(credentials, buffers.ws, timestamp_text, 10, TIMESTAMP, 300, authorization,
                                         len(authorization), body, len(body)) == lib.PASARELA_OK

    def c_open_as_sent() -> None:
        assert lib.pasarela_open_request_as_sent(credentials, buffers.ws, timestamp_text, 10, TIMESTAMP, 300,
                                                 authorization, len(authorization), body,
                                                 len(body)) == lib.PASARELA_SIGNED_AS_SENT

    plaintext = sealed.plaintext
    assert _fastcall.parse_canonical(plaintext) == orjson.loads(plaintext)
    signature = authorization[len(b"Basic "):]

    def c_verify() -> None:
        assert lib.pasarela_verify(credentials, buffers.ws, TIMESTAMP, plaintext, len(plaintext),
                                   signature) == lib.PASARELA_OK
    marshalled = marshal.dumps(payload)

    return {
        "orjson.dumps": lambda: orjson.dumps(payload),
        "C seal call": c_seal,
        "Terminal.seal": lambda: terminal.seal(payload, timestamp=TIMESTAMP),
        "orjson.loads": lambda: orjson.loads(plaintext),
        "the reader (parse.c, canonical)": lambda: _fastcall.parse_canonical(plaintext),
        "marshal.loads (the objects alone)": lambda: marshal.loads(marshalled),  # noqa: S302 (its own bytes)
        "C open call (canonicalizes)": c_open,
        "C open call, as sent": c_open_as_sent,
        "Terminal.open": lambda: terminal.open("POST", headers, body, now=TIMESTAMP),
        "Terminal.open_bytes": lambda: terminal.open_bytes("POST", headers, body, now=TIMESTAMP),
        VERIFY: c_verify,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="items-heavy")
    args = parser.parse_args()
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    parts = {size: _parts(size, terminal, args.shape) for size in SIZES}
    rounds: list[dict[int, dict[str, float]]] = []
    for r in range(args.rounds):
        row: dict[int, dict[str, float]] = {}
        for size in SIZES:
            number = max(10, REPEAT * 256 // size)
            row[size] = {name: _ns_per_request(call, number, 1) for name, call in parts[size].items()}
            row[size][SHA512] = openssl_ns("sha512", signed_base64_len(size))
            row[size][LEAST] = row[size]["marshal.loads (the objects alone)"] + row[size][SHA512]
            row[size]["floor"] = primitives_sum_ns(size)
        rounds.append(row)
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
    names = [*parts[SIZES[0]], SHA512, LEAST, "floor"]
    print(f"| {args.shape}: ns (median) / x floor / x Terminal.seal (medians of the ratios within a round) | "
          + " | ".join(f"{size:,} B" for size in SIZES) + " |")
    print("|---|" + "---|" * len(SIZES))
    for name in names:
        cells = [f"{statistics.median(row[size][name] for row in rounds):,.0f} / "
                 f"{statistics.median(row[size][name] / row[size]['floor'] for row in rounds):.2f}x / "
                 f"{statistics.median(row[size][name] / row[size]['Terminal.seal'] for row in rounds):.2f}x"
                 for size in SIZES]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
