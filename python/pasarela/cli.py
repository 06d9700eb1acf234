"""Command line: ``pasarela seal``, ``pasarela diagnose`` and ``pasarela sandbox`` (and ``python -m pasarela``).

Credentials come from --business-code/--terminal-serial or from the environment variables
PASARELA_BUSINESS_CODE and PASARELA_TERMINAL_SERIAL (preferred: command lines are visible to
other users of the machine, so --business-code prints a warning on stderr). No secret is ever printed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Optional

from . import __version__
from .errors import NOT_OBJECT_REASON, PasarelaError, PayloadError, TimestampError
from .terminal.envelope import Terminal

DESCRIPTION = "Seal terminal requests, find out why one gets AUTH-001,\nand run a local simulator of the service."
EPILOG = """\
seal and diagnose take the credentials from --business-code and --terminal-serial,
or from the environment variables PASARELA_BUSINESS_CODE and PASARELA_TERMINAL_SERIAL
(preferred: command lines are visible to other users of the machine).
No secret is ever printed. 'pasarela COMMAND --help' shows a command's options."""


def _credentials(args: argparse.Namespace) -> tuple[str, str]:
    """The business code and terminal serial from the options or the environment; a missing one is an error that
    names every credential missing, with its option and variable."""
    if args.business_code is not None:
        print(f"pasarela {args.command}: warning: --business-code on the command line is visible to other users of "
              "this machine (process list, shell history); set PASARELA_BUSINESS_CODE instead", file=sys.stderr)
    wanted = (("business code", args.business_code, "--business-code", "PASARELA_BUSINESS_CODE"),
              ("terminal serial", args.terminal_serial, "--terminal-serial", "PASARELA_TERMINAL_SERIAL"))
    resolved = [value if value is not None else os.environ.get(variable, "") for _, value, _, variable in wanted]
    missing = [(name, option, variable) for (name, _, option, variable), value in zip(wanted, resolved) if not value]
    if missing:
        raise PasarelaError(" and ".join(f"no {name}" for name, _, _ in missing) + ": pass "
                            + " and ".join(option for _, option, _ in missing) + ", or set "
                            + " and ".join(variable for _, _, variable in missing))
    return resolved[0], resolved[1]


def _named(source: str) -> str:
    return "standard input" if source == "-" else source


def _read(source: str, what: str) -> bytes:
    """The bytes of ``source`` (``-``: standard input), checked to be UTF-8; an error names the file and what to do."""
    name = _named(source)
    try:
        if source == "-":
            text = sys.stdin.buffer.read()
        else:
            with open(source, "rb") as handle:
                text = handle.read()
    except FileNotFoundError:
        raise PasarelaError(f"{name}: no such file: give the path of {what}, or - to read it from standard input") \
            from None
    except IsADirectoryError:
        raise PasarelaError(f"{name}: is a folder: give the path of {what} in it") from None
    except OSError as exc:
        raise PasarelaError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PasarelaError(f"{name}: not UTF-8 text at byte {exc.start}: save it as UTF-8") from None
    return text


def _where(text: bytes, offset: int) -> str:
    line = text.count(b"\n", 0, offset) + 1
    column = len(text[text.rfind(b"\n", 0, offset) + 1:offset].decode("utf-8", "replace")) + 1
    return f"line {line}, column {column}"


_KINDS = {"[": "an array", '"': "a string", "t": "true", "f": "false", "n": "null"}


def _payload_problem(name: str, text: bytes, exc: PayloadError) -> str:
    """``exc`` said of the payload in ``text`` as a command line says it: the file, the place in it (a member's
    path without the ``$``), and what to change."""
    if exc.offset is not None:
        return (f"{name}: not JSON text at byte {exc.offset} ({_where(text, exc.offset)}): the payload is one JSON "
                'object, e.g. {"amount": 100, "currency": "COP"}')
    if exc.path == "$" and exc.reason.startswith(NOT_OBJECT_REASON):
        first = text.decode("utf-8").lstrip()[:1]
        return (f"{name}: holds {_KINDS.get(first, 'a number')}, and the payload must be a JSON object, e.g. "
                '{"amount": 100} (an empty file seals {})')
    where = exc.path[2:] if exc.path.startswith("$.") else exc.path[1:]
    return f"{name}, at {where}: {exc.reason}" if where else f"{name}: {exc.reason}"


def _seal(args: argparse.Namespace) -> int:
    business_code, terminal_serial = _credentials(args)
    terminal = Terminal(business_code=business_code, terminal_serial=terminal_serial)
    iv = None
    if args.iv is not None:
        try:
            iv = bytes.fromhex(args.iv)
        except ValueError:
            iv = b""
        if len(iv) != 16:
            raise PasarelaError(f"--iv {args.iv}: give 32 hexadecimal characters (16 bytes), or leave it out for a "
                                "random one")
    payload = _read(args.file, "a JSON payload file")
    try:
        sealed = terminal.seal(payload if payload.strip() else None, method=args.method, timestamp=args.timestamp,
                               iv=iv)
    except PayloadError as exc:
        raise PasarelaError(_payload_problem(_named(args.file), payload, exc)) from None
    except TimestampError as exc:  # its messages start "timestamp <value>": the option's name and value
        raise PasarelaError(f"--{exc}") from None
    json.dump(sealed.as_dict(), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _diagnose(args: argparse.Namespace) -> int:
    """Prints why a captured request is refused; exit 0 when it is valid, 1 for a diagnosed fault."""
    from .terminal.diagnose import diagnose

    name = _named(args.file)
    shape = '{"method", "headers", "body" or "params", "now"}, as pasarela seal writes it'
    try:
        captured = json.loads(_read(args.file, "a captured request"))
    except json.JSONDecodeError as exc:
        raise PasarelaError(f"{name}: not JSON text (line {exc.lineno}, column {exc.colno}: {exc.msg}): a captured "
                            f"request is a JSON object {shape}") from None
    except (ValueError, RecursionError):
        raise PasarelaError(f"{name}: not JSON text, or nested too deep to read") from None
    if not isinstance(captured, dict) or not isinstance(captured.get("headers"), dict):
        raise PasarelaError(f'{name}: a captured request is a JSON object with "headers" (an object) and "body" or '
                            f'"params": {shape}')
    method = captured.get("method") or ("GET" if "params" in captured and "body" not in captured else "POST")
    now = args.now if args.now is not None else captured.get("now")
    if now is not None and (isinstance(now, bool) or not isinstance(now, (int, float))):
        raise PasarelaError(f'{name}: "now" must be the Unix seconds at which the server received the request (or '
                            "leave it out: --now, else the current time)")
    business_code, terminal_serial = _credentials(args)
    verdict = diagnose(method, captured["headers"], captured.get("body"), captured.get("params"),
                       business_code=business_code, terminal_serial=terminal_serial, now=now)
    if args.json_deprecated:
        print("pasarela diagnose: --json is deprecated: use --output json", file=sys.stderr)
    if args.output == "json" or args.json_deprecated:
        json.dump(dataclasses.asdict(verdict), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(f"verdict: {verdict.cause}\n{verdict.explanation}\nfix: {verdict.fix}")
    return 0 if verdict.valid else 1


def _sandbox(args: argparse.Namespace) -> int:
    """Runs the sandbox (imported only here: it needs the ``sandbox`` extra); it parses its own options.
    ``pasarela sandbox conformance`` is the test kit's receiver conformance run (:mod:`pasarela.testing`)."""
    if args.options[:1] == ["conformance"]:
        from .testing.conformance_cli import main as conformance_main

        return conformance_main(args.options[1:])
    from .sandbox.server import main as sandbox_main

    return sandbox_main(args.options)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pasarela", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"pasarela {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")

    seal = commands.add_parser("seal", help="sign and encrypt a terminal request payload (JSON object)")
    seal.add_argument("file", nargs="?", default="-", help="JSON payload file, or - for standard input (default)")
    seal.add_argument("--method", default="POST", type=str.upper, choices=("GET", "POST", "PUT", "PATCH"),
                      help="GET, POST, PUT or PATCH (default POST)")
    seal.add_argument("--timestamp", type=int, help="UTC seconds, 10 digits (default: now)")
    seal.add_argument("--iv", help="IV as 32 hex characters (default: random; set only to reproduce a request)")
    seal.add_argument("--business-code", help="default: $PASARELA_BUSINESS_CODE")
    seal.add_argument("--terminal-serial", help="default: $PASARELA_TERMINAL_SERIAL")
    seal.set_defaults(run=_seal)

    diag = commands.add_parser("diagnose", help="say why a captured terminal request gets AUTH-001, and the fix")
    diag.add_argument("file", nargs="?", default="-",
                      help='captured request: JSON {"method", "headers", "body" or "params", "now"}, or - for stdin')
    diag.add_argument("--now", type=float, help="server time when the request arrived, Unix seconds (default: now)")
    diag.add_argument("--output", choices=("text", "json"), default="text",
                      help="how to print the diagnosis: text (default) or a JSON object")
    diag.add_argument("--json", dest="json_deprecated", action="store_true", help=argparse.SUPPRESS)  # the old name
    diag.add_argument("--business-code", help="default: $PASARELA_BUSINESS_CODE")
    diag.add_argument("--terminal-serial", help="default: $PASARELA_TERMINAL_SERIAL")
    diag.set_defaults(run=_diagnose)

    # Options (and --help) are the sandbox's own, parsed by it: this parser takes nothing as an option.
    box = commands.add_parser("sandbox", help="run the local simulator of the service (pasarela sandbox --help)",
                              add_help=False, prefix_chars="\0")
    box.add_argument("options", nargs="*", help="the sandbox's options")
    box.set_defaults(run=_sandbox)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.run(args)
    except (PasarelaError, ValueError, OSError) as exc:
        print(f"pasarela {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
