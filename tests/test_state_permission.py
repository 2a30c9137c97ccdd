"""Permission requests and responses (mirrors ``rust/state/permission.rs`` and
``_fallback/state/permission.py``): DESIGN.md §7.5 and the permission errors of §7.7.

Every behaviour test takes the ``backend`` fixture and runs on both backends (ids rust, python);
expected values are written out in full. Shared helpers: ``state_helpers.py``, ``state_model.py``.
"""

from __future__ import annotations

import json

import pytest

from acp_fast import builders as B
from state_helpers import (
    ALLOW,
    CANCEL,
    LINE,
    OPTIONS,
    _good_after,
    _perm,
    empty_state,
    expect_error,
    perm_record,
    rec,
)
from state_model import (
    assert_record,
    change_of,
    error_response,
    frame,
    notification,
    response,
    tool_call_update,
    value_at,
)

# ------------------------------------------------------------------------------------------
# 7.7 errors (permission requests)
# ------------------------------------------------------------------------------------------


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
