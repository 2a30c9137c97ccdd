"""``Coalescer`` (``rust/coalesce.rs``, ``_fallback/coalesce.py``, DESIGN 9): the agent's
``tool_call_update`` frames held per (session, tool call) and one frame with their merged effect
forwarded in their place.

Every behaviour test takes the ``backend`` fixture and runs on both backends (ids rust, python);
the clock is fake (``now=`` passed everywhere). The property tests check that

* what the coalescer forwards gives the same state as what the agent sent (a store fed the raw
  agent lines and a store fed the coalescer's output end equal), and the two backends give the
  same bytes;
* the lines of one tool call keep their order; every line that is not a ``tool_call_update``
  passes byte for byte, in order, in the very ``push`` that got it.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Tuple

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import acp_fast
from acp_fast import DecodeError
from acp_fast import _fallback as fallback
from state_model import assert_record, chunk, frame, request, response, session_update, tool_call, tool_call_update

#: The coalescer classes compared byte for byte (the native one when it is built).
COALESCERS = [fallback.Coalescer] + ([acp_fast.Coalescer] if acp_fast.BACKEND == "rust" else [])

ENVELOPE = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'


def upd(fields: Dict[str, Any], sid: str = "s1", tcid: str = "c1") -> bytes:
    """A compact ``tool_call_update`` line (``fields`` in order after ``toolCallId``). A merged
    update is written compactly (each key and value as received), so the merged line of compact
    lines is ``upd`` of the merged fields."""
    return tool_call_update(sid, tcid, fields) + b"\n"


def line(data: bytes) -> bytes:
    return data + b"\n"


def lines_of(data: bytes) -> List[bytes]:
    """``data`` cut into lines (line ending kept; a last line without one kept too)."""
    return re.findall(rb"[^\n]*\n|[^\n]+\Z", data)


def message_chunk(sid: str = "s1", text: str = "hi") -> bytes:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    return line(session_update(sid, update))


def permission(id_: Any, sid: str = "s1", tcid: str = "c1") -> bytes:
    params = {"sessionId": sid, "toolCall": {"toolCallId": tcid}, "options": []}
    return line(frame(request(id_, "session/request_permission", params)))


def held_lines(c: Any, now: float = 0.0) -> List[bytes]:
    """Hold c1 and c2 of s1 and c1 of s2 (one update each) at ``now``; their lines."""
    held = [upd({"title": "a"}), upd({"title": "b"}, tcid="c2"), upd({"title": "c"}, sid="s2")]
    for data in held:
        assert c.push(data, now) == b""
    assert c.held == 3
    return held


# ---------------------------------------------------------------------------------------------
# construction


def test_defaults(backend):
    c = backend.Coalescer()
    assert (c.ms, c.protocol, c.deadline, c.held, c.held_bytes, c.updates_in, c.frames_out) == (
        50.0,
        None,
        None,
        0,
        0,
        0,
        0,
    )
    assert type(c.ms) is float
    c = backend.Coalescer(0, protocol=2, max_held=1, max_held_bytes=0)
    assert (c.ms, c.protocol) == (0.0, 2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ms": -1.0}, "expected ms to be a number of milliseconds >= 0"),
        ({"ms": float("nan")}, "expected ms to be a number of milliseconds >= 0"),
        ({"ms": float("inf")}, "expected ms to be a number of milliseconds >= 0"),
        ({"max_held": 0}, "expected max_held to be at least 1, found 0"),
        ({"max_held_bytes": -1}, "expected max_held_bytes to be at least 0, found -1"),
        ({"protocol": 0}, "expected protocol to be 1, 2 or None, found 0"),
        ({"protocol": 3}, "expected protocol to be 1, 2 or None, found 3"),
    ],
)
def test_constructor_errors(backend, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        backend.Coalescer(**kwargs)


@pytest.mark.parametrize("bad", [0, 3, -1, True, 2.0, "2"], ids=repr)
def test_protocol_must_be_1_2_or_none(backend, bad):
    # As ToolCallStore(protocol_version=...) on both backends: only the ints 1 and 2 (not True,
    # not 2.0, not "2") or None, anything else a ValueError.
    with pytest.raises(ValueError, match="expected protocol to be 1, 2 or None"):
        backend.Coalescer(protocol=bad)
    c = backend.Coalescer(protocol=1)
    with pytest.raises(ValueError, match="expected protocol to be 1, 2 or None"):
        c.protocol = bad
    assert c.protocol == 1


def test_protocol_setter(backend):
    c = backend.Coalescer()
    for value in (1, 2, None, 2):
        c.protocol = value
        assert c.protocol == value
    # the setter changes the merge rules from then on
    assert c.push(upd({"title": "a"}), 0.0) == b""
    assert c.push(upd({"title": None}), 0.0) == b""
    assert c.flush() == upd({"title": None})
    c.protocol = 1
    assert c.push(upd({"title": "a"}), 0.0) == b""
    assert c.push(upd({"title": None}), 0.0) == b""
    assert c.flush() == upd({"title": "a"})


# ---------------------------------------------------------------------------------------------
# 1. merging: exact bytes


def test_merged_line_exact_bytes(backend):
    c = backend.Coalescer(50.0, protocol=2)
    u1 = (
        ENVELOPE
        + b'{"sessionUpdate":"tool_call_update","toolCallId":"c1","\\u0074itle":"Read","rawInput":{"n": 1.50, "e": -0E+2},"status":"pending"}}}\n'
    )
    u2 = (
        ENVELOPE
        + b'{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","content":[ {"type":"content","content":{"type":"text","text":"\\u00e9"}} ]}}}\n'
    )
    u3 = '{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"toolCallId": "c1", "sessionUpdate": "tool_call_update", "title": "Read é", "x": 1.50}}}\r\n'.encode()
    assert c.push(u1, 0.0) == b""
    assert c.push(u2 + u3, 0.0) == b""
    assert (c.held, c.updates_in, c.frames_out, c.deadline) == (1, 3, 0, 0.05)
    assert c.due(0.0) == b""
    assert c.due(0.0499) == b""
    merged = (
        b'{"sessionUpdate":"tool_call_update","toolCallId":"c1","\\u0074itle":"Read \xc3\xa9",'
        b'"rawInput":{"n": 1.50, "e": -0E+2},"status":"in_progress",'
        b'"content":[ {"type":"content","content":{"type":"text","text":"\\u00e9"}} ],"x":1.50}'
    )
    expected = (
        b'{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": ' + merged + b"}}\r\n"
    )
    assert c.due(0.05) == expected
    assert (c.held, c.held_bytes, c.updates_in, c.frames_out, c.deadline) == (0, 0, 3, 1, None)
    assert c.due(1.0) == b""
    assert c.flush() == b""


def test_merged_values_keep_their_inner_whitespace(backend):
    # between members the merged object has none; inside a value, what was received
    c = backend.Coalescer(protocol=2)
    a = (
        ENVELOPE
        + b'{ \t"sessionUpdate" \t: "tool_call_update" ,\t"toolCallId":"c1" , "_meta" : { "x" : 1 , "y" :[ 1 ] } , "title":"x" \t} } }\n'
    )
    b = (
        ENVELOPE
        + b'{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":{ "z" : null , "x":{ } }, "kind" : "read" }}}\n'
    )
    assert c.push(a + b, 0.0) == b""
    assert c.flush() == ENVELOPE + (
        b'{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":{"x":{ },"y":[ 1 ],"z":null},'
        b'"title":"x","kind":"read"}}}\n'
    )


def test_merged_line_is_a_json_update_with_later_values(backend):
    c = backend.Coalescer(50.0, protocol=1)
    steps = [
        {"status": "pending", "title": "a", "kind": "read"},
        {"content": [{"type": "content", "content": {"type": "text", "text": "x"}}], "title": "b"},
        {"status": "in_progress", "rawOutput": {"k": [1, 2]}, "x": "é"},
    ]
    for i, fields in enumerate(steps):
        assert c.push(upd(fields), i * 0.01) == b""
    assert c.due(0.0499) == b""
    assert c.due(0.05) == upd(
        {
            "status": "in_progress",
            "title": "b",
            "kind": "read",
            "content": [{"type": "content", "content": {"type": "text", "text": "x"}}],
            "rawOutput": {"k": [1, 2]},
            "x": "é",
        }
    )


@pytest.mark.parametrize(
    "data",
    [
        b'  {"jsonrpc" :"2.0",\t"method":"session/update","params":{ "sessionId":"s1" ,"update":{ "sessionUpdate" : "tool_call_update","toolCallId":"c1" , "title":"x" } } }  \r\n',
        ENVELOPE
        + b'{"sessionUpdate":"tool_call_update","toolCallId":"c\\u0031","status":"in_progress","rawOutput":1.50}}}\n',
    ],
)
def test_single_update_released_byte_for_byte(backend, data):
    c = backend.Coalescer(50.0, protocol=2)
    assert c.push(data, 1.0) == b""
    assert c.deadline == 1.0 + 0.05
    assert c.due(1.0 + 0.05) == data
    assert c.push(data, 2.0) == b""
    assert c.flush() == data
    assert (c.updates_in, c.frames_out) == (2, 2)


def test_keys_are_decoded_text(backend):
    # "c\u0031" is "c1", "\u0073\u0031" is "s1": one entry; keys written with escapes keep them
    c = backend.Coalescer(50.0, protocol=2)
    u1 = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"\\u0073\\u0031","update":{"sessionUpdate":"tool_call_update","toolCallId":"c\\u0031","title":"a"}}}\n'
    u2 = upd({"kind": "read"})
    assert c.push(u1 + u2, 0.0) == b""
    assert c.held == 1
    # the last line's envelope; the members in the first line's order, the later values
    assert (
        c.flush() == ENVELOPE + b'{"sessionUpdate":"tool_call_update","toolCallId":"c1","title":"a","kind":"read"}}}\n'
    )


def test_entries_are_per_session_and_tool_call(backend):
    c = backend.Coalescer(50.0, protocol=2)
    held = held_lines(c)
    assert c.push(upd({"kind": "read"}), 0.01) == b""
    assert c.held == 3
    # oldest first; a merge keeps the entry's place
    assert c.flush() == upd({"title": "a", "kind": "read"}) + held[1] + held[2]


# ---------------------------------------------------------------------------------------------
# 2. the protocol version


def test_v1_null_leaves_the_held_value(backend):
    c = backend.Coalescer(protocol=1)
    c.push(upd({"title": "a", "kind": "read", "_meta": {"x": 1}}), 0.0)
    assert c.push(upd({"title": None, "kind": "edit", "_meta": None}), 0.0) == b""
    assert c.flush() == upd({"title": "a", "kind": "edit", "_meta": {"x": 1}})


def test_v1_value_over_a_held_null(backend):
    c = backend.Coalescer(protocol=1)
    c.push(upd({"title": None, "kind": "read"}), 0.0)
    assert c.push(upd({"title": "b"}), 0.0) == b""
    assert c.flush() == upd({"title": "b", "kind": "read"})


def test_v1_meta_is_replaced_whole(backend):
    c = backend.Coalescer(protocol=1)
    c.push(upd({"_meta": {"x": 1}}), 0.0)
    assert c.push(upd({"_meta": {"y": 2}}), 0.0) == b""
    assert c.flush() == upd({"_meta": {"y": 2}})


def test_v2_null_replaces(backend):
    c = backend.Coalescer(protocol=2)
    c.push(upd({"title": "a", "kind": "read"}), 0.0)
    assert c.push(upd({"title": None}), 0.0) == b""
    assert c.push(upd({"kind": None}), 0.0) == b""
    assert c.flush() == upd({"title": None, "kind": None})


@pytest.mark.parametrize(
    ("first", "second", "merged"),
    [
        ({"x": 1}, {"y": None}, {"x": 1, "y": None}),
        ({"x": 1, "y": 2}, {"y": 3, "z": {"a": None}}, {"x": 1, "y": 3, "z": {"a": None}}),
        ({"x": 1}, {"x": None}, {"x": None}),
        ({}, {"x": 1}, {"x": 1}),
    ],
)
def test_v2_meta_objects_compose(backend, first, second, merged):
    c = backend.Coalescer(protocol=2)
    c.push(upd({"_meta": first, "title": "t"}), 0.0)
    assert c.push(upd({"_meta": second}), 0.0) == b""
    assert c.held == 1
    assert c.flush() == upd({"_meta": merged, "title": "t"})


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"title": None}, {"title": "b"}),  # a member unset then set again
        ({"_meta": None}, {"_meta": {"x": 1}}),
        ({"_meta": {"x": None}}, {"_meta": {"x": 1}}),  # a _meta member unset then set again
        ({"_meta": 5}, {"_meta": {"x": 1}}),  # a _meta object over one that is not an object
    ],
)
def test_v2_what_one_update_cannot_say(backend, first, second):
    c = backend.Coalescer(protocol=2)
    a, b = upd(first), upd(second)
    assert c.push(a, 0.0) == b""
    assert c.push(b, 0.02) == a
    assert (c.held, c.deadline, c.updates_in, c.frames_out) == (1, 0.02 + 0.05, 2, 1)
    assert c.flush() == b


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"title": "a"}, {"title": None}),  # a null over a held member
        ({"title": None}, {"title": "a"}),
        ({"_meta": {"x": 1}}, {"_meta": {"y": 2}}),  # v1 replaces, v2 patches
    ],
)
def test_unknown_version_releases_what_differs_by_version(backend, first, second):
    c = backend.Coalescer()
    a, b = upd(first), upd(second)
    assert c.push(a, 0.0) == b""
    assert c.push(b, 0.0) == a
    assert c.flush() == b


def test_unknown_version_merges_what_does_not_differ(backend):
    c = backend.Coalescer()
    c.push(upd({"title": "a", "_meta": {"x": 1}}), 0.0)
    assert c.push(upd({"title": "b", "kind": None}), 0.0) == b""
    assert c.push(upd({"status": "in_progress"}), 0.0) == b""
    assert c.flush() == upd({"title": "b", "_meta": {"x": 1}, "kind": None, "status": "in_progress"})


# ---------------------------------------------------------------------------------------------
# 3. what releases


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled"])
def test_final_status_released_at_once(backend, status):
    c = backend.Coalescer(protocol=2)
    other = upd({"title": "o"}, sid="s2", tcid="c2")  # another session's: stays held
    assert c.push(other, 0.0) == b""
    assert c.push(upd({"title": "a", "status": "in_progress"}), 0.0) == b""
    assert c.push(upd({"rawOutput": 1, "status": status}), 0.01) == upd(
        {"title": "a", "status": status, "rawOutput": 1}
    )
    assert c.held == 1  # the other tool call stays
    # a single final update passes byte for byte
    single = upd({"status": status})
    assert c.push(single, 0.02) == single
    assert c.held == 1
    assert c.flush() == other


@pytest.mark.parametrize("status", ["pending", "in_progress", "_done", "COMPLETED"])
def test_other_statuses_are_held(backend, status):
    c = backend.Coalescer(protocol=2)
    assert c.push(upd({"status": status}), 0.0) == b""
    assert c.held == 1


@pytest.mark.parametrize(
    "releaser",
    [
        line(tool_call("s1", "c1", {"title": "again"})),
        line(chunk("s1", "c1", {"type": "content", "content": {"type": "text", "text": "x"}})),
    ],
    ids=["tool_call", "tool_call_content_chunk"],
)
def test_tool_call_and_chunk_release_their_session(backend, releaser):
    # either may create its tool call: the session's held entries (which may create theirs) first
    c = backend.Coalescer(protocol=2)
    held = held_lines(c)
    assert c.push(releaser, 0.01) == held[0] + held[1] + releaser
    assert c.held == 1
    # of another tool call of the session: nothing more held there, so nothing released
    other = releaser.replace(b'"c1"', b'"c9"')
    assert c.push(other, 0.01) == other
    assert c.flush() == held[2]


@pytest.mark.parametrize(
    "releaser",
    [
        line(session_update("s1", {"sessionUpdate": "state_update", "state": "idle"})),
        permission(7),
        line(frame(request("r1", "fs/read_text_file", {"sessionId": "s1", "path": "/a"}))),
    ],
    ids=["state_update", "request_permission", "fs_read"],
)
def test_session_releasers(backend, releaser):
    c = backend.Coalescer(protocol=2)
    held = held_lines(c)
    assert c.push(releaser, 0.01) == held[0] + held[1] + releaser
    assert c.held == 1
    assert c.flush() == held[2]


@pytest.mark.parametrize(
    "releaser",
    [
        line(response(1, {})),
        line(frame({"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "no"}})),
        line(frame([{"jsonrpc": "2.0", "id": 1, "result": {}}])),
        b'[{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","title":"z"}}}]\n',
        line(frame(request(3, "_acme/ping", {}))),  # a request naming no session
    ],
    ids=["response", "error", "batch", "batch_of_update", "request_without_session"],
)
def test_release_everything(backend, releaser):
    c = backend.Coalescer(protocol=2)
    held = held_lines(c)
    assert c.push(releaser, 0.01) == b"".join(held) + releaser
    assert (c.held, c.held_bytes) == (0, 0)


def test_untracked_lines_release_everything(backend):
    c = backend.Coalescer(protocol=2)
    held = held_lines(c)
    update = upd({"title": "z"}, tcid="c2")  # would be held if tracked
    assert c.push(update, 0.01, tracked=False) == b"".join(held) + update
    assert c.held == 0
    chunk_line = message_chunk()
    c.push(held[0], 0.02)
    assert c.push(chunk_line, 0.02, tracked=False) == held[0] + chunk_line
    assert c.updates_in == 4  # the untracked update was not held


@pytest.mark.parametrize("unreadable", [b"nope\n", b"{\n", b"\x0c\n", b"\x0b\n", b" \x0c \n"], ids=repr)
def test_unreadable_untracked_line_releases_everything(backend, unreadable):
    # Such a line is a DecodeError for the state engine (not JSON whitespace), so it is pushed
    # with tracked=False: "any response, batch, untracked or unreadable line (every entry before it)".
    store = backend.ToolCallStore(2)
    assert [type(r) for r in store.feed(unreadable, source="agent")] == [DecodeError]
    c = backend.Coalescer(protocol=2)
    held = held_lines(c)
    assert c.push(unreadable, 0.01, tracked=False) == b"".join(held) + unreadable
    assert c.held == 0


@pytest.mark.parametrize(
    "passer",
    [
        message_chunk(),
        message_chunk("s2"),
        line(session_update("s1", {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "t"}})),
        line(session_update("s1", {"sessionUpdate": "plan", "entries": []})),
        line(frame({"jsonrpc": "2.0", "method": "_acme/notice", "params": {"sessionId": "s1"}})),
        line(session_update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": 5, "title": "a"})),
        b"\n",
        b"  \r\n",
        b"\t\n",
    ],
    ids=["message", "message_s2", "thought", "plan", "notification", "numeric_id", "blank", "blank_cr", "blank_tab"],
)
def test_passers_release_nothing(backend, passer):
    c = backend.Coalescer(protocol=2)
    held = held_lines(c)
    assert c.push(passer, 0.01) == passer
    assert c.held == 3
    assert c.flush() == b"".join(held)


def test_duplicate_member_is_not_held(backend):
    c = backend.Coalescer(protocol=2)
    held = held_lines(c)
    dup = ENVELOPE + b'{"sessionUpdate":"tool_call_update","toolCallId":"c1","title":"a","\\u0074itle":"b"}}}\n'
    assert c.push(dup, 0.01) == held[0] + dup  # its own tool call's entry goes first
    assert (c.held, c.updates_in) == (2, 3)


@pytest.mark.parametrize(
    "last",
    [
        message_chunk()[:-1],
        upd({"title": "z"})[:-1],
        upd({"title": "z"}, tcid="c9")[:-1],
        b"  x",
    ],
    ids=["message", "update", "update_other", "text"],
)
def test_last_line_without_newline_releases_everything(backend, last):
    c = backend.Coalescer(protocol=2)
    held = held_lines(c)
    assert c.push(last, 0.01) == b"".join(held) + last
    assert c.held == 0
    # in one push with other lines
    c.push(held[0], 0.02)
    chunk_line = message_chunk()
    assert c.push(held[1] + chunk_line + last, 0.02) == chunk_line + held[0] + held[1] + last
    assert c.held == 0


def test_whitespace_only_last_line_passes(backend):
    c = backend.Coalescer(protocol=2)
    held = held_lines(c)
    assert c.push(b"  ", 0.01) == b"  "
    assert c.held == 3
    assert c.push(b"", 0.01) == b""
    assert c.flush() == b"".join(held)


def test_several_lines_in_one_push(backend):
    c = backend.Coalescer(protocol=2)
    data = upd({"title": "a"}) + message_chunk() + upd({"kind": "read"}) + upd({"title": "x"}, tcid="c2")
    assert c.push(data, 0.0) == message_chunk()
    assert c.held == 2
    assert c.push(line(response(1, {})) + upd({"title": "b"}), 0.01) == (
        upd({"title": "a", "kind": "read"}) + upd({"title": "x"}, tcid="c2") + line(response(1, {}))
    )
    assert (c.held, c.deadline) == (1, 0.01 + 0.05)


# ---------------------------------------------------------------------------------------------
# 4. time and bounds


def test_due_releases_the_oldest_first(backend):
    c = backend.Coalescer(50.0, protocol=2)
    a, b = upd({"title": "a"}), upd({"title": "b"}, tcid="c2")
    c.push(a, 0.0)
    c.push(b, 0.03)
    c.push(upd({"kind": "read"}), 0.04)  # merged: c1 keeps its first time
    assert c.deadline == 0.05
    assert c.due(0.049) == b""
    assert c.due(0.05) == upd({"title": "a", "kind": "read"})
    assert c.deadline == 0.03 + 0.05
    assert c.due(0.07) == b""
    assert c.due(0.03 + 0.05) == b
    assert c.deadline is None
    # held anew after a release: a new first time
    c.push(upd({"title": "z"}), 0.1)
    assert c.deadline == 0.1 + 0.05


def test_zero_ms_holds_until_due(backend):
    c = backend.Coalescer(0, protocol=2)
    c.push(upd({"title": "a"}), 3.0)
    c.push(upd({"kind": "read"}), 3.0)
    assert c.deadline == 3.0
    assert c.due(2.9) == b""
    assert c.due(3.0) == upd({"title": "a", "kind": "read"})


def test_max_held_releases_the_oldest(backend):
    c = backend.Coalescer(protocol=2, max_held=2)
    a, b, d = (upd({"title": t}, tcid=t) for t in ("c1", "c2", "c3"))
    assert c.push(a, 0.0) == b""
    assert c.push(b, 0.01) == b""
    assert c.push(upd({"kind": "read"}, tcid="c1"), 0.015) == b""  # a merge adds no entry
    assert c.push(d, 0.02) == upd({"title": "c1", "kind": "read"}, tcid="c1")
    assert (c.held, c.deadline) == (2, 0.01 + 0.05)
    assert c.flush() == b + d


def test_max_held_one(backend):
    c = backend.Coalescer(protocol=2, max_held=1)
    a, b = upd({"title": "a"}), upd({"title": "b"}, sid="s2")
    assert c.push(a + b, 0.0) == a
    assert c.flush() == b


def test_held_bytes_and_max_held_bytes(backend):
    a = upd({"title": "a"})
    # an entry's size: its last line and its merged values
    size = len(a) + len(b'"tool_call_update"') + len(b'"c1"') + len(b'"a"')
    c = backend.Coalescer(protocol=2)
    c.push(a, 0.0)
    assert c.held_bytes == size
    b = upd({"kind": "read"})
    c.push(b, 0.0)
    assert c.held_bytes == len(b) + len(b'"tool_call_update"') + len(b'"c1"') + len(b'"a"') + len(b'"read"')
    c.flush()
    assert (c.held, c.held_bytes, c.deadline) == (0, 0, None)

    c = backend.Coalescer(protocol=2, max_held_bytes=size)
    assert c.push(a, 0.0) == b""  # at the bound: held
    assert c.push(b, 0.0) == upd({"title": "a", "kind": "read"})  # over it: released
    assert (c.held, c.held_bytes) == (0, 0)

    c = backend.Coalescer(protocol=2, max_held_bytes=size - 1)
    assert c.push(a, 0.0) == a
    assert (c.held, c.held_bytes) == (0, 0)

    c = backend.Coalescer(protocol=2, max_held_bytes=0)
    data = a + upd({"title": "b"}, tcid="c2") + b
    assert c.push(data, 0.0) == data
    assert (c.held, c.updates_in, c.frames_out) == (0, 3, 3)


def test_bytes_bound_releases_oldest_until_under(backend):
    a, b = upd({"title": "a"}), upd({"title": "b"}, tcid="c2")
    c = backend.Coalescer(protocol=2)
    c.push(a, 0.0)
    one = c.held_bytes
    c = backend.Coalescer(protocol=2, max_held_bytes=one + one // 2)
    c.push(a, 0.0)
    assert c.push(b, 0.01) == a
    assert c.held == 1
    assert c.flush() == b


def test_counters(backend):
    c = backend.Coalescer(protocol=2)
    data = upd({"title": "a"}) + upd({"kind": "read"}) + upd({"title": "x"}, tcid="c2") + message_chunk()
    c.push(data, 0.0)
    assert (c.updates_in, c.frames_out, c.held) == (3, 0, 2)
    c.push(upd({"status": "completed"}, tcid="c2", sid="s1"), 0.0)  # c1 of s1, held first, goes along
    assert (c.updates_in, c.frames_out, c.held) == (4, 2, 0)
    c.push(upd({"title": "b"}), 0.0)
    c.push(line(response(1, {})), 0.0)
    assert (c.updates_in, c.frames_out, c.held) == (5, 3, 0)
    c.push(upd({"title": "a"}), 0.0, tracked=False)
    assert (c.updates_in, c.frames_out, c.held) == (5, 3, 0)
    assert c.flush() == b""
    assert (c.updates_in, c.frames_out, c.held, c.held_bytes) == (5, 3, 0, 0)


# ---------------------------------------------------------------------------------------------
# traffic for the property tests


def _null_or(strategy: Any) -> Any:
    return st.one_of(st.none(), strategy, strategy, strategy)


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=3)
FIELDS = {
    "status": st.sampled_from(["pending", "in_progress", "completed", "failed"]),
    "title": TEXT,
    "kind": st.sampled_from(["read", "edit", "execute", "other"]),
    "content": st.lists(
        st.builds(lambda s: {"type": "content", "content": {"type": "text", "text": s}}, TEXT), max_size=2
    ),
    "rawOutput": st.one_of(
        st.integers(-3, 3),
        st.floats(allow_nan=False, allow_infinity=False),
        TEXT,
        st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 2), max_size=2),
    ),
    "locations": st.lists(
        st.fixed_dictionaries({"path": st.sampled_from(["/a", "/b"])}, optional={"line": st.integers(0, 9)}),
        max_size=2,
    ),
    "x": st.one_of(st.integers(0, 3), TEXT, st.lists(st.integers(0, 2), max_size=2)),
    "_meta": st.dictionaries(st.sampled_from(["a", "b", "c"]), st.one_of(st.none(), st.integers(0, 3)), max_size=3),
}
KINDS = ["update"] * 4 + ["tool_call", "chunk", "message", "permission", "answer", "response", "tick"]
DELAYS = [0.0, 0.0, 0.0, 0.001, 0.02, 0.049, 0.05, 0.051, 0.3]


_KEY = re.compile(rb'(?<!\\)"([A-Za-z_])([A-Za-z_0-9]*)"\s*:\s*')


def oddly(data: bytes) -> bytes:
    """The same message written oddly: each key's first letter as a ``\\u`` escape, tabs around
    the colons, a CR before the LF."""
    return _KEY.sub(lambda m: b'"\\u%04x%s"\t: ' % (ord(m[1]), m[2]), data[:-1]) + b"\r\n"


@st.composite
def event(draw, kinds: List[str]) -> Tuple[Any, ...]:
    kind = draw(st.sampled_from(kinds))
    sid = draw(st.integers(0, 2))
    tcid = draw(st.integers(0, 3))
    fields: Dict[str, Any] = {}
    if kind == "update":
        for name in draw(st.lists(st.sampled_from(sorted(FIELDS)), unique=True, max_size=4)):
            fields[name] = draw(_null_or(FIELDS[name]))
    elif kind == "tool_call":
        fields = {"title": draw(TEXT), "status": "pending"}
    encoding = (draw(st.booleans()), draw(st.booleans()), draw(st.booleans()))  # ensure_ascii, spaced, odd
    return kind, sid, tcid, fields, draw(st.sampled_from(DELAYS)), draw(st.booleans()), encoding


@st.composite
def traffic(draw, updates_only: bool = False) -> Dict[str, Any]:
    """A random agent/client exchange: the store version, the coalescer's protocol (the version or
    None), ``ms``, and the steps ``(who, now, line)`` (who: "agent", "client" or "due").
    ``updates_only``: the updates of one tool call (and ticks), so that most of them merge."""
    version = draw(st.sampled_from([1, 2]))
    protocol = draw(st.sampled_from([version, version, None]))
    ms = draw(st.sampled_from([50.0, 50.0, 0.0, 20.0]))
    n_sessions = 1 if updates_only else draw(st.integers(1, 3))
    n_tools = 1 if updates_only else draw(st.sampled_from([1, 1, 2, 3, 4]))
    kinds = ["update", "update", "update", "update", "update", "tick"] if updates_only else KINDS
    # runs of events: long streams (about 20 events) that still shrink to one event
    runs = draw(st.lists(st.lists(event(kinds), min_size=1, max_size=8), max_size=6))
    events = [e for run in runs for e in run]
    steps: List[Tuple[str, float, bytes]] = []
    now = 0.0
    asked: List[int] = []
    for i, (kind, s, t, fields, delay, due_first, (ascii_, spaced, odd)) in enumerate(events):
        now += delay
        if due_first or kind == "tick":
            steps.append(("due", now, b""))
        if kind == "tick":
            continue
        sid, tcid = f"s{s % n_sessions + 1}", f"c{t % n_tools + 1}"
        who = "agent"
        msg: Any
        if kind == "update":
            msg = {"sessionUpdate": "tool_call_update", "toolCallId": tcid, **fields}
            msg = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": msg}}
        elif kind == "tool_call":
            update = {"sessionUpdate": "tool_call", "toolCallId": tcid, **fields}
            msg = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}}
        elif kind == "chunk":
            if version == 1:
                continue  # tool_call_content_chunk is v2 only
            content = {"type": "content", "content": {"type": "text", "text": "c"}}
            update = {"sessionUpdate": "tool_call_content_chunk", "toolCallId": tcid, "content": content}
            msg = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}}
        elif kind == "message":
            update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}
            if version == 2:
                update["messageId"] = "m1"
            msg = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}}
        elif kind == "permission":
            tool = {"toolCallId": tcid, "title": f"p{i}", **({"status": "in_progress"} if t % 2 else {})}
            params: Dict[str, Any] = {
                "sessionId": sid,
                "options": [{"optionId": "ok", "name": "Ok", "kind": "allow_once"}],
            }
            if version == 1:
                params["toolCall"] = tool
            else:
                params["title"] = "Allow?"
                params["subject"] = {"type": "tool_call", "toolCall": tool}
            msg = request(100 + i, "session/request_permission", params)
            asked.append(100 + i)
        elif kind == "answer":
            if not asked:
                continue
            who = "client"  # the editor's answer: straight to the store, not through the coalescer
            outcome = {"outcome": "selected", "optionId": "ok"} if t % 2 else {"outcome": "cancelled"}
            msg = {"jsonrpc": "2.0", "id": asked[t % len(asked)], "result": {"outcome": outcome}}
        else:  # the agent's answer to a request of the editor
            msg = {"jsonrpc": "2.0", "id": i, "result": {}}
        data = frame(msg, ensure_ascii=ascii_, spaced=spaced) + b"\n"
        steps.append((who, now, oddly(data) if odd else data))
    return {"version": version, "protocol": protocol, "ms": ms, "steps": steps}


def run(backend: Any, traffic: Dict[str, Any]) -> Dict[str, Any]:
    """Feed ``traffic`` to store A (as sent), through every coalescer (both backends, the same
    calls: their outputs must be equal) and what the coalescer forwarded to store B."""
    version = traffic["version"]
    a, b = backend.ToolCallStore(version), backend.ToolCallStore(version)
    coalescers = [cls(traffic["ms"], protocol=traffic["protocol"]) for cls in COALESCERS]
    coalescers.append(backend.Coalescer(traffic["ms"], protocol=traffic["protocol"]))
    pushes: List[Tuple[bytes, bytes]] = []  # (line pushed or b"" for due/flush, output)
    errors = {"a": 0, "b": 0}

    def forward(outs: List[bytes], what: bytes) -> None:
        assert all(out == outs[0] for out in outs), f"the backends differ on {what!r}: {outs!r}"
        pushes.append((what, outs[0]))
        errors["b"] += sum(isinstance(r, DecodeError) for r in b.feed(outs[0], source="agent"))

    for who, now, data in traffic["steps"]:
        if who == "due":
            forward([c.due(now) for c in coalescers], b"")
        elif who == "client":
            for store in (a, b):
                results = store.feed(data, source="client")
                assert not any(isinstance(r, DecodeError) for r in results), results
        else:
            results = a.feed(data, source="agent")
            tracked = not any(isinstance(r, DecodeError) for r in results)
            errors["a"] += not tracked
            forward([c.push(data, now, tracked=tracked) for c in coalescers], data)
    forward([c.flush() for c in coalescers], b"")
    for c in coalescers:
        assert (c.held, c.held_bytes, c.deadline) == (0, 0, None)
    return {"a": a, "b": b, "pushes": pushes, "errors": errors}


# ---------------------------------------------------------------------------------------------
# 6. the same state, the same bytes


@settings(max_examples=150, deadline=None)
@given(traffic())
def test_coalesced_traffic_gives_the_same_state(backend, traffic):
    note(f"version {traffic['version']}, protocol {traffic['protocol']}, ms {traffic['ms']}")
    assert_same_state(run(backend, traffic))


@settings(max_examples=150, deadline=None)
@given(traffic(updates_only=True))
def test_merged_updates_give_the_same_state(backend, traffic):
    # the same, on the updates of one tool call: most of them merged (nulls, _meta patches)
    note(f"version {traffic['version']}, protocol {traffic['protocol']}, ms {traffic['ms']}")
    assert_same_state(run(backend, traffic))


def assert_same_state(got: Dict[str, Any]) -> None:
    """Store A (the raw agent lines) and store B (the coalescer's output) of ``run`` agree."""
    a, b = got["a"].state(), got["b"].state()
    # (Nor the creation order of tool calls ACROSS sessions, which the checkpoint keeps for the
    # eviction bound: for the same reason as the sessions' order, below.)
    a.pop("toolCallOrder", None)
    b.pop("toolCallOrder", None)
    # (Nor the sessions' order of activity, which the checkpoint keeps for `max_sessions`: held
    # updates are a session's activity later than their arrival.)
    a.pop("sessionOrder", None)
    b.pop("sessionOrder", None)
    # The merged lines are valid wherever their parts were: no error more, none less.
    assert got["errors"]["a"] == got["errors"]["b"]
    # Nothing in state() counts updates, so all of it must be equal (``==``: lists in order,
    # mappings whatever their order), each record also in key order (DESIGN 7.3 fixes it), and a
    # session's tool calls in the order they were created (a release takes the session's older
    # entries along). Not compared: the ORDER of the ``sessions`` mapping. A session is created
    # by the first line naming it; when that line is a held update, lines of other sessions pass
    # it (only its own session's releasing lines and responses take it along).
    assert a == b
    for sid, session in a["sessions"].items():
        other = b["sessions"][sid]
        assert list(other["toolCalls"]) == list(session["toolCalls"])
        for tcid, record in session["toolCalls"].items():
            assert_record(other["toolCalls"][tcid], record)
        assert_record(other["permissions"], session["permissions"])
        assert_record(other.get("entities"), session.get("entities"))


def test_tool_calls_are_created_in_the_agents_order(backend):
    # c2 is created by its first update, held; c1's tool_call (which may create c1) releases the
    # session's held entries first: the editor creates c2 then c1, as the agent did
    steps = [
        ("agent", 0.0, upd({"title": "b"}, tcid="c2")),
        ("agent", 0.0, line(tool_call("s1", "c1", {"title": "a"}))),
    ]
    got = run(backend, {"version": 2, "protocol": 2, "ms": 50.0, "steps": steps})
    assert [out for _, out in got["pushes"]] == [b"", steps[0][2] + steps[1][2], b""]
    a, b = got["a"].state(), got["b"].state()
    assert list(a["sessions"]["s1"]["toolCalls"]) == list(b["sessions"]["s1"]["toolCalls"]) == ["c2", "c1"]


def test_a_final_status_takes_the_sessions_older_entries_along(backend):
    # c2 completes while c1 (created first, by a held update) is still held: c1 goes out first
    steps = [
        ("agent", 0.0, upd({"title": "a"}, tcid="c1")),
        ("agent", 0.0, upd({"title": "b"}, tcid="c2")),
        ("agent", 0.0, line(session_update("s2", {"sessionUpdate": "tool_call_update", "toolCallId": "x"}))),
        ("agent", 0.0, upd({"status": "completed"}, tcid="c2")),
    ]
    got = run(backend, {"version": 2, "protocol": 2, "ms": 50.0, "steps": steps})
    merged = upd({"title": "b", "status": "completed"}, tcid="c2")
    assert [out for _, out in got["pushes"]] == [b"", b"", b"", steps[0][2] + merged, steps[2][2]]
    assert list(got["b"].state()["sessions"]["s1"]["toolCalls"]) == ["c1", "c2"]


def test_the_same_state_on_a_known_exchange(backend):
    # the property above on one fixed v2 exchange, with the store checked against the raw lines
    steps = [
        ("agent", 0.0, line(tool_call("s1", "c1", {"title": "Read", "status": "pending"}))),
        ("agent", 0.0, upd({"status": "in_progress", "_meta": {"a": 1}})),
        ("agent", 0.01, upd({"content": [{"type": "content", "content": {"type": "text", "text": "x"}}]})),
        ("agent", 0.02, upd({"_meta": {"b": None}, "title": None})),
        ("agent", 0.03, upd({"rawOutput": {"k": 1}, "status": "completed"})),
    ]
    got = run(backend, {"version": 2, "protocol": 2, "ms": 50.0, "steps": steps})
    assert [out for _, out in got["pushes"]] == [
        steps[0][2],
        b"",
        b"",
        b"",
        upd(
            {
                "status": "completed",
                "_meta": {"a": 1, "b": None},
                "content": [{"type": "content", "content": {"type": "text", "text": "x"}}],
                "title": None,
                "rawOutput": {"k": 1},
            }
        ),
        b"",
    ]
    record = got["b"].state()["sessions"]["s1"]["toolCalls"]["c1"]
    assert_record(record, got["a"].state()["sessions"]["s1"]["toolCalls"]["c1"])
    assert record["status"] == "completed" and "title" not in record and record["_meta"] == {"a": 1}


# ---------------------------------------------------------------------------------------------
# 5. and 7. order kept, passers byte for byte


def _marked(traffic: Dict[str, Any]) -> Dict[str, Any]:
    """``traffic`` with a unique unknown member ``"m<n>": n`` in every session update of a tool
    call, so each output line tells which input lines it stands for (``marked``: those n)."""
    steps = []
    marked = []
    for n, (who, now, data) in enumerate(traffic["steps"]):
        if who == "agent" and _tool_call_of(data) is not None:
            msg = json.loads(data)
            msg["params"]["update"][f"m{n}"] = n
            data = frame(msg) + b"\n"
            marked.append(n)
        steps.append((who, now, data))
    return {**traffic, "steps": steps, "marked": marked}


def _tool_call_of(data: bytes) -> Optional[Tuple[str, str, str, List[int]]]:
    """(session, tool call, sessionUpdate, markers) of a tool-call session update line."""
    msg = json.loads(data)
    if not isinstance(msg, dict) or msg.get("method") != "session/update":
        return None
    update = msg["params"]["update"]
    if "toolCallId" not in update:
        return None
    markers = [v for k, v in update.items() if re.fullmatch("m[0-9]+", k)]
    return msg["params"]["sessionId"], update["toolCallId"], update["sessionUpdate"], markers


def _scope(data: bytes) -> Optional[Tuple[Optional[str], Optional[str]]]:
    """What the agent line ``data`` releases before it: (session, tool call) of a ``tool_call`` or
    content chunk, (session, None) of a request naming a session, (None, None) of a response or
    a request naming none; None when it releases nothing."""
    msg = json.loads(data)
    if "method" not in msg:
        return None, None
    params = msg.get("params") or {}
    if "id" in msg:
        return params.get("sessionId"), None
    update = params.get("update") or {}
    if update.get("sessionUpdate") in ("tool_call", "tool_call_content_chunk"):
        return params["sessionId"], update["toolCallId"]
    if update.get("sessionUpdate") == "state_update":
        return params["sessionId"], None
    return None


@settings(max_examples=100, deadline=None)
@given(traffic())
def test_order_per_tool_call_is_kept(backend, traffic):
    marked = _marked(traffic)
    got = run(backend, marked)
    firsts: Dict[Tuple[str, str], List[int]] = {}
    seen: List[int] = []
    pushed_updates: List[Tuple[int, str, str]] = []  # (marker, session, tool call) of the updates pushed
    for pushed, out in got["pushes"]:
        for data in lines_of(out):
            found = _tool_call_of(data)
            if found is None:
                continue
            sid, tcid, _, markers = found
            assert markers, data
            firsts.setdefault((sid, tcid), []).append(min(markers))
            seen.extend(markers)
        if not pushed:
            continue
        found = _tool_call_of(pushed)
        if found is not None and found[2] == "tool_call_update":
            pushed_updates.append((found[3][0], found[0], found[1]))
            continue
        scope = _scope(pushed)
        if scope is not None:
            # what the line releases went out before it (by the same push, or earlier)
            for n, sid, tcid in pushed_updates:
                if scope[0] in (None, sid) and scope[1] in (None, tcid):
                    assert n in seen, (n, pushed)
    for key, order in firsts.items():
        assert order == sorted(order), key
    # every input line of a tool call stands in exactly one output line
    assert sorted(seen) == marked["marked"]


@settings(max_examples=100, deadline=None)
@given(traffic())
def test_non_updates_pass_byte_for_byte_in_order(backend, traffic):
    got = run(backend, traffic)
    sent: List[bytes] = []
    forwarded: List[bytes] = []
    for pushed, out in got["pushes"]:
        if pushed:
            found = _tool_call_of(pushed)
            if found is None or found[2] != "tool_call_update":
                # not an update: forwarded by the push that got it, after what it released
                assert out.endswith(pushed)
                sent.append(pushed)
        for data in lines_of(out):
            found = _tool_call_of(data)
            if found is None or found[2] != "tool_call_update":
                forwarded.append(data)
    assert forwarded == sent
