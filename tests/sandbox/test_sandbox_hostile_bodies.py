"""One request cannot break the sandbox (issue 53, item 2): every route, over real HTTP (uvicorn), gets every class
of hostile body an unauthenticated page or client can send (non-finite numbers, 1000 levels deep, invalid UTF-8,
over the size limit, the wrong JSON type, the wrong content type), with the merchant keys and without them; no
answer is a 5xx nor a logged failure, and afterwards every route answers its benign request as it did before
the volley, the access log included, which holds the volley's records (none dropped: the parse refuses them
first). With the base of this change, one ``NaN`` a route read before refusing made every write of the sandbox
fail (500) until it restarted.

And the store itself: one record that cannot be stored is dropped and counted, and never blocks the others nor
the state's writes."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from pasarela.sandbox.endpoint import MAX_BODY_BYTES
from pasarela.sandbox.store import NewRequest, Store
from support.sandbox_routes import BOTH_KEYS, PRIVATE_KEY, RouteProbes, routes_of
from support.workbench import bench

_DEEP = b'{"amount":' * 999 + b"1" + b"}" * 999  # 1000 levels
HOSTILE = {
    "nan": (b'{"token": NaN, "amount": {"subtotalIva": NaN, "subtotalIva0": 1, "iva": 0}, "currency": "COP"}',
            "application/json"),
    "infinity": (b'{"seconds": Infinity, "amount": -Infinity, "metadata": {"x": Infinity}}', "application/json"),
    "out_of_range": (b'{"seconds": 1e400, "totalAmount": -1e400, "metadata": {"n": ' + b"9" * 5000 + b"}}",
                     "application/json"),
    "deep_1000": (_DEEP, "application/json"),
    "deep_array_999": (b"[" * 999 + b"]" * 999, "application/json"),
    "invalid_utf8": (b'{"currency": "\xff\xfe", "card": {"name": "\xc3("}}', "application/json"),
    "huge": (b'{"metadata": "' + b"x" * (MAX_BODY_BYTES + 1) + b'"}', "application/json"),
    "wrong_type": (b'[{"currency": "COP"}, 1e400, "x"]', "application/json"),
    "text_plain_nan": (b'{"amount": NaN, "data": "00:00"}', "text/plain"),  # a CORS simple request: any page's
    "multipart": (b'--b\r\nContent-Disposition: form-data; name="amount"\r\n\r\nNaN\r\n--b--\r\n',
                  "multipart/form-data; boundary=b"),
}


@pytest.fixture
def probes() -> Iterator[RouteProbes]:
    """A sandbox of its own for each class: what one class breaks is not blamed on the next."""
    with bench() as started:
        yield RouteProbes(started)


def test_every_route_has_a_probe(probes: RouteProbes) -> None:
    assert probes.routes() == routes_of(probes.bench.sandbox)


@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_no_hostile_body_breaks_any_route_and_every_route_answers_as_before(
        probes: RouteProbes, hostile: str, caplog: pytest.LogCaptureFixture) -> None:
    before = {route: probes.probe(route).status_code for route in sorted(probes.routes())}
    content, content_type = HOSTILE[hostile]
    answered = {}
    with caplog.at_level(logging.WARNING):
        for (method, template), path in sorted(probes.targets().items()):
            for keys in ({}, BOTH_KEYS):
                answer = probes.http.request(method, path, content=content,
                                             headers={"Content-Type": content_type, **keys})
                answered[(method, template, bool(keys))] = answer.status_code
                assert answer.status_code < 500, (method, path, keys, answer.text[:300])
    failures = [record.getMessage() for record in caplog.records
                if record.levelno >= logging.ERROR or "could not be stored" in record.getMessage()]
    assert failures == [], failures  # no failure logged (a 500's traceback), no record dropped
    after = {route: probes.probe(route).status_code for route in sorted(probes.routes())}
    assert after == before
    assert set(before.values()) <= {200, 201, 202, 204, 303, 307}, before
    listed = probes.http.get("/sandbox/v1/requests", params={"limit": 200}, headers=PRIVATE_KEY).json()
    assert listed["notRecorded"] == 0
    volley = [item for item in listed["items"]
              if item["headers"].get("content-type") == content_type and item["body"] is not None
              and item["headers"].get("content-length") == str(len(content))]
    assert volley, "the volley's requests are in the access log"
    for item in volley:  # none of these bodies is JSON the handlers read: kept as their length and type only
        assert item["body"].startswith(f"({len(content)} bytes of {content_type.split(';')[0]}, not recorded: "), item


def _record(body: object) -> NewRequest:
    return NewRequest(1.0, "api", "POST", "/transfer/v1/tokens", 400, 1.0, "none", None, {}, body, "", None)


def test_a_record_that_cannot_be_stored_is_dropped_counted_and_blocks_nothing(
        caplog: pytest.LogCaptureFixture) -> None:
    with Store() as store:
        assert store.record_request(_record({"kept": 1}))
        with caplog.at_level(logging.WARNING, logger="pasarela.sandbox"):
            assert not store.record_request(_record({"amount": float("nan")}))
        assert store.dropped_requests == 1
        assert "dropped, 1 so far" in caplog.text and "nan" not in caplog.text.lower()
        assert store.record_request(_record({"kept": 2}))
        with store.write() as tx:  # the state's writes go on (at the base commit: ValueError, every time)
            tx.add_transfer_token("t" * 32, {"currency": "COP"}, 1.0)
        with store.read(recorded_requests=True) as tx:
            assert [record.body for record in tx.requests(10, kind="api").items] == [{"kept": 2}, {"kept": 1}]
            assert tx.transfer_token("t" * 32) is not None
