"""The sandbox as a workbench (tests/sandbox/test_sandbox_workbench.py and the certification, browser and webhook
mounting tests start their sandbox with it): a sandbox under uvicorn, the merchant's webhook receiver under
uvicorn, clients for both keys, and each answer held to the sandbox's /openapi.json."""


from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, Optional

import httpx
import jsonschema

from pasarela.sandbox import Sandbox, SandboxConfig
from pasarela.sandbox.openapi import document
from pasarela.sandbox.webhooks import Backoff
from support.local_server import LocalServer, ScriptedService
from support.waiting import DEADLINE as DEADLINE

PUBLIC, PRIVATE = "pk-workbench", "sk-workbench-secret"
BUSINESS_CODE, SERIAL = "bc-workbench-secret", "SN-WORKBENCH"
FLOW = {"processorName": "BRE-B", "type": "QR"}


def untaxed(total: int) -> dict[str, int]:
    return {"subtotalIva": 0, "subtotalIva0": total, "iva": 0}


def colombia_qr(total: int) -> dict[str, Any]:
    return {"currency": "COP", "amount": untaxed(total), "flow": FLOW}


def mexico(document_number: str = "123456789", email: str = "payer@example.com") -> dict[str, Any]:
    return {"currency": "MXN", "amount": {"subtotalIva": 100, "subtotalIva0": 0, "iva": 16}, "userType": "1",
            "documentType": "CURP", "documentNumber": document_number, "email": email,
            "paymentDescription": "order 42"}


def _openapi_3_0_to_json_schema(schema: Any) -> Any:
    """``nullable: true`` (OpenAPI 3.0) as JSON Schema says it: the type or null."""
    if isinstance(schema, dict):
        converted = {key: _openapi_3_0_to_json_schema(value) for key, value in schema.items() if key != "nullable"}
        if schema.get("nullable") and "type" in schema:
            converted["type"] = [schema["type"], "null"]
        return converted
    if isinstance(schema, list):
        return [_openapi_3_0_to_json_schema(item) for item in schema]
    return schema


_DOCUMENT = _openapi_3_0_to_json_schema(document())


def conforms(value: Any, component: str) -> None:
    """``value`` is what /openapi.json promises for ``#/components/schemas/<component>``."""
    schema = {**_DOCUMENT, "$ref": f"#/components/schemas/{component}"}
    jsonschema.Draft4Validator(schema).validate(value)


@dataclass
class Bench:
    """A sandbox under uvicorn, a webhook receiver under uvicorn, and clients for both keys."""

    url: str
    sandbox: Sandbox
    receiver: ScriptedService
    http: httpx.Client

    def token(self, request: dict[str, Any]) -> str:
        answer = self.http.post("/transfer/v1/tokens", json=request, headers={"Public-Merchant-Id": PUBLIC})
        assert answer.status_code == 201, answer.text
        return str(answer.json()["token"])

    def init(self, token: str, amount: dict[str, Any], **extra: Any) -> httpx.Response:
        return self.http.post("/transfer/v1/init", json={"token": token, "amount": amount, **extra},
                              headers={"Private-Merchant-Id": PRIVATE})

    def start(self, request: dict[str, Any]) -> str:
        token = self.token(request)
        answer = self.init(token, request["amount"])
        assert answer.status_code == 201, answer.text
        return token

    def get(self, path: str, **params: Any) -> Any:
        answer = self.http.get(path, params=params, headers={"Private-Merchant-Id": PRIVATE})
        assert answer.status_code == 200, answer.text
        return answer.json()

    def post(self, path: str, body: Optional[dict[str, Any]] = None) -> httpx.Response:
        return self.http.post(path, json=body, headers={"Private-Merchant-Id": PRIVATE})

    def webhooks(self, token: str) -> list[dict[str, Any]]:
        listed = self.get("/sandbox/v1/webhooks", token=token)
        conforms(listed, "WebhookList")
        return list(listed["webhooks"])

    def certification(self) -> dict[int, dict[str, Any]]:
        answer = self.get("/sandbox/v1/certification")
        conforms(answer, "Certification")
        return {rule["rule"]: rule for rule in answer["rules"]}


@contextmanager
def bench(**config: Any) -> Iterator[Bench]:
    """Webhook retries wait an hour: only a redelivery sends a failed one again within a test."""
    receiver = ScriptedService()
    with ExitStack() as stack:
        hooks = stack.enter_context(LocalServer(receiver))
        receiver.base_url = hooks.base_url
        settings = {"public_key": PUBLIC, "private_key": PRIVATE, "business_code": BUSINESS_CODE,
                    "terminal_serial": SERIAL, "webhook_url": f"{hooks.base_url}/hooks", "settle_after": None,
                    **config}
        sandbox = stack.enter_context(Sandbox(SandboxConfig(**settings), backoff=Backoff(3600.0, 3600.0)))
        app: Any = sandbox.app
        served = stack.enter_context(LocalServer(app, max_lifetime=300))
        http = stack.enter_context(httpx.Client(base_url=served.base_url, timeout=10))
        yield Bench(served.base_url, sandbox, receiver, http)
