"""A persistent node process running tests/support/node_envelope.js: the JavaScript server's side of the envelope."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path
from typing import IO, Any, NamedTuple, Optional

SCRIPT = Path(__file__).resolve().parent / "node_envelope.js"


class ServerVerdict(NamedTuple):
    """What the JavaScript server made of a request."""

    ok: bool
    reason: str
    stringified: Optional[bytes]
    """JSON.stringify of the payload it accepted (UTF-8), else None."""
    own_key: bool
    """The parsed payload has its own top-level "key" (known once the text parsed)."""
    own_proto: bool
    """... its own top-level "__proto__"."""


class NodeEnvelope:
    def __init__(self) -> None:
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("`node` is not installed: the envelope oracle tests need Node.js")
        self._proc = subprocess.Popen(
            [node, str(SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._stdin: IO[bytes] = self._proc.stdin
        self._stdout: IO[bytes] = self._proc.stdout
        self._lock = threading.Lock()

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        line = json.dumps(request, ensure_ascii=True).encode("ascii") + b"\n"
        with self._lock:
            self._stdin.write(line)
            answer = self._stdout.readline()
        if not answer:
            raise RuntimeError(f"node envelope oracle died (exit status {self._proc.poll()})")
        result: dict[str, Any] = json.loads(answer)
        if "error" in result:
            raise ValueError(f"node: {result['error']}")
        return result

    def seal(
        self, business_code: str, terminal_serial: str, timestamp: int, iv: bytes, plaintext: bytes
    ) -> dict[str, Any]:
        return self._ask(
            {
                "op": "seal",
                "businessCode": business_code,
                "terminalSerial": terminal_serial,
                "timestamp": timestamp,
                "ivHex": iv.hex(),
                "plaintext": plaintext.decode("utf-8"),
            }
        )

    def verify(
        self, business_code: str, terminal_serial: str, timestamp: int, authorization: str, data: str
    ) -> dict[str, Any]:
        return self._ask(
            {
                "op": "verify",
                "businessCode": business_code,
                "terminalSerial": terminal_serial,
                "timestamp": timestamp,
                "authorization": authorization,
                "data": data,
            }
        )

    def seal_text(
        self, business_code: str, terminal_serial: str, timestamp: int, iv: bytes, text: str, *, signing: str
    ) -> dict[str, Any]:
        """``text`` encrypted as it is and signed ``"server"`` (what the server recomputes from it) or ``"splice"``
        (the text with ``,"key":"…"`` spliced before its last character); ``{"authorization", "data"}``."""
        if signing not in ("server", "splice"):
            raise ValueError(f"signing must be 'server' or 'splice', not {signing!r}")
        return self._ask(
            {
                "op": "sealText",
                "businessCode": business_code,
                "terminalSerial": terminal_serial,
                "timestamp": timestamp,
                "ivHex": iv.hex(),
                "text": text,
                "signing": signing,
            }
        )

    def receive(
        self,
        business_code: str,
        terminal_serial: str,
        now: float,
        method: str,
        headers: dict[str, str],
        *,
        body: Optional[bytes] = None,
        query_data: Optional[str] = None,
    ) -> ServerVerdict:
        """The JavaScript server's verdict on a whole request (``headers`` by lower-case name; ``body`` for
        POST, PUT and PATCH, ``query_data`` the ``data`` query parameter of a GET), at its clock ``now``."""
        answer = self._ask(
            {
                "op": "receive",
                "businessCode": business_code,
                "terminalSerial": terminal_serial,
                "now": now,
                "method": method,
                "headers": headers,
                "body": None if body is None else body.decode("utf-8"),
                "query": query_data,
            }
        )
        stringified = answer.get("stringified")
        return ServerVerdict(
            ok=answer["ok"],
            reason=answer["reason"],
            stringified=None if stringified is None else stringified.encode("utf-8"),
            own_key=answer.get("ownKey", False),
            own_proto=answer.get("ownProto", False),
        )

    def close(self) -> None:
        self._stdin.close()
        self._proc.wait(timeout=10)
        self._stdout.close()
