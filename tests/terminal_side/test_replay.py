"""Replay protection: a signature is accepted once inside the tolerance window."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pasarela
from pasarela import AuthError
from pasarela.errors import AUTH_001_BODY
from pasarela.terminal.replay import InMemoryReplayStore, ReplayStore, Verifier, verify_once
from support.clocks import ManualClock
from support.faulty_clients import BUSINESS_CODE, NOON, SERIAL

TERMINAL = pasarela.Terminal(BUSINESS_CODE, SERIAL)


def test_store_first_use_only_once() -> None:
    store = InMemoryReplayStore(clock=ManualClock(NOON))
    assert store.first_use("a", NOON + 300)
    assert not store.first_use("a", NOON + 300)
    assert store.first_use("b", NOON + 300)
    assert len(store) == 2


def test_store_forgets_after_expiry() -> None:
    clock = ManualClock(NOON)
    store = InMemoryReplayStore(clock=clock)
    assert store.first_use("a", NOON + 300)
    clock.now = NOON + 300  # still inside the window at its very edge
    assert not store.first_use("a", NOON + 300)
    clock.now = NOON + 300.001
    assert len(store) == 0
    assert store.first_use("a", NOON + 600)
    assert not store.first_use("a", NOON + 600)


def test_store_does_not_remember_what_already_expired() -> None:
    store = InMemoryReplayStore(clock=ManualClock(NOON))
    assert store.first_use("old", NOON - 1)
    assert len(store) == 0


def test_store_is_bounded_evicting_the_soonest_to_expire() -> None:
    store = InMemoryReplayStore(max_entries=3, clock=ManualClock(NOON))
    for signature, expires_at in [("late", NOON + 300), ("early", NOON + 10), ("middle", NOON + 100)]:
        assert store.first_use(signature, expires_at)
    assert store.first_use("new", NOON + 200)
    assert len(store) == 3
    assert store.first_use("early", NOON + 10)  # evicted, so forgotten
    assert not store.first_use("late", NOON + 300)
    assert not store.first_use("new", NOON + 200)
    with pytest.raises(ValueError):
        InMemoryReplayStore(max_entries=0)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdefgh"), st.integers(0, 6), st.integers(0, 3)), max_size=60),
       st.integers(1, 9))
def test_store_agrees_with_a_plain_model(steps: list[tuple[str, int, int]], max_entries: int) -> None:
    """Entries grouped by expiry time answer as a plain dict of signature -> expiry does: forget what expired,
    remember the rest, and when full drop entries among the soonest to expire (which one among equals is the
    store's choice: the model then forgets the same one)."""
    clock = ManualClock(NOON)
    store = InMemoryReplayStore(max_entries=max_entries, clock=clock)
    model: dict[str, float] = {}
    for signature, expires_in, advance in steps:
        clock.now += advance
        expires_at = clock.now + expires_in - 1  # 1 s in the past to 5 s ahead; several entries share a second
        model = {key: when for key, when in model.items() if when >= clock.now}
        expected = signature not in model
        before = set(model)  # what the store holds once it has dropped what expired
        assert store.first_use(signature, expires_at) is expected
        if expected and expires_at >= clock.now:
            if len(model) >= max_entries:
                dropped = before - set(store._expiry)
                assert len(dropped) == 1 and model[dropped.pop()] == min(model.values())
                model = {key: when for key, when in model.items() if key in store._expiry}
            model[signature] = expires_at
        assert store._expiry == model
        assert sorted(store._expiries) == sorted(store._buckets) == sorted(set(model.values()))
        assert sorted(sig for bucket in store._buckets.values() for sig in bucket) == sorted(model)
        assert len(store) == len(model)


def test_store_is_thread_safe() -> None:
    store = InMemoryReplayStore(max_entries=10_000, clock=ManualClock(NOON))
    results: list[bool] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait()
        outcomes = [store.first_use(f"sig-{i}", NOON + 300) for i in range(500)]
        with lock:
            results.extend(outcomes)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(True) == 500 and len(results) == 4000


def test_in_memory_store_is_a_replay_store() -> None:
    store: ReplayStore = InMemoryReplayStore()
    assert store.first_use("x", 4e9)


def test_verify_once_refuses_the_second_request() -> None:
    store = InMemoryReplayStore(clock=ManualClock(NOON))
    sealed = TERMINAL.seal({"amount": 100}, timestamp=NOON)
    assert verify_once(TERMINAL, store, "POST", sealed.headers, sealed.body, now=NOON) == {"amount": 100}
    with pytest.raises(AuthError) as info:
        verify_once(TERMINAL, store, "POST", sealed.headers, sealed.body, now=NOON + 1)
    assert info.value.body == AUTH_001_BODY and "replay" in info.value.reason
    assert "replay" not in str(info.value)
    # another IV does not make it another request: the signature is the same
    resealed = TERMINAL.seal({"amount": 100}, timestamp=NOON)
    assert resealed.data != sealed.data
    with pytest.raises(AuthError):
        verify_once(TERMINAL, store, "POST", resealed.headers, resealed.body, now=NOON + 2)


def test_verify_once_does_not_record_refused_requests() -> None:
    store = InMemoryReplayStore(clock=ManualClock(NOON))
    sealed = TERMINAL.seal({"amount": 100}, timestamp=NOON)
    forged = {**sealed.headers}
    with pytest.raises(AuthError):  # a forged request carrying a real signature must not burn it
        verify_once(TERMINAL, store, "POST", forged, b'{"data":"00:00"}', now=NOON)
    assert len(store) == 0
    assert verify_once(TERMINAL, store, "POST", sealed.headers, sealed.body, now=NOON) == {"amount": 100}


def test_verifier_window_ends_with_the_tolerance() -> None:
    clock = ManualClock(NOON)
    store = InMemoryReplayStore(clock=clock)
    verifier = Verifier(TERMINAL, replay_store=store, tolerance=60, clock=clock)
    sealed = TERMINAL.seal({"a": 1}, timestamp=NOON)
    assert verifier.open("POST", sealed.headers, sealed.body) == {"a": 1}
    clock.now = NOON + 60
    with pytest.raises(AuthError, match="AUTH-001") as info:
        verifier.open("POST", sealed.headers, sealed.body)
    assert "replay" in info.value.reason
    clock.now = NOON + 61  # out of the window: refused as expired, whatever the store says
    with pytest.raises(AuthError):
        verifier.open("POST", sealed.headers, sealed.body)


def test_verifier_without_store_only_opens() -> None:
    sealed = TERMINAL.seal({"a": 1}, timestamp=NOON)
    verifier = Verifier(TERMINAL, clock=ManualClock(NOON))
    assert verifier.open("POST", sealed.headers, sealed.body) == {"a": 1}
    assert verifier.open("POST", sealed.headers, sealed.body) == {"a": 1}


class AsyncStore:
    """A store reached over the network from asyncio code (as redis.asyncio would be)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    async def first_use(self, signature: str, expires_at: float) -> bool:
        await asyncio.sleep(0)
        if signature in self.seen:
            return False
        self.seen.add(signature)
        return True


def test_verifier_with_an_async_store() -> None:
    store = AsyncStore()
    verifier = Verifier(TERMINAL, replay_store=store, clock=ManualClock(NOON))
    sealed = TERMINAL.seal({"a": 1}, timestamp=NOON)

    async def twice() -> Any:
        first = await verifier.open_async("POST", sealed.headers, sealed.body)
        with pytest.raises(AuthError):
            await verifier.open_async("POST", sealed.headers, sealed.body)
        return first

    assert asyncio.run(twice()) == {"a": 1}
    other = TERMINAL.seal({"a": 2}, timestamp=NOON)
    with pytest.raises(TypeError, match="open_async"):
        verifier.open("POST", other.headers, other.body)
