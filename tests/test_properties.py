"""Property-based tests (Hypothesis): round trips, split invariance, orjson parity, and the
differential check that the Rust core and the fallback agree on every input, errors included."""

from __future__ import annotations

import json
import math

import orjson
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from acp_fast import Batch, DecodeError, EncodeError
from vectors import error_key, strict_equal

# ------------------------------------------------------------------------------------------
# strategies
# ------------------------------------------------------------------------------------------

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
KEYS = st.one_of(TEXT, st.sampled_from(["sessionId", "update", "sessionUpdate", "toolCallId", "id", "a b", "é"]))
FINITE = st.floats(allow_nan=False, allow_infinity=False)
I64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
ORJSON_INT = st.integers(min_value=-(2**63), max_value=2**64 - 1)
BIG_INT = st.integers(min_value=-(10**60), max_value=10**60)

ORJSON_SCALARS = st.one_of(st.none(), st.booleans(), ORJSON_INT, FINITE, TEXT)
ORJSON_VALUES = st.recursive(
    ORJSON_SCALARS,
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(KEYS, kids, max_size=4)),
    max_leaves=20,
)
JSON_VALUES = st.recursive(
    st.one_of(ORJSON_SCALARS, BIG_INT),
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(KEYS, kids, max_size=4)),
    max_leaves=20,
)
IDS = st.one_of(I64, TEXT, st.none())
METHODS = st.one_of(
    st.sampled_from(
        [
            "initialize",
            "session/new",
            "session/prompt",
            "session/update",
            "session/cancel",
            "session/request_permission",
            "$/cancel_request",
            "_zed.dev/x",
        ]
    ),
    TEXT,
)
UPDATE_KINDS = st.sampled_from(
    [
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "state_update",
        "tool_call_content_chunk",
        "terminal_output_chunk",
        "_custom",
    ]
)


@st.composite
def params(draw):
    shape = draw(st.sampled_from(["absent", "null", "array", "object", "session"]))
    if shape == "absent":
        return None, False
    if shape == "null":
        return None, True
    if shape == "array":
        return draw(st.lists(JSON_VALUES, max_size=3)), True
    if shape == "object":
        return draw(st.dictionaries(KEYS, JSON_VALUES, max_size=4)), True
    update = draw(st.dictionaries(KEYS, JSON_VALUES, max_size=3))
    update["sessionUpdate"] = draw(UPDATE_KINDS)
    if draw(st.booleans()):
        update["toolCallId"] = draw(TEXT)
    return {"sessionId": draw(TEXT), "update": update}, True


@st.composite
def messages(draw):
    """(message dict, expected kind)."""
    kind = draw(st.sampled_from(["request", "notification", "response", "error"]))
    msg = {"jsonrpc": "2.0"}
    if kind in ("request", "notification"):
        if kind == "request":
            msg["id"] = draw(IDS)
        msg["method"] = draw(METHODS)
        value, present = draw(params())
        if present:
            msg["params"] = value
    elif kind == "response":
        msg["id"] = draw(IDS)
        msg["result"] = draw(JSON_VALUES)
    else:
        msg["id"] = draw(IDS)
        err = {"code": draw(I64), "message": draw(TEXT)}
        if draw(st.booleans()):
            err["data"] = draw(JSON_VALUES)
        msg["error"] = err
    if draw(st.booleans()):
        msg["_meta"] = draw(JSON_VALUES)
    items = list(msg.items())
    order = draw(st.permutations(range(len(items))))
    return {items[i][0]: items[i][1] for i in order}, kind


@st.composite
def frames(draw):
    """(frame bytes, message dict, kind): the message written with random spacing/escaping."""
    msg, kind = draw(messages())
    sep = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,\t", " :  ")]))
    text = json.dumps(msg, separators=sep, ensure_ascii=draw(st.booleans()))
    pad = draw(st.sampled_from(["", " ", "\t ", "  "]))
    return (pad + text + pad[::-1]).encode("utf-8"), msg, kind


@st.composite
def corrupted(draw):
    """A valid frame with random byte edits, a truncation, or plain random bytes."""
    how = draw(st.sampled_from(["mutate", "truncate", "insert", "delete", "random", "structural"]))
    if how == "random":
        return draw(st.binary(max_size=64))
    data = bytearray(draw(frames())[0])
    if how == "truncate":
        return bytes(data[: draw(st.integers(0, len(data)))])
    for _ in range(draw(st.integers(1, 3))):
        if not data and how in ("mutate", "delete"):
            break
        i = draw(st.integers(0, max(len(data) - 1, 0)))
        if how == "mutate":
            data[i] = draw(st.integers(0, 255))
        elif how == "delete":
            del data[i]
        elif how == "insert":
            data.insert(i, draw(st.integers(0, 255)))
        else:
            data.insert(i, ord(draw(st.sampled_from('{}[]",:\\-0eE.ntfu\xff \n'))))
    return bytes(data)


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------


def describe(result):
    """A backend-neutral description of a decode()/feed() result."""
    if isinstance(result, DecodeError):
        return ("error",) + error_key(result)[1:] + (result.raw, result.lineno, result.colno)
    if isinstance(result, Batch):
        return ("batch", result.raw, result.line, tuple(describe(e) for e in result))
    return (
        "message",
        result.kind,
        type(result.id).__name__,
        result.id,
        result.method,
        result.session_id,
        result.update_kind,
        result.tool_call_id,
        result.raw,
        result.line,
        _canon(result.to_dict()),
    )


def _canon(v):
    """Type-strict canonical form (floats by repr so -0.0 and 0.0 differ)."""
    if isinstance(v, dict):
        return ("d", tuple((k, _canon(x)) for k, x in v.items()))
    if isinstance(v, list):
        return ("l", tuple(_canon(x) for x in v))
    if isinstance(v, float):
        return ("f", repr(v))
    return (type(v).__name__, v)


def outcome(fn, *args):
    try:
        result = fn(*args)
    except (DecodeError, EncodeError) as exc:
        return ("raised",) + error_key(exc) + (getattr(exc, "raw", None), getattr(exc, "path", None))
    except TypeError as exc:  # e.g. unsupported input types: the type must match, not the text
        return ("raised", type(exc))
    if getattr(fn, "__name__", "") == "loads":
        return ("ok", _canon(result))
    if isinstance(result, (bytes, bytearray)):
        return ("ok", bytes(result))
    return ("ok", describe(result))


def run_stream(backend, pieces, **kw):
    dec = backend.FrameDecoder(**kw)
    out = []
    for piece in pieces:
        out.extend(dec.feed(piece))
        assert dec.buffered <= kw.get("max_frame_bytes", 1 << 62)
    out.extend(dec.finish())
    return [describe(r) for r in out], dec.line


# ------------------------------------------------------------------------------------------
# single-backend properties
# ------------------------------------------------------------------------------------------


@given(frames())
def test_decode_encode_round_trip(backend, frame):
    data, msg, kind = frame
    for ending in (b"", b"\n", b"\r\n"):
        m = backend.decode(data + ending)
        assert m.raw == data
        assert backend.encode(m) == data + b"\n"
    assert m.kind == kind
    assert strict_equal(m.to_dict(), msg)
    assert strict_equal(m.id, msg.get("id"))
    assert m.method == msg.get("method")
    p = msg.get("params")
    session = p.get("sessionId") if isinstance(p, dict) else None
    assert m.session_id == (session if isinstance(session, str) else None)
    update = p.get("update") if isinstance(p, dict) else None
    if isinstance(update, dict):
        uk, tc = update.get("sessionUpdate"), update.get("toolCallId")
        assert m.update_kind == (uk if isinstance(uk, str) else None)
        assert m.tool_call_id == (tc if isinstance(tc, str) else None)
    else:
        assert (m.update_kind, m.tool_call_id) == (None, None)
    assert backend.decode(backend.encode(msg)) == backend.decode(backend.dumps(msg))


@given(
    st.lists(
        st.one_of(
            frames().map(lambda f: f[0]),
            st.sampled_from([b"", b"  ", b"\t\r", b"{", b"[]", b"nope", b"\xff\xfe", b"[1,2]"]),
        ),
        max_size=8,
    ),
    st.lists(st.sampled_from([b"\n", b"\r\n"]), min_size=8, max_size=8),
    st.lists(st.integers(0, 10_000), max_size=6),
    st.booleans(),
)
def test_any_split_gives_same_frames(backend, lines, endings, cuts, final_newline):
    data = b"".join(line + endings[i] for i, line in enumerate(lines))
    if lines and not final_newline:
        data = data[: -len(endings[len(lines) - 1])]
    whole, whole_line = run_stream(backend, [data])
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0] + points, points + [len(data)])]
    assert run_stream(backend, pieces) == (whole, whole_line)
    assert run_stream(backend, [data[i : i + 1] for i in range(len(data))]) == (whole, whole_line)
    expected = [ln for ln in lines if ln.strip(b" \t\r")]
    assert len(whole) == len(expected)


@given(
    st.lists(
        st.one_of(frames().map(lambda f: f[0]), st.binary(max_size=40).map(lambda b: b.replace(b"\n", b""))), max_size=6
    ),
    st.integers(1, 80),
    st.lists(st.integers(0, 10_000), max_size=5),
)
def test_any_split_with_small_limit(backend, lines, limit, cuts):
    data = b"\n".join(lines) + b"\n"
    whole = run_stream(backend, [data], max_frame_bytes=limit)
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0] + points, points + [len(data)])]
    assert run_stream(backend, pieces, max_frame_bytes=limit) == whole
    for item, line in zip([w for w in whole[0]], [ln for ln in lines if ln.strip(b" \t\r")]):
        if len(line) > limit:
            assert item[0] == "error" and item[2] == "frame_too_large"


@given(JSON_VALUES)
def test_loads_dumps_round_trip(backend, value):
    assert strict_equal(backend.loads(backend.dumps(value)), value)


@given(ORJSON_VALUES)
@example(1e16)
@example(-0.0)
@example(5e-324)
@example(1e-5)
def test_dumps_equals_orjson(backend, value):
    assert backend.dumps(value) == orjson.dumps(value)


@given(FINITE)
def test_float_format_equals_orjson(backend, f):
    assert backend.dumps(f) == orjson.dumps(f)
    assert strict_equal(backend.loads(backend.dumps(f)), f)


@given(ORJSON_VALUES)
def test_loads_agrees_with_orjson_on_valid_documents(backend, value):
    data = orjson.dumps(value)
    assert strict_equal(backend.loads(data), orjson.loads(data))


@given(corrupted())
def test_corrupted_frames_never_crash(backend, data):
    for fn in (backend.decode, backend.loads):
        try:
            fn(data)
        except DecodeError as exc:
            assert exc.code in (-32700, -32600)
            assert exc.position is None or 0 <= exc.position <= len(data)


@given(corrupted())
def test_loads_verdict_matches_orjson(backend, data):
    try:
        expected = orjson.loads(data)
    except orjson.JSONDecodeError:
        with pytest.raises(DecodeError):
            backend.loads(data)
        return
    if isinstance(expected, float) and data.strip().lstrip(b"-").isdigit():
        assume(False)  # orjson turns integers beyond 64 bits into floats; acp-fast keeps ints
    got = backend.loads(data)
    if not _has_big_ints(got):
        assert strict_equal(got, expected)


def _has_big_ints(v) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return not (-(2**63) <= v < 2**64)
    if isinstance(v, list):
        return any(_has_big_ints(x) for x in v)
    if isinstance(v, dict):
        return any(_has_big_ints(x) for x in v.values())
    return False


# ------------------------------------------------------------------------------------------
# differential: the Rust core and the fallback agree
# ------------------------------------------------------------------------------------------


@given(frames())
def test_differential_valid_frames(both_backends, frame):
    native, fallback = both_backends
    data = frame[0]
    for fn in ("decode", "loads"):
        assert outcome(getattr(native, fn), data) == outcome(getattr(fallback, fn), data)
    assert native.encode(native.decode(data)) == fallback.encode(fallback.decode(data))
    assert native.encode(frame[1]) == fallback.encode(frame[1])


@given(corrupted())
@example(b"")
@example(b"\xef\xbb\xbf")
@example(b'{"jsonrpc":"2.0","method":"x"}\n{')
@example(b'"\\uD83D\\u00')
@example(b'[{"jsonrpc":"2.0","id":1.0,"result":1},{"jsonrpc":"2.0"},7]')
def test_differential_corrupted_frames(both_backends, data):
    native, fallback = both_backends
    for fn in ("decode", "loads"):
        assert outcome(getattr(native, fn), data) == outcome(getattr(fallback, fn), data), fn
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    for fn in ("decode", "loads"):
        assert outcome(getattr(native, fn), text) == outcome(getattr(fallback, fn), text), fn


@given(st.lists(corrupted(), max_size=6), st.lists(st.integers(0, 10_000), max_size=4), st.integers(1, 100))
def test_differential_streams(both_backends, lines, cuts, limit):
    native, fallback = both_backends
    data = b"\n".join(lines)
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0] + points, points + [len(data)])]
    assert run_stream(native, pieces) == run_stream(fallback, pieces)
    assert run_stream(native, pieces, max_frame_bytes=limit) == run_stream(fallback, pieces, max_frame_bytes=limit)


@st.composite
def long_lines(draw):
    """A frame (valid or corrupted) or a valid frame padded to a length around the native
    framer's 64 KiB window, possibly with a bad byte in the padding."""
    if draw(st.booleans()):
        return draw(corrupted())
    size = draw(st.sampled_from([0, 100, 5_000, 40_000, 65_536 - 60, 65_536, 70_000, 140_000]))
    line = bytearray(b'{"jsonrpc":"2.0","method":"m","params":{"t":"' + b"x" * size + b'"}}')
    if size and draw(st.booleans()):
        line[45 + draw(st.integers(0, size - 1))] = draw(st.sampled_from([0xFF, 0x01, ord('"'), ord("\\"), 0xC3]))
    return bytes(line)


@settings(max_examples=40, deadline=None)
@given(st.lists(long_lines(), min_size=1, max_size=12), st.lists(st.integers(0, 10**6), max_size=4))
def test_differential_streams_over_many_windows(both_backends, lines, cuts):
    # Streams of hundreds of KB: the native framer checks UTF-8 window by window; every line's
    # result must still be what the fallback (which has no windows) gives, whole or in pieces.
    native, fallback = both_backends
    data = b"\n".join(lines) + b"\n"
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0] + points, points + [len(data)])]
    expected = run_stream(fallback, [data])
    assert run_stream(native, [data]) == expected
    assert run_stream(native, pieces) == expected


class _Odd:
    pass


ANY_OBJECTS = st.recursive(
    st.one_of(
        JSON_VALUES,
        st.floats(),
        st.just(_Odd()),
        st.binary(max_size=3),
        st.sets(st.integers(), max_size=2),
        st.text(max_size=3),
        st.integers(min_value=10**4299, max_value=10**4301),
    ),
    lambda kids: st.one_of(
        st.lists(kids, max_size=3),
        st.tuples(kids, kids),
        st.dictionaries(st.one_of(KEYS, st.integers(), st.text(max_size=3), st.none()), kids, max_size=3),
    ),
    max_leaves=12,
)


@given(ANY_OBJECTS)
def test_differential_dumps(both_backends, obj):
    native, fallback = both_backends
    assert outcome(native.dumps, obj) == outcome(fallback.dumps, obj)
    if isinstance(obj, (dict, list)):
        assert outcome(native.encode, obj) == outcome(fallback.encode, obj)


@given(ANY_OBJECTS)
def test_dumps_never_leaks_other_exceptions(backend, obj):
    try:
        out = backend.dumps(obj)
    except EncodeError as exc:
        assert exc.kind in (
            "unsupported_type",
            "non_finite_float",
            "non_str_key",
            "invalid_str",
            "depth_limit",
            "int_too_large",
        )
        assert exc.path.startswith("$")
    else:
        assert isinstance(out, bytes)
        assert not any(isinstance(x, float) and not math.isfinite(x) for x in _flatten(obj))


def _flatten(v):
    if isinstance(v, dict):
        for x in v.values():
            yield from _flatten(x)
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _flatten(x)
    else:
        yield v
