"""``pasarela sandbox`` / ``python -m pasarela.sandbox``: run the sandbox under uvicorn on 127.0.0.1.

Every option has a default, and the start-up banner prints each value in force, except the secrets
(private key, webhook secret, business code), of which it says only where they came from. Those
three can also come from the environment (command lines are visible to other users):
PASARELA_SANDBOX_PRIVATE_KEY, PASARELA_SANDBOX_WEBHOOK_SECRET, PASARELA_BUSINESS_CODE (the variable
``pasarela seal`` reads, so both agree), and PASARELA_TERMINAL_SERIAL for the serial.

SIGINT (Ctrl-C) and SIGTERM stop it gracefully (pending webhooks stay in the outbox for the next
start) and checkpoint the SQLite write-ahead log into the database file; SIGTERM, the way service managers
stop a process, exits with status 0, Ctrl-C with 130.

Every request gives one access-log line on stderr (``--access-log off`` for none). ``pasarela sandbox certify``
(:mod:`.certify`) asks a running sandbox for its certification verdicts.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sqlite3
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Optional, TextIO, TypeVar
from urllib.parse import urlsplit

from .._version import __version__
from ..errors import ConfigurationError
from .chaos import CHAOS_KINDS
from .cli_parser import OneLineParser, warn_secret_on_command_line
from .config import DEFAULT_SETTLE_AFTER, ECUADOR_PROCESSORS, SandboxConfig, origin_problem

__all__ = ["DEFAULT_DB", "DEFAULT_PORT", "build_parser", "main"]

HOST = "127.0.0.1"
DEFAULT_PORT = 8790
DEFAULT_DB = "pasarela-sandbox.sqlite3"
_DEFAULTS = SandboxConfig()
_Number = TypeVar("_Number", int, float)
_OPTION_FIELDS = frozenset({"public_key", "private_key", "webhook_secret", "business_code", "terminal_serial",
                            "merchant_name", "webhook_url", "public_url", "webhook_backoff", "webhook_backoff_max",
                            "timeout_delay"})
"""SandboxConfig's fields that the command line sets by the option of the same name (``--public-key``, ...)."""
_SECRETS = (
    ("private_key", "--private-key", "PASARELA_SANDBOX_PRIVATE_KEY"),
    ("webhook_secret", "--webhook-secret", "PASARELA_SANDBOX_WEBHOOK_SECRET"),
    ("business_code", "--business-code", "PASARELA_BUSINESS_CODE"),
)


def _settle_after(text: str) -> Optional[float]:
    if text == "never":
        return None
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number of seconds or 'never'") from None
    if not seconds >= 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError("expected a non-negative number of seconds or 'never'")
    return seconds


def _chaos_kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(kind.strip() for kind in text.split(",") if kind.strip())
    unknown = [kind for kind in kinds if kind not in CHAOS_KINDS]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown) or 'nothing'} is not a kind: give some of "
                                         f"{', '.join(CHAOS_KINDS)}, comma-separated")
    return kinds


def _number(text: str, parse: Callable[[str], _Number], accepted: Callable[[_Number], bool], problem: str) -> _Number:
    """``parse(text)`` when it parses and is ``accepted``; else argparse's refusal ``text: problem``."""
    try:
        value: Optional[_Number] = parse(text)
    except ValueError:
        value = None
    if value is None or not accepted(value):
        raise argparse.ArgumentTypeError(f"{text}: {problem}")
    return value


def _port(text: str) -> int:
    return _number(text, int, lambda port: 0 <= port <= 65535,
                   "a TCP port is a whole number from 0 to 65535 (0 picks a free one)")


def _origin(text: str) -> str:
    problem = origin_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{text}: {problem}")
    return text


def _url(text: str) -> str:
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (raises ValueError for a port that is not one)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text}: give an absolute http(s) URL, scheme and host included "
                                         "(http://...)")
    return text


def _seconds(text: str) -> float:
    return _number(text, float, lambda seconds: 0 <= seconds < float("inf"), "give a number of seconds, 0 or more")


def _positive_seconds(text: str) -> float:
    seconds = _seconds(text)
    if seconds == 0:
        raise argparse.ArgumentTypeError(f"{text}: give a number of seconds above 0")
    return seconds


def _in_options(exc: ConfigurationError) -> str:
    """A SandboxConfig error as the command line says it: the option in place of the field it starts with."""
    message = str(exc)
    field = message.split(" ", 1)[0].rstrip(":")
    return "--" + field.replace("_", "-") + message[len(field):] if field in _OPTION_FIELDS else message


DOCS_URL = "https://pasarela.github.io/pasarela/sandbox.html"
_EPILOG = f"""\
Once started, open http://127.0.0.1:PORT/ in a browser: the dashboard (transfers, charges, webhook
deliveries, terminal requests, the access log, certification readiness).
'{{prog}} certify --url URL' prints a running sandbox's certification verdicts (exit 1 when a rule fails).
'{{prog}} tail --url URL' follows a running sandbox: a line per request and per webhook attempt.
'{{prog}} conformance --webhook-url URL --check-url URL' proves your webhook endpoint (docs/testing.md).
The guide: {DOCS_URL} (docs/sandbox.md in the source distribution)."""


def build_parser(prog: str = "pasarela sandbox") -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=prog,
        description="A local, stateful simulator of the payment service on 127.0.0.1.",
        epilog=_EPILOG.format(prog=prog),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("--port", type=_port, default=DEFAULT_PORT, help=f"TCP port; 0 picks a free one (default {DEFAULT_PORT})")
    add("--db", default=DEFAULT_DB, help=f"SQLite file, or :memory: (default {DEFAULT_DB})")
    add("--public-key", default=_DEFAULTS.public_key, help=f"public merchant key (default {_DEFAULTS.public_key})")
    add("--private-key", help="private merchant key (default: $PASARELA_SANDBOX_PRIVATE_KEY, else the documented one)")
    add("--webhook-url", type=_url, help="where transfer webhooks are POSTed (default: none, they wait in the outbox)")
    add("--webhook-secret", help="HMAC key of the webhook signatures (default: $PASARELA_SANDBOX_WEBHOOK_SECRET, "
                                 "else the documented one)")
    add("--business-code", help="the terminal's business code (default: $PASARELA_BUSINESS_CODE, else the "
                                "documented one)")
    add("--terminal-serial", default=os.environ.get("PASARELA_TERMINAL_SERIAL", _DEFAULTS.terminal_serial),
        help=f"the terminal's serial (default: $PASARELA_TERMINAL_SERIAL, else {_DEFAULTS.terminal_serial})")
    add("--ecuador-processor", choices=ECUADOR_PROCESSORS, default=_DEFAULTS.ecuador_processor,
        help=f"Ecuador variant: bank redirect or wallet (default {_DEFAULTS.ecuador_processor})")
    add("--merchant-name", default=_DEFAULTS.merchant_name, help=f"default {_DEFAULTS.merchant_name!r}")
    add("--timeout-delay", type=_seconds, default=_DEFAULTS.timeout_delay,
        help=f"seconds the 13000 scenario leaves init unanswered (default {_DEFAULTS.timeout_delay:g})")
    add("--webhook-backoff", type=_positive_seconds, default=_DEFAULTS.webhook_backoff,
        help=f"seconds before the first webhook retry, doubled each time (default {_DEFAULTS.webhook_backoff:g})")
    add("--webhook-backoff-max", type=_positive_seconds, default=_DEFAULTS.webhook_backoff_max,
        help=f"longest wait between webhook retries (default {_DEFAULTS.webhook_backoff_max:g})")
    add("--settle-after", type=_settle_after, default=DEFAULT_SETTLE_AFTER, metavar="SECONDS|never",
        help=f"Mexico, Ecuador and Colombia PSE transfers the payer has not paid settle by themselves this long after "
             f"init, by the documentNumber rule (default {DEFAULT_SETTLE_AFTER:g}; never: only the payer page and "
             f"/sandbox/v1/payments complete them)")
    add("--webhook-chaos", type=_chaos_kinds, default=(), metavar="KINDS",
        help=f"deliver webhooks the hostile ways on purpose: some of {', '.join(CHAOS_KINDS)}, comma-separated "
             "(default none)")
    add("--webhook-chaos-rate", type=float, default=_DEFAULTS.webhook_chaos_rate, metavar="RATE",
        help=f"the share of events that get one of them (default {_DEFAULTS.webhook_chaos_rate:g})")
    add("--public-url", type=_url, help="the sandbox's address in the links it hands out (payer pages, QR contents); "
                             "default: the address it listens on")
    add("--cors-origin", action="append", dest="cors_origins", metavar="ORIGIN", type=_origin,
        help="an origin browsers may call the API from, scheme://host[:port] as browsers send it (e.g. "
             "http://localhost:3000); repeat for several (default: any)")
    add("--log-level", choices=("debug", "info", "warning", "error"), default="warning",
        help="default warning")
    add("--access-log", choices=("on", "off"), default="on",
        help="a line on stderr for every request: method, path, status, milliseconds, which key (default on)")
    add("--metrics", action="store_true",
        help="serve pasarela's OpenTelemetry metrics of this sandbox's traffic as Prometheus text at /metrics "
             "(needs pasarela[otel], opentelemetry-sdk and opentelemetry-exporter-prometheus)")
    parser.add_argument("--version", action="version", version=f"pasarela {__version__}")
    return parser


def _secret(args: argparse.Namespace, attribute: str, variable: str) -> tuple[str, str]:
    """The value and where it came from (for the banner, which never shows the value)."""
    given = getattr(args, attribute)
    if given is not None:
        return given, "given on the command line; not shown"
    if os.environ.get(variable):
        return os.environ[variable], f"from ${variable}; not shown"
    return str(getattr(_DEFAULTS, attribute)), "the documented default; not shown"


def _warn_about_secrets_given(args: argparse.Namespace, prog: str) -> None:
    """A secret on the command line is visible to every user of the machine (ps, /proc): say so, on stderr."""
    for attribute, option, variable in _SECRETS:
        if getattr(args, attribute) is not None:
            warn_secret_on_command_line(prog, option, variable)


def _config(args: argparse.Namespace) -> tuple[SandboxConfig, dict[str, str]]:
    secrets = {attribute: _secret(args, attribute, variable) for attribute, _, variable in _SECRETS}
    config = SandboxConfig(
        public_key=args.public_key,
        private_key=secrets["private_key"][0],
        webhook_secret=secrets["webhook_secret"][0],
        business_code=secrets["business_code"][0],
        webhook_url=args.webhook_url,
        terminal_serial=args.terminal_serial,
        ecuador_processor=args.ecuador_processor,
        merchant_name=args.merchant_name,
        timeout_delay=args.timeout_delay,
        webhook_backoff=args.webhook_backoff,
        webhook_backoff_max=args.webhook_backoff_max,
        settle_after=args.settle_after,
        public_url=args.public_url,
        cors_origins=tuple(args.cors_origins or ("*",)),
        webhook_chaos=args.webhook_chaos,
        webhook_chaos_rate=args.webhook_chaos_rate,
    )
    return config, {option: secrets[attribute][1] for attribute, option, _ in _SECRETS}


def _db_problem(db: str) -> Optional[str]:
    """What is wrong with ``--db`` before SQLite is asked (it would only say "unable to open database file")."""
    if db == ":memory:":
        return None
    path = Path(db)
    if path.is_dir():
        return f"--db {db} is a folder: give a file in it, e.g. --db {path / DEFAULT_DB}"
    folder = path.parent
    if not folder.is_dir():
        return f"--db {db}: the folder {folder} does not exist: create it, or give a file in an existing folder"
    return None


def _db_refused(db: str, exc: sqlite3.Error) -> str:
    if isinstance(exc, sqlite3.DatabaseError) and "not a database" in str(exc):
        return (f"--db {db} is not a SQLite database: give a new file name, or a database an earlier sandbox "
                "wrote")
    return f"--db {db} cannot be opened ({exc}): give a file this user can write, or :memory:"


def _banner(out: TextIO, args: argparse.Namespace, port: int, secrets: dict[str, str]) -> None:
    url = f"http://{HOST}:{port}"
    lines = [
        f"pasarela sandbox {__version__} listening on {url}",
        f"  Dashboard         {url}/sandbox/",
        f"  OpenAPI document  {url}/openapi.json",
        f"  CDN stand-ins     {url}/cdn/",
        f"  --port            {args.port}" + (f" (picked {port})" if args.port == 0 else ""),
        f"  --db              {args.db}",
        f"  --public-key      {args.public_key}",
        *(f"  {option:<17} ({source})" for option, source in secrets.items() if option == "--private-key"),
        f"  --webhook-url     {args.webhook_url or '(none: webhooks wait in the outbox)'}",
        *(f"  {option:<17} ({source})" for option, source in secrets.items() if option != "--private-key"),
        f"  --terminal-serial {args.terminal_serial}",
        f"  --ecuador-processor {args.ecuador_processor}",
        f"  --merchant-name   {args.merchant_name}",
        f"  --timeout-delay   {args.timeout_delay:g}",
        f"  --webhook-backoff {args.webhook_backoff:g} (max {args.webhook_backoff_max:g})",
        "  --webhook-chaos   " + (f"{','.join(args.webhook_chaos)} (rate {args.webhook_chaos_rate:g})"
                                  if args.webhook_chaos else "none"),
        "  --settle-after    " + ("never" if args.settle_after is None else f"{args.settle_after:g}"),
        f"  --public-url      {args.public_url or url}",
        f"  --access-log      {args.access_log}",
        "  --metrics         " + (f"{url}/metrics" if args.metrics else "off"),
        f"  --cors-origin     {', '.join(args.cors_origins or ('*',))}",
    ]
    out.write("\n".join(lines) + "\n")
    out.flush()


def _listen(port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it: without it a keep-alive client waits ~40 ms (Nagle meets
    # delayed ACK) on every answer after the first, since asyncio leaves a socket it did not create alone.
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    listener.bind((HOST, port))
    listener.listen(2048)
    return listener


class _Terminated(Exception):
    """SIGTERM arrived: uvicorn has shut down gracefully and re-raised it to us."""


def _on_sigterm(signum: int, frame: Optional[FrameType]) -> None:
    raise _Terminated


def main(argv: Optional[Sequence[str]] = None, *, prog: str = "pasarela sandbox") -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["certify"]:
        from .certify import main as certify

        return certify(arguments[1:], prog=f"{prog} certify")
    if arguments[:1] == ["tail"]:
        from .tail import main as tail

        return tail(arguments[1:], prog=f"{prog} tail")
    if arguments[:1] == ["conformance"]:  # the test kit's, above the sandbox: reached through `pasarela sandbox`
        print(f"{prog}: error: the conformance run is `pasarela sandbox conformance ...` (or `python -m pasarela "
              "sandbox conformance ...`)", file=sys.stderr)
        return 2
    args = build_parser(prog).parse_args(arguments)
    _warn_about_secrets_given(args, prog)
    try:
        import uvicorn

        from .access_log import ACCESS_LOGGER
        from .service import Sandbox
    except ImportError as exc:
        print(f"{prog}: error: {exc.name or exc} is missing: pip install 'pasarela[sandbox]'", file=sys.stderr)
        return 2
    problem = _db_problem(args.db)
    if problem is not None:
        print(f"{prog}: error: {problem}", file=sys.stderr)
        return 2
    try:
        config, secrets = _config(args)
        sandbox = Sandbox(config, db=args.db)
    except ConfigurationError as exc:
        print(f"{prog}: error: {_in_options(exc)}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:
        print(f"{prog}: error: {_db_refused(args.db, exc)}", file=sys.stderr)
        return 2
    try:
        listener = _listen(args.port)
    except OSError as exc:
        sandbox.close()
        print(f"{prog}: error: --port {args.port}: cannot listen on {HOST} ({exc.strerror or exc}): pick another "
              "port, or 0 for a free one", file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Its own level: the access log is on (or off) whatever --log-level says of the other lines.
    logging.getLogger(ACCESS_LOGGER).setLevel(logging.INFO if args.access_log == "on" else logging.CRITICAL + 1)
    app: Any = sandbox.app  # an ASGI app (with_metrics's aliases are its own)
    if args.metrics:
        from .metrics import MetricsUnavailable, with_metrics

        try:
            app = with_metrics(app)
        except MetricsUnavailable as exc:
            print(f"{prog}: error: {exc}", file=sys.stderr)
            sandbox.close()
            listener.close()
            return 2
    _banner(sys.stdout, args, listener.getsockname()[1], secrets)
    server = uvicorn.Server(uvicorn.Config(app, log_level=args.log_level, access_log=False, lifespan="on"))
    # uvicorn restores the handler it found and re-raises the signal once it has shut down: ours ends the run.
    # (Signals are the main thread's: elsewhere uvicorn does not handle them either.)
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if in_main_thread else None
    try:
        server.run(sockets=[listener])
    except KeyboardInterrupt:  # uvicorn shut down gracefully, then re-raised Ctrl-C: no traceback
        return 130
    except _Terminated:
        return 0
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
        sandbox.close()
        listener.close()
    return 0
