"""`decode` and `Message` (DESIGN.md §5): classification, validation errors, lazy fields, batches."""

from __future__ import annotations

import gc
import json
import pickle
import sys
import weakref

import pytest

import vectors
from acp_fast import Batch, DecodeError, traffic
from vectors import strict_equal

VALID = vectors.params("frames_valid")
INVALID = vectors.params("frames_invalid")
BATCHES = vectors.params("batches")


def _forms(data: bytes):
    forms = [("bytes", data), ("bytearray", bytearray(data)), ("memoryview", memoryview(data))]
    try:
        forms.append(("str", data.decode("utf-8")))
    except UnicodeDecodeError:
        pass
    return forms


def _check_message(m, case, backend, raw: bytes):
    assert type(m) is backend.Message
    assert m.kind == case["kind"]
    assert strict_equal(m.id, case["id"]), (m.id, case["id"])
    assert m.method == case["method"]
    assert m.session_id == case["session_id"]
    assert m.update_kind == case["update_kind"]
    assert m.tool_call_id == case["tool_call_id"]
    assert m.raw == raw and type(m.raw) is bytes
    assert bytes(m) == raw
    assert m.line is None


# ------------------------------------------------------------------------------------------
# valid frames
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", VALID)
def test_valid_frame_vector(backend, case):
    raw = case["bytes"]
    for _form, data in _forms(raw):
        _check_message(backend.decode(data), case, backend, raw)


@pytest.mark.parametrize("case", VALID)
def test_valid_frame_line_endings_stripped(backend, case):
    raw = case["bytes"]
    for ending in (b"\n", b"\r\n", b"\r"):
        _check_message(backend.decode(raw + ending), case, backend, raw)
        _check_message(backend.decode((raw + ending).decode("utf-8")), case, backend, raw)


@pytest.mark.parametrize("case", VALID)
def test_valid_frame_values_built_on_demand(backend, case):
    m = backend.decode(case["bytes"])
    expected = json.loads(case["bytes"])  # the stdlib is the oracle for the object tree
    assert strict_equal(m.to_dict(), expected)
    assert strict_equal(m.params, expected.get("params"))
    assert strict_equal(m.result, expected.get("result"))
    assert strict_equal(m.error, expected.get("error"))


def test_only_one_line_ending_removed(backend):
    raw = b'{"jsonrpc":"2.0","method":"x"}'
    # "\r\r\n": one "\n" then one "\r" are removed; the other "\r" is JSON whitespace and stays
    m = backend.decode(raw + b"\r\r\n")
    assert m.raw == raw + b"\r"
    assert backend.encode(m) == raw + b"\r\n"
    m = backend.decode(b" \t" + raw + b" \r\n")
    assert m.raw == b" \t" + raw + b" "


def test_fresh_objects_every_call(backend):
    m = backend.decode(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,{"b":2}]}}')
    p1, p2 = m.params, m.params
    assert p1 == p2 == {"a": [1, {"b": 2}]}
    assert p1 is not p2 and p1["a"] is not p2["a"]
    p1["a"].append("mutated")
    p1["new"] = 1
    assert m.params == {"a": [1, {"b": 2}]}
    d1, d2 = m.to_dict(), m.to_dict()
    assert d1 == d2 and d1 is not d2 and d1["params"] is not d2["params"]
    d1.clear()
    assert m.to_dict()["id"] == 1

    r = backend.decode(b'{"jsonrpc":"2.0","id":1,"result":{"x":[]}}')
    assert r.result is not r.result and r.result == {"x": []}
    e = backend.decode(b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":[1]}}')
    assert e.error is not e.error and e.error == {"code": 1, "message": "m", "data": [1]}


def test_absent_parts_are_none(backend):
    n = backend.decode(b'{"jsonrpc":"2.0","method":"m"}')
    assert (n.id, n.params, n.result, n.error) == (None, None, None, None)
    r = backend.decode(b'{"jsonrpc":"2.0","id":"a","result":[1]}')
    assert (r.method, r.params, r.error, r.session_id, r.update_kind, r.tool_call_id) == (None,) * 6
    assert r.result == [1]


def test_request_with_null_id_vs_notification(backend):
    req = backend.decode(b'{"jsonrpc":"2.0","id":null,"method":"m"}')
    note = backend.decode(b'{"jsonrpc":"2.0","method":"m"}')
    assert (req.kind, req.id) == ("request", None)
    assert (note.kind, note.id) == ("notification", None)
    assert req != note


def test_message_is_immutable(backend):
    m = backend.decode(b'{"jsonrpc":"2.0","id":1,"method":"m"}')
    for attr in ("kind", "id", "method", "raw", "line", "session_id", "update_kind", "tool_call_id"):
        with pytest.raises((AttributeError, TypeError)):
            setattr(m, attr, "changed")
        with pytest.raises((AttributeError, TypeError)):
            delattr(m, attr)
    with pytest.raises((AttributeError, TypeError)):
        m.some_new_attribute = 1
    assert (m.kind, m.id, m.method) == ("request", 1, "m")


def test_message_equality_and_hash(backend):
    raw = b'{"jsonrpc":"2.0","id":1,"method":"m"}'
    a, b = backend.decode(raw), backend.decode(raw + b"\r\n")
    assert a == b and not (a != b)  # noqa: SIM202 - __ne__ is under test too
    assert hash(a) == hash(b)
    assert len({a, b}) == 1
    c = backend.decode(b'{"jsonrpc":"2.0", "id":1,"method":"m"}')  # same content, other bytes
    assert a != c
    d = backend.decode(b'{"jsonrpc":"2.0","id":2,"method":"m"}')
    assert a != d
    assert {a: 1}[b] == 1


@pytest.mark.parametrize("case", VALID[:20] + VALID[-20:])
def test_message_pickle(backend, case):
    m = backend.decode(case["bytes"] + b"\n")
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        m2 = pickle.loads(pickle.dumps(m, protocol=protocol))
        assert type(m2) is type(m)
        assert m2 == m and m2.raw == m.raw
        assert (m2.kind, m2.method, m2.session_id) == (m.kind, m.method, m.session_id)
        assert strict_equal(m2.id, m.id)
        assert m2.to_dict() == m.to_dict()


def test_decode_type_errors(backend):
    for bad in [1, None, {"jsonrpc": "2.0"}, [b"{}"], 1.5, object()]:
        with pytest.raises(TypeError) as info:
            backend.decode(bad)
        assert not isinstance(info.value, DecodeError)


def test_decode_str_with_unpaired_surrogate(backend):
    with pytest.raises(DecodeError) as info:
        backend.decode('{"jsonrpc":"2.0","method":"\ud800"}')
    err = info.value
    assert (err.code, err.kind, err.position) == (-32700, "invalid_utf8", None)
    assert err.msg == "expected a str encodable as UTF-8, found unpaired surrogate U+D800"
    assert str(err) == err.msg  # no line/column without a position
    assert err.lineno is None and err.colno is None and err.line is None


def test_decode_str_positions_are_byte_offsets(backend):
    with pytest.raises(DecodeError) as info:
        backend.decode('{"jsonrpc":"2.0","method":"é","id":1.5}')
    assert info.value.position == 36
    assert info.value.colno == 37


# ------------------------------------------------------------------------------------------
# invalid frames
# ------------------------------------------------------------------------------------------


def _check_error(err, case, raw: bytes):
    assert type(err) is DecodeError
    assert err.code == case["code"]
    assert err.kind == case["kind"]
    assert err.position == case["position"]
    assert err.msg == case["message"]
    if case["position"] is None:
        assert err.message == case["message"]
    else:
        # a frame has no newline, so DESIGN §2.2 gives line 1, column = position + 1
        assert (err.lineno, err.colno) == (1, case["position"] + 1)
        assert err.message == f"{case['message']} at line 1 column {case['position'] + 1}"
    assert str(err) == err.message
    assert err.line is None
    assert err.raw == raw


@pytest.mark.parametrize("case", INVALID)
def test_invalid_frame_vector(backend, case):
    raw = case["bytes"]
    # the trailing line ending is stripped first (DESIGN §5): one "\n", then one "\r"
    expected_raw = raw
    if expected_raw.endswith(b"\n"):
        expected_raw = expected_raw[:-1]
    if expected_raw.endswith(b"\r"):
        expected_raw = expected_raw[:-1]
    assert (expected_raw == raw) == (case["kind"] != "embedded_newline" or not raw.endswith(b"\n"))
    for _form, data in _forms(raw):
        with pytest.raises(DecodeError) as info:
            backend.decode(data)
        _check_error(info.value, case, expected_raw)


@pytest.mark.parametrize("case", [c for c in INVALID if c.values[0]["kind"] != "embedded_newline"])
def test_invalid_frame_vector_with_line_ending(backend, case):
    for ending in (b"\n", b"\r\n"):
        with pytest.raises(DecodeError) as info:
            backend.decode(case["bytes"] + ending)
        _check_error(info.value, case, case["bytes"])


def test_every_design_table_row_has_a_vector():
    cases = vectors.load("frames_invalid") + [
        {"kind": e["kind"], "message": e["message"], "code": e["code"]}
        for b in vectors.load("batches")
        for e in b["entries"]
        if e["type"] == "error"
    ]
    kinds = {c["kind"] for c in cases}
    assert {
        "not_an_object",
        "missing_jsonrpc",
        "invalid_jsonrpc",
        "invalid_method",
        "invalid_id",
        "invalid_params",
        "result_and_error",
        "missing_method",
        "missing_id",
        "invalid_error",
        "empty_batch",
        "embedded_newline",
        "eof",
        "unexpected_character",
        "control_character",
        "invalid_escape",
        "invalid_unicode_escape",
        "lone_surrogate",
        "number_out_of_range",
        "depth_limit",
        "invalid_utf8",
        "bom",
    } <= kinds
    messages = " | ".join(c["message"] for c in cases)
    for fragment in [
        '"error.code" to be an integer, found none',
        '"error.message" to be a string, found none',
        '"error" to be an object',
        "expected a JSON-RPC message object, found",
    ]:
        assert fragment in messages


# ------------------------------------------------------------------------------------------
# batches
# ------------------------------------------------------------------------------------------


def _check_batch(batch, case, backend, line=None):
    assert type(batch) is Batch and isinstance(batch, list)
    assert batch.raw == case["bytes"]
    assert batch.line == line
    assert len(batch) == len(case["entries"])
    for entry, exp in zip(batch, case["entries"]):
        if exp["type"] == "message":
            assert type(entry) is backend.Message
            assert entry.raw == exp["raw"].encode()
            assert entry.kind == exp["kind"]
            assert strict_equal(entry.id, exp["id"])
            assert entry.method == exp["method"]
            assert entry.to_dict() == json.loads(exp["raw"])
        else:
            assert type(entry) is DecodeError
            assert (entry.code, entry.kind, entry.position, entry.msg) == (
                exp["code"],
                exp["kind"],
                exp["position"],
                exp["message"],
            )
            assert entry.raw == exp["raw"].encode()


@pytest.mark.parametrize("case", BATCHES)
def test_batch_vector(backend, case):
    for _form, data in _forms(case["bytes"]):
        _check_batch(backend.decode(data), case, backend)
    _check_batch(backend.decode(case["bytes"] + b"\r\n"), case, backend)


@pytest.mark.parametrize("case", BATCHES)
def test_batch_round_trip_and_pickle(backend, case):
    batch = backend.decode(case["bytes"])
    assert backend.encode(batch) == case["bytes"] + b"\n"
    copy = pickle.loads(pickle.dumps(batch))
    assert type(copy) is Batch
    assert copy.raw == batch.raw and copy.line == batch.line
    assert list(copy) == list(batch)
    assert backend.encode(copy) == case["bytes"] + b"\n"


def test_batch_entry_error_message_has_frame_column(backend):
    frame = b'[{"jsonrpc":"2.0","method":"a"}, 7]'
    batch = backend.decode(frame)
    err = batch[1]
    assert err.position == 33
    assert (err.lineno, err.colno) == (1, 34)
    assert err.message == "expected a JSON-RPC message object, found number at line 1 column 34"


# ------------------------------------------------------------------------------------------
# lifetime: messages outlive their decoder and buffer; weak references; bulk allocation
# ------------------------------------------------------------------------------------------


def test_messages_outlive_decoder_and_buffer(backend):
    lines = [
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s%d","update":'
        b'{"sessionUpdate":"tool_call","toolCallId":"t%d","title":"x"}}}' % (i, i)
        for i in range(3000)
    ]
    buffer = bytearray(b"\n".join(lines) + b"\n")
    decoder = backend.FrameDecoder()
    messages = decoder.feed(buffer)
    del decoder
    buffer[:] = b"x" * len(buffer)  # the caller reuses its buffer
    del buffer
    gc.collect()
    assert len(messages) == 3000
    for i, m in enumerate(messages):
        assert (m.session_id, m.tool_call_id, m.line) == (f"s{i}", f"t{i}", i + 1)
        assert m.raw == lines[i] and m.params["update"]["title"] == "x"


def test_message_weak_reference(backend):
    m = backend.decode(b'{"jsonrpc":"2.0","id":7,"result":null}')
    dead = []
    ref = weakref.ref(m, dead.append)
    assert ref() is m
    del m
    assert ref() is None and dead == [ref]


def test_bulk_decode_free_and_decode_again(backend):
    # Every message of a large feed is freed together and the memory reused by the next feed
    # (on the Rust backend from the Rust allocator, outside the cyclic GC: see rust/python/untracked.rs).
    def fields(m):
        return (m.kind, m.id, m.method, m.session_id, m.update_kind, m.tool_call_id, m.raw)

    buffer = traffic.generate("mixed", 4000, seed=11)
    first = [fields(m) for m in backend.FrameDecoder().feed(buffer)]
    for _ in range(3):
        messages = backend.FrameDecoder().feed(buffer)
        assert [fields(m) for m in messages] == first
        assert all(sys.getsizeof(m) > 0 for m in messages[:10])
        if backend.BACKEND == "rust":
            assert not any(gc.is_tracked(m) for m in messages)
        del messages
        gc.collect()


def test_to_dict_matches_the_text_after_the_fed_buffer_changed(backend):
    # to_dict puts the routing strings a Message already holds into the dict: they must be the
    # values of the frame as fed, wherever they lie, escaped or not, duplicated or not, in single
    # frames and batch entries, and whatever becomes of the buffer that was fed.
    lines = [
        b'{"jsonrpc":"2.0","id":"r\\u00e9q-1","method":"session/prompt","params":{"sessionId":"s\\"1"}}',
        (
            b'{"params":{"x":"sess_2","update":{"toolCallId":"call_\\u4e2d","title":"call_\\u4e2d",'
            b'"sessionUpdate":"tool_call"},"sessionId":"sess_2"},"method":"session/update","jsonrpc":"2.0"}'
        ),
        b'{"jsonrpc":"2.0","method":"a","method":"b","params":{"sessionId":"x","sessionId":"y"}}',
        b'[{"jsonrpc":"2.0","id":"b1","method":"m1"},{"jsonrpc":"2.0","id":7,"method":"m\\n2"}]',
        b'{"jsonrpc":"2.0","id":"only-id","result":{"sessionId":"not routing"}}',
    ]
    buf = bytearray(b"\n".join(lines) + b"\n")
    out = backend.FrameDecoder().feed(buf)
    buf[:] = b"x" * len(buf)  # the caller reuses its buffer
    messages = []
    for item in out:
        messages.extend(item if isinstance(item, Batch) else [item])
    expected = [json.loads(line) for line in lines]
    expected = expected[:3] + expected[3] + expected[4:]
    assert len(messages) == len(expected)
    for m, want in zip(messages, expected):
        got = m.to_dict()
        assert strict_equal(got, want), (got, want)
        assert strict_equal(m.to_dict(), want)
        if m.method is not None:
            assert m.method == want["method"]
        if isinstance(m.id, str):
            assert got["id"] == m.id


def test_native_to_dict_reuses_the_routing_strings(backend):
    # docs/API.md: the Rust backend's to_dict puts in the message's own str objects (long ones
    # included, which the shared cache of short values would not hand out); both give equal values.
    line = (
        b'{"jsonrpc":"2.0","id":"request-id-longer-than-16","method":"session/update-with-a-long-name",'
        b'"params":{"sessionId":"session-id-longer-than-16","update":{"sessionUpdate":"agent_message_chunk",'
        b'"toolCallId":"tool-call-id-longer-than-16"}}}'
    )
    m = backend.decode(line)
    got = m.to_dict()
    assert strict_equal(got, json.loads(line))
    pairs = [
        (got["id"], m.id),
        (got["method"], m.method),
        (got["params"]["sessionId"], m.session_id),
        (got["params"]["update"]["sessionUpdate"], m.update_kind),
        (got["params"]["update"]["toolCallId"], m.tool_call_id),
    ]
    for value, field in pairs:
        assert value == field
        if backend.__name__ == "acp_fast._native":
            assert value is field
