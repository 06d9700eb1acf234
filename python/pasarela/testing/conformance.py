"""The receiver conformance run: does *your* webhook endpoint apply each transfer event exactly once, and forged
ones never, under the service's real delivery behaviour? ::

    from collections import Counter
    from pasarela.testing import ServedApp
    from pasarela.testing.conformance import run_conformance
    from pasarela.transfers import TransferWebhookReceiver

    applied = Counter()                                    # your code's effects: (order, status) -> times
    receiver = TransferWebhookReceiver(lambda event: applied.update([(event.raw["metadata"]["order"], event.status)]),
                                       secret="sandbox-webhook-secret", merchant_id="sandbox-public-key")
    with ServedApp(receiver) as endpoint:                  # or your application, wherever it runs
        report = run_conformance(f"{endpoint.url}/hooks", check=lambda order: {
            status: times for (order_id, status), times in applied.items() if order_id == order.order_id})
    print(report.table())            # each case: expected, observed, verdict, how to fix
    report.raise_for_failures()      # an AssertionError holding the table (in a test)

It starts a sandbox of its own (:class:`~pasarela.testing.LiveSandbox`), drives one real transfer per case through
it (its init carries ``metadata {"order": "<order id>"}``), takes over each transfer's webhook and delivers it to
``webhook_url`` the way the case says, signed as the sandbox signs (its webhook secret and public key: give your
endpoint those, or pass yours in ``config``). Then it asks ``check`` how many times your code applied each event to
each order, and compares.

``check`` is your own: a function of a :class:`ConformanceOrder` (``order_id``, ``token``,
``transaction_reference``) returning how many times each status was applied to that order, ``{"approvedTransaction":
1}`` (a status not named counts 0); or an HTTP URL answering ``GET <url>?order=<id>&token=<token>&
transactionReference=<ref>`` with that JSON object (:class:`HttpCheck`).

Deliveries that the service would retry (any answer but 200, or none within 5 s) are retried by the run, at once
and with a fresh ``X-Kushki-Id``, as the service's retries come (their waits compressed), up to
:data:`MAX_DELIVERIES` times; the genuine and the lost-answer cases go through the sandbox's own dispatcher and
clock. See :data:`CASES` for what each case does and expects.
"""

from __future__ import annotations

import http.client
import json
import secrets
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional, Union
from urllib.parse import urlsplit

from ..errors import ConfigurationError
from ..sandbox.config import SandboxConfig, check_webhook_url
from ..sandbox.jsontext import dumps
from ..sandbox.states import TransferStatus as SandboxStatus
from ..sandbox.webhooks import Answer, HttpSender, event_body, signed_headers
from ..transfers.amounts import Amount
from ..transfers.models import TransferInitRequest, TransferTokenRequest
from ..transfers.webhook_signature import DEFAULT_MAX_AGE, WebhookHeaders, body_signature
from .live import LiveSandbox

__all__ = [
    "CASES",
    "MAX_DELIVERIES",
    "STATUSES",
    "CaseResult",
    "Check",
    "ConformanceError",
    "ConformanceOrder",
    "ConformanceReport",
    "HttpCheck",
    "run_conformance",
]

APPROVED, DECLINED, INITIALIZED = "approvedTransaction", "declinedTransaction", "initializedTransaction"
STATUSES = (APPROVED, DECLINED, INITIALIZED)
"""The status words a check counts."""
MAX_DELIVERIES = 8
"""Deliveries of one event the run makes before it calls the endpoint unable to answer 200."""
_SERVICE_TIMEOUT = 5.0
_RETRY_PAUSE = 0.2
"""Between a delivery answered otherwise than 200 and its retry: a delivery 'in progress' has time to finish."""
_OVERSIZE_BYTES = 2 << 20
_STALE_BY = DEFAULT_MAX_AGE + 300.0
_LATE_BY_DAYS = 2
_LOST_ANSWERS = 3
_HEADERS = WebhookHeaders()
_AMOUNT = Amount.untaxed(1000, currency="MXN")
"""Each case's transfer is a Mexico CLABE transfer: it has no QR to expire, and with ``settle_after=None`` it stays
initialized until the run pays or declines it."""


class ConformanceError(Exception):
    """The run could not be made (the endpoint or the check unreachable, a check that answers no counts)."""


@dataclass(frozen=True)
class ConformanceOrder:
    """One case's order: the id its init carried in ``metadata.order``, the transfer's token and reference."""

    order_id: str
    token: str
    transaction_reference: str


Check = Callable[[ConformanceOrder], Mapping[str, int]]
"""Your check: how many times your code applied each status (``approvedTransaction``...) to the order."""


class HttpCheck:
    """A check asked over HTTP: ``GET <url>?order=&token=&transactionReference=`` answering the counts as JSON."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        try:
            check_webhook_url(url)
        except ConfigurationError:
            raise ConfigurationError("the check URL must be an absolute http(s) URL") from None
        self.url = url
        self._timeout = timeout

    def __call__(self, order: ConformanceOrder) -> Mapping[str, int]:
        query = urllib.parse.urlencode({"order": order.order_id, "token": order.token,
                                        "transactionReference": order.transaction_reference})
        target = f"{self.url}{'&' if urlsplit(self.url).query else '?'}{query}"
        try:
            with urllib.request.urlopen(target, timeout=self._timeout) as answer:  # noqa: S310 (http(s) checked)
                text = answer.read(1 << 16)
        except (urllib.error.URLError, OSError) as exc:
            raise ConformanceError(f"the check {self.url} could not be asked: {exc}") from None
        try:
            counts = json.loads(text)
        except ValueError:
            raise ConformanceError(f"the check {self.url} did not answer JSON") from None
        if not isinstance(counts, dict):
            raise ConformanceError(f"the check {self.url} must answer a JSON object of counts per status")
        return counts


@dataclass(frozen=True)
class CaseResult:
    name: str
    title: str
    expected: str
    observed: str
    passed: bool
    fix: str
    """What to change when it failed (empty when it passed)."""
    answers: tuple[Optional[int], ...] = ()
    """The endpoint's HTTP status for each delivery (``None``: no answer)."""
    applied: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ConformanceReport:
    webhook_url: str
    cases: tuple[CaseResult, ...]

    @property
    def passed(self) -> bool:
        return all(case.passed for case in self.cases)

    @property
    def failed(self) -> tuple[CaseResult, ...]:
        return tuple(case for case in self.cases if not case.passed)

    def table(self) -> str:
        """The cases as a text table: case, expected, observed, verdict, how to fix."""
        rows = [("case", "expected", "observed", "verdict", "how to fix")]
        rows += [(case.name, case.expected, case.observed, "pass" if case.passed else "FAIL", case.fix or "-")
                 for case in self.cases]
        widths = [max(len(row[column]) for row in rows) for column in range(4)]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths)) + "  " + row[4]
                 for row in rows]
        summary = (f"{len(self.cases) - len(self.failed)} of {len(self.cases)} cases pass against "
                   f"{self.webhook_url}")
        return "\n".join([*lines, "", summary])

    def to_json(self) -> dict[str, Any]:
        return {"webhookUrl": self.webhook_url, "passed": self.passed,
                "cases": [{"case": case.name, "title": case.title, "expected": case.expected,
                           "observed": case.observed, "verdict": "pass" if case.passed else "fail", "fix": case.fix,
                           "answers": list(case.answers), "applied": dict(case.applied)} for case in self.cases]}

    def raise_for_failures(self) -> None:
        """An AssertionError holding the table when a case failed."""
        if not self.passed:
            raise AssertionError(f"{len(self.failed)} conformance case(s) failed:\n{self.table()}")


@dataclass(frozen=True)
class _Case:
    name: str
    title: str
    expected: Mapping[str, int]
    """How many times each status must have been applied to the case's order."""
    must_answer_200: bool
    """A genuine event: the service retries it until it gets a 200 (certification rule 4)."""
    fix: str
    status: str = APPROVED
    """The transfer's outcome."""


CASES: tuple[_Case, ...] = (
    _Case("genuine", "an approved transfer's webhook, sent by the sandbox's dispatcher", {APPROVED: 1}, True,
          "apply the event and answer 200 (certification rule 4); check the URL, the webhook secret and the merchant "
          "id your endpoint was given"),
    _Case("genuine_declined", "a declined transfer's webhook, sent by the dispatcher", {DECLINED: 1}, True,
          "apply declinedTransaction too (the order is not paid) and answer 200", DECLINED),
    _Case("redelivered", "the same event delivered twice, one after the other, each with a new X-Kushki-Id",
          {APPROVED: 1}, True,
          "deduplicate on the event (transactionReference and status), never on X-Kushki-Id, which each attempt "
          "sets afresh; answer 200 to a duplicate (pasarela.transfers.TransferWebhookReceiver does both)"),
    _Case("concurrent", "two deliveries of one event at the same instant", {APPROVED: 1}, True,
          "claim the event atomically before applying it (a unique key: INSERT ... ON CONFLICT DO NOTHING, SET NX): "
          "a check-then-insert lets both twins through"),
    _Case("final_then_older", "the final event, then an older non-final one (initializedTransaction) arriving late",
          {APPROVED: 1, INITIALIZED: 0}, True,
          "once a transfer's final event was applied, ignore its older events and answer 200: the final state wins"),
    _Case("late", f"the event delivered {_LATE_BY_DAYS} days after the transfer (its X-Kushki-Id fresh, as a retry "
                  "after an outage carries)", {APPROVED: 1}, True,
          "judge freshness by X-Kushki-Id (the time of the attempt), never by the body's created"),
    _Case("stale_id", f"a genuine delivery replayed {_STALE_BY / 60:g} minutes later (its X-Kushki-Id that old)",
          {APPROVED: 0}, False,
          "refuse a delivery whose X-Kushki-Id is older than your window (10 minutes), after checking its signature: "
          "a captured delivery replayed must not be applied"),
    _Case("forged_signature", "the event signed with another secret", {APPROVED: 0}, False,
          "verify X-Kushki-Signature (HMAC-SHA256 of <body>.<X-Kushki-Id> with your webhook secret, compared in "
          "constant time) before trusting the body"),
    _Case("wrong_key", "the event correctly signed, its X-Kushki-Key another merchant's", {APPROVED: 0}, False,
          "check that X-Kushki-Key is your public merchant id (TransferWebhookReceiver(merchant_id=...))"),
    _Case("oversize", f"a {_OVERSIZE_BYTES >> 20} MiB body, correctly signed", {APPROVED: 0}, False,
          "bound the body before reading or verifying it (413 past 1 MiB): an endpoint that reads any size can be "
          "made to exhaust its memory"),
    _Case("slow", "the service gives up on the first delivery (its 5 s passed) and delivers again while the first "
                  "may still run", {APPROVED: 1}, True,
          "make the effect and the record of the event one claim (claim first, or one transaction): a delivery the "
          "service gave up on is retried while you still process it"),
    _Case("retried", f"the endpoint's 200 lost {_LOST_ANSWERS} times: the dispatcher retries on its schedule, "
                     "compressed by the sandbox clock", {APPROVED: 1}, True,
          "an event delivered again after your 200 was lost must not be applied again: deduplicate on the event"),
)
"""Every case of the run, in the order it plays them: name, what is delivered, what must have been applied."""


@dataclass(frozen=True)
class _Played:
    answers: list[Optional[int]]
    """Every delivery's answer (``None``: no answer), in order."""
    finals: list[Optional[int]]
    """The last answer of each chain of retries of a genuine delivery (the service stops at a 200)."""


class _LosingSender:
    """The dispatcher's sender: delivers over HTTP, and for the transfers named in ``lose`` reports the endpoint's
    answer lost (an OSError after the endpoint answered) that many times, so the dispatcher retries."""

    def __init__(self, timeout: float) -> None:
        self._http = HttpSender(timeout)
        self.lose: dict[str, int] = {}
        self.answers: dict[str, list[Optional[int]]] = {}
        self.lock = threading.Lock()

    def __call__(self, url: str, headers: Mapping[str, str], body: bytes) -> Answer:
        token = str(json.loads(body).get("token", ""))
        answer: Optional[Answer] = None
        try:
            answer = self._http(url, headers, body)
        finally:
            with self.lock:
                self.answers.setdefault(token, []).append(None if answer is None else answer.status)
        with self.lock:
            if answer.status == 200 and self.lose.get(token, 0) > 0:
                self.lose[token] -= 1
                raise OSError("the endpoint's 200 was lost on the way back (conformance case 'retried')")
        return answer


class _Run:
    def __init__(self, webhook_url: str, check: Check, config: SandboxConfig, check_delay: float) -> None:
        self.url = webhook_url
        self.check = check
        self.check_delay = check_delay
        self.run_id = secrets.token_hex(4)
        self.sender = _LosingSender(config.webhook_timeout)
        self.live = LiveSandbox(config, start=time.time() - _LATE_BY_DAYS * 86400, sender=self.sender)
        self.http = HttpSender(config.webhook_timeout)

    # --- transfers and their events
    def order(self, case: _Case) -> ConformanceOrder:
        order_id = f"conformance-{self.run_id}-{case.name}"
        transfers = self.live.transfers
        token = transfers.create_token(TransferTokenRequest.mexico(
            amount=_AMOUNT, document_number="123456789", email="conformance@example.com",
            payment_description=order_id)).token
        init = transfers.init(TransferInitRequest(token=token, amount=_AMOUNT, metadata={"order": order_id}))
        assert init.transaction_reference is not None  # the sandbox's Mexico answer carries it
        return ConformanceOrder(order_id, token, init.transaction_reference)

    def settle(self, case: _Case, order: ConformanceOrder) -> None:
        if case.status == DECLINED:
            self.live.decline(order.token)
        else:
            self.live.pay(order.token, "approved")

    def take_over(self, order: ConformanceOrder) -> bytes:
        """The transfer's webhook as the sandbox queued it, marked sent so that its dispatcher leaves it alone."""
        (hook,) = self.live.webhooks(order.token)
        with self.live.sandbox.store.write() as tx:
            tx.delivered(hook.id, self.live.now())
        return hook.raw

    def older_event(self, order: ConformanceOrder) -> bytes:
        with self.live.sandbox.store.read() as tx:
            transfer = tx.transfer(order.token)
        assert transfer is not None
        return dumps(event_body(transfer, SandboxStatus.INITIALIZED)).encode("utf-8")

    # --- deliveries
    def headers(self, body: bytes, *, sent_at: Optional[float] = None) -> dict[str, str]:
        sent = time.time() if sent_at is None else sent_at
        return signed_headers(self.live.config, str(int(sent * 1000)), body)

    def post(self, headers: Mapping[str, str], body: bytes) -> Optional[int]:
        try:
            return self.http(self.url, headers, body).status
        except OSError:
            return None

    def deliver(self, body: bytes, answers: list[Optional[int]],
                headers: Optional[Mapping[str, str]] = None) -> Optional[int]:
        """Deliver until the endpoint answers 200, as the service retries (a fresh id each time), at most
        MAX_DELIVERIES times; ``answers`` collects every status; returns the last."""
        status = self.post(headers or self.headers(body), body)
        answers.append(status)
        tries = 1
        while status != 200 and tries < MAX_DELIVERIES:
            time.sleep(_RETRY_PAUSE)
            status = self.post(self.headers(body), body)
            answers.append(status)
            tries += 1
        return status

    def abandon(self, body: bytes) -> None:
        """Send a delivery and leave without its answer (the service's 5 s are over)."""
        parts = urlsplit(self.url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = kind(parts.hostname or "", parts.port, timeout=_SERVICE_TIMEOUT)
        try:
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            connection.request("POST", target, body=body, headers=self.headers(body))
        except OSError:
            pass
        finally:
            connection.close()

    def through_dispatcher(self, order: ConformanceOrder, case: _Case, lost: int) -> _Played:
        """The sandbox delivers it itself; each lost answer is retried once the sandbox clock reaches the retry."""
        self.sender.lose[order.token] = lost
        self.live.webhook_url = self.url
        try:
            self.settle(case, order)
            deadline = time.monotonic() + MAX_DELIVERIES * (_SERVICE_TIMEOUT + 1)
            while time.monotonic() < deadline:
                (hook,) = self.live.webhooks(order.token)
                if hook.delivered or len(hook.attempts) >= MAX_DELIVERIES:
                    break
                if hook.attempts and hook.attempts[-1].status != 200:
                    self.live.advance(seconds=self.live.config.webhook_backoff_max)  # the next retry is due now
                time.sleep(0.01)
        finally:
            self.live.webhook_url = None
        (hook,) = self.live.webhooks(order.token)
        with self.sender.lock:
            answers = list(self.sender.answers.get(order.token, []))
        return _Played(answers, [200 if hook.delivered else (answers[-1] if answers else None)])

    # --- the cases
    def play(self, case: _Case, order: ConformanceOrder) -> _Played:
        answers: list[Optional[int]] = []
        finals: list[Optional[int]] = []
        if case.name in ("genuine", "genuine_declined"):
            return self.through_dispatcher(order, case, lost=0)
        if case.name == "retried":
            return self.through_dispatcher(order, case, lost=_LOST_ANSWERS)
        self.settle(case, order)
        body = self.take_over(order)
        if case.name in ("redelivered", "late"):
            for _ in range(2 if case.name == "redelivered" else 1):
                finals.append(self.deliver(body, answers))
        elif case.name == "concurrent":
            twins = self.headers(body)  # the same instant: the same id
            start = threading.Barrier(2)
            lanes: list[list[Optional[int]]] = [[], []]

            def lane(number: int) -> None:
                start.wait()
                finals.append(self.deliver(body, lanes[number], twins))

            threads = [threading.Thread(target=lane, args=(number,)) for number in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            answers = lanes[0] + lanes[1]
        elif case.name == "final_then_older":
            finals.append(self.deliver(body, answers))
            finals.append(self.deliver(self.older_event(order), answers))
        elif case.name == "stale_id":
            answers.append(self.post(self.headers(body, sent_at=time.time() - _STALE_BY), body))
        elif case.name == "forged_signature":
            headers = self.headers(body)
            headers[_HEADERS.signature] = body_signature("not-" + self.live.config.webhook_secret, body,
                                                         headers[_HEADERS.webhook_id])
            answers.append(self.post(headers, body))
        elif case.name == "wrong_key":
            headers = self.headers(body)
            headers[_HEADERS.merchant_id] = "another-merchants-public-key"
            answers.append(self.post(headers, body))
        elif case.name == "oversize":
            padded = json.loads(body)
            padded["metadata"] = {**padded.get("metadata", {}), "note": "x" * _OVERSIZE_BYTES}
            large = dumps(padded).encode("utf-8")
            answers.append(self.post(self.headers(large), large))
        elif case.name == "slow":
            self.abandon(body)
            finals.append(self.deliver(body, answers))
        else:  # pragma: no cover (every case of CASES is played above)
            raise AssertionError(case.name)
        return _Played(answers, finals)

    def judge(self, case: _Case, played: _Played, applied: Mapping[str, int]) -> CaseResult:
        wrong = {status: applied.get(status, 0) for status, times in case.expected.items()
                 if applied.get(status, 0) != times}
        answered = played.answers
        not_200 = case.must_answer_200 and (not played.finals or any(final != 200 for final in played.finals))
        passed = not wrong and not not_200
        expected = ", ".join(f"{status} {times}x" for status, times in case.expected.items())
        if case.must_answer_200:
            expected += ", answered 200"
        shown = ", ".join(f"{status} {applied.get(status, 0)}x" for status in case.expected)
        observed = f"{shown}; answers {', '.join('none' if status is None else str(status) for status in answered)}"
        fix = ""
        if not passed:
            fix = case.fix
            if not wrong and not_200:
                fix = "answer 200 once the event is handled: any other answer (or none within 5 s) is retried"
        return CaseResult(case.name, case.title, expected, observed, passed, fix, tuple(answered), dict(applied))

    def counts(self, order: ConformanceOrder) -> dict[str, int]:
        try:
            counts = self.check(order)
        except ConformanceError:
            raise
        except Exception as exc:
            raise ConformanceError(f"the check raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(counts, Mapping):
            raise ConformanceError("the check must return a mapping of status -> how many times it was applied")
        result: dict[str, int] = {}
        for status in STATUSES:
            value = counts.get(status, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConformanceError(f"the check's count for {status} must be a whole number >= 0")
            result[status] = value
        return result

    def run(self, cases: Sequence[_Case]) -> ConformanceReport:
        try:
            late = next((case for case in cases if case.name == "late"), None)
            orders: dict[str, ConformanceOrder] = {}
            if late is not None:  # created while the sandbox clock is two days behind: its created is old
                orders[late.name] = self.order(late)
            self.live.advance(days=_LATE_BY_DAYS)
            played: list[tuple[_Case, ConformanceOrder, _Played]] = []
            for case in cases:
                order = orders.get(case.name) or self.order(case)
                played.append((case, order, self.play(case, order)))
            if self.check_delay:
                time.sleep(self.check_delay)
            return ConformanceReport(self.url, tuple(self.judge(case, outcome, self.counts(order))
                                                     for case, order, outcome in played))
        finally:
            self.live.close()


def run_conformance(webhook_url: str, check: Union[Check, str], *, config: Optional[SandboxConfig] = None,
                    cases: Optional[Sequence[str]] = None, check_delay: float = 0.0) -> ConformanceReport:
    """Deliver each case's webhook to ``webhook_url`` and judge your endpoint by ``check`` (a function, or the URL
    of an :class:`HttpCheck`). ``config`` is the sandbox's (the webhook secret and public key it signs with:
    the documented defaults unless given); ``cases`` names some of :data:`CASES` (default: all); ``check_delay``
    waits that many seconds before asking the check (an endpoint that applies events from a queue).

    Raises :class:`ConformanceError` when the run cannot be made, ConfigurationError for a bad argument."""
    check_webhook_url(webhook_url)
    known = {case.name: case for case in CASES}
    chosen = list(known.values()) if cases is None else [known[name] for name in cases if name in known]
    unknown = sorted(set(cases or ()) - known.keys())
    if unknown:
        raise ConfigurationError(f"no conformance case {', '.join(unknown)}: the cases are {', '.join(known)}")
    checker: Check = HttpCheck(check) if isinstance(check, str) else check
    # The run delivers (or points the dispatcher) itself, and settles each transfer when its case says: the
    # configuration's webhook URL, settlement and delivery chaos are its own cases' business.
    sandbox_config = replace(config if config is not None else SandboxConfig(), webhook_url=None, settle_after=None,
                             webhook_chaos=())
    return _Run(webhook_url, checker, sandbox_config, check_delay).run(chosen)
