"""Types of pasarela._fastcall (csrc/cpython/fastcall.c), private to pasarela._binding."""

from typing import Any, Optional, TypeVar, Union

def connect(seal_json_address: int, open_request_address: int, layout: tuple[int, ...], utf8_address: int, /
            ) -> None: ...
_Row = TypeVar("_Row", bound=tuple[Any, ...])

def seal_json(credentials: int, ws: int, timestamp: int, json: bytes, flags: int, iv: Optional[bytes],
              row_type: type[_Row], head: tuple[Any, ...], check_facts: int, /
              ) -> Union[_Row, tuple[_Row, int], int]: ...
def open_post(credentials: int, ws: int, timestamp_text: bytes, now: float, tolerance: float, authorization: bytes,
              body: bytes, /) -> Union[tuple[bytes, int], int]: ...

def rows(row_type: type[_Row], column: list[Any], column_start: int, common: tuple[Any, ...], out: int,
         out_lens: int, plaintext_lens: int, n: int, buffer_bytes: int, shared_request_bytes: int, /
         ) -> list[_Row]: ...

def stringify(payload: object, /) -> Optional[bytes]: ...
def stringify_into(payloads: list[Any], start: int, stop: int, out: int, cap: int, lens: int, /) -> int: ...
