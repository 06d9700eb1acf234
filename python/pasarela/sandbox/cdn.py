"""Stand-ins for the service's CDN at ``/cdn/``: the client library and the hosted checkout (v1 and v2), so that a
merchant's checkout page runs end to end offline, in a test or a browser, against the sandbox.

The real scripts load from the service's CDN and must not be self-hosted (spec 2.9); these are the sandbox's
own (:mod:`.cdn_scripts`), at the same file names below ``/cdn/`` as the service's below its CDN URL, so that
``CheckoutV2(...).render(sandbox_url + "/cdn")`` (and ``CheckoutV1``, ``ClientLibraryConfig``) point the
merchant's tags here. What they do lands in the sandbox's state and on the dashboard like any other call.
``GET /cdn/`` (the start-up banner's link) is a page saying so, with links to both.
"""

from __future__ import annotations

from html import escape

from starlette.responses import Response
from starlette.routing import Route

from ..transfers.checkout import CHECKOUT_SCRIPT, LIBRARY_SCRIPT
from .auth import KeyRule
from .cdn_scripts import CHECKOUT, LIBRARY
from .context import Context
from .endpoint import Call, Handler, api_route

__all__ = ["CDN_PATH", "routes"]

CDN_PATH = "/cdn"
_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff",
            "Cross-Origin-Resource-Policy": "cross-origin"}


def _script_handler(text: str) -> Handler:
    async def serve(call: Call) -> Response:
        return Response(text, media_type="text/javascript; charset=utf-8", headers=_HEADERS)

    return serve


_INDEX_HEADERS = {"Cache-Control": "no-cache", "Content-Security-Policy": "default-src 'none'; style-src "
                  "'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
                  "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}
_STYLE = "body{font-family:sans-serif;max-width:46em;margin:2em auto;line-height:1.4}code,pre{background:#f4f4f4}"
_SCRIPTS = ((LIBRARY_SCRIPT, "the client library: a token from the payer's browser (ClientLibraryConfig)"),
            (CHECKOUT_SCRIPT, "the hosted checkout, v1 and v2 (CheckoutV1, CheckoutV2)"))


def _index_handler() -> Handler:
    """``GET /cdn/``: what is here and how a checkout page points at it (the banner links this page)."""

    async def serve(call: Call) -> Response:
        cdn = f"{call.context.public_url(call.request.scope)}{CDN_PATH}"
        items = "".join(f'<li><a href="{escape(name)}"><code>{escape(name)}</code></a>: {escape(what)}</li>'
                        for name, what in _SCRIPTS)
        page = (f'<!doctype html><html lang="en"><meta charset="utf-8"><title>Sandbox CDN stand-ins</title>'
                f"<style>{_STYLE}</style><h1>The sandbox's CDN stand-ins</h1>"
                "<p>The sandbox's own scripts at the service's file names below its CDN URL, so that a checkout page "
                "runs offline against this sandbox. They are stand-ins, never the service's scripts: in test and "
                "production your pages load those from the service's CDN.</p>"
                f"<ul>{items}</ul><p>Point pasarela's checkout builders here with this base URL:</p>"
                f"<pre>CheckoutV2(...).render({escape(repr(cdn))}, action=...)</pre>"
                '<p>What the scripts do (tokens, inits) shows on the <a href="/sandbox/">dashboard</a>.</p>')
        return Response(page, media_type="text/html; charset=utf-8", headers=_INDEX_HEADERS)

    return serve


def routes(context: Context) -> list[Route]:
    scripts = [api_route(context, "GET", f"{CDN_PATH}/{name}", KeyRule.NONE, _script_handler(text))
               for name, text in ((LIBRARY_SCRIPT, LIBRARY), (CHECKOUT_SCRIPT, CHECKOUT))]
    return [api_route(context, "GET", f"{CDN_PATH}/", KeyRule.NONE, _index_handler()), *scripts]
