"""benchmarks/sandbox_pages.py runs as its header says (its timings are never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sandbox_pages.py"


def test_it_times_the_certification_page_against_the_transfers_page(tmp_path: Path) -> None:
    db = tmp_path / "pages.sqlite3"
    for _ in range(2):  # fills the database, then times it again as it is
        run = subprocess.run([sys.executable, str(SCRIPT), "--transfers", "14", "--rounds", "1", "--db", str(db)],
                             capture_output=True, text=True, timeout=120, check=True)
        result = json.loads(run.stdout.splitlines()[-1])
        assert set(result) == {"certification_ms", "transfers_ms", "ratio"} and min(result.values()) > 0
    from pasarela.sandbox.store import Store

    with Store(db) as store, store.read() as tx:
        assert len(tx.transfer_lives()) == 14  # filled once
