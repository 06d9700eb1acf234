"""Is padding validity visible in the time Terminal.open takes to refuse a request? (issue 11, item 2)

Run: python3 benchmarks/padding_timing.py [--rounds N] [--implementation c|reference|core|core-as-sent]

Two refusals of the same payload, timed in one run, interleaved round by round:
  bad padding      the canonical plaintext encrypted with an invalid PKCS#7 tail (what a padding oracle
                   attacker's probe looks like to the server in the worst case: everything before the
                   last block is the valid JSON of a real request);
  bad signature    the genuine request (valid padding, valid JSON) with one hex digit of the signature changed.
Each round times a short batch of each case; the script prints the median per-call time of each case over
the rounds and the ratio of the larger to the smaller (the goal: within 1.1 at 256 B and at 64 KiB).
Not a test: timings depend on the machine; the ratio is what is compared.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

import pasarela
from pasarela import reference
from pasarela.errors import AuthError
from payloads import payload_of_size

BUSINESS_CODE = "bc-7f3a1c2e9d"
SERIAL = "SN-0042"
TIMESTAMP = 1763812800
SIZES = (256, 65536)


def _bad_padding_body(plaintext: bytes) -> bytes:
    """plaintext encrypted under the request's key with a last byte that is no PKCS#7 padding (0x00)."""
    aes_key = reference.derive(BUSINESS_CODE.encode(), SERIAL.encode(), TIMESTAMP).aes_key
    pad = 16 - len(plaintext) % 16
    padded = plaintext + bytes([pad]) * (pad - 1) + b"\x00"
    iv = os.urandom(16)
    encryptor = Cipher(algorithms.AES(aes_key), modes.CBC(iv)).encryptor()
    ciphertext = encryptor.update(padded) + encryptor.finalize()
    return b'{"data":"' + f"{iv.hex()}:{ciphertext.hex()}".encode("ascii") + b'"}'


def _cases(size: int) -> dict[str, tuple[dict[str, str], bytes]]:
    sealed = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal(payload_of_size(size), timestamp=TIMESTAMP)
    assert sealed.body is not None
    headers = dict(sealed.headers)
    signature = headers["Authorization"]
    wrong = dict(headers, Authorization=signature[:-1] + ("0" if signature[-1] != "0" else "1"))
    return {"bad padding": (headers, _bad_padding_body(sealed.plaintext)), "bad signature": (wrong, sealed.body)}


def _core_opener(as_sent: bool) -> Callable[[dict[str, str], bytes], Any]:
    """The C core without the Python around it, with the calling thread's workspace: pasarela_open, or (as_sent)
    pasarela_open_request_as_sent, which Terminal.open calls first."""
    from pasarela import _binding
    from pasarela._native import lib

    native = pasarela.Terminal(BUSINESS_CODE, SERIAL)._native

    def open_(headers: dict[str, str], body: bytes) -> Any:
        if as_sent:
            timestamp, authorization = headers["timestamp"].encode("ascii"), headers["Authorization"].encode("ascii")
            status = lib.pasarela_open_request_as_sent(native.struct, _binding._buffers(len(body) // 2).ws, timestamp,
                                                       len(timestamp), TIMESTAMP, 300, authorization,
                                                       len(authorization), body, len(body))
        else:
            data = orjson.loads(body)["data"].encode("ascii")
            status = lib.pasarela_open(native.struct, _binding._buffers(len(data) // 2).ws, TIMESTAMP, data,
                                       len(data), headers["Authorization"][6:].encode("ascii"))
        if status != lib.PASARELA_OK:
            raise AuthError(_binding.strerror(status))

    return open_


def _opener(implementation: str) -> Callable[[dict[str, str], bytes], Any]:
    if implementation in ("core", "core-as-sent"):
        return _core_opener(implementation == "core-as-sent")
    cls = pasarela.Terminal if implementation == "c" else reference.Terminal
    terminal = cls(BUSINESS_CODE, SERIAL)
    return lambda headers, body: terminal.open("POST", headers, body, now=TIMESTAMP)


def _refusal_reason(open_: Callable[[dict[str, str], bytes], Any], headers: dict[str, str], body: bytes) -> str:
    try:
        open_(headers, body)
    except AuthError as exc:
        return exc.reason
    raise AssertionError("the request was accepted")


def measure(implementation: str, size: int, rounds: int) -> dict[str, float]:
    """Median seconds per call of each case over rounds, the cases interleaved within each round."""
    open_ = _opener(implementation)
    cases = _cases(size)
    for name, (headers, body) in cases.items():  # both are refusals, for the reason named
        print(f"  {name:<14} {size:>6} B refused: {_refusal_reason(open_, headers, body)}")
    batch = max(1, 4096 // max(1, size // 64))
    samples: dict[str, list[float]] = {name: [] for name in cases}
    order = list(cases)
    for r in range(rounds):
        for name in order if r % 2 == 0 else reversed(order):  # alternate which case runs first
            headers, body = cases[name]
            start = time.perf_counter_ns()
            for _ in range(batch):
                with contextlib.suppress(AuthError):
                    open_(headers, body)
            samples[name].append((time.perf_counter_ns() - start) / batch / 1e9)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--implementation", choices=("c", "reference", "core", "core-as-sent"), default="c",
                        help="c: Terminal.open; reference: pasarela.reference.Terminal.open; core: pasarela_open "
                             "alone (its data parsed from the body beforehand in each call, as in the others); "
                             "core-as-sent: pasarela_open_request_as_sent alone, which Terminal.open calls first")
    args = parser.parse_args()
    print(f"pasarela {pasarela.__version__} from {Path(pasarela.__file__).parent}, {args.implementation} path, "
          f"{args.rounds} interleaved rounds")
    for size in SIZES:
        medians = measure(args.implementation, size, args.rounds)
        bad_padding, bad_signature = medians["bad padding"], medians["bad signature"]
        ratio = max(bad_padding, bad_signature) / min(bad_padding, bad_signature)
        print(f"{size:>6} B: bad padding {bad_padding * 1e6:9.2f} us, valid padding + bad signature "
              f"{bad_signature * 1e6:9.2f} us, ratio {ratio:.3f} (goal <= 1.1)")


if __name__ == "__main__":
    main()
