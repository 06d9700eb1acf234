"""Method and path to handler: ``/transfer/v1/status/{token}`` style templates, 404 and 405."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Any, Callable

from .asgi_io import Receive, Reply, Request
from .auth import KeyRule
from .errors import SandboxError

__all__ = ["Call", "Handler", "Route", "Router"]

_PARAMETER = re.compile(r"\{([a-zA-Z]+)\}")


@dataclass(frozen=True)
class Call:
    request: Request
    params: dict[str, str]
    body: Any
    """The JSON body, checked against the route's schema (``None`` for a route without one)."""
    receive: Receive
    """To notice the client leaving while an answer is held back (the timeout scenario)."""


Handler = Callable[[Call], Awaitable[Reply]]


@dataclass(frozen=True)
class Route:
    method: str
    template: str
    keys: KeyRule
    handler: Handler
    body_schema: str = ""
    """The component the JSON body is checked against before the handler runs (none when empty)."""

    def pattern(self) -> re.Pattern[str]:
        parts = _PARAMETER.split(self.template)  # literal, name, literal, name, ..., literal
        regex = "".join(re.escape(part) if index % 2 == 0 else f"(?P<{part}>[^/]+)" for index, part in enumerate(parts))
        return re.compile(f"^{regex}$")


class Router:
    def __init__(self, routes: Iterable[Route]) -> None:
        self._routes = [(route, route.pattern()) for route in routes]

    @property
    def routes(self) -> tuple[Route, ...]:
        return tuple(route for route, _ in self._routes)

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]]:
        """The route and its path parameters; SandboxError 404 for an unknown path, 405 for a wrong method."""
        allowed: list[str] = []
        for route, pattern in self._routes:
            found = pattern.match(path)
            if found is None:
                continue
            if route.method == method:
                return route, found.groupdict()
            allowed.append(route.method)
        if allowed:
            raise SandboxError(405, "METHOD_NOT_ALLOWED", f"{path} answers {', '.join(sorted(set(allowed)))} only")
        raise SandboxError.not_found(f"no route {method} {path}: see /openapi.json")

    def allowed(self, path: str) -> str:
        return ", ".join(sorted({route.method for route, pattern in self._routes if pattern.match(path)}))
