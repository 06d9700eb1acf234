"""A persistent ``node`` process answering ``JSON.stringify(JSON.parse(text))`` for the tests.

Protocol: each request is one line holding the JSON text *wrapped in a JSON string literal* written
in pure ASCII (non-ASCII characters and lone surrogates as ``\\uXXXX``), so texts containing newlines,
any whitespace or any code unit travel intact and stdin is always valid UTF-8. Node answers each line
with one line: ``JSON.stringify(JSON.parse(text))`` (JSON.stringify never writes a raw line feed), or
``!ERROR <message>`` when JSON.parse throws.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from typing import IO

__all__ = ["NodeJSONError", "NodeOracle", "NodeUnavailableError"]

_SCRIPT = r"""
'use strict';
const readline = require('readline');
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
rl.on('line', (line) => {
  let out;
  try {
    const text = JSON.parse(line);
    out = JSON.stringify(JSON.parse(text));
  } catch (e) {
    out = '!ERROR ' + String(e && e.message).replace(/[\r\n\u2028\u2029]/g, ' ');
  }
  process.stdout.write(out + '\n');
});
"""


class NodeUnavailableError(RuntimeError):
    """``node`` is not installed (or not on PATH)."""


class NodeJSONError(ValueError):
    """JSON.parse refused the text; ``message`` is the JavaScript error message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NodeOracle:
    """One ``node`` process for the whole test session; call :meth:`stringify` per text."""

    def __init__(self) -> None:
        node = shutil.which("node")
        if node is None:
            raise NodeUnavailableError(
                "`node` is not installed or not on PATH: the JSON.stringify oracle tests need Node.js"
            )
        self._proc = subprocess.Popen(
            [node, "-e", _SCRIPT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
        )
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None
        self._stdin: IO[bytes] = stdin
        self._stdout: IO[bytes] = stdout
        self._lock = threading.Lock()
        self.calls = 0

    def stringify(self, text: bytes | str) -> bytes:
        """``JSON.stringify(JSON.parse(text))`` as UTF-8 bytes; raises NodeJSONError if parsing fails.

        Bytes are decoded as UTF-8 (``surrogatepass``, so encoded lone surrogates survive).
        """
        if isinstance(text, bytes):
            text = text.decode("utf-8", "surrogatepass")
        line = json.dumps(text, ensure_ascii=True).encode("ascii") + b"\n"
        with self._lock:
            self._stdin.write(line)
            self._stdin.flush()
            answer = self._stdout.readline()
            self.calls += 1
        if not answer.endswith(b"\n"):
            raise RuntimeError(f"node oracle died (exit status {self._proc.poll()})")
        answer = answer[:-1]
        if answer.startswith(b"!ERROR "):
            raise NodeJSONError(answer[7:].decode("utf-8", "replace"))
        return answer

    __call__ = stringify

    def close(self) -> None:
        if self._proc.poll() is None:
            self._stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._stdout.close()
