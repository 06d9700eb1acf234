"""IV uniqueness: a million seals through Terminal.seal, and no IV on the wire is ever repeated.

A repeated IV under one key would leak plaintext relations in AES-CBC. Terminal.seal draws its IVs
from a per-thread pool, AES-256 output under a key fresh from the OS CSPRNG for every 256 IVs (csrc/ivs.c;
pasarela.terminal.ivs's pool of the OS's bytes without hardware AES); the IVs are read back from the sealed
bodies, as the server sees them. (The fork case is in test_envelope.py; the pool's bytes are checked against
openssl in test_iv_pool_fill.py.)
"""

from __future__ import annotations

from pasarela import Terminal

SEALS = 1_000_000
IV_HEX = slice(9, 9 + 32)  # b'{"data":"<32 hex iv>:<ciphertext hex>"}'


def test_a_million_seals_never_repeat_an_iv() -> None:
    seal = Terminal(business_code="demo-business-code", terminal_serial="DEMO-0001").seal
    ivs: set[bytes] = set()
    for count in range(SEALS):
        sealed = seal({"n": count}, timestamp=1_700_000_000)
        body = sealed.body
        assert body is not None and body[IV_HEX] == sealed.iv.hex().encode("ascii")
        ivs.add(body[IV_HEX])
    assert len(ivs) == SEALS
