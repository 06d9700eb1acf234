"""What the terminal HTTP clients (httpx, requests) share: seal a call once, read its answer.

The payload is serialized exactly once, by ``seal``; the client sends ``sealed.body`` (POST, PUT, PATCH)
or ``sealed.params`` (GET: the only query parameter on the wire is ``data``) as they are.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Optional, Protocol

from .._closing import ClosesOnExit
from ..errors import AUTH_001_BODY, AuthError, ResponseShapeError, ValidationError
from ..http.error_mapping import api_error
from ..http.path import is_dot_segment
from .request import Sealed, check_method

__all__ = ["BlockingTerminalClient", "Call", "SealingTerminal", "prepare", "read_answer"]


class SealingTerminal(Protocol):
    """What seals a request: ``pasarela.Terminal`` and ``pasarela.reference.Terminal``."""

    def seal(self, payload: Any = None, *, method: str = "POST", timestamp: Optional[int] = None,
             iv: Optional[bytes] = None) -> Sealed: ...


class Call(NamedTuple):
    sealed: Sealed
    method: str
    url: str
    headers: dict[str, str]
    content: Optional[bytes]
    params: Optional[dict[str, str]]


def prepare(base_url: str, terminal: SealingTerminal, method: str, path: str, payload: Any) -> Call:
    """Seals payload for ``method base_url/path``; payload None is sent as ``{}`` (abort calls)."""
    method = check_method(method)
    if "?" in path or "#" in path:
        raise ValueError("query parameters travel inside the encrypted payload: pass them in the payload, "
                         "not in the path")
    if any(is_dot_segment(segment) for segment in path.split("/")):
        # HTTP clients remove dot segments (requests after decoding %2e): the request would go elsewhere.
        raise ValidationError("path", "must not hold a dot segment ('.' or '..', even percent-encoded)")
    sealed = terminal.seal(payload, method=method)
    url = base_url.rstrip("/") + "/" + path.lstrip("/")
    return Call(sealed, method, url, dict(sealed.headers), sealed.body, sealed.params)


def read_answer(sealed: Sealed, status: int, content: bytes) -> Any:
    """The service's answer to a sealed call: the decrypted (or plain) JSON, None for an empty 2xx.

    AUTH-001 (or any 401) raises AuthError; other error statuses raise the ApiError the card and
    transfer clients raise (decrypted first when the error body is encrypted).
    """
    try:
        parsed = json.loads(content) if content.strip() else None
    except (ValueError, UnicodeDecodeError, RecursionError):
        parsed = ValueError
    if status == 401 or (isinstance(parsed, dict) and parsed.get("code") == AUTH_001_BODY["code"]):
        raise AuthError(f"the service answered HTTP {status} AUTH-001")
    if parsed is ValueError:
        if status >= 400:
            raise api_error(status, content)
        raise ResponseShapeError("$", f"HTTP {status} answer is not JSON")
    opened = None if parsed is None else sealed.open_response(parsed)
    if status >= 400:
        raise api_error(status, content if opened is parsed else json.dumps(opened).encode("utf-8"))
    return opened


class BlockingTerminalClient(ClosesOnExit):
    """The verbs, ``with`` and ``repr`` the blocking clients share; each supplies ``request`` and ``close``."""

    base_url: str
    _terminal: SealingTerminal

    def request(self, method: str, path: str, payload: Any = None) -> Any:
        raise NotImplementedError

    def post(self, path: str, payload: Any = None) -> Any:
        return self.request("POST", path, payload)

    def put(self, path: str, payload: Any = None) -> Any:
        return self.request("PUT", path, payload)

    def patch(self, path: str, payload: Any = None) -> Any:
        return self.request("PATCH", path, payload)

    def get(self, path: str, params: Any = None) -> Any:
        """params are sealed into the ``data`` query parameter, the only one on the wire."""
        return self.request("GET", path, params)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r}, {self._terminal!r})"
