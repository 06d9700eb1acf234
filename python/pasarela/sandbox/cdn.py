"""Stand-ins for the service's CDN at ``/cdn/``: the client library and the hosted checkout (v1 and v2), so that a
merchant's checkout page runs end to end offline, in a test or a browser, against the sandbox.

The real scripts load from the service's CDN and must not be self-hosted (spec 2.9); these are the sandbox's
own (:mod:`.cdn_scripts`), at the same file names below ``/cdn/`` as the service's below its CDN URL, so that
``CheckoutV2(...).render(sandbox_url + "/cdn")`` (and ``CheckoutV1``, ``ClientLibraryConfig``) point the
merchant's tags here. What they do lands in the sandbox's state and on the dashboard like any other call.
"""

from __future__ import annotations

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


def routes(context: Context) -> list[Route]:
    return [api_route(context, "GET", f"{CDN_PATH}/{name}", KeyRule.NONE, _script_handler(text))
            for name, text in ((LIBRARY_SCRIPT, LIBRARY), (CHECKOUT_SCRIPT, CHECKOUT))]
