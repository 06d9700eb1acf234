"""Every route of the sandbox with a request that uses it as a client would, for the tests that attack every route
and then check that each still answers as before (tests/sandbox/test_sandbox_hostile_bodies.py) and for those that check
what every answer carries (tests/sandbox/test_sandbox_answer_headers.py).

:class:`RouteProbes` holds a sandbox under uvicorn (real HTTP, the bench of test_sandbox_workbench) with one
transfer of each kind the probes need, and knows, for each route of the application, a concrete path to send
anything to (:meth:`RouteProbes.targets`) and a benign request (:meth:`RouteProbes.probe`) that answers as the
route does for a well-behaved client. :func:`routes_of` lists the routes of the app, so that a route added
without a probe fails the tests instead of escaping them."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.routing import Mount, Route

from pasarela import Terminal
from pasarela.sandbox import Sandbox
from support.waiting import wait_for
from support.workbench import BUSINESS_CODE, PRIVATE, PUBLIC, SERIAL, Bench, colombia_qr, mexico

PUBLIC_KEY = {"Public-Merchant-Id": PUBLIC}
PRIVATE_KEY = {"Private-Merchant-Id": PRIVATE}
BOTH_KEYS = {**PUBLIC_KEY, **PRIVATE_KEY}
CARD = {"name": "Ana Gomez", "number": "4000000000000002", "expiryMonth": "12", "expiryYear": "29", "cvv": "123"}
CARD_AMOUNT = {"subtotalIva": 0, "subtotalIva0": 500, "iva": 0, "currency": "COP"}
TERMINAL_POST, TERMINAL_GET = "/terminal/v1/sync/charge", "/terminal/v1/sync/abort"


def routes_of(sandbox: Sandbox) -> set[tuple[str, str]]:
    """``(method, path template)`` of every route (HEAD, which Starlette adds to GET, aside), the terminal's
    mount as its two kinds of call."""
    found: set[tuple[str, str]] = set()
    for route in sandbox.app.starlette.routes:
        if isinstance(route, Route):
            found.update((method, route.path) for method in route.methods or () if method != "HEAD")
        elif isinstance(route, Mount) and route.path == "/terminal":
            found.update({("POST", TERMINAL_POST), ("GET", TERMINAL_GET)})
    return found


def _page_token(page: str) -> str:
    found = re.search(r'name="page_token" value="([^"]+)"', page)
    assert found is not None, page[:500]
    return html.unescape(found.group(1))


@dataclass
class RouteProbes:
    bench: Bench
    pending: str = ""
    """A Mexico transfer left initialized (listed, shown, its pages)."""
    ticket: str = ""
    webhook: str = ""
    _probes: dict[tuple[str, str], Callable[[], httpx.Response]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.pending = self.bench.start(mexico(document_number="probe-pending"))
        self.ticket = self._charge("/card/v2/charges").json()["ticketNumber"]
        paid = self.bench.start(colombia_qr(10000))  # PAID at once: a webhook in the outbox
        self.webhook = wait_for(lambda: self.bench.webhooks(paid), "the webhook")[0]["id"]
        self.terminal = Terminal(business_code=BUSINESS_CODE, terminal_serial=SERIAL)
        own = {"Origin": self.bench.url, "Sec-Fetch-Site": "same-origin"}
        pending = self.pending
        self._probes = {
            ("GET", "/openapi.json"): lambda: self.get("/openapi.json"),
            ("GET", "/transfer/v1/bankList"): lambda: self.get("/transfer/v1/bankList", PUBLIC_KEY),
            ("OPTIONS", "/transfer/v1/bankList"): lambda: self._preflight("/transfer/v1/bankList", "GET"),
            ("POST", "/transfer/v1/tokens"): lambda: self.post("/transfer/v1/tokens", mexico(), PUBLIC_KEY),
            ("OPTIONS", "/transfer/v1/tokens"): lambda: self._preflight("/transfer/v1/tokens", "POST"),
            ("POST", "/transfer/v1/init"): self._init,
            ("GET", "/transfer/v1/status/{token}"): lambda: self.get(f"/transfer/v1/status/{pending}", PRIVATE_KEY),
            ("GET", "/status/{token}"): lambda: self.get(f"/status/{pending}", PUBLIC_KEY),
            ("PATCH", "/transfer/v1/cancel/{token}"): self._cancel,
            ("POST", "/card/v1/tokens"): self._card_token,
            ("OPTIONS", "/card/v1/tokens"): lambda: self._preflight("/card/v1/tokens", "POST"),
            ("POST", "/card/v1/charges"): lambda: self._charge("/card/v1/charges", tokenized=True),
            ("POST", "/card/v1/preAuthorization"): lambda: self._charge("/card/v1/preAuthorization",
                                                                        tokenized=True),
            ("POST", "/card/v2/charges"): lambda: self._charge("/card/v2/charges"),
            ("DELETE", "/card/v1/charges/{ticketNumber}"): lambda: self._void("/card/v1/charges"),
            ("POST", "/v1/charges"): lambda: self._charge("/v1/charges", tokenized=True),
            ("DELETE", "/v1/charges/{ticketNumber}"): lambda: self._void("/v1/charges"),
            ("GET", "/v1/charges/{ticketNumber}"): lambda: self.get(f"/v1/charges/{self.ticket}", PRIVATE_KEY),
            ("POST", "/sandbox/v1/payments"): self._payment,
            ("POST", "/sandbox/v1/clock"): lambda: self.post("/sandbox/v1/clock", {"seconds": 1}, PRIVATE_KEY),
            ("GET", "/sandbox/v1/webhooks"): lambda: self.get("/sandbox/v1/webhooks", PRIVATE_KEY),
            ("POST", "/sandbox/v1/webhooks/{id}/redeliver"): lambda: self.post(
                f"/sandbox/v1/webhooks/{self.webhook}/redeliver", None, PRIVATE_KEY),
            ("GET", "/sandbox/v1/certification"): lambda: self.get("/sandbox/v1/certification", PRIVATE_KEY),
            ("GET", "/sandbox/v1/transfers"): lambda: self.get("/sandbox/v1/transfers", PRIVATE_KEY),
            ("GET", "/sandbox/v1/transfers/{token}"): lambda: self.get(f"/sandbox/v1/transfers/{pending}",
                                                                       PRIVATE_KEY),
            ("GET", "/sandbox/v1/charges"): lambda: self.get("/sandbox/v1/charges", PRIVATE_KEY),
            ("GET", "/sandbox/v1/requests"): lambda: self.get("/sandbox/v1/requests", PRIVATE_KEY),
            ("GET", "/sandbox/v1/feed"): lambda: self.get("/sandbox/v1/feed?requestsAfter=0&attemptsAfter=0",
                                                          PRIVATE_KEY),
            ("PUT", "/sandbox/v1/webhook-url"): self._webhook_url_kept,
            ("DELETE", "/sandbox/v1/webhook-url"): self._webhook_url_cleared_then_kept,
            ("GET", "/sandbox/pay/{token}"): lambda: self.get(f"/sandbox/pay/{pending}"),
            ("POST", "/sandbox/pay/{token}"): self._pay_on_the_page,
            ("GET", "/sandbox/"): lambda: self.get("/sandbox/"),
            ("GET", "/sandbox/transfers/{token}"): lambda: self.get(f"/sandbox/transfers/{pending}"),
            ("GET", "/sandbox/charges"): lambda: self.get("/sandbox/charges"),
            ("GET", "/sandbox/webhooks"): lambda: self.get("/sandbox/webhooks"),
            ("GET", "/sandbox/terminal"): lambda: self.get("/sandbox/terminal"),
            ("GET", "/sandbox/requests"): lambda: self.get("/sandbox/requests"),
            ("GET", "/sandbox/requests/{id}"): lambda: self.get("/sandbox/requests/1"),
            ("GET", "/sandbox/certification"): lambda: self.get("/sandbox/certification"),
            ("GET", "/sandbox/search"): lambda: self.get(f"/sandbox/search?q={self.ticket}"),
            ("GET", "/sandbox/assets/dashboard.css"): lambda: self.get("/sandbox/assets/dashboard.css"),
            ("GET", "/sandbox/assets/dashboard.js"): lambda: self.get("/sandbox/assets/dashboard.js"),
            ("GET", "/sandbox/changes"): lambda: self.get("/sandbox/changes"),
            ("GET", "/"): lambda: self.get("/"),
            ("POST", "/sandbox/actions/transfers/{token}/{action}"): lambda: self._action(
                f"/sandbox/transfers/{self._new_pending()}", "approve", own),
            ("POST", "/sandbox/actions/webhooks/{id}/redeliver"): lambda: self._action(
                "/sandbox/webhooks", f"/sandbox/actions/webhooks/{self.webhook}/redeliver", own),
            ("POST", "/sandbox/actions/clock"): lambda: self._action("/sandbox/", "/sandbox/actions/clock", own,
                                                                     seconds="1"),
            ("POST", "/sandbox/actions/webhook-url"): lambda: self._action(
                "/sandbox/webhooks", "/sandbox/actions/webhook-url", own, url=self._configured_webhook_url()),
            ("GET", "/cdn/"): lambda: self.get("/cdn/"),
            ("GET", "/cdn/kushki.min.js"): lambda: self.get("/cdn/kushki.min.js"),
            ("GET", "/cdn/kushki-checkout.js"): lambda: self.get("/cdn/kushki-checkout.js"),
            ("POST", TERMINAL_POST): self._terminal_post,
            ("GET", TERMINAL_GET): self._terminal_get,
        }

    # --- what a client sends
    @property
    def http(self) -> httpx.Client:
        return self.bench.http

    def get(self, path: str, headers: dict[str, str] | None = None) -> httpx.Response:
        return self.http.get(path, headers=headers or {})

    def post(self, path: str, body: Any, headers: dict[str, str]) -> httpx.Response:
        return self.http.post(path, json=body, headers=headers)

    def _preflight(self, path: str, method: str) -> httpx.Response:
        return self.http.options(path, headers={"Origin": "https://shop.example",
                                                "Access-Control-Request-Method": method})

    def _init(self) -> httpx.Response:
        token = self.bench.token(mexico())
        return self.bench.init(token, mexico()["amount"])

    def _cancel(self) -> httpx.Response:
        return self.http.patch(f"/transfer/v1/cancel/{self.bench.start(colombia_qr(4000))}", headers=PRIVATE_KEY)

    def _card_token(self) -> httpx.Response:
        return self.post("/card/v1/tokens", {"card": CARD, "totalAmount": 500, "currency": "COP"}, PUBLIC_KEY)

    def _charge(self, path: str, *, tokenized: bool = False) -> httpx.Response:
        body: dict[str, Any] = {"amount": CARD_AMOUNT}
        if tokenized:
            body["token"] = self._card_token().json()["token"]
        else:
            body["card"] = CARD
        return self.post(path, body, PRIVATE_KEY)

    def _void(self, path: str) -> httpx.Response:
        ticket = self._charge("/card/v2/charges").json()["ticketNumber"]
        return self.http.delete(f"{path}/{ticket}", headers=PRIVATE_KEY)

    def _new_pending(self) -> str:
        return self.bench.start(mexico(document_number=f"probe-{time.monotonic_ns()}"))

    def _payment(self) -> httpx.Response:
        return self.post("/sandbox/v1/payments", {"token": self._new_pending()}, PRIVATE_KEY)

    def _pay_on_the_page(self) -> httpx.Response:
        token = self.bench.start(colombia_qr(4000))
        page_token = _page_token(self.get(f"/sandbox/pay/{token}").text)
        return self.http.post(f"/sandbox/pay/{token}", data={"action": "pay", "page_token": page_token},
                              headers={"Origin": self.bench.url, "Sec-Fetch-Site": "same-origin"})

    def _action(self, page: str, action: str, headers: dict[str, str], **fields: str) -> httpx.Response:
        page_token = _page_token(self.get(page).text)
        target = action if action.startswith("/") else f"/sandbox/actions/transfers/{page.rsplit('/', 1)[1]}/{action}"
        return self.http.post(target, data={"page_token": page_token, "back": "/sandbox/", **fields},
                              headers=headers)

    def _configured_webhook_url(self) -> str:
        url = self.bench.sandbox.config.webhook_url
        assert url is not None  # the bench's receiver
        return url

    def _webhook_url_kept(self) -> httpx.Response:
        """Set to the URL the bench delivers to already: its other tests keep their receiver."""
        return self.http.put("/sandbox/v1/webhook-url", json={"url": self._configured_webhook_url()},
                             headers=PRIVATE_KEY)

    def _webhook_url_cleared_then_kept(self) -> httpx.Response:
        cleared = self.http.delete("/sandbox/v1/webhook-url", headers=PRIVATE_KEY)
        self._webhook_url_kept()
        return cleared

    def _terminal_post(self) -> httpx.Response:
        sealed = self.terminal.seal({"amount": 7}, method="POST")
        return self.http.post(TERMINAL_POST, content=sealed.body, headers=sealed.headers)

    def _terminal_get(self) -> httpx.Response:
        sealed = self.terminal.seal({}, method="GET")
        return self.http.get(TERMINAL_GET, params=sealed.params, headers=sealed.headers)

    # --- what the tests use
    def routes(self) -> set[tuple[str, str]]:
        return set(self._probes)

    def probe(self, route: tuple[str, str]) -> httpx.Response:
        """The benign request of ``route``, as a well-behaved client sends it."""
        return self._probes[route]()

    def targets(self) -> dict[tuple[str, str], str]:
        """A concrete path of every route, to send anything to."""
        concrete = {"{token}": self.pending, "{ticketNumber}": self.ticket, "{id}": self.webhook,
                    "{action}": "approve"}
        targets = {}
        for method, template in self._probes:
            path = template
            for name, value in concrete.items():
                path = path.replace(name, value)
            targets[(method, template)] = "/sandbox/requests/1" if template == "/sandbox/requests/{id}" else path
        return targets
