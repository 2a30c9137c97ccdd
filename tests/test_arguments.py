"""Arguments that both backends must judge alike: the same value accepted, or the same exception
type with the same message (docs/API.md). ``max_frame_bytes`` is an ``int`` (not a ``bool``) from
1 to ``MAX_FRAME_BYTES``, or None for the default, on Framer, FrameDecoder and ToolCallStore
alike; a flag (``keepends``, ``joined``, ``changes``) is a ``bool``; inputs are bytes, str or a
buffer of bytes. The last test draws any argument of any public entry point from a wide space of
types and values (buffers of every format, subclasses, huge and odd numbers, containers, objects
of the backend itself) and requires the same outcome from both."""

from __future__ import annotations

import array
import copy
from typing import Any, Callable, Dict, Tuple

import pytest
from hypothesis import given
from hypothesis import strategies as st


class Size(int):
    pass


class Blob(bytes):
    pass


ODD_VALUES = [
    True,
    False,
    None,
    0,
    1,
    -1,
    2**32 - 2,
    2**32 - 1,
    2**63,
    2**64,
    -(2**70),
    Size(5),
    "1",
    1.0,
    b"1",
    [],
]


def outcome(make: Callable[[], Any]) -> Tuple[str, str]:
    try:
        obj = make()
    except Exception as e:  # noqa: BLE001 - the outcome under comparison
        return type(e).__name__, str(e)
    return "ok", str(obj.max_frame_bytes) if hasattr(obj, "max_frame_bytes") else "ok"


def judge(backend: Any, name: str, value: Any) -> Tuple[str, str]:
    make = constructors(backend)[name]
    return outcome(lambda: make(value))


def constructors(backend):
    return {
        "Framer": lambda v: backend.Framer(max_frame_bytes=v),
        "FrameDecoder": lambda v: backend.FrameDecoder(max_frame_bytes=v),
        "ToolCallStore": lambda v: backend.ToolCallStore(max_frame_bytes=v),
    }


@pytest.mark.parametrize("value", ODD_VALUES, ids=repr)
def test_max_frame_bytes_judged_alike(both_backends, value):
    native, fallback = both_backends
    for name in ("Framer", "FrameDecoder", "ToolCallStore"):
        got = judge(native, name, value)
        assert got == judge(fallback, name, value), (name, value)
        assert got[0] in ("ok", "TypeError", "ValueError"), got


@pytest.mark.parametrize("value", [True, False, "1", 1.0], ids=repr)
def test_max_frame_bytes_not_an_int(backend, value):
    for make in constructors(backend).values():
        with pytest.raises(TypeError, match=f"max_frame_bytes must be an int, found {type(value).__name__}$"):
            make(value)


def test_max_frame_bytes_none_is_the_default(backend):
    assert backend.Framer(max_frame_bytes=None).max_frame_bytes == backend.DEFAULT_MAX_FRAME_BYTES
    assert backend.FrameDecoder(max_frame_bytes=None).max_frame_bytes == backend.DEFAULT_MAX_FRAME_BYTES


@given(st.one_of(st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False), st.text(max_size=3)))
def test_max_frame_bytes_property(value):
    from conftest import FALLBACK, NATIVE

    if NATIVE is None or FALLBACK is None:
        pytest.fail("both backends are needed")
    for name in ("Framer", "FrameDecoder", "ToolCallStore"):
        assert judge(NATIVE, name, value) == judge(FALLBACK, name, value), (name, value)


INPUT_VALUES = [
    b'{"jsonrpc":"2.0","id":1,"result":{}}\n',
    bytearray(b'{"jsonrpc":"2.0","id":1,"result":{}}\n'),
    memoryview(b'{"jsonrpc":"2.0","id":1,"result":{}}\n'),
    memoryview(b'{"jsonrpc":"2.0","id":1,"result":{}}\n').cast("c"),
    memoryview(b'{"jsonrpc":"2.0","id":1,"result":{}}\n').cast("b"),
    memoryview(b'{"jsonrpc":"2.0","id":1,"result":{}}\n  ')[::1],
    array.array("B", b'{"jsonrpc":"2.0","id":1,"result":{}}\n'),
    array.array("i", [1, 2, 3]),
    memoryview(array.array("i", [1, 2, 3])),
    Blob(b'{"jsonrpc":"2.0","id":1,"result":{}}\n'),
    '{"jsonrpc":"2.0","id":1,"result":{}}\n',
    5,
    None,
    [1],
]


def input_outcome(call: Callable[[], Any]) -> Tuple[str, str]:
    try:
        return "ok", repr(call())
    except Exception as e:  # noqa: BLE001 - the outcome under comparison
        return type(e).__name__, str(e)


def uses(backend: Any, value: Any) -> dict:
    return {
        "loads": lambda: backend.loads(value),
        "decode": lambda: backend.decode(value),
        "FrameDecoder.feed": lambda: backend.FrameDecoder().feed(value),
        "Framer.feed": lambda: backend.Framer().feed(value),
        "ToolCallStore.feed": lambda: backend.ToolCallStore().feed(value),
    }


@pytest.mark.parametrize("value", INPUT_VALUES, ids=lambda v: type(v).__name__)
def test_input_types_judged_alike(both_backends, value):
    # A buffer of bytes (format "B" or "c") is read as bytes on both backends; a buffer of other
    # items (int32, signed bytes) is refused, not reinterpreted.
    native, fallback = both_backends
    for name, call in uses(native, value).items():
        got = input_outcome(call)
        want = input_outcome(uses(fallback, value)[name])
        assert got == want, (name, value)


@pytest.mark.parametrize("changes", [None, 0, 1, "yes", 1.0, True, False], ids=repr)
def test_changes_must_be_a_bool_alike(both_backends, changes):
    native, fallback = both_backends
    for method in ("feed", "finish"):

        def call(backend: Any, method: str = method) -> Any:
            store = backend.ToolCallStore()
            return store.feed(b"{}\n", changes=changes) if method == "feed" else store.finish(changes=changes)

        got = input_outcome(lambda: call(native))
        assert got == input_outcome(lambda: call(fallback)), (method, changes)
        assert got[0] == ("ok" if type(changes) is bool else "TypeError"), got


# ------------------------------------------------------------------------------------------------
# Every public entry point, any argument: a property over a wide space of types and values. Both
# backends must give the same result (compared by ``repr``, a store by its checkpoint) or raise
# the same exception type with the same message.

FRAME = b'{"jsonrpc":"2.0","id":1,"result":{}}'
TOOL_CALL = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
    b'{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","status":"completed"}}}'
)
PAYLOADS = [
    FRAME,
    FRAME + b"\n",
    FRAME + b"\r\n",
    TOOL_CALL + b"\n" + FRAME,
    b'[{"jsonrpc":"2.0","method":"m"},' + TOOL_CALL + b"]",
    b"[]",
    b"{",
    b"",
    b"\n\n",
    b"\xff\xfe",
    b'"\\ud800"',
    b"1e400",
    b"-0",
    b'{"a":1,"a":2}',
    b'{"protocolVersion":2,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{}}',
    b'{"protocolVersion":3}',
]


class Text(str):
    pass


class Items(list):
    pass


class Mapping(dict):
    pass


class Bytesy:
    """Not a buffer, but convertible with ``bytes()``: refused like any other object."""

    def __bytes__(self) -> bytes:
        return FRAME


class Own:
    """Stands for an object of the backend under test: its Message, Batch or DecodeError."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __repr__(self) -> str:
        return f"Own({self.what})"

    def resolve(self, backend: Any) -> Any:
        if self.what == "message":
            return backend.decode(TOOL_CALL)
        if self.what == "batch":
            return backend.decode(b"[" + FRAME + b"," + TOOL_CALL + b"]")
        return backend.FrameDecoder().feed(b"{\n")[0]


def _resolve(backend: Any, value: Any) -> Any:
    if isinstance(value, Own):
        return value.resolve(backend)
    if type(value) is list:
        return [_resolve(backend, v) for v in value]
    if type(value) is dict:
        return {k: _resolve(backend, v) for k, v in value.items()}
    return value


def _buffers(payload: bytes) -> list:
    """``payload`` as every kind of buffer and string a caller might pass."""
    padded = bytes(b for pair in zip(payload, b"\x00" * len(payload)) for b in pair)
    four = payload + b" " * (-len(payload) % 4)
    return [
        payload,
        bytearray(payload),
        Blob(payload),
        memoryview(payload),
        memoryview(payload).cast("c"),
        memoryview(payload).cast("b"),
        memoryview(padded)[::2],  # not contiguous
        memoryview(four).cast("i"),
        memoryview(four).cast("B", [len(four) // 4, 4]) if four else memoryview(b""),  # two dimensions
        array.array("B", payload),
        array.array("b", payload),
        array.array("i", [1, 2, 3]),
        payload.decode("utf-8", "surrogateescape"),  # lone surrogates where the bytes were invalid
        Text(payload.decode("utf-8", "replace")),
        [payload],
    ]


SCALARS = [
    None,
    True,
    False,
    0,
    1,
    2,
    -1,
    Size(2),
    2**31,
    2**32 - 2,
    2**32 - 1,
    2**63,
    2**64,
    -(2**70),
    1.0,
    1.5,
    float("nan"),
    float("inf"),
    -0.0,
    "",
    "agent",
    "client",
    "AGENT",
    Text("agent"),
    "1",
    "\ud800",
    b"agent",
    (),
    [],
    {},
    object,
]
VALUES = [
    {"a": 1},
    {"jsonrpc": "2.0", "id": 1, "result": None},
    {"jsonrpc": "2.0", "method": "m", "params": {"x": [1, 2.5, None, True, "é"]}},
    Mapping(jsonrpc="2.0", method="m"),
    Items([{"jsonrpc": "2.0", "method": "m"}]),
    [{"jsonrpc": "2.0", "method": "m"}],
    {"a": float("nan")},
    {"a": b"x"},
    {1: "int key"},
    {"a": (1, 2)},
    {"a": {1, 2}},
    {"a": Size(7), "b": Text("t"), "c": -0.0, "d": 1e308, "e": 2**100},
    {"\ud800": 1},
    {"a": "\udfff"},
    [[[[[]]]]],
    Bytesy(),
    Own("message"),
    Own("batch"),
    Own("error"),
    [Own("message"), Own("error")],
    [Own("error")],
    {"jsonrpc": "2.0", "id": 1, "result": Own("message")},
]


def _value(data: Any) -> Any:
    """Any argument: a scalar, a container, or a payload as one kind of buffer."""
    kind = data.draw(st.sampled_from(["scalar", "value", "buffer"]))
    if kind == "scalar":
        return data.draw(st.sampled_from(SCALARS))
    if kind == "value":
        return data.draw(st.sampled_from(VALUES))
    buffers = _buffers(data.draw(st.sampled_from(PAYLOADS)))
    return buffers[data.draw(st.integers(0, len(buffers) - 1))]  # by index: some cannot be hashed


def _call(backend: Any, name: str, args: Tuple[Any, ...]) -> Tuple[str, str]:
    """The outcome of entry point ``name`` of ``backend`` on ``args``: ("ok", what it gave back)
    or (exception type, message)."""
    try:
        result = _ENTRY_POINTS[name](backend, *(_resolve(backend, a) for a in args))
    except Exception as e:  # noqa: BLE001 - the outcome under comparison
        return type(e).__name__, str(e)
    if isinstance(result, backend.ToolCallStore):
        return "ok", f"store {result.to_json()!r} line={result.line}"
    return "ok", repr(result)


def _store(backend: Any, protocol_version: Any, max_tool_calls: Any, max_frame_bytes: Any) -> Any:
    return backend.ToolCallStore(protocol_version, max_tool_calls=max_tool_calls, max_frame_bytes=max_frame_bytes)


_ENTRY_POINTS: Dict[str, Callable[..., Any]] = {
    "loads": lambda b, x: b.loads(x),
    "dumps": lambda b, x: b.dumps(x),
    "decode": lambda b, x: b.decode(x),
    "encode": lambda b, x: b.encode(x),
    "Framer": lambda b, x, y, z: [b.Framer(max_frame_bytes=x, keepends=y, joined=z).max_frame_bytes],
    "Framer.feed": lambda b, x, y, z: (f := b.Framer(keepends=y, joined=z)).feed(x) + f.finish() + [f.line],
    "FrameDecoder": lambda b, x: [b.FrameDecoder(max_frame_bytes=x).max_frame_bytes],
    "FrameDecoder.feed": lambda b, x: (d := b.FrameDecoder()).feed(x) + d.finish() + [d.line],
    "ToolCallStore": _store,
    "ToolCallStore.apply": lambda b, x, y: [(s := b.ToolCallStore()).apply(x, source=y), s.to_json()],
    "ToolCallStore.feed": lambda b, x, y, z: [(s := b.ToolCallStore()).feed(x, changes=y, source=z), s.to_json()],
    "ToolCallStore.finish": lambda b, x, y: [(s := b.ToolCallStore()).finish(changes=x, source=y), s.to_json()],
    "ToolCallStore.from_json": lambda b, x: b.ToolCallStore.from_json(x),
}
_ARITY = {"Framer": 3, "Framer.feed": 3, "ToolCallStore": 3, "ToolCallStore.apply": 2}
_ARITY.update({"ToolCallStore.feed": 3, "ToolCallStore.finish": 2})


@given(st.sampled_from(sorted(_ENTRY_POINTS)), st.data())
def test_every_entry_point_judges_any_argument_alike(name, data):
    from conftest import FALLBACK, NATIVE

    if NATIVE is None or FALLBACK is None:
        pytest.fail("both backends are needed")
    args = tuple(_value(data) for _ in range(_ARITY.get(name, 1)))
    # Fresh copies for the second backend: a bytearray or an array may be read only once each.
    again = tuple(copy.copy(a) if isinstance(a, (bytearray, array.array, list, dict)) else a for a in args)
    assert _call(NATIVE, name, args) == _call(FALLBACK, name, again), (name, args)
