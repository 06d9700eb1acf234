"""The JavaScript server's verdict is the oracle for ``open`` (issue 38: "the server's verdict as the oracle").

Hypothesis writes JSON object texts of the kinds the C canonicalizer hands to Python (a top-level ``"key"``
member beside numbers such as ``0.30000000000000004``, ``5e-324`` or ``1e400``, repeated keys, 17+-digit
integers), lone surrogates (``\\ud800`` escapes), nesting around the 1000-level limit, member names spelled
with escapes (``"k\\u0065y"`` is ``"key"``). Node (tests/support/node_envelope.js) encrypts each text as it is and
signs it either the server's way (SHA-512 of the Base64 of ``JSON.stringify`` of the parsed text with ``key``
added) or the splicing way (``text[:-1] + ',"key":"<ekt>"}'``), then gives the server's verdict on the
request at a clock near its timestamp: timestamp checks, decipher, ``JSON.parse``, key added,
``JSON.stringify``, Base64, SHA-512, ``timingSafeEqual``.

Every route into ``open`` must give that verdict: ``Terminal.open`` of a POST body as bytes (the C reader), of a
PUT and of a GET's query, ``pasarela.reference.Terminal.open``, and ``TerminalAuthMiddleware`` (in process,
through httpx's ASGI transport). What one accepts, resealed by ``canonical_json``, is the server's
``JSON.stringify`` of what it parsed, byte for byte. pasarela refuses on purpose, whatever the server
says, a top-level ``"key"`` or ``"__proto__"`` member and nesting beyond ``MAX_DEPTH`` (docs/terminal.md, "Why
exact", and docs/security.md, "Notes on the implementation"): the server's side reports those facts of the payload
it parsed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from typing import Any, Callable, NamedTuple

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pasarela import Terminal, canonical_json, reference
from pasarela.asgi import TerminalAuthMiddleware
from pasarela.errors import AuthError
from pasarela.terminal.stringify import MAX_DEPTH
from support.json_text import text_depth
from support.node_envelope import NodeEnvelope, ServerVerdict
from support.recursion_limit import recursion_limit
from support.strategies import json_texts, keys, number_texts, scalar_texts, string_texts, whitespace

BUSINESS_CODE = "bc-server-verdict"
SERIAL = "SN-0042"
TIMESTAMP = 1763812800
IV = bytes(range(16))

# ---------------------------------------------------------------------------------------------------
# The texts

KEY_VALUES = ["0.30000000000000004", "5e-324", "1e400", "-1e400", "1", "1.0", "12345678901234567890", '"x"',
              "null", "{}", '"\\ud800"']  # fmt: skip
DEEP_LEAVES = ["1", "0.30000000000000004", "12345678901234567890", '"\\ud800"', "1e400", "{}", "[]", '"x"']
SURROGATE_STRINGS = ['"\\ud800"', '"\\udfff"', '"a\\ud83d"', '"\\ude00b"', '"\\ud83d\\ude00"', '"\\uDBFF\\uD800"']
LONG_INTS = st.integers(min_value=10**16, max_value=10**40).map(str) | st.sampled_from(
    ["12345678901234567890", "-12345678901234567890", "9007199254740993", "100000000000000000000000"])


def deep_text(depth: int, leaf: str, arrays: bool) -> str:
    """A value nested ``depth`` levels (arrays, or objects under the member "d")."""
    if arrays:
        return "[" * depth + leaf + "]" * depth
    return '{"d":' * depth + leaf + "}" * depth


deep_values = st.builds(deep_text, st.integers(min_value=980, max_value=1005), st.sampled_from(DEEP_LEAVES),
                        st.booleans())  # the member is one level below the top-level object
member_values = st.one_of(
    scalar_texts,
    number_texts,
    LONG_INTS,
    st.sampled_from(SURROGATE_STRINGS),
    json_texts(),
    deep_values,
)
member_names = st.one_of(st.sampled_from(["a", "b", "key", "__proto__", "0", "10"]), keys)


@st.composite
def object_texts(draw: st.DrawFn) -> str:
    """A JSON object text: members (names spelled with random escapes, so "key" may read "k\\u0065y"), often a
    top-level "key" among them, sometimes twice; whitespace around members, never after the closing brace
    unless drawn (which makes the spliced signature cover a broken text)."""
    members = [(draw(member_names), draw(member_values)) for _ in range(draw(st.integers(0, 4)))]
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2]))):
        members.insert(draw(st.integers(0, len(members))), ("key", draw(st.sampled_from(KEY_VALUES))))
    parts = [draw(whitespace) + draw(string_texts(st.just(name))) + ":" + value + draw(whitespace)
             for name, value in members]
    trailing = draw(st.sampled_from(["", "", "", "", " "]))
    return draw(whitespace) + "{" + ",".join(parts) + "}" + trailing


# ---------------------------------------------------------------------------------------------------
# The routes into open

class Outcome(NamedTuple):
    accepted: bool
    payload: Any  # the payload when accepted, else the refusal's reason


class Request(NamedTuple):
    headers: dict[str, str]
    body: bytes
    data: str
    now: float


class Capture:
    """The application behind the middleware: keeps the payload it was handed."""

    def __init__(self) -> None:
        self.payloads: list[Any] = []

    async def __call__(self, scope: Mapping[str, Any], receive: Any, send: Any) -> None:
        self.payloads.append(scope["pasarela.payload"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


CPYTHON_RECURSION_LIMIT = 1000
"""The limit an application runs with. Hypothesis raises it (to about 2000 above the caller's depth) while a
test runs, which would hide a nesting limit that shrinks with the stack (issue 38, defect 3)."""




def opened(open_call: Callable[[], Any]) -> Outcome:
    try:
        with recursion_limit(CPYTHON_RECURSION_LIMIT):
            return Outcome(True, open_call())
    except AuthError as exc:
        return Outcome(False, exc.reason)


Route = Callable[[Request], Outcome]


@pytest.fixture(scope="module")
def routes() -> Iterator[dict[str, Route]]:
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    pure = reference.Terminal(BUSINESS_CODE, SERIAL)
    loop = asyncio.new_event_loop()

    def middleware(request: Request) -> Outcome:
        capture = Capture()
        app = TerminalAuthMiddleware(capture, terminal, clock=lambda: request.now)

        async def post() -> httpx.Response:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway") as client:
                return await client.post("/payments", content=request.body, headers=request.headers)

        with recursion_limit(CPYTHON_RECURSION_LIMIT):
            answer = loop.run_until_complete(post())
        assert answer.status_code in (204, 401), f"the middleware answered HTTP {answer.status_code}"
        return Outcome(True, capture.payloads[0]) if answer.status_code == 204 else Outcome(False, answer.text)

    try:
        yield {
            "Terminal.open POST bytes": lambda r: opened(lambda: terminal.open("POST", r.headers, r.body, now=r.now)),
            "Terminal.open PUT": lambda r: opened(lambda: terminal.open("PUT", r.headers, r.body, now=r.now)),
            "Terminal.open GET": lambda r: opened(
                lambda: terminal.open("GET", r.headers, params={"data": r.data}, now=r.now)),
            "reference.Terminal.open": lambda r: opened(lambda: pure.open("POST", r.headers, r.body, now=r.now)),
            "TerminalAuthMiddleware": middleware,
        }
    finally:
        loop.close()


def expected(verdict: ServerVerdict, text: str) -> bool:
    """Accepted by pasarela: what the server accepts, less what pasarela refuses on purpose (a text nesting
    deeper than MAX_DEPTH, even where a repeated member drops the deep part from what JSON.parse returns)."""
    return verdict.ok and not (verdict.own_key or verdict.own_proto or text_depth(text) > MAX_DEPTH)


def describe(text: str) -> str:
    return text if len(text) <= 300 else f"{text[:150]}…({len(text)} characters)…{text[-150:]}"


@settings(max_examples=300)
@given(text=object_texts(), signing=st.sampled_from(["server", "splice"]),
       skew=st.sampled_from([0, 0, 0, 0, 0, 0, 299.5, -300, 300.5, -301]))
@example(text='{"a":0.30000000000000004,"key":1}', signing="splice", skew=0)
@example(text='{"a":5e-324,"key":1}', signing="splice", skew=0)
@example(text='{"a":0.30000000000000004,"key":1}', signing="server", skew=0)
@example(text='{"a":"\\ud800"}', signing="splice", skew=0)
@example(text='{"a":12345678901234567890}', signing="server", skew=0)
@example(text='{"a":1e400}', signing="server", skew=0)
@example(text='{"d":' + "[" * 998 + "0.30000000000000004" + "]" * 998 + "}", signing="server", skew=0)
def test_every_route_into_open_gives_the_servers_verdict(
    node_envelope: NodeEnvelope, routes: dict[str, Route], text: str, signing: str, skew: float
) -> None:
    sealed = node_envelope.seal_text(BUSINESS_CODE, SERIAL, TIMESTAMP, IV, text, signing=signing)
    headers = {"Authorization": sealed["authorization"], "timestamp": str(TIMESTAMP),
               "Content-Type": "application/json"}
    request = Request(headers, b'{"data":"' + sealed["data"].encode("ascii") + b'"}', sealed["data"],
                      TIMESTAMP + skew)
    server_headers = {"authorization": sealed["authorization"], "timestamp": str(TIMESTAMP)}
    server = node_envelope.receive(BUSINESS_CODE, SERIAL, request.now, "POST", server_headers, body=request.body)
    server_get = node_envelope.receive(BUSINESS_CODE, SERIAL, request.now, "GET", server_headers,
                                       query_data=request.data)
    assert server_get == server  # the server reads data from the body or the query alike

    wanted = expected(server, text)
    disagreements = []
    for name, route in routes.items():
        outcome = route(request)
        if outcome.accepted != wanted:
            disagreements.append(f"{name}: {'accepted' if outcome.accepted else 'refused'}"
                                 f" ({outcome.payload if not outcome.accepted else 'payload returned'})")
        elif outcome.accepted:
            resealed = canonical_json(outcome.payload)
            if resealed != server.stringified:
                disagreements.append(f"{name}: reseals to {describe(resealed.decode('utf-8', 'replace'))}")
    assert not disagreements, (
        f"the server {'accepts' if server.ok else 'refuses'} ({server.reason}; own key {server.own_key}, "
        f"own __proto__ {server.own_proto}) the text {describe(text)} (nesting {text_depth(text)}) signed by {signing}"
        f" at skew {skew}; pasarela should {'accept' if wanted else 'refuse'}:\n  " + "\n  ".join(disagreements))
