"""Run by tests/core/test_threads_public_api.py in a process of its own, so that a crash is a failed test, not a
dead run.

    python tests/support/shared_terminal_worker.py reinit|swap|every SECONDS

One Terminal is shared by threads. A first thread seals large batches (seal_many, seal_batch: long C calls with the
GIL released) and makes every other C call that reads the credentials (seal, open) the whole time; meanwhile
  reinit  another thread calls Terminal.__init__ on the shared object again and again (which freed the credentials
          under the running C call: SIGSEGV; it must be refused, the credentials unchanged);
  swap    another thread replaces the shared object's credentials object behind its back (object.__setattr__,
          which no public check can stop): every C call must keep the credentials it started with alive;
  every   another thread calls every public entry that opens or seals with that Terminal (Terminal's methods,
          seal_batch, canonical_json, Verifier, the ASGI middleware, the pure-Python reference), each result checked
          against the one computed before the threads started.
The business code is 4 MiB long: its copy in the credentials is memory of its own, unmapped when freed, so a C call
reading it after it was freed crashes at once instead of reading stale bytes. Prints "ok <calls>" and exits 0, or
exits 1 naming the wrong result.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from typing import Any, Callable

import pasarela
from pasarela import AuthError, Terminal, canonical_json, reference, seal_batch
from pasarela._binding import Credentials
from pasarela.asgi import TerminalAuthMiddleware
from pasarela.terminal.replay import Verifier

BUSINESS_CODE = "b" * (4 << 20)
SERIAL = "SN-0042"
NOON = 1763812800
IV = bytes(range(16))
PAYLOAD = {"amount": 100.5, "currency": "COP", "items": [{"sku": "A-1", "qty": 2}, None, True]}
BATCH = [{"amount": i, "text": "x" * 1000} for i in range(256)]


class WrongResult(Exception):
    pass


Scenario = tuple[list[Callable[[], None]], Callable[[], None]]
"""The calls the second thread makes over and over, and a check made once the threads are done."""


def _check(got: object, expected: object, what: str) -> None:
    if got != expected:
        raise WrongResult(f"{what}: {got!r:.200} != {expected!r:.200}")


def _sealer(terminal: Terminal, checker: Terminal, stop: threading.Event, started: threading.Event,
            failures: list[BaseException]) -> None:
    """Large batches, one after another, and between them each other C call that reads the credentials: most of
    this thread's time is spent in C with the GIL released, each call in a new minute, so that it derives the
    password again from the business code."""
    try:
        second = NOON
        while not stop.is_set():
            second += 60
            sealed = terminal.seal_many(BATCH, timestamp=second)
            started.set()
            _check(checker.open("POST", sealed[-1].headers, sealed[-1].body, now=second), BATCH[-1], "seal_many")
            second += 60
            sealed = seal_batch([(terminal, item) for item in BATCH[:64]], timestamp=second)
            _check(checker.open("POST", sealed[-1].headers, sealed[-1].body, now=second), BATCH[63], "seal_batch")
            for text in (PAYLOAD, canonical_json(PAYLOAD)):  # seal_payload, seal_json
                second += 60
                one = terminal.seal(text, timestamp=second)
                _check(checker.open("POST", one.headers, one.body, now=second), PAYLOAD, "seal")
            second += 60
            one = checker.seal(PAYLOAD, timestamp=second)
            _check(terminal.open("POST", one.headers, one.body, now=second), PAYLOAD, "open (open_post)")
            second += 60
            one = checker.seal(PAYLOAD, method="GET", timestamp=second)
            _check(terminal.open("GET", one.headers, params=one.params, now=second), PAYLOAD, "open GET (cffi)")
    except BaseException as exc:  # reported by the main thread
        failures.append(exc)
        started.set()


def _middleware_call(app: TerminalAuthMiddleware, sealed: pasarela.Sealed) -> tuple[int, Any]:
    """(status, payload the application saw) of one POST through the middleware."""
    seen: dict[str, Any] = {}
    statuses: list[int] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen["payload"] = scope["pasarela.payload"]
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": sealed.body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in sealed.headers.items()]
    scope = {"type": "http", "method": "POST", "path": "/payments", "headers": headers, "query_string": b""}
    app.app = inner
    asyncio.run(app(scope, receive, send))
    return statuses[0], seen.get("payload")


def _every_entry(terminal: Terminal, other: Terminal) -> Scenario:
    """Each public entry, called with the shared terminal and checked against what it gave before the threads."""
    sealed = terminal.seal(PAYLOAD, timestamp=NOON, iv=IV)
    put = terminal.seal(PAYLOAD, method="PUT", timestamp=NOON, iv=IV)
    get = terminal.seal(PAYLOAD, method="GET", timestamp=NOON, iv=IV)
    forged = dict(sealed.headers, Authorization="Basic " + "0" * 128)
    text = canonical_json(PAYLOAD)
    verifier = Verifier(terminal, clock=lambda: NOON)
    middleware = TerminalAuthMiddleware(lambda *_: None, terminal, clock=lambda: NOON)  # type: ignore[arg-type]
    pure = reference.Terminal(BUSINESS_CODE, SERIAL)

    def refused(call: Callable[[], object], what: str) -> None:
        try:
            call()
        except AuthError:
            return
        raise WrongResult(f"{what} was accepted")

    def reinit() -> None:
        try:
            terminal.__init__("another code", "SN-0001")  # type: ignore[misc]
        except TypeError:
            _check(terminal.terminal_serial, SERIAL, "terminal_serial after a refused __init__")
            return
        raise WrongResult("Terminal.__init__ on a Terminal in use changed its credentials")

    return [
        lambda: _check(terminal.seal(PAYLOAD, timestamp=NOON, iv=IV), sealed, "seal"),
        lambda: _check(terminal.seal(text, timestamp=NOON, iv=IV), sealed, "seal of JSON text"),
        lambda: _check(terminal.seal(PAYLOAD, method="PUT", timestamp=NOON, iv=IV), put, "seal PUT"),
        lambda: _check([other.open("POST", s.headers, s.body, now=NOON)
                        for s in terminal.seal_many([PAYLOAD] * 40, timestamp=NOON)], [PAYLOAD] * 40, "seal_many"),
        lambda: _check([other.open("POST", s.headers, s.body, now=NOON)
                        for s in seal_batch([(terminal, PAYLOAD), (other, PAYLOAD)] * 20, timestamp=NOON)],
                       [PAYLOAD] * 40, "seal_batch"),
        lambda: _check(canonical_json(PAYLOAD), text, "canonical_json"),
        lambda: _check(terminal.open("POST", sealed.headers, sealed.body, now=NOON), PAYLOAD, "open POST"),
        lambda: _check(terminal.open("PUT", put.headers, {"data": put.data}, now=NOON), PAYLOAD, "open PUT"),
        lambda: _check(terminal.open("GET", get.headers, params=get.params, now=NOON), PAYLOAD, "open GET"),
        lambda: refused(lambda: terminal.open("POST", forged, sealed.body, now=NOON), "a forged signature"),
        lambda: _check(verifier.open("POST", sealed.headers, sealed.body), PAYLOAD, "Verifier.open"),
        lambda: _check(_middleware_call(middleware, sealed), (200, PAYLOAD), "TerminalAuthMiddleware"),
        lambda: _check(pure.open("POST", sealed.headers, sealed.body, now=NOON), PAYLOAD, "reference open"),
        lambda: _check(pure.seal(PAYLOAD, timestamp=NOON, iv=IV).body, sealed.body, "reference seal"),
        lambda: _check(repr(terminal), f"Terminal(terminal_serial={SERIAL!r}, business_code=<redacted>)", "repr"),
        reinit,
    ], lambda: None


def _reinit(terminal: Terminal) -> Scenario:
    accepted: list[bool] = []

    def call() -> None:  # the same credentials again: a re-initialization that is not refused keeps results right
        try:
            terminal.__init__(BUSINESS_CODE, SERIAL)  # type: ignore[misc]
        except TypeError:
            pass
        else:
            accepted.append(True)

    def refused() -> None:
        _check(len(accepted), 0, "times Terminal.__init__ on a Terminal in use was accepted")

    return [call], refused


def _swap(terminal: Terminal) -> Scenario:
    def call() -> None:  # same credentials, a new object: results stay right, the old object must outlive its calls
        object.__setattr__(terminal, "_native", Credentials(BUSINESS_CODE.encode(), SERIAL.encode()))

    return [call], lambda: None


def main(scenario: str, seconds: float) -> int:
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    checker = Terminal(BUSINESS_CODE, SERIAL)
    calls, final_check = {"reinit": lambda: _reinit(terminal), "swap": lambda: _swap(terminal),
                          "every": lambda: _every_entry(terminal, checker)}[scenario]()
    stop, started = threading.Event(), threading.Event()
    failures: list[BaseException] = []
    sealer = threading.Thread(target=_sealer, args=(terminal, checker, stop, started, failures))
    sealer.start()
    started.wait()
    made = 0
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline and not failures:
            for call in calls:
                call()
                made += 1
    finally:
        stop.set()
        sealer.join()
    if failures:
        raise failures[0]
    final_check()
    for second in (NOON, NOON + 60):  # the shared terminal still seals what the other one opens
        sealed = terminal.seal(PAYLOAD, timestamp=second)
        _check(checker.open("POST", sealed.headers, sealed.body, now=second), PAYLOAD, "seal after the threads")
    print("ok", made)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], float(sys.argv[2])))
