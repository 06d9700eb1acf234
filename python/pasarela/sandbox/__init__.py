"""The sandbox: a local, stateful simulator of the payment service (``pasarela sandbox``).

It serves the card and transfer APIs with the test behaviours of the spec, keeps state in SQLite,
sends signed webhooks from a durable outbox, and hosts a simulated terminal; docs/sandbox.md has
the tour. Needs ``pip install "pasarela[sandbox]"`` (uvicorn, Starlette, jsonschema, segno).
``import pasarela`` never imports this package, and importing it imports none of those::

    from pasarela.sandbox import Sandbox, SandboxConfig

    with Sandbox(SandboxConfig(webhook_url="http://127.0.0.1:9000/hooks"), db=":memory:") as sandbox:
        ...   # serve sandbox.app with any ASGI server
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import SandboxConfig

if TYPE_CHECKING:
    from .service import Sandbox

__all__ = ["Sandbox", "SandboxConfig"]


def __getattr__(name: str) -> Any:
    if name == "Sandbox":  # the app imports segno: only when asked for
        from .service import Sandbox

        return Sandbox
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
