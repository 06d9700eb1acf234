"""``pasarela sandbox certify --url URL [--output json]``: a running sandbox's certification verdicts, for CI.

Asks ``GET /sandbox/v1/certification`` (the private key from ``--private-key``, else
``$PASARELA_SANDBOX_PRIVATE_KEY``, else the documented default) and prints the table, or the JSON answer with
``--output json``. Exit status 1 when any rule fails, 0 otherwise (``not_observed`` and ``check_yourself`` do not
fail), 2 when the sandbox cannot be asked (unreachable, key refused, a redirect, an answer that is not the
verdicts). A redirect is refused, never followed: the request carries the private key, which must go to the
address given and nowhere else (urllib would carry it to any host a ``Location`` names). Only the standard
library: a merchant's CI needs no more than ``pip install pasarela`` to run it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any, Optional
from urllib.parse import urlsplit

from .certification import VERDICTS
from .config import SandboxConfig
from .jsontext import loads

__all__ = ["fetch_verdicts", "main"]

_PATH = "/sandbox/v1/certification"
_MAX_ANSWER_BYTES = 1 << 20
_KEY_VARIABLE = "PASARELA_SANDBOX_PRIVATE_KEY"


class CertifyError(Exception):
    """The verdicts could not be had; the message says why (never the key)."""


class _Redirected(urllib.error.URLError):
    def __init__(self, status: int, location: str) -> None:
        super().__init__(f"HTTP {status} redirect")
        self.status = status
        self.location = location


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """urllib's redirect handler, refusing instead of following (and of copying the headers to the next host)."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> Optional[urllib.request.Request]:
        raise _Redirected(code, newurl)

    # CPython 3.10's handler has no 308 (3.11 added it): without this a 308 surfaced as a plain HTTP error.
    http_error_308 = urllib.request.HTTPRedirectHandler.http_error_302


_OPENER = urllib.request.build_opener(_RefuseRedirects)


def _printable(value: object) -> str:
    """A value from the answer as one line of plain text: no terminal escape or line break gets through."""
    return "".join(ch if ch.isprintable() else "?" for ch in str(value))


def _checked(answer: Any) -> list[dict[str, Any]]:
    rules = answer.get("rules") if isinstance(answer, dict) else None
    if not isinstance(rules, list) or not all(
            isinstance(rule, dict) and isinstance(rule.get("rule"), int) and rule.get("verdict") in VERDICTS
            and isinstance(rule.get("evidence", []), list) for rule in rules):
        raise CertifyError("the answer is not the sandbox's certification verdicts")
    return rules


def fetch_verdicts(url: str, private_key: str, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The ``rules`` of ``GET <url>/sandbox/v1/certification``."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise CertifyError("--url must be the sandbox's http(s) address, e.g. http://127.0.0.1:8790")
    request = urllib.request.Request(url.rstrip("/") + _PATH,  # noqa: S310 (http(s) only, checked above)
                                     headers={"Private-Merchant-Id": private_key})
    try:
        with _OPENER.open(request, timeout=timeout) as answer:
            text = answer.read(_MAX_ANSWER_BYTES + 1)
    except _Redirected as exc:
        where = _printable(exc.location)[:200]
        raise CertifyError(f"the address {url} answered HTTP {exc.status}, a redirect to {where}: not followed, so "
                           "that the private key goes nowhere else; give --url the sandbox's own address (the one "
                           "its banner printed)") from None
    except urllib.error.HTTPError as exc:
        refused = "the private key was refused (--private-key or $PASARELA_SANDBOX_PRIVATE_KEY)" \
            if exc.code == 401 else f"HTTP {exc.code}"
        raise CertifyError(f"the sandbox at {url} answered {refused}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason: object = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        raise CertifyError(f"cannot reach the sandbox at {url}: {_printable(reason)}") from None
    if len(text) > _MAX_ANSWER_BYTES:
        raise CertifyError("the answer is larger than a certification can be")
    try:
        return _checked(loads(text))
    except (ValueError, RecursionError):
        raise CertifyError("the answer is not JSON") from None


def _table(rules: Sequence[dict[str, Any]]) -> str:
    lines = [f"{'rule':<5} {'verdict':<15} summary"]
    for rule in rules:
        lines.append(f"{rule['rule']:<5} {rule['verdict']:<15} {_printable(rule.get('summary', ''))}")
        for part in rule.get("parts", ()):
            if isinstance(part, dict):
                lines.append(f"{'':<5} {'':<15} {_printable(part.get('part'))}: {_printable(part.get('verdict'))}"
                             f" ({_printable(part.get('summary', ''))})")
        if rule.get("evidence"):
            lines.append(f"{'':<5} {'':<15} evidence: {', '.join(_printable(item) for item in rule['evidence'])}")
    failed = sum(rule["verdict"] == "fail" for rule in rules)
    lines.append(f"{failed} rule(s) failing" if failed else "no rule failing")
    return "\n".join(lines)


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Print a running sandbox's certification verdicts "
                                                            "(spec section 8); exit 1 when a rule fails.")
    parser.add_argument("--url", required=True, help="the sandbox's address, e.g. http://127.0.0.1:8790")
    parser.add_argument("--output", choices=("text", "json"), default="text", help="a table (default) or JSON")
    parser.add_argument("--private-key", help=f"default: ${_KEY_VARIABLE}, else the documented one")
    return parser


def main(argv: Optional[Sequence[str]] = None, *, prog: str = "pasarela sandbox certify") -> int:
    args = build_parser(prog).parse_args(argv)
    if args.private_key is not None:
        print(f"{prog}: warning: --private-key on the command line is visible to other users of this machine "
              f"(ps, /proc); set ${_KEY_VARIABLE} instead", file=sys.stderr)
    key = args.private_key or os.environ.get(_KEY_VARIABLE) or SandboxConfig().private_key
    try:
        rules = fetch_verdicts(args.url, key)
    except CertifyError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    if args.output == "json":
        json.dump({"rules": rules}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(_table(rules))
    return 1 if any(rule["verdict"] == "fail" for rule in rules) else 0
