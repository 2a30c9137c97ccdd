"""The store as a whole (``ToolCallStore``; mirrors ``rust/state/mod.rs`` and
``_fallback/state/__init__.py``): construction and version (DESIGN.md §7.1), the inputs of
``apply`` and batches (§7.2), ``feed`` / ``finish``, session-id errors (§7.7) and the queries.

Every behaviour test takes the ``backend`` fixture and runs on both backends (ids rust, python);
expected values are written out in full. Shared helpers: ``state_helpers.py``, ``state_model.py``.
"""

from __future__ import annotations

import json

import pytest

from acp_fast import Batch, DecodeError, EncodeError
from acp_fast import builders as B
from state_helpers import (
    INIT_V1,
    INIT_V2,
    LINE,
    OPTIONS,
    A,
    Bc,
    C,
    _good_after,
    _load,
    _rich_state,
    _rich_stream,
    empty_state,
    expect_error,
    rec,
)
from state_model import (
    assert_record,
    assert_state_error,
    change_of,
    chunk,
    error_response,
    frame,
    notification,
    request,
    response,
    session_update,
    tool_call_update,
    value_at,
)

# ------------------------------------------------------------------------------------------
# 7.1 construction and version
# ------------------------------------------------------------------------------------------


def test_default_construction(backend):
    s = backend.ToolCallStore()
    assert s.protocol_version == 1
    assert s.negotiated_version is None
    assert len(s) == 0
    assert s.evicted == 0
    assert s.line == 0
    assert s.snapshot() == {}
    assert_record(s.state(), empty_state())


@pytest.mark.parametrize("version", [1, 2])
def test_fixed_protocol_version(backend, version):
    for s in (backend.ToolCallStore(version), backend.ToolCallStore(protocol_version=version)):
        assert s.protocol_version == version
        assert s.negotiated_version is None
        assert_record(s.state(), empty_state(protocol_version=version))


@pytest.mark.parametrize(
    "bad, shown",
    [
        (0, "0"),
        (3, "3"),
        (-1, "-1"),
        (True, "True"),
        (False, "False"),
        ("1", "'1'"),
        (1.0, "1.0"),
        (2.0, "2.0"),
        ([2], "[2]"),
    ],
)
def test_bad_protocol_version(backend, bad, shown):
    with pytest.raises(ValueError) as info:
        backend.ToolCallStore(bad)
    assert str(info.value) == f"expected protocol_version to be 1, 2 or None, found {shown}"


@pytest.mark.parametrize("bad, shown", [(0, "0"), (-3, "-3"), ("3", "'3'"), (2.5, "2.5"), (1.0, "1.0")])
def test_bad_max_tool_calls(backend, bad, shown):
    with pytest.raises(ValueError) as info:
        backend.ToolCallStore(max_tool_calls=bad)
    assert str(info.value) == f"expected max_tool_calls to be a positive integer or None, found {shown}"


def test_max_tool_calls_recorded(backend):
    s = backend.ToolCallStore(max_tool_calls=3)
    assert_record(s.state(), empty_state(max_tool_calls=3))


@pytest.mark.parametrize("bad", [0, -1, 4294967295])
def test_bad_max_frame_bytes(backend, bad):
    with pytest.raises(ValueError):
        backend.ToolCallStore(max_frame_bytes=bad)


def test_options_are_keyword_only(backend):
    with pytest.raises(TypeError):
        backend.ToolCallStore(None, 5)


@pytest.mark.parametrize(
    "value, learned",
    [(2, 2), (1, 1), (0, 1), (-5, 1), (7, 2), (65535, 2), (10**30, 2), (-(10**30), 1)],
)
def test_protocol_version_learned_from_response(backend, value, learned):
    s = backend.ToolCallStore()
    c = s.apply(response(0, {"protocolVersion": value, "agentInfo": {"name": "a"}}))
    assert change_of(backend, c) == (None, "protocol", learned, "negotiated", None)
    assert s.negotiated_version == learned
    assert s.protocol_version == learned
    assert_record(s.state(), empty_state(negotiated=learned))


@pytest.mark.parametrize(
    "data",
    [
        response(0, {"protocolVersion": True}),
        response(0, {"protocolVersion": "2"}),
        response(0, {"protocolVersion": 2.0}),
        response(0, {"protocolVersion": None}),
        response(0, {"agentCapabilities": {}}),
        response(0, {"nested": {"protocolVersion": 2}}),
        response(0, [{"protocolVersion": 2}]),
        response(0, 2),
        error_response(0, -32603, "no"),
        frame(request(0, "initialize", {"protocolVersion": 2})),
        frame(notification("initialize", {"protocolVersion": 2})),
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2e0}}',
    ],
    ids=["bool", "str", "float", "null", "missing", "nested", "array", "number", "error", "request", "notif", "exp"],
)
def test_protocol_version_not_learned(backend, data):
    s = backend.ToolCallStore()
    assert s.apply(data) is None
    assert s.negotiated_version is None
    assert s.protocol_version == 1


def test_negotiated_version_switches_null_rule(backend):
    s = backend.ToolCallStore()
    s.apply(tool_call_update("s1", "c1", {"title": "T", "rawInput": {"a": 1}}))
    s.apply(tool_call_update("s1", "c1", {"title": None}))  # v1 until negotiated: null is a no-op
    assert_record(s.get("s1", "c1"), rec("c1", title="T", rawInput={"a": 1}))
    s.apply(INIT_V2)
    s.apply(tool_call_update("s1", "c1", {"title": None}))  # now v2: null unsets
    assert_record(s.get("s1", "c1"), rec("c1", rawInput={"a": 1}))


def test_later_response_renegotiates(backend):
    s = backend.ToolCallStore()
    s.apply(INIT_V2)
    c = s.apply(INIT_V1)
    assert change_of(backend, c) == (None, "protocol", 1, "negotiated", None)
    assert (s.negotiated_version, s.protocol_version) == (1, 1)


@pytest.mark.parametrize("fixed", [1, 2])
def test_fixed_version_not_overridden_by_negotiation(backend, fixed):
    s = backend.ToolCallStore(fixed)
    other = 2 if fixed == 1 else 1
    c = s.apply(response(0, {"protocolVersion": other}))
    assert change_of(backend, c) == (None, "protocol", other, "negotiated", None)
    assert s.negotiated_version == other
    assert s.protocol_version == fixed
    assert_record(s.state(), empty_state(protocol_version=fixed, negotiated=other))
    s.apply(tool_call_update("s1", "c1", {"title": "T"}))
    s.apply(tool_call_update("s1", "c1", {"title": None}))
    expected = rec("c1", title="T") if fixed == 1 else rec("c1")
    assert_record(s.get("s1", "c1"), expected)


def test_agent_response_still_teaches_the_version(backend):
    # The initialize response is sent by the agent: source="agent" only stops permission resolution.
    s = backend.ToolCallStore()
    c = s.apply(INIT_V2, source="agent")
    assert change_of(backend, c) == (None, "protocol", 2, "negotiated", None)
    assert s.protocol_version == 2


def test_response_resolving_permission_does_not_teach_version(backend):
    s = backend.ToolCallStore()
    s.apply(B.request_permission(0, "s1", "c1", OPTIONS))
    c = s.apply(response(0, {"protocolVersion": 2}))
    assert change_of(backend, c) == ("s1", "permission", 0, "resolved", "c1")
    assert s.negotiated_version is None
    assert s.permission(0)["outcome"] == "invalid"


def test_agent_response_with_pending_id_teaches_version_and_leaves_permission(backend):
    s = backend.ToolCallStore()
    s.apply(B.request_permission(0, "s1", "c1", OPTIONS))
    c = s.apply(response(0, {"protocolVersion": 2}), source="agent")
    assert change_of(backend, c) == (None, "protocol", 2, "negotiated", None)
    assert s.permission(0)["outcome"] == "pending"


# ------------------------------------------------------------------------------------------
# 7.2 inputs
# ------------------------------------------------------------------------------------------


def _input_forms(backend, line: bytes):
    return [
        ("message", backend.decode(line)),
        ("bytes", line),
        ("bytes_lf", line + b"\n"),
        ("bytes_crlf", line + b"\r\n"),
        ("bytearray", bytearray(line + b"\n")),
        ("memoryview", memoryview(line)),
        ("str", line.decode()),
        ("str_crlf", line.decode() + "\r\n"),
        ("dict", json.loads(line)),
    ]


def test_apply_input_forms(backend):
    for name, data in _input_forms(backend, LINE):
        s = backend.ToolCallStore()
        c = s.apply(data)
        assert change_of(backend, c) == ("s1", "tool_call", "c1", "created", "c1"), name
        assert_record(s.get("s1", "c1"), rec("c1", title="T"))


def test_apply_dict_is_serialised_first(backend):
    s = backend.ToolCallStore(2)
    msg = json.loads(LINE)
    msg["params"]["update"]["big"] = 10**40
    c = s.apply(msg)
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "created", "c1")
    assert_record(s.get("s1", "c1"), rec("c1", title="T", big=10**40))


def test_apply_dict_encode_error_raised_as_is(backend):
    s = backend.ToolCallStore()
    msg = json.loads(LINE)
    msg["params"]["update"]["bad"] = {1, 2}
    with pytest.raises(EncodeError) as info:
        s.apply(msg)
    assert info.value.kind == "unsupported_type"
    assert info.value.path == "$.params.update.bad"
    assert_record(s.state(), empty_state())


def test_apply_bad_dict_message_raises_invalid_request(backend):
    s = backend.ToolCallStore()
    with pytest.raises(DecodeError) as info:
        s.apply({"method": "session/update"})
    assert (info.value.code, info.value.kind) == (-32600, "missing_jsonrpc")


@pytest.mark.parametrize(
    "bad", [42, None, 3.5, (LINE,), {LINE}, object()], ids=["int", "none", "float", "tuple", "set", "object"]
)
def test_apply_bad_argument_type(backend, bad):
    s = backend.ToolCallStore()
    with pytest.raises(TypeError):
        s.apply(bad)


@pytest.mark.parametrize("source", ["server", "", "AGENT", 1, b"agent"])
def test_apply_bad_source(backend, source):
    s = backend.ToolCallStore()
    with pytest.raises(ValueError):
        s.apply(LINE, source=source)
    assert_record(s.state(), empty_state())


@pytest.mark.parametrize("source", [None, "agent", "client"])
def test_apply_source_does_not_matter_for_updates(backend, source):
    s = backend.ToolCallStore()
    assert change_of(backend, s.apply(LINE, source=source)) == ("s1", "tool_call", "c1", "created", "c1")


def test_apply_json_error_raises_parse_error(backend):
    s = backend.ToolCallStore()
    with pytest.raises(DecodeError) as info:
        s.apply(b'{"jsonrpc":"2.0",')
    err = info.value
    assert (err.code, err.kind, err.msg, err.position) == (
        -32700,
        "eof",
        "expected a string key, found end of input",
        17,
    )
    assert_record(s.state(), empty_state())


def test_apply_empty_batch_raises(backend):
    s = backend.ToolCallStore()
    with pytest.raises(DecodeError) as info:
        s.apply(b"[]")
    assert (info.value.code, info.value.kind, info.value.position) == (-32600, "empty_batch", 0)


def test_apply_decode_error_object_returned_unchanged(backend):
    s = backend.ToolCallStore()
    (err,) = backend.decode(b'[{"jsonrpc":"1.0","method":"x"}]')
    assert isinstance(err, DecodeError)
    assert s.apply(err) is err
    assert_record(s.state(), empty_state())


NOOP_FRAMES = {
    "agent_message_chunk": B.message_chunk("s1", "hello"),
    "unknown_update_not_kept": session_update("s1", {"sessionUpdate": "_custom", "toolCallId": "c1"}),
    "available_commands": session_update("s1", {"sessionUpdate": "available_commands_update", "availableCommands": []}),
    "prompt_request": frame(request(1, "session/prompt", {"sessionId": "s1", "prompt": []})),
    "unknown_notification": frame(notification("_acme/ping", {"sessionId": "s1"})),
    "response_unknown_id": response(99, {"stopReason": "end_turn"}),
    "error_unknown_id": error_response(99),
    "params_array": frame(notification("session/update", ["s1", {"sessionUpdate": "tool_call_update"}])),
    "params_null": frame(notification("session/update", None)),
    "no_params": frame({"jsonrpc": "2.0", "method": "session/update"}),
    "update_missing": frame(notification("session/update", {"sessionId": "s1"})),
    "update_not_object": frame(notification("session/update", {"sessionId": "s1", "update": "tool_call"})),
    "update_array": frame(
        notification("session/update", {"sessionId": "s1", "update": [{"sessionUpdate": "tool_call"}]})
    ),
    "session_update_missing": session_update("s1", {"toolCallId": "c1"}),
    "session_update_not_string": session_update("s1", {"sessionUpdate": 5, "toolCallId": "c1"}),
    "unhandled_bad_session": session_update(5, {"sessionUpdate": "agent_message_chunk"}),
    "ignored_bad_session": frame(notification("session/update", {"sessionId": 5, "update": "x"})),
    "update_as_request": frame(
        request(
            3,
            "session/update",
            {"sessionId": "s1", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "c1"}},
        )
    ),
    "permission_as_notification": frame(
        notification("session/request_permission", {"sessionId": "s1", "toolCall": {"toolCallId": "c1"}, "options": []})
    ),
    "permission_params_array": frame(request(4, "session/request_permission", ["s1"])),
    "permission_params_null": frame(request(4, "session/request_permission", None)),
}


@pytest.mark.parametrize("name", list(NOOP_FRAMES))
def test_frames_that_touch_nothing_return_none(backend, name):
    # (unknown updates are kept by default: with max_updates=0 they too touch nothing)
    expected = empty_state()
    if name == "unknown_update_not_kept":
        s = backend.ToolCallStore(max_updates=0)
        expected = {**dict(list(expected.items())[:4]), "maxUpdates": 0, **dict(list(expected.items())[4:])}
    else:
        s = backend.ToolCallStore()
    assert s.apply(NOOP_FRAMES[name]) is None
    assert_record(s.state(), expected)
    assert len(s) == 0


def test_unknown_update_is_recorded_by_default(backend):
    # issue 16: an update of a kind the store has no rule for is kept in its session's record
    s = backend.ToolCallStore()
    line = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
    change = s.apply(line + b'{"sessionUpdate":"_custom","toolCallId":"c1","n":2.50}}}')
    assert change_of(backend, change) == ("s1", "update", "_custom", "appended", None)
    kept = {"sessionUpdate": "_custom", "toolCallId": "c1", "n": 2.5}
    session = {"toolCalls": {}, "terminals": {}, "plans": {}, "permissions": [], "updates": [kept]}
    assert_record(s.state(), empty_state(sessions={"s1": session}))
    assert_record(s.updates("s1"), [kept])
    # not a tool call: the snapshot lists sessions with tool calls only
    assert_record(s.snapshot(), {})
    assert len(s) == 0 and s.get("s1", "c1") is None
    assert b'"updates":[{"sessionUpdate":"_custom","toolCallId":"c1","n":2.50}]' in s.to_json()


def test_apply_batch_results_in_order(backend):
    entries = [
        json.loads(tool_call_update("s1", "c1", {"title": "T"})),
        json.loads(B.message_chunk("s1", "hi")),
        json.loads(tool_call_update("s1", "c2")),
        {"jsonrpc": "1.0", "method": "x"},
        json.loads(chunk("s1", "c1", A)),
        7,
    ]
    del entries[2]["params"]["update"]["toolCallId"]
    data = frame(entries)
    s = backend.ToolCallStore()
    got = s.apply(data)
    assert isinstance(got, list) and len(got) == 6
    assert change_of(backend, got[0]) == ("s1", "tool_call", "c1", "created", "c1")
    assert got[1] is None
    # entry 2: its update object lacks toolCallId; position = that object's "{" within the frame
    third = data.index(b'{"jsonrpc"', data.index(b'{"jsonrpc"', data.index(b'{"jsonrpc"') + 1) + 1)
    update_at = value_at(data, b'"update":', third)
    assert_state_error(
        got[2], "invalid_tool_call_id", 'expected "params.update.toolCallId" to be a string, found none', update_at
    )
    fourth = data.index(b'{"jsonrpc":"1.0"')
    assert (got[3].code, got[3].kind, got[3].position) == (-32600, "invalid_jsonrpc", fourth + len(b'{"jsonrpc":'))
    assert change_of(backend, got[4]) == ("s1", "tool_call", "c1", "appended", "c1")
    assert (got[5].code, got[5].kind) == (-32600, "not_an_object")
    assert_record(s.snapshot(), {"s1": {"c1": rec("c1", title="T", content=[A])}})


def test_apply_batch_forms_agree(backend):
    line = frame([json.loads(tool_call_update("s1", "c1", {"title": "T"})), json.loads(chunk("s1", "c1", A))])
    forms = [line, line.decode() + "\n", backend.decode(line), json.loads(line)]
    for data in forms:
        s = backend.ToolCallStore()
        got = s.apply(data)
        assert [change_of(backend, c) for c in got] == [
            ("s1", "tool_call", "c1", "created", "c1"),
            ("s1", "tool_call", "c1", "appended", "c1"),
        ]
        assert_record(s.get("s1", "c1"), rec("c1", title="T", content=[A]))
    assert isinstance(backend.decode(line), Batch)


def test_apply_batch_entries_apply_in_array_order(backend):
    line = frame(
        [
            json.loads(tool_call_update("s1", "c1", {"content": [A]})),
            json.loads(tool_call_update("s1", "c1", {"content": [Bc]})),
            json.loads(chunk("s1", "c1", C)),
        ]
    )
    s = backend.ToolCallStore()
    s.apply(line)
    assert_record(s.get("s1", "c1"), rec("c1", content=[Bc, C]))


# ------------------------------------------------------------------------------------------
# feed / finish
# ------------------------------------------------------------------------------------------


def _stream():
    lines = [
        B.tool_call_update("s1", "c1", title="T")[:-1],  # 1 created
        b"   ",  # 2 blank
        b'{"jsonrpc":"2.0",',  # 3 JSON error
        B.message_chunk("s1", "hi")[:-1],  # 4 nothing
        session_update("s1", {"sessionUpdate": "tool_call_update"}),  # 5 state error
        B.tool_call_content_chunk("s1", "c1", A)[:-1],  # 6 appended
        b'{"jsonrpc":"2.0","method":5}',  # 7 invalid request
        frame([json.loads(chunk("s1", "c2", Bc)), 1]),  # 8 batch: created + error
    ]
    return lines


def _check_stream_results(backend, results, s, last_line):
    lines = _stream()
    assert len(results) == 6
    assert change_of(backend, results[0]) == ("s1", "tool_call", "c1", "created", "c1")
    e3 = results[1]
    assert (e3.code, e3.kind, e3.line, e3.position, e3.raw) == (-32700, "eof", 3, 17, lines[2])
    assert_state_error(
        results[2],
        "invalid_tool_call_id",
        'expected "params.update.toolCallId" to be a string, found none',
        value_at(lines[4], b'"update":'),
        line=5,
    )
    assert change_of(backend, results[3]) == ("s1", "tool_call", "c1", "appended", "c1")
    e7 = results[4]
    assert (e7.code, e7.kind, e7.line, e7.raw) == (-32600, "invalid_method", 7, lines[6])
    assert change_of(backend, results[5]) == ("s1", "tool_call", "c2", "created", "c2")
    assert_record(s.snapshot(), {"s1": {"c1": rec("c1", title="T", content=[A]), "c2": rec("c2", content=[Bc])}})
    assert s.line == last_line


def test_feed_applies_frames_around_bad_lines(backend):
    lines = _stream()
    data = b"\n".join(lines) + b"\n"
    s = backend.ToolCallStore()
    results = s.feed(data)
    # the batch's non-object entry is an error too
    assert len(results) == 7
    last = results.pop()
    assert (last.code, last.kind, last.line) == (-32600, "not_an_object", 8)
    _check_stream_results(backend, results, s, 8)
    assert s.finish() == []


@pytest.mark.parametrize("size", [1, 3, 7, 64])
def test_feed_any_split_same_results(backend, size):
    lines = _stream()
    data = b"\r\n".join(lines) + b"\r\n"
    s = backend.ToolCallStore()
    results = []
    for i in range(0, len(data), size):
        results += s.feed(data[i : i + size])
    results += s.finish()
    assert len(results) == 7
    results.pop()
    _check_stream_results(backend, results, s, 8)


def test_finish_applies_last_line_without_newline(backend):
    s = backend.ToolCallStore()
    assert s.feed(LINE) == []
    assert s.get("s1", "c1") is None
    (c,) = s.finish()
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "created", "c1")
    assert s.line == 1
    assert s.finish() == []
    (c,) = s.feed(B.tool_call_content_chunk("s1", "c1", A))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "appended", "c1")
    assert s.line == 2


def test_feed_frame_too_large(backend):
    s = backend.ToolCallStore(max_frame_bytes=len(LINE))
    results = s.feed(LINE + b"\n" + LINE + b"xx\n" + LINE + b"\n")
    assert len(results) == 3
    assert change_of(backend, results[0]) == ("s1", "tool_call", "c1", "created", "c1")
    err = results[1]
    assert (err.code, err.kind, err.line, err.position, err.raw) == (-32700, "frame_too_large", 2, len(LINE), None)
    assert err.msg == f"expected a frame of at most {len(LINE)} bytes, found a longer line; skipped to the next newline"
    assert change_of(backend, results[2]) == ("s1", "tool_call", "c1", "updated", "c1")


# ------------------------------------------------------------------------------------------
# 7.7 errors
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "update_kind",
    [
        "tool_call",
        "tool_call_update",
        "tool_call_content_chunk",
        "terminal_update",
        "terminal_output_chunk",
        "plan",
        "plan_update",
        "plan_removed",
    ],
)
@pytest.mark.parametrize("sid, found", [(5, "number 5"), (None, "null"), (["s1"], "array"), (True, "true")])
def test_invalid_session_id(backend, update_kind, sid, found):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1"))
    data = session_update(sid, {"sessionUpdate": update_kind, "toolCallId": "c1"})
    expect_error(
        backend,
        s,
        data,
        "invalid_session_id",
        f'expected "params.sessionId" to be a string, found {found}',
        value_at(data, b'"sessionId":'),
    )
    _good_after(backend, s)


def test_missing_session_id(backend):
    s = backend.ToolCallStore()
    data = frame(notification("session/update", {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "c1"}}))
    expect_error(
        backend,
        s,
        data,
        "invalid_session_id",
        'expected "params.sessionId" to be a string, found none',
        value_at(data, b'"params":'),
    )
    _good_after(backend, s)


def test_session_id_checked_first(backend):
    s = backend.ToolCallStore()
    data = session_update(7, {"sessionUpdate": "tool_call_update", "content": 3, "locations": 4})
    expect_error(
        backend,
        s,
        data,
        "invalid_session_id",
        'expected "params.sessionId" to be a string, found number 7',
        value_at(data, b'"sessionId":'),
    )


# ------------------------------------------------------------------------------------------
# queries return fresh objects
# ------------------------------------------------------------------------------------------


def test_queries_return_fresh_objects(backend):
    s = _load(backend, _rich_stream())
    before = s.to_json()
    r = s.get("s1", "c1")
    r["title"] = "changed"
    r["content"].append("junk")
    r["rawInput"]["cmd"] = "rm"
    r["locations"].append(1)
    s.tool_calls("s1")["c1"]["kind"] = "x"
    s.tool_calls("s1").clear()
    s.snapshot()["s1"]["c1"]["content"].clear()
    t = s.terminal("s1", "t2")
    t["outputMeta"]["m"] = 2
    t["exitStatus"].clear()
    s.terminals("s1")["t1"]["command"] = "x"
    s.plans("s1")["main"]["entries"].append({})
    s.permission(5)["options"].append({})
    s.permission(5)["outcome"] = "selected"
    s.permissions("s1")[1]["response"]["outcome"] = None
    s.pending_permissions("s1")[0]["approved"] = True
    st = s.state()
    st["sessions"]["s1"]["toolCalls"]["c1"]["status"] = "failed"
    st["sessions"].clear()
    assert s.to_json() == before
    assert_record(s.state(), _rich_state())
    assert s.get("s1", "c1") is not s.get("s1", "c1")


def test_len_counts_retained_tool_calls(backend):
    s = backend.ToolCallStore()
    s.apply(tool_call_update("s1", "a"))
    s.apply(tool_call_update("s1", "a"))
    s.apply(tool_call_update("s2", "a"))
    s.apply(B.terminal_update("s1", "t", command="x"))
    s.apply(B.plan("s1", []))
    assert len(s) == 2
