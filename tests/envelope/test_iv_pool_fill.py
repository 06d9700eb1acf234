"""The IV pool's bytes (csrc/ivs.c, pasarela_iv_pool_fill): AES-256 under a key fresh from the OS, eight CBC
chains over zero bytes. Checked against the openssl command line (an independent AES-256-CBC) and the
reference's AES (the `cryptography` package) for the exact bytes; and refused lengths, the fallback to the
OS's bytes without hardware AES, and a fresh key for every refill."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pasarela import _binding
from pasarela.terminal import reference

ffi, lib = _binding.ffi, _binding.lib
seeds = st.binary(min_size=48, max_size=48)


def _fill(seed: bytes, length: int, cpu: int = _binding.CPU_FEATURES) -> tuple[int, bytes]:
    pool = ffi.new("uint8_t[]", max(1, length))
    status = lib.pasarela_iv_pool_fill(cpu, seed, pool, length)
    return status, bytes(ffi.buffer(pool, length))


def _chain_starts(seed: bytes) -> list[bytes]:
    return [seed[32:47] + bytes([seed[47] ^ j]) for j in range(8)]


def _expected(seed: bytes, length: int) -> bytes:
    """What the C fill must write, by the reference's AES: chain j is the AES-256-CBC-PKCS#7 encryption of
    length / 8 - 16 zero bytes under seed[:32], from seed[32:] with its last byte XORed with j."""
    return b"".join(bytes.fromhex(reference.encrypt(seed[:32], start, bytes(length // 8 - 16)).split(":")[1])
                    for start in _chain_starts(seed))


@settings(max_examples=8)  # eight openssl processes per example
@given(seeds)
def test_a_fill_is_what_openssl_enc_writes(openssl: str, seed: bytes) -> None:
    status, pool = _fill(seed, 4096)
    assert status == lib.PASARELA_OK
    chains = [subprocess.run([openssl, "enc", "-aes-256-cbc", "-K", seed[:32].hex(), "-iv", start.hex()],
                             input=bytes(512 - 16), capture_output=True, check=True).stdout
              for start in _chain_starts(seed)]
    assert pool == b"".join(chains)


@given(seeds, st.integers(min_value=1, max_value=80))
def test_a_fill_of_any_allowed_length_is_the_references(seed: bytes, blocks_per_chain: int) -> None:
    length = 128 * blocks_per_chain
    assert _fill(seed, length) == (lib.PASARELA_OK, _expected(seed, length))


@pytest.mark.parametrize("length", [0, 16, 100, 4095, 4097, 4096 + 16])
def test_a_length_that_is_not_a_multiple_of_128_is_refused(length: int) -> None:
    status, pool = _fill(bytes(48), length)
    assert status == lib.PASARELA_E_INVALID_ARGUMENT
    assert pool == bytes(length)  # nothing written


def test_null_pointers_are_refused() -> None:
    pool = ffi.new("uint8_t[]", 128)
    assert lib.pasarela_iv_pool_fill(_binding.CPU_FEATURES, ffi.NULL, pool, 128) == lib.PASARELA_E_INVALID_ARGUMENT
    assert lib.pasarela_iv_pool_fill(_binding.CPU_FEATURES, bytes(48), ffi.NULL, 128) == \
        lib.PASARELA_E_INVALID_ARGUMENT


def test_without_hardware_aes_the_fill_is_refused_and_the_pool_comes_from_the_os(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert _fill(bytes(48), 128, cpu=0) == (lib.PASARELA_E_NO_HW_AES, bytes(128))
    asked: list[int] = []
    real_urandom = _binding.os.urandom

    class CountingOs:  # _binding's os, counting what it reads from the OS
        @staticmethod
        def urandom(n: int) -> bytes:
            asked.append(n)
            return real_urandom(n)

    monkeypatch.setattr(_binding, "os", CountingOs)
    buffers = _binding._Buffers(4096)
    buffers.refill_ivs()
    assert asked == [48]  # the key and nonce only
    monkeypatch.setattr(_binding, "CPU_FEATURES", 0)
    buffers.refill_ivs()
    assert asked == [48, 48, 4096]  # the fill refused: the whole pool from the OS
    pool = bytes(ffi.buffer(buffers.iv_pool, 4096))
    assert len({pool[i:i + 16] for i in range(0, 4096, 16)}) == 256


def test_every_refill_takes_a_fresh_key() -> None:
    """No IV repeats across 400 refills (102,400 IVs) of one workspace, and the pools share no block."""
    buffers = _binding._Buffers(4096)
    seen: set[bytes] = set()
    for _ in range(400):
        buffers.refill_ivs()
        pool = bytes(ffi.buffer(buffers.iv_pool, 4096))
        seen.update(pool[i:i + 16] for i in range(0, 4096, 16))
    assert len(seen) == 400 * 256


def test_the_same_seed_gives_the_same_bytes_and_another_seed_other_bytes() -> None:
    """Why a seed must never be reused (pasarela.h says so): the fill is a function of it."""
    first, again, other = (_fill(seed, 4096)[1] for seed in (bytes(48), bytes(48), bytes(31) + b"\x01" + bytes(16)))
    assert first == again
    assert {first[i:i + 16] for i in range(0, 4096, 16)}.isdisjoint({other[i:i + 16] for i in range(0, 4096, 16)})


def test_sealed_requests_carry_the_pools_ivs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Terminal.seal and seal_many send the fill's blocks as their IVs, in order (a fixed seed here)."""
    from pasarela import Terminal

    terminal = Terminal("bc-7f3a1c2e9d", "SN-0042")
    seed = bytes(range(48))

    class FixedOs:
        @staticmethod
        def urandom(n: int) -> Any:
            assert n == 48
            return seed

    monkeypatch.setattr(_binding, "os", FixedOs)
    _binding._workspace.buffers.ws.iv_pool_used = 4096  # empty: the next seal refills it
    sealed = [terminal.seal({"n": 1}), *terminal.seal_many([{"n": n} for n in range(20)])]
    expected = _expected(seed, 4096)
    assert [one.iv for one in sealed] == [expected[16 * i:16 * i + 16] for i in range(21)]
