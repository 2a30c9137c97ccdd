"""Checkpoints (mirrors ``rust/state/checkpoint.rs`` and ``_fallback/state/checkpoint.py``):
``state()``, ``to_json()`` and ``ToolCallStore.from_json`` (DESIGN.md §7.8).

Every behaviour test takes the ``backend`` fixture and runs on both backends (ids rust, python);
expected values are written out in full. Shared helpers: ``state_helpers.py``, ``state_model.py``.
"""

from __future__ import annotations

import pytest

from acp_fast import DecodeError
from acp_fast import builders as B
from state_helpers import (
    INIT_V1,
    OPTIONS,
    A,
    _load,
    _rich_state,
    _rich_stream,
    canonical_numbers,
    rec,
    terminal_frame,
)
from state_model import (
    assert_record,
    chunk,
    results_key,
    session_update,
    tool_call_update,
)

# ------------------------------------------------------------------------------------------
# checkpoints
# ------------------------------------------------------------------------------------------


def test_state_shape(backend):
    s = _load(backend, _rich_stream())
    assert_record(s.state(), _rich_state())
    assert s.to_json() == backend.dumps(s.state())
    assert type(s.to_json()) is bytes


def _queries(s, sessions=("s1", "s2", "s3", "s4"), ids=(5, "p", 1)):
    out = {
        "len": len(s),
        "evicted": s.evicted,
        "protocol_version": s.protocol_version,
        "negotiated_version": s.negotiated_version,
        "snapshot": s.snapshot(),
        "state": s.state(),
        "permission": [s.permission(i) for i in ids],
    }
    for sid in sessions:
        out[sid] = (
            s.tool_calls(sid),
            s.terminals(sid),
            s.plans(sid),
            s.permissions(sid),
            s.pending_permissions(sid),
            s.cancel_responses(sid),
            [s.get(sid, t) for t in ("c1", "c2", "x")],
            [s.terminal(sid, t) for t in ("t1", "t2")],
        )
    return out


def _more_frames():
    return [
        B.tool_call_content_chunk("s1", "c1", A),
        B.terminal_output_chunk("s1", "t1", b"?"),
        B.permission_response(5, "reject"),
        tool_call_update("s3", "x", {"title": None}),
        session_update("s1", {"sessionUpdate": "plan_removed", "planId": "main"}),
        tool_call_update("s4", "c1"),
        B.request_permission(5, "s2", "c9", OPTIONS),
    ]


def test_from_json_round_trip(backend):
    s = _load(backend, _rich_stream())
    data = s.to_json()
    r = backend.ToolCallStore.from_json(data)
    assert type(r) is backend.ToolCallStore
    assert r.to_json() == data
    assert_record(_queries(r), _queries(s))
    got_s = [results_key(backend, s.apply(f)) for f in _more_frames()]
    got_r = [results_key(backend, r.apply(f)) for f in _more_frames()]
    assert got_s == got_r
    assert got_s[2] == ("change", "s1", "permission", 5, "resolved", "c1")
    assert r.to_json() == s.to_json()
    assert_record(_queries(r), _queries(s))


@pytest.mark.parametrize("kw", [{"protocol_version": 1}, {"protocol_version": 2, "max_tool_calls": 7}, {}])
def test_from_json_keeps_settings(backend, kw):
    s = backend.ToolCallStore(**kw)
    s.apply(INIT_V1)
    r = backend.ToolCallStore.from_json(s.to_json())
    assert (r.protocol_version, r.negotiated_version) == (s.protocol_version, 1)
    assert_record(r.state(), s.state())


def test_from_json_empty_store(backend):
    s = backend.ToolCallStore()
    r = backend.ToolCallStore.from_json(s.to_json())
    assert r.to_json() == s.to_json()
    assert len(r) == 0 and r.evicted == 0


def test_eviction_order_after_restore_is_creation_order(backend):
    s = backend.ToolCallStore(2, max_tool_calls=3)
    s.apply(tool_call_update("s1", "a"))
    s.apply(tool_call_update("s2", "b"))
    s.apply(tool_call_update("s1", "c"))
    r = backend.ToolCallStore.from_json(s.to_json())
    # the document lists s1/a, s1/c, s2/b; "toolCallOrder" keeps the creation order across sessions
    assert s.state()["toolCallOrder"] == ["s1", "s2", "s1"]
    for store in (s, r):
        store.apply(tool_call_update("s3", "d"))
        assert store.get("s1", "a") is None
        store.apply(tool_call_update("s3", "e"))
        assert store.get("s2", "b") is None and store.get("s1", "c") is not None  # creation order
        assert store.evicted == 2


def test_from_json_evicted_count_and_bound(backend):
    s = backend.ToolCallStore(max_tool_calls=1)
    s.apply(tool_call_update("s1", "a"))
    s.apply(tool_call_update("s1", "b"))
    r = backend.ToolCallStore.from_json(s.to_json())
    assert (len(r), r.evicted) == (1, 1)
    r.apply(tool_call_update("s1", "c"))
    assert (len(r), r.evicted) == (1, 2)
    assert list(r.tool_calls("s1")) == ["c"]


BAD_CHECKPOINTS = {
    "not_json": (b"{", None),
    "array": (b"[]", None),
    "format": (
        b'{"format":"acp-fast-state/3","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{}}',
        "format",
    ),
    "no_format": (
        b'{"protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{}}',
        "format",
    ),
    "version": (
        b'{"format":"acp-fast-state/1","protocolVersion":3,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{}}',
        "protocolVersion",
    ),
    "negotiated": (
        b'{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":"2","maxToolCalls":null,"evicted":0,"sessions":{}}',
        "negotiatedVersion",
    ),
    "max": (
        b'{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":0,"evicted":0,"sessions":{}}',
        "maxToolCalls",
    ),
    "evicted": (
        b'{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":"0","sessions":{}}',
        "evicted",
    ),
    "sessions": (
        b'{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":[]}',
        "sessions",
    ),
    "no_sessions": (
        b'{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0}',
        "sessions",
    ),
    "tool_calls": (
        b'{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{"s1":{"toolCalls":[],"terminals":{},"plans":{},"permissions":[]}}}',
        "toolCalls",
    ),
    "tool_call_record": (
        b'{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{"s1":{"toolCalls":{"c1":5},"terminals":{},"plans":{},"permissions":[]}}}',
        "c1",
    ),
    "content": (
        b'{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{"s1":{"toolCalls":{"c1":{"toolCallId":"c1","kind":"other","status":"pending","content":{},"locations":[]}},"terminals":{},"plans":{},"permissions":[]}}}',
        "content",
    ),
    "terminals": (
        b'{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{"s1":{"toolCalls":{},"terminals":5,"plans":{},"permissions":[]}}}',
        "terminals",
    ),
    "output": (
        b'{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{"s1":{"toolCalls":{},"terminals":{"t1":{"terminalId":"t1","output":"A"}},"plans":{},"permissions":[]}}}',
        "output",
    ),
    "plans": (
        b'{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{"s1":{"toolCalls":{},"terminals":{},"plans":[],"permissions":[]}}}',
        "plans",
    ),
    "permissions": (
        b'{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{"s1":{"toolCalls":{},"terminals":{},"plans":{},"permissions":{}}}}',
        "permissions",
    ),
    "session": (
        b'{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{"s1":[]}}',
        "s1",
    ),
    "permission_order_type": (
        b'{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{},"permissionOrder":{}}',
        "permissionOrder",
    ),
    "permission_order_unknown_session": (
        b'{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{},"permissionOrder":["s9"]}',
        "permissionOrder.0",
    ),
    "permission_order_count": (
        b'{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{"s1":{"toolCalls":{},"terminals":{},"plans":{},"permissions":[]}},"permissionOrder":["s1"]}',
        "permissionOrder",
    ),
}


def test_permission_latest_across_sessions_survives_restore(backend):
    # One request id used in two sessions: permission(id) is the latest request, before and
    # after a checkpoint round trip (the checkpoint keeps the order across sessions).
    s = backend.ToolCallStore()
    s.apply(B.request_permission(1, "s2", "a", OPTIONS))
    s.apply(B.permission_response(1, "allow"))
    s.apply(B.request_permission(1, "s1", "b", OPTIONS))
    s.apply(B.permission_response(1, "reject"))
    s.apply(B.request_permission(1, "s2", "c", OPTIONS))
    latest = s.permission(1)
    assert (latest["sessionId"], latest["toolCallId"], latest["outcome"]) == ("s2", "c", "pending")
    assert s.state()["permissionOrder"] == ["s2", "s1", "s2"]
    r = backend.ToolCallStore.from_json(s.to_json())
    assert_record(r.permission(1), latest)
    assert r.to_json() == s.to_json()
    # Resolving after the restore resolves the same (latest) record.
    r.apply(B.permission_response(1, "allow"))
    assert (r.permission(1)["toolCallId"], r.permission(1)["outcome"]) == ("c", "selected")


def test_checkpoint_without_permission_order_loads_in_session_order(backend):
    s = backend.ToolCallStore()
    s.apply(B.request_permission(1, "s2", "a", OPTIONS))
    s.apply(B.permission_response(1, "allow"))
    s.apply(B.request_permission(1, "s1", "b", OPTIONS))
    s.apply(B.permission_response(1, "reject"))
    doc = s.state()
    del doc["permissionOrder"]
    r = backend.ToolCallStore.from_json(backend.dumps(doc))
    assert r.permissions("s1") == s.permissions("s1") and r.permissions("s2") == s.permissions("s2")
    assert r.state()["permissionOrder"] == ["s2", "s1"]  # s2 was seen first


@pytest.mark.parametrize("name", list(BAD_CHECKPOINTS))
def test_from_json_bad_checkpoint(backend, name):
    data, key = BAD_CHECKPOINTS[name]
    with pytest.raises(ValueError) as info:
        backend.ToolCallStore.from_json(data)
    if key is not None:
        assert key in str(info.value), f"the message should name the path ({key}): {info.value}"


_HEAD = '"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0'


def _doc(sessions, extra=""):
    return ("{" + _HEAD + ',"sessions":' + sessions + extra + "}").encode()


def _session(tool_calls="{}", permissions="[]", plans="{}"):
    return '{"toolCalls":' + tool_calls + ',"terminals":{},"plans":' + plans + ',"permissions":' + permissions + "}"


# The exact ValueError texts (each backend writes them; the values they quote are Python reprs).
CHECKPOINT_MESSAGES = [
    (
        # A plan is filed under its planId, like a tool call under its toolCallId.
        _doc('{"s1":' + _session(plans='{"main":{"planId":"other","entries":[]}}') + "}"),
        "expected \"state.sessions.s1.plans.main.planId\" to be 'main', found string",
    ),
    (
        _doc('{"s1":' + _session(plans='{"main":{"entries":[]}}') + "}"),
        'expected "state.sessions.s1.plans.main.planId" to be present, found none',
    ),
    (
        b'{"format":{"a":[1.5e300,-0.0,"\\u00e9\'\\""]}}',
        "expected \"state.format\" to be 'acp-fast-state/2' or 'acp-fast-state/1', found {'a': [1.5e+300, -0.0, 'é\\'\"']}",
    ),
    (
        _doc('{"s1":' + _session(tool_calls='{"c\\u2028":{"toolCallId":"c"}}') + "}"),
        "expected \"state.sessions.s1.toolCalls.c\u2028.toolCallId\" to be 'c\\u2028', found string",
    ),
    (
        _doc('{"s\'1\\"":' + _session(permissions='[{"id":"x","sessionId":5}]') + "}"),
        "expected \"state.sessions.s'1\".permissions.0.sessionId\" to be 's\\'1\"', found number",
    ),
    (
        _doc('{"s\'1":' + _session() + "}", ',"permissionOrder":["s\'1"]'),
        'expected "state.permissionOrder" to name "s\'1" 0 times (its permission records), found more',
    ),
    (
        _doc('{"s1":' + _session(tool_calls='{"c1":{"toolCallId":"c1","kind":"other"}}') + "}"),
        'expected "state.sessions.s1.toolCalls.c1.status" to be present, found none',
    ),
    (
        # An outcome that cannot be a set member is a bad shape too (a ValueError, not a TypeError).
        _doc('{"s1":' + _session(permissions='[{"id":1,"sessionId":"s1","options":[],"outcome":[]}]') + "}"),
        (
            'expected "state.sessions.s1.permissions.0.outcome" to be one of cancelled, error, invalid, pending,'
            " selected, unknown, found array"
        ),
    ),
]


@pytest.mark.parametrize("data, message", CHECKPOINT_MESSAGES)
def test_from_json_error_messages(backend, data, message):
    with pytest.raises(ValueError) as info:
        backend.ToolCallStore.from_json(data)
    assert type(info.value) is ValueError
    assert str(info.value) == message


def test_to_json_identical_across_backends(both_backends):
    native, fallback = both_backends
    frames = _rich_stream() + _more_frames()
    a, b = _load(native, frames), _load(fallback, frames)
    assert a.to_json() == b.to_json()
    assert_record(a.state(), b.state())
    # a checkpoint written by one backend restores in the other
    assert fallback.ToolCallStore.from_json(a.to_json()).to_json() == a.to_json()
    assert native.ToolCallStore.from_json(b.to_json()).to_json() == b.to_json()


def test_to_json_is_the_state_for_odd_values(both_backends):
    # values stored from frames with whitespace, escapes, exponents and duplicate keys in nested
    # objects: to_json() holds the values of state(), written as dumps writes them but for numbers
    # and strings, which keep their text as received (DESIGN 7.8)
    text = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update",'
        b'"toolCallId":"c1","rawInput": { "a" : 1E2 , "b":[ 1.50 , -0 , -0.0 , 1e-400 ], "a": "\\u00e9\\/\\u2028" } ,'
        b'"content":[ {"type":"x","k":1,"k":2} ], "_meta": {"\\u0041":true}}}}'
    )
    for backend in both_backends:
        s = backend.ToolCallStore(2)
        s.apply(text)
        s.apply(terminal_frame("s1", "t1", output={"data": "AAAA", "_meta": {"x": 1.0}}))
        assert canonical_numbers(s.to_json()) == backend.dumps(s.state())
        assert b'"b":[1.50,-0,-0.0,1e-400]' in s.to_json()
        assert b'{"a":"\\u00e9\\/\\u2028",' in s.to_json() and b'"_meta":{"A":true}' in s.to_json()
        assert_record(
            s.get("s1", "c1"),
            rec(
                "c1",
                content=[{"type": "x", "k": 2}],
                rawInput={"a": "é/\u2028", "b": [1.5, 0, -0.0, 0.0]},
                _meta={"A": True},
            ),
        )
    assert both_backends[0].ToolCallStore(2).to_json() == both_backends[1].ToolCallStore(2).to_json()


def test_state_after_errors_and_eviction_identical_across_backends(both_backends):
    frames = [
        tool_call_update("s1", "a", {"status": "completed"}),
        tool_call_update("s1", "b"),
        session_update("s1", {"sessionUpdate": "tool_call_update"}),
        tool_call_update("s2", "c"),
        chunk("s2", "c", None),
        B.terminal_output_chunk("s2", "t", b"x"),
    ]
    results = []
    for backend in both_backends:
        s = backend.ToolCallStore(max_tool_calls=2)
        got = []
        for f in frames:
            try:
                got.append(results_key(backend, s.apply(f)))
            except DecodeError as exc:
                got.append(exc)
        results.append((got, s.to_json()))
    assert results[0] == results[1]
