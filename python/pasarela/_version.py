"""The one place the package version is written (pyproject.toml and the C build read it from here)."""

__version__ = "0.1.0"
