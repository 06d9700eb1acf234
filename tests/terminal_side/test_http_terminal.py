"""The terminal HTTP pieces together over a real server on 127.0.0.1 (uvicorn): the httpx clients (sync and
async) and the requests adapter against an application behind TerminalAuthMiddleware."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

import pasarela
from pasarela import AuthError
from pasarela.asgi import AUTH_001_RESPONSE, TerminalAuthMiddleware
from pasarela.errors import ApiError, TransportError
from pasarela.httpx import AsyncTerminalClient, TerminalClient
from pasarela.requests_adapter import TerminalClient as RequestsTerminalClient
from pasarela.terminal import reference as primitives
from pasarela.terminal.replay import InMemoryReplayStore
from support.faulty_clients import BUSINESS_CODE, SERIAL
from support.local_server import LocalServer, Receive, Send, read_body

TERMINAL = pasarela.Terminal(BUSINESS_CODE, SERIAL)
PAYLOAD = {"amount": 100.0, "currency": "COP", "items": [{"sku": "café", "qty": 2}]}
SENT = {"amount": 100, "currency": "COP", "items": [{"sku": "café", "qty": 2}]}  # as JavaScript reads it


async def application(scope: Any, receive: Receive, send: Send) -> None:
    """The service behind the middleware: echoes what it was given; /encrypted/* answers encrypted."""
    body = await read_body(receive)
    if scope["path"] == "/error":
        status, answer = 400, {"code": "T023", "message": "Transaction has a final status."}
    else:
        status, answer = 200, {"method": scope["method"], "path": scope["path"],
                               "payload": scope.get("pasarela.payload"), "body": json.loads(body) if body else None,
                               "query": scope["query_string"].decode()}
    content = json.dumps(answer).encode()
    if scope["path"].startswith("/encrypted/"):
        aes_key = primitives.derive(BUSINESS_CODE.encode(), SERIAL.encode(), scope["pasarela.timestamp"]).aes_key
        content = json.dumps({"data": primitives.encrypt(aes_key, bytes(16), content)}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": content})


@dataclass
class Wire:
    """Records each request as it arrived on the wire, before the middleware."""

    app: Any
    requests: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, scope: Any, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        record: dict[str, Any] = {"method": scope["method"], "path": scope["path"],
                                  "query": scope["query_string"].decode(), "body": b""}
        self.requests.append(record)

        async def recording() -> Any:
            message = await receive()
            record["body"] += message.get("body", b"")
            return message

        await self.app(scope, recording, send)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Wire]]:
    wire = Wire(TerminalAuthMiddleware(application, TERMINAL, exempt_paths={"/health"}, max_body_bytes=4096))
    with LocalServer(wire) as running:
        yield running.base_url, wire


@pytest.fixture
def base_url(server: tuple[str, Wire]) -> str:
    server[1].requests.clear()
    return server[0]


@pytest.fixture
def wire(server: tuple[str, Wire]) -> Wire:
    return server[1]


def _only_data_on_the_wire(record: dict[str, Any]) -> None:
    if record["method"] == "GET":
        assert record["query"].startswith("data=") and "&" not in record["query"]
        assert record["body"] == b""
    else:
        assert record["query"] == ""
        assert list(json.loads(record["body"])) == ["data"]


# --- the clients against the middleware -----------------------------------------------------------------


@pytest.mark.parametrize("method", ["post", "put", "patch", "get"])
def test_httpx_client_round_trip(base_url: str, wire: Wire, method: str) -> None:
    with TerminalClient(base_url, TERMINAL) as client:
        answer = getattr(client, method)("/payments/1", PAYLOAD)
    assert answer["method"] == method.upper() and answer["path"] == "/payments/1"
    assert answer["payload"] == SENT
    assert answer["body"] == (None if method == "get" else SENT)  # the application reads the payload as JSON
    assert answer["query"] == ""
    _only_data_on_the_wire(wire.requests[-1])


def test_async_httpx_client_round_trip(base_url: str, wire: Wire) -> None:
    async def calls() -> list[Any]:
        async with AsyncTerminalClient(base_url, TERMINAL) as client:
            return [await client.post("/p", PAYLOAD), await client.put("/p", {"a": 1}),
                    await client.patch("/p", {"b": 2}), await client.get("/p", {"id": "x"}),
                    await client.post("/encrypted/p", {"c": 3})]

    answers = asyncio.run(calls())
    assert [a["payload"] for a in answers] == [SENT, {"a": 1}, {"b": 2}, {"id": "x"}, {"c": 3}]
    assert [a["method"] for a in answers] == ["POST", "PUT", "PATCH", "GET", "POST"]
    for record in wire.requests:
        _only_data_on_the_wire(record)


@pytest.mark.parametrize("client_kind", ["httpx", "requests"])
def test_client_decrypts_encrypted_answers(base_url: str, wire: Wire, client_kind: str) -> None:
    kind = TerminalClient if client_kind == "httpx" else RequestsTerminalClient
    with kind(base_url, TERMINAL) as client:
        answer = client.post("/encrypted/charge", PAYLOAD)
    assert answer["payload"] == SENT
    assert b"COP" not in wire.requests[-1]["body"]


@pytest.mark.parametrize("client_kind", ["httpx", "requests"])
@pytest.mark.parametrize(("path", "params", "payload"), [
    ("/sync/abort", None, {}),
    ("/async/abort", None, {}),
    ("/async/abort", {"transactionId": "t-77"}, {"transactionId": "t-77"}),
    ("/print/status", {"printJobId": "pj-9"}, {"printJobId": "pj-9"}),
])
def test_get_identifiers_travel_encrypted(base_url: str, wire: Wire, client_kind: str, path: str, params: Any,
                                         payload: dict[str, Any]) -> None:
    kind = TerminalClient if client_kind == "httpx" else RequestsTerminalClient
    with kind(base_url, TERMINAL) as client:
        answer = client.get(path, params)
    assert answer["payload"] == payload  # an abort with nothing to send signed and encrypted {}
    record = wire.requests[-1]
    _only_data_on_the_wire(record)
    assert "t-77" not in record["query"] and "pj-9" not in record["query"]


@pytest.mark.parametrize("method", ["post", "put", "patch", "get"])
def test_requests_adapter_round_trip(base_url: str, wire: Wire, method: str) -> None:
    with RequestsTerminalClient(base_url, TERMINAL) as client:
        answer = getattr(client, method)("/payments", PAYLOAD)
    assert answer["payload"] == SENT and answer["method"] == method.upper()
    _only_data_on_the_wire(wire.requests[-1])


def test_payload_is_serialized_once(base_url: str, wire: Wire) -> None:
    # What goes on the wire is exactly what seal produced: no second serialization of the payload.
    sealed_bodies: list[bytes] = []

    class Recording:
        def seal(self, payload: Any = None, **kwargs: Any) -> pasarela.Sealed:
            sealed = TERMINAL.seal(payload, **kwargs)
            sealed_bodies.append(sealed.body or b"")
            return sealed

    with TerminalClient(base_url, Recording()) as client:
        client.post("/p", PAYLOAD)
    assert wire.requests[-1]["body"] == sealed_bodies[0]


# --- AUTH-001 ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("client_kind", ["httpx", "requests", "async"])
def test_auth_001_answer_raises_auth_error(base_url: str, client_kind: str) -> None:
    stranger = pasarela.Terminal("bc-0000000000", SERIAL)
    with pytest.raises(AuthError) as info:
        if client_kind == "async":
            async def call() -> Any:
                async with AsyncTerminalClient(base_url, stranger) as client:
                    return await client.post("/p", PAYLOAD)

            asyncio.run(call())
        else:
            kind = TerminalClient if client_kind == "httpx" else RequestsTerminalClient
            with kind(base_url, stranger) as client:
                client.post("/p", PAYLOAD)
    assert info.value.body == json.loads(AUTH_001_RESPONSE)


def _tampered(sealed: pasarela.Sealed) -> list[tuple[str, dict[str, str], Any, Any]]:
    """(method, headers, body, params) with one thing wrong each."""
    signature = sealed.headers["Authorization"][6:]
    return [
        ("POST", {**sealed.headers, "Authorization": signature}, sealed.body, None),
        ("POST", {**sealed.headers, "Authorization": "Basic " + signature.upper()}, sealed.body, None),
        ("POST", {**sealed.headers, "timestamp": str(sealed.timestamp * 1000)}, sealed.body, None),
        ("POST", {**sealed.headers, "timestamp": str(sealed.timestamp - 301)}, sealed.body, None),
        ("POST", sealed.headers, b'{"data":"00:00"}', None),
        ("POST", sealed.headers, None, None),
        ("POST", sealed.headers, sealed.body, {"extra": "1"}),
        ("GET", sealed.headers, None, {"data": sealed.data, "transactionId": "t-1"}),
    ]


def test_middleware_answers_auth_001_itself(base_url: str, wire: Wire, caplog: pytest.LogCaptureFixture) -> None:
    sealed = TERMINAL.seal(PAYLOAD)
    caplog.set_level(logging.WARNING, logger="pasarela.asgi")
    with httpx.Client(base_url=base_url) as http:
        for method, headers, body, params in _tampered(sealed):
            answer = http.request(method, "/p", headers=headers, content=body, params=params)
            assert answer.status_code == 401
            assert answer.content == AUTH_001_RESPONSE
            assert answer.headers["content-type"] == "application/json"
            assert json.loads(answer.content) == {"type": "AUTH", "code": "AUTH-001",
                                                  "message": "Invalid or expired credentials"}
    refusals = [r for r in caplog.records if r.name == "pasarela.asgi"]
    assert len(refusals) == len(_tampered(sealed))
    assert all(r.levelno == logging.WARNING for r in refusals)
    derived = primitives.derive(BUSINESS_CODE.encode(), SERIAL.encode(), sealed.timestamp)
    logged = "\n".join(r.getMessage() for r in refusals)
    assert len({r.getMessage() for r in refusals}) > 1  # each names its cause, for the operator
    assert all("POST '/p'" in r.getMessage() or "GET '/p'" in r.getMessage() for r in refusals)
    for secret in (BUSINESS_CODE, derived.password, derived.encoded_key, derived.aes_key.decode()):
        assert secret not in logged


def test_middleware_passes_exempt_paths_and_413s_large_bodies(base_url: str) -> None:
    with httpx.Client(base_url=base_url) as http:
        health = http.get("/health")
        big = http.post("/p", content=b"x" * 5000, headers={"content-type": "application/json"})
    assert health.status_code == 200 and health.json()["payload"] is None
    assert big.status_code == 413


def test_client_error_answers_and_refusals(base_url: str) -> None:
    with TerminalClient(base_url, TERMINAL) as client:
        with pytest.raises(ApiError) as info:
            client.post("/error", {"id": "x"})
        assert info.value.status == 400 and info.value.code == "T023"
        with pytest.raises(ValueError, match="payload"):
            client.get("/sync/abort?transactionId=1")
        with pytest.raises(ValueError, match="GET, POST, PUT, PATCH"):
            client.request("DELETE", "/p")


def test_clients_report_unreachable_service() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for kind in (TerminalClient, RequestsTerminalClient):
        with kind(f"http://127.0.0.1:{port}", TERMINAL) as client, pytest.raises(TransportError):
            client.post("/p", PAYLOAD)


# --- replay protection across two gateway nodes ----------------------------------------------------------


def test_replay_refused_across_gateway_nodes() -> None:
    shared = InMemoryReplayStore(max_entries=1000)
    node_a = LocalServer(TerminalAuthMiddleware(application, TERMINAL, replay_store=shared))
    node_b = LocalServer(TerminalAuthMiddleware(application, TERMINAL, replay_store=shared))
    sealed = TERMINAL.seal(PAYLOAD)
    with node_a, node_b, httpx.Client() as http:
        first = http.post(f"{node_a.base_url}/p", headers=sealed.headers, content=sealed.body)
        again = http.post(f"{node_b.base_url}/p", headers=sealed.headers, content=sealed.body)
        with TerminalClient(node_b.base_url, TERMINAL) as client:
            fresh = client.post("/p", {"other": 1})
    assert first.status_code == 200 and first.json()["payload"] == SENT
    assert again.status_code == 401 and again.content == AUTH_001_RESPONSE
    assert fresh["payload"] == {"other": 1}


# --- exact_body: the verified bytes, no payload objects --------------------------------------------------
EXACT_PAYLOAD = {"amount": 1e21, "tiny": 1e-7, "whole": 2.0, "minus_zero": -0.0, "big": 1.5e300,
                 "text": "caf\u00e9 \u2028 \ud83d\ude00 </script>", "nested": [{"a": [1.5, None, True]}], "empty": {}}


async def plaintext_echo(scope: Any, receive: Receive, send: Send) -> None:
    """Answers what it was handed: the scope's plaintext and payload (hex: bytes), and the body it read."""
    message = await receive()
    plaintext = scope.get("pasarela.plaintext")
    answer = {"plaintext": plaintext.hex() if isinstance(plaintext, bytes) else plaintext,
              "has_payload": "pasarela.payload" in scope, "body": message.get("body", b"").hex(),
              "query": scope["query_string"].decode()}
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": json.dumps(answer).encode()})


def test_exact_body_hands_the_app_the_terminal_s_own_text(node_oracle: Any) -> None:
    """exact_body=True: the body (POST, PUT, PATCH) and scope["pasarela.plaintext"] are the verified plaintext as
    the terminal's JSON.stringify wrote it, node's own text (orjson would write 1e21, -0.0, 2.0), and no payload is
    made; on GET the body stays empty; refusals and replays are AUTH-001 as without it."""
    store = InMemoryReplayStore(max_entries=100)
    with LocalServer(TerminalAuthMiddleware(plaintext_echo, TERMINAL, replay_store=store, exact_body=True)) as server, \
            httpx.Client() as http:
        for method in ("POST", "PUT", "PATCH", "GET"):
            payload = dict(EXACT_PAYLOAD, method=method)  # (the method is not signed: one signature each)
            sealed = TERMINAL.seal(payload, method=method)
            answer = http.request(method, f"{server.base_url}/p", headers=sealed.headers, content=sealed.body,
                                  params=sealed.params)
            assert answer.status_code == 200, answer.text
            plaintext = bytes.fromhex(answer.json()["plaintext"])
            assert plaintext == node_oracle.stringify(json.dumps(payload)) == sealed.plaintext
            assert b"1e+21" in plaintext and b"1e-7" in plaintext and b'"whole":2,' in plaintext
            assert answer.json()["body"] == ("" if method == "GET" else plaintext.hex())
            assert answer.json()["has_payload"] is False and answer.json()["query"] == ""
            again = http.request(method, f"{server.base_url}/p", headers=sealed.headers, content=sealed.body,
                                 params=sealed.params)
            assert again.status_code == 401 and again.content == AUTH_001_RESPONSE
        sealed = TERMINAL.seal(EXACT_PAYLOAD)
        forged = dict(sealed.headers, Authorization="Basic " + "0" * 128)
        refused = http.post(f"{server.base_url}/p", headers=forged, content=sealed.body)
        assert refused.status_code == 401 and refused.content == AUTH_001_RESPONSE


# --- the middleware on its own -------------------------------------------------------------------------


def test_middleware_passes_other_scopes_through() -> None:
    seen: list[str] = []

    async def inner(scope: Any, receive: Receive, send: Send) -> None:
        seen.append(scope["type"])

    async def receive() -> Any:
        return {"type": "lifespan.startup"}

    async def send(message: Any) -> None:
        pass

    asyncio.run(TerminalAuthMiddleware(inner, TERMINAL)({"type": "lifespan"}, receive, send))
    assert seen == ["lifespan"]


def test_import_pasarela_does_not_import_http_libraries() -> None:
    code = "import sys, pasarela, pasarela.asgi; sys.exit(int('httpx' in sys.modules or 'requests' in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def _drive(headers: list[Any], messages: list[dict[str, Any]], replay_store: Any = None
           ) -> tuple[list[Any], list[tuple[Any, bytes]]]:
    """(the answer's status and body, each (scope, body) the application saw) of one POST whose body comes in
    messages, through TerminalAuthMiddleware with TERMINAL (and replay_store), around an application that reads one
    message and answers 200 {}."""
    answers: list[Any] = []
    seen: list[tuple[Any, bytes]] = []
    queue = iter(messages)

    async def receive() -> Any:
        return next(queue)

    async def send(message: Any) -> None:
        answers.append(message.get("status", message.get("body")))

    async def recording(scope: Any, receive: Receive, send: Send) -> None:
        seen.append((scope, (await receive())["body"]))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    middleware = TerminalAuthMiddleware(recording, TERMINAL, replay_store=replay_store)
    asyncio.run(middleware({"type": "http", "method": "POST", "path": "/p", "query_string": b"", "headers": headers},
                           receive, send))
    return answers, seen


@pytest.mark.parametrize("store", [None, "memory"])
def test_middleware_reads_a_body_sent_in_pieces_and_nothing_after_the_client_left(store: Any) -> None:
    """A body in several http.request messages (as servers hand a large one over) is opened whole, with or without
    a replay store (the in-memory store's claim is made in the call, others are awaited); a client that leaves
    half-way (http.disconnect) gets no answer and the application is not called. And the application sees the
    request's headers but its own Content-Length (that of the payload's JSON it reads) in place of the sealed one's."""
    sealed = TERMINAL.seal(PAYLOAD)
    body = sealed.body or b""
    headers = [(name.lower().encode(), value.encode()) for name, value in sealed.headers.items()]
    headers += [(b"content-length", b"%d" % len(body)), (b"x-request-id", b"r-1")]
    pieces = [body[:10], body[10:200], body[200:]]
    whole = [{"type": "http.request", "body": piece, "more_body": i < 2} for i, piece in enumerate(pieces)]
    answers, seen = _drive(headers, whole, InMemoryReplayStore() if store else None)
    assert answers == [200, b"{}"]
    (scope, forwarded), = seen
    payload, inner_headers = scope["pasarela.payload"], scope["headers"]
    assert payload == SENT and json.loads(forwarded) == SENT
    assert [name for name, _ in inner_headers] == [name for name, _ in headers if name != b"content-length"] + [
        b"content-length"]
    assert inner_headers[-1] == (b"content-length", b"%d" % len(forwarded))
    left = [whole[0], {"type": "http.disconnect"}]
    assert _drive(headers, left, InMemoryReplayStore() if store else None) == ([], [])


@pytest.mark.parametrize("spelling", ["lower", "as sent", "upper", "bytearray"])
def test_middleware_reads_its_headers_in_any_spelling_and_refuses_them_twice(
        spelling: str, caplog: pytest.LogCaptureFixture) -> None:
    """The credentials' headers are read whatever the case of their names (ASGI servers lower-case them, but need
    not) and whatever bytes-like objects carry them; Content-Length is replaced in any case; Authorization or
    timestamp twice, in the same spelling or another, is refused AUTH-001 (which one would open decide?)."""
    sealed = TERMINAL.seal(PAYLOAD)
    body = sealed.body or b""

    def spelt(name: str) -> Any:
        text = {"lower": name.lower(), "as sent": name, "upper": name.upper(), "bytearray": name}[spelling]
        return bytearray(text.encode()) if spelling == "bytearray" else text.encode()

    headers = [(spelt(name), value.encode()) for name, value in sealed.headers.items()]
    headers += [(spelt("Content-Length"), b"%d" % len(body)), (b"x-other", b"1")]
    one = [{"type": "http.request", "body": body, "more_body": False}]
    answers, seen = _drive(headers, one)
    assert answers == [200, b"{}"] and seen[0][0]["pasarela.payload"] == SENT
    passed_on = seen[0][0]["headers"]
    assert [bytes(name).lower() for name, _ in passed_on].count(b"content-length") == 1
    assert passed_on[-1][0] == b"content-length" and (b"x-other", b"1") in passed_on
    for name in ("Authorization", "timestamp"):
        value = sealed.headers[name].encode()
        for twice in (spelt(name), name.swapcase().encode()):
            with caplog.at_level(logging.WARNING, logger="pasarela.asgi"):
                answers, seen = _drive([*headers, (twice, value)], one)
            assert answers == [401, AUTH_001_RESPONSE] and seen == []
            assert f"repeated {name.lower()} header" in caplog.text
            caplog.clear()
