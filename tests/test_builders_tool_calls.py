"""Agent-side frame builders (python/acp_fast/builders/): the tool-call builders (``tool_call``,
``tool_call_update``, ``tool_call_content_chunk``, ``failed_tool_call_update``). The contract every
frame is checked against (``check``) is in tests/builder_checks.py.
"""

from __future__ import annotations

import json

import pytest

import acp_fast
from acp_fast import builders as b
from builder_checks import _session_update, check

# ---------------------------------------------------------------------------------------------
# tool_call (v1)


def test_tool_call_minimal():
    frame = b.tool_call("sess_1", "call_1", "Reading file")
    assert frame == (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":'
        b'{"sessionUpdate":"tool_call","toolCallId":"call_1","title":"Reading file"}}}\n'
    )
    check(
        frame,
        _session_update("sess_1", {"sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "Reading file"}),
        1,
    )
    message = acp_fast.decode(frame)
    assert message.kind == "notification"
    assert message.method == "session/update"
    assert message.session_id == "sess_1"
    assert message.update_kind == "tool_call"
    assert message.tool_call_id == "call_1"


def test_tool_call_all_fields_in_wire_order():
    content = [
        b.text_content('naïve 日本語 "quoted" \\ back\nslash 🚀'),
        b.diff_content("/repo/a.py", "x = 2\n", "x = 1\n"),
        b.diff_content("/repo/new.py", "print('hi')\n"),
        b.terminal_content("term_1"),
    ]
    locations = [b.location("/repo/a.py", 12), b.location("/repo/new.py")]
    frame = b.tool_call(
        "sess_1",
        "call_2",
        "Editing a.py",
        kind="edit",
        status="in_progress",
        content=content,
        locations=locations,
        raw_input={"path": "/repo/a.py", "edits": [{"old": "x = 1", "new": "x = 2"}]},
        raw_output={"ok": True, "n": 1.5, "big": 2**70},
        meta={"trace": "abc"},
    )
    update = {
        "sessionUpdate": "tool_call",
        "toolCallId": "call_2",
        "title": "Editing a.py",
        "kind": "edit",
        "status": "in_progress",
        "content": content,
        "locations": locations,
        "rawInput": {"path": "/repo/a.py", "edits": [{"old": "x = 1", "new": "x = 2"}]},
        "rawOutput": {"ok": True, "n": 1.5, "big": 2**70},
        "_meta": {"trace": "abc"},
    }
    check(frame, _session_update("sess_1", update), 1)


@pytest.mark.parametrize("field", ["kind", "status", "content", "locations", "raw_input", "raw_output", "meta", "name"])
def test_tool_call_refuses_null(field):
    with pytest.raises(ValueError, match="cannot clear"):
        b.tool_call("s", "c", "t", **{field: None})


def test_tool_call_argument_checks():
    with pytest.raises(ValueError, match="kind must be one of"):
        b.tool_call("s", "c", "t", kind="_custom")  # v1 kinds are closed
    with pytest.raises(ValueError, match="status must be one of"):
        b.tool_call("s", "c", "t", status="cancelled")  # v2 only
    with pytest.raises(TypeError, match="title"):
        b.tool_call("s", "c", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="session_id"):
        b.tool_call(1, "c", "t")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tool_call_id"):
        b.tool_call("s", None, "t")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="content"):
        b.tool_call("s", "c", "t", content="text")
    with pytest.raises(TypeError, match=r"locations\[0\]"):
        b.tool_call("s", "c", "t", locations=["/a"])
    with pytest.raises(TypeError, match="meta"):
        b.tool_call("s", "c", "t", meta=[1])
    with pytest.raises(acp_fast.EncodeError):
        b.tool_call("s", "c", "t", raw_input={"x": float("nan")})


# ---------------------------------------------------------------------------------------------
# tool_call_update


def test_tool_call_update_v1_patch():
    frame = b.tool_call_update("s1", "c1", status="completed", content=[b.text_content("done")], raw_output="ok")
    update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "done"}}],
        "rawOutput": "ok",
    }
    check(frame, _session_update("s1", update), 1)
    assert acp_fast.decode(frame).tool_call_id == "c1"


def test_tool_call_update_only_id():
    frame = b.tool_call_update("s1", "c1")
    check(frame, _session_update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "c1"}), (1, 2))


def test_tool_call_update_v1_empty_arrays_are_allowed():
    frame = b.tool_call_update("s1", "c1", content=[], locations=[])
    update = {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "content": [], "locations": []}
    check(frame, _session_update("s1", update), 1)


@pytest.mark.parametrize(
    "field", ["title", "kind", "status", "content", "locations", "raw_input", "raw_output", "meta", "name"]
)
def test_tool_call_update_v1_refuses_null(field):
    with pytest.raises(ValueError, match="cannot clear a field"):
        b.tool_call_update("s", "c", **{field: None})
    with pytest.raises(ValueError, match="protocol_version=2"):
        b.tool_call_update("s", "c", protocol_version=1, **{field: None})


def test_tool_call_update_v2_nulls_clear():
    frame = b.tool_call_update(
        "s1",
        "c1",
        protocol_version=2,
        title=None,
        kind=None,
        status="cancelled",
        content=None,
        locations=None,
        raw_input=None,
        raw_output=None,
        meta=None,
        name=None,
    )
    update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "title": None,
        "kind": None,
        "status": "cancelled",
        "content": None,
        "locations": None,
        "rawInput": None,
        "rawOutput": None,
        "name": None,
        "_meta": None,
    }
    check(frame, _session_update("s1", update), 2)


def test_tool_call_update_v2_upsert_values():
    frame = b.tool_call_update(
        "s1",
        "c1",
        protocol_version=2,
        title="Run tests",
        kind="_acme_custom",
        status="in_progress",
        content=[b.terminal_content("t1")],
        locations=[b.location("/repo/tests", 1)],
        raw_input={"cmd": "pytest -q"},
        name="terminal",
        meta={"k": [1, 2]},
    )
    update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "title": "Run tests",
        "kind": "_acme_custom",
        "status": "in_progress",
        "content": [{"type": "terminal", "terminalId": "t1"}],
        "locations": [{"path": "/repo/tests", "line": 1}],
        "rawInput": {"cmd": "pytest -q"},
        "name": "terminal",
        "_meta": {"k": [1, 2]},
    }
    check(frame, _session_update("s1", update), 2)


@pytest.mark.parametrize("version", [0, 3, "1", 1.0, True, None])
def test_unknown_protocol_version(version):
    with pytest.raises(ValueError, match="protocol_version must be 1 or 2"):
        b.tool_call_update("s", "c", protocol_version=version)
    with pytest.raises(ValueError, match="protocol_version"):
        b.failed_tool_call_update("s", "c", "x", protocol_version=version)
    with pytest.raises(ValueError, match="protocol_version"):
        b.request_permission(1, "s", "c", [], protocol_version=version)
    with pytest.raises(ValueError, match="protocol_version"):
        b.todo_plan_entries([], protocol_version=version)


def test_tool_call_update_v1_closed_enums():
    with pytest.raises(ValueError):
        b.tool_call_update("s", "c", status="cancelled")
    with pytest.raises(ValueError):
        b.tool_call_update("s", "c", kind="_x")
    b.tool_call_update("s", "c", protocol_version=2, status="_paused", kind="_x")  # open in v2


# ---------------------------------------------------------------------------------------------
# tool_call_content_chunk (v2), failed_tool_call_update


def test_tool_call_content_chunk():
    item = b.text_content("partial output\u2028 with \x00 control")
    frame = b.tool_call_content_chunk("s2", "c9", item)
    update = {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c9", "content": item}
    check(frame, _session_update("s2", update), 2)
    assert acp_fast.decode(frame).update_kind == "tool_call_content_chunk"

    frame = b.tool_call_content_chunk("s2", "c9", b.terminal_content("t"), meta={"seq": 3})
    update = {
        "sessionUpdate": "tool_call_content_chunk",
        "toolCallId": "c9",
        "content": {"type": "terminal", "terminalId": "t"},
        "_meta": {"seq": 3},
    }
    check(frame, _session_update("s2", update), 2)
    with pytest.raises(TypeError, match="one content item"):
        b.tool_call_content_chunk("s2", "c9", [item])  # type: ignore[arg-type]


@pytest.mark.parametrize("version", [1, 2])
def test_failed_tool_call_update(version):
    frame = b.failed_tool_call_update("s", "c", "No such file: /x", protocol_version=version)
    update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
        "status": "failed",
        "content": [{"type": "content", "content": {"type": "text", "text": "No such file: /x"}}],
    }
    check(frame, _session_update("s", update), version)

    frame = b.failed_tool_call_update(
        "s", "c", FileNotFoundError("gone"), protocol_version=version, raw_output={"exitCode": 2}
    )
    update["content"][0]["content"]["text"] = "gone"
    update["rawOutput"] = {"exitCode": 2}
    check(frame, _session_update("s", update), version)


def test_failed_tool_call_update_exception_without_text():
    frame = b.failed_tool_call_update("s", "c", TimeoutError())
    assert json.loads(frame)["params"]["update"]["content"][0]["content"]["text"] == "TimeoutError"
    with pytest.raises(ValueError, match="cannot clear"):
        b.failed_tool_call_update("s", "c", "x", raw_output=None)
    frame = b.failed_tool_call_update("s", "c", "x", protocol_version=2, raw_output=None)
    assert json.loads(frame)["params"]["update"]["rawOutput"] is None
