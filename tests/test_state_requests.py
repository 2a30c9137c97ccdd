"""Requests the store follows through their answers (mirrors ``rust/state/request.rs`` and
``_fallback/state/request.py``, DESIGN.md §7.10): v1 client terminals (``terminal/*``), file
requests (``fs/*``), ``session/close`` / ``session/delete`` (the session dropped),
``session/load`` / ``session/resume`` replays, and under v2 the requests whose answer has rules in
the schema (``session/new``, ``session/set_title``, ``auth/status``, ...; DESIGN §7.3).

Every behaviour test takes the ``backend`` fixture and runs on both backends (ids rust, python).
"""

from __future__ import annotations

import pytest

from state_helpers import expect_error
from state_model import change_of, error_response, frame, notification, request, response, session_update

A, C = "agent", "client"


def req(id_, method, params):
    return frame(request(id_, method, params))


def ask(store, id_, method, params, source=A):
    """A request (by default the agent's) and the Change it gives."""
    return store.apply(req(id_, method, params), source=source)


def answer(backend, store, id_, result, source=C):
    """The answer to a request (by default the client's) as the five fields of its Change, or None."""
    change = store.apply(response(id_, result), source=source)
    return None if change is None else change_of(backend, change)


def fail(backend, store, id_, code=-32000, message="no", source=C):
    change = store.apply(error_response(id_, code, message), source=source)
    return None if change is None else change_of(backend, change)


def tool_call(sid, tcid, status="pending"):
    return session_update(sid, {"sessionUpdate": "tool_call", "toolCallId": tcid, "title": "t", "status": status})


def permission(id_, sid, tcid="c1"):
    params = {"sessionId": sid, "toolCall": {"toolCallId": tcid}, "options": []}
    return req(id_, "session/request_permission", params)


# ---------------------------------------------------------------------------------------------
# v1 client terminals


def test_client_terminal_lifecycle(backend):
    s = backend.ToolCallStore(1)
    create = {
        "sessionId": "s1",
        "command": "pytest",
        "args": ["-q"],
        "env": [{"name": "A", "value": "1"}],
        "cwd": "/w",
        "outputByteLimit": 1024,
        "_meta": {"m": 1},
    }
    assert ask(s, 1, "terminal/create", create) is None
    assert s.terminals("s1") == {}  # nothing until the answer names the terminal
    assert answer(backend, s, 1, {"terminalId": "t1"}) == ("s1", "terminal", "t1", "created", None)
    assert list(s.terminal("s1", "t1").items()) == [
        ("terminalId", "t1"),
        ("command", "pytest"),
        ("cwd", "/w"),
        ("output", b""),
        ("_meta", {"m": 1}),
        ("args", ["-q"]),
        ("env", [{"name": "A", "value": "1"}]),
        ("outputByteLimit", 1024),
    ]
    ask(s, 2, "terminal/output", {"sessionId": "s1", "terminalId": "t1"})
    assert answer(backend, s, 2, {"output": "héllo ✓\n", "truncated": False}) == (
        "s1",
        "terminal",
        "t1",
        "updated",
        None,
    )
    t = s.terminal("s1", "t1")
    assert (t["output"], t["truncated"], "exitStatus" in t) == ("héllo ✓\n".encode(), False, False)
    ask(s, 3, "terminal/wait_for_exit", {"sessionId": "s1", "terminalId": "t1"})
    assert answer(backend, s, 3, {"exitCode": 1, "signal": None}) == ("s1", "terminal", "t1", "updated", None)
    assert s.terminal("s1", "t1")["exitStatus"] == {"exitCode": 1, "signal": None}
    # the output answer's exitStatus replaces it; kill and release mark the record, which stays
    ask(s, 4, "terminal/output", {"sessionId": "s1", "terminalId": "t1"})
    answer(backend, s, 4, {"output": "done", "truncated": True, "exitStatus": {"exitCode": 0}})
    ask(s, 5, "terminal/kill", {"sessionId": "s1", "terminalId": "t1"})
    assert answer(backend, s, 5, {}) == ("s1", "terminal", "t1", "updated", None)
    ask(s, 6, "terminal/release", {"sessionId": "s1", "terminalId": "t1"})
    assert answer(backend, s, 6, None) == ("s1", "terminal", "t1", "updated", None)
    t = s.terminal("s1", "t1")
    assert (t["output"], t["exitStatus"], t["truncated"], t["killed"], t["released"]) == (
        b"done",
        {"exitCode": 0},
        True,
        True,
        True,
    )
    assert list(t)[-3:] == ["truncated", "killed", "released"]
    # a checkpoint keeps it (output as base64)
    back = backend.ToolCallStore.from_json(s.to_json())
    assert back.terminal("s1", "t1") == t and back.to_json() == s.to_json()


def test_terminal_answers_that_fail_change_nothing(backend):
    s = backend.ToolCallStore(1)
    ask(s, 1, "terminal/create", {"sessionId": "s1", "command": "x"})
    assert fail(backend, s, 1) is None
    assert s.terminals("s1") == {}
    # an answer to a terminal the store does not hold creates it; a second create resets it
    ask(s, 2, "terminal/output", {"sessionId": "s1", "terminalId": "t9"})
    assert answer(backend, s, 2, {"output": "x", "truncated": False}) == ("s1", "terminal", "t9", "created", None)
    ask(s, 3, "terminal/create", {"sessionId": "s1", "command": "y", "exitStatus": {"exitCode": 3}, "output": "no"})
    assert answer(backend, s, 3, {"terminalId": "t9"}) == ("s1", "terminal", "t9", "replaced", None)
    assert s.terminal("s1", "t9") == {"terminalId": "t9", "command": "y", "output": b"", "exitStatus": {"exitCode": 3}}
    ask(s, 4, "terminal/kill", {"sessionId": "s1", "terminalId": "t9"})
    assert fail(backend, s, 4) is None
    assert "killed" not in s.terminal("s1", "t9")


def test_client_terminal_output_keeps_its_bound(backend):
    s = backend.ToolCallStore(1, max_terminal_bytes=4)
    ask(s, 1, "terminal/output", {"sessionId": "s1", "terminalId": "t1"})
    answer(backend, s, 1, {"output": "abcdéf", "truncated": False})
    t = s.terminal("s1", "t1")
    assert (t["output"], t["_truncated"]) == ("déf".encode(), {"droppedBytes": 3})


def test_bad_terminal_requests_and_answers(backend):
    s = backend.ToolCallStore(1)
    data = req(1, "terminal/output", {"sessionId": "s1", "terminalId": 7})
    expect_error(
        backend,
        s,
        data,
        "invalid_terminal_id",
        'expected "params.terminalId" to be a string, found number 7',
        data.index(b"7"),
    )
    data = req(1, "terminal/kill", {"terminalId": "t"})
    expect_error(
        backend,
        s,
        data,
        "invalid_session_id",
        'expected "params.sessionId" to be a string, found none',
        data.index(b'{"terminalId'),
    )
    ask(s, 2, "terminal/create", {"sessionId": "s1", "command": "x"})
    data = response(2, {"terminalId": None})
    expect_error(
        backend,
        s,
        data,
        "invalid_terminal_id",
        'expected "result.terminalId" to be a string, found null',
        data.index(b"null"),
    )
    # the request was answered: the same answer again is nobody's
    assert answer(backend, s, 2, {"terminalId": "t"}) is None
    ask(s, 3, "terminal/output", {"sessionId": "s1", "terminalId": "t"})
    data = response(3, {"output": ["a"]})
    expect_error(
        backend, s, data, "invalid_output", 'expected "result.output" to be a string, found array', data.index(b'["a"]')
    )
    assert s.terminals("s1") == {}
    # params that are not an object: not followed, nothing checked
    assert s.apply(frame(request(4, "terminal/kill", [1])), source=A) is None
    assert answer(backend, s, 4, {}) is None


# ---------------------------------------------------------------------------------------------
# files


def test_file_requests_are_recorded_when_answered(backend):
    s = backend.ToolCallStore(1)
    ask(s, "r1", "fs/read_text_file", {"sessionId": "s1", "path": "/src/ü.py", "line": 10, "limit": 5, "_meta": {}})
    assert s.files("s1") == []
    assert answer(backend, s, "r1", {"content": "naïve ✓\n"}) == ("s1", "file", "/src/ü.py", "appended", None)
    ask(s, "w1", "fs/write_text_file", {"sessionId": "s1", "path": "/a", "content": "日本"})
    assert answer(backend, s, "w1", None) == ("s1", "file", "/a", "appended", None)
    ask(s, "w2", "fs/write_text_file", {"sessionId": "s1", "path": "/b", "content": "x", "line": None})
    assert fail(backend, s, "w2", -32603, "denied") == ("s1", "file", "/b", "appended", None)
    ask(s, "r2", "fs/read_text_file", {"sessionId": "s1", "path": "/c"})
    answer(backend, s, "r2", {"content": 5})
    files = s.files("s1")
    assert files == [
        {"op": "read", "path": "/src/ü.py", "line": 10, "limit": 5, "bytes": len("naïve ✓\n".encode())},
        {"op": "write", "path": "/a", "bytes": 6},
        {"op": "write", "path": "/b", "bytes": None, "error": {"code": -32603, "message": "denied"}},
        {"op": "read", "path": "/c", "bytes": None},
    ]
    assert list(files[0]) == ["op", "path", "line", "limit", "bytes"]
    state = s.state()
    assert state["sessions"]["s1"]["files"] == files
    back = backend.ToolCallStore.from_json(s.to_json())
    assert back.files("s1") == files and back.state() == state
    assert s.files("nope") == []


def test_file_records_are_bounded(backend):
    s = backend.ToolCallStore(1, max_files=2)
    for i in range(4):
        ask(s, i, "fs/read_text_file", {"sessionId": "s1", "path": f"/f{i}"})
        answer(backend, s, i, {"content": ""})
    assert [f["path"] for f in s.files("s1")] == ["/f2", "/f3"]
    assert s.state()["sessions"]["s1"]["_truncated"] == {"droppedFiles": 2}
    assert s.max_files == 2
    back = backend.ToolCallStore.from_json(s.to_json())
    assert back.state() == s.state() and back.max_files == 2
    # 0: not followed, nothing checked
    s = backend.ToolCallStore(1, max_files=0)
    assert ask(s, 1, "fs/read_text_file", {"sessionId": 1, "path": 2}) is None
    assert answer(backend, s, 1, {"content": "x"}) is None
    assert s.state()["sessions"] == {}
    with pytest.raises(ValueError, match="expected max_files to be a non-negative integer or None, found -1"):
        backend.ToolCallStore(max_files=-1)


def test_bad_file_requests(backend):
    s = backend.ToolCallStore(1)
    data = req(1, "fs/write_text_file", {"sessionId": "s1", "content": "x"})
    expect_error(
        backend,
        s,
        data,
        "invalid_path",
        'expected "params.path" to be a string, found none',
        data.index(b'{"sessionId'),
    )
    assert answer(backend, s, 1, None) is None


def test_checkpoint_files_are_checked(backend):
    doc = backend.ToolCallStore(1).state()
    doc["sessions"]["s1"] = {
        "toolCalls": {},
        "terminals": {},
        "plans": {},
        "permissions": [],
        "files": [{"op": "copy", "path": "/a"}],
    }
    with pytest.raises(
        ValueError, match=r'expected "state.sessions.s1.files.0.op" to be "read" or "write", found string'
    ):
        backend.ToolCallStore.from_json(backend.dumps(doc))
    doc["sessions"]["s1"]["files"] = [{"op": "read", "path": 1}]
    with pytest.raises(ValueError, match=r'expected "state.sessions.s1.files.0.path" to be a string, found number'):
        backend.ToolCallStore.from_json(backend.dumps(doc))
    doc["sessions"]["s1"]["files"] = {}
    with pytest.raises(ValueError, match=r'expected "state.sessions.s1.files" to be an array, found object'):
        backend.ToolCallStore.from_json(backend.dumps(doc))
    doc["sessions"]["s1"]["files"] = []
    doc["closedSessions"] = -1
    with pytest.raises(ValueError, match=r'expected "state.closedSessions" to be a non-negative integer, found number'):
        backend.ToolCallStore.from_json(backend.dumps(doc))


# ---------------------------------------------------------------------------------------------
# who asked, who answers


def test_requests_are_keyed_by_sender_and_id(backend):
    s = backend.ToolCallStore(1)
    # the agent's request 1 and the client's request 1 are two requests
    ask(s, 1, "fs/read_text_file", {"sessionId": "s1", "path": "/a"}, source=A)
    ask(s, 1, "session/close", {"sessionId": "s1"}, source=C)
    assert answer(backend, s, 1, {"content": "x"}, source=C) == ("s1", "file", "/a", "appended", None)
    assert answer(backend, s, 1, {}, source=A) == ("s1", "session", None, "closed", None)
    # a method the other side sends is not followed when the source says so
    assert ask(s, 2, "fs/read_text_file", {"sessionId": "s1", "path": "/a"}, source=C) is None
    assert answer(backend, s, 2, {"content": "x"}, source=A) is None
    # "1" and 1 differ; without a source, the agent's requests are looked up first
    ask(s, "1", "fs/read_text_file", {"sessionId": "s2", "path": "/s"}, source=None)
    assert answer(backend, s, 1, {"content": ""}, source=None) is None
    assert answer(backend, s, "1", {"content": ""}, source=None) == ("s2", "file", "/s", "appended", None)
    # a request with the key of a pending one replaces it
    ask(s, 5, "fs/read_text_file", {"sessionId": "s2", "path": "/old"})
    ask(s, 5, "fs/read_text_file", {"sessionId": "s2", "path": "/new"})
    assert answer(backend, s, 5, {"content": ""}) == ("s2", "file", "/new", "appended", None)
    assert answer(backend, s, 5, {"content": ""}) is None


def test_pending_requests_are_bounded(backend):
    s = backend.ToolCallStore(1)
    for i in range(1003):
        ask(s, i, "terminal/kill", {"sessionId": "s1", "terminalId": f"t{i}"})
    for i in range(3):
        assert answer(backend, s, i, {}) is None  # forgotten, the oldest first
    assert answer(backend, s, 3, {}) == ("s1", "terminal", "t3", "created", None)
    assert answer(backend, s, 1002, {}) == ("s1", "terminal", "t1002", "created", None)
    # pending requests are not part of a checkpoint
    back = backend.ToolCallStore.from_json(s.to_json())
    assert answer(backend, back, 500, {}) is None
    assert answer(backend, s, 500, {}) == ("s1", "terminal", "t500", "created", None)


# ---------------------------------------------------------------------------------------------
# closing sessions


def test_close_and_delete_drop_the_session(backend):
    s = backend.ToolCallStore(1, max_tool_calls=3)
    for sid in ("a", "b", "c"):
        s.apply(tool_call(sid, "c1"))
        s.apply(permission(f"p-{sid}", sid), source=A)
    ask(s, "f", "fs/read_text_file", {"sessionId": "a", "path": "/x"})
    ask(s, 1, "session/close", {"sessionId": "a"}, source=C)
    assert answer(backend, s, 1, {}, source=A) == ("a", "session", None, "closed", None)
    assert list(s.state()["sessions"]) == ["b", "c"]
    assert (len(s), s.closed_sessions, s.evicted) == (2, 1, 0)
    assert s.permission("p-a") is None and s.pending_permissions("a") == []
    assert answer(backend, s, "f", {"content": ""}) is None  # the session's pending requests went too
    # the bound counts what is left: two more tool calls fit before one is evicted
    s.apply(tool_call("b", "c2"))
    assert (len(s), s.evicted) == (3, 0)
    s.apply(tool_call("b", "c3"))
    assert (len(s), s.evicted) == (3, 1)
    # a permission answer of a live session still resolves
    assert change_of(backend, s.apply(response("p-c", {"outcome": {"outcome": "cancelled"}}), source=C))[1:4] == (
        "permission",
        "p-c",
        "resolved",
    )
    # delete; a close answered -32002 is a close; another error is not
    ask(s, 2, "session/delete", {"sessionId": "b"}, source=C)
    assert fail(backend, s, 2, -32000, source=A) is None
    assert "b" in s.state()["sessions"]
    ask(s, 3, "session/delete", {"sessionId": "b"}, source=C)
    assert answer(backend, s, 3, None, source=A) == ("b", "session", None, "closed", None)
    ask(s, 4, "session/close", {"sessionId": "c"}, source=C)
    assert fail(backend, s, 4, -32002, "no such session", source=A) == ("c", "session", None, "closed", None)
    assert (s.state()["sessions"], len(s), s.closed_sessions) == ({}, 0, 3)
    # a session the store never held: closed, not counted
    ask(s, 5, "session/close", {"sessionId": "zz"}, source=C)
    assert answer(backend, s, 5, {}, source=A) == ("zz", "session", None, "closed", None)
    assert s.closed_sessions == 3
    doc = s.state()
    assert doc["closedSessions"] == 3
    assert backend.ToolCallStore.from_json(s.to_json()).state() == doc


def test_many_sessions_closed(backend):
    # enough to make the store compact what it keeps of sessions and permission records
    s = backend.ToolCallStore(1, max_tool_calls=1000)
    for i in range(100):
        s.apply(tool_call(f"s{i}", "c", "completed"))
        s.apply(permission(i, f"s{i}", "c"), source=A)
    for i in range(0, 100, 3):
        ask(s, f"x{i}", "session/close", {"sessionId": f"s{i}"}, source=C)
        answer(backend, s, f"x{i}", {}, source=A)
    left = [f"s{i}" for i in range(100) if i % 3]
    assert list(s.state()["sessions"]) == left and len(s) == len(left)
    assert [p["sessionId"] for sid in left for p in s.permissions(sid)] == left
    assert s.state()["permissionOrder"] == left
    assert s.permission(1)["sessionId"] == "s1" and s.permission(3) is None
    back = backend.ToolCallStore.from_json(s.to_json())
    assert back.to_json() == s.to_json()


# ---------------------------------------------------------------------------------------------
# replays


def test_load_replays_the_session_instead_of_doubling_it(backend):
    s = backend.ToolCallStore(2)
    chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "hi"}}
    s.apply(session_update("s1", chunk))
    s.apply(tool_call("s1", "c1"))
    change = ask(s, 1, "session/load", {"sessionId": "s1", "cwd": "/", "mcpServers": []}, source=C)
    assert change_of(backend, change) == ("s1", "session", None, "replaying", None)
    assert s.replaying("s1") and s.entities("s1") == {} and s.tool_calls("s1") == {}
    s.apply(session_update("s1", chunk))  # the replay
    assert answer(backend, s, 1, {}, source=A) == ("s1", "session", None, "replayed", None)
    assert not s.replaying("s1")
    assert s.entities("s1")["agentMessage"]["m1"]["content"] == [chunk["content"]]
    assert s.closed_sessions == 0


def test_resume_replays_only_with_a_cursor(backend):
    s = backend.ToolCallStore(2)
    s.apply(tool_call("s1", "c1"))
    # from another cursor: the state is kept
    change = ask(
        s, 1, "session/resume", {"sessionId": "s1", "cwd": "/", "replayFrom": {"type": "_after", "id": 3}}, source=C
    )
    assert change_of(backend, change) == ("s1", "session", None, "replaying", None)
    assert list(s.tool_calls("s1")) == ["c1"] and s.replaying("s1")
    assert fail(backend, s, 1, source=A) == ("s1", "session", None, "replayed", None)
    assert not s.replaying("s1")
    # from the start: dropped first
    ask(s, 2, "session/resume", {"sessionId": "s1", "cwd": "/", "replayFrom": {"type": "start"}}, source=C)
    assert s.tool_calls("s1") == {} and s.replaying("s1")
    # without replayFrom: no replay (its answer's schema rules still apply, v2)
    assert ask(s, 3, "session/resume", {"sessionId": "s2", "cwd": "/"}, source=C) is None
    assert not s.replaying("s2")
    assert answer(backend, s, 3, {}, source=A) is None
    # replaying is not part of a checkpoint
    assert not backend.ToolCallStore.from_json(s.to_json()).replaying("s1")


# ---------------------------------------------------------------------------------------------
# the schema's rules for answers and notifications (v2)

OPTIONS = [{"id": "model", "name": "Model", "type": "select", "currentValue": "a", "options": []}]
COMMANDS = [{"name": "test", "description": "run the tests"}]


def test_session_answers_set_options_commands_and_title(backend):
    s = backend.ToolCallStore(2)
    ask(s, 1, "session/new", {"cwd": "/", "mcpServers": []}, source=C)
    result = {"sessionId": "s1", "configOptions": OPTIONS, "availableCommands": COMMANDS}
    assert answer(backend, s, 1, result, source=A) == ("s1", "configOptions", None, "created", None)
    assert s.entities("s1") == {"availableCommands": COMMANDS, "configOptions": OPTIONS}
    # set_title: the title of sessionInfo, in place
    info = {"sessionUpdate": "session_info_update", "title": "old", "updatedAt": "2026-01-01"}
    s.apply(session_update("s1", info))
    ask(s, 2, "session/set_title", {"sessionId": "s1", "title": "new "}, source=C)
    assert answer(backend, s, 2, {"title": "new"}, source=A) == ("s1", "sessionInfo", None, "updated", None)
    assert list(s.entities("s1")["sessionInfo"].items()) == [("title", "new"), ("updatedAt", "2026-01-01")]
    # set_config_option; a member absent or null leaves the target as it is
    ask(s, 3, "session/set_config_option", {"sessionId": "s1", "configId": "model", "value": "b"}, source=C)
    assert answer(backend, s, 3, {"configOptions": []}, source=A) == ("s1", "configOptions", None, "replaced", None)
    ask(s, 4, "session/fork", {"sessionId": "s1", "cwd": "/"}, source=C)
    assert answer(backend, s, 4, {"sessionId": "s2", "configOptions": None}, source=A) is None
    assert s.entities("s1")["configOptions"] == [] and s.entities("s2") == {}
    # an error answer changes nothing
    ask(s, 5, "session/set_title", {"sessionId": "s1", "title": "x"}, source=C)
    assert fail(backend, s, 5, source=A) is None
    assert s.entities("s1")["sessionInfo"]["title"] == "new"
    back = backend.ToolCallStore.from_json(s.to_json())
    assert back.state() == s.state()


def test_auth_status_is_the_agents(backend):
    s = backend.ToolCallStore(2)
    ask(s, 1, "auth/status", {}, source=C)
    assert answer(backend, s, 1, {"state": "authenticated", "accounts": []}, source=A) == (
        None,
        "authStatus",
        None,
        "created",
        None,
    )
    change = s.apply(frame(notification("auth/status_update", {"state": "unauthenticated"})), source=A)
    assert change_of(backend, change) == (None, "authStatus", None, "replaced", None)
    assert s.agent_entities() == {"authStatus": {"state": "unauthenticated"}}
    doc = s.state()
    assert doc["agent"] == {"authStatus": {"state": "unauthenticated"}} and list(doc)[5:7] == ["agent", "sessions"]
    back = backend.ToolCallStore.from_json(s.to_json())
    assert back.agent_entities() == s.agent_entities() and back.to_json() == s.to_json()


def test_answer_rules_are_v2_only(backend):
    for s in (backend.ToolCallStore(1), backend.ToolCallStore(2, max_entities=0)):
        assert ask(s, 1, "session/new", {"cwd": "/"}, source=C) is None
        assert answer(backend, s, 1, {"sessionId": "s1", "configOptions": OPTIONS}, source=A) is None
        assert s.apply(frame(notification("auth/status_update", {"state": "x"}))) is None
        assert s.state()["sessions"] == {} and s.agent_entities() == {}


def test_a_v1_recording_with_client_methods(backend):
    # feed() of a recorded v1 exchange, directions unknown
    lines = [
        req(0, "initialize", {"protocolVersion": 1}),
        response(0, {"protocolVersion": 1}),
        req("a1", "terminal/create", {"sessionId": "s1", "command": "make"}),
        response("a1", {"terminalId": "t"}),
        req("a2", "fs/write_text_file", {"sessionId": "s1", "path": "/o", "content": "ok"}),
        response("a2", None),
        req("a3", "terminal/wait_for_exit", {"sessionId": "s1", "terminalId": "t"}),
        response("a3", {"exitCode": 0}),
    ]
    s = backend.ToolCallStore()
    out = s.feed(b"\n".join(lines) + b"\n")
    assert [tuple(c) for c in out] == [
        (None, "protocol", 1, "negotiated", None),
        ("s1", "terminal", "t", "created", None),
        ("s1", "file", "/o", "appended", None),
        ("s1", "terminal", "t", "updated", None),
    ]
    assert s.terminal("s1", "t") == {"terminalId": "t", "command": "make", "output": b"", "exitStatus": {"exitCode": 0}}


def test_numbers_keep_their_text(backend):
    s = backend.ToolCallStore(1)
    s.apply(b'{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/a","line":1E1}}')
    s.apply(b'{"jsonrpc":"2.0","id":1,"result":{"content":""}}')
    s.apply(b'{"jsonrpc":"2.0","id":2,"method":"terminal/create","params":{"sessionId":"s","outputByteLimit":2.50}}')
    s.apply(b'{"jsonrpc":"2.0","id":2,"result":{"terminalId":"t"}}')
    doc = s.to_json()
    assert b'"line":1E1' in doc and b'"outputByteLimit":2.50' in doc
    assert s.files("s")[0]["line"] == 10.0 and s.terminal("s", "t")["outputByteLimit"] == 2.5
    assert backend.ToolCallStore.from_json(doc).to_json() == doc


# ---------------------------------------------------------------------------------------------
# more of the spec: errors of every terminal method, the terminal bound, who answers without a
# source, what a dropped session takes with it, the checkpoint's members and their order


def test_every_terminal_error_answer_changes_nothing(backend):
    s = backend.ToolCallStore(1)
    ask(s, 1, "terminal/create", {"sessionId": "s1", "command": "make"})
    answer(backend, s, 1, {"terminalId": "t1"})
    before = s.to_json()
    for i, method in enumerate(("terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release")):
        ask(s, 10 + i, method, {"sessionId": "s1", "terminalId": "t1"})
        assert fail(backend, s, 10 + i, -32603, "gone") is None
        # an error answer to a terminal the store does not hold does not create it either
        ask(s, 20 + i, method, {"sessionId": "s1", "terminalId": "t2"})
        assert fail(backend, s, 20 + i) is None
    assert s.to_json() == before
    assert s.terminal("s1", "t1") == {"terminalId": "t1", "command": "make", "output": b""}


def test_wait_for_exit_and_output_create_a_terminal_not_held(backend):
    s = backend.ToolCallStore(1)
    ask(s, 1, "terminal/wait_for_exit", {"sessionId": "s1", "terminalId": "t1"})
    assert answer(backend, s, 1, {"exitCode": None, "signal": "SIGKILL"}) == ("s1", "terminal", "t1", "created", None)
    assert s.terminal("s1", "t1") == {
        "terminalId": "t1",
        "output": b"",
        "exitStatus": {"exitCode": None, "signal": "SIGKILL"},
    }
    # a wait_for_exit answer that is not an object sets nothing
    ask(s, 2, "terminal/wait_for_exit", {"sessionId": "s1", "terminalId": "t2"})
    assert answer(backend, s, 2, None) == ("s1", "terminal", "t2", "created", None)
    assert s.terminal("s1", "t2") == {"terminalId": "t2", "output": b""}
    # output: truncated and exitStatus null are left out; the output replaces the one held
    ask(s, 3, "terminal/output", {"sessionId": "s1", "terminalId": "t2"})
    answer(backend, s, 3, {"output": "first", "truncated": None, "exitStatus": None})
    ask(s, 4, "terminal/output", {"sessionId": "s1", "terminalId": "t2"})
    assert answer(backend, s, 4, {"output": "second"}) == ("s1", "terminal", "t2", "updated", None)
    assert s.terminal("s1", "t2") == {"terminalId": "t2", "output": b"second"}


def test_client_terminals_keep_the_terminal_bound(backend):
    def create(s, id_, tid):
        ask(s, id_, "terminal/create", {"sessionId": "s1", "command": tid})
        return answer(backend, s, id_, {"terminalId": tid})

    s = backend.ToolCallStore(1, max_terminals=2)
    for i in range(3):
        assert create(s, i, f"t{i}") == ("s1", "terminal", f"t{i}", "created", None)
    assert list(s.terminals("s1")) == ["t1", "t2"]  # none exited: the oldest dropped
    assert s.state()["sessions"]["s1"]["_truncated"] == {"droppedTerminals": 1}
    # the exited one goes first: by a wait_for_exit answer, or an output answer with exitStatus
    ask(s, 10, "terminal/wait_for_exit", {"sessionId": "s1", "terminalId": "t2"})
    answer(backend, s, 10, {"exitCode": 0})
    create(s, 3, "t3")
    assert list(s.terminals("s1")) == ["t1", "t3"]
    ask(s, 11, "terminal/output", {"sessionId": "s1", "terminalId": "t3"})
    answer(backend, s, 11, {"output": "", "truncated": False, "exitStatus": {"exitCode": 1}})
    create(s, 4, "t4")
    assert list(s.terminals("s1")) == ["t1", "t4"]
    # an answer to a terminal not held creates one, under the bound too
    ask(s, 12, "terminal/kill", {"sessionId": "s1", "terminalId": "t5"})
    assert answer(backend, s, 12, {}) == ("s1", "terminal", "t5", "created", None)
    assert list(s.terminals("s1")) == ["t4", "t5"]
    assert s.state()["sessions"]["s1"]["_truncated"] == {"droppedTerminals": 4}
    back = backend.ToolCallStore.from_json(s.to_json())
    assert back.state() == s.state()


def test_an_answer_without_a_source_looks_up_the_agents_requests_first(backend):
    s = backend.ToolCallStore(1)
    ask(s, 7, "fs/read_text_file", {"sessionId": "s1", "path": "/a"}, source=A)
    ask(s, 7, "session/close", {"sessionId": "s1"}, source=C)
    assert answer(backend, s, 7, {"content": "x"}, source=None) == ("s1", "file", "/a", "appended", None)
    assert answer(backend, s, 7, {}, source=None) == ("s1", "session", None, "closed", None)
    assert answer(backend, s, 7, {}, source=None) is None
    # a request without a source is followed whoever sends its method; the client's answer
    # finds an agent's request only, the agent's answer a client's only
    ask(s, 8, "session/delete", {"sessionId": "s2"}, source=None)
    assert answer(backend, s, 8, {}, source=C) is None
    assert answer(backend, s, 8, {}, source=A) == ("s2", "session", None, "closed", None)


def test_a_replaced_request_becomes_the_newest(backend):
    s = backend.ToolCallStore(1)
    ask(s, "first", "terminal/kill", {"sessionId": "s1", "terminalId": "old"})
    for i in range(999):
        ask(s, i, "terminal/kill", {"sessionId": "s1", "terminalId": f"t{i}"})
    ask(s, "first", "terminal/kill", {"sessionId": "s1", "terminalId": "new"})  # 1000 pending
    ask(s, "extra", "terminal/kill", {"sessionId": "s1", "terminalId": "x"})  # 0 is forgotten
    assert answer(backend, s, 0, {}) is None
    assert answer(backend, s, "first", {}) == ("s1", "terminal", "new", "created", None)
    assert answer(backend, s, 1, {}) == ("s1", "terminal", "t1", "created", None)


def test_other_requests_are_not_followed_nor_checked(backend):
    s = backend.ToolCallStore(1)
    before = s.to_json()
    assert ask(s, 1, "session/prompt", {"sessionId": 5, "prompt": []}, source=C) is None
    assert ask(s, 2, "_x/terminal", {"sessionId": 5}) is None
    # a method sent by the other side: not followed, nothing checked
    assert ask(s, 3, "terminal/create", {"sessionId": 5}, source=C) is None
    assert ask(s, 4, "session/close", {"sessionId": 5}, source=A) is None
    assert ask(s, 5, "session/load", [], source=C) is None
    for id_ in range(1, 6):
        assert answer(backend, s, id_, {"terminalId": "t"}, source=None) is None
    assert s.to_json() == before


def test_file_records_under_v2_and_without_a_bound(backend):
    s = backend.ToolCallStore(2, max_files=None)
    for i in range(1005):
        ask(s, i, "fs/write_text_file", {"sessionId": "s1", "path": f"/{i}", "content": None if i % 2 else "é"})
        answer(backend, s, i, None)
    files = s.files("s1")
    assert len(files) == 1005 and "_truncated" not in s.state()["sessions"]["s1"]
    assert files[:2] == [{"op": "write", "path": "/0", "bytes": 2}, {"op": "write", "path": "/1", "bytes": None}]
    doc = s.state()
    assert doc["maxFiles"] is None
    back = backend.ToolCallStore.from_json(s.to_json())
    assert back.max_files is None and back.state() == doc
    # an error answer to a read keeps line and limit; its error as received
    ask(s, "r", "fs/read_text_file", {"sessionId": "s1", "path": "/r", "line": 0, "limit": None})
    change = s.apply(b'{"jsonrpc":"2.0","id":"r","error":{"code":-32002,"message":"gone","data":[1.50]}}', source=C)
    assert change_of(backend, change) == ("s1", "file", "/r", "appended", None)
    assert s.files("s1")[-1] == {
        "op": "read",
        "path": "/r",
        "line": 0,
        "bytes": None,
        "error": {"code": -32002, "message": "gone", "data": [1.5]},
    }
    assert b'"data":[1.50]' in s.to_json()


def test_closing_drops_everything_the_session_holds(backend):
    s = backend.ToolCallStore(2, max_tool_calls=10)
    chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text", "text": "hi"}}
    plan = {"sessionUpdate": "plan", "entries": [{"content": "x", "priority": "low", "status": "pending"}]}
    for sid in ("a", "b"):
        s.apply(tool_call(sid, "c1", "completed"))
        s.apply(session_update(sid, chunk))
        s.apply(session_update(sid, plan))
        s.apply(session_update(sid, {"sessionUpdate": "_custom", "n": 1}))
        s.apply(permission(f"p-{sid}", sid), source=A)
        ask(s, f"t-{sid}", "terminal/create", {"sessionId": sid, "command": "x"})
        answer(backend, s, f"t-{sid}", {"terminalId": "t1"})
        ask(s, f"f-{sid}", "fs/read_text_file", {"sessionId": sid, "path": "/x"})
        answer(backend, s, f"f-{sid}", {"content": "x"})
        ask(s, f"k-{sid}", "terminal/kill", {"sessionId": sid, "terminalId": "t1"})  # pending
    kept = s.state()["sessions"]["b"]
    assert list(kept) == ["toolCalls", "terminals", "plans", "permissions", "updates", "entities", "files"]
    ask(s, "close", "session/close", {"sessionId": "a"}, source=C)
    assert answer(backend, s, "close", None, source=A) == ("a", "session", None, "closed", None)
    assert s.state()["sessions"] == {"b": kept}
    assert (s.get("a", "c1"), s.tool_calls("a"), s.terminals("a"), s.plans("a")) == (None, {}, {}, {})
    assert (s.entities("a"), s.updates("a"), s.files("a"), s.permissions("a")) == ({}, [], [], [])
    assert (s.cancel_responses("a"), list(s.snapshot()), len(s), s.evicted, s.closed_sessions) == ([], ["b"], 1, 0, 1)
    assert s.state()["permissionOrder"] == ["b"]
    # its pending requests and permission request are forgotten: their answers are nobody's
    assert answer(backend, s, "k-a", {}) is None
    assert s.apply(response("p-a", {"outcome": {"outcome": "cancelled"}}), source=C) is None
    assert answer(backend, s, "k-b", {}) == ("b", "terminal", "t1", "updated", None)
    # the session comes back empty when something names it again
    s.apply(tool_call("a", "c2"))
    assert list(s.tool_calls("a")) == ["c2"] and s.files("a") == [] and len(s) == 2


def test_a_replay_of_a_session_not_held(backend):
    s = backend.ToolCallStore(1)
    change = ask(s, 1, "session/load", {"sessionId": "n", "cwd": "/", "mcpServers": []}, source=C)
    assert change_of(backend, change) == ("n", "session", None, "replaying", None)
    assert s.replaying("n") and not s.replaying("other")
    assert s.state()["sessions"] == {"n": {"toolCalls": {}, "terminals": {}, "plans": {}, "permissions": []}}
    s.apply(tool_call("n", "c1"))
    assert fail(backend, s, 1, source=A) == ("n", "session", None, "replayed", None)
    assert not s.replaying("n") and list(s.tool_calls("n")) == ["c1"]
    # a session closed while replaying: the load is forgotten with it
    ask(s, 2, "session/load", {"sessionId": "n", "cwd": "/", "mcpServers": []}, source=C)
    assert s.tool_calls("n") == {}
    ask(s, 3, "session/close", {"sessionId": "n"}, source=C)
    assert answer(backend, s, 3, {}, source=A) == ("n", "session", None, "closed", None)
    assert answer(backend, s, 2, {}, source=A) is None
    assert (s.replaying("n"), s.state()["sessions"], s.closed_sessions) == (False, {}, 1)
    # a load whose sessionId is not a string is refused
    data = req(4, "session/load", {"sessionId": None, "cwd": "/"})
    expect_error(
        backend,
        s,
        data,
        "invalid_session_id",
        'expected "params.sessionId" to be a string, found null',
        data.index(b"null"),
    )


def test_checkpoint_members_of_requests(backend):
    s = backend.ToolCallStore(2, max_files=1, max_tool_calls=5)
    assert "maxFiles" not in backend.ToolCallStore(2).state()
    assert "closedSessions" not in s.state()
    s.apply(tool_call("s1", "c1"))
    s.apply(session_update("s1", {"sessionUpdate": "_u"}))
    s.apply(session_update("s1", {"sessionUpdate": "session_info_update", "title": "T"}))
    for i in range(3):
        ask(s, i, "fs/read_text_file", {"sessionId": "s1", "path": f"/{i}", "limit": 2})
        answer(backend, s, i, {"content": "ab"})
    held = s.state()["sessions"]["s1"]
    assert list(held) == [
        "toolCalls",
        "terminals",
        "plans",
        "permissions",
        "updates",
        "entities",
        "files",
        "_truncated",
    ]
    assert (held["files"], held["_truncated"]) == (
        [{"op": "read", "path": "/2", "limit": 2, "bytes": 2}],
        {"droppedFiles": 2},
    )
    assert backend.ToolCallStore.from_json(s.to_json()).state() == s.state()
    s.apply(tool_call("s2", "c1"))
    ask(s, "c", "session/delete", {"sessionId": "s2"}, source=C)
    answer(backend, s, "c", {}, source=A)
    ask(s, "pending", "fs/read_text_file", {"sessionId": "s1", "path": "/p"})
    ask(s, "load", "session/load", {"sessionId": "s1", "cwd": "/"}, source=C)
    s.apply(tool_call("s1", "c1"))
    doc = s.state()
    assert list(doc) == [
        "format",
        "protocolVersion",
        "negotiatedVersion",
        "maxToolCalls",
        "maxFiles",
        "evicted",
        "closedSessions",
        "sessions",
        "permissionOrder",
    ]
    assert (doc["maxFiles"], doc["closedSessions"]) == (1, 1)
    # the load dropped s1's records and its pending read; the replay rebuilds the tool call
    assert list(doc["sessions"]["s1"]) == ["toolCalls", "terminals", "plans", "permissions"]
    assert s.replaying("s1")
    back = backend.ToolCallStore.from_json(s.to_json())
    assert back.state() == doc and back.to_json() == s.to_json()
    assert (back.max_files, back.closed_sessions, back.replaying("s1")) == (1, 1, False)
    assert answer(backend, back, "load", {}, source=A) is None  # pending requests are not saved
    assert answer(backend, s, "load", {}, source=A) == ("s1", "session", None, "replayed", None)
    assert answer(backend, s, "pending", {"content": ""}) is None
