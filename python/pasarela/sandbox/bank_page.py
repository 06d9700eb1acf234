"""The payer page the sandbox hosts: the bank's virtual portal (Ecuador redirect), the wallet the
deep link opens (Ecuador wallet), and the page a Colombia QR points to.

``GET /sandbox/pay/{token}`` shows the transfer and two buttons; the form posts ``action=pay`` or
``action=decline`` to the same address. Paying follows the spec's test rule (documentNumber
999999990 is declined, any other approved); declining always declines. The payment is completed
(:mod:`.payments`, webhook included) and the payer is sent back by a 303 to
``callbackUrl?token=<token>`` (spec 3, rule 2), or shown the result when the token request had no
callbackUrl. The token in the address is the only credential, as for a real portal; the form also carries a
per-page token (:mod:`.page_token`, good for one post), so a page on another site cannot pay or decline by
posting to this one (403), and the page may not be framed (clickjacking). Its CSP lets the form reach the page
itself and the origin of the transfer's callbackUrl, no other (:func:`callback_source`); a callbackUrl no CSP
source can name gets a link instead of the 303.
"""

from __future__ import annotations

import html
import re
import time
from decimal import Decimal
from typing import Optional
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from starlette.responses import Response
from starlette.routing import Route

from .auth import KeyRule
from .context import Context
from .endpoint import Call, api_route, form, html_reply, redirect
from .errors import SandboxError
from .page_token import PageTokens
from .payments import pay
from .scenarios import Outcome
from .settlement import settle_due
from .store import Transfer

__all__ = ["callback_location", "callback_source", "routes"]

_TITLES = {
    "bank": "Banco Sandbox: virtual portal",
    "wallet": "Sandbox wallet",
    "qr": "Bre-B QR payment",
    "clabe": "Sandbox bank: CLABE transfer",
    "pse": "PSE: Banco Sandbox",
}
_ACTIONS: dict[str, Optional[Outcome]] = {"pay": None, "decline": Outcome.DECLINED}
"""What each button does: paying leaves the outcome to the test rule."""
_STYLE = "body{font-family:sans-serif;max-width:32em;margin:3em auto}button{font-size:1.1em;margin-right:1em}"


_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action {}; frame-ancestors 'none'"
_PAGE_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": _POLICY.format("'self'"),
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_FORM_TOKEN = "page_token"  # noqa: S105 (the name of a form field)
_DNS_HOST = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)*")
"""A host a CSP host-source can name: ASCII letters, digits, hyphens, dots (an IPv4 address is one too);
Chromium refuses an IPv6 literal there."""


def callback_source(callback_url: Optional[str]) -> Optional[str]:
    """The origin of ``callback_url`` written as a CSP source (``https://shop.example:8443``), or ``None``
    when there is no callbackUrl or its host cannot be written as one (an IPv6 literal, an underscore).

    Built from the parsed scheme, host and port only, never from the text as sent: a callbackUrl such as
    ``http://a;script-src */`` must not add a directive to the page's policy."""
    if callback_url is None:
        return None
    try:
        parts = urlsplit(callback_url)
        host, port = (parts.hostname or "").encode("idna").decode("ascii"), parts.port
    except (ValueError, UnicodeError):
        return None
    if parts.scheme not in ("http", "https") or not _DNS_HOST.fullmatch(host):
        return None
    return f"{parts.scheme}://{host}" + ("" if port is None else f":{port}")


def _payer_page_headers(transfer: Transfer) -> dict[str, str]:
    """The page's form may post to the page itself and, for the 303 that follows a payment, to the merchant's
    callback origin: Chromium checks ``form-action`` on every redirect of a form submission, so with
    ``'self'`` alone it stops the payer on this page (payment made, callback never reached). Only that one
    origin, the one the merchant named for this transfer, is added; everything else stays refused."""
    source = callback_source(transfer.callback_url)
    if source is None:
        return _PAGE_HEADERS
    return {**_PAGE_HEADERS, "Content-Security-Policy": _POLICY.format(f"'self' {source}")}


def callback_location(callback_url: str, token: str) -> str:
    """``callback_url`` with its ``token`` query parameter set to ``token`` (other parameters kept)."""
    parts = urlsplit(callback_url)
    query = [(name, value) for name, value in parse_qsl(parts.query, keep_blank_values=True) if name != "token"]
    query.append(("token", token))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), parts.fragment))


def _page(status: int, title: str, body: str, headers: dict[str, str] = _PAGE_HEADERS) -> Response:
    return html_reply(status, f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
                              f"{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
                              f"<h1>{html.escape(title)}</h1>{body}</body></html>", headers)


def _total(transfer: Transfer) -> str:
    figures = (Decimal(str(transfer.amount[name])) for name in ("subtotalIva0", "subtotalIva", "iva"))
    return f"{sum(figures, Decimal(0))} {transfer.currency}"




class PayerPage:
    def __init__(self, context: Context) -> None:
        self._context = context
        self._tokens = PageTokens()

    def _transfer(self, token: str) -> Transfer:
        settle_due(self._context, token)
        with self._context.store.read() as tx:
            transfer = tx.transfer(token)
        if transfer is None:
            raise SandboxError.not_found("no transfer was started with this token")
        return transfer

    async def show(self, call: Call) -> Response:
        try:
            transfer = self._transfer(call.params["token"])
        except SandboxError as exc:
            return _page(exc.status, "Payment not found", f"<p>{html.escape(exc.message)}</p>")
        facts = (f"<p>Amount: <strong>{html.escape(_total(transfer))}</strong></p>"
                 f"<p>Reference: {html.escape(transfer.reference)}</p>"
                 f"<p>Status: <strong>{html.escape(transfer.status.value)}</strong></p>")
        if transfer.status.is_final:
            return _page(200, _TITLES[transfer.variant], facts)
        page_token = self._tokens.issue(transfer.token, time.time())
        form = (f'<form method="post"><input type="hidden" name="{_FORM_TOKEN}" value="{html.escape(page_token)}">'
                '<button name="action" value="pay">Pay</button>'
                '<button name="action" value="decline">Decline</button></form>')
        return _page(200, _TITLES[transfer.variant], facts + form, _payer_page_headers(transfer))

    async def submit(self, call: Call) -> Response:
        fields = await form(call.request)
        action = fields.get("action")
        cross_site = call.request.headers.get("sec-fetch-site", "").lower() == "cross-site"
        # The page token's own clock is the real one: moving the sandbox clock must not expire open pages.
        if cross_site or not self._tokens.redeem(call.params["token"], fields.get(_FORM_TOKEN), time.time()):
            return _page(403, "Payment not completed", "<p>This form did not come from this payer page (or the page"
                                                       " is too old, or was posted already): open the payment page "
                                                       "again.</p>")
        try:
            if action not in _ACTIONS:
                raise SandboxError.invalid("action", "must be pay or decline")
            paid = pay(self._context, call.params["token"], _ACTIONS[action])
        except SandboxError as exc:
            return _page(exc.status, "Payment not completed", f"<p>{html.escape(exc.message)}</p>")
        result = f"<p>Status: <strong>{html.escape(paid.status.value)}</strong></p>"
        if paid.callback_url is None:
            return _page(200, _TITLES[paid.variant], result)
        location = callback_location(paid.callback_url, paid.token)
        if callback_source(paid.callback_url) is None:  # the form's policy could not allow the redirect: a link
            return _page(200, _TITLES[paid.variant], f'{result}<p><a href="{html.escape(location)}">'
                                                     "Return to the merchant</a></p>")
        return redirect(location)


def routes(context: Context) -> list[Route]:
    page = PayerPage(context)
    return [
        api_route(context, "GET", "/sandbox/pay/{token}", KeyRule.NONE, page.show),
        api_route(context, "POST", "/sandbox/pay/{token}", KeyRule.NONE, page.submit),
    ]
