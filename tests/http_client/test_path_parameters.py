"""A path parameter never changes the request path (issue 38, defect 5).

Every client method that puts a value in the path (the transfer status and cancel, the Ecuador return's
status, the card void, in the blocking and the asyncio clients) is sent over real HTTP to a local server,
with tokens hypothesis makes from the characters that matter (``.``, ``/``, ``%``, ``?``, ``#``, blanks,
non-ASCII, lone surrogates). The server records the path as it arrived, percent-encoding kept: either the
request went to the documented path with the value as exactly one segment that decodes back to it, or
nothing was sent and the client raised a ValidationError naming the parameter (a dot segment, plain or
percent-encoded, an empty value, a lone surrogate). The terminal clients take whole paths: a dot segment in
one is refused; the sandbox's payer page links carry their token as one segment.
"""

# ruff: noqa: S106 (test tokens and keys are fixtures)

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import httpx
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from pasarela import Terminal
from pasarela.cards import AsyncCardClient, CardClient
from pasarela.errors import ApiError, ValidationError
from pasarela.http import NO_RETRY, ServiceConfig
from pasarela.http.path import MAX_SEGMENT_LENGTH
from pasarela.httpx import AsyncTerminalClient, TerminalClient
from pasarela.requests_adapter import TerminalClient as RequestsTerminalClient
from pasarela.sandbox.transfers import payer_page_url
from pasarela.transfers import AsyncTransferClient, TransferClient
from support.local_server import LocalServer, ScriptedService

PIECES = [".", "..", "%2e", "%2E", "%25", "%252e", "/", "\\", "?", "#", "%", " ", "+", "&", "=", ";", "a",
          "é", "\u2028", "\x00", "\ud800", "\U0001f600"]  # fmt: skip
DOT_SEGMENTS = [".", "..", "%2e", "%2E", "%2e%2E", ".%2e", "%2E.", "%252e%252E", "%25252e"]
tokens = st.one_of(
    st.sampled_from(DOT_SEGMENTS),
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map("".join),
    st.text(min_size=1, max_size=30),
    st.text(alphabet=st.characters(exclude_categories=()), max_size=12),  # surrogates included
)
UNRESERVED_OR_ENCODED = re.compile(r"(?:[A-Za-z0-9\-._~]|%[0-9A-F]{2})+")


def has_surrogate(token: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in token)


def expected_refusal(token: str, *, from_callback: bool = False) -> bool:
    """What must be refused: an empty value, a lone surrogate, or ``.``/``..`` under any number of decodings
    (and, in a return URL, a blank token)."""
    if not token or has_surrogate(token) or (from_callback and not token.strip()):
        return True
    decodings = [token]
    while unquote(decodings[-1]) != decodings[-1]:
        decodings.append(unquote(decodings[-1]))
    return any(value in (".", "..") for value in decodings)


def assert_one_segment(received_path: str, prefix: str, token: str) -> None:
    assert received_path.startswith(prefix), f"sent to {received_path!r}, not below {prefix!r}"
    segment = received_path[len(prefix):]
    assert UNRESERVED_OR_ENCODED.fullmatch(segment), f"{segment!r} is not one percent-encoded segment"
    assert unquote(segment, errors="strict") == token
    assert segment not in (".", "..")


def config_for(server: ScriptedService) -> ServiceConfig:
    return ServiceConfig(base_url=server.base_url, public_merchant_id="pub-1", private_merchant_id="priv-1",
                         retry=NO_RETRY)


@pytest.fixture(scope="module")
def scripted_server() -> Iterator[ScriptedService]:
    scripted = ScriptedService()
    with LocalServer(scripted, max_lifetime=600) as server:
        scripted.base_url = server.base_url
        yield scripted


Invoke = Callable[[str, str, str], Any]


@pytest.fixture(scope="module")
def invoke(scripted_server: ScriptedService) -> Iterator[Invoke]:
    """``invoke("TransferClient", "status", token)``: one client of each kind for the module, the asyncio ones
    driven in one event loop."""
    config = config_for(scripted_server)
    blocking = {"TransferClient": TransferClient(config), "CardClient": CardClient(config)}
    in_loop = {"AsyncTransferClient": AsyncTransferClient(config), "AsyncCardClient": AsyncCardClient(config)}
    loop = asyncio.new_event_loop()

    def call(client: str, method: str, argument: str) -> Any:
        if client in blocking:
            return getattr(blocking[client], method)(argument)
        return loop.run_until_complete(getattr(in_loop[client], method)(argument))

    try:
        yield call
    finally:
        for sync_client in blocking.values():
            sync_client.close()
        for async_client in in_loop.values():
            loop.run_until_complete(async_client.aclose())
        loop.close()


CALLS = {  # client method: (HTTP method, path before the parameter, the parameter's name)
    "TransferClient.status": ("GET", "/transfer/v1/status/", "token"),
    "TransferClient.cancel": ("PATCH", "/transfer/v1/cancel/", "token"),
    "TransferClient.status_from_callback": ("GET", "/transfer/v1/status/", "token"),
    "AsyncTransferClient.status": ("GET", "/transfer/v1/status/", "token"),
    "AsyncTransferClient.cancel": ("PATCH", "/transfer/v1/cancel/", "token"),
    "AsyncTransferClient.status_from_callback": ("GET", "/transfer/v1/status/", "token"),
    "CardClient.void_charge": ("DELETE", "/card/v1/charges/", "ticket_number"),
    "AsyncCardClient.void_charge": ("DELETE", "/card/v1/charges/", "ticket_number"),
}


@pytest.mark.parametrize("name", sorted(CALLS))
@settings(max_examples=100)
@given(token=tokens)
@example(token="..")
@example(token=".")
@example(token="a/../b")
@example(token="%2e%2E")
@example(token="?token=x#y")
@example(token="é x%")
def test_a_path_parameter_is_one_segment_or_refused(scripted_server: ScriptedService, invoke: Invoke, name: str,
                                                    token: str) -> None:
    method, prefix, parameter = CALLS[name]
    client, _, client_method = name.partition(".")
    from_callback = client_method == "status_from_callback"
    assume(not (from_callback and has_surrogate(token)))  # a URL cannot carry one: the direct calls cover it
    argument = "https://shop.example/return?token=" + quote(token, safe="") if from_callback else token
    scripted_server.reset()
    try:
        invoke(client, client_method, argument)
    except ValidationError as exc:
        assert expected_refusal(token, from_callback=from_callback), f"{token!r} refused: {exc}"
        assert exc.field == parameter
        assert scripted_server.requests == [], "a refused value must send nothing"
        return
    except ApiError as exc:  # the scripted server answers 404: what matters is the path it received
        assert exc.status == 404
    assert not expected_refusal(token), f"{token!r} was sent as {[r.path for r in scripted_server.requests]}"
    [request] = scripted_server.requests
    assert request.method == method
    assert request.headers["private-merchant-id"] == "priv-1"
    assert_one_segment(request.path, prefix, token)


@pytest.mark.parametrize("value", ["", "x" * (MAX_SEGMENT_LENGTH + 1)], ids=["empty", "overlong"])
def test_path_segment_refuses_empty_and_overlong_values(scripted_server: ScriptedService, value: str) -> None:
    scripted_server.reset()
    with TransferClient(config_for(scripted_server)) as client, pytest.raises(ValidationError) as refused:
        client.status(value)
    assert refused.value.field == "token" and scripted_server.requests == []


def test_path_segment_refuses_a_non_string(scripted_server: ScriptedService) -> None:
    scripted_server.reset()
    with CardClient(config_for(scripted_server)) as client, pytest.raises(ValidationError) as refused:
        client.void_charge(12345)  # type: ignore[arg-type]
    assert refused.value.field == "ticket_number" and "int" in refused.value.reason
    assert scripted_server.requests == []


def _httpx_get(url: str, terminal: Terminal, path: str) -> Any:
    with TerminalClient(url, terminal) as client:
        return client.get(path)


def _async_httpx_get(url: str, terminal: Terminal, path: str) -> Any:
    async def run() -> Any:
        async with AsyncTerminalClient(url, terminal) as client:
            return await client.get(path)

    return asyncio.run(run())


def _requests_get(url: str, terminal: Terminal, path: str) -> Any:
    with RequestsTerminalClient(url, terminal) as client:
        return client.get(path)


TERMINAL = Terminal(business_code="bc-path-test", terminal_serial="SN-PATH")
TERMINAL_CLIENTS = {"httpx": _httpx_get, "httpx-async": _async_httpx_get, "requests": _requests_get}
path_segments = st.lists(st.one_of(st.sampled_from(["print", "job-7", ".", "..", "%2e", "%2E%2e", ".%2E"]),
                                   st.from_regex(r"[A-Za-z0-9_~-]{1,8}", fullmatch=True)), min_size=1, max_size=4)


@pytest.mark.parametrize("client", sorted(TERMINAL_CLIENTS))
@settings(max_examples=60)
@given(segments=path_segments)
@example(segments=["print", "..", "admin"])
@example(segments=["print", "%2e%2e", "admin"])
def test_a_terminal_path_with_a_dot_segment_is_refused(scripted_server: ScriptedService, client: str,
                                                        segments: list[str]) -> None:
    scripted_server.reset()
    path = "/" + "/".join(segments)
    dotted = any(unquote(segment) in (".", "..") for segment in segments)
    try:
        TERMINAL_CLIENTS[client](scripted_server.base_url, TERMINAL, path)
    except ValidationError as exc:
        assert dotted and exc.field == "path" and scripted_server.requests == []
        return
    except ApiError as exc:  # the scripted server answers 404: what matters is the path it received
        assert exc.status == 404
    assert not dotted, f"{path!r} was sent as {[r.path for r in scripted_server.requests]}"
    assert [request.path for request in scripted_server.requests] == [path]


@settings(max_examples=200)
@given(token=tokens)
@example(token="a/../b")
def test_the_sandbox_payer_page_link_carries_its_token_as_one_segment(token: str) -> None:
    base = "http://127.0.0.1:8080"
    try:
        link = payer_page_url(base, token)
    except ValidationError as exc:
        assert expected_refusal(token) and exc.field == "token"
        return
    assert not expected_refusal(token)
    assert httpx.URL(link).raw_path.decode("ascii") == urlsplit(link).path  # as sent: nothing normalized away
    assert_one_segment(urlsplit(link).path, "/sandbox/pay/", token)
