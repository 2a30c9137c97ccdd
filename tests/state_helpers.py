"""Helpers shared by the ``test_state_*.py`` files (the state engine, DESIGN.md §7): record and
state shapes, options, frames and the rich stream the checkpoint tests load. Frame helpers that
know no rule of the engine are in ``state_model.py``.
"""

from __future__ import annotations

import json
import re

import orjson
import pytest

from acp_fast import DecodeError
from acp_fast import builders as B
from state_model import (
    assert_record,
    assert_state_error,
    change_of,
    frame,
    notification,
    request,
    response,
    session_update,
    tool_call_update,
)

_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?')


def canonical_numbers(doc: bytes) -> bytes:
    """The compact JSON ``doc`` with each number and string written as ``dumps(loads(token))``
    would write it (``2.50`` -> ``2.5``, ``-0`` -> ``0``, ``"\\u00e9"`` -> ``"é"``): what
    ``to_json()`` is once its numbers and strings, which keep their text as received (DESIGN 7.8),
    are set aside."""

    def number(m):
        text = m.group()
        if text.startswith(b'"'):
            return orjson.dumps(json.loads(text))
        value = json.loads(text)
        return str(value).encode() if type(value) is int else orjson.dumps(value)

    return _TOKEN.sub(number, doc)


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


def empty_state(protocol_version=None, negotiated=None, max_tool_calls=1000, evicted=0, sessions=None):
    sessions = {} if sessions is None else sessions
    return {
        "format": "acp-fast-state/2",
        "protocolVersion": protocol_version,
        "negotiatedVersion": negotiated,
        "maxToolCalls": max_tool_calls,
        "evicted": evicted,
        "sessions": sessions,
        # (the tests that use this helper request permissions in session order)
        "permissionOrder": [sid for sid, sd in sessions.items() for _ in sd.get("permissions", ())],
    }


INIT_V2 = response(0, {"protocolVersion": 2, "agentCapabilities": {}, "authMethods": []})
INIT_V1 = response(0, {"protocolVersion": 1, "agentCapabilities": {}})


FRAME = B.tool_call_update("s1", "c1", title="T")  # ends in "\n"
LINE = FRAME[:-1]


def _good_after(backend, s):
    c = s.apply(B.tool_call_update("s9", "after", title="ok"))
    assert change_of(backend, c) == ("s9", "tool_call", "after", "created", "after")


def _perm(params, id_=1):
    return frame(request(id_, "session/request_permission", params))


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


def terminal_frame(sid, tid, **fields):
    return session_update(sid, {"sessionUpdate": "terminal_update", "terminalId": tid, **fields})


ENTRIES = [B.plan_entry("Read code", priority="high", status="completed"), B.plan_entry("Write tests")]


# A stream that touches every kind of record, the state it leaves, and a store loaded from frames.


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
        "format": "acp-fast-state/2",
        "protocolVersion": None,
        "negotiatedVersion": 2,
        "maxToolCalls": 1000,
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
