"""A page from another origin, in the real browser (Debian's chromium: tests/support/browser.py), tries to read the
dashboard and the listings and to post a dashboard action (issue 53, item 3); all of it is refused. Two attacking
origins: ``attacker.test`` (another site) and another port of 127.0.0.1 (the same site as the sandbox, another
origin: a developer's other local server, or a page any local process serves), each from a real server (uvicorn).
At the base of this change the sandbox sent ``Access-Control-Allow-Origin: *`` on every answer: the page read the
dashboard (and its page token) and, with the documented private key, every listing; and from the same site the
post of an action with that token approved the transfer (only ``Sec-Fetch-Site: cross-site`` was refused)."""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from support.browser import Browser
from support.local_server import LocalServer
from support.workbench import PRIVATE, PUBLIC, Bench, bench, mexico

_READER = """<!doctype html><title>reading</title><pre id="results"></pre><script>
const sandbox = {sandbox}, token = {token}, key = {key}, publicKey = {public_key};
async function attempt(path, init) {{
  try {{
    const answer = await fetch(sandbox + path, init || {{}});
    return "read " + answer.status + ": " + (await answer.text()).slice(0, 60);
  }} catch (error) {{
    return "refused: " + error.name;
  }}
}}
(async () => {{
  const withKey = {{headers: {{"Private-Merchant-Id": key}}}};
  const results = {{
    dashboard: await attempt("/sandbox/"),
    transfer_page: await attempt("/sandbox/transfers/" + token),
    access_log_page: await attempt("/sandbox/requests"),
    changes: await attempt("/sandbox/changes"),
    transfers: await attempt("/sandbox/v1/transfers", withKey),
    transfer: await attempt("/sandbox/v1/transfers/" + token, withKey),
    requests: await attempt("/sandbox/v1/requests", withKey),
    certification: await attempt("/sandbox/v1/certification", withKey),
    webhooks: await attempt("/sandbox/v1/webhooks", withKey),
    status: await attempt("/transfer/v1/status/" + token, withKey),
    openapi: await attempt("/openapi.json"),
    action: await attempt("/sandbox/actions/clock", {{method: "POST", body: new URLSearchParams({{seconds: "60"}})}}),
    // the control: the call the merchant's page makes with the public key is allowed (CORS on that route only)
    token_route: await attempt("/transfer/v1/bankList", {{headers: {{"Public-Merchant-Id": publicKey}}}}),
  }};
  document.getElementById("results").textContent = JSON.stringify(results);
  document.title = "done";
}})();
</script>"""

_POSTER = """<!doctype html><title>Win a prize</title><body onload="document.forms[0].submit()">
<form method="post" action="{target}"><input type="hidden" name="page_token" value="{page_token}">
<input type="hidden" name="back" value="/sandbox/"></form></body>"""


def _attacker(workbench: Bench, token: str, target: str, page_token: str) -> Starlette:
    async def read(request: Request) -> HTMLResponse:
        return HTMLResponse(_READER.format(sandbox=json.dumps(workbench.url), token=json.dumps(token),
                                           key=json.dumps(PRIVATE), public_key=json.dumps(PUBLIC)))

    async def post(request: Request) -> HTMLResponse:
        return HTMLResponse(_POSTER.format(target=html.escape(target), page_token=html.escape(page_token)))

    return Starlette(routes=[Route("/read", read), Route("/post", post)])


@pytest.fixture(scope="module")
def workbench() -> Iterator[Bench]:
    with bench() as started:
        yield started


def _status(workbench: Bench, token: str) -> str:
    return str(workbench.get(f"/sandbox/v1/transfers/{token}")["transfer"]["status"])


def _page_token(workbench: Bench, token: str) -> str:
    """What a reader of the dashboard would have taken: a genuine page token, fresh."""
    page = workbench.http.get(f"/sandbox/transfers/{token}").text
    return html.unescape(page.split('name="page_token" value="', 1)[1].split('"', 1)[0])


@pytest.mark.parametrize("origin", ["attacker.test", "127.0.0.1"], ids=["another_site", "same_site_another_port"])
def test_a_foreign_origin_reads_neither_the_dashboard_nor_the_listings(browser: Browser, workbench: Bench,
                                                                       origin: str) -> None:
    token = workbench.start(mexico(document_number=f"read-from-{origin}"))
    with LocalServer(_attacker(workbench, token, "", "")) as site:
        browser.driver.get(f"http://{origin}:{site.port}/read")
        browser.wait_for_title("done")
        results: dict[str, Any] = json.loads(browser.driver.find_element("id", "results").text)
    browser.screenshot(f"foreign_origin_read_{origin}")
    assert results.pop("token_route").startswith("read 200"), "the page's own fetch works: the control"
    assert results == {name: "refused: TypeError" for name in results}, results
    assert workbench.sandbox.clock.offset == 0  # the clock action was not taken either


@pytest.mark.parametrize("origin", ["attacker.test", "127.0.0.1"], ids=["another_site", "same_site_another_port"])
def test_a_foreign_origin_cannot_post_an_action_even_with_a_genuine_page_token(browser: Browser, workbench: Bench,
                                                                               origin: str) -> None:
    token = workbench.start(mexico(document_number=f"posted-from-{origin}"))
    target = f"{workbench.url}/sandbox/actions/transfers/{token}/approve"
    with LocalServer(_attacker(workbench, token, target, _page_token(workbench, token))) as site:
        browser.driver.get(f"http://{origin}:{site.port}/post")
        browser.wait_for_title("Action refused")
    browser.screenshot(f"foreign_origin_post_{origin}")
    assert _status(workbench, token) == "initializedTransaction"
    history = [entry["cause"] for entry in workbench.get(f"/sandbox/v1/transfers/{token}")["history"]]
    assert history == ["init"]
