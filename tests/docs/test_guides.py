"""The task guides run as written, every block, against a real sandbox (tests/support/guide_runner.py says how each kind
of block is run): a guide that stops working fails here, and so does a guide whose programs print other than
what it says they print.

Each merchant guide also ends in the state its text promises: the order paid (or as its flow ends), every
certification rule the sandbox can observe passing or not yet observed (``pasarela sandbox certify`` exits 0)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.doc_blocks import fenced
from support.guide_runner import ROOT, GuideRun

DOCS = ROOT / "docs"
GUIDES = ["../README.md", "gateway.md", "mexico-clabe.md", "ecuador.md", "colombia-qr.md", "colombia-pse.md",
          "multi-node.md", "operating.md"]


@pytest.mark.parametrize("page", GUIDES)
def test_the_guide_runs_as_written(page: str, tmp_path: Path) -> None:
    with GuideRun(DOCS / page, tmp_path) as run:
        run.run()
    assert run.outputs, "the guide printed nothing: nothing was checked"


def test_every_guide_says_what_its_programs_print() -> None:
    """So that running one checks what it did, not only that it did not raise."""
    for page in GUIDES:
        assert any(block.language == "text" for block in fenced(DOCS / page)), page


REFERENCE_PAGES = ["terminal.md", "cards-and-transfers.md", "sandbox.md"]
"""Pages whose snippets run in order in one session each: tests/docs/test_docs.py."""
PAGES_WITH_TESTS_OF_THEIR_OWN = {
    "postgres.md": "tests/stores/test_postgres_guide.py and tests/stores/test_handoff_rq.py, against a real "
                   "PostgreSQL and RQ",
    "testing.md": "tests/testing_kit/test_testing_example.py, in a pytest session of its own",
}


def test_every_page_with_code_is_run_by_a_test() -> None:
    """A page of the site (or the README) that shows code is a guide run here, a reference page test_docs runs or
    a page with tests of its own: no page is left that no test ran."""
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    with_code = {page.relative_to(DOCS).as_posix() if page.parent == DOCS else "../README.md"
                 for page in pages if fenced(page)}
    assert with_code == set(GUIDES) | set(REFERENCE_PAGES) | set(PAGES_WITH_TESTS_OF_THEIR_OWN)
