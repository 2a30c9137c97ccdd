"""Agent-side frame builders (python/acp_fast/builders/): content helpers, plans, message chunks,
permission requests, envelopes, terminals, tool kinds. The tool-call builders are in
tests/test_builders_tool_calls.py; the contract every frame is checked against (``check``) is in
tests/builder_checks.py.
"""

from __future__ import annotations

import base64
import json
import pickle

import pytest

import acp_fast
from acp_fast import builders as b
from acp_fast.builders import UNSET
from builder_checks import _session_update, check, jsonschema, validate

# ---------------------------------------------------------------------------------------------
# The validator itself must reject bad shapes, or the schema checks below prove nothing.


def test_validator_rejects_invalid_frames():
    bad_v1 = _session_update("s", {"sessionUpdate": "tool_call", "toolCallId": "c"})  # no title
    with pytest.raises(jsonschema.ValidationError):
        validate(bad_v1, 1)
    bad_v2 = _session_update("s", {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}})
    with pytest.raises(jsonschema.ValidationError):  # v2 chunks need messageId
        validate(bad_v2, 2)
    v1_diff_in_v2 = _session_update(
        "s",
        {
            "sessionUpdate": "tool_call_content_chunk",
            "toolCallId": "c",
            "content": {"type": "diff", "path": "/a", "newText": "x"},
        },
    )
    with pytest.raises(jsonschema.ValidationError):
        validate(v1_diff_in_v2, 2)


# ---------------------------------------------------------------------------------------------
# content helpers


def test_content_helpers():
    assert b.text_content("hi") == {"type": "content", "content": {"type": "text", "text": "hi"}}
    assert b.diff_content("/a", "new") == {"type": "diff", "path": "/a", "newText": "new"}
    assert b.diff_content("/a", "new", "old") == {"type": "diff", "path": "/a", "oldText": "old", "newText": "new"}
    assert b.terminal_content("t1") == {"type": "terminal", "terminalId": "t1"}
    assert b.location("/a") == {"path": "/a"}
    assert b.location("/a", 0) == {"path": "/a", "line": 0}
    assert b.plan_entry("x") == {"content": "x", "priority": "medium", "status": "pending"}
    assert b.permission_option("o", "Allow", "allow_once") == {"optionId": "o", "name": "Allow", "kind": "allow_once"}
    with pytest.raises(ValueError):
        b.location("/a", -1)
    with pytest.raises(TypeError):
        b.location("/a", True)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        b.text_content(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        b.plan_entry("x", priority="urgent")
    with pytest.raises(ValueError):
        b.permission_option("o", "n", "maybe")
    assert b.plan_entry("x", priority="_p", status="_s")["status"] == "_s"


# ---------------------------------------------------------------------------------------------
# plans


def test_plan_v1():
    entries = [
        b.plan_entry("Read the code", priority="high", status="completed"),
        b.plan_entry("Write tests", status="in_progress"),
        b.plan_entry("Ship", priority="low"),
    ]
    frame = b.plan("s", entries)
    check(frame, _session_update("s", {"sessionUpdate": "plan", "entries": entries}), 1)
    check(b.plan("s", []), _session_update("s", {"sessionUpdate": "plan", "entries": []}), 1)
    with pytest.raises(ValueError, match=r"entries\[0\].status"):
        b.plan("s", [b.plan_entry("x", status="cancelled")])
    with pytest.raises(ValueError, match=r"entries\[0\].priority"):
        b.plan("s", [{"content": "x", "priority": "urgent", "status": "pending"}])


def test_plan_update_v2():
    entries = [b.plan_entry("A", status="cancelled"), b.plan_entry("B", priority="high")]
    frame = b.plan_update("s", "main", entries)
    update = {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "main", "entries": entries}}
    check(frame, _session_update("s", update), 2)


# seed mapping of todo_write input (spec §7)
TODO_ROWS = [
    # (input, protocol_version, expected entries)
    (None, 1, None),
    ({}, 1, None),
    ({"todos": "not a list"}, 1, None),
    ({"todos": {"content": "x"}}, 1, None),
    ("todos", 1, None),
    ({"todos": []}, 1, []),
    ([], 1, []),
    ([{"content": "a", "status": "pending"}], 1, [{"content": "a", "priority": "medium", "status": "pending"}]),
    (
        [{"content": "a", "status": "in_progress", "priority": "high"}],
        1,
        [{"content": "a", "priority": "medium", "status": "in_progress"}],
    ),
    ([{"content": "a", "status": "completed"}], 2, [{"content": "a", "priority": "medium", "status": "completed"}]),
    ([{"content": "a", "status": "done"}], 1, [{"content": "a", "priority": "medium", "status": "pending"}]),
    ([{"content": "a", "status": "cancelled"}], 1, [{"content": "a", "priority": "medium", "status": "pending"}]),
    ([{"content": "a", "status": "cancelled"}], 2, [{"content": "a", "priority": "medium", "status": "cancelled"}]),
    ([{"content": "a", "status": "_custom"}], 2, [{"content": "a", "priority": "medium", "status": "pending"}]),
    ([{"content": 5, "status": "pending"}], 1, []),
    ([{"status": "pending"}], 1, []),
    ([{"content": "a"}], 1, []),
    ([{"content": "a", "status": None}], 1, []),
    (["just a string", 3, None], 1, []),
    (
        {
            "todos": [
                {"content": "one", "status": "completed", "activeForm": "Doing one"},
                {"content": "two", "status": 1},
                {"content": "three", "status": "in_progress"},
                {"content": "four", "status": "blocked", "priority": "low"},
            ]
        },
        1,
        [
            {"content": "one", "priority": "medium", "status": "completed"},
            {"content": "three", "priority": "medium", "status": "in_progress"},
            {"content": "four", "priority": "medium", "status": "pending"},
        ],
    ),
]


@pytest.mark.parametrize("todos, version, expected", TODO_ROWS)
def test_todo_plan_entries(todos, version, expected):
    entries = b.todo_plan_entries(todos, protocol_version=version)
    assert entries == expected
    if entries is not None:
        if version == 1:
            check(b.plan("s", entries), _session_update("s", {"sessionUpdate": "plan", "entries": entries}), 1)
        else:
            frame = b.plan_update("s", "main", entries)
            update = {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "main", "entries": entries}}
            check(frame, _session_update("s", update), 2)


# ---------------------------------------------------------------------------------------------
# message chunks


@pytest.mark.parametrize("kind", ["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"])
def test_message_chunk(kind):
    text = 'Hello "world" \\ tab\t newline\n é ✓ 😀 \u0007 </script>'
    frame = b.message_chunk("s", text, kind=kind)
    update = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    check(frame, _session_update("s", update), 1)
    assert acp_fast.decode(frame).update_kind == kind

    frame = b.message_chunk("s", text, kind=kind, message_id="msg_1")
    update["messageId"] = "msg_1"
    check(frame, _session_update("s", update), (1, 2))

    frame = b.message_chunk("s", "", kind=kind, message_id="msg_1", meta={"i": 0})
    update = {"sessionUpdate": kind, "content": {"type": "text", "text": ""}, "messageId": "msg_1", "_meta": {"i": 0}}
    check(frame, _session_update("s", update), (1, 2))


def test_message_chunk_default_kind_and_checks():
    assert json.loads(b.message_chunk("s", "x"))["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    with pytest.raises(ValueError, match="kind must be one of"):
        b.message_chunk("s", "x", kind="agent_message")
    with pytest.raises(TypeError):
        b.message_chunk("s", b"x")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        b.message_chunk("s", "x", message_id=3)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# permission requests and responses


OPTIONS = [
    b.permission_option("allow", "Allow once", "allow_once"),
    b.permission_option("always", "Always allow", "allow_always"),
    b.permission_option("reject", "Reject", "reject_once"),
]


def test_request_permission_v1():
    tc = {"toolCallId": "c1", "title": "Run `rm -rf build`", "kind": "execute", "rawInput": {"command": "rm -rf build"}}
    frame = b.request_permission(7, "s", tc, OPTIONS)
    expected = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "session/request_permission",
        "params": {"sessionId": "s", "toolCall": tc, "options": OPTIONS},
    }
    check(frame, expected, 1)
    message = acp_fast.decode(frame)
    assert (message.kind, message.id, message.session_id) == ("request", 7, "s")

    frame = b.request_permission("req-1", "s", "c1", [])  # v1 has no minimum
    expected = {
        "jsonrpc": "2.0",
        "id": "req-1",
        "method": "session/request_permission",
        "params": {"sessionId": "s", "toolCall": {"toolCallId": "c1"}, "options": []},
    }
    check(frame, expected, 1)


def test_request_permission_v2():
    tc = {"toolCallId": "c1", "title": "Edit", "status": None}
    frame = b.request_permission(
        8, "s", tc, OPTIONS, protocol_version=2, title="Allow editing a.py?", description="2 hunks"
    )
    expected = {
        "jsonrpc": "2.0",
        "id": 8,
        "method": "session/request_permission",
        "params": {
            "sessionId": "s",
            "title": "Allow editing a.py?",
            "description": "2 hunks",
            "subject": {"type": "tool_call", "toolCall": tc},
            "options": OPTIONS,
        },
    }
    check(frame, expected, 2)
    frame = b.request_permission(9, "s", "c1", OPTIONS[:1], protocol_version=2, title="Run?")
    expected = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "session/request_permission",
        "params": {
            "sessionId": "s",
            "title": "Run?",
            "subject": {"type": "tool_call", "toolCall": {"toolCallId": "c1"}},
            "options": OPTIONS[:1],
        },
    }
    check(frame, expected, 2)


def test_request_permission_checks():
    with pytest.raises(ValueError, match="requires a title"):
        b.request_permission(1, "s", "c", OPTIONS, protocol_version=2)
    with pytest.raises(ValueError, match="at least one option"):
        b.request_permission(1, "s", "c", [], protocol_version=2, title="t")
    with pytest.raises(ValueError, match="only in protocol version 2"):
        b.request_permission(1, "s", "c", OPTIONS, title="t")
    with pytest.raises(ValueError, match="toolCallId"):
        b.request_permission(1, "s", {"title": "x"}, OPTIONS)
    with pytest.raises(ValueError, match="null"):
        b.request_permission(1, "s", {"toolCallId": "c", "title": None}, OPTIONS)
    with pytest.raises(ValueError, match=r"options\[0\].kind"):
        b.request_permission(1, "s", "c", [b.permission_option("o", "n", "_x")])
    with pytest.raises(TypeError, match="request_id"):
        b.request_permission(True, "s", "c", OPTIONS)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="request_id"):
        b.request_permission(None, "s", "c", OPTIONS)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="64-bit"):
        b.request_permission(2**63, "s", "c", OPTIONS)


@pytest.mark.parametrize("version", [1, 2])
def test_permission_response(version):
    frame = b.permission_response(7, "allow")
    expected = {"jsonrpc": "2.0", "id": 7, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}
    check(frame, expected, version, answers="session/request_permission")
    assert acp_fast.decode(frame).kind == "response"

    frame = b.permission_response("r1", cancelled=True)
    expected = {"jsonrpc": "2.0", "id": "r1", "result": {"outcome": {"outcome": "cancelled"}}}
    check(frame, expected, version, answers="session/request_permission")


def test_permission_response_checks():
    with pytest.raises(ValueError):
        b.permission_response(1)
    with pytest.raises(ValueError):
        b.permission_response(1, "o", cancelled=True)


@pytest.mark.parametrize("version", [1, 2])
def test_error_response(version):
    frame = b.error_response(3, -32800, "Request cancelled")
    expected = {"jsonrpc": "2.0", "id": 3, "error": {"code": -32800, "message": "Request cancelled"}}
    check(frame, expected, version)
    assert acp_fast.decode(frame).kind == "error"

    frame = b.error_response(None, -32700, "Parse error", data={"line": 3})
    expected = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error", "data": {"line": 3}}}
    check(frame, expected, version)

    frame = b.error_response("x", -32002, "Resource not found", data=None)
    expected = {"jsonrpc": "2.0", "id": "x", "error": {"code": -32002, "message": "Resource not found", "data": None}}
    check(frame, expected, version)
    with pytest.raises(ValueError):
        b.error_response(1, 2**31, "x")
    with pytest.raises(TypeError):
        b.error_response(1, "-32000", "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        b.error_response(1, -32000, None)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# generic envelopes


@pytest.mark.parametrize("version", [1, 2])
def test_generic_envelopes(version):
    params = {"sessionId": "s", "prompt": [{"type": "text", "text": "Fix the bug"}]}
    frame = b.request(1, "session/prompt", params)
    check(frame, {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": params}, version)
    result = {"stopReason": "end_turn"} if version == 1 else {"messageId": "msg_1"}
    frame = b.response(1, result)
    check(frame, {"jsonrpc": "2.0", "id": 1, "result": result}, version, answers="session/prompt")
    frame = b.notification("session/cancel", {"sessionId": "s"})
    check(frame, {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}, version)
    frame = b.notification("_acme/ping")
    assert json.loads(frame) == {"jsonrpc": "2.0", "method": "_acme/ping"}
    assert acp_fast.decode(frame).kind == "notification"
    frame = b.request("id-1", "_acme/ask")
    assert json.loads(frame) == {"jsonrpc": "2.0", "id": "id-1", "method": "_acme/ask"}
    update = {"sessionUpdate": "current_mode_update", "currentModeId": "code"}
    if version == 1:
        check(b.session_update("s", update), _session_update("s", update), 1)
    with pytest.raises(ValueError):
        b.session_update("s", {"content": 1})


# ---------------------------------------------------------------------------------------------
# v2 terminals


def test_terminal_update_and_chunk():
    frame = b.terminal_update(
        "s", "term_1", command="cargo test", cwd="/repo", output=b"\x1b[32mok\x1b[0m\n", exit_status={"exitCode": 0}
    )
    update = {
        "sessionUpdate": "terminal_update",
        "terminalId": "term_1",
        "command": "cargo test",
        "cwd": "/repo",
        "output": {"data": base64.b64encode(b"\x1b[32mok\x1b[0m\n").decode()},
        "exitStatus": {"exitCode": 0},
    }
    check(frame, _session_update("s", update), 2)

    frame = b.terminal_update("s", "term_1", command=None, cwd=None, output=None, exit_status=None, meta=None)
    update = {
        "sessionUpdate": "terminal_update",
        "terminalId": "term_1",
        "command": None,
        "cwd": None,
        "output": None,
        "exitStatus": None,
        "_meta": None,
    }
    check(frame, _session_update("s", update), 2)

    data = "naïve ✓\r\n".encode() + b"\xff\xfe"
    frame = b.terminal_output_chunk("s", "term_1", data, meta={"n": 1})
    update = {
        "sessionUpdate": "terminal_output_chunk",
        "terminalId": "term_1",
        "data": base64.b64encode(data).decode(),
        "_meta": {"n": 1},
    }
    check(frame, _session_update("s", update), 2)
    assert base64.b64decode(json.loads(frame)["params"]["update"]["data"]) == data
    with pytest.raises(TypeError):
        b.terminal_output_chunk("s", "t", 3)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# tool kinds


@pytest.mark.parametrize(
    "name, kind",
    [
        ("read_file", "read"),
        ("list_directory", "read"),
        ("edit_file", "edit"),
        ("grep", "search"),
        ("find_path", "search"),
        ("terminal", "execute"),
        ("thinking", "think"),
        ("fetch", "fetch"),
        ("web_search", "fetch"),
        ("delete_path", "other"),
        ("", "other"),
        ("Read_File", "other"),
    ],
)
def test_tool_kind_defaults(name, kind):
    assert b.tool_kind(name) == kind
    assert b.ToolKindMap().kind(name) == kind


def test_default_tool_kinds_table():
    assert dict(b.DEFAULT_TOOL_KINDS) == {
        "read_file": "read",
        "list_directory": "read",
        "edit_file": "edit",
        "grep": "search",
        "find_path": "search",
        "terminal": "execute",
        "thinking": "think",
        "fetch": "fetch",
        "web_search": "fetch",
    }
    with pytest.raises(TypeError):
        b.DEFAULT_TOOL_KINDS["x"] = "read"  # type: ignore[index]


def test_tool_kind_extra_and_map():
    extra = {"bash": "execute", "grep": "_acme_search"}
    assert b.tool_kind("bash", extra) == "execute"
    assert b.tool_kind("grep", extra) == "_acme_search"  # extra wins
    assert b.tool_kind("read_file", extra) == "read"
    assert b.tool_kind("nope", extra) == "other"

    kinds = b.ToolKindMap({"bash": "execute"})
    assert isinstance(kinds, dict)
    assert kinds.kind("bash") == "execute"
    kinds.register("move_path", "move")
    assert kinds.kind("move_path") == "move"
    kinds.register("grep", "other")
    assert kinds.kind("grep") == "other"
    assert b.tool_kind("grep") == "search"  # the defaults are not touched
    assert b.tool_kind("bash", kinds) == "execute"
    with pytest.raises(TypeError):
        kinds.register("x", None)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# misc


def test_unset_marker():
    assert repr(UNSET) == "UNSET"
    assert not UNSET
    assert pickle.loads(pickle.dumps(UNSET)) is UNSET
    assert type(UNSET)() is UNSET
    # UNSET passed explicitly is the same as leaving the argument out
    assert b.tool_call_update("s", "c", title=UNSET, status="completed") == b.tool_call_update(
        "s", "c", status="completed"
    )


def _all_frames() -> list:
    return [
        b.tool_call("s", "c", "t", kind="read"),
        b.tool_call_update("s", "c", status="completed"),
        b.tool_call_update("s", "c", protocol_version=2, title=None),
        b.tool_call_content_chunk("s", "c", b.text_content("x")),
        b.failed_tool_call_update("s", "c", "err"),
        b.message_chunk("s", "héllo"),
        b.plan("s", [b.plan_entry("a")]),
        b.plan_update("s", "p", [b.plan_entry("a")]),
        b.request_permission(1, "s", "c", OPTIONS),
        b.permission_response(1, "allow"),
        b.error_response(2, -32601, "Method not found"),
        b.terminal_output_chunk("s", "t", b"abc"),
    ]


def test_stream_of_builder_frames_decodes():
    frames = _all_frames()
    results = acp_fast.FrameDecoder().feed(b"".join(frames))
    assert len(results) == len(frames)
    for frame, message in zip(frames, results):
        assert not isinstance(message, acp_fast.DecodeError), message
        assert message.raw + b"\n" == frame


def test_frames_decode_with_every_backend(backend):
    """Builders are backend-independent; their frames decode the same with either backend."""
    frames = _all_frames()
    for frame in frames:
        message = backend.decode(frame)
        assert message.to_dict() == json.loads(frame)
        assert backend.encode(message) == frame
    results = backend.FrameDecoder().feed(b"".join(frames))
    assert [m.raw + b"\n" for m in results] == frames
