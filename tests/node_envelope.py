"""A persistent node process running tests/node_envelope.js: the JavaScript server's side of the envelope."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path
from typing import IO, Any

SCRIPT = Path(__file__).resolve().parent / "node_envelope.js"


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

    def close(self) -> None:
        self._stdin.close()
        self._proc.wait(timeout=10)
        self._stdout.close()
