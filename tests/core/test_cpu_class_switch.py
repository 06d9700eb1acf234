"""PASARELA_NO_AVX512=1 runs this CPU as an AVX2 one: pasarela._binding drops the AVX-512 bit from CPU_FEATURES, so
seal_many hashes with the AVX2 lanes and benchmarks/gate.py measures (and stores a baseline for) the "x86-64 AVX2"
class of machine on an AVX-512 one. The requests it seals there must be the ones the default path opens."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pasarela
from pasarela import _binding

TIMESTAMP = 1764072000

PROBE = """
import json, sys, pasarela
from pasarela import _binding
TIMESTAMP = int(sys.argv[1])
terminal = pasarela.Terminal("bc-1", "SN-1")
payloads = [{"n": n, "text": "x" * size} for n, size in enumerate((0, 40, 200, 1000, 5000, 20000) * 6)]
sealed = terminal.seal_many(payloads, timestamp=TIMESTAMP)
print(json.dumps({
    "cpu": _binding.CPU_FEATURES,
    "requests": [[dict(row.headers), row.body.decode("ascii")] for row in sealed],
    "payloads": payloads,
}))
"""


def _probe(switch: str | None) -> dict[str, object]:
    environment = {key: value for key, value in os.environ.items() if key != "PASARELA_NO_AVX512"}
    if switch is not None:
        environment["PASARELA_NO_AVX512"] = switch
    result = subprocess.run([sys.executable, "-c", PROBE, str(TIMESTAMP)], env=environment, capture_output=True,
                            text=True, check=True, timeout=120)
    answer: dict[str, object] = json.loads(result.stdout)
    return answer


def test_the_switch_drops_avx512_and_its_requests_open_on_the_default_path() -> None:
    forced = _probe("1")
    cpu = forced["cpu"]
    assert isinstance(cpu, int)
    lib = _binding.lib
    avx512 = lib.PASARELA_CPU_AVX512 | lib.PASARELA_CPU_AVX512_SHORT | lib.PASARELA_CPU_AVX512_VBMI
    assert not cpu & avx512
    assert cpu == _binding.CPU_FEATURES & ~avx512
    terminal = pasarela.Terminal("bc-1", "SN-1")
    requests = forced["requests"]
    assert isinstance(requests, list) and len(requests) == 36
    opened = [terminal.open("POST", headers, body.encode("ascii"), now=TIMESTAMP) for headers, body in requests]
    assert opened == forced["payloads"]


def test_without_the_switch_the_cpu_is_as_detected() -> None:
    for switch in (None, "0", ""):
        assert _probe(switch)["cpu"] == _binding.lib.pasarela_cpu_features()


def test_short_work_takes_512_bit_vectors_on_avx512_cpus_but_intel_s() -> None:
    """PASARELA_CPU_AVX512_SHORT (the Base64 of one request on 512-bit vectors) is set on an
    AVX-512 CPU unless it is Intel's, whose cores run the whole request slower after a few 512-bit instructions;
    the vendor and flags as the kernel reports them (/proc/cpuinfo) are the independent reading of CPUID."""
    lib = _binding.lib
    cpu = lib.pasarela_cpu_features()
    info = Path("/proc/cpuinfo").read_text()
    vendor = re.search(r"^vendor_id\s*:\s*(\S+)", info, re.M)
    flags = re.search(r"^flags\s*:(.*)$", info, re.M)
    assert vendor is not None and flags is not None, "no vendor_id or flags in /proc/cpuinfo (Linux x86-64 expected)"
    avx512 = {"avx512f", "avx512bw", "avx512vl"} <= set(flags.group(1).split())
    assert bool(cpu & lib.PASARELA_CPU_AVX512) == avx512
    assert bool(cpu & lib.PASARELA_CPU_AVX512_SHORT) == (avx512 and vendor.group(1) != "GenuineIntel")


def _kernel_flags() -> set[str]:
    """The CPU flags the kernel reports (/proc/cpuinfo): the independent reading of CPUID."""
    flags = re.search(r"^flags\s*:(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
    assert flags is not None, "no flags in /proc/cpuinfo (Linux x86-64 expected)"
    return set(flags.group(1).split())


def test_vbmi_is_detected_as_the_kernel_reports_it() -> None:
    """PASARELA_CPU_AVX512_VBMI (hex decoding on vpermt2b) is set exactly when the kernel's flags (/proc/cpuinfo) show
    VBMI beside AVX-512 F, BW and VL and AVX2 (the paths' agreement: csrc/tests/test_primitives.c, the hex fuzz
    target and tests/envelope/test_hex.py)."""
    cpu = _binding.lib.pasarela_cpu_features()
    wanted = {"avx512vbmi", "avx512f", "avx512bw", "avx512vl", "avx2", "bmi1", "bmi2"}
    assert bool(cpu & _binding.lib.PASARELA_CPU_AVX512_VBMI) == (wanted <= _kernel_flags())


def test_vaes_is_detected_as_the_kernel_reports_it() -> None:
    """PASARELA_CPU_VAES (CBC decryption two blocks an instruction) is set exactly when the kernel's flags
    (/proc/cpuinfo) show VAES beside AVX2 and AES-NI, and decryption with and without it gives back each plaintext
    (1 to 40 blocks: both the 16-block groups and the tail run)."""
    lib, ffi = _binding.lib, _binding.ffi
    cpu = lib.pasarela_cpu_features()
    assert bool(cpu & lib.PASARELA_CPU_VAES) == ({"vaes", "avx2", "aes"} <= _kernel_flags())
    key, iv = bytes(range(32)), bytes(range(100, 116))
    out, out_len = ffi.new("uint8_t[]", 16 * 41), ffi.new("size_t *")
    for blocks in range(1, 41):
        plaintext = bytes((i * 7 + blocks) % 256 for i in range(16 * blocks - 1))  # PKCS#7 fills the last block
        assert lib.pasarela_aes256_cbc_encrypt(cpu, key, iv, plaintext, len(plaintext), out, len(out), out_len) == 0
        ciphertext = bytes(ffi.buffer(out, out_len[0]))
        assert len(ciphertext) == 16 * blocks
        for features in (cpu, cpu & ~lib.PASARELA_CPU_VAES):
            status = lib.pasarela_aes256_cbc_decrypt(features, key, iv, ciphertext, len(ciphertext), out, len(out),
                                                     out_len)
            assert (status, bytes(ffi.buffer(out, out_len[0]))) == (0, plaintext), (blocks, features)
