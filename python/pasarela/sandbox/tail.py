"""``pasarela sandbox tail --url URL``: follow a running sandbox, one line per request and per webhook attempt, as
``stripe logs tail`` and ``stripe listen`` do for theirs.

    12:00:01.204  POST /transfer/v1/init 201 3.1 ms key=private
    12:00:01.219  webhook approvedTransaction 5d0c...e1 -> http://127.0.0.1:9000/hooks 200 4.0 ms {"status":"received"}
    12:00:01.230  webhook declinedTransaction 77aa...03 -> http://127.0.0.1:9000/hooks 401 2.2 ms {"status":"invalid
                  signature"} retry at 12:00:02.712

It polls ``GET /sandbox/v1/feed`` (the private key from ``$PASARELA_SANDBOX_PRIVATE_KEY``, else ``--private-key``
with a warning, else the documented one), from now on (``--since-start``: from the first record the sandbox still
holds). Filters: ``--kind`` (api, terminal, page, cdn, webhook; repeat), ``--method``, ``--status`` (``404`` or a
class ``4xx``), ``--path`` (a prefix), ``--token``. Colour only on a terminal (and never with ``NO_COLOR``);
``--output json`` writes one JSON object a line. Every value from the sandbox is printed as one line of plain
text (no terminal escape of a receiver's answer gets through). Ctrl-C ends it (status 130); a sandbox that cannot
be asked is one line on stderr and status 2. Only the standard library.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, Optional, TextIO

from .ask import AskError, ask, printable
from .cli_parser import OneLineParser, warn_secret_on_command_line
from .config import SandboxConfig

__all__ = ["Filters", "build_parser", "line", "main"]

_KEY_VARIABLE = "PASARELA_SANDBOX_PRIVATE_KEY"
_KINDS = ("api", "terminal", "page", "cdn", "webhook")
_PAGE = 200
_ANSWER_SHOWN = 120
_COLOURS = {"2": "\033[32m", "3": "\033[36m", "4": "\033[33m", "5": "\033[31m", "-": "\033[31m"}
_RESET = "\033[0m"


def _status_filter(text: str) -> str:
    if not (len(text) == 3 and text[0] in "12345" and (text[1:].isdigit() or text[1:].lower() == "xx")):
        raise argparse.ArgumentTypeError("a status such as 404, or a class such as 4xx")
    return text.lower()


class Filters:
    """What to show: each given filter must match (``kinds`` any of them)."""

    def __init__(self, kinds: Sequence[str] = (), method: Optional[str] = None, status: Optional[str] = None,
                 path: Optional[str] = None, token: Optional[str] = None) -> None:
        self.kinds = set(kinds)
        self.method = method.upper() if method else None
        self.status = status
        self.path = path
        self.token = token

    def _status_matches(self, status: Optional[int]) -> bool:
        if self.status is None:
            return True
        text = "-" if status is None else str(status)
        return text == self.status if self.status[1:] != "xx" else text[:1] == self.status[0]

    def request(self, item: dict[str, Any]) -> bool:
        return ((not self.kinds or item.get("kind") in self.kinds) and self._status_matches(item.get("status"))
                and (self.method is None or item.get("method") == self.method)
                and (self.path is None or str(item.get("path", "")).startswith(self.path))
                and (self.token is None or item.get("token") == self.token))

    def attempt(self, item: dict[str, Any]) -> bool:
        return ((not self.kinds or "webhook" in self.kinds) and self._status_matches(item.get("status"))
                and self.method in (None, "POST") and self.path is None
                and (self.token is None or item.get("token") == self.token))


def _clock(epoch_ms: object) -> str:
    if isinstance(epoch_ms, bool) or not isinstance(epoch_ms, int):
        return "??:??:??.???"
    return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def _painted(status: Optional[int], text: str, colour: bool) -> str:
    if not colour:
        return text
    return f"{_COLOURS.get('-' if status is None else str(status)[:1], '')}{text}{_RESET}"


def _short(event_id: object) -> str:
    text = printable(event_id)
    return text if len(text) <= 12 else f"{text[:6]}...{text[-4:]}"


def line(kind: str, item: dict[str, Any], *, colour: bool = False) -> str:
    """One line of text for a request (``kind`` "request") or a webhook attempt ("attempt") of the feed."""
    status = item.get("status")
    shown = _painted(status if isinstance(status, int) else None, "-" if status is None else printable(status),
                     colour)
    if kind == "request":
        text = (f"{_clock(item.get('at'))}  {printable(item.get('method'))} {printable(item.get('path'))} {shown} "
                f"{printable(item.get('ms'))} ms key={printable(item.get('key'))}")
        if item.get("verdict") is not None:
            text += f" verdict={printable(item['verdict'])}"
        return text
    text = (f"{_clock(item.get('at'))}  webhook {printable(item.get('eventStatus'))} {_short(item.get('event'))} -> "
            f"{printable(item.get('url'))} {shown} {printable(item.get('latencyMs'))} ms")
    answer = item.get("answer")
    if answer:
        answer_text = printable(answer)
        text += " " + (answer_text if len(answer_text) <= _ANSWER_SHOWN else answer_text[:_ANSWER_SHOWN] + "...")
    elif item.get("error"):
        text += f" ({printable(item['error'])})"
    if item.get("chaos"):
        text += f" chaos={printable(item['chaos'])}"
    if not item.get("delivered") and item.get("nextAttemptAt") is not None and status != 200:
        text += f" retry at {_clock(item['nextAttemptAt'])}"
    return text


def build_parser(prog: str) -> OneLineParser:
    parser = OneLineParser(prog=prog, description="Follow a running sandbox: a line for each request and each "
                                                  "webhook attempt.")
    add = parser.add_argument
    add("--url", default="http://127.0.0.1:8790", help="the sandbox's address (default http://127.0.0.1:8790)")
    add("--kind", action="append", choices=_KINDS, default=[], help="show these only (repeat): api, terminal, page, "
                                                                   "cdn, webhook (default all)")
    add("--method", help="requests of this method only (GET, POST, ...)")
    add("--status", type=_status_filter, metavar="STATUS", help="this status only: 404, or a class such as 4xx")
    add("--path", metavar="PREFIX", help="requests whose path starts with PREFIX only")
    add("--token", help="what concerns this transfer or card token only")
    add("--since-start", action="store_true", help="begin with what the sandbox still holds, not now")
    add("--interval", type=float, default=0.5, metavar="SECONDS", help="seconds between polls (default 0.5)")
    add("--count", type=int, metavar="N", help="stop after N lines (default: follow until Ctrl-C)")
    add("--output", choices=("text", "json"), default="text", help="text (default) or one JSON object a line")
    add("--private-key", help=f"default: ${_KEY_VARIABLE}, else the documented one")
    return parser


def _is_feed(feed: Any) -> bool:
    return (isinstance(feed, dict) and all(isinstance(feed.get(name), list) for name in ("requests", "attempts"))
            and all(isinstance(feed.get(name), int) for name in ("requestsCursor", "attemptsCursor")))


def _follow(args: Any, key: str, out: TextIO, colour: bool) -> int:
    filters = Filters(args.kind, args.method, args.status, args.path, args.token)
    cursors = {"requestsAfter": "0", "attemptsAfter": "0"} if args.since_start else {}
    shown = 0
    while True:
        query = "&".join(f"{name}={value}" for name, value in {**cursors, "limit": str(_PAGE)}.items())
        feed = ask(args.url, f"/sandbox/v1/feed?{query}", key, what="a feed")
        if not _is_feed(feed):
            raise AskError("the answer is not the sandbox's feed")
        cursors = {"requestsAfter": str(feed["requestsCursor"]), "attemptsAfter": str(feed["attemptsCursor"])}
        events = [("request", item) for item in feed["requests"] if isinstance(item, dict) and filters.request(item)]
        events += [("attempt", item) for item in feed["attempts"] if isinstance(item, dict) and filters.attempt(item)]
        events.sort(key=lambda event: (event[1].get("at") or 0, 0 if event[0] == "request" else 1))
        for kind, item in events:
            if args.output == "json":
                out.write(json.dumps({"type": "request" if kind == "request" else "webhook", **item}) + "\n")
            else:
                out.write(line(kind, item, colour=colour) + "\n")
            shown += 1
            if args.count is not None and shown >= args.count:
                out.flush()
                return 0
        out.flush()
        if len(feed["requests"]) < _PAGE and len(feed["attempts"]) < _PAGE:
            time.sleep(args.interval)


def main(argv: Optional[Sequence[str]] = None, *, prog: str = "pasarela sandbox tail") -> int:
    args = build_parser(prog).parse_args(argv)
    if not 0.05 <= args.interval <= 60 or (args.count is not None and args.count < 1):
        print(f"{prog}: error: --interval takes 0.05 to 60 seconds, --count a positive number (see --help)",
              file=sys.stderr)
        return 2
    if args.private_key is not None:
        warn_secret_on_command_line(prog, "--private-key", _KEY_VARIABLE)
    key = args.private_key or os.environ.get(_KEY_VARIABLE) or SandboxConfig().private_key
    colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR") and args.output == "text"
    try:
        return _follow(args, key, sys.stdout, colour)
    except AskError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
