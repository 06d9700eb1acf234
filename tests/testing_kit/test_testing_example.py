"""docs/testing.md's complete example, examples/test_merchant_integration.py, runs as a merchant would run it: a
pytest session of its own (pytester, in a subprocess: the plugin loaded through its entry point), under
pytest-xdist with two workers, every test passing; and the guide shows that very file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "test_merchant_integration.py"


def test_the_example_test_file_passes_under_two_workers(pytester: pytest.Pytester,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_ADDOPTS"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(test_merchant_integration=EXAMPLE.read_text(encoding="utf-8"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "-W", "error")
    tests = len(re.findall(r"^def test_", EXAMPLE.read_text(encoding="utf-8"), flags=re.MULTILINE))
    assert tests == 6
    result.assert_outcomes(passed=tests)


def test_the_guide_includes_the_example_file() -> None:
    guide = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    assert "```{literalinclude} ../examples/test_merchant_integration.py" in guide


def test_the_guides_test_snippets_pass(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its first two Python blocks are test functions (the second uses the first's imports): they pass as written.
    (The third calls an endpoint of yours; the conformance run itself is the example file's last test.)"""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_ADDOPTS"):
        monkeypatch.delenv(name, raising=False)
    guide = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```$", guide, flags=re.MULTILINE | re.DOTALL)
    assert len(blocks) == 3 and all("def test_" in block for block in blocks)
    pytester.makepyfile(test_guide="\n\n".join(blocks[:2]))
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "error").assert_outcomes(passed=2)
