"""The dashboard: the sandbox's state in a browser, at ``/sandbox/`` (``GET /`` redirects there).

Pages: transfers (filter by status, country, flow), one transfer (its history, token request, the requests that
concern it with their answers, its webhooks with every delivery attempt), charges, webhooks (each attempt's
time, status, latency, the signed headers and the body as sent), terminal requests (verdict and the AUTH-001
cause :func:`pasarela.diagnose` names), the access log and the certification verdicts. Actions: approve,
decline or expire a transfer that is pending, redeliver a webhook, advance the clock.

Like the payer page, it needs no key (the sandbox listens on 127.0.0.1) and defends itself as a page on the
internet would: no page sends a CORS header, so another origin's script cannot read one (nor its page token);
every form carries a per-page token (:mod:`.page_token`), good for one post; a post whose ``Origin`` is not the
sandbox's own, or that the browser marks other than ``Sec-Fetch-Site: same-origin`` (another port of
127.0.0.1 is same-site, not same-origin), is refused before its token is looked at; the CSP allows only the
sandbox's own style sheet and script (``default-src 'none'``), framing is refused, and a request whose ``Host``
is not the sandbox's own address is refused (421, by :func:`.endpoint.api_route` for every path under
``/sandbox/``), so a site rebinding its DNS name to 127.0.0.1 cannot read the dashboard.
The pages update by themselves: the script polls ``/sandbox/changes`` (:mod:`.dashboard_assets`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Callable, Optional
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .auth import KeyRule
from .cards import CHARGE_KINDS, charge_record
from .certification import certification
from .context import Context
from .dashboard_assets import SCRIPT, STYLE
from .dashboard_html import (
    FORM_TOKEN,
    Html,
    badge,
    esc,
    evidence_link,
    filters_form,
    json_block,
    link,
    next_page,
    page,
    post_button,
    table,
    text_form,
    when,
)
from .endpoint import Call, api_route, form, html_reply, json_reply, redirect
from .errors import SandboxError
from .listings import COUNTRIES, REQUEST_KINDS, REQUEST_METHODS, TRANSFER_FLOWS, listing, settled_transfer_detail
from .page_token import PageTokens
from .payments import expire, pay
from .records import request_item, transfer_item, webhook_item
from .scenarios import Outcome
from .settlement import settle_due
from .simulator import advance_clock, change_webhook_url, redeliver
from .states import TransferStatus
from .wire import amount as wire_amount

__all__ = ["POLICY", "routes"]

POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
          "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
_HEADERS = {"Content-Security-Policy": POLICY, "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin",
            "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
"""``same-origin``, not ``no-referrer``: under ``no-referrer`` a browser sends ``Origin: null`` with the page's own
form posts, and the actions check Origin. The pages link nowhere else, so no referrer leaves the sandbox either."""
_TOKEN_SUBJECT = "dashboard"  # noqa: S105 (what the page tokens are bound to, not a secret)
_PAGE_SIZE = 50
_LONGEST_SEARCH = 200
_EVIDENCE_SHOWN = 20
"""A rule's evidence links on the certification page (the JSON answer has them all): a rule failing for thousands
of requests made a page of half a megabyte."""
_STATUSES = tuple(status.value for status in TransferStatus)
_TRANSFER_ACTIONS: dict[str, Optional[Outcome]] = {"approve": Outcome.APPROVED, "decline": Outcome.DECLINED,
                                                   "expire": None}


class Dashboard:
    def __init__(self, context: Context) -> None:
        self._context = context
        self._tokens = PageTokens()

    # --- shared
    def _from_own_page(self, request: Request) -> bool:
        """Whether the browser says the post comes from a page of the sandbox's own origin: ``Origin`` (sent with
        every POST by today's browsers) one of them, and ``Sec-Fetch-Site``, when sent, ``same-origin``. A client
        that sends neither (curl, a test) still needs a page token."""
        origin = request.headers.get("origin")
        if origin is not None and origin.lower() not in self._context.own_origins(request.scope).values():
            return False
        return request.headers.get("sec-fetch-site", "same-origin").lower() == "same-origin"

    def _version(self) -> str:
        return f"{self._context.store.version}.{self._context.clock.offset:g}"

    def _page(self, request: Request, title: str, here: str, body: Html) -> Response:
        back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        html_text = page(title, here, body, version=self._version(), page_token=self._issue(),
                         back=back, clock_ms=self._context.clock.now_ms())
        return html_reply(200, html_text, _HEADERS)

    def _issue(self) -> str:
        return self._tokens.issue(_TOKEN_SUBJECT, time.time())

    def _message(self, status: int, title: str, text: str, back: str) -> Response:
        body = f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>' \
               f'<link rel="stylesheet" href="/sandbox/assets/dashboard.css"></head><body><main>' \
               f'<h1>{esc(title)}</h1><p class="notice">{esc(text)}</p><p>{link(back, "Back")}</p></main></body></html>'
        return html_reply(status, body, _HEADERS)

    # --- assets and polling
    async def style(self, call: Call) -> Response:
        return Response(STYLE, media_type="text/css; charset=utf-8", headers={"Cache-Control": "no-cache"})

    async def script(self, call: Call) -> Response:
        return Response(SCRIPT, media_type="text/javascript; charset=utf-8", headers={"Cache-Control": "no-cache"})

    async def changes(self, call: Call) -> Response:
        self._context.store.flush_requests()  # what a page would show counts as a change
        return json_reply(200, {"version": self._version()}, {"Cache-Control": "no-store"})

    async def root(self, call: Call) -> Response:
        return redirect("/sandbox/")

    # --- pages
    async def transfers(self, call: Call) -> Response:
        query = listing(_chosen(call.request), {"status": _STATUSES, "country": COUNTRIES,
                                                    "flow": TRANSFER_FLOWS})
        settle_due(self._context)
        with self._context.store.read() as tx:
            found = tx.transfers(_PAGE_SIZE, query.cursor, status=query.filters["status"],
                                 country=query.filters["country"], variant=query.filters["flow"])
        now = self._context.clock.now()
        rows = []
        for transfer in found.items:
            item = transfer_item(transfer, now)
            rows.append((link(f"/sandbox/transfers/{quote(transfer.token, safe='')}", transfer.token),
                         when(item["created"]), esc(item["country"]), esc(item["flow"]),
                         badge(_state(item)), esc(_total(item["amount"])) + " " + esc(item["currency"]),
                         esc(item.get("documentNumber", ""))))
        body = (filters_form("/sandbox/", (("status", "Status", _STATUSES), ("country", "Country", COUNTRIES),
                                           ("flow", "Flow", TRANSFER_FLOWS)), query.filters)
                + table(("Token", "Created", "Country", "Flow", "State", "Amount", "Payer document"), rows,
                        "no transfer yet: create a token and init one")
                + next_page("/sandbox/", found.next_cursor, query.filters))
        return self._page(call.request, "Transfers", "/sandbox/", body)

    async def transfer(self, call: Call) -> Response:
        token = call.params["token"]
        detail = settled_transfer_detail(self._context, token)
        if detail is None:
            return self._message(404, "No such transfer", "no transfer was started with this token", "/sandbox/")
        item = detail["transfer"]
        here = f"/sandbox/transfers/{quote(token, safe='')}"
        page_token = self._issue()
        actions = ""
        if _state(item) == "initialized":
            actions = '<div class="actions">' + "".join(
                post_button(f"/sandbox/actions/transfers/{quote(token, safe='')}/{name}", name.capitalize(),
                            page_token, here) for name in _TRANSFER_ACTIONS) + "</div>"
        history = table(("Time", "State", "Cause"), ((when(entry["at"]), badge(entry["state"]), esc(entry["cause"]))
                                                     for entry in detail["history"]))
        body = (f"<p>State {badge(_state(item))} · {esc(_total(item['amount']))} {esc(item['currency'])} · "
                f"flow {esc(item['flow'])} · reference <code>{esc(item['transactionReference'])}</code></p>"
                f"{actions}<h2>History</h2>{history}"
                f"<h2>Requests</h2>{_requests_table(detail['requests'], with_bodies=True)}"
                f"<details><summary>Status record</summary>{json_block(item)}</details>"
                f"<details><summary>Token request</summary>{json_block(detail['tokenRequest'])}</details>"
                f"<h2>Webhooks</h2>{_webhooks(detail['webhooks'], page_token, here)}")
        return self._page(call.request, f"Transfer {token}", "/sandbox/", body)

    async def charges(self, call: Call) -> Response:
        query = listing(_chosen(call.request), {"kind": CHARGE_KINDS})
        with self._context.store.read() as tx:
            found = tx.charges(_PAGE_SIZE, query.cursor, kind=query.filters["kind"])
        rows = []
        for charge in found.items:
            record = charge_record(charge)
            amount = record.get("amount", {})
            network = record.get("network", {}).get("tmsIntegration", "")
            reversal = record.get("reversal", {}).get("transactionType", "")
            rows.append((esc(record["ticketNumber"]), when(record["created"]), esc(charge.kind),
                         f"{esc(_total(amount))} {esc(amount.get('currency', ''))}", esc(network), esc(reversal),
                         f"<details><summary>answer</summary>{json_block(record)}</details>"))
        body = (filters_form("/sandbox/charges", (("kind", "Kind", CHARGE_KINDS),), query.filters)
                + table(("Ticket", "Created", "Kind", "Amount", "Network token", "Reversal", ""), rows,
                        "no charge yet")
                + next_page("/sandbox/charges", found.next_cursor, query.filters))
        return self._page(call.request, "Charges", "/sandbox/charges", body)

    async def webhooks(self, call: Call) -> Response:
        with self._context.store.read() as tx:
            entries = tx.outbox(_PAGE_SIZE)
            attempts = tx.attempts([entry.id for entry in entries])
        url = self._context.webhook_target.url
        intro = (f"<p>Delivered to <code>{esc(url)}</code>.</p>" if url else
                 "<p class=notice>No webhook URL: events wait in the outbox (give one below, or start with "
                 "--webhook-url).</p>")
        change = text_form("/sandbox/actions/webhook-url", "url", "Webhook URL", url or "", "Change", self._issue(),
                           "/sandbox/webhooks")
        items = [webhook_item(entry, attempts) for entry in entries]
        return self._page(call.request, "Webhooks", "/sandbox/webhooks",
                          intro + change + _webhooks(items, self._issue(), "/sandbox/webhooks"))

    async def terminal(self, call: Call) -> Response:
        query = listing(_chosen(call.request), {})
        with self._context.store.read(recorded_requests=True) as tx:
            found = tx.requests(_PAGE_SIZE, query.cursor, kind="terminal")
        rows = [(link(f"/sandbox/requests/{record.id}", record.id), when(int(record.at * 1000)), esc(record.method),
                 f"<code>{esc(record.path)}</code>", esc(record.status), badge(record.verdict or ""))
                for record in found.items]
        body = ("<p>Requests to the simulated terminal (<code>/terminal/</code>): valid, or the cause of their "
                "AUTH-001 as <code>pasarela diagnose</code> names it.</p>"
                + table(("#", "Time", "Method", "Path", "Status", "Verdict"), rows, "no terminal request yet")
                + next_page("/sandbox/terminal", found.next_cursor, {}))
        return self._page(call.request, "Terminal requests", "/sandbox/terminal", body)

    async def requests(self, call: Call) -> Response:
        chosen = _chosen(call.request)
        query = listing(chosen, {"kind": REQUEST_KINDS, "method": REQUEST_METHODS})
        token = chosen.get("token")
        if token is not None and len(token) > _LONGEST_SEARCH:
            raise SandboxError.invalid("token", f"at most {_LONGEST_SEARCH} characters")
        with self._context.store.read(recorded_requests=True) as tx:
            found = tx.requests(_PAGE_SIZE, query.cursor, kind=query.filters["kind"], method=query.filters["method"],
                                token=token)
        dropped = self._context.store.dropped_requests
        lost = (f"<p class=notice>{dropped} request(s) since start could not be recorded (see the sandbox's log); "
                "the others were.</p>" if dropped else "")
        shown = {**query.filters, "token": token}
        body = (lost + filters_form("/sandbox/requests", (("kind", "Kind", REQUEST_KINDS),
                                                          ("method", "Method", REQUEST_METHODS)), shown,
                                    (("token", "Token"),))
                + _requests_table([request_item(record) for record in found.items], with_bodies=False)
                + next_page("/sandbox/requests", found.next_cursor, shown))
        return self._page(call.request, "Access log", "/sandbox/requests", body)

    async def search(self, call: Call) -> Response:
        """Transfers and charges by token, transaction reference, ticket number or the payer's document number."""
        text = call.request.query_params.get("q", "").strip()
        if len(text) > _LONGEST_SEARCH:
            raise SandboxError.invalid("q", f"at most {_LONGEST_SEARCH} characters")
        if not text:
            return self._page(call.request, "Search", "/sandbox/search",
                              "<p>Search by token, transaction reference, ticket number or document number.</p>")
        settle_due(self._context)
        with self._context.store.read() as tx:
            transfers = tx.search_transfers(text, _PAGE_SIZE)
            charges = tx.search_charges(text, _PAGE_SIZE)
        if len(transfers) == 1 and not charges:
            return redirect(f"/sandbox/transfers/{quote(transfers[0].token, safe='')}")
        now = self._context.clock.now()
        items = [transfer_item(transfer, now) for transfer in transfers]
        rows = [(link(f"/sandbox/transfers/{quote(item['token'], safe='')}", item["token"]), when(item["created"]),
                 esc(item["flow"]), badge(_state(item)), f"<code>{esc(item['transactionReference'])}</code>",
                 f"<code>{esc(item['ticketNumber'])}</code>", esc(item.get("documentNumber", "")))
                for item in items]
        charge_rows = [(f"<code>{esc(charge.ticket_number)}</code>", when(int(charge.created * 1000)),
                        esc(charge.kind), f"<code>{esc(charge.reference)}</code>") for charge in charges]
        body = (f"<p>Matches for <code>{esc(text)}</code>.</p><h2>Transfers</h2>"
                + table(("Token", "Created", "Flow", "State", "Transaction reference", "Ticket", "Payer document"),
                        rows, "no transfer matches")
                + "<h2>Charges</h2>"
                + table(("Ticket", "Created", "Kind", "Transaction reference"), charge_rows, "no charge matches"))
        return self._page(call.request, "Search", "/sandbox/search", body)

    async def request(self, call: Call) -> Response:
        wanted = call.params["id"]
        with self._context.store.read(recorded_requests=True) as tx:
            found = tx.request(int(wanted)) if wanted.isascii() and wanted.isdigit() and len(wanted) <= 18 else None
        if found is None:
            return self._message(404, "No such request", "the access log has no request with this number (it keeps the "
                                                         "newest ones)", "/sandbox/requests")
        item = request_item(found)
        facts = "".join(f"<tr><th>{esc(name)}</th><td>{value}</td></tr>" for name, value in (
            ("Time", when(item["at"])), ("Kind", esc(item["kind"])), ("Method", esc(item["method"])),
            ("Path", f"<code>{esc(item['path'])}</code>"), ("Status", esc(item["status"])),
            ("Milliseconds", esc(item["ms"])), ("Merchant key", esc(item["key"])),
            ("Token", _token_link(item["token"])), ("Verdict", badge(item.get("verdict", "")))))
        body = (f"<table>{facts}</table><h2>Request headers</h2>{json_block(item['headers'])}"
                f"<h2>Request body</h2>{json_block(item['body'])}<h2>Response body</h2>{json_block(item['response'])}")
        return self._page(call.request, f"Request {wanted}", "/sandbox/requests", body)

    async def certification(self, call: Call) -> Response:
        with self._context.store.read(recorded_requests=True) as tx:
            verdicts = [verdict.to_json() for verdict in certification(tx, self._context.webhook_target.url)]
        rows = []
        for rule in verdicts:
            parts = "".join(f"<li>{esc(part['part'])}: {badge(part['verdict'])} {esc(part['summary'])}</li>"
                            for part in rule.get("parts", ()))
            evidence = rule["evidence"]
            shown = " ".join(evidence_link(item) for item in evidence[:_EVIDENCE_SHOWN])
            if len(evidence) > _EVIDENCE_SHOWN:
                shown += f" and {len(evidence) - _EVIDENCE_SHOWN} more (all in /sandbox/v1/certification)"
            rows.append((esc(rule["rule"]), esc(rule["title"]), badge(rule["verdict"]),
                         esc(rule["summary"]) + (f"<ul>{parts}</ul>" if parts else ""), shown))
        body = ("<p>What the sandbox observed of your integration's traffic, rule by rule (spec section 8). "
                "<code>pasarela sandbox certify --url URL</code> prints the same table and fails when a rule "
                "fails.</p>" + table(("Rule", "Requirement", "Verdict", "Summary", "Evidence"), rows))
        return self._page(call.request, "Certification readiness", "/sandbox/certification", body)

    # --- actions
    async def _checked_form(self, call: Call) -> tuple[Optional[dict[str, str]], str]:
        """The form, or ``None`` when it did not come from a dashboard page; and where to go back to."""
        fields = await form(call.request)
        back = fields.get("back", "/sandbox/")
        if not back.startswith("/sandbox/") or back.startswith("//") or "\\" in back:
            back = "/sandbox/"
        if not self._from_own_page(call.request) or not self._tokens.redeem(_TOKEN_SUBJECT, fields.get(FORM_TOKEN),
                                                                             time.time()):
            return None, back
        return fields, back

    def _refused(self, back: str) -> Response:
        return self._message(403, "Action refused", "This form did not come from a dashboard page (or the page is too "
                                                    "old, or was posted already): open the page again.", back)

    async def _act(self, call: Call, action: Callable[[dict[str, str]], object]) -> Response:
        """A form's action: ``action(fields)`` once the form is known to come from a dashboard page, then back to
        the page; a SandboxError it raises is shown as the refusal."""
        fields, back = await self._checked_form(call)
        if fields is None:
            return self._refused(back)
        try:
            action(fields)
        except SandboxError as exc:
            return self._message(exc.status, "Action refused", exc.message, back)
        return redirect(back)

    async def transfer_action(self, call: Call) -> Response:
        return await self._act(call, lambda fields: _transfer_action(self._context, call.params["token"],
                                                                     call.params["action"]))

    async def redeliver(self, call: Call) -> Response:
        return await self._act(call, lambda fields: redeliver(self._context, call.params["id"]))

    async def webhook_url(self, call: Call) -> Response:
        return await self._act(call, lambda fields: change_webhook_url(self._context,
                                                                       fields.get("url", "").strip() or None))

    async def clock(self, call: Call) -> Response:
        fields, back = await self._checked_form(call)
        if fields is None:
            return self._refused(back)
        text = fields.get("seconds", "")
        if not (text.isascii() and text.isdigit() and len(text) <= 8 and 0 < int(text) <= 31_536_000):
            return self._message(400, "Action refused", "seconds: a whole number from 1 to 31536000", back)
        advance_clock(self._context, float(text))
        return redirect(back)


def _transfer_action(context: Context, token: str, action: str) -> None:
    if action not in _TRANSFER_ACTIONS:
        raise SandboxError.not_found(f"no action {action}: approve, decline or expire")
    outcome = _TRANSFER_ACTIONS[action]
    if outcome is None:
        expire(context, token)
    else:
        pay(context, token, outcome, cause="dashboard")


def _chosen(request: Request) -> dict[str, str]:
    """The page's query without empty values: a filter form's "any" option sends the filter empty."""
    return {name: value for name, value in request.query_params.items() if value}


def _state(item: Mapping[str, Any]) -> str:
    """What the dashboard calls the transfer's state: PAID, rejected, cancelled, expired or initialized."""
    if item["transactionStatus"] != "initialized":
        return str(item["transactionStatus"])
    if item["cancelled"]:
        return "cancelled"
    return "expired" if item["status"] == "expiredTransaction" else "initialized"


def _total(amount: Mapping[str, Any]) -> str:
    """What the payer pays, as :class:`pasarela.transfers.Amount` adds it up (the mirrored Colombia form once)."""
    return str(wire_amount(amount).total) if amount else ""


def _token_link(token: Optional[str]) -> Html:
    return link(f"/sandbox/transfers/{quote(token, safe='')}", token) if token else ""


def _requests_table(items: list[dict[str, Any]], *, with_bodies: bool) -> Html:
    rows = []
    for item in items:
        row = [link(f"/sandbox/requests/{item['id']}", item["id"]), when(item["at"]), esc(item["kind"]),
               esc(item["method"]), f"<code>{esc(item['path'])}</code>", esc(item["status"]), esc(item["ms"]),
               esc(item["key"])]
        if with_bodies:
            row.append(f"<details><summary>request and response</summary>{json_block(item['body'])}"
                       f"{json_block(item['response'])}</details>")
        else:
            row.append(_token_link(item["token"]))
        rows.append(row)
    last = "Bodies" if with_bodies else "Token"
    return table(("#", "Time", "Kind", "Method", "Path", "Status", "ms", "Key", last), rows, "no request yet")


def _webhooks(items: list[dict[str, Any]], page_token: str, back: str) -> Html:
    if not items:
        return "<p class=muted>no webhook yet</p>"
    parts = []
    for item in items:
        state = "delivered" if item["delivered"] else ("failed" if item["attempts"] else "pending")
        attempts = table(("Delivery", "Time", "Status", "Latency ms", "Answer", "Error", "On purpose",
                          "Signed headers"), (
            (f'<span id="delivery-{esc(attempt["id"])}">{esc(attempt["id"])}</span>', when(attempt["at"]),
             badge("delivered" if attempt["status"] == 200 else "failed") + " " + esc(attempt["status"]),
             esc(attempt["latencyMs"]), f'<code class="answer">{esc(attempt.get("answer", ""))}</code>',
             esc(attempt.get("error", "")), esc(attempt.get("chaos", "")),
             f"<details><summary>headers</summary>{json_block(attempt['headers'])}</details>")
            for attempt in item["deliveries"]), "not attempted yet")
        parts.append(
            f'<h2 id="webhook-{esc(item["id"])}">{esc(item["status"])} · {badge(state)} · '
            f'{_token_link(item["token"])}</h2><p class=muted>id <code>{esc(item["id"])}</code>, created '
            f'{when(item["created"])}</p>'
            + post_button(f"/sandbox/actions/webhooks/{quote(item['id'], safe='')}/redeliver", "Redeliver",
                          page_token, back)
            + f"<details><summary>body as sent</summary>{json_block(item['body'])}</details>{attempts}")
    return "".join(parts)


def routes(context: Context) -> list[Route]:
    dashboard = Dashboard(context)
    pages = (("/sandbox/", dashboard.transfers), ("/sandbox/transfers/{token}", dashboard.transfer),
             ("/sandbox/charges", dashboard.charges), ("/sandbox/webhooks", dashboard.webhooks),
             ("/sandbox/terminal", dashboard.terminal), ("/sandbox/requests", dashboard.requests),
             ("/sandbox/requests/{id}", dashboard.request), ("/sandbox/certification", dashboard.certification),
             ("/sandbox/assets/dashboard.css", dashboard.style), ("/sandbox/assets/dashboard.js", dashboard.script),
             ("/sandbox/changes", dashboard.changes), ("/sandbox/search", dashboard.search), ("/", dashboard.root))
    actions = (("/sandbox/actions/transfers/{token}/{action}", dashboard.transfer_action),
               ("/sandbox/actions/webhooks/{id}/redeliver", dashboard.redeliver),
               ("/sandbox/actions/clock", dashboard.clock), ("/sandbox/actions/webhook-url", dashboard.webhook_url))
    return [*(api_route(context, "GET", path, KeyRule.NONE, handler) for path, handler in pages),
            *(api_route(context, "POST", path, KeyRule.NONE, handler) for path, handler in actions)]
