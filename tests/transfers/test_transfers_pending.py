"""Certification rule 6: the PendingTransfers guard and the init bookkeeping around it."""

# ruff: noqa: S105, S106 (test tokens, keys and secrets are fixtures)

from __future__ import annotations

import base64
import threading
from pathlib import Path

import pytest

from pasarela.errors import (
    ApiError,
    ConfigurationError,
    PendingTransferError,
    QrCodeError,
    TransportError,
    ValidationError,
)
from pasarela.transfers import ColombiaQr, EcuadorRedirect, PendingTransfers
from pasarela.transfers.pending import GuardedInit

REFERENCE = "1f0c6a1e-3b1a-4c55-8a22-2f4e0f6d9b10"
QR = "data:image/png;base64," + base64.b64encode(b"png").decode()


def test_second_transfer_for_an_order_is_refused_until_released() -> None:
    guard = PendingTransfers(clock=lambda: 1700000000.0)
    guard.reserve("order-1", "tok-1")
    with pytest.raises(PendingTransferError) as caught:
        guard.reserve("order-1", "tok-2")
    assert caught.value.order_id == "order-1"
    guard.reserve("order-2", "tok-3")  # other orders are free
    pending = guard.pending("order-1")
    assert pending is not None
    assert (pending.token, pending.confirmed, pending.reserved_at) == ("tok-1", False, 1700000000.0)
    guard.release("order-1")
    assert guard.pending("order-1") is None
    guard.reserve("order-1", "tok-4")
    guard.close()


def test_confirm_records_the_reference_and_release_transfer_finds_it() -> None:
    guard = PendingTransfers()
    guard.reserve("order-1", "tok-1")
    guard.confirm("order-1", REFERENCE, token="tok-1")
    pending = guard.pending("order-1")
    assert pending is not None and pending.confirmed and pending.transaction_reference == REFERENCE
    assert guard.release_transfer(transaction_reference=REFERENCE) == "order-1"
    assert guard.pending("order-1") is None
    assert guard.release_transfer(transaction_reference=REFERENCE) is None
    guard.close()


def test_release_transfer_by_token() -> None:
    guard = PendingTransfers()
    guard.reserve("order-1", "tok-1")
    assert guard.release_transfer(token="tok-other") is None
    assert guard.pending("order-1") is not None
    assert guard.release_transfer(token="tok-1") == "order-1"
    assert guard.release_transfer() is None
    guard.close()


def test_guard_file_is_shared_between_instances(tmp_path: Path) -> None:
    path = tmp_path / "pending.sqlite3"
    first, second = PendingTransfers(path), PendingTransfers(path)
    first.reserve("order-1", "tok-1")
    with pytest.raises(PendingTransferError):
        second.reserve("order-1", "tok-2")
    second.release_transfer(token="tok-1")
    first.reserve("order-1", "tok-3")
    first.close()
    second.close()


def test_only_one_of_many_concurrent_reservations_wins() -> None:
    guard = PendingTransfers()
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def attempt(index: int) -> None:
        barrier.wait()
        try:
            guard.reserve("order-1", f"tok-{index}")
            outcomes.append("won")
        except PendingTransferError:
            outcomes.append("refused")

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["refused"] * 7 + ["won"]
    guard.close()


def test_guarded_init_confirms_on_success() -> None:
    guard = PendingTransfers()
    with GuardedInit(guard, "order-1", "tok-1") as init:
        init.done(ColombiaQr(QR, REFERENCE, None, {}))
    pending = guard.pending("order-1")
    assert pending is not None and pending.confirmed and pending.transaction_reference == REFERENCE
    guard.close()


def test_guarded_init_without_reference_confirms_too() -> None:
    guard = PendingTransfers()
    with GuardedInit(guard, "order-1", "tok-1") as init:
        init.done(EcuadorRedirect("https://bank.example", {}))
    pending = guard.pending("order-1")
    assert pending is not None and pending.confirmed and pending.transaction_reference is None
    guard.close()


@pytest.mark.parametrize(
    "error",
    [
        ApiError(400, "T001", "bad token", "{}"),
        QrCodeError(500, "QR-CODE-0001", None, "{}"),
        ValidationError("order_id", "x"),
        ConfigurationError("no key"),
    ],
)
def test_guarded_init_releases_after_a_definite_failure(error: Exception) -> None:
    guard = PendingTransfers()
    with pytest.raises(type(error)), GuardedInit(guard, "order-1", "tok-1"):
        raise error
    assert guard.pending("order-1") is None
    guard.close()


@pytest.mark.parametrize(
    "error",
    [TransportError("timed out"), ApiError(502, None, None, "<html>bad gateway</html>"), RuntimeError("unreadable")],
)
def test_guarded_init_keeps_the_order_blocked_when_the_outcome_is_unknown(error: Exception) -> None:
    guard = PendingTransfers()
    with pytest.raises(type(error)), GuardedInit(guard, "order-1", "tok-1"):
        raise error
    pending = guard.pending("order-1")
    assert pending is not None and not pending.confirmed and pending.token == "tok-1"
    guard.close()


def test_guarded_init_needs_an_order_id_with_a_guard_only() -> None:
    guard = PendingTransfers()
    with pytest.raises(ValidationError) as caught:
        GuardedInit(guard, None, "tok-1")
    guard.close()
    assert caught.value.field == "order_id"
    with GuardedInit(None, None, "tok-1") as init:
        result = EcuadorRedirect("https://bank.example", {})
        assert init.done(result) is result


def test_guarded_init_refuses_a_busy_order() -> None:
    guard = PendingTransfers()
    guard.reserve("order-1", "tok-1")
    with pytest.raises(PendingTransferError), GuardedInit(guard, "order-1", "tok-2"):
        pytest.fail("the body must not run")
    pending = guard.pending("order-1")
    assert pending is not None and pending.token == "tok-1"
    guard.close()
