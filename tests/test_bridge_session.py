"""Unit tests of the v1 <-> v2 bridge (docs/BRIDGE.md): ``initialize``, prompt turns, permission
requests and their answers, the session methods; each rewrite and each strict refusal, on both
backends."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

import acp_fast
from acp_fast.bridge import REJECT_OPTION, Bridge
from acp_fast.cli import _shapes
from bridge_checks import checker, frame, refused, tcu, upd, updates, valid


def req(rid: Any, method: str, params: Any) -> bytes:
    return frame({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


def res(rid: Any, result: Any) -> bytes:
    return frame({"jsonrpc": "2.0", "id": rid, "result": result})


def result_of(frames: List[bytes], version: int, method: str) -> Dict[str, Any]:
    """The one response in ``frames``, checked against the result schema of ``method``."""
    assert len(frames) == 1, frames
    result: Dict[str, Any] = acp_fast.loads(frames[0])["result"]
    info = _shapes.protocol(version).get(method)
    assert info is not None and info.result_def
    assert checker(version).check(info.result_def, result, ("result",)) == []
    return result


def params_of(frames: List[bytes], version: int) -> Dict[str, Any]:
    params: Dict[str, Any] = acp_fast.loads(valid(frames, version)[-1])["params"]
    return params


# ---------------------------------------------------------------------------------------------
# initialize

V1_INIT = {
    "protocolVersion": 1,
    "clientCapabilities": {
        "fs": {"readTextFile": True, "writeTextFile": True},
        "terminal": True,
        "auth": {"terminal": True},
    },
    "clientInfo": {"name": "zed", "version": "1.0"},
    "_meta": {"trace": 1},
}
V2_INIT = {"protocolVersion": 2, "info": {"name": "zed", "version": "2.0"}, "capabilities": {"auth": {"terminal": {}}}}
V2_ANSWER = {
    "protocolVersion": 2,
    "info": {"name": "acme", "version": "2.0"},
    "capabilities": {
        "session": {"prompt": {"image": {}, "embeddedContext": {}}, "mcp": {"http": {}, "stdio": {}}, "delete": {}},
        "auth": {},
    },
    "authMethods": [
        {"type": "agent", "methodId": "login", "name": "Log in"},
        {"type": "terminal", "methodId": "tty", "name": "TTY", "env": [{"name": "A", "value": "1"}]},
        {"type": "_oauth", "methodId": "o", "name": "OAuth"},
    ],
}
V1_ANSWER = {
    "protocolVersion": 1,
    "agentCapabilities": {
        "loadSession": True,
        "promptCapabilities": {"image": True, "audio": False},
        "mcpCapabilities": {"http": True, "sse": False},
        "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "delete": {}},
    },
    "authMethods": [
        {"id": "login", "name": "Log in"},
        {"type": "terminal", "id": "tty", "name": "TTY", "env": {"A": "1"}},
    ],
    "agentInfo": {"name": "acme", "version": "1.0"},
}


def test_initialize_v1_editor(v1_editor: Bridge) -> None:
    params = params_of(v1_editor.from_editor(req(1, "initialize", V1_INIT)), 2)
    assert params == {
        "protocolVersion": 2,
        "_meta": {"trace": 1},
        "info": {"name": "zed", "version": "1.0"},
        "capabilities": {"auth": {"terminal": {}}},
    }
    result = result_of(v1_editor.from_agent(res(1, V2_ANSWER)), 1, "initialize")
    assert result == {
        "protocolVersion": 1,
        "agentInfo": {"name": "acme", "version": "2.0"},
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": False},
            "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "delete": {}},
            "auth": {},
        },
        "authMethods": [
            {"id": "login", "name": "Log in"},
            {"type": "terminal", "id": "tty", "name": "TTY", "env": {"A": "1"}},
        ],
    }


def test_initialize_v2_editor(v2_editor: Bridge) -> None:
    params = params_of(v2_editor.from_editor(req(1, "initialize", V2_INIT)), 1)
    assert params == {
        "protocolVersion": 1,
        "clientInfo": {"name": "zed", "version": "2.0"},
        "clientCapabilities": {
            "fs": {"readTextFile": False, "writeTextFile": False},
            "terminal": False,
            "subagents": {},
            "auth": {"terminal": True},
        },
    }
    result = result_of(v2_editor.from_agent(res(1, V1_ANSWER)), 2, "initialize")
    assert result == {
        "protocolVersion": 2,
        "info": {"name": "acme", "version": "1.0"},
        "capabilities": {
            "session": {"prompt": {"image": {}}, "mcp": {"stdio": {}, "http": {}}, "delete": {}},
        },
        "authMethods": [
            {"type": "agent", "methodId": "login", "name": "Log in"},
            {"type": "terminal", "methodId": "tty", "name": "TTY", "env": [{"name": "A", "value": "1"}]},
        ],
    }


def test_initialize_without_info(v1_editor: Bridge, v2_editor: Bridge, strict_v1: Bridge, strict_v2: Bridge) -> None:
    bare = {"protocolVersion": 1}
    assert params_of(v1_editor.from_editor(req(1, "initialize", bare)), 2)["info"] == {
        "name": "unknown",
        "version": "unknown",
    }
    refused(strict_v1, "editor", req(1, "initialize", bare), r"no clientInfo \(v2 requires info\)")
    v2_editor.from_editor(req(1, "initialize", V2_INIT))
    strict_v2.from_editor(req(1, "initialize", V2_INIT))
    answer = {
        "protocolVersion": 1,
        "agentCapabilities": {"sessionCapabilities": {"list": {}, "resume": {}, "close": {}}},
    }
    assert result_of(v2_editor.from_agent(res(1, answer)), 2, "initialize")["info"]["name"] == "unknown"
    refused(strict_v2, "agent", res(1, answer), "no agentInfo")
    lacking = {**V1_ANSWER, "agentCapabilities": {"loadSession": True}}
    refused(strict_v2, "agent", res(1, lacking), "no session list/resume/close")
    error = refused(strict_v1, "editor", req(1, "initialize", bare), "no clientInfo")
    assert error.what == "initialize" and error.target == 2


def test_initialize_strict_auth_methods(strict_v1: Bridge) -> None:
    strict_v1.from_editor(req(1, "initialize", V1_INIT))
    refused(strict_v1, "agent", res(1, V2_ANSWER), "auth method type '_oauth'")
    ok = {**V2_ANSWER, "authMethods": V2_ANSWER["authMethods"][:2]}
    assert acp_fast.loads(strict_v1.from_agent(res(1, ok))[0])["result"]["protocolVersion"] == 1


def test_agent_answering_the_editors_version_makes_a_passthrough(v1_editor: Bridge) -> None:
    v1_editor.from_editor(req(1, "initialize", V1_INIT))
    answer = res(1, V1_ANSWER)
    assert v1_editor.from_agent(answer) == [answer]
    assert v1_editor.passthrough
    data = tcu(title="x", status="cancelled")
    assert v1_editor.from_agent(data)[0] is data


# ---------------------------------------------------------------------------------------------
# prompt turns


def prompt(rid: Any, sid: str = "s1") -> bytes:
    return req(rid, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]})


def idle(sid: str = "s1", **extra: Any) -> bytes:
    return upd(sid, sessionUpdate="state_update", state="idle", **extra)


def test_v2_turn_ends_the_v1_prompt(v1_editor: Bridge) -> None:
    data = prompt(7)
    assert v1_editor.from_editor(data)[0] is data
    assert v1_editor.from_agent(res(7, {"_meta": {"a": 1}})) == []  # the acknowledgement waits
    assert v1_editor.from_agent(upd(sessionUpdate="state_update", state="running")) == []
    assert v1_editor.from_agent(upd(sessionUpdate="state_update", state="requires_action")) == []
    out = v1_editor.from_agent(idle(stopReason="max_tokens"))
    assert result_of(out, 1, "session/prompt") == {"stopReason": "max_tokens", "_meta": {"a": 1}}
    assert acp_fast.loads(out[0])["id"] == 7


def test_v2_turn_ending_before_its_acknowledgement(v1_editor: Bridge) -> None:
    v1_editor.from_editor(prompt("p1"))
    assert result_of(v1_editor.from_agent(idle()), 1, "session/prompt") == {"stopReason": "end_turn"}
    assert v1_editor.from_agent(res("p1", {})) == []  # the late acknowledgement is dropped
    assert v1_editor.from_agent(idle()) == []  # no prompt pending


def test_v2_turn_stop_reasons(v1_editor: Bridge, strict_v1: Bridge) -> None:
    for bridge in (v1_editor, strict_v1):
        bridge.from_editor(prompt(1))
    assert result_of(v1_editor.from_agent(idle(stopReason="_budget")), 1, "session/prompt") == {
        "stopReason": "end_turn"
    }
    refused(strict_v1, "agent", idle(stopReason="_budget"), "the stop reason '_budget'")
    refused(strict_v1, "agent", upd(sessionUpdate="state_update", state="_paused"), "the session state '_paused'")
    assert acp_fast.loads(strict_v1.from_agent(idle(stopReason="cancelled"))[0])["result"] == {
        "stopReason": "cancelled"
    }


def test_v2_prompt_error_passes(v1_editor: Bridge) -> None:
    v1_editor.from_editor(prompt(3))
    error = frame({"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message": "boom"}})
    assert v1_editor.from_agent(error) == [error]
    assert v1_editor.from_agent(idle()) == []


def test_v1_turn_is_acknowledged_then_idle(v2_editor: Bridge) -> None:
    v2_editor.from_editor(prompt(4))
    out = v2_editor.from_agent(upd(sessionUpdate="agent_message_chunk", content={"type": "text", "text": "x"}))
    assert len(out) == 4
    # the acknowledgement names the user message the prompt inserted (required after v2 alpha.3),
    # and that message is echoed (agents MUST echo it during the live session)
    assert result_of(out[:1], 2, "session/prompt") == {"messageId": "acp-fast-message-1"}
    assert updates(valid(out[1:3], 2)) == [
        {
            "sessionUpdate": "user_message",
            "messageId": "acp-fast-message-1",
            "content": [{"type": "text", "text": "hi"}],
        },
        {"sessionUpdate": "state_update", "state": "running"},
    ]
    assert updates(out[3:])[0]["messageId"] not in (None, "acp-fast-message-1")  # the agent's message: another
    assert len(v2_editor.from_agent(upd(sessionUpdate="usage_update", used=1, size=2))) == 1  # acknowledged once
    out = v2_editor.from_agent(res(4, {"stopReason": "cancelled"}))
    assert updates(valid(out, 2)) == [{"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}]


def test_v1_turn_without_updates(v2_editor: Bridge) -> None:
    v2_editor.from_editor(prompt(4))
    out = v2_editor.from_agent(res(4, {"stopReason": "end_turn", "_meta": {"m": 1}}))
    assert result_of(out[:1], 2, "session/prompt") == {"messageId": "acp-fast-message-1", "_meta": {"m": 1}}
    assert updates(valid(out[1:], 2)) == [
        {
            "sessionUpdate": "user_message",
            "messageId": "acp-fast-message-1",
            "content": [{"type": "text", "text": "hi"}],
        },
        {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"},
    ]


def test_v1_prompt_errors(v2_editor: Bridge, strict_v2: Bridge) -> None:
    error = frame({"jsonrpc": "2.0", "id": 5, "error": {"code": -32603, "message": "boom"}})
    v2_editor.from_editor(prompt(5))
    assert v2_editor.from_agent(error) == [error]  # before the acknowledgement: the error itself
    for bridge in (v2_editor, strict_v2):
        bridge.from_editor(prompt(5))
        bridge.from_agent(upd(sessionUpdate="usage_update", used=1, size=2))
    assert updates(v2_editor.from_agent(error)) == [{"sessionUpdate": "state_update", "state": "idle"}]
    refused(strict_v2, "agent", error, "an error after the prompt was acknowledged")


def test_prompt_blocks_v1_does_not_know(v2_editor: Bridge, strict_v2: Bridge) -> None:
    blocks = [{"type": "text", "text": "a"}, {"type": "_sketch", "svg": "<svg/>"}]
    data = req(1, "session/prompt", {"sessionId": "s1", "prompt": blocks})
    assert params_of(v2_editor.from_editor(data), 1)["prompt"] == blocks[:1]
    refused(strict_v2, "editor", data, "a prompt block of type '_sketch'")


# ---------------------------------------------------------------------------------------------
# permission requests

OPTIONS = [
    {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]


def ask_v2(rid: Any, call: Dict[str, Any], **extra: Any) -> bytes:
    params = {
        "sessionId": "s1",
        "title": "Allow?",
        "subject": {"type": "tool_call", "toolCall": call},
        "options": OPTIONS,
    }
    return req(rid, "session/request_permission", {**params, **extra})


def test_v2_permission_for_a_v1_editor(v1_editor: Bridge) -> None:
    out = v1_editor.from_agent(ask_v2(9, {"toolCallId": "c1", "title": "Run", "kind": "execute"}, _meta={"x": 1}))
    assert updates(valid(out[:1], 1))[0]["sessionUpdate"] == "tool_call"  # a tool call first seen here
    params = params_of(out, 1)
    assert params == {
        "sessionId": "s1",
        "toolCall": {"toolCallId": "c1", "title": "Run", "kind": "execute"},
        "options": OPTIONS,
        "_meta": {"x": 1},
    }
    answer = res(9, {"outcome": {"outcome": "selected", "optionId": "yes"}})
    assert v1_editor.from_editor(answer)[0] is answer
    out = v1_editor.from_agent(ask_v2(10, {"toolCallId": "c1", "status": "cancelled", "rawInput": {"a": 1}}))
    assert params_of(out, 1)["toolCall"] == {"toolCallId": "c1", "status": "failed", "rawInput": {"a": 1}}
    assert v1_editor.store.permission(10)["toolCallId"] == "c1"


def test_v2_permission_strict(strict_v1: Bridge) -> None:
    strict_v1.from_agent(tcu(title="Run"))
    call = {"toolCallId": "c1"}
    refused(strict_v1, "agent", ask_v2(1, call, description="Really?"), "a description")
    refused(strict_v1, "agent", ask_v2(1, call), "a title")  # "Allow?" is not the tool call's title
    odd = [{"optionId": "later", "name": "Later", "kind": "_ask_later"}]
    refused(strict_v1, "agent", ask_v2(1, call, title="Run", options=odd), "the permission option kind '_ask_later'")
    refused(strict_v1, "agent", ask_v2(1, {"toolCallId": "c1", "status": "cancelled"}, title="Run"), "status")
    out = strict_v1.from_agent(ask_v2(1, call, title="Run"))
    assert params_of(out, 1)["toolCall"] == {"toolCallId": "c1"}


def test_v2_permission_option_kinds_fail_closed(v1_editor: Bridge) -> None:
    odd = [{"optionId": "later", "name": "Later", "kind": "_ask_later"}]
    out = v1_editor.from_agent(ask_v2(1, {"toolCallId": "c1", "title": "T"}, options=odd))
    assert params_of(out, 1)["options"] == [{"optionId": "later", "name": "Later", "kind": "reject_once"}]


@pytest.mark.parametrize(
    ("subject", "call"),
    [
        (None, {"toolCallId": "acp-fast-permission-3", "title": "Allow?"}),
        ({"type": "_custom", "x": 1}, {"toolCallId": "acp-fast-permission-3", "title": "Allow?"}),
        (
            {"type": "command", "command": "rm -rf build", "cwd": "/w"},
            {
                "toolCallId": "acp-fast-permission-3",
                "title": "Allow?",
                "kind": "execute",
                "rawInput": {"command": "rm -rf build", "cwd": "/w"},
            },
        ),
        (
            {"type": "command", "command": "ls", "cwd": "/w", "toolCallId": "c7"},
            {"toolCallId": "c7", "title": "Allow?", "kind": "execute", "rawInput": {"command": "ls", "cwd": "/w"}},
        ),
    ],
)
def test_v2_permission_without_a_tool_call(
    v1_editor: Bridge, strict_v1: Bridge, subject: Any, call: Dict[str, Any]
) -> None:
    data = req(
        3, "session/request_permission", {"sessionId": "s1", "title": "Allow?", "subject": subject, "options": OPTIONS}
    )
    assert params_of(v1_editor.from_agent(data), 1)["toolCall"] == call
    refused(strict_v1, "agent", data, "a permission subject of type")


def test_v2_command_subject_about_a_known_tool_call(v1_editor: Bridge) -> None:
    v1_editor.from_agent(tcu("c7", title="Shell"))
    subject = {"type": "command", "command": "ls", "cwd": "/w", "toolCallId": "c7"}
    data = req(
        3, "session/request_permission", {"sessionId": "s1", "title": "Allow?", "subject": subject, "options": OPTIONS}
    )
    assert params_of(v1_editor.from_agent(data), 1)["toolCall"] == {"toolCallId": "c7"}


def ask_v1(rid: Any, call: Dict[str, Any], options: Any = OPTIONS) -> bytes:
    return req(rid, "session/request_permission", {"sessionId": "s1", "toolCall": call, "options": options})


def test_v1_permission_for_a_v2_editor(v2_editor: Bridge) -> None:
    v2_editor.from_agent(upd(sessionUpdate="tool_call", toolCallId="c1", title="Run", kind="execute"))
    params = params_of(v2_editor.from_agent(ask_v1(2, {"toolCallId": "c1", "status": "pending", "rawInput": None})), 2)
    assert params == {
        "sessionId": "s1",
        "title": "Run",
        "subject": {"type": "tool_call", "toolCall": {"toolCallId": "c1", "status": "pending"}},
        "options": OPTIONS,
    }
    params = params_of(v2_editor.from_agent(ask_v1(3, {"toolCallId": "c9"})), 2)
    assert params["title"] == "Allow the tool call c9?"
    assert params["subject"]["toolCall"] == {"toolCallId": "c9"}
    answer = res(2, {"outcome": {"outcome": "cancelled"}})
    assert v2_editor.from_editor(answer)[0] is answer


def test_v1_permission_without_options(v2_editor: Bridge, strict_v2: Bridge) -> None:
    out = v2_editor.from_agent(ask_v1(2, {"toolCallId": "c1", "title": "Run"}, options=[]))
    assert params_of(out, 2)["options"] == [REJECT_OPTION]
    back = v2_editor.from_editor(res(2, {"outcome": {"outcome": "selected", "optionId": REJECT_OPTION["optionId"]}}))
    assert acp_fast.loads(back[0])["result"] == {"outcome": {"outcome": "cancelled"}}
    refused(strict_v2, "agent", ask_v1(2, {"toolCallId": "c1"}, options=[]), "no options")
    refused(
        strict_v2,
        "agent",
        req(2, "session/request_permission", {"sessionId": "s1", "options": OPTIONS}),
        "no tool call",
    )


def test_v2_editor_outcomes_v1_does_not_know(v2_editor: Bridge, strict_v2: Bridge) -> None:
    for bridge in (v2_editor, strict_v2):
        bridge.from_agent(ask_v1(2, {"toolCallId": "c1", "title": "Run"}))
    answer = res(2, {"outcome": {"outcome": "_later", "when": "soon"}, "_meta": {"m": 1}})
    back = v2_editor.from_editor(answer)
    assert acp_fast.loads(back[0])["result"] == {"outcome": {"outcome": "cancelled"}, "_meta": {"m": 1}}
    refused(strict_v2, "editor", answer, "the permission outcome '_later'")
    error = frame({"jsonrpc": "2.0", "id": 2, "error": {"code": -32800, "message": "cancelled"}})
    assert strict_v2.from_editor(error) == [error]


# ---------------------------------------------------------------------------------------------
# session methods


def test_session_new(v1_editor: Bridge, v2_editor: Bridge, strict_v1: Bridge, strict_v2: Bridge) -> None:
    stdio_v1 = {"name": "fs", "command": "/bin/mcp", "args": [], "env": []}
    data = req(
        1,
        "session/new",
        {"cwd": "/w", "mcpServers": [stdio_v1, {"type": "sse", "name": "s", "url": "u", "headers": []}]},
    )
    params = params_of(v1_editor.from_editor(data), 2)
    assert params["mcpServers"] == [{"type": "stdio", **stdio_v1}]
    refused(strict_v1, "editor", data, "an MCP server over SSE")
    assert params_of(v2_editor.from_editor(req(1, "session/new", {"cwd": "/w"})), 1) == {"cwd": "/w", "mcpServers": []}
    servers = [{"type": "stdio", "name": "fs", "command": "/bin/mcp"}, {"type": "http", "name": "h", "url": "http://x"}]
    params = params_of(v2_editor.from_editor(req(2, "session/new", {"cwd": "/w", "mcpServers": servers})), 1)
    assert params["mcpServers"] == [
        {"name": "fs", "command": "/bin/mcp", "args": [], "env": []},
        {"type": "http", "name": "h", "url": "http://x", "headers": []},
    ]
    refused(
        strict_v2,
        "editor",
        req(2, "session/new", {"cwd": "/w", "mcpServers": [{"type": "_ws", "name": "w"}]}),
        "MCP server of type",
    )
    options = [
        {
            "id": "model",
            "name": "Model",
            "type": "select",
            "currentValue": "a",
            "options": [{"group": "g", "name": "G", "options": [{"value": "a", "name": "A"}]}],
        }
    ]
    result = result_of(
        v2_editor.from_agent(res(2, {"sessionId": "s1", "configOptions": options, "modes": None})), 2, "session/new"
    )
    assert result["configOptions"][0]["configId"] == "model"
    assert result["configOptions"][0]["options"][0]["groupId"] == "g"
    strict_v2.from_editor(req(3, "session/new", {"cwd": "/w"}))
    modes = {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}]}
    refused(strict_v2, "agent", res(3, {"sessionId": "s1", "modes": modes}), "session modes")


def test_session_new_result_for_v1(v1_editor: Bridge, strict_v1: Bridge) -> None:
    options = [
        {"configId": "fast", "name": "Fast", "type": "boolean", "currentValue": True},
        {"configId": "x", "name": "X", "type": "_slider"},
    ]
    for bridge in (v1_editor, strict_v1):
        bridge.from_editor(req(1, "session/new", {"cwd": "/w", "mcpServers": []}))
    result = result_of(v1_editor.from_agent(res(1, {"sessionId": "s1", "configOptions": options})), 1, "session/new")
    assert result["configOptions"] == [{"id": "fast", "name": "Fast", "type": "boolean", "currentValue": True}]
    refused(
        strict_v1, "agent", res(1, {"sessionId": "s1", "configOptions": options}), "a config option of type '_slider'"
    )
    out = v1_editor.from_agent(upd(sessionUpdate="config_option_update", configOptions=options[:1]))
    assert updates(valid(out, 1))[0]["configOptions"][0]["id"] == "fast"


def test_session_load_becomes_resume_with_replay(v1_editor: Bridge) -> None:
    data = req(5, "session/load", {"sessionId": "s1", "cwd": "/w", "mcpServers": []})
    out = v1_editor.from_editor(data)
    msg = acp_fast.loads(valid(out, 2)[0])
    assert (msg["method"], msg["params"]["replayFrom"]) == ("session/resume", {"type": "start"})
    options = [{"configId": "m", "name": "M", "type": "boolean", "currentValue": False}]
    result = result_of(v1_editor.from_agent(res(5, {"configOptions": options})), 1, "session/load")
    assert result == {"configOptions": [{"id": "m", "name": "M", "type": "boolean", "currentValue": False}]}


def test_session_resume(v2_editor: Bridge, strict_v2: Bridge) -> None:
    replay = req(6, "session/resume", {"sessionId": "s1", "cwd": "/w", "replayFrom": {"type": "start"}})
    msg = acp_fast.loads(valid(v2_editor.from_editor(replay), 1)[0])
    assert (msg["method"], msg["params"]) == ("session/load", {"sessionId": "s1", "cwd": "/w", "mcpServers": []})
    result = result_of(v2_editor.from_agent(res(6, {"modes": None})), 2, "session/resume")
    assert result == {}
    plain = req(7, "session/resume", {"sessionId": "s1", "cwd": "/w"})
    assert v2_editor.from_editor(plain)[0] is plain
    refused(
        strict_v2,
        "editor",
        req(8, "session/resume", {"sessionId": "s1", "cwd": "/w", "replayFrom": {"type": "_turn"}}),
        "a replay from",
    )


@pytest.mark.parametrize(("v1", "v2"), [("authenticate", "auth/login"), ("logout", "auth/logout")])
def test_auth_methods_are_renamed(v1_editor: Bridge, v2_editor: Bridge, v1: str, v2: str) -> None:
    params = {"methodId": "login"} if v1 == "authenticate" else {}
    assert acp_fast.loads(v1_editor.from_editor(req(1, v1, params))[0])["method"] == v2
    assert acp_fast.loads(v2_editor.from_editor(req(1, v2, params))[0])["method"] == v1
    answer = res(1, {})
    assert v1_editor.from_agent(answer)[0] is answer


def test_set_config_option(v1_editor: Bridge, v2_editor: Bridge, strict_v2: Bridge) -> None:
    data = req(1, "session/set_config_option", {"sessionId": "s1", "configId": "m", "value": "fast"})
    assert params_of(v1_editor.from_editor(data), 2)["type"] == "id"
    typed = req(1, "session/set_config_option", {"sessionId": "s1", "configId": "m", "type": "id", "value": "fast"})
    assert "type" not in params_of(v2_editor.from_editor(typed), 1)
    flag = req(2, "session/set_config_option", {"sessionId": "s1", "configId": "f", "type": "boolean", "value": True})
    assert v2_editor.from_editor(flag)[0] is flag
    odd = req(3, "session/set_config_option", {"sessionId": "s1", "configId": "f", "type": "_range", "value": [1, 2]})
    refused(strict_v2, "editor", odd, "a config value of type '_range'")


def test_methods_only_one_version_has(
    v1_editor: Bridge, v2_editor: Bridge, strict_v1: Bridge, strict_v2: Bridge
) -> None:
    mode = req(1, "session/set_mode", {"sessionId": "s1", "modeId": "ask"})
    assert v1_editor.from_editor(mode)[0] is mode
    refused(strict_v1, "editor", mode, 'the method "session/set_mode"')
    read = req(2, "fs/read_text_file", {"sessionId": "s1", "path": "/a"})
    assert v2_editor.from_agent(read) == []  # answered (tests/test_bridge_draft.py)
    refused(strict_v2, "agent", read, 'the method "fs/read_text_file"')
    ext = req(3, "_acme/ping", {"x": 1})
    assert v1_editor.from_editor(ext)[0] is ext and v2_editor.from_agent(ext)[0] is ext
    cancel = frame({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}})
    assert v1_editor.from_editor(cancel)[0] is cancel and v2_editor.from_editor(cancel)[0] is cancel
