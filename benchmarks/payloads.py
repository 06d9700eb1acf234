"""Realistic terminal payloads of a given canonical size (64 B to 16 KiB)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pasarela import canonical_json

SIZES = [64, 256, 1024, 4096, 16384]


def payload_of_size(size: int) -> dict[str, Any]:
    """A charge-like payload whose JSON.stringify form is as close to `size` bytes as it gets (never above)."""
    payload: dict[str, Any] = {"amount": 125.5, "currency": "COP", "ref": "ord-1"}
    items: list[dict[str, Any]] = []
    n = 0
    while True:
        candidate = dict(payload, items=[*items, {"sku": f"SKU-{n:05d}", "qty": n % 7 + 1, "price": 1999.99 + n}])
        if len(canonical_json(candidate)) > size:
            break
        items.append(candidate["items"][-1])
        n += 1
    if items:
        payload["items"] = items
    # pad the reference to reach the exact size
    payload["ref"] += "x" * (size - len(canonical_json(payload)))
    return payload


def string_heavy_payload(size: int) -> dict[str, Any]:
    """A payload of a few members, one of them a long string, whose JSON.stringify form is `size` bytes: the
    string-heavy shape (payload_of_size is the items-heavy one, objects of {"sku","qty","price"})."""
    payload: dict[str, Any] = {"amount": 125.5, "currency": "COP", "ref": "ord-1", "note": ""}
    payload["note"] = "n" * (size - len(canonical_json(payload)))
    return payload


SHAPES = {"string-heavy": string_heavy_payload, "items-heavy": payload_of_size}
"""The two shapes of issue 42's measurements, by name."""


def main(argv: list[str]) -> None:
    """Writes DIR/payload-<size>.json for each size: orjson's text of the payload, what seal hands the C core
    (for benchmarks/seal_speed.c); with a SHAPE of SHAPES, DIR/payload-<shape>-<size>.json of that
    shape's payloads."""
    import orjson

    if len(argv) not in (1, 2) or (argv[1:] and argv[1] not in SHAPES):
        raise SystemExit(f"usage: python3 benchmarks/payloads.py DIR [{'|'.join(SHAPES)}]")
    for size in SIZES:
        if argv[1:]:
            Path(argv[0], f"payload-{argv[1]}-{size}.json").write_bytes(orjson.dumps(SHAPES[argv[1]](size)))
        else:
            Path(argv[0], f"payload-{size}.json").write_bytes(orjson.dumps(payload_of_size(size)))


if __name__ == "__main__":
    main(sys.argv[1:])
