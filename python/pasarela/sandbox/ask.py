"""Asking a running sandbox for JSON with its private key, from the command line (``certify``, ``tail``): only the
standard library, so a merchant's CI needs no more than ``pip install pasarela``.

A redirect is refused, never followed: the request carries the private key, which must go to the address given and
nowhere else (urllib would carry it to any host a ``Location`` names). Errors are one line of plain text that never
holds the key.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any, Optional
from urllib.parse import urlsplit

from .jsontext import loads

__all__ = ["AskError", "ask", "not_a_sandbox", "printable"]

_MAX_ANSWER_BYTES = 1 << 20
_OPENAPI, _TITLE = "/openapi.json", "pasarela sandbox"  # what tells a sandbox (openapi.py's info.title)


class AskError(Exception):
    """The answer could not be had; the message says why (never the key)."""


class _Redirected(urllib.error.URLError):
    def __init__(self, status: int, location: str) -> None:
        super().__init__(f"HTTP {status} redirect")
        self.status = status
        self.location = location


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """urllib's redirect handler, refusing instead of following (and of copying the headers to the next host)."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> Optional[urllib.request.Request]:
        raise _Redirected(code, newurl)

    # CPython 3.10's handler has no 308 (3.11 added it): without this a 308 surfaced as a plain HTTP error.
    http_error_308 = urllib.request.HTTPRedirectHandler.http_error_302


_OPENER = urllib.request.build_opener(_RefuseRedirects)


def printable(value: object) -> str:
    """A value from an answer as one line of plain text: no terminal escape or line break gets through."""
    return "".join(ch if ch.isprintable() else "?" for ch in str(value))


def ask(url: str, path: str, private_key: str, *, what: str, timeout: float = 10.0,
        method: str = "GET", body: Optional[bytes] = None) -> Any:
    """The JSON answer of ``<url><path>`` (``path`` with its query); ``what`` names the answer in errors."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise AskError("--url must be the sandbox's http(s) address, e.g. http://127.0.0.1:8790")
    headers = {"Private-Merchant-Id": private_key}
    if body is not None:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url.rstrip("/") + path, data=body, method=method,  # noqa: S310 (http(s) only)
                                     headers=headers)
    try:
        with _OPENER.open(request, timeout=timeout) as answer:
            text = answer.read(_MAX_ANSWER_BYTES + 1)
    except _Redirected as exc:
        where = printable(exc.location)[:200]
        raise AskError(f"the address {url} answered HTTP {exc.status}, a redirect to {where}: not followed, so "
                       "that the private key goes nowhere else; give --url the sandbox's own address (the one "
                       "its banner printed)") from None
    except urllib.error.HTTPError as exc:
        # Only a sandbox's refusal means its key: anything else answering there is not one
        if not _is_a_sandbox(url, timeout):
            raise not_a_sandbox(url) from None
        refused = "the private key was refused: give its private key in $PASARELA_SANDBOX_PRIVATE_KEY (or " \
            "--private-key), the one it was started with" if exc.code == 401 else f"HTTP {exc.code}"
        raise AskError(f"the sandbox at {url} answered {refused}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason: object = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        raise AskError(f"cannot reach the sandbox at {url}: {printable(reason)}") from None
    try:
        if len(text) > _MAX_ANSWER_BYTES:
            raise ValueError(f"the answer is larger than {what} can be")
        return loads(text)
    except (ValueError, RecursionError):
        raise not_a_sandbox(url, timeout, f"answered something other than {what}") from None


def _is_a_sandbox(url: str, timeout: float) -> bool:
    """Whether ``url`` serves a pasarela sandbox's OpenAPI document (public: asked without the key)."""
    try:
        with _OPENER.open(url.rstrip("/") + _OPENAPI, timeout=timeout) as answer:
            document = loads(answer.read(_MAX_ANSWER_BYTES))
    except (urllib.error.URLError, OSError, ValueError, RecursionError):
        return False
    info = document.get("info") if isinstance(document, dict) else None
    return isinstance(info, dict) and info.get("title") == _TITLE


def not_a_sandbox(url: str, timeout: Optional[float] = None, answered: Optional[str] = None) -> AskError:
    """The error for an answer that is not what a sandbox gives: that it is no sandbox, or, when ``timeout`` and
    ``answered`` are given and ``url`` does serve a sandbox's OpenAPI document, that the sandbox ``answered`` so (one
    of another version of pasarela?)."""
    if answered is not None and timeout is not None and _is_a_sandbox(url, timeout):
        return AskError(f"the sandbox at {url} {answered} (a sandbox of another version of pasarela?)")
    return AskError(f"{url} is not a pasarela sandbox (its {_OPENAPI} is not the sandbox's): give --url the "
                    "address `pasarela sandbox` printed when it started, e.g. http://127.0.0.1:8790")
