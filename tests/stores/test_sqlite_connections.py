"""The SQLite-backed objects (the sandbox's Store, the pending-transfer guard) close their connection: by close(),
by ``with``, and, when the application forgets both, when the object is collected, without a ResourceWarning
(Python 3.13 warns for a sqlite3.Connection collected unclosed: the docs' own guard snippet did that)."""

from __future__ import annotations

import gc
import sqlite3
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Union

import pytest

from pasarela.sandbox.store import Store
from pasarela.transfers import PendingTransfers

Opener = Callable[[Path], Union[Store, PendingTransfers]]
OPENERS: dict[str, Opener] = {
    "Store": lambda tmp: Store(tmp / "sandbox.sqlite3"),
    "PendingTransfers": lambda tmp: PendingTransfers(tmp / "pending.sqlite3"),
}


def _is_closed(connection: sqlite3.Connection) -> bool:
    try:
        connection.execute("SELECT 1")
    except sqlite3.ProgrammingError as exc:
        return "closed database" in str(exc)
    return False


def _forgotten_in_a_cycle(opened: Union[Store, PendingTransfers]) -> None:
    """What exec() of a snippet leaves: the object in a namespace that a function defined there refers back to."""
    namespace: dict[str, Any] = {"guard": opened}
    exec("def handler(): return guard", namespace)  # noqa: S102 (a constant snippet)


@pytest.mark.parametrize("name", OPENERS)
def test_a_forgotten_one_closes_its_connection_when_collected(name: str, tmp_path: Path) -> None:
    opened = OPENERS[name](tmp_path)
    connection = opened._db
    _forgotten_in_a_cycle(opened)
    del opened
    gc.collect()
    assert _is_closed(connection)


@pytest.mark.parametrize("name", OPENERS)
def test_a_forgotten_one_collected_gives_no_resource_warning(name: str, tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _forgotten_in_a_cycle(OPENERS[name](tmp_path))
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


@pytest.mark.parametrize("name", OPENERS)
def test_with_closes_it_and_close_again_does_nothing(name: str, tmp_path: Path) -> None:
    with OPENERS[name](tmp_path) as opened:
        connection = opened._db
        assert not _is_closed(connection)
    assert _is_closed(connection)
    opened.close()
    assert _is_closed(connection)
