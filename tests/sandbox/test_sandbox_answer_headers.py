"""What every answer of the sandbox carries and repeats (issue 53, item 8), over real HTTP (uvicorn): the
trailing-slash redirect's ``Location`` is relative, never built from the ``Host`` header the caller chose;
every answer (JSON, pages, scripts, refusals, the terminal's AUTH-001, preflights) says
``X-Content-Type-Options: nosniff``; the 404 and 405 answers repeat neither the path nor the method sent."""

from __future__ import annotations

import http.client
from collections.abc import Iterator

import httpx
import pytest

from support.sandbox_routes import RouteProbes
from support.workbench import bench


@pytest.fixture(scope="module")
def probes() -> Iterator[RouteProbes]:
    with bench() as started:
        yield RouteProbes(started)


def test_every_answer_of_every_route_says_nosniff(probes: RouteProbes) -> None:
    answers: list[tuple[str, httpx.Response]] = []
    for (method, template), path in sorted(probes.targets().items()):
        answers.append((f"probe {method} {template}", probes.probe((method, template))))
        answers.append((f"keyless {method} {path}", probes.http.request(method, path, content=b"{}", headers={
            "Content-Type": "application/json"})))
    answers.append(("404", probes.http.get("/no/such/route")))
    answers.append(("405", probes.http.put("/transfer/v1/tokens")))
    answers.append(("preflight refused", probes.http.options("/transfer/v1/tokens", headers={
        "Origin": "https://shop.example", "Access-Control-Request-Method": "DELETE"})))
    answers.append(("redirect", probes.http.get("/sandbox", follow_redirects=False)))
    missing = [what for what, answer in answers if answer.headers.get("x-content-type-options") != "nosniff"]
    assert missing == []
    assert {answer.headers["content-type"].split(";")[0] for _, answer in answers if answer.content} >= {
        "application/json", "text/html", "text/javascript", "text/css"}


@pytest.mark.parametrize(("path", "location"), [("/sandbox", "/sandbox/"),
                                                ("/sandbox?status=PAID", "/sandbox/?status=PAID"),
                                                ("/sandbox/charges/", "/sandbox/charges")])
def test_the_trailing_slash_redirect_is_relative_whatever_the_host_header(probes: RouteProbes, path: str,
                                                                           location: str) -> None:
    answer = probes.http.get(path, headers={"Host": "evil.test"}, follow_redirects=False)
    assert answer.status_code == 307 and answer.headers["location"] == location


def test_a_path_that_would_redirect_off_site_is_a_404(probes: RouteProbes) -> None:
    host, port = probes.bench.url.removeprefix("http://").split(":")
    for path in ("//evil.test", "//evil.test/", "/\\evil.test", "//evil.test/sandbox"):
        connection = http.client.HTTPConnection(host, int(port), timeout=10)  # the path as is: httpx rewrites "//"
        try:
            connection.request("GET", path, headers={"Host": "evil.test"})
            answer = connection.getresponse()
            assert (answer.status, answer.getheader("location")) == (404, None), path
        finally:
            connection.close()


def test_the_404_and_405_repeat_nothing_the_caller_chose(probes: RouteProbes) -> None:
    marker = "<script>alert(1)</script>"
    missing = probes.http.get(f"/nope/{marker}")
    assert missing.status_code == 404 and missing.json()["code"] == "NOT_FOUND"
    assert "nope" not in missing.text and "script" not in missing.text
    wrong = probes.http.request("PROPFIND", f"/transfer/v1/status/{'a' * 32}")
    assert wrong.status_code == 405 and "PROPFIND" not in wrong.text and "a" * 32 not in wrong.text
    assert wrong.json()["message"] == "this path answers GET, HEAD only"
