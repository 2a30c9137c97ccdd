"""Hypothesis strategies of the state-engine property tests (tests/test_state_properties.py):
random ACP frames and streams (tool calls, terminals, permissions, plans, batches, bad frames).
"""

from __future__ import annotations

import base64
import re
from typing import Any, Dict

from hypothesis import strategies as st

from state_model import frame

# ------------------------------------------------------------------------------------------
# strategies
# ------------------------------------------------------------------------------------------

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(TEXT, kids, max_size=3)),
    max_leaves=8,
)
OBJECTS = st.dictionaries(TEXT, JSON_VALUES, max_size=3)

SESSIONS = st.sampled_from(["s1", "s2", "s\u00e93"])
TOOL_CALL_IDS = st.sampled_from(["c1", "c2", '\u00e9\u20ac"\\'])

CONTENT_ITEMS = st.one_of(
    st.sampled_from(
        [
            {"type": "content", "content": {"type": "text", "text": "A"}},
            {"type": "content", "content": {"type": "text", "text": "B\n\u00e9"}},
            {"type": "terminal", "terminalId": "t1"},
            {"type": "diff", "path": "/a", "oldText": None, "newText": "x"},
        ]
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["content", "diff", "_acme_widget", "future_thing"])},
        optional={"payload": JSON_VALUES, "_meta": st.one_of(st.none(), OBJECTS)},
    ),
)
LOCATIONS = st.fixed_dictionaries(
    {"path": st.sampled_from(["/a", "/b/c"])}, optional={"line": st.one_of(st.none(), st.integers(0, 2**32 - 1))}
)

FIELD_VALUES = {
    "title": st.one_of(TEXT, JSON_VALUES),
    "kind": st.sampled_from(["read", "edit", "execute", "switch_mode", "other", "_acme_deploy", "teleport"]),
    "status": st.sampled_from(["pending", "in_progress", "completed", "failed", "cancelled", "_waiting", "paused"]),
    "content": st.lists(CONTENT_ITEMS, max_size=3),
    "locations": st.lists(LOCATIONS, max_size=2),
    "rawInput": JSON_VALUES,
    "rawOutput": JSON_VALUES,
    "name": TEXT,
    "_meta": OBJECTS,
    "zeta": JSON_VALUES,
    "alpha": JSON_VALUES,
    "_ext": JSON_VALUES,
}
FIELD_NAMES = list(FIELD_VALUES)


def envelope(sid: Any, update: Dict[str, Any], *, drop_session: bool = False) -> Dict[str, Any]:
    params: Dict[str, Any] = {} if drop_session else {"sessionId": sid}
    params["update"] = update
    return {"jsonrpc": "2.0", "method": "session/update", "params": params}


@st.composite
def tool_call_messages(draw) -> Dict[str, Any]:
    """One tool-call frame: v1 tool_call, tool_call_update (random omissions, explicit nulls,
    whole-array replacements, unknown fields) or a content chunk; sometimes a bad one."""
    kind = draw(st.sampled_from(["tool_call_update", "tool_call_content_chunk", "tool_call_update", "tool_call"]))
    sid = draw(SESSIONS)
    update: Dict[str, Any] = {"sessionUpdate": kind, "toolCallId": draw(TOOL_CALL_IDS)}
    if kind == "tool_call_content_chunk":
        update["content"] = draw(CONTENT_ITEMS)
        for name in draw(st.lists(st.sampled_from(["_meta", "status", "extra"]), unique=True, max_size=2)):
            update[name] = draw(st.one_of(st.none(), OBJECTS))
    else:
        for name in draw(st.lists(st.sampled_from(FIELD_NAMES), unique=True, max_size=6)):
            update[name] = None if draw(st.integers(0, 3)) == 1 else draw(FIELD_VALUES[name])
    drop_session = False
    # 0 (the shrink target) and the other boundary are good frames; 1-5 are the bad ones
    bad = draw(st.integers(0, 30))
    if bad == 5:
        del update["toolCallId"]
    elif bad == 1:
        update["toolCallId"] = draw(st.sampled_from([7, None, ["c1"], True]))
    elif bad == 2:
        if kind == "tool_call_content_chunk":
            if draw(st.booleans()):
                del update["content"]
            else:
                update["content"] = draw(st.sampled_from([None, [], "A", 3]))
        else:
            update["content"] = draw(st.sampled_from(["x", {}, 0, False]))
    elif bad == 3 and kind != "tool_call_content_chunk":
        update["locations"] = draw(st.sampled_from(["/a", {"path": "/a"}, 1]))
    elif bad == 4:
        if draw(st.booleans()):
            drop_session = True
        else:
            sid = draw(st.sampled_from([None, 5, {"id": "s1"}]))
    return envelope(sid, update, drop_session=drop_session)


OTHER_MESSAGES = st.one_of(
    st.builds(
        lambda pv: {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": pv, "agentCapabilities": {}}},
        st.sampled_from([0, 1, 2, 3, True, "2", 2.0]),
    ),
    st.builds(
        lambda sid, mid: envelope(
            sid,
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}
            | ({} if mid is None else {"messageId": mid}),
        ),
        SESSIONS,
        st.sampled_from([None, "m1", "m2", 3]),
    ),
    st.builds(
        lambda sid: envelope(sid, {"sessionUpdate": "_custom_update", "toolCallId": "c1", "content": 1}), SESSIONS
    ),
    st.just(
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "session/update",
            "params": {"sessionId": "s1", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "c1"}},
        }
    ),
)


# one branch of a one_of (a nested one_of would be flattened into its four branches)
OTHER_FRAMES = OTHER_MESSAGES.map(dict)


@st.composite
def encoded(draw, messages) -> bytes:
    """A message as one frame: compact or spaced, raw UTF-8 or \\u escapes."""
    msg = draw(messages)
    return frame(msg, ensure_ascii=draw(st.booleans()), spaced=draw(st.booleans()))


def streams(frames, max_size: int = 40):
    """Lists of frames, built as a list of runs so that streams are long (about 20 frames on
    average) yet shrink to a single frame."""
    return st.lists(st.lists(frames, min_size=1, max_size=8), min_size=1, max_size=10).map(
        lambda runs: [f for run in runs for f in run][:max_size]
    )


TOOL_CALL_STREAMS = streams(
    encoded(
        st.one_of(tool_call_messages(), tool_call_messages(), tool_call_messages(), tool_call_messages(), OTHER_FRAMES)
    )
)
CONFIGS = st.tuples(st.sampled_from([2, 1, None]), st.sampled_from([None, 2, None, 3, 1]))


# terminals

BYTES = st.binary(max_size=12)
BAD_BASE64 = st.sampled_from(["A", "AA=", "A===", "AB=C", "-_-_", "AA AA=", "QUJD=", "\u00c0\u00c0\u00c0\u00c0"])


@st.composite
def base64_values(draw) -> Any:
    choice = draw(st.integers(0, 11))
    if choice == 5:
        return draw(BAD_BASE64)
    if choice == 6:
        return draw(st.sampled_from([None, 5, ["AA=="]]))
    return base64.b64encode(draw(BYTES)).decode()


@st.composite
def terminal_messages(draw) -> Dict[str, Any]:
    sid = draw(st.sampled_from(["s1", "s2"]))
    tid = draw(st.sampled_from(["t1", "t2", "c1"]))
    if draw(st.integers(0, 2)) == 0:
        update: Dict[str, Any] = {"sessionUpdate": "terminal_update", "terminalId": tid}
        names = draw(
            st.lists(
                st.sampled_from(["command", "cwd", "output", "exitStatus", "_meta", "zeta", "alpha"]),
                unique=True,
                max_size=4,
            )
        )
        for name in names:
            if draw(st.integers(0, 3)) == 1:
                update[name] = None
            elif name == "output":
                output: Dict[str, Any] = {} if draw(st.integers(0, 15)) == 7 else {"data": draw(base64_values())}
                if draw(st.booleans()):
                    output["_meta"] = draw(st.one_of(st.none(), OBJECTS))
                update[name] = output if draw(st.integers(0, 15)) != 7 else draw(st.sampled_from(["AA==", [], 0]))
            elif name == "exitStatus":
                update[name] = draw(
                    st.one_of(
                        st.fixed_dictionaries(
                            {}, optional={"exitCode": st.integers(0, 255), "signal": st.sampled_from(["SIGTERM", None])}
                        ),
                        st.sampled_from([0, "SIGKILL"]),
                    )
                )
            elif name in ("_meta",):
                update[name] = draw(OBJECTS)
            else:
                update[name] = draw(JSON_VALUES)
    else:
        update = {"sessionUpdate": "terminal_output_chunk", "terminalId": tid, "data": draw(base64_values())}
        if draw(st.booleans()):
            update["_meta"] = draw(st.one_of(st.none(), OBJECTS))
    if draw(st.integers(0, 20)) == 7:
        update["terminalId"] = draw(st.sampled_from([None, 3]))
    return envelope(sid, update)


TERMINAL_STREAMS = streams(encoded(terminal_messages()))


# mixed streams: everything the engine handles, plus batches

PERMISSION_IDS = st.sampled_from([1, 2, "1", "p", None])
OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "always", "name": "Always", "kind": "allow_always"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
    {"optionId": "allow", "name": "dup", "kind": "reject_always"},
    {"optionId": "_x", "name": "ext", "kind": "_acme"},
]


@st.composite
def permission_messages(draw) -> Dict[str, Any]:
    choice = draw(st.integers(0, 4))
    rid = draw(PERMISSION_IDS)
    if choice <= 1:
        params: Dict[str, Any] = {"sessionId": draw(SESSIONS)}
        tool_update = {"toolCallId": draw(TOOL_CALL_IDS)}
        for name in draw(st.lists(st.sampled_from(["title", "status", "content", "zeta"]), unique=True, max_size=2)):
            tool_update[name] = None if draw(st.booleans()) else draw(FIELD_VALUES[name])
        shape = draw(st.sampled_from(["v1", "v2", "none", "command"]))
        if shape == "v1":
            params["toolCall"] = tool_update
        elif shape == "v2":
            params["title"] = "Allow?"
            params["subject"] = {"type": "tool_call", "toolCall": tool_update}
        elif shape == "command":
            params["subject"] = {"type": "command", "command": "ls", "cwd": "/"}
        params["options"] = (
            draw(st.lists(st.sampled_from(OPTIONS), max_size=4))
            if draw(st.integers(0, 10)) != 7
            else draw(st.sampled_from([None, {}, "x"]))
        )
        return {"jsonrpc": "2.0", "id": rid, "method": "session/request_permission", "params": params}
    if choice == 2:
        outcome = draw(
            st.sampled_from(
                [
                    {"outcome": {"outcome": "selected", "optionId": "allow"}},
                    {"outcome": {"outcome": "selected", "optionId": "always"}},
                    {"outcome": {"outcome": "selected", "optionId": "reject"}},
                    {"outcome": {"outcome": "selected", "optionId": "_x"}},
                    {"outcome": {"outcome": "selected", "optionId": "nope"}},
                    {"outcome": {"outcome": "selected"}},
                    {"outcome": {"outcome": "cancelled"}},
                    {"outcome": {"outcome": "_later"}},
                    {"outcome": {}},
                    {},
                    "x",
                ]
            )
        )
        return {"jsonrpc": "2.0", "id": rid, "result": outcome}
    if choice == 3:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32800, "message": "cancelled"}}
    return {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": draw(SESSIONS)}}


@st.composite
def plan_messages(draw) -> Dict[str, Any]:
    sid = draw(SESSIONS)
    entries = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "content": TEXT,
                    "priority": st.sampled_from(["high", "low"]),
                    "status": st.sampled_from(["pending", "cancelled", "_x"]),
                }
            ),
            max_size=2,
        )
    )
    choice = draw(st.integers(0, 3))
    if choice == 0:
        update: Dict[str, Any] = {"sessionUpdate": "plan", "entries": entries}
        if draw(st.booleans()):
            update["_meta"] = draw(st.one_of(st.none(), OBJECTS))
    elif choice == 1:
        update = {
            "sessionUpdate": "plan_update",
            "plan": {
                "type": draw(st.sampled_from(["items", "_md"])),
                "planId": draw(st.sampled_from(["main", "p2"])),
                "entries": entries,
            },
        }
    elif choice == 2:
        update = {"sessionUpdate": "plan_removed", "planId": draw(st.sampled_from(["main", "p2"]))}
    else:
        update = draw(
            st.sampled_from(
                [
                    {"sessionUpdate": "plan"},
                    {"sessionUpdate": "plan_update", "plan": {}},
                    {"sessionUpdate": "plan_removed", "planId": 1},
                ]
            )
        )
    return envelope(sid, update)


#: Requests the store follows through their answers (DESIGN 7.10), and answers to them.
REQUEST_METHODS = {
    "terminal/create": lambda: {"command": "make", "args": ["-j"], "cwd": "/w", "outputByteLimit": 10},
    "terminal/output": lambda: {"terminalId": "t1"},
    "terminal/wait_for_exit": lambda: {"terminalId": "t1"},
    "terminal/kill": lambda: {"terminalId": "t1"},
    "terminal/release": lambda: {"terminalId": "t1"},
    "fs/read_text_file": lambda: {"path": "/a", "line": 2},
    "fs/write_text_file": lambda: {"path": "/b", "content": "h\u00e9"},
    "session/close": dict,
    "session/delete": dict,
    "session/load": lambda: {"cwd": "/", "mcpServers": []},
    "session/resume": lambda: {"cwd": "/", "replayFrom": {"type": "start"}},
    "session/new": lambda: {"cwd": "/"},
    "session/set_title": lambda: {"title": "T"},
    "auth/status": dict,
}
ANSWERS = [
    {"terminalId": "t1"},
    {"output": "ab\u00e9", "truncated": False, "exitStatus": {"exitCode": 0}},
    {"output": 5},
    {"exitCode": 1, "signal": None},
    {"content": "x\u00e9"},
    {"sessionId": "s2", "configOptions": [], "availableCommands": [{"name": "c"}]},
    {"title": "Done"},
    {"state": "ok"},
    {},
    None,
]


_REQUEST_ID = re.compile(rb'"id":\s*(?:"r1"|"r2"|3[,}\s])')
#: Ids of the followed requests (apart from the permission requests': their answers are not
#: part of a checkpoint, `answers_a_request`).
REQUEST_IDS = ["r1", "r2", 3]


def answers_a_request(data: bytes) -> bool:
    """Might the frame answer a followed request (whose pending state a checkpoint does not keep)?"""
    return (b'"result"' in data or b'"error"' in data) and _REQUEST_ID.search(data) is not None


@st.composite
def request_messages(draw) -> Dict[str, Any]:
    rid = draw(st.sampled_from(REQUEST_IDS))
    choice = draw(st.integers(0, 3))
    if choice <= 1:
        method = draw(st.sampled_from(sorted(REQUEST_METHODS)))
        params = REQUEST_METHODS[method]()
        if method != "session/new" and draw(st.integers(0, 9)) != 3:
            params["sessionId"] = draw(SESSIONS)
        return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    if choice == 2:
        return {"jsonrpc": "2.0", "id": rid, "result": draw(st.sampled_from(ANSWERS))}
    code = draw(st.sampled_from([-32002, -32000]))
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": "no"}}


SINGLE_MESSAGES = st.one_of(
    tool_call_messages(),
    tool_call_messages(),
    terminal_messages(),
    permission_messages(),
    permission_messages(),
    plan_messages(),
    request_messages(),
    OTHER_FRAMES,
)


@st.composite
def mixed_frames(draw) -> bytes:
    if draw(st.integers(0, 9)) == 3:
        entries = draw(
            st.lists(
                st.one_of(SINGLE_MESSAGES, st.sampled_from([1, {"jsonrpc": "1.0", "method": "x"}])),
                min_size=1,
                max_size=3,
            )
        )
        return frame(entries, ensure_ascii=draw(st.booleans()))
    if draw(st.integers(0, 29)) == 7:
        return draw(st.sampled_from([b'{"jsonrpc":"2.0",', b"[]", b"nul", b'{"jsonrpc":"2.0","method":5}']))
    return draw(encoded(SINGLE_MESSAGES))


MIXED_STREAMS = streams(mixed_frames())
