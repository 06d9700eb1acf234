"""benchmarks/node_verify.js, the Node.js verify that benchmarks/gate.py times against Terminal.open (issue 42, goal
1), is a working oracle: it accepts the requests Terminal.seal makes, of both payload shapes, and refuses a tampered
one (a verify that refused everything would time fast). Node is required: without it these tests fail."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import gate


@pytest.fixture(autouse=True)
def _node() -> None:
    assert shutil.which("node"), "`node` is not installed: the Node.js verify oracle needs Node.js"


def test_it_accepts_what_seal_makes_of_both_shapes() -> None:
    requests = gate.node_verify_requests([64, 1024, 16384])
    assert len(requests) == 6
    assert gate.run_node_verify(requests, 0, check=True) == {name: {"ok": True} for name in requests}


def _tampered(request: dict[str, object], **changes: str) -> dict[str, object]:
    headers = dict(request["headers"])  # type: ignore[call-overload]
    body = str(request["body"])
    if "body" in changes:
        body = changes.pop("body")
    return {"headers": {**headers, **changes}, "body": body}


def test_it_refuses_a_tampered_request_and_will_not_time_one() -> None:
    good = gate.node_verify_requests([256])["items-heavy 256"]
    body = str(good["body"])
    flipped = body[:-3] + ("0" if body[-3] != "0" else "1") + body[-2:]  # the ciphertext's last block: its padding
    signature = str(good["headers"]["authorization"])  # type: ignore[index]
    requests = {
        "good": good,
        "signature": _tampered(good, authorization=signature[:-1] + ("0" if signature[-1] != "0" else "1")),
        "ciphertext": _tampered(good, body=flipped),
        "timestamp": _tampered(good, timestamp=str(int(good["headers"]["timestamp"]) + 1)),  # type: ignore[index]
    }
    verdicts = gate.run_node_verify(requests, 0, check=True)
    assert verdicts["good"] == {"ok": True}
    assert verdicts["signature"] == {"ok": False, "reason": "signature mismatch"}
    for name in ("ciphertext", "timestamp"):  # a wrong key (another minute's, or not at all) or a broken padding
        assert verdicts[name]["ok"] is False, name  # type: ignore[index]
    with pytest.raises(RuntimeError, match="refused signature"):
        gate.run_node_verify({"good": good, "signature": requests["signature"]}, 0.001)
