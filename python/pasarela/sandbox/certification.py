"""Certification readiness: a verdict per rule of spec section 8's list, from what the sandbox observed.

Each rule gets ``pass``, ``fail``, ``not_observed`` (no traffic that could show it yet) or ``check_yourself``
(rules only the merchant's own front end can show: 2, 3, 5, 7), a one-sentence summary, and the evidence:
``request:<id>`` (the access log), ``delivery:<id>`` (a webhook delivery attempt) or ``transfer:<token>``.

- 1, amounts: every token and init request's amount adds up by :class:`pasarela.transfers.Amount`'s rules and
  each init repeats its token's total (the sandbox refuses either with a 400 naming ``amount...``: each such
  refusal fails the rule); passes once an init was accepted with none refused.
- 4, webhooks answered 200: the last delivery attempt of every webhook was answered 200 (a redelivery answered
  200 mends an earlier failure); a redirect, never followed, is named with what to change.
- 6, no new transfer for a payer while one is initialized: a transfer of the same payer (documentNumber, else
  e-mail) started while an earlier one was neither final, cancelled nor expired fails it; it passes once a payer
  started a second transfer after the first ended.
- 8, every required variable sent: the fields spec 2.5 lists for the flow (it marks optional only the Colombia
  QR's), on every token request, including those the sandbox accepts without them; a request the sandbox
  refused because a required field was missing fails it too.
- 9, Colombia QR: ``flow`` BRE-B/QR in the token request (a refused ``flow`` fails), the QR shown from the
  ``qr`` field (check it yourself), the cancel endpoint called at least once on a QR transfer; each part is
  given in ``parts``.

Refusals are read from the requests the access log keeps (its newest :data:`~.store.MAX_RECORDED_REQUESTS`);
what was accepted (inits, token requests, transfers) from the sandbox's state, every one since its database
began, so that the rules' counts agree with one another. The reads are narrow (no headers nor bodies, one
statement for every transfer's end): at 5,000 records the page had taken 0.3-0.8 s, most of it decoding every
JSON column of every record and one history query per transfer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from .store import LastDelivery, LoggedCall, TransferLife, TransferToken, Tx

__all__ = ["CHECK_YOURSELF", "RULES", "VERDICTS", "Verdict", "certification"]

PASS, FAIL, NOT_OBSERVED, CHECK_YOURSELF = "pass", "fail", "not_observed", "check_yourself"
VERDICTS = (PASS, FAIL, NOT_OBSERVED, CHECK_YOURSELF)
RULES = {
    1: "Tax and total amount calculations are correct.",
    2: "Screen messages match the service's responses.",
    3: "All responses are saved and logged.",
    4: "On webhook receipt, respond HTTP 200 and inform the customer.",
    5: "The pay button is disabled after the first click.",
    6: "After an Initialized result, no new transaction until approved or rejected.",
    7: "The service logo is visible to the customer.",
    8: "All required variables of the API reference are sent.",
    9: "Colombia QR: flow.processorName BRE-B and flow.type QR sent in the token request; QR shown from the qr "
       "field; the cancel endpoint implemented.",
}
_YOURSELF = {
    2: "Check that each message your pages show the payer says what the service answered (the access log has "
       "every answer).",
    3: "Check that your back end saves and logs every answer of the service: token, init, status and webhooks.",
    5: "Check that your pay button is disabled after the first click, so that a double click starts one transfer.",
    7: "Check that your checkout page shows the service's logo to the payer.",
}
_REQUIRED = {
    "clabe": ("userType", "documentType", "documentNumber", "paymentDescription", "email"),
    "bank": ("userType", "documentType", "documentNumber", "paymentDescription", "email", "callbackUrl"),
    "wallet": ("userType", "documentType", "documentNumber", "paymentDescription", "email", "callbackUrl"),
    "pse": ("userType", "documentType", "documentNumber", "paymentDescription", "email", "callbackUrl", "bankId"),
    "qr": ("flow.processorName", "flow.type"),
}
"""Spec 2.5's fields per flow, beyond currency and amount (which no flow goes without): it marks optional only
those of the Colombia QR flow; email is "needed in Mexico" and callbackUrl returns the payer in Ecuador and PSE."""
_TOKENS, _INIT, _CANCEL = "/transfer/v1/tokens", "/transfer/v1/init", "/transfer/v1/cancel/"


@dataclass(frozen=True)
class Verdict:
    rule: int
    verdict: str
    summary: str
    evidence: tuple[str, ...] = ()
    parts: tuple[Verdict, ...] = ()
    part: str = ""

    def to_json(self) -> dict[str, Any]:
        item: dict[str, Any] = {"rule": self.rule, "title": RULES[self.rule], "verdict": self.verdict,
                                "summary": self.summary, "evidence": list(self.evidence)}
        if self.part:
            item = {"part": self.part, "verdict": self.verdict, "summary": self.summary,
                    "evidence": list(self.evidence)}
        if self.parts:
            item["parts"] = [part.to_json() for part in self.parts]
        return item


def _request_ids(records: Iterable[LoggedCall]) -> tuple[str, ...]:
    return tuple(f"request:{record.id}" for record in records)


def _refused_field(record: LoggedCall) -> str:
    """The field a 400 named (``""`` for any other answer)."""
    return "" if record.refusal is None else str(record.refusal.get("field") or "")


def _refused_for_absence(record: LoggedCall) -> bool:
    """A 400 saying its field is missing: ``<field>: is required`` (the schema's words), with or without why
    (``email: is required in Mexico: ...``, the client's rules)."""
    field = _refused_field(record)
    return bool(field) and str((record.refusal or {}).get("message", "")).startswith(f"{field}: is required")


def _posts(records: Sequence[LoggedCall], path: str) -> list[LoggedCall]:
    return [record for record in records if record.method == "POST" and record.path == path]


def _amounts(records: Sequence[LoggedCall], transfers: Sequence[TransferLife]) -> Verdict:
    """Refusals are known from the access log only; the inits accepted are the transfers (each one's, the log
    kept or not), counted as the other rules count theirs."""
    sent = _posts(records, _TOKENS) + _posts(records, _INIT)
    wrong = [record for record in sent if _refused_field(record).startswith("amount")]
    if wrong:
        return Verdict(1, FAIL, f"{len(wrong)} token or init request(s) refused for their amount: the figures do not "
                                "add up, or the init amount differs from the token's", _request_ids(wrong))
    if not transfers:
        return Verdict(1, NOT_OBSERVED, "no transfer init accepted yet")
    accepted = [record for record in _posts(records, _INIT) if record.status == 201]
    return Verdict(1, PASS, f"{len(transfers)} init(s) accepted, each with its token's total; none refused for its "
                            "amount", _request_ids(accepted[-3:]))


def _webhooks(last_deliveries: Sequence[LastDelivery], webhook_url: Optional[str]) -> Verdict:
    last = {delivery.event_id: delivery for delivery in last_deliveries}
    if not last:
        why = "no webhook delivered yet" if webhook_url else "no webhook URL configured (--webhook-url)"
        return Verdict(4, NOT_OBSERVED, why)
    failing = [attempt for attempt in last.values() if attempt.status != 200]
    if failing:
        summary = f"{len(failing)} of {len(last)} webhook(s) last answered other than 200 (redeliver them once the " \
                  "receiver is fixed)"
        redirected = [attempt for attempt in failing if attempt.status is not None and 300 <= attempt.status < 400]
        if redirected:  # the attempt's error says where it pointed and what to change
            summary += f"; {len(redirected)} of them with {redirected[-1].error}"
        return Verdict(4, FAIL, summary, tuple(f"delivery:{attempt.id}" for attempt in failing))
    return Verdict(4, PASS, f"all {len(last)} webhook(s) answered 200",
                   tuple(f"delivery:{attempt.id}" for attempt in list(last.values())[-3:]))


def _payer(transfer: TransferLife, tokens: Mapping[str, TransferToken]) -> Optional[str]:
    if transfer.document_number:
        return f"document {transfer.document_number}"
    token = tokens.get(transfer.token)
    email = token.request.get("email") if token is not None else None
    return f"e-mail {email}" if isinstance(email, str) and email else None


def _one_at_a_time(transfers: Sequence[TransferLife], tokens: Mapping[str, TransferToken]) -> Verdict:
    by_payer: dict[str, list[TransferLife]] = defaultdict(list)
    for transfer in transfers:
        payer = _payer(transfer, tokens)
        if payer is not None:
            by_payer[payer].append(transfer)
    overlapping: list[str] = []
    followed = 0
    for started in by_payer.values():
        for earlier, later in zip(started, started[1:]):
            followed += 1
            if earlier.ended_at is None or earlier.ended_at > later.created:
                overlapping.append(f"transfer:{later.token}")
    if overlapping:
        return Verdict(6, FAIL, f"{len(overlapping)} transfer(s) started for a payer whose previous transfer was "
                                "still initialized", tuple(overlapping))
    if not followed:
        return Verdict(6, NOT_OBSERVED, "no payer started a second transfer yet")
    return Verdict(6, PASS, f"{followed} later transfer(s) of a payer, each after the previous one had ended")


def _missing(request: Mapping[str, Any], names: Sequence[str]) -> list[str]:
    """The fields of ``names`` (``flow.type``: a member's member) that ``request``, a stored token request as JSON
    read it (dicts: checked as such, an ABC check costs more than the rest), lacks or has empty."""
    missing = []
    for name in names:
        value: Any = request
        for part in name.split("."):
            value = value.get(part) if type(value) is dict else None
        if value is None or value == "":
            missing.append(name)
    return missing


def _variant(request: Mapping[str, Any], transfers: Mapping[str, TransferLife], token: str) -> Optional[str]:
    transfer = transfers.get(token)
    if transfer is not None:
        return transfer.variant
    if request.get("currency") == "COP":
        return "qr" if request.get("flow") is not None else "pse"
    # Ecuador's variant is decided at init by the processor; bank and wallet require the same fields.
    return {"MXN": "clabe", "USD": "bank"}.get(str(request.get("currency")))


def _required(records: Sequence[LoggedCall], tokens: Sequence[TransferToken],
              transfers: Mapping[str, TransferLife]) -> Verdict:
    by_token = {record.token: record for record in _posts(records, _TOKENS) if record.token}
    lacking: list[str] = []
    names: set[str] = set()
    for token in tokens:
        variant = _variant(token.request, transfers, token.token)
        if variant is None:
            continue
        missing = _missing(token.request, _REQUIRED[variant])
        if missing:
            names.update(missing)
            record = by_token.get(token.token)
            lacking.append(f"request:{record.id}" if record is not None else f"transfer:{token.token}")
    refused = [record for record in _posts(records, _TOKENS) + _posts(records, _INIT) if _refused_for_absence(record)]
    for record in refused:
        names.add(_refused_field(record))
    evidence = (*lacking, *_request_ids(refused))
    if evidence:
        return Verdict(8, FAIL, f"{len(evidence)} request(s) without {', '.join(sorted(names))}", evidence)
    if not tokens:
        return Verdict(8, NOT_OBSERVED, "no transfer token request yet")
    return Verdict(8, PASS, f"{len(tokens)} token request(s), each with every field its flow requires")


def _colombia_qr(records: Sequence[LoggedCall], tokens: Sequence[TransferToken]) -> Verdict:
    qr_tokens = {token.token for token in tokens if token.request.get("flow") is not None}
    bad_flow = [record for record in _posts(records, _TOKENS) if _refused_field(record).startswith("flow")]
    if bad_flow:
        flow = Verdict(9, FAIL, "token request(s) refused for their flow (processorName BRE-B, type QR)",
                       _request_ids(bad_flow), part="flow")
    elif qr_tokens:
        flow = Verdict(9, PASS, f"{len(qr_tokens)} QR token request(s) with flow BRE-B / QR", part="flow")
    else:
        flow = Verdict(9, NOT_OBSERVED, "no Colombia QR token request yet", part="flow")
    shown = Verdict(9, CHECK_YOURSELF, "Check that the QR your page shows is the image of the init answer's qr field "
                                       "as it came, not one drawn from other data.", part="qr")
    cancels = [record for record in records if record.method == "PATCH" and record.path.startswith(_CANCEL)
               and record.token in qr_tokens and record.status in (204, 400)]
    if cancels:
        cancel = Verdict(9, PASS, f"the cancel endpoint was called on {len(cancels)} QR transfer(s)",
                         _request_ids(cancels[-3:]), part="cancel")
    else:
        cancel = Verdict(9, NOT_OBSERVED, "the cancel endpoint was not called on a QR transfer yet", part="cancel")
    parts = (flow, shown, cancel)
    verdicts = {part.verdict for part in parts}
    overall = FAIL if FAIL in verdicts else NOT_OBSERVED if NOT_OBSERVED in verdicts else PASS
    summary = "; ".join(f"{part.part}: {part.verdict}" for part in parts)
    return Verdict(9, overall, summary, tuple(item for part in parts for item in part.evidence), parts)


def certification(tx: Tx, webhook_url: Optional[str]) -> list[Verdict]:
    """The verdict of every rule, 1 to 9, from what ``tx`` holds."""
    records = tx.logged_calls("api")
    tokens = tx.transfer_tokens()
    transfers = tx.transfer_lives()
    by_token = {transfer.token: transfer for transfer in transfers}
    verdicts = [
        _amounts(records, transfers),
        _webhooks(tx.last_deliveries(), webhook_url),
        _one_at_a_time(transfers, {token.token: token for token in tokens}),
        _required(records, tokens, by_token),
        _colombia_qr(records, tokens),
        *(Verdict(rule, CHECK_YOURSELF, sentence) for rule, sentence in _YOURSELF.items()),
    ]
    return sorted(verdicts, key=lambda verdict: verdict.rule)
