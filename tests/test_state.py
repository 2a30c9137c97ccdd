"""The state engine (``ToolCallStore``, ``Change``): API.md "Tool-call state" and DESIGN.md §7.

Every behaviour test takes the ``backend`` fixture and runs on both backends (ids rust, python).
Expected values are written out in full: records (with their key order), Change tuples, error
code/kind/description/position. Frames come from ``acp_fast.builders`` where a builder fits, and
are written by hand (``state_model.frame`` or literal bytes) where exact bytes matter.
"""

from __future__ import annotations

import base64
import json
import pickle

import pytest

from acp_fast import Batch, DecodeError, EncodeError
from acp_fast import builders as B
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
    results_key,
    session_update,
    tool_call,
    tool_call_update,
    value_at,
)

# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------


def rec(tcid, **fields):
    """A materialized tool-call record in DESIGN 7.3 key order; pass optional fields by wire name
    through ``fields`` (``title``, ``rawInput`` ...; unknown ones go last in the order given)."""
    out = {"toolCallId": tcid}
    if "title" in fields:
        out["title"] = fields.pop("title")
    out["kind"] = fields.pop("kind", "other")
    out["status"] = fields.pop("status", "pending")
    out["content"] = fields.pop("content", [])
    out["locations"] = fields.pop("locations", [])
    for key in ("rawInput", "rawOutput", "name", "_meta"):
        if key in fields:
            out[key] = fields.pop(key)
    out.update(fields)
    return out


A = B.text_content("A")
Bc = B.text_content("B")
C = B.text_content("C")
D = B.text_content("D")
E = B.text_content("E")

ALLOW = B.permission_option("allow", "Allow once", "allow_once")
ALWAYS = B.permission_option("always", "Allow always", "allow_always")
REJECT = B.permission_option("reject", "Reject once", "reject_once")
NEVER = B.permission_option("never", "Reject always", "reject_always")
OPTIONS = [ALLOW, ALWAYS, REJECT, NEVER]

CANCEL = frame(notification("session/cancel", {"sessionId": "s1"}))


def expect_error(backend, store, data, kind, description, position, *, code=-32602):
    """``apply(data)`` raises exactly this DecodeError, leaves the store unchanged, and the store
    keeps working afterwards."""
    before = store.state()
    before_json = store.to_json()
    with pytest.raises(DecodeError) as info:
        store.apply(data)
    assert_state_error(info.value, kind, description, position, code=code)
    assert_record(store.state(), before)
    assert store.to_json() == before_json
    return info.value


def full_v1_record_frame(sid="s1", tcid="c1"):
    return B.tool_call(
        sid,
        tcid,
        "Read README",
        kind="read",
        status="in_progress",
        content=[A],
        locations=[B.location("/r/README.md", 3)],
        raw_input={"path": "/r/README.md"},
        raw_output={"n": 1},
        name="read_file",
        meta={"trace": "t1"},
    )


FULL = rec(
    "c1",
    title="Read README",
    kind="read",
    status="in_progress",
    content=[A],
    locations=[{"path": "/r/README.md", "line": 3}],
    rawInput={"path": "/r/README.md"},
    rawOutput={"n": 1},
    name="read_file",
    _meta={"trace": "t1"},
)


def empty_state(protocol_version=None, negotiated=None, max_tool_calls=None, evicted=0, sessions=None):
    sessions = {} if sessions is None else sessions
    return {
        "format": "acp-fast-state/1",
        "protocolVersion": protocol_version,
        "negotiatedVersion": negotiated,
        "maxToolCalls": max_tool_calls,
        "evicted": evicted,
        "sessions": sessions,
        # (the tests that use this helper request permissions in session order)
        "permissionOrder": [sid for sid, sd in sessions.items() for _ in sd.get("permissions", ())],
    }


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


INIT_V2 = response(0, {"protocolVersion": 2, "agentCapabilities": {}, "authMethods": []})
INIT_V1 = response(0, {"protocolVersion": 1, "agentCapabilities": {}})


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
# the record and its defaults (API.md "The record")
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, None])
def test_record_defaults(backend, version):
    s = backend.ToolCallStore(version)
    c = s.apply(tool_call_update("s1", "c1"))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "created", "c1")
    assert_record(
        s.get("s1", "c1"), {"toolCallId": "c1", "kind": "other", "status": "pending", "content": [], "locations": []}
    )
    assert len(s) == 1


def test_get_unknown_is_none(backend):
    s = backend.ToolCallStore()
    s.apply(tool_call_update("s1", "c1"))
    assert s.get("s1", "c2") is None
    assert s.get("s2", "c1") is None
    assert s.tool_calls("s2") == {}


def test_materialized_key_order_is_fixed(backend):
    s = backend.ToolCallStore(2)
    fields = {
        "zeta": 1,
        "_meta": {"m": 1},
        "name": "n",
        "rawOutput": 2,
        "rawInput": 1,
        "alpha": 2,
        "locations": [{"path": "/x"}],
        "content": [A],
        "status": "failed",
        "kind": "edit",
        "title": "T",
    }
    s.apply(tool_call_update("s1", "c1", fields))
    got = s.get("s1", "c1")
    assert list(got) == [
        "toolCallId",
        "title",
        "kind",
        "status",
        "content",
        "locations",
        "rawInput",
        "rawOutput",
        "name",
        "_meta",
        "zeta",
        "alpha",
    ]
    assert_record(
        got,
        rec(
            "c1",
            title="T",
            kind="edit",
            status="failed",
            content=[A],
            locations=[{"path": "/x"}],
            rawInput=1,
            rawOutput=2,
            name="n",
            _meta={"m": 1},
            zeta=1,
            alpha=2,
        ),
    )


def test_unknown_fields_in_first_set_order(backend):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1", {"zeta": 1, "alpha": 2}))
    s.apply(tool_call_update("s1", "c1", {"beta": 3, "zeta": 10}))  # zeta keeps its place
    assert_record(s.get("s1", "c1"), rec("c1", zeta=10, alpha=2, beta=3))
    s.apply(tool_call_update("s1", "c1", {"zeta": None}))  # unset ...
    assert_record(s.get("s1", "c1"), rec("c1", alpha=2, beta=3))
    s.apply(tool_call_update("s1", "c1", {"zeta": "again"}))  # ... and set again: goes last
    assert_record(s.get("s1", "c1"), rec("c1", alpha=2, beta=3, zeta="again"))


def test_field_values_kept_whatever_their_json_type(backend):
    s = backend.ToolCallStore(2)
    fields = {
        "title": 42,
        "kind": {"k": 1},
        "status": ["a"],
        "name": False,
        "rawInput": "text",
        "rawOutput": 0,
        "_meta": 1.5,
    }
    s.apply(tool_call_update("s1", "c1", fields))
    assert_record(
        s.get("s1", "c1"),
        rec("c1", title=42, kind={"k": 1}, status=["a"], name=False, rawInput="text", rawOutput=0, _meta=1.5),
    )


@pytest.mark.parametrize("version", [1, 2])
def test_custom_and_unknown_kinds_and_statuses_preserved(backend, version):
    s = backend.ToolCallStore(version)
    s.apply(B.tool_call("s1", "c1", "x", kind="read"))
    s.apply(tool_call_update("s1", "c1", {"kind": "_acme_deploy", "status": "_waiting_for_ci"}))
    assert_record(s.get("s1", "c1"), rec("c1", title="x", kind="_acme_deploy", status="_waiting_for_ci"))
    s.apply(tool_call_update("s1", "c1", {"kind": "teleport", "status": "paused"}))
    assert_record(s.get("s1", "c1"), rec("c1", title="x", kind="teleport", status="paused"))
    s.apply(tool_call("s1", "c2", {"title": "y", "kind": "switch_mode", "status": "cancelled"}))
    assert_record(s.get("s1", "c2"), rec("c2", title="y", kind="switch_mode", status="cancelled"))


@pytest.mark.parametrize("version", [1, 2])
def test_unknown_content_types_preserved_exactly(backend, version):
    items = [
        {"type": "_acme_widget", "payload": {"z": [1, {"y": None}], "a": "é"}, "extra": None},
        {"type": "future_thing"},
        {"type": "diff", "changes": [{"operation": "move", "oldPath": "/a", "path": "/b", "_meta": {}}], "patch": None},
        {"type": "diff", "path": "/a", "oldText": None, "newText": "x"},
        {"type": "terminal", "terminalId": "t1"},
        {"no_type": True},
    ]
    s = backend.ToolCallStore(version)
    s.apply(tool_call_update("s1", "c1", {"content": items, "locations": [{"path": "/a", "line": None, "_x": [None]}]}))
    assert_record(s.get("s1", "c1"), rec("c1", content=items, locations=[{"path": "/a", "line": None, "_x": [None]}]))
    odd = {"type": "_chunky", "data": [None, {"k": None}]}
    s.apply(chunk("s1", "c1", odd))
    assert_record(s.get("s1", "c1")["content"], items + [odd])


def test_values_equal_stdlib_json_loads(backend):
    # big ints, floats (exponents, underflow, -0.0), -0, escapes of every kind, raw non-ASCII
    text = (
        r'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\u00e91",'
        r'"update":{"sessionUpdate":"tool_call_update","toolCallId":"c\ud83d\ude00",'
        r'"title":"line\nbreak \"q\" \\ \/ \u0000 \u00e9 é 😀 \b\f\r\t \u2028",'
        r'"rawInput":{"big":123456789012345678901234567890123456789,"neg":-98765432109876543210987654321,'
        r'"f":1.5E+300,"tiny":5e-324,"nz":-0.0,"z":-0,"e":1E2,"d":0.1,"under":1e-400,"l":[1,2.50,-3e-2]},'
        r'"rawOutput":[true,false,null,"\uD834\uDD1E"],'
        r'"x_\u00fcnicode":"\u00FC"}}}'
    )
    data = text.encode("utf-8")
    expected = json.loads(text)
    update = expected["params"]["update"]
    sid, tcid = "sé1", "c😀"
    s = backend.ToolCallStore(2)
    c = s.apply(data)
    assert change_of(backend, c) == (sid, "tool_call", tcid, "created", tcid)
    want = rec(tcid, title=update["title"], rawInput=update["rawInput"], rawOutput=update["rawOutput"], x_ünicode="ü")
    assert_record(s.get(sid, tcid), want)
    assert_record(s.snapshot(), {sid: {tcid: want}})
    assert s.to_json() == backend.dumps(s.state())
    assert_record(json.loads(s.to_json())["sessions"][sid]["toolCalls"][tcid], want)


def test_duplicate_members_last_wins(backend):
    s = backend.ToolCallStore(2)
    data = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s0","sessionId":"s1","update":'
        b'{"sessionUpdate":"tool_call_update","toolCallId":"a","toolCallId":"c1","zeta":1,"alpha":2,"zeta":3,'
        b'"title":"x","title":null,"kind":null,"kind":"read","rawInput":{"k":1,"k":2}}}}'
    )
    c = s.apply(data)
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "created", "c1")
    assert s.get("s1", "a") is None and s.get("s0", "c1") is None
    assert_record(s.get("s1", "c1"), rec("c1", kind="read", rawInput={"k": 2}, zeta=3, alpha=2))


# ------------------------------------------------------------------------------------------
# the update table (API.md "How each update changes a record")
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, None])
def test_v1_tool_call_creates_from_its_fields(backend, version):
    s = backend.ToolCallStore(version)
    c = s.apply(full_v1_record_frame())
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "created", "c1")
    assert_record(s.get("s1", "c1"), FULL)


@pytest.mark.parametrize("version", [1, 2, None])
def test_v1_tool_call_on_existing_replaces_whole(backend, version):
    s = backend.ToolCallStore(version)
    s.apply(full_v1_record_frame())
    s.apply(tool_call_update("s1", "c1", {"extra": 1}))
    s.apply(chunk("s1", "c1", Bc))
    s.apply(B.tool_call("s1", "c0", "other call"))
    c = s.apply(B.tool_call("s1", "c1", "Again"))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "replaced", "c1")
    assert_record(s.get("s1", "c1"), rec("c1", title="Again"))
    assert list(s.tool_calls("s1")) == ["c1", "c0"]  # still first seen first
    assert len(s) == 2


@pytest.mark.parametrize("version", [1, 2])
def test_v1_tool_call_null_means_absent(backend, version):
    fields = {
        "title": None,
        "kind": None,
        "status": None,
        "content": None,
        "locations": None,
        "rawInput": None,
        "rawOutput": None,
        "name": None,
        "_meta": None,
        "extra": None,
    }
    s = backend.ToolCallStore(version)
    c = s.apply(tool_call("s1", "c1", fields))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "created", "c1")
    assert_record(s.get("s1", "c1"), rec("c1"))
    s.apply(full_v1_record_frame())
    c = s.apply(tool_call("s1", "c1", {"title": "T", **{k: v for k, v in fields.items() if k != "title"}}))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "replaced", "c1")
    assert_record(s.get("s1", "c1"), rec("c1", title="T"))


def test_v1_tool_call_update_present_replaces(backend):
    s = backend.ToolCallStore(1)
    s.apply(full_v1_record_frame())
    c = s.apply(
        B.tool_call_update(
            "s1",
            "c1",
            title="New",
            kind="edit",
            status="completed",
            content=[Bc],
            locations=[],
            raw_input=[1],
            raw_output="out",
            name="edit_file",
            meta={"other": 2},
        )
    )
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "updated", "c1")
    assert_record(
        s.get("s1", "c1"),
        rec(
            "c1",
            title="New",
            kind="edit",
            status="completed",
            content=[Bc],
            locations=[],
            rawInput=[1],
            rawOutput="out",
            name="edit_file",
            _meta={"other": 2},
        ),
    )


def test_v1_tool_call_update_omitted_leaves_unchanged(backend):
    s = backend.ToolCallStore(1)
    s.apply(full_v1_record_frame())
    c = s.apply(B.tool_call_update("s1", "c1", status="completed"))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "updated", "c1")
    assert_record(s.get("s1", "c1"), {**FULL, "status": "completed"})


def test_v1_tool_call_update_null_leaves_unchanged(backend):
    s = backend.ToolCallStore(1)
    s.apply(full_v1_record_frame())
    s.apply(tool_call_update("s1", "c1", {"extra": "kept"}))
    nulls = {
        "title": None,
        "kind": None,
        "status": None,
        "content": None,
        "locations": None,
        "rawInput": None,
        "rawOutput": None,
        "name": None,
        "_meta": None,
        "extra": None,
    }
    c = s.apply(tool_call_update("s1", "c1", nulls))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "updated", "c1")
    assert_record(s.get("s1", "c1"), {**FULL, "extra": "kept"})


@pytest.mark.parametrize("version", [1, 2])
def test_tool_call_update_on_unknown_id_creates_from_non_null_fields(backend, version):
    s = backend.ToolCallStore(version)
    fields = {
        "title": None,
        "status": "in_progress",
        "kind": None,
        "content": None,
        "locations": [{"path": "/p"}],
        "rawInput": None,
        "extra": None,
        "other": 0,
        "_meta": None,
    }
    c = s.apply(tool_call_update("s1", "c9", fields))
    assert change_of(backend, c) == ("s1", "tool_call", "c9", "created", "c9")
    assert_record(s.get("s1", "c9"), rec("c9", status="in_progress", locations=[{"path": "/p"}], other=0))


def test_v2_tool_call_update_present_replaces(backend):
    s = backend.ToolCallStore(2)
    s.apply(full_v1_record_frame())
    c = s.apply(
        B.tool_call_update(
            "s1",
            "c1",
            protocol_version=2,
            title="New",
            kind="_custom",
            status="cancelled",
            content=[Bc],
            locations=[],
            raw_input=[1],
            raw_output="out",
            name="x",
            meta={"o": 2},
        )
    )
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "updated", "c1")
    assert_record(
        s.get("s1", "c1"),
        rec(
            "c1",
            title="New",
            kind="_custom",
            status="cancelled",
            content=[Bc],
            locations=[],
            rawInput=[1],
            rawOutput="out",
            name="x",
            _meta={"o": 2},
        ),
    )


def test_v2_tool_call_update_null_unsets_and_restores_defaults(backend):
    s = backend.ToolCallStore(2)
    s.apply(full_v1_record_frame())
    s.apply(tool_call_update("s1", "c1", {"extra": 1, "more": 2}))
    c = s.apply(
        B.tool_call_update(
            "s1",
            "c1",
            protocol_version=2,
            title=None,
            kind=None,
            status=None,
            content=None,
            locations=None,
            raw_input=None,
            raw_output=None,
            name=None,
            meta=None,
        )
    )
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "updated", "c1")
    assert_record(s.get("s1", "c1"), rec("c1", extra=1, more=2))
    s.apply(tool_call_update("s1", "c1", {"extra": None}))
    assert_record(s.get("s1", "c1"), rec("c1", more=2))


def test_v2_tool_call_update_omitted_leaves_unchanged(backend):
    s = backend.ToolCallStore(2)
    s.apply(full_v1_record_frame())
    c = s.apply(B.tool_call_update("s1", "c1", protocol_version=2, status="completed"))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "updated", "c1")
    assert_record(s.get("s1", "c1"), {**FULL, "status": "completed"})


@pytest.mark.parametrize("version", [1, 2])
def test_update_that_changes_nothing_is_still_updated(backend, version):
    s = backend.ToolCallStore(version)
    s.apply(full_v1_record_frame())
    c = s.apply(tool_call_update("s1", "c1"))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "updated", "c1")
    assert_record(s.get("s1", "c1"), FULL)


@pytest.mark.parametrize("version", [1, 2, None])
def test_content_chunk_appends_to_existing(backend, version):
    s = backend.ToolCallStore(version)
    s.apply(tool_call_update("s1", "c1", {"title": "Run", "content": [A]}))
    c = s.apply(B.tool_call_content_chunk("s1", "c1", Bc))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "appended", "c1")
    assert_record(s.get("s1", "c1"), rec("c1", title="Run", content=[A, Bc]))


@pytest.mark.parametrize("version", [1, 2, None])
def test_content_chunk_on_unknown_id_creates(backend, version):
    s = backend.ToolCallStore(version)
    c = s.apply(B.tool_call_content_chunk("s1", "c1", A))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "created", "c1")
    assert_record(s.get("s1", "c1"), rec("c1", content=[A]))


def test_chunk_members_other_than_content_not_stored(backend):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1", {"_meta": {"record": 1}}))
    s.apply(chunk("s1", "c1", A, {"_meta": {"chunk": 1}, "extra": 5, "status": "completed", "title": "no"}))
    assert_record(s.get("s1", "c1"), rec("c1", content=[A], _meta={"record": 1}))
    s.apply(chunk("s1", "c2", A, {"_meta": {"chunk": 2}}))
    assert_record(s.get("s1", "c2"), rec("c2", content=[A]))


# ------------------------------------------------------------------------------------------
# content / locations replacement, _meta, envelope
# ------------------------------------------------------------------------------------------


def test_v2_chunks_and_replacing_updates_in_arrival_order(backend):
    # ACP-CODEC-SPEC 5.4, step by step
    s = backend.ToolCallStore(2)
    steps = [
        (B.tool_call_update("s1", "c1", protocol_version=2, title="Run", status="pending"), []),
        (B.tool_call_content_chunk("s1", "c1", A), [A]),
        (B.tool_call_content_chunk("s1", "c1", Bc), [A, Bc]),
        (B.tool_call_update("s1", "c1", protocol_version=2, status="in_progress"), [A, Bc]),
        (B.tool_call_update("s1", "c1", protocol_version=2, content=[C]), [C]),
        (B.tool_call_content_chunk("s1", "c1", D), [C, D]),
        (B.tool_call_update("s1", "c1", protocol_version=2, content=None), []),
        (B.tool_call_content_chunk("s1", "c1", E), [E]),
        (B.tool_call_update("s1", "c1", protocol_version=2, content=[]), []),
        (B.tool_call_content_chunk("s1", "c1", A), [A]),
    ]
    for data, content in steps:
        s.apply(data)
        assert_record(s.get("s1", "c1")["content"], content)
    assert_record(s.get("s1", "c1"), rec("c1", title="Run", status="in_progress", content=[A]))


@pytest.mark.parametrize("version", [1, 2])
def test_empty_array_empties_content_and_locations(backend, version):
    s = backend.ToolCallStore(version)
    s.apply(tool_call_update("s1", "c1", {"content": [A, Bc], "locations": [{"path": "/a"}]}))
    s.apply(chunk("s1", "c1", C))
    s.apply(tool_call_update("s1", "c1", {"content": [], "locations": []}))
    assert_record(s.get("s1", "c1"), rec("c1"))
    s.apply(chunk("s1", "c1", D))
    assert_record(s.get("s1", "c1"), rec("c1", content=[D]))


def test_v2_null_empties_content_and_locations(backend):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1", {"content": [A], "locations": [{"path": "/a"}]}))
    s.apply(tool_call_update("s1", "c1", {"content": None, "locations": None}))
    assert_record(s.get("s1", "c1"), rec("c1"))


def test_v1_null_keeps_content_and_locations(backend):
    s = backend.ToolCallStore(1)
    s.apply(tool_call_update("s1", "c1", {"content": [A], "locations": [{"path": "/a"}]}))
    s.apply(chunk("s1", "c1", Bc))
    s.apply(tool_call_update("s1", "c1", {"content": None, "locations": None}))
    assert_record(s.get("s1", "c1"), rec("c1", content=[A, Bc], locations=[{"path": "/a"}]))


@pytest.mark.parametrize("version", [1, 2])
def test_replacing_update_drops_chunks_and_later_chunks_append(backend, version):
    s = backend.ToolCallStore(version)
    s.apply(chunk("s1", "c1", A))
    s.apply(chunk("s1", "c1", Bc))
    s.apply(tool_call_update("s1", "c1", {"content": [C], "locations": [{"path": "/1"}, {"path": "/2"}]}))
    assert_record(s.get("s1", "c1"), rec("c1", content=[C], locations=[{"path": "/1"}, {"path": "/2"}]))
    s.apply(chunk("s1", "c1", D))
    s.apply(tool_call_update("s1", "c1", {"locations": [{"path": "/3"}]}))
    assert_record(s.get("s1", "c1"), rec("c1", content=[C, D], locations=[{"path": "/3"}]))


@pytest.mark.parametrize("version", [1, 2])
def test_update_meta_replaces_whole(backend, version):
    s = backend.ToolCallStore(version)
    s.apply(tool_call_update("s1", "c1", {"_meta": {"a": 1, "b": {"x": 1}}}))
    s.apply(tool_call_update("s1", "c1", {"_meta": {"b": {"y": 2}}}))
    assert_record(s.get("s1", "c1"), rec("c1", _meta={"b": {"y": 2}}))


def test_v2_null_meta_unsets(backend):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1", {"_meta": {"a": 1}}))
    s.apply(tool_call_update("s1", "c1", {"_meta": None}))
    assert_record(s.get("s1", "c1"), rec("c1"))


def test_v1_null_meta_keeps(backend):
    s = backend.ToolCallStore(1)
    s.apply(tool_call_update("s1", "c1", {"_meta": {"a": 1}}))
    s.apply(tool_call_update("s1", "c1", {"_meta": None}))
    assert_record(s.get("s1", "c1"), rec("c1", _meta={"a": 1}))


def test_chunk_meta_not_merged(backend):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1", {"_meta": {"a": 1}}))
    s.apply(B.tool_call_content_chunk("s1", "c1", A, meta={"a": 2, "chunk": True}))
    s.apply(B.tool_call_content_chunk("s1", "c1", Bc, meta=None))
    assert_record(s.get("s1", "c1"), rec("c1", content=[A, Bc], _meta={"a": 1}))


def test_session_update_and_envelope_not_in_record(backend):
    s = backend.ToolCallStore(2)
    data = frame(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": "s1",
                "_meta": {"p": 1},
                "extra": 2,
                "update": {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "T"},
            },
            "_top": 1,
        }
    )
    s.apply(data)
    assert_record(s.get("s1", "c1"), rec("c1", title="T"))


def test_sessions_isolated_with_repeated_tool_call_ids(backend):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1", {"title": "one", "content": [A]}))
    s.apply(tool_call_update("s2", "c1", {"title": "two"}))
    s.apply(chunk("s2", "c1", Bc))
    s.apply(tool_call_update("s2", "c1", {"title": None}))
    s.apply(B.tool_call("s3", "c1", "three"))
    assert_record(s.get("s1", "c1"), rec("c1", title="one", content=[A]))
    assert_record(s.get("s2", "c1"), rec("c1", content=[Bc]))
    assert_record(s.get("s3", "c1"), rec("c1", title="three"))
    assert len(s) == 3
    c = s.apply(chunk("s4", "c1", C))
    assert change_of(backend, c) == ("s4", "tool_call", "c1", "created", "c1")


def test_tool_calls_in_first_seen_order(backend):
    s = backend.ToolCallStore(1)
    for tcid in ("c3", "c1", "c2"):
        s.apply(tool_call_update("s1", tcid, {"title": tcid}))
    s.apply(tool_call_update("s1", "c1", {"status": "completed"}))
    s.apply(B.tool_call("s1", "c3", "again"))
    s.apply(chunk("s1", "c2", A))
    got = s.tool_calls("s1")
    assert list(got) == ["c3", "c1", "c2"]
    assert_record(
        got,
        {
            "c3": rec("c3", title="again"),
            "c1": rec("c1", title="c1", status="completed"),
            "c2": rec("c2", title="c2", content=[A]),
        },
    )


def test_snapshot_shape(backend):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s2", "x", {"title": "X"}))
    s.apply(B.terminal_update("s0", "t1", command="ls"))  # no tool call: not in the snapshot
    s.apply(B.plan("s9", [B.plan_entry("p")]))
    s.apply(tool_call_update("s1", "a"))
    s.apply(tool_call_update("s2", "y"))
    assert_record(
        s.snapshot(),
        {"s2": {"x": rec("x", title="X"), "y": rec("y")}, "s1": {"a": rec("a")}},
    )


@pytest.mark.parametrize("version", [2, "negotiated"])
def test_api_example_v2(backend, version):
    s = backend.ToolCallStore() if version == "negotiated" else backend.ToolCallStore(2)
    if version == "negotiated":
        s.apply(INIT_V2)
    frames = [
        B.tool_call_update("s1", "c1", protocol_version=2, title="Read", kind="read"),
        B.tool_call_content_chunk("s1", "c1", A),
        B.tool_call_content_chunk("s1", "c1", Bc),
        B.tool_call_update("s1", "c1", protocol_version=2, status="in_progress", title=None),
    ]
    changes = [change_of(backend, s.apply(f)) for f in frames]
    assert changes == [
        ("s1", "tool_call", "c1", "created", "c1"),
        ("s1", "tool_call", "c1", "appended", "c1"),
        ("s1", "tool_call", "c1", "appended", "c1"),
        ("s1", "tool_call", "c1", "updated", "c1"),
    ]
    assert_record(
        s.get("s1", "c1"),
        {"toolCallId": "c1", "kind": "read", "status": "in_progress", "content": [A, Bc], "locations": []},
    )


@pytest.mark.parametrize("version", [1, None])
def test_api_example_v1_keeps_title(backend, version):
    s = backend.ToolCallStore(version)
    frames = [
        B.tool_call_update("s1", "c1", protocol_version=2, title="Read", kind="read"),
        B.tool_call_content_chunk("s1", "c1", A),
        B.tool_call_content_chunk("s1", "c1", Bc),
        B.tool_call_update("s1", "c1", protocol_version=2, status="in_progress", title=None),
    ]
    for f in frames:
        s.apply(f)
    assert_record(
        s.get("s1", "c1"),
        {
            "toolCallId": "c1",
            "title": "Read",
            "kind": "read",
            "status": "in_progress",
            "content": [A, Bc],
            "locations": [],
        },
    )


# ------------------------------------------------------------------------------------------
# 7.2 inputs
# ------------------------------------------------------------------------------------------

FRAME = B.tool_call_update("s1", "c1", title="T")  # ends in "\n"
LINE = FRAME[:-1]


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
    "unknown_update": session_update("s1", {"sessionUpdate": "_custom", "toolCallId": "c1"}),
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
    s = backend.ToolCallStore()
    assert s.apply(NOOP_FRAMES[name]) is None
    assert_record(s.state(), empty_state())
    assert len(s) == 0


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


def _good_after(backend, s):
    c = s.apply(B.tool_call_update("s9", "after", title="ok"))
    assert change_of(backend, c) == ("s9", "tool_call", "after", "created", "after")


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


@pytest.mark.parametrize("update_kind", ["tool_call", "tool_call_update", "tool_call_content_chunk"])
def test_missing_tool_call_id(backend, update_kind):
    s = backend.ToolCallStore(2)
    data = session_update(
        "s1",
        {"sessionUpdate": update_kind, "title": "x", "content": [A] if update_kind != "tool_call_content_chunk" else A},
    )
    expect_error(
        backend,
        s,
        data,
        "invalid_tool_call_id",
        'expected "params.update.toolCallId" to be a string, found none',
        value_at(data, b'"update":'),
    )
    _good_after(backend, s)


@pytest.mark.parametrize(
    "tcid, found",
    [
        (12, "number 12"),
        (None, "null"),
        ({"id": "c1"}, "object"),
        (False, "false"),
        (1.5e300, "number 1.5e+300"),
        (123456789012345678901234567890123, "number"),
    ],
)
def test_bad_tool_call_id(backend, tcid, found):
    s = backend.ToolCallStore(2)
    data = tool_call_update("s1", tcid, {"title": "x"})
    expect_error(
        backend,
        s,
        data,
        "invalid_tool_call_id",
        f'expected "params.update.toolCallId" to be a string, found {found}',
        value_at(data, b'"toolCallId":'),
    )


def test_tool_call_id_checked_before_content(backend):
    s = backend.ToolCallStore(2)
    data = session_update("s1", {"sessionUpdate": "tool_call_update", "content": "x", "locations": 1})
    expect_error(
        backend,
        s,
        data,
        "invalid_tool_call_id",
        'expected "params.update.toolCallId" to be a string, found none',
        value_at(data, b'"update":'),
    )


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("update_kind", ["tool_call", "tool_call_update"])
@pytest.mark.parametrize(
    "content, found",
    [
        ("x", 'string "x"'),
        ({"type": "content"}, "object"),
        (5, "number 5"),
        (True, "true"),
        ("a" * 30, 'string "' + "a" * 30 + '"'),
        ("a" * 31, "string"),
    ],
)
def test_update_content_must_be_array_or_null(backend, version, update_kind, content, found):
    s = backend.ToolCallStore(version)
    s.apply(tool_call_update("s1", "c1", {"content": [A]}))
    data = session_update("s1", {"sessionUpdate": update_kind, "toolCallId": "c1", "title": "t", "content": content})
    expect_error(
        backend,
        s,
        data,
        "invalid_content",
        f'expected "params.update.content" to be an array or null, found {found}',
        value_at(data, b'"content":'),
    )
    _good_after(backend, s)


@pytest.mark.parametrize("content, found", [([A], "array"), (None, "null"), ("text", 'string "text"'), (0, "number 0")])
def test_chunk_content_must_be_object(backend, content, found):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1", {"content": [A]}))
    data = chunk("s1", "c1", content)
    expect_error(
        backend,
        s,
        data,
        "invalid_content",
        f'expected "params.update.content" to be an object, found {found}',
        value_at(data, b'"content":'),
    )
    _good_after(backend, s)


def test_chunk_without_content(backend):
    s = backend.ToolCallStore(2)
    data = session_update("s1", {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c1", "_meta": {}})
    expect_error(
        backend,
        s,
        data,
        "invalid_content",
        'expected "params.update.content" to be an object, found none',
        value_at(data, b'"update":'),
    )
    assert s.get("s1", "c1") is None


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("update_kind", ["tool_call", "tool_call_update"])
@pytest.mark.parametrize(
    "locations, found", [({"path": "/a"}, "object"), ("/a", 'string "/a"'), (-1, "number -1"), (False, "false")]
)
def test_locations_must_be_array_or_null(backend, version, update_kind, locations, found):
    s = backend.ToolCallStore(version)
    data = session_update("s1", {"sessionUpdate": update_kind, "toolCallId": "c1", "locations": locations})
    expect_error(
        backend,
        s,
        data,
        "invalid_locations",
        f'expected "params.update.locations" to be an array or null, found {found}',
        value_at(data, b'"locations":'),
    )


def test_content_checked_before_locations(backend):
    s = backend.ToolCallStore(2)
    data = session_update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "locations": 1, "content": 2})
    expect_error(
        backend,
        s,
        data,
        "invalid_content",
        'expected "params.update.content" to be an array or null, found number 2',
        value_at(data, b'"content":'),
    )


def test_error_leaves_existing_record_untouched(backend):
    s = backend.ToolCallStore(2)
    s.apply(full_v1_record_frame())
    data = tool_call_update("s1", "c1", {"title": None, "status": "completed", "content": [C], "locations": 9})
    expect_error(
        backend,
        s,
        data,
        "invalid_locations",
        'expected "params.update.locations" to be an array or null, found number 9',
        value_at(data, b'"locations":'),
    )
    assert_record(s.get("s1", "c1"), FULL)
    data = tool_call("s1", "c1", {"title": "Replaced", "content": {}})
    expect_error(
        backend,
        s,
        data,
        "invalid_content",
        'expected "params.update.content" to be an array or null, found object',
        value_at(data, b'"content":'),
    )
    assert_record(s.get("s1", "c1"), FULL)
    assert len(s) == 1


def test_error_position_with_whitespace_and_escapes(backend):
    s = backend.ToolCallStore(2)
    data = (
        '{ "jsonrpc" : "2.0" , "method" : "session/update" , "params" : { "sessionId" : "s\\u00e9" , '
        '"update" : { "sessionUpdate" : "tool_call_update" , "toolCallId" : "é" , "content" : "\\u00e9" } } }'
    ).encode()
    expect_error(
        backend,
        s,
        data,
        "invalid_content",
        'expected "params.update.content" to be an array or null, found string "\\u00e9"',
        value_at(data, b'"content" : '),
    )


# terminal errors


@pytest.mark.parametrize("update_kind", ["terminal_update", "terminal_output_chunk"])
@pytest.mark.parametrize("tid, found", [(3, "number 3"), (None, "null"), ([], "array"), ("missing", "none")])
def test_invalid_terminal_id(backend, update_kind, tid, found):
    s = backend.ToolCallStore()
    update = {"sessionUpdate": update_kind, "data": "AA==", "output": {"data": "AA=="}}
    if tid != "missing":
        update["terminalId"] = tid
    data = session_update("s1", update)
    position = value_at(data, b'"update":') if tid == "missing" else value_at(data, b'"terminalId":')
    expect_error(
        backend,
        s,
        data,
        "invalid_terminal_id",
        f'expected "params.update.terminalId" to be a string, found {found}',
        position,
    )
    _good_after(backend, s)


@pytest.mark.parametrize("output, found", [("AA==", 'string "AA=="'), ([], "array"), (0, "number 0"), (True, "true")])
def test_invalid_output(backend, output, found):
    s = backend.ToolCallStore()
    data = session_update(
        "s1", {"sessionUpdate": "terminal_update", "terminalId": "t1", "output": output, "exitStatus": 5}
    )
    expect_error(
        backend,
        s,
        data,
        "invalid_output",
        f'expected "params.update.output" to be an object or null, found {found}',
        value_at(data, b'"output":'),
    )


@pytest.mark.parametrize(
    "exit_status, found", [(0, "number 0"), ("SIGTERM", 'string "SIGTERM"'), ([0], "array"), (False, "false")]
)
def test_invalid_exit_status(backend, exit_status, found):
    s = backend.ToolCallStore()
    data = session_update("s1", {"sessionUpdate": "terminal_update", "terminalId": "t1", "exitStatus": exit_status})
    expect_error(
        backend,
        s,
        data,
        "invalid_exit_status",
        f'expected "params.update.exitStatus" to be an object or null, found {found}',
        value_at(data, b'"exitStatus":'),
    )


def test_output_checked_before_exit_status(backend):
    s = backend.ToolCallStore()
    data = session_update(
        "s1", {"sessionUpdate": "terminal_update", "terminalId": "t1", "exitStatus": 1, "output": {"data": "A"}}
    )
    expect_error(
        backend,
        s,
        data,
        "invalid_base64",
        'expected "params.update.output.data" to be base64 text, found string "A"',
        value_at(data, b'"data":'),
    )


def test_output_without_data(backend):
    s = backend.ToolCallStore()
    data = session_update("s1", {"sessionUpdate": "terminal_update", "terminalId": "t1", "output": {"_meta": {}}})
    expect_error(
        backend,
        s,
        data,
        "invalid_base64",
        'expected "params.update.output.data" to be base64 text, found none',
        value_at(data, b'"output":'),
    )


def test_terminal_chunk_without_data(backend):
    s = backend.ToolCallStore()
    data = session_update("s1", {"sessionUpdate": "terminal_output_chunk", "terminalId": "t1"})
    expect_error(
        backend,
        s,
        data,
        "invalid_base64",
        'expected "params.update.data" to be base64 text, found none',
        value_at(data, b'"update":'),
    )
    assert s.terminal("s1", "t1") is None


# plan errors


@pytest.mark.parametrize(
    "update, path, what, found, at",
    [
        ({"sessionUpdate": "plan"}, "params.update.entries", "an array", "none", b'"update":'),
        ({"sessionUpdate": "plan", "entries": None}, "params.update.entries", "an array", "null", b'"entries":'),
        ({"sessionUpdate": "plan", "entries": {"0": {}}}, "params.update.entries", "an array", "object", b'"entries":'),
        ({"sessionUpdate": "plan_update"}, "params.update.plan", "an object", "none", b'"update":'),
        ({"sessionUpdate": "plan_update", "plan": None}, "params.update.plan", "an object", "null", b'"plan":'),
        ({"sessionUpdate": "plan_update", "plan": [1]}, "params.update.plan", "an object", "array", b'"plan":'),
        (
            {"sessionUpdate": "plan_update", "plan": {"type": "items", "entries": []}},
            "params.update.plan.planId",
            "a string",
            "none",
            b'"plan":',
        ),
        (
            {"sessionUpdate": "plan_update", "plan": {"planId": 7}},
            "params.update.plan.planId",
            "a string",
            "number 7",
            b'"planId":',
        ),
        ({"sessionUpdate": "plan_removed"}, "params.update.planId", "a string", "none", b'"update":'),
        ({"sessionUpdate": "plan_removed", "planId": None}, "params.update.planId", "a string", "null", b'"planId":'),
    ],
)
def test_invalid_plan(backend, update, path, what, found, at):
    s = backend.ToolCallStore()
    s.apply(B.plan("s1", [B.plan_entry("x")]))
    data = session_update("s1", update)
    expect_error(backend, s, data, "invalid_plan", f'expected "{path}" to be {what}, found {found}', value_at(data, at))
    _good_after(backend, s)


# permission errors


def _perm(params, id_=1):
    return frame(request(id_, "session/request_permission", params))


@pytest.mark.parametrize(
    "options, found", [(None, "null"), ({"a": 1}, "object"), ("allow", 'string "allow"'), ("missing", "none")]
)
def test_invalid_options(backend, options, found):
    s = backend.ToolCallStore()
    params = {"sessionId": "s1", "toolCall": {"toolCallId": "c1"}}
    if options != "missing":
        params["options"] = options
    data = _perm(params)
    at = value_at(data, b'"params":') if options == "missing" else value_at(data, b'"options":')
    expect_error(backend, s, data, "invalid_options", f'expected "params.options" to be an array, found {found}', at)
    assert s.pending_permissions("s1") == []
    _good_after(backend, s)


@pytest.mark.parametrize(
    "tool_call, found", [("c1", 'string "c1"'), ([{"toolCallId": "c1"}], "array"), (3, "number 3")]
)
def test_invalid_tool_call(backend, tool_call, found):
    s = backend.ToolCallStore()
    data = _perm({"sessionId": "s1", "toolCall": tool_call, "options": OPTIONS})
    expect_error(
        backend,
        s,
        data,
        "invalid_tool_call",
        f'expected "params.toolCall" to be an object, found {found}',
        value_at(data, b'"toolCall":'),
    )


@pytest.mark.parametrize("tool_call, found", [("missing", "none"), (None, "null"), ("c1", 'string "c1"')])
def test_invalid_subject_tool_call(backend, tool_call, found):
    s = backend.ToolCallStore(2)
    subject = {"type": "tool_call"}
    if tool_call != "missing":
        subject["toolCall"] = tool_call
    data = _perm({"sessionId": "s1", "title": "Allow?", "subject": subject, "options": OPTIONS})
    at = value_at(data, b'"subject":') if tool_call == "missing" else value_at(data, b'"toolCall":')
    expect_error(
        backend, s, data, "invalid_tool_call", f'expected "params.subject.toolCall" to be an object, found {found}', at
    )


@pytest.mark.parametrize("where", ["toolCall", "subject"])
def test_permission_tool_call_errors_name_their_path(backend, where):
    s = backend.ToolCallStore(2)
    prefix = "params.toolCall" if where == "toolCall" else "params.subject.toolCall"

    def params(tc):
        if where == "toolCall":
            return {"sessionId": "s1", "toolCall": tc, "options": OPTIONS}
        return {"sessionId": "s1", "title": "t", "subject": {"type": "tool_call", "toolCall": tc}, "options": OPTIONS}

    data = _perm(params({"title": "x"}))
    expect_error(
        backend,
        s,
        data,
        "invalid_tool_call_id",
        f'expected "{prefix}.toolCallId" to be a string, found none',
        value_at(data, b'"toolCall":'),
    )
    data = _perm(params({"toolCallId": 4}))
    expect_error(
        backend,
        s,
        data,
        "invalid_tool_call_id",
        f'expected "{prefix}.toolCallId" to be a string, found number 4',
        value_at(data, b'"toolCallId":'),
    )
    data = _perm(params({"toolCallId": "c1", "content": {}}))
    expect_error(
        backend,
        s,
        data,
        "invalid_content",
        f'expected "{prefix}.content" to be an array or null, found object',
        value_at(data, b'"content":'),
    )
    data = _perm(params({"toolCallId": "c1", "locations": "x"}))
    expect_error(
        backend,
        s,
        data,
        "invalid_locations",
        f'expected "{prefix}.locations" to be an array or null, found string "x"',
        value_at(data, b'"locations":'),
    )
    assert s.permissions("s1") == []
    assert s.get("s1", "c1") is None


def test_permission_check_order(backend):
    s = backend.ToolCallStore()
    data = _perm({"sessionId": 1, "toolCall": {"title": "x"}, "options": 5})
    expect_error(
        backend,
        s,
        data,
        "invalid_session_id",
        'expected "params.sessionId" to be a string, found number 1',
        value_at(data, b'"sessionId":'),
    )
    data = _perm({"sessionId": "s1", "toolCall": {"title": "x", "content": 1}, "options": 5})
    expect_error(
        backend,
        s,
        data,
        "invalid_tool_call_id",
        'expected "params.toolCall.toolCallId" to be a string, found none',
        value_at(data, b'"toolCall":'),
    )
    data = _perm({"sessionId": "s1", "toolCall": {"toolCallId": "c1", "content": 1}, "options": 5})
    expect_error(
        backend,
        s,
        data,
        "invalid_content",
        'expected "params.toolCall.content" to be an array or null, found number 1',
        value_at(data, b'"content":'),
    )
    data = _perm({"sessionId": "s1", "toolCall": {"toolCallId": "c1"}, "options": 5})
    expect_error(
        backend,
        s,
        data,
        "invalid_options",
        'expected "params.options" to be an array, found number 5',
        value_at(data, b'"options":'),
    )


def test_missing_session_id_in_permission_request(backend):
    s = backend.ToolCallStore()
    data = _perm({"toolCall": {"toolCallId": "c1"}, "options": []})
    expect_error(
        backend,
        s,
        data,
        "invalid_session_id",
        'expected "params.sessionId" to be a string, found none',
        value_at(data, b'"params":'),
    )


def test_session_cancel_needs_string_session_id(backend):
    s = backend.ToolCallStore()
    data = frame(notification("session/cancel", {"sessionId": 9}))
    expect_error(
        backend,
        s,
        data,
        "invalid_session_id",
        'expected "params.sessionId" to be a string, found number 9',
        value_at(data, b'"sessionId":'),
    )


# ------------------------------------------------------------------------------------------
# 7.5 permissions
# ------------------------------------------------------------------------------------------


def perm_record(
    id_, sid, options, outcome="pending", tcid=None, option_id=None, approved=False, response=None, has_response=False
):
    out = {"id": id_, "sessionId": sid}
    if tcid is not None:
        out["toolCallId"] = tcid
    out["options"] = options
    out["outcome"] = outcome
    if option_id is not None:
        out["optionId"] = option_id
    out["approved"] = approved
    if has_response:
        out["response"] = response
    return out


@pytest.mark.parametrize("version", [1, None])
def test_v1_permission_request_applies_tool_call(backend, version):
    s = backend.ToolCallStore(version)
    s.apply(B.tool_call("s1", "c1", "Write file", kind="edit"))
    data = B.request_permission(1, "s1", {"toolCallId": "c1", "status": "pending", "rawInput": {"p": "/a"}}, OPTIONS)
    c = s.apply(data)
    assert change_of(backend, c) == ("s1", "permission", 1, "requested", "c1")
    assert_record(s.get("s1", "c1"), rec("c1", title="Write file", kind="edit", rawInput={"p": "/a"}))
    assert_record(s.permission(1), perm_record(1, "s1", OPTIONS, tcid="c1"))
    assert_record(s.pending_permissions("s1"), [perm_record(1, "s1", OPTIONS, tcid="c1")])
    assert_record(s.permissions("s1"), [perm_record(1, "s1", OPTIONS, tcid="c1")])


def test_v2_permission_request_applies_subject_tool_call(backend):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1", {"title": "Run", "rawInput": {"cmd": "ls"}}))
    data = B.request_permission(
        "req-1",
        "s1",
        {"toolCallId": "c1", "title": None, "status": "pending"},
        OPTIONS,
        protocol_version=2,
        title="Allow running ls?",
    )
    c = s.apply(data)
    assert change_of(backend, c) == ("s1", "permission", "req-1", "requested", "c1")
    assert_record(s.get("s1", "c1"), rec("c1", rawInput={"cmd": "ls"}))
    assert_record(s.permission("req-1"), perm_record("req-1", "s1", OPTIONS, tcid="c1"))


def test_permission_tool_call_uses_version_in_force(backend):
    v1_shape = {"sessionId": "s1", "toolCall": {"toolCallId": "c1", "title": None, "kind": "read"}, "options": OPTIONS}
    v2_shape = {
        "sessionId": "s1",
        "title": "t",
        "subject": {"type": "tool_call", "toolCall": {"toolCallId": "c1", "title": None}},
        "options": OPTIONS,
    }
    for params in (v1_shape, v2_shape):
        one = backend.ToolCallStore(1)
        one.apply(B.tool_call("s1", "c1", "Keep"))
        one.apply(_perm(params))
        assert one.get("s1", "c1")["title"] == "Keep"
        two = backend.ToolCallStore(2)
        two.apply(B.tool_call("s1", "c1", "Drop"))
        two.apply(_perm(params))
        assert "title" not in two.get("s1", "c1")


def test_permission_request_creates_unknown_tool_call(backend):
    s = backend.ToolCallStore(1)
    s.apply(B.request_permission(1, "s1", {"toolCallId": "c7", "title": "New"}, OPTIONS))
    assert_record(s.get("s1", "c7"), rec("c7", title="New"))
    assert len(s) == 1


def test_tool_call_member_preferred_over_subject(backend):
    s = backend.ToolCallStore(2)
    data = _perm(
        {
            "sessionId": "s1",
            "toolCall": {"toolCallId": "a"},
            "subject": {"type": "tool_call", "toolCall": {"toolCallId": "b"}},
            "options": OPTIONS,
        }
    )
    assert change_of(backend, s.apply(data)) == ("s1", "permission", 1, "requested", "a")
    assert s.get("s1", "b") is None
    data = _perm(
        {
            "sessionId": "s1",
            "toolCall": None,
            "subject": {"type": "tool_call", "toolCall": {"toolCallId": "b"}},
            "options": OPTIONS,
        },
        2,
    )
    assert change_of(backend, s.apply(data)) == ("s1", "permission", 2, "requested", "b")
    assert list(s.tool_calls("s1")) == ["a", "b"]


@pytest.mark.parametrize(
    "params",
    [
        {
            "sessionId": "s1",
            "title": "t",
            "subject": {"type": "command", "command": "rm -rf /tmp/x", "cwd": "/", "toolCallId": "c1"},
            "options": OPTIONS,
        },
        {
            "sessionId": "s1",
            "title": "t",
            "subject": {"type": "_custom", "toolCall": {"toolCallId": "c1"}},
            "options": OPTIONS,
        },
        {"sessionId": "s1", "title": "t", "subject": None, "options": OPTIONS},
        {"sessionId": "s1", "title": "t", "subject": "tool_call", "options": OPTIONS},
        {"sessionId": "s1", "title": "t", "options": OPTIONS},
        {"sessionId": "s1", "toolCall": None, "options": OPTIONS},
    ],
    ids=["command", "custom", "null", "string", "absent", "toolcall-null"],
)
def test_permission_request_without_tool_call(backend, params):
    s = backend.ToolCallStore(2)
    c = s.apply(_perm(params, 5))
    assert change_of(backend, c) == ("s1", "permission", 5, "requested", None)
    assert_record(s.permission(5), perm_record(5, "s1", OPTIONS))
    assert len(s) == 0
    c = s.apply(B.permission_response(5, "allow"))
    assert change_of(backend, c) == ("s1", "permission", 5, "resolved", None)
    assert_record(
        s.permission(5),
        perm_record(
            5,
            "s1",
            OPTIONS,
            outcome="selected",
            option_id="allow",
            approved=True,
            response={"outcome": {"outcome": "selected", "optionId": "allow"}},
            has_response=True,
        ),
    )


@pytest.mark.parametrize(
    "option_id, approved",
    [("allow", True), ("always", True), ("reject", False), ("never", False)],
)
def test_permission_selected(backend, option_id, approved):
    s = backend.ToolCallStore()
    s.apply(B.request_permission(1, "s1", "c1", OPTIONS))
    data = B.permission_response(1, option_id)
    c = s.apply(data)
    assert change_of(backend, c) == ("s1", "permission", 1, "resolved", "c1")
    expected = perm_record(
        1,
        "s1",
        OPTIONS,
        outcome="selected",
        tcid="c1",
        option_id=option_id,
        approved=approved,
        response=json.loads(data)["result"],
        has_response=True,
    )
    assert_record(s.permission(1), expected)
    assert list(s.permission(1)) == [
        "id",
        "sessionId",
        "toolCallId",
        "options",
        "outcome",
        "optionId",
        "approved",
        "response",
    ]
    assert s.pending_permissions("s1") == []
    assert_record(s.permissions("s1"), [expected])


def test_permission_selected_extension_kind_not_approved(backend):
    options = [{"optionId": "x", "name": "X", "kind": "_allow_everything"}, {"optionId": "y", "name": "Y"}]
    s = backend.ToolCallStore(2)
    s.apply(_perm({"sessionId": "s1", "options": options}, 1))
    s.apply(_perm({"sessionId": "s1", "options": options}, 2))
    s.apply(B.permission_response(1, "x"))
    s.apply(B.permission_response(2, "y"))
    assert (s.permission(1)["outcome"], s.permission(1)["optionId"], s.permission(1)["approved"]) == (
        "selected",
        "x",
        False,
    )
    assert (s.permission(2)["outcome"], s.permission(2)["optionId"], s.permission(2)["approved"]) == (
        "selected",
        "y",
        False,
    )


def test_permission_duplicate_option_id_uses_first(backend):
    options = [
        {"optionId": "o", "name": "no", "kind": "reject_once"},
        {"optionId": "o", "name": "yes", "kind": "allow_once"},
        {"optionId": "p", "name": "yes", "kind": "allow_always"},
        {"optionId": "p", "name": "no", "kind": "reject_always"},
    ]
    s = backend.ToolCallStore()
    s.apply(_perm({"sessionId": "s1", "options": options}, 1))
    s.apply(_perm({"sessionId": "s1", "options": options}, 2))
    s.apply(B.permission_response(1, "o"))
    s.apply(B.permission_response(2, "p"))
    assert s.permission(1)["approved"] is False
    assert s.permission(2)["approved"] is True


def test_permission_only_objects_with_string_option_id_are_offered(backend):
    options = [
        5,
        "allow",
        {"optionId": 1, "kind": "allow_once"},
        {"kind": "allow_once"},
        {"optionId": "ok", "kind": "allow_always"},
    ]
    s = backend.ToolCallStore()
    s.apply(_perm({"sessionId": "s1", "options": options}, 1))
    assert_record(s.permission(1), perm_record(1, "s1", options))
    s.apply(B.permission_response(1, "ok"))
    assert (s.permission(1)["outcome"], s.permission(1)["approved"]) == ("selected", True)
    s.apply(_perm({"sessionId": "s1", "options": options}, 2))
    s.apply(B.permission_response(2, "allow"))
    assert (s.permission(2)["outcome"], s.permission(2)["approved"]) == ("invalid", False)
    assert "optionId" not in s.permission(2)


@pytest.mark.parametrize(
    "result, outcome",
    [
        ({"outcome": {"outcome": "selected", "optionId": "nope"}}, "invalid"),
        ({"outcome": {"outcome": "selected"}}, "invalid"),
        ({"outcome": {"outcome": "selected", "optionId": 1}}, "invalid"),
        ({"outcome": {"outcome": "selected", "optionId": None}}, "invalid"),
        ({"outcome": {"outcome": "selected", "optionId": ["allow"]}}, "invalid"),
        ("allow", "invalid"),
        (None, "invalid"),
        ([{"outcome": {"outcome": "selected", "optionId": "allow"}}], "invalid"),
        ({}, "invalid"),
        ({"outcome": "selected", "optionId": "allow"}, "invalid"),
        ({"outcome": None}, "invalid"),
        ({"outcome": {"outcome": "cancelled"}}, "cancelled"),
        ({"outcome": {"outcome": "cancelled", "optionId": "allow"}}, "cancelled"),
        ({"outcome": {"outcome": "_approved_by_policy", "optionId": "allow"}}, "unknown"),
        ({"outcome": {"outcome": "approved"}}, "unknown"),
        ({"outcome": {"optionId": "allow"}}, "unknown"),
        ({"outcome": {}}, "unknown"),
        ({"outcome": {"outcome": 1, "optionId": "allow"}}, "unknown"),
        ({"outcome": {"outcome": None}}, "unknown"),
    ],
)
def test_permission_outcomes_not_approved(backend, result, outcome):
    s = backend.ToolCallStore()
    s.apply(B.request_permission(1, "s1", "c1", OPTIONS))
    c = s.apply(response(1, result))
    assert change_of(backend, c) == ("s1", "permission", 1, "resolved", "c1")
    assert_record(
        s.permission(1), perm_record(1, "s1", OPTIONS, outcome=outcome, tcid="c1", response=result, has_response=True)
    )
    assert s.pending_permissions("s1") == []


def test_permission_error_response(backend):
    s = backend.ToolCallStore()
    s.apply(B.request_permission(1, "s1", "c1", OPTIONS))
    c = s.apply(B.error_response(1, -32800, "Request cancelled", {"why": "agent"}))
    assert change_of(backend, c) == ("s1", "permission", 1, "resolved", "c1")
    assert_record(
        s.permission(1),
        perm_record(
            1,
            "s1",
            OPTIONS,
            outcome="error",
            tcid="c1",
            response={"code": -32800, "message": "Request cancelled", "data": {"why": "agent"}},
            has_response=True,
        ),
    )


def test_permission_response_from_agent_does_not_resolve(backend):
    s = backend.ToolCallStore()
    s.apply(B.request_permission(1, "s1", "c1", OPTIONS))
    assert s.apply(B.permission_response(1, "allow"), source="agent") is None
    assert s.apply(error_response(1), source="agent") is None
    assert s.permission(1)["outcome"] == "pending"
    c = s.apply(B.permission_response(1, "allow"), source="client")
    assert change_of(backend, c) == ("s1", "permission", 1, "resolved", "c1")
    assert s.permission(1)["approved"] is True


def test_feed_source_applies_like_apply(backend):
    # feed(source=...) is apply(source=...) for every line, including batches and finish().
    s = backend.ToolCallStore()
    req = B.request_permission(1, "s1", "c1", OPTIONS)
    resp = B.permission_response(1, "allow")
    assert [change_of(backend, c) for c in s.feed(req, source="agent")] == [("s1", "permission", 1, "requested", "c1")]
    assert s.feed(resp, source="agent") == []
    assert s.feed(b"[" + resp.rstrip(b"\n") + b"]\n", source="agent") == []
    assert s.permission(1)["outcome"] == "pending"
    assert s.feed(resp.rstrip(b"\n"), source="client") == []  # no newline yet
    [c] = s.finish(source="client")
    assert change_of(backend, c) == ("s1", "permission", 1, "resolved", "c1")
    assert s.permission(1)["approved"] is True


@pytest.mark.parametrize("source", ["server", "", 1])
def test_feed_bad_source(backend, source):
    s = backend.ToolCallStore()
    with pytest.raises(ValueError):
        s.feed(LINE + b"\n", source=source)
    with pytest.raises(ValueError):
        s.finish(source=source)
    assert_record(s.state(), empty_state())
    assert s.line == 0


def test_permission_ids_are_json_values(backend):
    s = backend.ToolCallStore()
    s.apply(B.request_permission(1, "s1", "a", OPTIONS))
    s.apply(B.request_permission("1", "s1", "b", OPTIONS))
    assert [p["id"] for p in s.pending_permissions("s1")] == [1, "1"]
    c = s.apply(B.permission_response("1", "reject"))
    assert change_of(backend, c) == ("s1", "permission", "1", "resolved", "b")
    assert s.permission(1)["outcome"] == "pending"
    assert s.permission("1")["outcome"] == "selected"
    assert s.apply(B.permission_response("1", "allow")) is None  # no longer pending
    c = s.apply(B.permission_response(1, "allow"))
    assert change_of(backend, c) == ("s1", "permission", 1, "resolved", "a")
    assert s.permission(1)["approved"] is True and s.permission("1")["approved"] is False


def test_permission_null_id(backend):
    s = backend.ToolCallStore()
    s.apply(_perm({"sessionId": "s1", "options": OPTIONS}, None))
    assert_record(s.pending_permissions("s1"), [perm_record(None, "s1", OPTIONS)])
    c = s.apply(error_response(None, -32700, "Parse error"))
    assert change_of(backend, c) == ("s1", "permission", None, "resolved", None)
    assert s.pending_permissions("s1") == []


def test_unknown_or_resolved_id_response_is_ignored(backend):
    s = backend.ToolCallStore()
    s.apply(B.request_permission(1, "s1", "c1", OPTIONS))
    assert s.apply(B.permission_response(2, "allow")) is None
    s.apply(B.permission_response(1, "reject"))
    before = s.state()
    assert s.apply(B.permission_response(1, "allow")) is None
    assert_record(s.state(), before)


def test_permission_request_with_pending_id_replaces_it(backend):
    s = backend.ToolCallStore()
    s.apply(B.request_permission(1, "s1", "a", OPTIONS))
    s.apply(B.permission_response(1, "reject"))  # resolved: history
    s.apply(B.request_permission(1, "s1", "b", OPTIONS))  # pending 1 again
    s.apply(B.request_permission(2, "s1", "c", OPTIONS))
    c = s.apply(B.request_permission(1, "s1", "d", [ALLOW]))  # replaces the pending 1 (request "b")
    assert change_of(backend, c) == ("s1", "permission", 1, "requested", "d")
    assert [(p["id"], p.get("toolCallId"), p["outcome"]) for p in s.permissions("s1")] == [
        (1, "a", "selected"),
        (2, "c", "pending"),
        (1, "d", "pending"),
    ]
    assert [(p["id"], p["toolCallId"]) for p in s.pending_permissions("s1")] == [(2, "c"), (1, "d")]
    s.apply(B.permission_response(1, "allow"))
    assert [(p["id"], p.get("toolCallId"), p["outcome"], p["approved"]) for p in s.permissions("s1")] == [
        (1, "a", "selected", False),
        (2, "c", "pending", False),
        (1, "d", "selected", True),
    ]


def test_permissions_per_session(backend):
    s = backend.ToolCallStore()
    s.apply(B.request_permission(1, "s1", "a", OPTIONS))
    s.apply(B.request_permission(2, "s2", "a", OPTIONS))
    assert [p["id"] for p in s.pending_permissions("s1")] == [1]
    assert [p["id"] for p in s.pending_permissions("s2")] == [2]
    assert s.pending_permissions("s3") == []
    assert s.permissions("s3") == []
    assert s.cancel_responses("s3") == []
    assert s.permission(3) is None


def test_cancel_then_cancel_responses(backend):
    s = backend.ToolCallStore()
    s.apply(B.request_permission(1, "s1", "a", OPTIONS))
    s.apply(B.request_permission('r"2', "s1", "b", OPTIONS))
    s.apply(B.request_permission(3, "s1", "c", OPTIONS))
    s.apply(B.request_permission(4, "s2", "d", OPTIONS))
    s.apply(B.permission_response(3, "allow"))
    c = s.apply(CANCEL)
    assert change_of(backend, c) == ("s1", "session", None, "cancelled", None)
    assert [p["id"] for p in s.pending_permissions("s1")] == [1, 'r"2']  # still pending until answered
    frames = s.cancel_responses("s1")
    assert frames == [
        b'{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"cancelled"}}}\n',
        b'{"jsonrpc":"2.0","id":"r\\"2","result":{"outcome":{"outcome":"cancelled"}}}\n',
    ]
    assert frames[0] == B.permission_response(1, cancelled=True)
    for f in frames:
        s.apply(f)
    assert s.pending_permissions("s1") == []
    assert s.cancel_responses("s1") == []
    assert [p["outcome"] for p in s.permissions("s1")] == ["cancelled", "cancelled", "selected"]
    assert [p["id"] for p in s.pending_permissions("s2")] == [4]


def test_session_cancel_without_pending(backend):
    s = backend.ToolCallStore()
    c = s.apply(frame(notification("session/cancel", {"sessionId": "s5", "_meta": {}})))
    assert change_of(backend, c) == ("s5", "session", None, "cancelled", None)
    assert s.cancel_responses("s5") == []


def test_cancel_responses_null_id(backend):
    s = backend.ToolCallStore()
    s.apply(_perm({"sessionId": "s1", "options": []}, None))
    assert s.cancel_responses("s1") == [b'{"jsonrpc":"2.0","id":null,"result":{"outcome":{"outcome":"cancelled"}}}\n']


# ------------------------------------------------------------------------------------------
# 7.4 terminals
# ------------------------------------------------------------------------------------------


def term(tid, output=b"", **fields):
    """A terminal record in DESIGN 7.4 key order."""
    out = {"terminalId": tid}
    for key in ("command", "cwd"):
        if key in fields:
            out[key] = fields.pop(key)
    out["output"] = output
    for key in ("outputMeta", "exitStatus", "_meta"):
        if key in fields:
            out[key] = fields.pop(key)
    out.update(fields)
    return out


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def terminal_frame(sid, tid, **fields):
    return session_update(sid, {"sessionUpdate": "terminal_update", "terminalId": tid, **fields})


def terminal_chunk(sid, tid, data, **extra):
    return session_update(sid, {"sessionUpdate": "terminal_output_chunk", "terminalId": tid, "data": data, **extra})


@pytest.mark.parametrize("version", [1, 2, None])
def test_terminal_update_creates(backend, version):
    s = backend.ToolCallStore(version)
    c = s.apply(B.terminal_update("s1", "t1", command="ls -la", cwd="/repo"))
    assert change_of(backend, c) == ("s1", "terminal", "t1", "created", None)
    assert_record(s.terminal("s1", "t1"), term("t1", command="ls -la", cwd="/repo"))
    assert_record(s.terminals("s1"), {"t1": term("t1", command="ls -la", cwd="/repo")})
    assert len(s) == 0


def test_terminal_record_key_order(backend):
    s = backend.ToolCallStore()
    s.apply(
        terminal_frame(
            "s1",
            "t1",
            zeta=1,
            _meta={"m": 1},
            exitStatus={"exitCode": 0},
            output={"_meta": {"o": 1}, "data": b64(b"hi")},
            cwd="/",
            command="c",
            alpha=2,
        )
    )
    got = s.terminal("s1", "t1")
    assert list(got) == ["terminalId", "command", "cwd", "output", "outputMeta", "exitStatus", "_meta", "zeta", "alpha"]
    assert_record(
        got,
        term(
            "t1",
            b"hi",
            command="c",
            cwd="/",
            outputMeta={"o": 1},
            exitStatus={"exitCode": 0},
            _meta={"m": 1},
            zeta=1,
            alpha=2,
        ),
    )


def test_terminal_update_patch_rules(backend):
    s = backend.ToolCallStore(1)  # v2 rules whatever V
    s.apply(terminal_frame("s1", "t1", command="make", cwd="/src", _meta={"a": 1}, extra="x", other=1))
    c = s.apply(terminal_frame("s1", "t1", cwd=None, _meta={"b": 2}, extra=None))
    assert change_of(backend, c) == ("s1", "terminal", "t1", "updated", None)
    assert_record(s.terminal("s1", "t1"), term("t1", command="make", _meta={"b": 2}, other=1))
    s.apply(terminal_frame("s1", "t1", extra="back", _meta=None, command=None))
    assert_record(s.terminal("s1", "t1"), term("t1", other=1, extra="back"))
    c = s.apply(terminal_frame("s1", "t1"))
    assert change_of(backend, c) == ("s1", "terminal", "t1", "updated", None)
    assert_record(s.terminal("s1", "t1"), term("t1", other=1, extra="back"))


def test_terminal_first_sight_nulls_are_unset(backend):
    s = backend.ToolCallStore()
    s.apply(terminal_frame("s1", "t1", command=None, output=None, exitStatus=None, _meta=None, x=None))
    assert_record(s.terminal("s1", "t1"), term("t1"))


def test_terminal_output_snapshot_replaces_bytes(backend):
    s = backend.ToolCallStore()
    s.apply(B.terminal_update("s1", "t1", output=b"first\n"))
    assert_record(s.terminal("s1", "t1"), term("t1", b"first\n"))
    s.apply(B.terminal_output_chunk("s1", "t1", b"more"))
    s.apply(B.terminal_update("s1", "t1", output=b"\x1b[31mred\x1b[0m"))
    assert_record(s.terminal("s1", "t1"), term("t1", b"\x1b[31mred\x1b[0m"))
    c = s.apply(B.terminal_output_chunk("s1", "t1", b"!"))
    assert change_of(backend, c) == ("s1", "terminal", "t1", "appended", None)
    assert_record(s.terminal("s1", "t1"), term("t1", b"\x1b[31mred\x1b[0m!"))
    s.apply(B.terminal_update("s1", "t1", command="x"))  # output omitted: unchanged
    assert_record(s.terminal("s1", "t1"), term("t1", b"\x1b[31mred\x1b[0m!", command="x"))


def test_terminal_chunks_append_decoded_bytes(backend):
    s = backend.ToolCallStore()
    euro = "€".encode()  # 3 bytes, cut across chunks
    c = s.apply(B.terminal_output_chunk("s1", "t1", b"a" + euro[:1]))
    assert change_of(backend, c) == ("s1", "terminal", "t1", "created", None)
    s.apply(B.terminal_output_chunk("s1", "t1", euro[1:2]))
    s.apply(B.terminal_output_chunk("s1", "t1", b""))
    s.apply(B.terminal_output_chunk("s1", "t1", euro[2:] + b"\xff\x00"))
    got = s.terminal("s1", "t1")
    assert_record(got, term("t1", b"a\xe2\x82\xac\xff\x00"))
    assert type(got["output"]) is bytes


def test_terminal_chunk_meta_not_stored(backend):
    s = backend.ToolCallStore()
    s.apply(B.terminal_output_chunk("s1", "t1", b"x", meta={"chunk": 1}))
    assert_record(s.terminal("s1", "t1"), term("t1", b"x"))


def test_terminal_output_null_empties(backend):
    s = backend.ToolCallStore()
    s.apply(terminal_frame("s1", "t1", output={"data": b64(b"abc"), "_meta": {"enc": "utf-8"}}))
    assert_record(s.terminal("s1", "t1"), term("t1", b"abc", outputMeta={"enc": "utf-8"}))
    s.apply(B.terminal_update("s1", "t1", output=None))
    assert_record(s.terminal("s1", "t1"), term("t1"))
    s.apply(B.terminal_output_chunk("s1", "t1", b"z"))
    assert_record(s.terminal("s1", "t1"), term("t1", b"z"))


def test_terminal_output_meta(backend):
    s = backend.ToolCallStore()
    s.apply(terminal_frame("s1", "t1", output={"data": "", "_meta": {"a": 1}}))
    assert_record(s.terminal("s1", "t1"), term("t1", outputMeta={"a": 1}))
    s.apply(B.terminal_output_chunk("s1", "t1", b"x", meta={"b": 2}))  # chunks leave it
    assert_record(s.terminal("s1", "t1"), term("t1", b"x", outputMeta={"a": 1}))
    s.apply(terminal_frame("s1", "t1", output={"data": b64(b"y")}))  # snapshot without _meta: unset
    assert_record(s.terminal("s1", "t1"), term("t1", b"y"))
    s.apply(terminal_frame("s1", "t1", output={"data": b64(b"y"), "_meta": {"c": 3}}))
    s.apply(terminal_frame("s1", "t1", output={"data": b64(b"w"), "_meta": None}))
    assert_record(s.terminal("s1", "t1"), term("t1", b"w"))


def test_terminal_exit_status(backend):
    s = backend.ToolCallStore()
    s.apply(B.terminal_update("s1", "t1", exit_status={"exitCode": 0, "signal": None}))
    assert_record(s.terminal("s1", "t1"), term("t1", exitStatus={"exitCode": 0, "signal": None}))
    s.apply(B.terminal_update("s1", "t1", exit_status={}))
    assert_record(s.terminal("s1", "t1"), term("t1", exitStatus={}))
    s.apply(B.terminal_update("s1", "t1", exit_status=None))
    assert_record(s.terminal("s1", "t1"), term("t1"))


def test_terminals_and_tool_calls_are_separate_namespaces(backend):
    s = backend.ToolCallStore()
    s.apply(tool_call_update("s1", "x", {"content": [B.terminal_content("x")]}))
    s.apply(B.terminal_update("s1", "x", command="ls"))
    s.apply(B.terminal_update("s2", "x", command="pwd"))
    assert_record(s.get("s1", "x"), rec("x", content=[{"type": "terminal", "terminalId": "x"}]))
    assert_record(s.terminal("s1", "x"), term("x", command="ls"))
    assert_record(s.terminal("s2", "x"), term("x", command="pwd"))
    assert s.terminal("s3", "x") is None
    assert s.terminals("s3") == {}
    assert len(s) == 1


VALID_BASE64 = [
    ("", b""),
    ("AA==", b"\x00"),
    ("AB==", b"\x00"),  # unused trailing bits ignored
    ("AAA=", b"\x00\x00"),
    ("AAB=", b"\x00\x00"),
    ("AAAA", b"\x00\x00\x00"),
    ("QUJD", b"ABC"),
    ("+/+/", b"\xfb\xff\xbf"),
    ("//8=", b"\xff\xff"),
    ("aGVsbG8gd29ybGQ=", b"hello world"),
]


@pytest.mark.parametrize("text, data", VALID_BASE64)
def test_base64_valid(backend, text, data):
    s = backend.ToolCallStore()
    s.apply(terminal_chunk("s1", "t1", text))
    s.apply(terminal_frame("s1", "t2", output={"data": text}))
    assert s.terminal("s1", "t1")["output"] == data
    assert s.terminal("s1", "t2")["output"] == data


def test_base64_escaped_json_string(backend):
    s = backend.ToolCallStore()
    s.apply(
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
        b'{"sessionUpdate":"terminal_output_chunk","terminalId":"t1","data":"\\u0051\\u0055JD\\/w=="}}}'
    )
    assert s.terminal("s1", "t1")["output"] == b"ABC\xff"


INVALID_BASE64 = [
    "A",
    "AA",
    "AAA",
    "AA=",
    "AAAAA",
    "A===",
    "====",
    "=AAA",
    "AA==AA==",
    "AB=C",
    "-_-_",
    "AA AA=",
    "AAA\n",
    "QUJD\r\n",
    "ÀÀÀÀ",
    "AA=\u0000",
    "QUJD=",
    "QUJD====",
]


@pytest.mark.parametrize("text", INVALID_BASE64)
def test_base64_invalid_chunk(backend, text):
    s = backend.ToolCallStore()
    s.apply(B.terminal_output_chunk("s1", "t1", b"keep"))
    data = terminal_chunk("s1", "t1", text)
    literal = json.dumps(text, ensure_ascii=False)
    found = f"string {literal}" if len(literal.encode()) <= 32 else "string"
    expect_error(
        backend,
        s,
        data,
        "invalid_base64",
        f'expected "params.update.data" to be base64 text, found {found}',
        value_at(data, b'"data":'),
    )
    assert s.terminal("s1", "t1")["output"] == b"keep"


@pytest.mark.parametrize("text", INVALID_BASE64)
def test_base64_invalid_output(backend, text):
    s = backend.ToolCallStore()
    data = terminal_frame("s1", "t1", output={"data": text})
    literal = json.dumps(text, ensure_ascii=False)
    found = f"string {literal}" if len(literal.encode()) <= 32 else "string"
    expect_error(
        backend,
        s,
        data,
        "invalid_base64",
        f'expected "params.update.output.data" to be base64 text, found {found}',
        value_at(data, b'"data":'),
    )
    assert s.terminal("s1", "t1") is None


@pytest.mark.parametrize(
    "value, found", [(None, "null"), (5, "number 5"), (["AA=="], "array"), ({"d": 1}, "object"), ("A" * 33, "string")]
)
def test_base64_not_text(backend, value, found):
    s = backend.ToolCallStore()
    data = terminal_chunk("s1", "t1", value)
    expect_error(
        backend,
        s,
        data,
        "invalid_base64",
        f'expected "params.update.data" to be base64 text, found {found}',
        value_at(data, b'"data":'),
    )


def test_base64_long_valid_and_escaped_found(backend):
    s = backend.ToolCallStore()
    text = b64(bytes(range(256)) * 4)
    s.apply(terminal_chunk("s1", "t1", text))
    assert s.terminal("s1", "t1")["output"] == bytes(range(256)) * 4
    data = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
        b'{"sessionUpdate":"terminal_output_chunk","terminalId":"t1","data":"\\u0041"}}}'
    )
    expect_error(
        backend,
        s,
        data,
        "invalid_base64",
        'expected "params.update.data" to be base64 text, found string "\\u0041"',
        value_at(data, b'"data":'),
    )


# ------------------------------------------------------------------------------------------
# 7.6 plans
# ------------------------------------------------------------------------------------------

ENTRIES = [B.plan_entry("Read code", priority="high", status="completed"), B.plan_entry("Write tests")]


@pytest.mark.parametrize("version", [1, 2, None])
def test_v1_plan_is_main(backend, version):
    s = backend.ToolCallStore(version)
    c = s.apply(B.plan("s1", ENTRIES))
    assert change_of(backend, c) == ("s1", "plan", "main", "created", None)
    assert_record(s.plans("s1"), {"main": {"type": "items", "planId": "main", "entries": ENTRIES}})
    c = s.apply(B.plan("s1", ENTRIES[:1]))
    assert change_of(backend, c) == ("s1", "plan", "main", "replaced", None)
    assert_record(s.plans("s1"), {"main": {"type": "items", "planId": "main", "entries": ENTRIES[:1]}})
    s.apply(B.plan("s1", []))
    assert_record(s.plans("s1"), {"main": {"type": "items", "planId": "main", "entries": []}})
    assert len(s) == 0


def test_v1_plan_meta(backend):
    s = backend.ToolCallStore()
    s.apply(session_update("s1", {"sessionUpdate": "plan", "_meta": {"m": 1}, "entries": ENTRIES, "extra": 1}))
    assert_record(s.plans("s1"), {"main": {"type": "items", "planId": "main", "entries": ENTRIES, "_meta": {"m": 1}}})
    s.apply(session_update("s1", {"sessionUpdate": "plan", "entries": ENTRIES, "_meta": None}))
    assert_record(s.plans("s1"), {"main": {"type": "items", "planId": "main", "entries": ENTRIES}})


@pytest.mark.parametrize("version", [1, 2, None])
def test_v2_plan_update_per_plan_id(backend, version):
    s = backend.ToolCallStore(version)
    c = s.apply(B.plan_update("s1", "p1", ENTRIES))
    assert change_of(backend, c) == ("s1", "plan", "p1", "created", None)
    odd = {"planId": "p2", "_meta": None, "type": "_acme_markdown", "content": "# x", "entries": None}
    c = s.apply(session_update("s1", {"sessionUpdate": "plan_update", "plan": odd, "_meta": {"ignored": 1}}))
    assert change_of(backend, c) == ("s1", "plan", "p2", "created", None)
    c = s.apply(B.plan_update("s1", "p1", ENTRIES[1:]))
    assert change_of(backend, c) == ("s1", "plan", "p1", "replaced", None)
    assert_record(
        s.plans("s1"),
        {"p1": {"type": "items", "planId": "p1", "entries": ENTRIES[1:]}, "p2": odd},
    )


def test_v1_plan_and_v2_main_share_the_id(backend):
    s = backend.ToolCallStore()
    s.apply(B.plan_update("s1", "main", ENTRIES))
    c = s.apply(B.plan("s1", ENTRIES[:1]))
    assert change_of(backend, c) == ("s1", "plan", "main", "replaced", None)
    assert_record(s.plans("s1"), {"main": {"type": "items", "planId": "main", "entries": ENTRIES[:1]}})


def test_plan_removed(backend):
    s = backend.ToolCallStore()
    s.apply(B.plan_update("s1", "p1", ENTRIES))
    s.apply(B.plan_update("s1", "p2", ENTRIES))
    s.apply(B.plan_update("s2", "p1", ENTRIES))
    remove = session_update("s1", {"sessionUpdate": "plan_removed", "planId": "p1"})
    c = s.apply(remove)
    assert change_of(backend, c) == ("s1", "plan", "p1", "removed", None)
    assert list(s.plans("s1")) == ["p2"]
    assert list(s.plans("s2")) == ["p1"]
    assert s.apply(remove) is None
    assert s.apply(session_update("s3", {"sessionUpdate": "plan_removed", "planId": "p1"})) is None
    c = s.apply(B.plan_update("s1", "p1", ENTRIES))
    assert change_of(backend, c) == ("s1", "plan", "p1", "created", None)
    assert list(s.plans("s1")) == ["p2", "p1"]
    assert s.plans("s9") == {}


@pytest.mark.parametrize("version", [1, 2])
def test_todo_plan_entries_to_store(backend, version):
    todos = {
        "todos": [
            {"content": "a", "status": "in_progress", "priority": "high"},
            {"content": "b", "status": "weird"},
            {"content": 3, "status": "pending"},
            {"content": "c", "status": "cancelled"},
            {"content": "d"},
            "junk",
        ]
    }
    entries = B.todo_plan_entries(todos, protocol_version=version)
    expected = [
        {"content": "a", "priority": "medium", "status": "in_progress"},
        {"content": "b", "priority": "medium", "status": "pending"},
        {"content": "c", "priority": "medium", "status": "cancelled" if version == 2 else "pending"},
    ]
    assert entries == expected
    s = backend.ToolCallStore(version)
    s.apply(B.tool_call("s1", "todo", "todo_write", raw_input=todos))
    if version == 1:
        c = s.apply(B.plan("s1", entries))
        assert change_of(backend, c) == ("s1", "plan", "main", "created", None)
        assert_record(s.plans("s1"), {"main": {"type": "items", "planId": "main", "entries": expected}})
    else:
        c = s.apply(B.plan_update("s1", "main", entries))
        assert change_of(backend, c) == ("s1", "plan", "main", "created", None)
        assert_record(s.plans("s1"), {"main": {"type": "items", "planId": "main", "entries": expected}})
    assert_record(s.get("s1", "todo"), rec("todo", title="todo_write", rawInput=todos))


# ------------------------------------------------------------------------------------------
# 7.9 Change
# ------------------------------------------------------------------------------------------


def _change(backend, data=LINE, store=None):
    return (store or backend.ToolCallStore()).apply(data)


def test_change_fields(backend):
    c = _change(backend)
    assert type(c) is backend.Change
    assert (c.session_id, c.target, c.id, c.action, c.tool_call_id) == ("s1", "tool_call", "c1", "created", "c1")
    assert tuple(c) == ("s1", "tool_call", "c1", "created", "c1")
    assert list(c) == ["s1", "tool_call", "c1", "created", "c1"]


def test_change_equality_and_hash(backend):
    a, b = _change(backend), _change(backend)
    assert a == b
    assert (a != b) is False
    assert hash(a) == hash(b)
    s = backend.ToolCallStore()
    s.apply(LINE)
    other = s.apply(LINE)
    assert tuple(other) == ("s1", "tool_call", "c1", "updated", "c1")
    assert a != other
    assert len({a, b, other}) == 2
    p1 = _change(backend, B.request_permission(1, "s1", "c1", []))
    p2 = _change(backend, B.request_permission("1", "s1", "c1", []))
    assert p1 != p2
    assert (p1.id, p2.id) == (1, "1")
    assert a != "not a change"


def test_change_repr(backend):
    assert (
        repr(_change(backend))
        == "Change(session_id='s1', target='tool_call', id='c1', action='created', tool_call_id='c1')"
    )
    assert (
        repr(_change(backend, INIT_V2))
        == "Change(session_id=None, target='protocol', id=2, action='negotiated', tool_call_id=None)"
    )
    assert repr(_change(backend, B.request_permission(7, "s1", "c1", []))) == (
        "Change(session_id='s1', target='permission', id=7, action='requested', tool_call_id='c1')"
    )
    assert (
        repr(_change(backend, CANCEL))
        == "Change(session_id='s1', target='session', id=None, action='cancelled', tool_call_id=None)"
    )
    assert repr(_change(backend, B.terminal_update("it's", 'say "hi"'))) == (
        "Change(session_id=\"it's\", target='terminal', id='say \"hi\"', action='created', tool_call_id=None)"
    )


def test_change_is_immutable(backend):
    c = _change(backend)
    for attr in ("session_id", "target", "id", "action", "tool_call_id"):
        with pytest.raises((AttributeError, TypeError)):
            setattr(c, attr, "x")
        with pytest.raises((AttributeError, TypeError)):
            delattr(c, attr)
    with pytest.raises((AttributeError, TypeError)):
        c.new_attribute = 1
    assert tuple(c) == ("s1", "tool_call", "c1", "created", "c1")


@pytest.mark.parametrize(
    "data",
    [LINE, INIT_V2, CANCEL, frame(request(None, "session/request_permission", {"sessionId": "s1", "options": []}))],
    ids=["tool_call", "protocol", "session", "null_id"],
)
def test_change_pickles(backend, data):
    c = _change(backend, data)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(c, protocol))
        assert type(back) is backend.Change
        assert back == c and hash(back) == hash(c) and tuple(back) == tuple(c)


# ------------------------------------------------------------------------------------------
# 7.8 bounds
# ------------------------------------------------------------------------------------------


def test_bound_evicts_oldest_finished(backend):
    s = backend.ToolCallStore(2, max_tool_calls=3)
    s.apply(tool_call_update("s1", "c1", {"status": "in_progress"}))
    s.apply(tool_call_update("s1", "c2", {"status": "failed"}))
    s.apply(tool_call_update("s2", "c3", {"status": "completed"}))
    assert (len(s), s.evicted) == (3, 0)
    c = s.apply(tool_call_update("s1", "c4"))
    assert change_of(backend, c) == ("s1", "tool_call", "c4", "created", "c4")
    assert (len(s), s.evicted) == (3, 1)
    assert s.get("s1", "c2") is None
    assert list(s.tool_calls("s1")) == ["c1", "c4"]
    s.apply(tool_call_update("s1", "c5"))
    assert s.get("s2", "c3") is None
    assert list(s.snapshot()) == ["s1"]
    assert (len(s), s.evicted) == (3, 2)


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled"])
def test_bound_each_finished_status(backend, status):
    s = backend.ToolCallStore(2, max_tool_calls=2)
    s.apply(tool_call_update("s1", "a", {"status": "in_progress"}))
    s.apply(tool_call_update("s1", "b", {"status": status}))
    s.apply(tool_call_update("s1", "c"))
    assert list(s.tool_calls("s1")) == ["a", "c"]


def test_bound_evicts_oldest_when_none_finished(backend):
    s = backend.ToolCallStore(2, max_tool_calls=2)
    s.apply(tool_call_update("s1", "a", {"status": "_done"}))
    s.apply(tool_call_update("s2", "b", {"status": "pending"}))
    s.apply(tool_call_update("s1", "a", {"title": "touched later"}))  # updates do not refresh age
    s.apply(tool_call_update("s1", "c", {"status": "in_progress"}))
    assert s.get("s1", "a") is None
    # s1 was seen first and keeps its place
    assert_record(s.snapshot(), {"s1": {"c": rec("c", status="in_progress")}, "s2": {"b": rec("b")}})
    assert s.evicted == 1


def test_bound_never_evicts_the_touched_record(backend):
    s = backend.ToolCallStore(1, max_tool_calls=1)
    s.apply(tool_call_update("s1", "a"))
    c = s.apply(tool_call_update("s1", "b", {"status": "completed"}))  # the only finished one is the new one
    assert change_of(backend, c) == ("s1", "tool_call", "b", "created", "b")
    assert_record(s.snapshot(), {"s1": {"b": rec("b", status="completed")}})
    s.apply(chunk("s1", "c", A))
    assert_record(s.snapshot(), {"s1": {"c": rec("c", content=[A])}})
    s.apply(B.tool_call("s1", "d", "D", status="completed"))
    assert_record(s.snapshot(), {"s1": {"d": rec("d", title="D", status="completed")}})
    assert (len(s), s.evicted) == (1, 3)


def test_bound_applies_to_permission_created_tool_calls(backend):
    s = backend.ToolCallStore(1, max_tool_calls=1)
    s.apply(tool_call_update("s1", "a", {"status": "completed"}))
    s.apply(B.request_permission(1, "s1", "b", OPTIONS))
    assert list(s.tool_calls("s1")) == ["b"]
    assert s.evicted == 1


def test_evicted_record_is_recreated_last(backend):
    s = backend.ToolCallStore(2, max_tool_calls=2)
    s.apply(tool_call_update("s1", "a", {"title": "A", "status": "completed"}))
    s.apply(tool_call_update("s1", "b"))
    s.apply(tool_call_update("s1", "c"))
    c = s.apply(tool_call_update("s1", "a", {"status": "in_progress"}))
    assert change_of(backend, c) == ("s1", "tool_call", "a", "created", "a")
    assert_record(s.tool_calls("s1"), {"c": rec("c"), "a": rec("a", status="in_progress")})
    assert s.evicted == 2


def test_session_stays_in_state_after_its_tool_calls_are_evicted(backend):
    s = backend.ToolCallStore(max_tool_calls=1)
    s.apply(B.tool_call("s1", "c1", "one"))
    s.apply(B.tool_call("s2", "c1", "two"))
    assert_record(s.snapshot(), {"s2": {"c1": rec("c1", title="two")}})
    empty = {"toolCalls": {}, "terminals": {}, "plans": {}, "permissions": []}
    assert_record(
        s.state(),
        empty_state(
            max_tool_calls=1,
            evicted=1,
            sessions={
                "s1": empty,
                "s2": {**empty, "toolCalls": {"c1": rec("c1", title="two")}},
            },
        ),
    )


def test_bound_keeps_terminals_plans_permissions_and_sessions(backend):
    s = backend.ToolCallStore(2, max_tool_calls=1)
    s.apply(tool_call_update("s1", "a"))
    s.apply(B.terminal_update("s1", "t1", command="x"))
    s.apply(B.terminal_update("s1", "t2", command="y"))
    s.apply(B.plan_update("s1", "p1", []))
    s.apply(B.plan_update("s1", "p2", []))
    s.apply(_perm({"sessionId": "s1", "options": []}, 1))
    s.apply(_perm({"sessionId": "s1", "options": []}, 2))
    s.apply(tool_call_update("s2", "b"))
    assert s.snapshot() == {"s2": {"b": rec("b")}}
    assert s.tool_calls("s1") == {}
    assert list(s.terminals("s1")) == ["t1", "t2"]
    assert list(s.plans("s1")) == ["p1", "p2"]
    assert len(s.permissions("s1")) == 2
    state = s.state()
    assert list(state["sessions"]) == ["s1", "s2"]
    assert state["sessions"]["s1"]["toolCalls"] == {}
    assert (state["maxToolCalls"], state["evicted"]) == (1, 1)


# ------------------------------------------------------------------------------------------
# checkpoints
# ------------------------------------------------------------------------------------------


def _rich_stream():
    return [
        INIT_V2,
        B.tool_call_update(
            "s1", "c1", protocol_version=2, title="Run", kind="execute", raw_input={"cmd": "ls", "n": 10**25}
        ),
        B.tool_call_content_chunk("s1", "c1", B.terminal_content("t1")),
        B.terminal_update("s1", "t1", command="ls", cwd="/r", output=b"\x00\xff"),
        B.terminal_output_chunk("s1", "t1", b"!"),
        terminal_frame(
            "s1", "t2", output={"data": "", "_meta": {"m": 1}}, exitStatus={"exitCode": 0}, _meta={"t": 2}, z=1
        ),
        B.plan("s1", ENTRIES),
        B.request_permission(
            5, "s1", {"toolCallId": "c1", "status": "pending"}, OPTIONS, protocol_version=2, title="ok?"
        ),
        B.request_permission("p", "s1", "c2", [ALLOW], protocol_version=2, title="ok?"),
        B.permission_response("p", "allow"),
        B.plan_update("s2", "q", ENTRIES[:1]),
        tool_call_update("s3", "x", {"title": 1.5, "_meta": {"u": "é\u2028"}, "zz": [None, -0.0]}),
    ]


def _rich_state():
    return {
        "format": "acp-fast-state/1",
        "protocolVersion": None,
        "negotiatedVersion": 2,
        "maxToolCalls": None,
        "evicted": 0,
        "sessions": {
            "s1": {
                "toolCalls": {
                    "c1": rec(
                        "c1",
                        title="Run",
                        kind="execute",
                        content=[{"type": "terminal", "terminalId": "t1"}],
                        rawInput={"cmd": "ls", "n": 10**25},
                    ),
                    "c2": rec("c2"),
                },
                "terminals": {
                    "t1": {"terminalId": "t1", "command": "ls", "cwd": "/r", "output": "AP8h"},
                    "t2": {
                        "terminalId": "t2",
                        "output": "",
                        "outputMeta": {"m": 1},
                        "exitStatus": {"exitCode": 0},
                        "_meta": {"t": 2},
                        "z": 1,
                    },
                },
                "plans": {"main": {"type": "items", "planId": "main", "entries": ENTRIES}},
                "permissions": [
                    perm_record(5, "s1", OPTIONS, tcid="c1"),
                    perm_record(
                        "p",
                        "s1",
                        [ALLOW],
                        outcome="selected",
                        tcid="c2",
                        option_id="allow",
                        approved=True,
                        response={"outcome": {"outcome": "selected", "optionId": "allow"}},
                        has_response=True,
                    ),
                ],
            },
            "s2": {
                "toolCalls": {},
                "terminals": {},
                "plans": {"q": {"type": "items", "planId": "q", "entries": ENTRIES[:1]}},
                "permissions": [],
            },
            "s3": {
                "toolCalls": {"x": rec("x", title=1.5, _meta={"u": "é\u2028"}, zz=[None, -0.0])},
                "terminals": {},
                "plans": {},
                "permissions": [],
            },
        },
        "permissionOrder": ["s1", "s1"],
    }


def _load(backend, frames, **kw):
    s = backend.ToolCallStore(**kw)
    for f in frames:
        s.apply(f)
    return s


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


def test_eviction_order_after_restore_is_checkpoint_order(backend):
    s = backend.ToolCallStore(2, max_tool_calls=3)
    s.apply(tool_call_update("s1", "a"))
    s.apply(tool_call_update("s2", "b"))
    s.apply(tool_call_update("s1", "c"))
    r = backend.ToolCallStore.from_json(s.to_json())
    # checkpoint order: s1/a, s1/c, s2/b (sessions, then their tool calls)
    for store in (s, r):
        store.apply(tool_call_update("s3", "d"))
        assert store.get("s1", "a") is None
    s.apply(tool_call_update("s3", "e"))
    r.apply(tool_call_update("s3", "e"))
    assert s.get("s2", "b") is None and s.get("s1", "c") is not None  # creation order
    assert r.get("s1", "c") is None and r.get("s2", "b") is not None  # checkpoint order
    assert (s.evicted, r.evicted) == (2, 2)


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
        b'{"format":"acp-fast-state/2","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{}}',
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


def test_to_json_identical_across_backends(both_backends):
    native, fallback = both_backends
    frames = _rich_stream() + _more_frames()
    a, b = _load(native, frames), _load(fallback, frames)
    assert a.to_json() == b.to_json()
    assert_record(a.state(), b.state())
    # a checkpoint written by one backend restores in the other
    assert fallback.ToolCallStore.from_json(a.to_json()).to_json() == a.to_json()
    assert native.ToolCallStore.from_json(b.to_json()).to_json() == b.to_json()


def test_to_json_is_dumps_of_state_for_odd_values(both_backends):
    # values stored from frames with whitespace, escapes, exponents and duplicate keys in nested
    # objects: to_json() must be dumps(state()), not the received text
    text = (
        '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update",'
        '"toolCallId":"c1","rawInput": { "a" : 1E2 , "b":[ 1.50 , -0 , -0.0 , 1e-400 ], "a": "\\u00e9\\/\\u2028" } ,'
        '"content":[ {"type":"x","k":1,"k":2} ], "_meta": {"\\u0041":true}}}}'
    ).encode()
    for backend in both_backends:
        s = backend.ToolCallStore(2)
        s.apply(text)
        s.apply(terminal_frame("s1", "t1", output={"data": "AAAA", "_meta": {"x": 1.0}}))
        assert s.to_json() == backend.dumps(s.state())
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
