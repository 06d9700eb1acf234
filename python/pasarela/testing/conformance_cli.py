"""``pasarela sandbox conformance --webhook-url URL --check-url URL``: the receiver conformance run
(:mod:`.conformance`) from the command line, for a merchant's CI.

It starts a sandbox of its own, delivers each case's webhook to ``--webhook-url`` signed with the webhook secret
(``$PASARELA_SANDBOX_WEBHOOK_SECRET``, else ``--webhook-secret`` with a warning, else the documented default) and
``--public-key``, asks ``--check-url`` how many times each order's events were applied, and prints the table (or
``--output json``). Exit status 0 when every case passes, 1 when one fails, 2 when the run cannot be made (an option,
the endpoint or the check unreachable); an error is one line on stderr.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Optional

from ..errors import ConfigurationError
from ..sandbox.cli_parser import OneLineParser, warn_secret_on_command_line
from ..sandbox.config import SandboxConfig
from .conformance import CASES, ConformanceError, run_conformance

__all__ = ["build_parser", "main"]

_SECRET_VARIABLE = "PASARELA_SANDBOX_WEBHOOK_SECRET"  # noqa: S105 (its name, not its value)
_DEFAULTS = SandboxConfig()


def build_parser(prog: str) -> OneLineParser:
    parser = OneLineParser(prog=prog, description="Deliver transfer webhooks to your endpoint the hostile ways the "
                                                  "service does, and check each was applied exactly once (forged "
                                                  "ones never); exit 1 when a case fails.")
    add = parser.add_argument
    add("--webhook-url", required=True, help="your webhook endpoint, e.g. http://127.0.0.1:8000/hooks/transfers")
    add("--check-url", required=True,
        help="your check: GET URL?order=<id>&token=<token>&transactionReference=<ref> answers JSON counts per status, "
             'e.g. {"approvedTransaction": 1}')
    add("--case", action="append", dest="cases", choices=[case.name for case in CASES], metavar="CASE",
        help=f"run this case only (repeat for several; default all): {', '.join(case.name for case in CASES)}")
    add("--public-key", default=_DEFAULTS.public_key,
        help=f"sent as X-Kushki-Key (default {_DEFAULTS.public_key})")
    add("--webhook-secret", help=f"the HMAC key of the signatures (default: ${_SECRET_VARIABLE}, else the documented "
                                 "one)")
    add("--check-delay", type=float, default=0.0, metavar="SECONDS",
        help="wait this long before asking the check (an endpoint that applies events from a queue; default 0)")
    add("--output", choices=("text", "json"), default="text", help="a table (default) or JSON")
    return parser


def main(argv: Optional[Sequence[str]] = None, *, prog: str = "pasarela sandbox conformance") -> int:
    args = build_parser(prog).parse_args(argv)
    if args.webhook_secret is not None:
        warn_secret_on_command_line(prog, "--webhook-secret", _SECRET_VARIABLE)
    secret = args.webhook_secret or os.environ.get(_SECRET_VARIABLE) or _DEFAULTS.webhook_secret
    try:
        config = SandboxConfig(public_key=args.public_key, webhook_secret=secret)
        report = run_conformance(args.webhook_url, args.check_url, config=config, cases=args.cases,
                                 check_delay=args.check_delay)
    except (ConfigurationError, ConformanceError, ValueError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    if args.output == "json":
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(report.table())
    return 0 if report.passed else 1
