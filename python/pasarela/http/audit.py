"""Recording every exchange with the service (certification rule 3), secrets removed.

The client builds one :class:`AuditRecord` per attempt, already redacted, and passes it to the
audit hook configured in :class:`~pasarela.http.config.ServiceConfig`. :class:`JsonlAuditLog` is a
ready hook writing one JSON object per line. A hook that raises is logged and otherwise ignored:
failing a charge that went through because a log write failed would invite a double charge.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Callable, Optional, Union

from . import json_tree
from .json_depth import nesting_too_deep
from .redaction import redact_form, redact_json

__all__ = ["TOO_DEEP", "AuditHook", "AuditRecord", "JsonlAuditLog", "notify", "recordable_body"]

_log = logging.getLogger("pasarela.audit")
_MAX_TEXT = 65536
TOO_DEEP = "[not recorded: JSON nested too deep to redact]"
"""What a record holds for a JSON body nesting deeper than MAX_DEPTH (1000 levels): not parsed, hence not
redacted, and its raw text could hold secrets."""


@dataclass(frozen=True)
class AuditRecord:
    """One attempt of one call: what was sent and what came back (or why nothing did)."""

    at: float
    """Unix time, in seconds, when the attempt ended."""
    attempt: int
    method: str
    url: str
    request_headers: Mapping[str, str]
    request_body: Any
    idempotency_key: Optional[str]
    status: Optional[int]
    """HTTP status, or ``None`` when the service could not be reached."""
    response_body: Any
    error: Optional[str]
    """The transport failure, when there was one."""

    def to_json(self) -> dict[str, Any]:
        """The record as a dict of its fields (headers copied into a dict; the bodies, already copies made by the
        redaction, as they are: not copied again by a recursive walk, which a body MAX_DEPTH deep would overflow)."""
        as_dict = {field.name: getattr(self, field.name) for field in fields(self)}
        as_dict["request_headers"] = dict(self.request_headers)
        return as_dict


AuditHook = Callable[[AuditRecord], None]


def recordable_body(content: Optional[bytes]) -> Any:
    """A body as it goes into a record: parsed JSON redacted, else text with the secret fields of a form
    redacted (cut at 64 KiB), ``None`` when empty; :data:`TOO_DEEP` for text nesting deeper than MAX_DEPTH
    (1000 levels, counted first): the same on every interpreter and from any caller's stack."""
    if not content:
        return None
    if nesting_too_deep(content.decode("utf-8", "replace")) is not None:  # counted before json's recursive scanner
        return TOO_DEEP
    try:  # within MAX_DEPTH, parsed (json_tree.loads) and redacted (redact_json) without recursion
        return redact_json(json_tree.loads(content))
    except ValueError:
        return redact_form(content[:_MAX_TEXT].decode("utf-8", errors="replace"))[:_MAX_TEXT]


def notify(hook: Optional[AuditHook], record: AuditRecord) -> None:
    """Give ``record`` to ``hook``, logging (never raising) what the hook raises."""
    if hook is None:
        return
    try:
        hook(record)
    except Exception:
        _log.exception("audit hook failed for %s %s (attempt %d)", record.method, record.url, record.attempt)


class JsonlAuditLog:
    """An audit hook appending each record to ``path`` as one JSON line.

    The file is created readable by its owner only (records hold payer names and e-mails) and
    opened for each record in append mode, so several processes can share it and log rotation
    needs no signal. Writes from threads of one process are serialized.
    """

    def __init__(self, path: Union[str, os.PathLike[str]]) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()

    def __call__(self, record: AuditRecord) -> None:
        # (json_tree.dumps: written whole from any caller's stack, as json.dumps writes it)
        line = json_tree.dumps(record.to_json(), default=str, ensure_ascii=False, allow_nan=True) + "\n"
        with self._lock:
            descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(descriptor, line.encode("utf-8"))
            finally:
                os.close(descriptor)

    def __repr__(self) -> str:
        return f"JsonlAuditLog({self.path!r})"
