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
from collections.abc import Sequence
from typing import Any, Optional

from .ask import AskError, ask, not_a_sandbox, printable
from .certification import VERDICTS
from .cli_parser import warn_secret_on_command_line
from .config import SandboxConfig

__all__ = ["fetch_verdicts", "main"]

_PATH = "/sandbox/v1/certification"
_KEY_VARIABLE = "PASARELA_SANDBOX_PRIVATE_KEY"


def _checked(answer: Any) -> list[dict[str, Any]]:
    rules = answer.get("rules") if isinstance(answer, dict) else None
    if not isinstance(rules, list) or not all(
            isinstance(rule, dict) and isinstance(rule.get("rule"), int) and rule.get("verdict") in VERDICTS
            and isinstance(rule.get("evidence", []), list) for rule in rules):
        raise AskError("the answer is not the sandbox's certification verdicts")
    return rules


def fetch_verdicts(url: str, private_key: str, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The ``rules`` of ``GET <url>/sandbox/v1/certification``."""
    answer = ask(url, _PATH, private_key, what="its certification verdicts", timeout=timeout)
    try:
        return _checked(answer)
    except AskError:
        raise not_a_sandbox(url, timeout, "answered something other than its certification verdicts") from None


def _table(rules: Sequence[dict[str, Any]]) -> str:
    lines = [f"{'rule':<5} {'verdict':<15} summary"]
    for rule in rules:
        lines.append(f"{rule['rule']:<5} {rule['verdict']:<15} {printable(rule.get('summary', ''))}")
        for part in rule.get("parts", ()):
            if isinstance(part, dict):
                lines.append(f"{'':<5} {'':<15} {printable(part.get('part'))}: {printable(part.get('verdict'))}"
                             f" ({printable(part.get('summary', ''))})")
        if rule.get("evidence"):
            lines.append(f"{'':<5} {'':<15} evidence: {', '.join(printable(item) for item in rule['evidence'])}")
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
        warn_secret_on_command_line(prog, "--private-key", _KEY_VARIABLE)
    key = args.private_key or os.environ.get(_KEY_VARIABLE) or SandboxConfig().private_key
    try:
        rules = fetch_verdicts(args.url, key)
    except AskError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    if args.output == "json":
        json.dump({"rules": rules}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(_table(rules))
    return 1 if any(rule["verdict"] == "fail" for rule in rules) else 0
