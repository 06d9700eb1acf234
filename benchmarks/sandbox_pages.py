"""The sandbox's dashboard pages with a full access log: the certification page (which reads every record and
transfer) against the transfers page (one page of 50), in the same process, interleaved, as a ratio.

    python benchmarks/sandbox_pages.py                        # 2,500 transfers: 5,000 token and init requests
    python benchmarks/sandbox_pages.py --transfers 5000 --rounds 9
    python benchmarks/sandbox_pages.py --db kept.sqlite3      # build once, time again later (another tree)

Each transfer is a Mexico CLABE transfer (token and init over the sandbox's ASGI app, in process), one payer per
50 transfers, so rule 6 fails with thousands of pieces of evidence, as a busy test suite's sandbox has; every 7th
token also gets a second init, refused. The last line is JSON: the medians in milliseconds and their ratio
(certification / transfers, taken per round). Timings are never asserted (tests/instruments/test_sandbox_pages_tool.py
runs it once, small).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from starlette.testclient import TestClient

from pasarela.sandbox import Sandbox, SandboxConfig

_AMOUNT = {"subtotalIva": 0, "subtotalIva0": 10000, "iva": 0}
_PUBLIC = {"Public-Merchant-Id": SandboxConfig().public_key}
_PRIVATE = {"Private-Merchant-Id": SandboxConfig().private_key}


def fill(client: TestClient, transfers: int) -> None:
    for number in range(transfers):
        token = client.post("/transfer/v1/tokens", headers=_PUBLIC, json={
            "currency": "MXN", "amount": _AMOUNT, "userType": "0", "documentType": "CURP",
            "documentNumber": f"DOC{number % 50}", "paymentDescription": "order", "email": "payer@example.mx",
        }).json()["token"]
        assert client.post("/transfer/v1/init", headers=_PRIVATE, json={"token": token, "amount": _AMOUNT}).is_success
        if number % 7 == 0:
            client.post("/transfer/v1/init", headers=_PRIVATE, json={"token": token, "amount": _AMOUNT})


def measure(db: Path, transfers: int, rounds: int) -> dict[str, float]:
    with Sandbox(SandboxConfig(settle_after=None), db=str(db)) as sandbox:
        client = TestClient(sandbox.app, base_url="http://127.0.0.1:8790")
        with sandbox.store.read() as tx:
            empty = not tx.transfers(1).items
        if empty:
            fill(client, transfers)
        for path in ("/sandbox/certification", "/sandbox/"):  # warm
            assert client.get(path).status_code == 200
        certification, listing = [], []
        for _ in range(rounds):
            started = time.perf_counter()
            client.get("/sandbox/certification")
            certification.append(time.perf_counter() - started)
            started = time.perf_counter()
            client.get("/sandbox/")
            listing.append(time.perf_counter() - started)
    return {"certification_ms": statistics.median(certification) * 1000,
            "transfers_ms": statistics.median(listing) * 1000,
            "ratio": statistics.median(c / t for c, t in zip(certification, listing))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transfers", type=int, default=2500)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--db", type=Path, help="a sandbox database to fill once and reuse (default: a fresh one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = args.db or Path(folder) / "pages.sqlite3"
        result = measure(db, args.transfers, args.rounds)
    print(f"certification page {result['certification_ms']:.1f} ms, transfers page {result['transfers_ms']:.1f} ms: "
          f"{result['ratio']:.1f}x (median of {args.rounds} interleaved rounds)")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
