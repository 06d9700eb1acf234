"""pasarela.http.json_tree's non-recursive writer against json.dumps (the text it stands in for where json's recursive
encoder cannot finish from the caller's stack): the same text, or the same kind of refusal, for any value."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pasarela.http.json_tree import write_compact
from pasarela.sandbox.jsontext import number

_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats() | st.text()
            | st.decimals(allow_nan=False, allow_infinity=False, places=2))
_KEYS = st.text() | st.integers() | st.floats() | st.booleans() | st.none()
_VALUES = st.recursive(
    _SCALARS,
    lambda children: st.lists(children) | st.tuples(children, children) | st.dictionaries(_KEYS, children),
    max_leaves=30,
)


def _outcome(write: Any, value: Any) -> tuple[str, str]:
    try:
        return "text", write(value)
    except (ValueError, TypeError) as exc:
        return "refused", type(exc).__name__


@given(_VALUES, st.booleans(), st.booleans())
def test_the_writer_gives_json_dumps_text(value: Any, ensure_ascii: bool, allow_nan: bool) -> None:
    expected = _outcome(lambda v: json.dumps(v, separators=(",", ":"), default=number, ensure_ascii=ensure_ascii,
                                             allow_nan=allow_nan), value)
    written = _outcome(lambda v: write_compact(v, number, ensure_ascii=ensure_ascii, allow_nan=allow_nan), value)
    assert written == expected


def test_the_writer_refuses_what_json_dumps_refuses() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    for value in (cycle, {"a": float("nan")}, {float("inf"): 1}, {(1, 2): 1}, {"a": {1, 2}}, Decimal("NaN")):
        with_json = _outcome(lambda v: json.dumps(v, separators=(",", ":"), allow_nan=False, default=number), value)
        assert with_json[0] == "refused"
        assert _outcome(lambda v: write_compact(v, number), value) == with_json
