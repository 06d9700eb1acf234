"""The pure-Python reference implementation, under the short name ``pasarela.reference``.

Same API as :mod:`pasarela` (``Terminal``, ``canonical_json``), byte-identical output, no C.
"""

from .terminal.reference import Terminal, canonical_json, derive, formatted_date

__all__ = ["Terminal", "canonical_json", "derive", "formatted_date"]
