"""Issue 56 item 5: the sandbox honours ``Idempotency-Key`` on its POST calls as payment services do (Stripe's
idempotent requests, the IETF draft's 422 and 409), over real HTTP; and pasarela's clients make a stable key for
a call, which a caller's own retry after a lost answer repeats (the key is on the TransportError)."""

from __future__ import annotations

import json
import socketserver
import threading
from typing import Any

import httpx
import pytest

from pasarela.errors import ApiError, TransportError
from pasarela.http import AuditRecord
from pasarela.http.config import ServiceConfig
from pasarela.sandbox import idempotency
from pasarela.sandbox.store import Store
from pasarela.testing import LiveSandbox
from pasarela.transfers import Amount, TransferClient, TransferInitRequest, TransferTokenRequest

PUBLIC = {"Public-Merchant-Id": "sandbox-public-key"}
PRIVATE = {"Private-Merchant-Id": "sandbox-private-key"}
FLOW = {"processorName": "BRE-B", "type": "QR"}


def _amount(total: int) -> dict[str, int]:
    return {"subtotalIva": 0, "subtotalIva0": total, "iva": 0}


def _qr_token(total: int = 25000) -> dict[str, Any]:
    return {"currency": "COP", "amount": _amount(total), "flow": FLOW}


def _count(live: LiveSandbox, table: str) -> int:
    with live.sandbox.store.read() as tx:
        return int(tx._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])  # noqa: S608


def _token(client: httpx.Client, total: int = 25000) -> str:
    token: str = client.post("/transfer/v1/tokens", json=_qr_token(total), headers=PUBLIC).json()["token"]
    return token


def test_the_same_key_and_body_answers_the_first_answer_and_creates_nothing(live: LiveSandbox,
                                                                            live_http: httpx.Client) -> None:
    token = _token(live_http)
    body = {"token": token, "amount": _amount(25000), "metadata": {"order": "42"}}
    key = {"Idempotency-Key": "init-order-42", **PRIVATE}
    first = live_http.post("/transfer/v1/init", json=body, headers=key)
    assert first.status_code == 201 and "Idempotent-Replayed" not in first.headers
    # The same request, spaced and ordered otherwise: the same JSON.
    again = live_http.post("/transfer/v1/init", content=json.dumps(dict(reversed(body.items())), indent=2),
                      headers={**key, "Content-Type": "application/json"})
    assert (again.status_code, again.content) == (first.status_code, first.content)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["content-type"] == first.headers["content-type"]
    assert _count(live, "transfers") == 1
    # Without the key, the same body is a second init: refused, the token was used.
    assert live_http.post("/transfer/v1/init", json=body, headers=PRIVATE).status_code == 400


def test_a_token_request_replayed_gives_the_same_token(live: LiveSandbox, live_http: httpx.Client) -> None:
    key = {"Idempotency-Key": "token-7", **PUBLIC}
    tokens = {live_http.post("/transfer/v1/tokens", json=_qr_token(), headers=key).json()["token"] for _ in range(3)}
    assert len(tokens) == 1 and _count(live, "transfer_tokens") == 1


def test_the_same_key_with_another_request_is_422(live_http: httpx.Client) -> None:
    key = {"Idempotency-Key": "reused", **PUBLIC}
    assert live_http.post("/transfer/v1/tokens", json=_qr_token(25000), headers=key).status_code == 201
    other_body = live_http.post("/transfer/v1/tokens", json=_qr_token(26000), headers=key)
    assert other_body.status_code == 422
    assert other_body.json()["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert "reused" not in other_body.text                      # the key is never quoted back
    card = {"card": {"name": "A B", "number": "4000000000000002", "expiryMonth": "12", "expiryYear": "30",
                     "cvv": "123"}, "totalAmount": 10, "currency": "COP"}
    other_path = live_http.post("/card/v1/tokens", json=card, headers=key)
    assert (other_path.status_code, other_path.json()["code"]) == (422, "IDEMPOTENCY_KEY_REUSED")


def test_a_key_is_the_merchant_credentials_own(live: LiveSandbox, live_http: httpx.Client) -> None:
    """The browser's token call (public key) and the back end's init (private key) may use one order id."""
    key = "order-99"
    token = live_http.post("/transfer/v1/tokens", json=_qr_token(), headers={"Idempotency-Key": key, **PUBLIC}).json()
    started = live_http.post("/transfer/v1/init", json={"token": token["token"], "amount": _amount(25000)},
                        headers={"Idempotency-Key": key, **PRIVATE})
    assert started.status_code == 201 and "Idempotent-Replayed" not in started.headers


def test_a_request_refused_before_it_ran_is_not_kept(live_http: httpx.Client) -> None:
    key = {"Idempotency-Key": "fix-and-resend", **PUBLIC}
    broken = live_http.post("/transfer/v1/tokens", json={"currency": "COP", "amount": {"subtotalIva": "x"}},
                            headers=key)
    assert broken.status_code == 400 and broken.json()["field"].startswith("amount")
    fixed = live_http.post("/transfer/v1/tokens", json=_qr_token(), headers=key)
    assert fixed.status_code == 201 and "Idempotent-Replayed" not in fixed.headers


def test_the_handlers_refusals_and_the_scenarios_are_kept(live: LiveSandbox, live_http: httpx.Client) -> None:
    token = _token(live_http, 11000)                           # spec 8: 500 QR-CODE-0001, the token stays usable
    key = {"Idempotency-Key": "scenario-11000", **PRIVATE}
    body = {"token": token, "amount": _amount(11000)}
    first = live_http.post("/transfer/v1/init", json=body, headers=key)
    again = live_http.post("/transfer/v1/init", json=body, headers=key)
    assert (first.status_code, first.json()["code"]) == (500, "QR-CODE-0001")
    assert (again.status_code, again.content, again.headers["Idempotent-Replayed"]) == (500, first.content, "true")
    mismatch = {"token": _token(live_http), "amount": _amount(1)}     # the handler's rule: the token's total
    refused = [live_http.post("/transfer/v1/init", json=mismatch, headers={"Idempotency-Key": "k2", **PRIVATE})
               for _ in range(2)]
    assert [answer.status_code for answer in refused] == [400, 400]
    assert refused[1].headers["Idempotent-Replayed"] == "true" and refused[0].content == refused[1].content


@pytest.mark.pasarela_sandbox(timeout_delay=1.5)
def test_the_same_key_while_the_first_runs_is_409_then_the_first_answer(live: LiveSandbox,
                                                                        live_http: httpx.Client) -> None:
    token = _token(live_http, 13000)                           # spec 8: no answer for timeout_delay (1.5 s), then 504
    body = {"token": token, "amount": _amount(13000)}
    key = {"Idempotency-Key": "slow", **PRIVATE}
    answers: list[httpx.Response] = []
    first = threading.Thread(target=lambda: answers.append(live_http.post("/transfer/v1/init", json=body, headers=key)))
    first.start()
    deadline = 50
    while _count(live, "transfers") == 0 and deadline:   # the first request is inside its handler
        deadline -= 1
        threading.Event().wait(0.05)
    with httpx.Client(base_url=live.url, timeout=10) as other:
        running = other.post("/transfer/v1/init", json=body, headers=key)
        assert (running.status_code, running.json()["code"]) == (409, "IDEMPOTENCY_KEY_IN_USE")
        first.join(10)
        assert answers[0].status_code == 504
        after = other.post("/transfer/v1/init", json=body, headers=key)
    assert (after.status_code, after.content, after.headers["Idempotent-Replayed"]) == (504, answers[0].content,
                                                                                       "true")


def test_keys_expire_after_24_hours_of_the_sandbox_clock(live: LiveSandbox, live_http: httpx.Client) -> None:
    key = {"Idempotency-Key": "day-old", **PUBLIC}
    first = live_http.post("/transfer/v1/tokens", json=_qr_token(), headers=key).json()["token"]
    live.advance(hours=23, minutes=59)
    assert live_http.post("/transfer/v1/tokens", json=_qr_token(), headers=key).json()["token"] == first
    live.advance(minutes=2)
    later = live_http.post("/transfer/v1/tokens", json=_qr_token(), headers=key)
    assert later.status_code == 201 and later.json()["token"] != first and "Idempotent-Replayed" not in later.headers


def test_the_keys_kept_are_bounded(live: LiveSandbox, live_http: httpx.Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(idempotency, "MAX_KEPT", 5)
    firsts = [live_http.post("/transfer/v1/tokens", json=_qr_token(), headers={"Idempotency-Key": f"k{n}", **PUBLIC})
              .json()["token"] for n in range(9)]
    assert _count(live, "idempotency") <= 6                 # the cap, and the key just taken
    oldest = live_http.post("/transfer/v1/tokens", json=_qr_token(), headers={"Idempotency-Key": "k0", **PUBLIC})
    assert oldest.json()["token"] != firsts[0]              # forgotten: a new request
    newest = live_http.post("/transfer/v1/tokens", json=_qr_token(), headers={"Idempotency-Key": "k8", **PUBLIC})
    assert newest.json()["token"] == firsts[8]


@pytest.mark.parametrize("bad", ["x" * 256, "tab\there", ""])
def test_a_key_that_is_not_1_to_255_printable_characters_is_400(live_http: httpx.Client, bad: str) -> None:
    refused = live_http.post("/transfer/v1/tokens", json=_qr_token(), headers={"Idempotency-Key": bad, **PUBLIC})
    assert refused.status_code == 400
    assert refused.json()["field"] == "Idempotency-Key"


def test_a_key_of_255_characters_is_taken(live_http: httpx.Client) -> None:
    key = {"Idempotency-Key": "k" * 255, **PUBLIC}
    first, again = (live_http.post("/transfer/v1/tokens", json=_qr_token(), headers=key) for _ in range(2))
    assert first.json() == again.json() and again.headers["Idempotent-Replayed"] == "true"


def test_a_restart_frees_the_keys_of_requests_that_were_running(tmp_path: Any) -> None:
    path = tmp_path / "sandbox.sqlite3"
    with Store(path) as store:
        keys = idempotency.IdempotencyKeys(store)
        assert keys.claim("private", "running", "request", 0.0) is idempotency.Claim.NEW
        assert keys.claim("private", "done", "request", 0.0) is idempotency.Claim.NEW
        keys.keep("private", "done", 201, {"content-type": "application/json"}, b"{}")
    with Store(path) as store:
        keys = idempotency.IdempotencyKeys(store)
        assert keys.claim("private", "running", "request", 1.0) is idempotency.Claim.NEW
        kept = keys.claim("private", "done", "request", 1.0)
        assert isinstance(kept, idempotency.Claimed) and kept.answer.status == 201


class AnswerLost(socketserver.ThreadingTCPServer):
    """A proxy on a loopback port that forwards each request to the sandbox, then closes the connection without
    answering: the call arrived and ran, the client never learns its outcome."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        super().__init__(("127.0.0.1", 0), _ForwardThenHangUp)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


class _ForwardThenHangUp(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        server = self.server
        assert isinstance(server, AnswerLost)
        method, target, _ = self.rfile.readline().decode("latin-1").split(" ", 2)
        headers = {}
        while (line := self.rfile.readline().decode("latin-1").strip()):
            name, _, value = line.partition(":")
            headers[name.strip()] = value.strip()
        body = self.rfile.read(int(headers.get("Content-Length", "0")))
        headers.pop("Host", None)
        httpx.request(method, server.upstream + target, content=body, headers=headers)
        # returning closes the connection: no status line, no answer


def test_a_callers_retry_after_a_lost_answer_repeats_the_key_and_creates_nothing(live: LiveSandbox) -> None:
    live.reset()
    records: list[AuditRecord] = []
    amount = Amount.untaxed(25000, currency="COP")
    lossy = AnswerLost(live.url)
    threading.Thread(target=lossy.serve_forever, daemon=True).start()
    with lossy:
        lost = ServiceConfig(base_url=lossy.url, public_merchant_id=live.config.public_key,
                             private_merchant_id=live.config.private_key, audit=records.append)
        with TransferClient(lost) as client, pytest.raises(TransportError) as failed:
            client.create_token(TransferTokenRequest.colombia_qr(amount=amount))
        lossy.shutdown()
    key = failed.value.idempotency_key
    assert key is not None and [record.idempotency_key for record in records] == [key]  # one attempt, one key
    assert _count(live, "transfer_tokens") == 1            # it arrived
    token = live.transfers.create_token(TransferTokenRequest.colombia_qr(amount=amount), idempotency_key=key)
    assert _count(live, "transfer_tokens") == 1            # the retry created nothing: the first answer again
    with live.sandbox.store.read() as tx:
        assert tx.transfer_tokens()[0].token == token.token
    live.transfers.init(TransferInitRequest(token=token.token, amount=amount), idempotency_key="init-1")
    again = live.transfers.init(TransferInitRequest(token=token.token, amount=amount), idempotency_key="init-1")
    assert again.transaction_reference and _count(live, "transfers") == 1
    with pytest.raises(ApiError) as reused:                # a fresh key for the same init: a second init, refused
        live.transfers.init(TransferInitRequest(token=token.token, amount=amount))
    assert reused.value.status == 400


def test_each_post_of_the_clients_carries_its_own_key(live: LiveSandbox) -> None:
    live.reset()
    amount = Amount.untaxed(25000, currency="COP")
    for _ in range(2):
        live.transfers.create_token(TransferTokenRequest.colombia_qr(amount=amount))
    live.sandbox.store.flush_requests()
    with live.sandbox.store.read() as tx:
        sent = [record.headers.get("idempotency-key") or record.headers.get("Idempotency-Key")
                for record in tx.requests(1000, kind="api").items if record.method == "POST"]
    assert len(sent) == 2 and len(set(sent)) == 2 and all(sent)
    assert _count(live, "transfer_tokens") == 2
