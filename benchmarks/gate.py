"""Benchmark gate: pasarela against the naive implementation, a Node.js gateway and the primitives' floor.

    python benchmarks/gate.py [--short] [--margin 0.3] [--out benchmarks/gate-out] [--write-baseline]

Measures in one run, in rounds (each round measures every implementation at every size once, so a
slow spell of the machine hits all of them): seal, seal_many, open, the naive implementation's seal
and open (benchmarks/naive.py), a Node.js gateway's seal (benchmarks/node_seal.js: crypto and
JSON.stringify), the JavaScript server's verify against open on items-heavy and string-heavy payloads
(benchmarks/node_verify.js; --node-verify measures that alone) and the primitives' floor (`openssl speed`:
MD5 + SHA-512 over the Base64 text + AES-256-CBC, as report.py measures it). Each ratio says how many times
faster pasarela is than the other side; it is taken within each round and its median over the rounds is kept.
Absolute times on a shared machine swing by several times; ratios taken this way move far less.

Writes a Markdown table (also to $GITHUB_STEP_SUMMARY when set), a plot and the measurements as JSON
to --out, and exits 1 when a ratio falls more than --margin below benchmarks/baseline.json (0.3: more
than 30% below): the baseline of this machine's class (machine_class: AVX-512, AVX2, ...), or the one for
any machine when its class has none. --write-baseline stores this run's ratios as its class's baseline.
--short (what .ci/run runs, with a generous margin so that only a real regression of about 2x fails, never
noise) measures fewer sizes for less time.

It also holds the Redis replay store to at most 2x the in-memory store's CPU per verified request, in process
(REPLAY_STORE: issue 57's goal 3, on a redis-server of its own, about 3 s), and times the CBC padding-oracle forgery
through each public entry (benchmarks/padding_timing.py: the C call,
Terminal.open, Terminal.open_bytes, Verifier, the ASGI middleware and the pure-Python reference, at 256 B and 64 KiB,
64 pairs of probes taken in turn) and fails when a bad padding's
refusal and a valid one's differ: their median ratio beyond 1.05 either way, or the bad padding slower in fewer than
25% or more than 75% of the interleaved rounds (issue 38). No margin is added to those bounds: when both refusals do
the same work the ratio stays within 1.02 and the share within 40-60% here; a result out of bounds is measured once
more and fails only if it is again (on this 2-core VM under load, one measurement in about forty strayed past them by
noise alone, while a leak such as issue 38's 1.33x and 95% is out of bounds every time).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, cast

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

import padding_timing
import pasarela
from naive import naive_open, naive_seal
from pasarela import canonical_json
from payloads import SHAPES, payload_of_size
from report import BUSINESS_CODE, SERIAL, TIMESTAMP, openssl_ns, plot, primitives_sum_ns, signed_base64_len

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "baseline.json"
BATCH = 256

# ratio -> (the other side, ours): ratio = other's ns / ours (how many times faster ours is)
RATIOS = {
    "seal vs naive seal": ("naive seal", "seal"),
    "open vs naive open": ("naive open", "open"),
    "seal vs Node.js seal": ("node seal", "seal"),
    # the JavaScript server's own verify (benchmarks/node_verify.js) on the requests open opens (issue 42, goal 1)
    "open vs Node.js verify": ("node verify", "open"),
    "open vs Node.js verify, string-heavy": ("node verify string-heavy", "open string-heavy"),
    "open_bytes vs Node.js verify": ("node verify", "open_bytes"),  # (issue 42, goal 2)
    "open_bytes vs Node.js verify, string-heavy": ("node verify string-heavy", "open_bytes string-heavy"),
    "seal vs the primitives' floor": ("primitives floor", "seal"),
    "seal_many vs the primitives' floor": ("primitives floor", "seal_many"),
    "seal_many vs seal": ("seal", "seal_many"),  # a batch must never lose to a loop of single seals
    "open_bytes vs seal": ("seal", "open_bytes"),  # the verified bytes of a request against sealing it (GOALS)
    # a body that is not bytes (request.text, a buffer, a zero-copy read) against the same body as bytes (GOALS)
    **{f"open of a {form} body vs bytes": ("open", f"open {form}") for form in ("str", "bytearray", "memoryview")},
}
BODY_FORM_RATIOS = tuple(label for label in RATIOS if label.startswith("open of a "))
"""Held to issue 54's goal (GOALS: at most 1.2x the bytes time) on every machine, in no baseline."""

BESIDE_THE_HASH_ROWS = {shape: (f"seal {shape}, interleaved", f"open_bytes {shape}, interleaved",
                              f"shared hash {shape}") for shape in SHAPES}
"""Each payload shape's rows for BESIDE_THE_HASH, measured by _beside_the_hash_ns: seal's, open_bytes's and the hash
both must do."""

BESIDE_THE_HASH = {f"open_bytes vs seal, beside the shared hash, {shape}": rows
                   for shape, rows in BESIDE_THE_HASH_ROWS.items()}
"""ratio -> (the other side, ours, the part both must do): (other's ns - the part's) / (ours - the part's). Issue 42's
goal 2 restated where it is beyond a bound: open_bytes must check the signature of the very text seal signs, with
the same Base64 and SHA-512 (pasarela_verify), and on string-heavy payloads that hash alone takes 0.77x seal's time
at 1 KiB and 0.83x at 16 KiB (0.68x and 0.80x without the call's own cost), so open_bytes in 0.8x seal's time is
below what that hash allows. The 0.8x is then asked of what each does beside that hash: open_bytes's decryption, hex
decoding, canonical check and call at most 0.8x seal's JSON writing, encryption, hex and call (items-heavy as well,
where the goal itself holds)."""

ANY_MACHINE = "any"
"""baseline.json holds one baseline per class of machine (machine_class): the ratios against the floor depend on
the vector width our code gets and openssl's does not, so a baseline from an AVX-512 machine would fail an AVX2
one on speed it never had; and on the CPU's maker (with AVX-512 both, seal_many at 1 KiB ran at 1.03x the floor
on an AMD Zen 4 and 0.72x on an Intel Xeon). A machine is held to its class's baseline, else to the one of its
vector width of any maker, else to ANY_MACHINE's, measured before the code used AVX-512 (lower ratios: only a
larger regression fails it)."""

NODE_VERIFY_RATIOS = ("open vs Node.js verify", "open vs Node.js verify, string-heavy", "open_bytes vs Node.js verify",
                      "open_bytes vs Node.js verify, string-heavy")
RULES = {"seal_many vs seal": 1.0, **dict.fromkeys(NODE_VERIFY_RATIOS, 2.5)}
"""Ratios every machine is held to where its baseline has none (ANY_MACHINE's predates them): a batch never loses to a
loop of single seals, so seal_many per request costs at most what seal does, at every size, on any machine. A
class's measured value, where it has one, holds instead (higher: 1.2-3.4x on the AVX-512 machines). open and
open_bytes against the Node.js verify: at least 2.5x anywhere (issue 42's goals are 4x and 6x; at 16 KiB the SHA-512
alone leaves open_bytes at most about 4.7x string-heavy, and open, which makes the payload's objects, 3.3x
items-heavy and 4.0x string-heavy: gate.py --node-verify)."""


AT_MOST_0_8X_SEAL = {1024: 1.25, 16384: 1.25}  # seal's time / open_bytes's at least 1.25 at 1 KiB and 16 KiB

GOALS: dict[str, dict[int, float]] = {
    "open_bytes vs seal": AT_MOST_0_8X_SEAL,
    **dict.fromkeys(BESIDE_THE_HASH, AT_MOST_0_8X_SEAL),
    **dict.fromkeys(("open vs Node.js verify", "open vs Node.js verify, string-heavy"),
                    dict.fromkeys((64, 256, 1024), 4.0)),
    "open_bytes vs Node.js verify": dict.fromkeys((64, 256, 1024, 16384), 6.0),
    "open_bytes vs Node.js verify, string-heavy": dict.fromkeys((64, 256, 1024), 5.4),
    **dict.fromkeys(BODY_FORM_RATIOS, dict.fromkeys((64, 256, 1024, 16384), 1 / 1.2)),
}
"""Ratios held at given sizes on every machine, less GOAL_MARGIN (the baseline's value less the gate's margin instead,
where that is higher). Issue 42's goal 2: Terminal.open_bytes in at most 0.8x the time of seal at 1 KiB and 16 KiB
(seal's time / open_bytes's at least 1.25), and where the hash both share puts that beyond reach (string-heavy),
beside that hash (BESIDE_THE_HASH); open_bytes at least 6x the Node.js verify. Goal 1: open at least 4x it. Those two
up to 1 KiB, and items-heavy open_bytes at 16 KiB too (its ceiling there 9-10x; measured 6.2x and 6.5x on the AVX-512
class, 5.9x on the AVX2 class: docs/performance.md): at 16 KiB MD5 and SHA-512 alone leave open_bytes at most 4.6-4.9x
string-heavy, and open, which makes the payload's objects, 3.1-3.5x items-heavy and 3.9-4.0x string-heavy (gate.py
--node-verify prints those ceilings). Since issue 57 the Node.js verify is the fastest natural one
(benchmarks/node_verify.js: the fewest steps, crypto.hash), 0.9x the time of issue 42's at 1 KiB string-heavy
(0.90-0.93x, the same run): there issue 42's 6x for open_bytes is 5.4x the faster verify (measured 5.5x over 7 rounds
on both CPU classes; the hashes alone would allow 8.0-8.6x), which is held; open is held to 4x the faster verify as
it was to the slower one (4.04-4.17x items-heavy at 1 KiB). Issue 54 item 6: open of a str, bytearray or
memoryview body in at most 1.2x the time of the same body as bytes, at every size."""

GOAL_MARGIN = 0.1
"""How far below a goal a measured ratio may fall, whatever --margin (which allows for a baseline's regressions):
this machine's noise alone. The gate's 2 rounds of "open_bytes vs seal" at 1 KiB measured 1.22-1.25x in CI runs
whose longer measurements gave 1.25-1.31x; a 10% fall (open_bytes at 0.89x seal's time) is a regression of the goal,
not noise."""

SHORT_GOAL_MARGIN = 0.2
"""GOAL_MARGIN of --short (CI's 2 rounds): on a quiet 2-vCPU VM on 2026-12-07 one short run measured "open_bytes vs
seal" at 1 KiB 1.11x and the Redis store's CPU ratio 0.42x, each just under the 10% floor, where longer runs of the same
tree gave 1.22-1.31x and 0.47-0.50x: two rounds stray further. The full gate holds the goals at GOAL_MARGIN."""

CLASS_GOALS: dict[str, dict[str, dict[int, float]]] = {
    "x86-64 AVX2": {"seal_many vs the primitives' floor": {1024: 1 / 1.3}},
}
"""GOALS of one vector width's machines (machine_class without the maker): issue 42's goal 5, seal_many at most 1.3x
the primitives' floor at 1 KiB on AVX2 (floor / seal_many at least 1/1.3). An AVX-512 machine measures its AVX2 class
too with PASARELA_NO_AVX512=1 (pasarela._binding), as .ci/run does."""


def cpu_vendor() -> str:
    """AMD, Intel, or "" when this machine does not say (read from /proc/cpuinfo, else platform.processor())."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
            text = cpuinfo.read(65536)
    except OSError:
        text = platform.processor()
    return "AMD" if "AuthenticAMD" in text else "Intel" if "GenuineIntel" in text else ""


def machine_class() -> str:
    """The class of this machine's baseline: the widest vector code the C core runs here, and the CPU's maker."""
    from pasarela._binding import CPU_FEATURES, lib  # type: ignore[attr-defined]

    if CPU_FEATURES & lib.PASARELA_CPU_AVX512:
        width = "x86-64 AVX-512"
    elif CPU_FEATURES & lib.PASARELA_CPU_AVX2:
        width = "x86-64 AVX2"
    else:
        return platform.machine() or "unknown"
    return f"{width} {cpu_vendor()}".rstrip()


Baseline = dict[str, dict[str, float]]  # ratio -> size (as a string) -> times faster


def baseline_for(baselines: dict[str, Baseline], machine: str) -> tuple[str, Baseline]:
    """(the class whose baseline holds, that baseline) for a machine of the class machine: its own, else its
    vector width's of any maker ("x86-64 AVX-512" for "x86-64 AVX-512 Intel"), else ANY_MACHINE's."""
    width = machine.removesuffix(" AMD").removesuffix(" Intel")
    key = next(key for key in (machine, width, ANY_MACHINE) if key in baselines)
    return key, baselines[key]


def _verify_calls(terminal: pasarela.Terminal, sealed: pasarela.Sealed) -> tuple[Callable[[], object],
                                                                                  Callable[[], object]]:
    """pasarela_verify of sealed's canonical text and signature, and the same call refused at its first test (a length
    of 0), each in a workspace of its own (the thread's is replaced, and its memory freed, when a batch or a larger
    request grows it)."""
    from pasarela import _binding
    from pasarela._binding import lib  # type: ignore[attr-defined]

    credentials = terminal._native.struct
    text, signature = sealed.plaintext, sealed.headers["Authorization"].removeprefix("Basic ").encode()

    def verify(length: int) -> Callable[[], object]:
        buffers = _binding._Buffers(len(text))  # held by the call made here
        return lambda: lib.pasarela_verify(credentials, buffers.ws, TIMESTAMP, text, length, signature)

    whole, refused = verify(len(text)), verify(0)
    if whole() != lib.PASARELA_OK or refused() == lib.PASARELA_OK:
        raise RuntimeError("gate: the shared hash's call does not verify the request sealed, or its refused one does")
    return whole, refused


BESIDE_THE_HASH_BLOCKS = 25
"""Blocks of about 2 ms each call is timed in, in turn, for _beside_the_hash_ns."""


def _beside_the_hash_calls(size: int, terminal: pasarela.Terminal) -> dict[str, dict[str, Callable[[], object]]]:
    """For each payload shape: seal, open_bytes (of a request sealed beforehand), and pasarela_verify of that request's
    text and the same call refused at once (_verify_calls); seal and open_bytes called as _python_calls calls them."""

    def calls_of(payload: dict[str, Any]) -> dict[str, Callable[[], object]]:
        sealed = terminal.seal(payload, timestamp=TIMESTAMP)
        # read once: Sealed.headers makes a new dict and Sealed.body slices a new bytes on each access
        headers, body = sealed.headers, sealed.body or b""
        verify, refused = _verify_calls(terminal, sealed)
        return {"seal": lambda: terminal.seal(payload),
                "open_bytes": lambda: terminal.open_bytes("POST", headers, body, now=TIMESTAMP),
                "verify": verify, "refused": refused}

    return {shape: calls_of(make(size)) for shape, make in SHAPES.items()}


def _beside_the_hash_ns(calls: dict[str, dict[str, Callable[[], object]]], numbers: dict[tuple[str, str], int],
                        blocks: int = BESIDE_THE_HASH_BLOCKS) -> dict[str, float]:
    """BESIDE_THE_HASH_ROWS at one size: each call timed in blocks of numbers[shape, call] calls, every call's block
    in turn, blocks times over, and its fastest block kept; the shared hash is the verify's less the refused call's.
    A difference of two times magnifies their noise (seal beside the hash is a fifth of seal's time at 16 KiB
    string-heavy), so the four are timed side by side and often, not in the round's longer blocks far apart."""
    best = {key: float("inf") for key in numbers}
    for _ in range(blocks):
        for (shape, name), number in numbers.items():
            call = calls[shape][name]
            start = time.perf_counter()
            for _ in range(number):
                call()
            best[shape, name] = min(best[shape, name], (time.perf_counter() - start) / number * 1e9)
    rows = {}
    for shape, (seal, open_bytes, shared) in BESIDE_THE_HASH_ROWS.items():
        rows[seal], rows[open_bytes] = best[shape, "seal"], best[shape, "open_bytes"]
        rows[shared] = best[shape, "verify"] - best[shape, "refused"]
    return rows


def _python_calls(size: int, terminal: pasarela.Terminal) -> dict[str, tuple[Callable[[], object], int]]:
    """name -> (call, requests per call)."""
    payload = payload_of_size(size)
    iv = bytes(range(16))
    batch = [payload] * (BATCH if size <= 4096 else 16)
    sealed = terminal.seal(payload, timestamp=TIMESTAMP)
    headers, body = sealed.headers, sealed.body or b""
    text, buffer, view = body.decode(), bytearray(body), memoryview(body)
    strings = terminal.seal(SHAPES["string-heavy"](size), timestamp=TIMESTAMP)
    # read once, as for the items-heavy rows: Sealed.headers makes a new dict and Sealed.body slices a new bytes on
    # each access (about 1.3 us of a 1 KiB open, which these rows had timed as open's)
    strings_headers, strings_body = strings.headers, strings.body or b""
    return {
        "seal": (lambda: terminal.seal(payload), 1),
        "seal_many": (lambda: terminal.seal_many(batch, timestamp=TIMESTAMP), len(batch)),
        "open": (lambda: terminal.open("POST", headers, body, now=TIMESTAMP), 1),
        "open str": (lambda: terminal.open("POST", headers, text, now=TIMESTAMP), 1),
        "open bytearray": (lambda: terminal.open("POST", headers, buffer, now=TIMESTAMP), 1),
        "open memoryview": (lambda: terminal.open("POST", headers, view, now=TIMESTAMP), 1),
        "open_bytes": (lambda: terminal.open_bytes("POST", headers, body, now=TIMESTAMP), 1),
        "open string-heavy": (lambda: terminal.open("POST", strings_headers, strings_body, now=TIMESTAMP), 1),
        "open_bytes string-heavy": (lambda: terminal.open_bytes("POST", strings_headers, strings_body, now=TIMESTAMP),
                                    1),
        "naive seal": (lambda: naive_seal(BUSINESS_CODE, SERIAL, payload, TIMESTAMP, iv), 1),
        "naive open": (lambda: naive_open(BUSINESS_CODE, SERIAL, headers, body), 1),
    }


def _calibrated(call: Callable[[], object], seconds: float) -> int:
    """Calls per timed block so a block lasts about seconds."""
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            call()
        if time.perf_counter() - start > seconds / 2 or number >= 1 << 20:
            return number
        number *= 2


def _ns_per_request(call: Callable[[], object], number: int, items: int) -> float:
    """The best of 3 blocks (the least disturbed by other processes)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(number):
            call()
        best = min(best, time.perf_counter() - start)
    return best / number / items * 1e9


def _node_ns(sizes: list[int], seconds: float) -> dict[int, float]:
    request = {"businessCode": BUSINESS_CODE, "terminalSerial": SERIAL, "timestamp": TIMESTAMP, "seconds": seconds,
               "payloads": {str(size): canonical_json(payload_of_size(size)).decode() for size in sizes}}
    result = subprocess.run(["node", str(HERE / "node_seal.js")], input=json.dumps(request), capture_output=True,
                            text=True, check=True, timeout=300)
    return {int(size): float(ns) for size, ns in json.loads(result.stdout).items()}


NODE_VERIFY_ROWS = {"items-heavy": ("node verify", "open", "open_bytes"),
                    "string-heavy": ("node verify string-heavy", "open string-heavy", "open_bytes string-heavy")}
"""Each payload shape's (payloads.SHAPES) rows: benchmarks/node_verify.js's, then open's and open_bytes's of the same
requests."""


def node_verify_requests(sizes: list[int]) -> dict[str, dict[str, object]]:
    """The requests benchmarks/node_verify.js verifies, by "<shape> <size>": each sealed as _python_calls seals the
    ones open opens (at TIMESTAMP), its headers by lower-case name as Node's http module gives them."""
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    requests: dict[str, dict[str, object]] = {}
    for shape, make in SHAPES.items():
        for size in sizes:
            sealed = terminal.seal(make(size), timestamp=TIMESTAMP)
            requests[f"{shape} {size}"] = {"headers": {k.lower(): v for k, v in sealed.headers.items()},
                                           "body": (sealed.body or b"").decode()}
    return requests


def run_node_verify(requests: dict[str, dict[str, object]], seconds: float, check: bool = False) -> dict[str, object]:
    """benchmarks/node_verify.js on requests: ns per request by name, or with check its verdict on each."""
    message = {"businessCode": BUSINESS_CODE, "terminalSerial": SERIAL, "now": TIMESTAMP, "seconds": seconds,
               "requests": requests}
    command = ["node", str(HERE / "node_verify.js"), *(["--check"] if check else [])]
    result = subprocess.run(command, input=json.dumps(message), capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"node_verify.js failed ({result.returncode}): {result.stderr.strip()}")
    return cast("dict[str, object]", json.loads(result.stdout))


def _node_verify_ns(sizes: list[int], seconds: float) -> dict[str, dict[int, float]]:
    measured = run_node_verify(node_verify_requests(sizes), seconds)
    return {row: {size: float(cast(float, measured[f"{shape} {size}"])) for size in sizes}
            for shape, (row, *_) in NODE_VERIFY_ROWS.items()}


NODE_VERIFY_SIZES = [256, 1024, 16384]


def node_verify_table(rounds: int, seconds: float) -> str:
    """--node-verify: open and open_bytes against benchmarks/node_verify.js alone, both shapes at NODE_VERIFY_SIZES, in
    rounds (who goes first alternates); each ratio within a round, then its median, lowest and highest over the
    rounds. Beside each the ceiling of that ratio: Node's time over the least any verify must do, MD5 of the key and
    SHA-512 of the signed text's Base64 (openssl speed), and for open the payload's Python objects (orjson.loads of
    the plaintext); the decryption and hex left out: the ceilings are generous."""
    sizes = NODE_VERIFY_SIZES
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    hashes, loads = {}, {}
    for shape, make in SHAPES.items():
        for size in sizes:
            hashes[shape, size] = openssl_ns("md5", 32) + openssl_ns("sha512", signed_base64_len(size))
            loads[shape, size] = _ns_per_request(partial(orjson.loads, canonical_json(make(size))), 200, 1)
    ours = {(name, size): call for size in sizes for name, (call, _) in _python_calls(size, terminal).items()
            if any(name in rows[1:] for rows in NODE_VERIFY_ROWS.values())}
    numbers = {key: _calibrated(call, seconds) for key, call in ours.items()}
    results = []
    for r in range(rounds):
        row: dict[str, dict[int, float]] = {}
        if r % 2:
            row.update(_node_verify_ns(sizes, seconds))
        for (name, size), call in ours.items():
            row.setdefault(name, {})[size] = _ns_per_request(call, numbers[name, size], 1)
        if not r % 2:
            row.update(_node_verify_ns(sizes, seconds))
        results.append(row)
    lines = [f"open and open_bytes vs the Node.js verify (benchmarks/node_verify.js), {rounds} rounds: ns per request "
             "(medians), and Node's time / ours within each round: median [lowest, highest]; the ceilings: Node's "
             "time / (MD5 + SHA-512), and for open + orjson.loads", "",
             "| shape | size | Node.js verify | open | Node / open (ceiling) | open_bytes "
             "| Node / open_bytes (ceiling) |",
             "|---|---|---|---|---|---|---|"]
    for shape, (other, *mine) in NODE_VERIFY_ROWS.items():
        for size in sizes:
            node = statistics.median(row[other][size] for row in results)
            cells = [shape, f"{size:,} B", f"{node:,.0f}"]
            for name, least in zip(mine, (hashes[shape, size] + loads[shape, size], hashes[shape, size])):
                each = sorted(row[other][size] / row[name][size] for row in results)
                cells += [f"{statistics.median(row[name][size] for row in results):,.0f}",
                          f"{statistics.median(each):.2f}x [{each[0]:.2f}, {each[-1]:.2f}] ({node / least:.1f}x)"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def measure(sizes: list[int], rounds: int, seconds: float) -> list[dict[str, dict[int, float]]]:
    """Per round: implementation -> size -> ns per request."""
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    calls = {size: _python_calls(size, terminal) for size in sizes}
    numbers = {(size, name): _calibrated(call, seconds) for size in sizes for name, (call, _) in calls[size].items()}
    beside = {size: _beside_the_hash_calls(size, terminal) for size in sizes}
    beside_numbers = {size: {(shape, name): _calibrated(call, 0.004) for shape, by_name in beside[size].items()
                             for name, call in by_name.items()} for size in sizes}
    results = []
    for r in range(rounds):
        row: dict[str, dict[int, float]] = {}
        for size in sizes:
            for name, (call, items) in calls[size].items():
                row.setdefault(name, {})[size] = _ns_per_request(call, numbers[size, name], items)
            row.setdefault("primitives floor", {})[size] = primitives_sum_ns(size)
        row["node seal"] = _node_ns(sizes, seconds)
        row.update(_node_verify_ns(sizes, seconds))
        for size in sizes:
            for name, ns in _beside_the_hash_ns(beside[size], beside_numbers[size]).items():
                row.setdefault(name, {})[size] = ns
        results.append(row)
        print(f"round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
    return results


def ratios(rounds: list[dict[str, dict[int, float]]], sizes: list[int]) -> dict[str, dict[int, float]]:
    """Each ratio at each size: the median over rounds of the ratio within a round (the ratios whose two rows were
    measured)."""
    measured = {label: {size: statistics.median(row[other][size] / row[ours][size] for row in rounds)
                        for size in sizes}
                for label, (other, ours) in RATIOS.items() if other in rounds[0] and ours in rounds[0]}
    measured.update({label: {size: statistics.median((row[other][size] - row[shared][size]) /
                                                     (row[ours][size] - row[shared][size]) for row in rounds)
                             for size in sizes}
                     for label, (other, ours, shared) in BESIDE_THE_HASH.items()
                     if all(name in rounds[0] for name in (other, ours, shared))})
    return measured


Check = tuple[str, int, float, float, float, bool]  # ratio, size, measured, held to, floor, ok


def verdicts(measured: dict[str, dict[int, float]], baseline: dict[str, dict[str, float]],
             margin: float, machine: str = "", goal_margin: float = GOAL_MARGIN) -> list[Check]:
    """(ratio, size, measured, the value held to, the floor, ok) for every ratio the baseline, or else RULES, has at
    a measured size (ok: at least that value less margin), and for every one of GOALS and of the CLASS_GOALS of
    machine's vector width (ok: at least the goal less GOAL_MARGIN, and the baseline's value less margin)."""
    goals = {**GOALS, **CLASS_GOALS.get(machine.removesuffix(" AMD").removesuffix(" Intel"), {})}
    out = []
    for label, by_size in measured.items():
        for size, value in by_size.items():
            base = baseline.get(label, {}).get(str(size), RULES.get(label))
            goal = goals.get(label, {}).get(size)
            floor = None if base is None else base * (1 - margin)
            if goal is not None:
                floor = max(floor or 0.0, goal * (1 - goal_margin))
                base = goal if base is None else max(base, goal)
            if base is not None and floor is not None:
                out.append((label, size, value, base, floor, value >= floor))
    return out


def markdown(rounds: list[dict[str, dict[int, float]]], sizes: list[int], checks: list[Check], margin: float,
             command: str, baseline_name: str = ANY_MACHINE) -> str:
    medians = {name: {size: statistics.median(row[name][size] for row in rounds) for size in sizes}
               for name in rounds[0]}
    lines = [f"## pasarela {pasarela.__version__}: benchmark gate", "",
             f"`{command}`: {len(rounds)} round(s), {os.cpu_count()} CPUs, Python {sys.version.split()[0]}", "",
             "ns per request (median over rounds; absolute times vary with the machine's load)", "",
             "| | " + " | ".join(f"{size:,} B" for size in sizes) + " |",
             "|---|" + "---|" * len(sizes)]
    lines += [f"| {name} | " + " | ".join(f"{by_size[size]:,.0f}" for size in sizes) + " |"
              for name, by_size in medians.items()]
    lines += ["", f"ratios (times faster than the other side; fails below the floor: the baseline x {1 - margin:.2f}, "
              f"a goal x {1 - GOAL_MARGIN:.2f}; baseline: {baseline_name})", "",
              "| ratio | size | measured | held to | floor | |", "|---|---|---|---|---|---|"]
    lines += [f"| {label} | {size:,} B | {value:.2f}x | {base:.2f}x | {floor:.2f}x | "
              f"{'ok' if ok else '**REGRESSION**'} |" for label, size, value, base, floor, ok in checks]
    return "\n".join(lines) + "\n"


REPLAY_STORE = "Redis store vs in-memory store, in process (CPU)"
"""Issue 57's goal 3 as the gate holds it: with Redis a verified request costs the server's process at most 2x its CPU
with the in-memory store (this ratio: memory's time / Redis's, at least 0.5), 32 requests at a time through
TerminalAuthMiddleware on uvloop (benchmarks/http_serving.py's drive), each a distinct genuine 248-byte POST, in
interleaved rounds. The wall time also holds Redis's own time per script (the 32 claims are one call, and the 32
requests wait for it: 5-6 us a claim on a 2-vCPU VM) and is printed beside; what the gate holds is the process's own
cost, the closest restatement of the goal that Redis's time does not decide."""
REPLAY_STORE_SIZE = 256  # the size column of its check (http_serving.PAYLOAD_BYTES is 248)
REPLAY_STORE_GOAL = 0.5


def replay_store_rounds(rounds: int, requests: int = 10_000) -> list[dict[str, float]]:
    """Per round, us per verified request with each store: CPU ("memory", "redis") and wall ("memory wall", "redis
    wall"), the two in turn (who goes first alternates), on a redis-server of its own."""
    import uvloop

    sys.path.insert(0, str(HERE.parent / "tests"))
    import http_serving
    from support.redis_server import RedisServer

    scopes = http_serving.asgi_requests(requests)
    results = []
    with RedisServer() as server:
        for r in range(rounds):
            row: dict[str, float] = {}
            for kind in ("memory", "redis") if r % 2 == 0 else ("redis", "memory"):
                app = http_serving.served_app(kind, server.url)
                wall, cpu = uvloop.run(http_serving.drive(app, scopes, http_serving.IN_PROCESS_CONCURRENCY,
                                                          lifespan=kind == "redis"))
                row[kind], row[f"{kind} wall"] = cpu, wall
            results.append(row)
    return results


def replay_store_check(rounds: list[dict[str, float]], goal_margin: float = GOAL_MARGIN) -> Check:
    """REPLAY_STORE's verdict: the median over rounds of memory's CPU / Redis's, held to REPLAY_STORE_GOAL less
    GOAL_MARGIN."""
    value = statistics.median(row["memory"] / row["redis"] for row in rounds)
    floor = REPLAY_STORE_GOAL * (1 - goal_margin)
    return REPLAY_STORE, REPLAY_STORE_SIZE, value, REPLAY_STORE_GOAL, floor, value >= floor


def replay_store_markdown(rounds: list[dict[str, float]]) -> str:
    def cell(name: str) -> str:
        return f"{statistics.median(row[name] for row in rounds):.2f}"

    return ("\n" + f"{REPLAY_STORE}: us per verified request, median of {len(rounds)} rounds (CPU; wall)\n\n"
            "| store | CPU | wall |\n|---|---|---|\n"
            f"| in-memory | {cell('memory')} | {cell('memory wall')} |\n"
            f"| Redis | {cell('redis')} | {cell('redis wall')} |\n")


def padding_results(short: bool) -> list[padding_timing.Result]:
    """The padding-oracle forgery through each public entry (module docstring), each result out of bounds measured
    once more."""
    rounds = 150 if short else 400
    results = []
    for result in padding_timing.run(rounds=rounds):
        if not result.ok():
            result = padding_timing.measure(result.entry, result.size, rounds, 0.001)
            print(f"measured again: {result.line()}", flush=True)
        results.append(result)
    return results


def padding_markdown(results: list[padding_timing.Result]) -> str:
    lines = ["", f"padding oracle: the forgery C_1..C_(n-2) || R || C_n, bad padding against valid padding (fails "
             f"outside ratio 1/{padding_timing.MAX_RATIO}-{padding_timing.MAX_RATIO} or bad slower in "
             f"{padding_timing.SHARE_BOUNDS[0]:.0%}-{padding_timing.SHARE_BOUNDS[1]:.0%} of rounds)", "",
             "| entry | size | bad / valid (medians) | bad slower in | |", "|---|---|---|---|---|"]
    lines += [f"| {r.entry} | {r.size:,} B | {r.ratio:.3f} | {r.bad_slower:.0%} of {r.rounds} | "
              f"{'ok' if r.ok() else '**PADDING ORACLE**'} |" for r in results]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--short", action="store_true", help="256 B and 1 KiB, 2 rounds (about 40 s)")
    parser.add_argument("--margin", type=float, default=0.3, help="allowed fall below the baseline (0.3: 30%%)")
    parser.add_argument("--out", type=Path, default=HERE / "gate-out", help="directory for gate.md/.png/.json")
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--write-baseline", action="store_true", help="store this run's ratios as the baseline")
    parser.add_argument("--node-verify", action="store_true",
                        help="only open against the Node.js verify (issue 42, goal 1), 7 rounds, printed")
    args = parser.parse_args(argv)
    if args.node_verify:
        print(node_verify_table(rounds=7, seconds=0.1))
        return 0
    sizes = [256, 1024] if args.short else [64, 256, 1024, 16384]
    rounds = measure(sizes, rounds=2 if args.short else 3, seconds=0.1 if args.short else 0.15)
    measured = ratios(rounds, sizes)
    machine = machine_class()
    if args.write_baseline:  # this machine's class only: the others keep theirs
        previous = json.loads(args.baseline.read_text()) if args.baseline.exists() else {}
        own = previous.setdefault(machine, {})
        for label, by_size in measured.items():
            own.setdefault(label, {}).update({str(size): round(value, 3) for size, value in by_size.items()})
        args.baseline.write_text(json.dumps(previous, indent=2, sort_keys=True) + "\n")
    baseline_name, baseline = baseline_for(json.loads(args.baseline.read_text()), machine)
    goal_margin = SHORT_GOAL_MARGIN if args.short else GOAL_MARGIN
    checks = verdicts(measured, baseline, args.margin, machine, goal_margin)
    replay = replay_store_rounds(rounds=5 if args.short else 9)
    checks.append(replay_store_check(replay, goal_margin))
    command = " ".join(["python benchmarks/gate.py", *(argv if argv is not None else sys.argv[1:])])
    padding = padding_results(args.short)
    report = markdown(rounds, sizes, checks, args.margin, command, f"{baseline_name} (this machine: {machine})")
    report += replay_store_markdown(replay)
    report += padding_markdown(padding)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gate.md").write_text(report)
    (args.out / "gate.json").write_text(json.dumps({"rounds": rounds, "ratios": measured, "replay_store": replay,
                                                    "padding": [
        {"entry": r.entry, "size": r.size, "ratio": r.ratio, "bad_slower": r.bad_slower} for r in padding]}, indent=1))
    plot({name: {size: statistics.median(row[name][size] for row in rounds) for size in sizes} for name in rounds[0]},
         args.out / "gate.png")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(report)
    print(report)
    failed = [c for c in checks if not c[5]]
    if not checks:
        print(f"gate: {args.baseline} has no ratio at the sizes measured", file=sys.stderr)
        return 1
    for label, size, value, base, floor, _ in failed:
        print(f"gate: {label} at {size} B is {value:.2f}x, below {floor:.2f}x (held to {base:.2f}x)", file=sys.stderr)
    leaks = [r for r in padding if not r.ok()]
    for r in leaks:
        print(f"gate: padding validity shows through {r.entry} at {r.size} B: {r.line()}", file=sys.stderr)
    return 1 if failed or leaks else 0


if __name__ == "__main__":
    sys.exit(main())
