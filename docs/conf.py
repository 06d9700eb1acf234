"""Sphinx configuration of pasarela's documentation site (built by scripts/docs into build/docs/).

The pages are Markdown (MyST): index.md includes the README, the guides are docs/*.md, and docs/api/ documents
every public module with autodoc from the docstrings and the type hints. A build fails (scripts/docs runs
sphinx-build -W) on any warning, and on any public name that no API page documents (check_api_coverage below).
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

import pasarela

project = "pasarela"
author = "pasarela developers"
copyright = "2026, pasarela developers"
release = version = pasarela.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.intersphinx"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_inventories"]
myst_heading_anchors = 3  # links to a page's sections (performance.md#threads, ...)

autodoc_typehints = "description"  # parameters and return types from the annotations, beside their text
autodoc_member_order = "bysource"
# every name of a module's __all__, with a docstring or not (constants, type aliases)
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}
# Python's own inventory, kept in the repository (docs/_inventories/README.md says whence): this machine and CI
# reach no site but the package registries, and a system package for it (python3-doc) upgraded the system's Python
PYTHON_INVENTORY = Path(__file__).parent / "_inventories" / "python-3.11.objects.inv"
intersphinx_mapping = {"python": ("https://docs.python.org/3", str(PYTHON_INVENTORY))}

html_theme = "furo"
html_title = f"pasarela {release}"

# The modules whose public names (their __all__) the API reference must document, each somewhere in docs/api/
# (a name re-exported by several of them is documented once). A new public module belongs here and on a page.
PUBLIC_MODULES = [
    "pasarela",
    "pasarela.errors",
    "pasarela.terminal.envelope",
    "pasarela.terminal.request",
    "pasarela.terminal.diagnose",
    "pasarela.terminal.stringify",
    "pasarela.terminal.replay",
    "pasarela.terminal.replay_redis",
    "pasarela.reference",
    "pasarela.asgi",
    "pasarela.auth_limit",
    "pasarela.logging",
    "pasarela.httpx",
    "pasarela.requests_adapter",
    "pasarela.http",
    "pasarela.cards",
    "pasarela.transfers",
    "pasarela.transfers.pending_redis",
    "pasarela.transfers.webhook_dedup_redis",
    "pasarela.postgres",
    "pasarela.terminal.replay_postgres",
    "pasarela.transfers.webhook_dedup_postgres",
    "pasarela.transfers.inbox_postgres",
    "pasarela.transfers.pending_postgres",
    "pasarela.sandbox",
    "pasarela.testing",
    "pasarela.testing.plugin",
    "pasarela.testing.conformance",
]


def _documented_object(full_name: str) -> Any:
    module_name, _, name = full_name.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError, ValueError):
        return None  # a class's member, or a module


def _identifiable(value: Any) -> bool:
    """Whether the object itself shows which name documents it: not a number, bool or None, which two unrelated
    names may share."""
    return value is not None and not isinstance(value, (int, float))


def check_api_coverage(app: Sphinx, env: BuildEnvironment) -> None:
    """Warns (an error under -W) for every public name that no API page documents: by its own name, or, for an
    object re-exported by several modules, by any of them."""
    objects = env.get_domain("py").objects
    documented = {id(value) for value in map(_documented_object, objects) if _identifiable(value)}
    logger = logging.getLogger(__name__)
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if f"{module_name}.{name}" in objects:
                continue
            if _identifiable(value) and id(value) in documented:
                continue
            logger.warning("the API reference does not document %s.%s (docs/api/)", module_name, name)


def drop_type_docstring(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """A constant without a doc comment of its own (one a package re-exports) shows its value, not the docstring of
    its type ("str(object='') -> str")."""
    own = type(obj).__doc__
    if what in ("data", "attribute") and own and "\n".join(lines).strip() == inspect.cleandoc(own).strip():
        lines.clear()


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("autodoc-process-docstring", drop_type_docstring)
    app.connect("env-check-consistency", check_api_coverage)
    return {"parallel_read_safe": True}
