"""benchmarks/postgres_stores.py measures what it says (issue 55, goal 5): a short run of its in-process parts, on the
servers it starts itself, refuses to report a run in which an answer was not the one timed (a refused request, a
delivery not "received", a merchant row missing or written twice, a signature refused or not pruned), and prints
each table with figures that are numbers. Its served part runs benchmarks/http_serving.py's servers, whose work
tests/instruments/test_http_serving.py checks (the postgres kind included)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import postgres_stores


def test_a_short_run_prints_every_table_and_its_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert postgres_stores.main(["--rounds", "1", "--requests", "120", "--deliveries", "40", "--signatures", "3000",
                                 "--windows", "2", "--parts", "replay,webhooks,size", "--no-fsync"]) == 0
    out = capsys.readouterr().out
    figures = json.loads(out.splitlines()[-1])
    replay = figures["replay"]
    assert set(replay) == {"1", "16"}
    for kind in postgres_stores.REPLAY_KINDS:
        assert replay["1"][f"{kind}_us"] > 0 and replay["16"][f"{kind}_us"] > 0
    assert all(ratio > 0 for ratio in figures["webhooks"].values())
    size = figures["size"]
    assert size["signatures"] == 3000 and len(size["sizes"]) == 2
    assert all(heap > 0 and index > 0 for heap, index in size["sizes"])
    for title in ("Replay check, in one process", "Webhook deliveries handled per second", "The replay table"):
        assert title in out
    assert "Served by uvicorn" not in out  # not asked for


def test_it_refuses_a_part_it_does_not_have() -> None:
    with pytest.raises(SystemExit):
        postgres_stores.main(["--parts", "replay,everything"])
