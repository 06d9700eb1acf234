"""A request body nested 999 or 1000 levels deep is a clean 400 naming the limit on each of the nine JSON POST
routes of the sandbox, with no traceback logged (issue 53, item 5): the depth is counted before jsonschema, whose
messages ``repr`` the value recursively (at the base of this change: a 500 on every one of them, each with a
logged RecursionError)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from pasarela.sandbox import Sandbox, SandboxConfig
from pasarela.sandbox.jsontext import MAX_BODY_DEPTH

PUBLIC, PRIVATE = "pk-depth-routes", "sk-depth-routes"
JSON_POST_ROUTES = ["/transfer/v1/tokens", "/transfer/v1/init", "/card/v1/tokens", "/card/v1/charges",
                    "/card/v1/preAuthorization", "/card/v2/charges", "/v1/charges", "/sandbox/v1/payments",
                    "/sandbox/v1/clock"]


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with Sandbox(SandboxConfig(public_key=PUBLIC, private_key=PRIVATE, settle_after=None)) as sandbox:
        app: Any = sandbox.app
        with TestClient(app, raise_server_exceptions=False) as http:
            yield http


def test_the_nine_routes_are_every_json_post_route(client: TestClient) -> None:
    posts = {path for path, item in client.get("/openapi.json").json()["paths"].items()
             if "requestBody" in item.get("post", {}) and not path.startswith("/terminal/")  # the envelope's own
             and "application/json" in item["post"]["requestBody"]["content"]}
    assert posts == set(JSON_POST_ROUTES)


def _deep(levels: int, shape: str) -> bytes:
    if shape == "array":  # the body itself: jsonschema's "must be an object" repr'd it whole
        return b"[" * levels + b"]" * levels
    return b'{"amount":' * levels + b"1" + b"}" * levels


@pytest.mark.parametrize("shape", ["array", "object"])
@pytest.mark.parametrize("levels", [999, 1000])
@pytest.mark.parametrize("path", JSON_POST_ROUTES)
def test_a_body_999_or_1000_levels_deep_is_a_400_naming_the_limit(
        client: TestClient, path: str, levels: int, shape: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        answer = client.post(path, content=_deep(levels, shape), headers={
            "Content-Type": "application/json", "Public-Merchant-Id": PUBLIC, "Private-Merchant-Id": PRIVATE})
    assert answer.status_code == 400, answer.text
    assert answer.json() == {"code": "INVALID_REQUEST", "field": "body",
                             "message": f"body: nests deeper than {MAX_BODY_DEPTH} levels"}
    assert [record for record in caplog.records if record.exc_info or record.levelno >= logging.ERROR] == []


def test_a_body_at_the_limit_is_checked_by_the_schema(client: TestClient) -> None:
    metadata: Any = {}
    for _ in range(MAX_BODY_DEPTH - 2):  # the body, then metadata, then these
        metadata = {"a": metadata}
    answer = client.post("/transfer/v1/init", json={"token": "0" * 32, "amount": {"subtotalIva": 0, "iva": 0,
                                                                                  "subtotalIva0": 1},
                                                    "metadata": metadata},
                         headers={"Private-Merchant-Id": PRIVATE})
    assert answer.status_code == 400 and answer.json()["field"] == "token", answer.text  # read, then refused
