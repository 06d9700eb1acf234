"""The nesting limit (1000 levels, MAX_DEPTH) holds whatever the caller's stack (issue 38, defect 3; issue 43, item 3).

A framework may call seal or open 600 frames deep, or close to Python's recursion limit. Every public entry (seal of
text and of a dict, seal_many, canonical_json, open by POST and GET, Verifier, the middleware, the reference) must
give there the verdict it gives from a shallow stack: accepted up to 1000 levels, refused beyond (PayloadError or
AuthError, with the same reason), at 999, 1000, 1001 and 100,000 levels, whatever the leaf sends the text down (the
C path, or a 17-digit float, a lone surrogate or a long integer, which go through Python). The path through
json.loads used to accept 987 levels from a shallow caller and 387 from 600 frames deep. And with Python's
recursion limit raised, a 100,000-level text must be refused before any recursive parser sees it: json's C scanner
then overflowed the C stack (SIGSEGV), so that case runs in a process of its own.
"""

from __future__ import annotations

import asyncio
import functools
import subprocess
import sys
import textwrap
from typing import Any, Callable

import pytest

import pasarela
from pasarela import AuthError, PayloadError, canonical_json, reference
from pasarela.asgi import TerminalAuthMiddleware
from pasarela.terminal import reference as primitives
from pasarela.terminal.replay import Verifier
from pasarela.terminal.stringify import MAX_DEPTH, stringify
from support.faulty_clients import BUSINESS_CODE, NOON, SERIAL

DEPTHS = [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 100_000]
LEAVES = {  # the leaf's text, its JSON.stringify(JSON.parse(...)), and the value a dict payload holds there
    "c path": (b"1", b"1", 1),
    "17-digit float": (b"0.30000000000000004", b"0.30000000000000004", 0.30000000000000004),
    "lone surrogate": (b'"\\ud800"', b'"\\ud800"', "\ud800"),
    "long integer": (b"12345678901234567890", b"12345678901234567000", 2**60),
}
HEADROOM = 60
"""Frames left below the recursion limit in the "near the limit" case: pasarela's own calls fit in fewer."""

TERMINAL = pasarela.Terminal(BUSINESS_CODE, SERIAL)
DERIVED = primitives.derive(BUSINESS_CODE.encode(), SERIAL.encode(), NOON)
IV = bytes(range(16))


def nested_text(depth: int, leaf: bytes) -> bytes:
    """An object whose member nests arrays to depth levels in all, leaf innermost."""
    return b'{"a":' + b"[" * (depth - 1) + leaf + b"]" * (depth - 1) + b"}"


def nested_payload(depth: int, leaf: object) -> dict[str, Any]:
    value: Any = leaf
    for _ in range(depth - 1):
        value = [value]
    return {"a": value}


def request(depth: int, leaf: str) -> tuple[dict[str, str], str]:
    """Headers and data of a request whose plaintext is nested_text, signed the server's way within the limit (its
    canonical text) and as sent beyond it (no canonical text exists)."""
    text_leaf, canonical_leaf, _ = LEAVES[leaf]
    text = nested_text(depth, text_leaf)
    signed = nested_text(depth, canonical_leaf) if depth <= MAX_DEPTH else text
    return ({"Authorization": "Basic " + primitives.sign(signed, DERIVED.encoded_key), "timestamp": str(NOON)},
            primitives.encrypt(DERIVED.aes_key, IV, text))


def through_middleware(headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
    """(status, the body the application read) of a POST through TerminalAuthMiddleware."""
    got: list[bytes] = []
    statuses: list[int] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        got.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    scope = {"type": "http", "method": "POST", "path": "/p", "query_string": b"",
             "headers": [(name.lower().encode(), value.encode()) for name, value in headers.items()]}
    asyncio.run(TerminalAuthMiddleware(app, TERMINAL, clock=lambda: NOON)(scope, receive, send))
    return statuses[0], got[0] if got else b""


def entries(depth: int, leaf: str) -> dict[str, Callable[[], object]]:
    text_leaf, _, value_leaf = LEAVES[leaf]
    text = nested_text(depth, text_leaf)
    headers, data = request(depth, leaf)
    body = b'{"data":"' + data.encode("ascii") + b'"}'
    calls: dict[str, Callable[[], object]] = {
        "seal(text)": lambda: TERMINAL.seal(text, timestamp=NOON, iv=IV),
        "canonical_json(text)": lambda: canonical_json(text),
        "reference canonical_json(text)": lambda: reference.canonical_json(text),
        "open POST": lambda: TERMINAL.open("POST", headers, body, now=NOON),
        "open GET": lambda: TERMINAL.open("GET", headers, params={"data": data}, now=NOON),
        "Verifier": lambda: Verifier(TERMINAL, clock=lambda: NOON).open("POST", headers, body),
        "middleware": lambda: through_middleware(headers, body),
        "reference open": lambda: reference.Terminal(BUSINESS_CODE, SERIAL).open("POST", headers, body, now=NOON),
    }
    if depth <= 2 * MAX_DEPTH:  # (a dict 100,000 deep takes long to build, and says no more)
        payload = nested_payload(depth, value_leaf)
        calls.update({
            "seal(dict)": lambda: TERMINAL.seal(payload, timestamp=NOON, iv=IV),
            "seal_many": lambda: TERMINAL.seal_many([payload, payload], timestamp=NOON),
            "canonical_json(dict)": lambda: canonical_json(payload),
        })
    return calls


def verdict(call: Callable[[], object]) -> tuple[object, ...]:
    """What a call gave, comparable without recursion: ("accepted", its bytes) or ("refused", error type, reason)."""
    try:
        result = call()
    except (PayloadError, AuthError) as exc:
        return "refused", type(exc).__name__, exc.reason
    if isinstance(result, pasarela.Sealed):
        return "accepted", result.plaintext, result.signature, result.body
    if isinstance(result, list):
        return "accepted", tuple(sealed.plaintext for sealed in result)
    if isinstance(result, dict):
        return "accepted", stringify(result)  # (== of a 1000-level payload would itself recurse)
    return "accepted", result


def stack_depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1  # type: ignore[assignment]
    return depth


def called_at(frames: int, call: Callable[[], object]) -> tuple[object, ...]:
    """verdict(call), made frames Python frames deeper than here."""
    def down(n: int) -> tuple[object, ...]:
        return down(n - 1) if n else verdict(call)

    return down(frames)


@pytest.mark.parametrize("leaf", list(LEAVES))
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_entry_gives_the_same_verdict_at_any_caller_depth(depth: int, leaf: str) -> None:
    near_the_limit = sys.getrecursionlimit() - stack_depth() - HEADROOM
    assert near_the_limit > 600
    for name, call in entries(depth, leaf).items():
        shallow = verdict(call)
        if depth <= MAX_DEPTH:
            assert shallow[0] == "accepted" and shallow != ("accepted", (401, b"")), (name, shallow)
        else:
            assert shallow[0] == "refused" or shallow == ("accepted", (401, b"")), (name, shallow)
        assert called_at(600, call) == shallow, (name, "600 frames deep")
        assert called_at(near_the_limit, call) == shallow, (name, f"{HEADROOM} frames below the recursion limit")


def test_the_accepted_payload_is_the_one_sent_at_1000_levels() -> None:
    for leaf, (_, canonical_leaf, _) in LEAVES.items():
        headers, data = request(MAX_DEPTH, leaf)
        payload = called_at(600, functools.partial(TERMINAL.open, "GET", headers, params={"data": data}, now=NOON))
        assert payload == ("accepted", nested_text(MAX_DEPTH, canonical_leaf)), leaf


def test_100000_levels_are_refused_before_a_recursive_parser_even_with_the_recursion_limit_raised() -> None:
    script = textwrap.dedent(f"""
        import sys
        import pasarela
        from pasarela import AuthError, PayloadError, reference
        sys.setrecursionlimit(10_000_000)
        text = b'{{"a":' + b'[' * 99_999 + b'0.30000000000000004' + b']' * 99_999 + b'}}'
        for call in (lambda: pasarela.Terminal("bc", "SN").seal(text, timestamp={NOON}),
                     lambda: pasarela.canonical_json(text), lambda: reference.canonical_json(text)):
            try:
                call()
            except PayloadError as exc:
                assert "nesting deeper than 1000" in exc.reason, exc.reason
            else:
                raise AssertionError("accepted")
        print("refused")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout.strip()) == (0, "refused"), result.stderr[-2000:]
