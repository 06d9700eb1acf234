"""The README's first steps, as a newcomer meets them: two commands that each work by themselves, the same
ones CI runs, and a working directory left clean by the sandbox (runs in the source tree only)."""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest

import pasarela
from pasarela.sandbox.server import DEFAULT_DB

ROOT = Path(__file__).resolve().parents[2]


def _readme_commands() -> dict[str, str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("## The two commands", 1)[1].split("\n\n", 2)[1]
    return dict(re.findall(r"^\| (.+?) \| `(.+?)` \|$", table, flags=re.MULTILINE))


def _script_lines(command: str) -> list[str]:
    script = ROOT / command
    assert os.access(script, os.X_OK)
    return [line for line in script.read_text().splitlines() if line and not line.startswith("#")]


@pytest.mark.parametrize(("command", "need"), [("scripts/demo", "demo"), ("scripts/test", "test"),
                                               ("scripts/docs", "docs")])
def test_each_command_sets_up_what_it_needs_then_runs_in_the_project_venv(command: str, need: str) -> None:
    lines = _script_lines(command)
    assert lines[0] == "set -euo pipefail"
    assert lines[2].split()[:2] == ["scripts/setup", need]  # what is missing is set up before anything runs
    assert lines[3].startswith("exec ")  # so the job's exit status is the script's
    assert "python3" not in lines[3] and " .venv/bin/" in lines[3]  # never the interpreter on the PATH


def test_the_readme_gives_two_commands() -> None:
    assert _readme_commands() == {"run the main job (seal the example payload)": "scripts/demo",
                                  "run the tests": "scripts/test"}


def test_ci_runs_the_readme_commands_first_then_the_docs() -> None:
    parts = re.findall(r"^part (\"[^\"]+\"|\S+) (.+)$", (ROOT / ".ci" / "run").read_text(), flags=re.MULTILINE)
    run = [command for _, command in parts]
    assert run[:3] == ["scripts/demo", "scripts/test", "scripts/docs"]
    assert {"scripts/hardening", "scripts/wheel-check"} <= set(run)
    assert not any(command.startswith(("python3 ", "python ")) for command in run)  # the gate runs from .venv too


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm", "-journal"])
def test_the_sandbox_database_is_ignored_by_git(suffix: str) -> None:
    name = DEFAULT_DB + suffix
    result = subprocess.run(["git", "check-ignore", "--no-index", "-q", name], cwd=ROOT)
    assert result.returncode == 0, f"{name} would show up as untracked"


def test_the_terminal_reference_lists_as_refused_nothing_that_seal_accepts() -> None:
    readme = " ".join((ROOT / "docs" / "terminal.md").read_text(encoding="utf-8").split())
    refused = readme.split("Anything else —", 1)[1].split("— raises", 1)[0]
    assert "UUID" not in refused
    value = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert pasarela.canonical_json({"id": value}) == b'{"id":"12345678-1234-5678-1234-567812345678"}'
    assert "a `uuid.UUID` is written as its text" in readme


def test_the_scripts_install_python_packages_only_into_a_virtual_environment() -> None:
    """Nothing goes into the interpreter on the PATH: every pip call is one of .venv's python ("$PY" in scripts/setup)
    or of a venv the script made itself (wheel-check's)."""
    calls = []  # (script, the interpreter whose pip installs)
    for script in sorted((ROOT / "scripts").iterdir()):
        for line in script.read_text().splitlines():
            command = line.split("#", 1)[0]
            calls += [(script.name, python) for python in re.findall(r"(\S+) -m pip install\b", command)]
            assert not re.search(r"(^|[;&|(]|\bexec|\benv)\s*pip3? install\b", command), f"{script.name}: {line}"
    assert calls  # scripts/setup installs the package, so there is at least one
    for script, python in calls:
        assert python in ('"$PY"', '"$venv/bin/python"'), f"{script}: {python} -m pip install"
    assert 'PY=$VENV/bin/python' in (ROOT / "scripts" / "setup").read_text()


def test_the_docs_install_no_system_package() -> None:
    """scripts/setup docs calls apt for nothing (python3-doc had upgraded eight of Debian's python3.11 packages): the
    docs' links into Python's documentation read the inventory kept in docs/_inventories/."""
    setup = (ROOT / "scripts" / "setup").read_text()
    blocks = re.findall(r"^if wants docs; then(.*?)\bfi$", setup, flags=re.MULTILINE | re.DOTALL)
    assert blocks  # the docs extra is set up somewhere
    for block in blocks:
        assert not re.search(r"\b(apt_install|apt-get|system_packages|system_commands)\b", block), block
    conf = (ROOT / "docs" / "conf.py").read_text()
    [inventory] = re.findall(r'^PYTHON_INVENTORY = Path\(__file__\)\.parent / "_inventories" / "([^"]+)"$', conf,
                             flags=re.MULTILINE)
    assert (ROOT / "docs" / "_inventories" / inventory).read_bytes().startswith(b"# Sphinx inventory version 2\n")
