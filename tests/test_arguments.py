"""Constructor arguments that both backends must judge alike: the same value accepted, or the same
exception type with the same message (docs/API.md). ``max_frame_bytes`` is an ``int`` (not a
``bool``) from 1 to ``MAX_FRAME_BYTES``, or None for the default, on Framer, FrameDecoder and
ToolCallStore alike."""

from __future__ import annotations

import array
from typing import Any, Callable, Tuple

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
