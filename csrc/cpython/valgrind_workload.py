"""The workload scripts/hardening runs under valgrind for pasarela._fastcall: seals and opens through it (the IV
pool refilled, the workspace grown, a row returned with its facts), batches (their requests copied out through
it, or sealed into their objects), a refusal, the reader of opened payloads (parse.c: its key cache, declines,
escapes), and calls with bad arguments (the credentials given as a bare address among them)."""

import contextlib

import pasarela
from pasarela import AuthError, _binding, _fastcall

terminal = pasarela.Terminal("bc-7f3a1c2e9d", "SN-0042")
for i in range(600):
    sealed = terminal.seal({"n": i, "text": "x" * (i % 300)})
    assert terminal.open("POST", sealed.headers, sealed.body, now=sealed.timestamp)["n"] == i
sealed = terminal.seal({"big": "y" * 100000})  # grows the workspace
assert terminal.open("POST", sealed.headers, sealed.body, now=sealed.timestamp)["big"] == "y" * 100000
forged = {**sealed.headers, "Authorization": "Basic " + "0" * 128}
with contextlib.suppress(AuthError):
    terminal.open("POST", forged, sealed.body, now=sealed.timestamp)
Row = type("Row", (tuple,), {"__slots__": ()})
ws = _binding._workspace.buffers.ws_address
for args in [(1,), (terminal._native, ws, 1, "x", 0, None, Row, (), 0),
             (terminal._native, ws, sealed.timestamp, b"{}", 0, None, tuple, (), 0),
             (terminal._native, ws, sealed.timestamp, b"{}", 0, None, Row, [], 0)]:
    with contextlib.suppress(TypeError, ValueError, OverflowError):
        _fastcall.seal_json(*args)
for args in [(1,), (terminal._native, sealed.timestamp, {"a": 1}, b"short", Row, ()),
             (terminal._native, sealed.timestamp, {"a": 1}, None, tuple, ()),
             (terminal._native, "now", {"a": 1}, None, Row, ()),
             (terminal._native.address, None, {"a": 1}, None, Row, ())]:  # a bare address: refused
    with contextlib.suppress(TypeError, ValueError, OverflowError):
        _fastcall.seal_payload(*args)
assert _fastcall.seal_payload(terminal._native, sealed.timestamp, {"key": 1}, None, Row, ()) is None
assert type(_fastcall.seal_payload(terminal._native, sealed.timestamp, {"t": "w" * 9000}, bytes(16), Row,
                                   ())) is Row  # its text grown past the writer's first block
assert type(_fastcall.seal_payload(terminal._native, None, {"a": 1}, bytes(16), Row, ())) is Row  # now
for args in [(terminal._native, None, sealed.body, 0.0, 300.0), (terminal._native, {}, "x", 0.0, 1.0),
             (1, 2)]:
    with contextlib.suppress(TypeError, AttributeError):
        _fastcall.open_post(*args)
assert _fastcall.open_post(terminal._native, {}, sealed.body, 0.0, 1.0) is None  # no headers: the slower way
iv = bytes(16)
row = _fastcall.seal_json(terminal._native, ws, sealed.timestamp, b'{"a":null}', 0, iv, Row, ("h",), 0)
flagged = _fastcall.seal_json(terminal._native, ws, sealed.timestamp, b'{"a":null}', 0, iv, Row, ("h",),
                              _binding.FACT_NULL)
assert type(row) is Row and type(flagged) is tuple and flagged[0] == row and row[0] == "h", (row, flagged)
for size in (64, 1024, 20000):  # Sealed objects made by _fastcall.rows (shared buffers) and seal_rows (one each)
    batch = terminal.seal_many([{"n": n, "text": "z" * size} for n in range(40)])
    assert [terminal.open("POST", s.headers, s.body, now=s.timestamp)["n"] for s in batch] == list(range(40))
mixed = terminal.seal_many([{"n": 1}, {"n": 2}, b'{"n": 3}', {"n": 4}])  # an item the batch leaves to seal()
assert [terminal.open("POST", s.headers, s.body, now=s.timestamp)["n"] for s in mixed] == [1, 2, 3, 4]
texts = [b'{"a":"' + b"q" * 900 + b'"}', b"[1]"]  # seal_rows: one sealed into its object, one refused (b"")
blob = _binding.ffi.new("uint8_t[]", b"".join(texts))
lens = _binding.ffi.new("size_t[]", [len(text) for text in texts])
statuses = _binding.ffi.new("int[]", 2)
pair = _binding.ffi.new("pasarela_credentials *[]", [terminal._native.struct] * 2)
_binding._workspace.buffers.refill_ivs()
rows = _fastcall.seal_rows(Row, ["a", "b"], 0, (), _binding._address(pair), _binding._workspace.buffers.ws_address,
                           sealed.timestamp, _binding._address(blob), _binding._address(lens), 2,
                           _binding._address(statuses))
assert rows[0][1][:len(texts[0])] == texts[0] and rows[1] == ("b", b"", 0, 0) and statuses[0] == 0, rows
lens = _binding.ffi.new("size_t[]", [3, 3])
out = _binding.ffi.new("char[]", b"abcdef")
rows = _fastcall.rows(Row, ["a", "b"], 0, (1,), _binding._address(out), _binding._address(lens),
                      _binding._address(lens), 2, 4, 8)
assert rows == [("a", 1, b"abc", 3, 0), ("b", 1, b"def", 3, 0)] and type(rows[1]) is Row, rows
for bad in [(1,), (tuple, ["a"], 0, (), 1, 1, 1, 2, 0, 0), (int, [], 0, (), 1, 1, 1, 0, 0, 0)]:
    with contextlib.suppress(TypeError, ValueError, OverflowError):
        _fastcall.rows(*bad)
# the JSON.stringify writer (stringify.c): written, grown past its first block, declined, refused
assert _fastcall.stringify({"a": [1.5, -0.25, "\x01\"", None, True, {"b": ()}]}) == \
    b'{"a":[1.5,-0.25,"\\u0001\\"",null,true,{"b":[]}]}'
assert _fastcall.stringify({"long": "\n" * 5000}) == b'{"long":"' + b"\\n" * 5000 + b'"}'
assert _fastcall.stringify({"items": [{"sku": "a", "qty": 1}] * 3}) == \
    b'{"items":[' + b",".join([b'{"sku":"a","qty":1}'] * 3) + b"]}"  # keys copied from the writer's own
for declined in ({"key": 1}, {"s": "\ud800"}, {"f": float("nan")}, {"n": 2**60}, [1], {"big": "y" * 40000}):
    assert _fastcall.stringify(declined) is None
lens = _binding.ffi.new("size_t[]", 2)
blob = _binding.ffi.new("uint8_t[]", 128)
assert _fastcall.stringify_into([{"a": 1}, {"a": 2}], 0, 2, _binding._address(blob), 128, _binding._address(lens)) == 14
assert _fastcall.stringify_into([{"a": "x" * 200}], 0, 1, _binding._address(blob), 128, _binding._address(lens)) == -2
for bad in [(1,), ([{}], 2, 1, 1, 1, 1), ((), 0, 0, 1, 1, 1)]:
    with contextlib.suppress(TypeError, ValueError):
        _fastcall.stringify_into(*bad)
# the reader of opened payloads (parse.c): headers of another mapping type, its keys remembered across calls and
# replaced, a list longer than it holds, escapes (on the stack and on the heap), declines
class Headers(dict):  # not a dict exactly: read through its get method
    pass
assert terminal.open("POST", Headers(sealed.headers), sealed.body, now=sealed.timestamp)["big"] == "y" * 100000
for i in range(200):
    value = {f"k{i % 90}": [i] * 40, "e": "\u00e9\n" * (i % 3) + "\"" * (i * 3)}
    sealed = terminal.seal(value)
    assert terminal.open("POST", sealed.headers, sealed.body, now=sealed.timestamp) == value
for text in (b'{"a":"\\ud800"}', b'{"a":1', b'{"a":1} ', b'{"a":12345678901234567890}', b'[' * 70 + b']' * 70,
             b'{"a":"\xff"}', b'{"a":1e400}', b'{"' + b"k" * 100 + b'":"' + b"\\n" * 300 + b'"}'):
    _fastcall.parse(text)
    _fastcall.parse_canonical(text)
# the canonical reading of a text signed as sent: confirmed (a 17-digit double against repr's digits), not confirmed
# (the canonicalizer alone then confirms it), and declined (then open_request's verdict)
for value in ({"a": 0.1 + 0.2, "b": [1] * 50}, {"b": [{"c": 1.5}] * 50, "1": 2}, {"a": [{"__proto__": 1}] * 9},
              {"a": [2**60] * 9}):
    sealed = terminal.seal(value)
    assert terminal.open("POST", sealed.headers, sealed.body, now=sealed.timestamp) == value
for text in (b'{"a":1.50}', b'{"a":1,"a":2}', b'{"a":"\\u0041"}', b'{"key":1}', b'{"a":1e21}', b'[1]', b"{"):
    _fastcall.parse_canonical(text)
with contextlib.suppress(TypeError):
    _fastcall.parse("not bytes")  # type: ignore[arg-type]
print("fastcall workload: done,", _fastcall.__file__)
