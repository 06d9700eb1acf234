"""What the servers the tests start share (tests/support/redis_server.py, tests/support/postgres_server.py): ``with
Server() as server`` starts it and closes it after, and ``Server.started()`` is a started one for a fixture to close."""

from __future__ import annotations

from types import TracebackType
from typing import Optional, TypeVar

S = TypeVar("S", bound="ServerProcess")


class ServerProcess:
    def start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    @classmethod
    def started(cls: type[S]) -> S:
        server = cls()
        server.start()
        return server

    def __enter__(self: S) -> S:
        self.start()
        return self

    def __exit__(
        self, kind: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.close()
