"""Bounded memory (issue 16, item 3; docs/API.md "Bounds and checkpoints", DESIGN 7.8): the
output of a terminal, the content of a tool call, the plans, the permission records and the
unknown updates of a session each keep within a bound, and what a bound dropped is marked
(``_truncated``) in the records, the checkpoint (written and read back) and ``acp-fast proxy``'s
options. Both backends; a property test compares them on generated traffic with small bounds."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from acp_fast import DecodeError
from acp_fast import builders as B
from state_helpers import ALLOW, OPTIONS, empty_state, rec, terminal_frame
from state_model import assert_record, change_of, chunk, frame, request, results_key, session_update, tool_call_update
from state_strategies import MIXED_STREAMS, TERMINAL_STREAMS, TOOL_CALL_STREAMS

PY = sys.executable

BOUNDS = {
    # name: (default, smallest value)
    "max_terminal_bytes": (1048576, 0),
    "max_content_items": (1000, 0),
    "max_plans": (100, 1),
    "max_permissions": (1000, 1),
    "max_updates": (1000, 0),
    "max_terminals": (1000, 1),
}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def out_chunk(sid: str, tid: str, data: bytes) -> bytes:
    return session_update(sid, {"sessionUpdate": "terminal_output_chunk", "terminalId": tid, "data": b64(data)})


# ------------------------------------------------------------------------------------------
# arguments
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(BOUNDS))
def test_bound_arguments(backend, name):
    default, least = BOUNDS[name]
    assert getattr(backend.ToolCallStore(), name) == default
    assert getattr(backend.ToolCallStore(**{name: None}), name) is None
    assert getattr(backend.ToolCallStore(**{name: least}), name) == least
    assert getattr(backend.ToolCallStore(**{name: 2**63 - 1}), name) == 2**63 - 1
    what = "a non-negative integer" if least == 0 else "a positive integer"
    for bad in (least - 1, True, False, "5", 2.0, 2**63, [1]):
        with pytest.raises(ValueError) as info:
            backend.ToolCallStore(**{name: bad})
        assert str(info.value) == f"expected {name} to be {what} or None, found {bad!r}"


def test_same_bound_parameters(both_backends):
    import inspect

    sigs = [inspect.signature(b.ToolCallStore).parameters for b in both_backends]
    for name, (default, _) in BOUNDS.items():
        for params in sigs:
            assert params[name].kind is inspect.Parameter.KEYWORD_ONLY and params[name].default == default


# ------------------------------------------------------------------------------------------
# terminal output: the tail, from a UTF-8 character boundary
# ------------------------------------------------------------------------------------------


def test_terminal_output_keeps_its_tail(backend):
    s = backend.ToolCallStore(max_terminal_bytes=6)
    text = "héllo wörld ✓".encode()  # é ö: 2 bytes, ✓: 3 bytes
    for i in range(0, len(text), 4):
        s.apply(out_chunk("s1", "t1", text[i : i + 4]))
    got = s.terminal("s1", "t1")
    # the last 6 bytes are "ld ✓" minus nothing: l d space + 3 bytes of ✓
    assert got == {"terminalId": "t1", "output": "ld ✓".encode(), "_truncated": {"droppedBytes": len(text) - 6}}
    # a cut inside a character moves past it (the kept output is then shorter than the bound)
    s.apply(out_chunk("s1", "t2", "aé✓".encode()))  # 1 + 2 + 3 bytes: keep 4 → cut inside é
    s2 = backend.ToolCallStore(max_terminal_bytes=4)
    s2.apply(out_chunk("s1", "t2", "aé✓".encode()))
    assert s2.terminal("s1", "t2") == {"terminalId": "t2", "output": "✓".encode(), "_truncated": {"droppedBytes": 3}}
    # state() and the checkpoint hold the same, output in base64
    term = s2.state()["sessions"]["s1"]["terminals"]["t2"]
    assert term == {"terminalId": "t2", "output": b64("✓".encode()), "_truncated": {"droppedBytes": 3}}
    assert b'"t2":{"terminalId":"t2","output":"4pyT","_truncated":{"droppedBytes":3}}' in s2.to_json()


def test_terminal_output_bytes_that_are_not_utf8(backend):
    s = backend.ToolCallStore(max_terminal_bytes=2)
    s.apply(out_chunk("s", "t", b"\x80" * 10))
    # at most 3 continuation bytes are passed over
    assert s.terminal("s", "t") == {"terminalId": "t", "output": b"", "_truncated": {"droppedBytes": 10}}
    s = backend.ToolCallStore(max_terminal_bytes=5)
    s.apply(out_chunk("s", "t", b"\x00" + b"\x80" * 6))
    assert s.terminal("s", "t") == {"terminalId": "t", "output": b"\x80\x80", "_truncated": {"droppedBytes": 5}}


def test_a_snapshot_starts_the_count_again(backend):
    s = backend.ToolCallStore(max_terminal_bytes=3)
    s.apply(out_chunk("s", "t", b"abcdef"))
    assert s.terminal("s", "t")["_truncated"] == {"droppedBytes": 3}
    s.apply(terminal_frame("s", "t", output={"data": b64(b"xy")}))
    assert s.terminal("s", "t") == {"terminalId": "t", "output": b"xy"}
    s.apply(terminal_frame("s", "t", output={"data": b64(b"123456789")}))
    assert s.terminal("s", "t") == {"terminalId": "t", "output": b"789", "_truncated": {"droppedBytes": 6}}
    s.apply(terminal_frame("s", "t", output=None))
    assert s.terminal("s", "t") == {"terminalId": "t", "output": b""}
    # unbounded: everything kept; 0: nothing
    s = backend.ToolCallStore(max_terminal_bytes=None)
    s.apply(out_chunk("s", "t", b"x" * 5000))
    assert s.terminal("s", "t") == {"terminalId": "t", "output": b"x" * 5000}
    s = backend.ToolCallStore(max_terminal_bytes=0)
    s.apply(out_chunk("s", "t", b"xy"))
    assert s.terminal("s", "t") == {"terminalId": "t", "output": b"", "_truncated": {"droppedBytes": 2}}


def test_long_output_stays_bounded(backend):
    s = backend.ToolCallStore(max_terminal_bytes=1000)
    piece = b"0123456789" * 40
    for _ in range(2000):
        s.apply(out_chunk("s", "t", piece))
    got = s.terminal("s", "t")
    assert got["output"] == (piece * 3)[-1000:]
    assert got["_truncated"] == {"droppedBytes": 2000 * 400 - 1000}


def test_the_marker_name_is_reserved_in_updates(backend):
    s = backend.ToolCallStore(2, max_terminal_bytes=1, max_content_items=1)
    s.apply(terminal_frame("s", "t", output={"data": b64(b"ab")}, _truncated={"droppedBytes": 99}, z=1))
    assert s.terminal("s", "t") == {"terminalId": "t", "output": b"b", "z": 1, "_truncated": {"droppedBytes": 1}}
    s.apply(tool_call_update("s", "c", {"_truncated": 5, "zz": 1}))
    assert_record(s.get("s", "c"), rec("c", zz=1))
    s.apply(session_update("s", {"sessionUpdate": "tool_call", "toolCallId": "d", "_truncated": [], "content": [1, 2]}))
    assert_record(s.get("s", "d"), rec("d", content=[2], _truncated={"droppedItems": 1}))


# ------------------------------------------------------------------------------------------
# content of a tool call
# ------------------------------------------------------------------------------------------


def test_chunks_keep_the_last_items(backend):
    s = backend.ToolCallStore(2, max_content_items=3)
    items = [B.text_content(str(i)) for i in range(7)]
    changes = [s.apply(chunk("s1", "c1", item)) for item in items]
    assert [change_of(backend, c)[3] for c in changes] == ["created"] + ["appended"] * 6
    assert_record(s.get("s1", "c1"), rec("c1", content=items[4:], _truncated={"droppedItems": 4}))
    assert_record(s.snapshot(), {"s1": {"c1": rec("c1", content=items[4:], _truncated={"droppedItems": 4})}})
    # an update that leaves content alone keeps the count; one that sets it starts it again
    s.apply(tool_call_update("s1", "c1", {"status": "completed"}))
    assert s.get("s1", "c1")["_truncated"] == {"droppedItems": 4}
    s.apply(tool_call_update("s1", "c1", {"content": items[:2]}))
    assert_record(s.get("s1", "c1"), rec("c1", status="completed", content=items[:2]))
    s.apply(tool_call_update("s1", "c1", {"content": items}))
    assert_record(s.get("s1", "c1"), rec("c1", status="completed", content=items[4:], _truncated={"droppedItems": 4}))
    # v2 null empties the content, and the count with it
    s.apply(tool_call_update("s1", "c1", {"content": None}))
    assert_record(s.get("s1", "c1"), rec("c1", status="completed"))


def test_content_bound_under_v1_and_for_every_way_of_setting_content(backend):
    items = [B.text_content(str(i)) for i in range(5)]
    s = backend.ToolCallStore(1, max_content_items=2)
    s.apply(B.tool_call("s1", "a", "T", content=items))
    assert_record(s.get("s1", "a"), rec("a", title="T", content=items[3:], _truncated={"droppedItems": 3}))
    # v1: null leaves content (and its count) as they are
    s.apply(tool_call_update("s1", "a", {"content": None, "status": "failed"}))
    assert s.get("s1", "a")["_truncated"] == {"droppedItems": 3}
    # a v1 tool_call replaces the record whole
    s.apply(B.tool_call("s1", "a", "T2"))
    assert_record(s.get("s1", "a"), rec("a", title="T2"))
    # a permission request's tool call
    s.apply(
        frame(
            request(
                1,
                "session/request_permission",
                {"sessionId": "s1", "toolCall": {"toolCallId": "p", "content": items}, "options": [ALLOW]},
            )
        )
    )
    assert_record(s.get("s1", "p"), rec("p", content=items[3:], _truncated={"droppedItems": 3}))
    # 0 keeps none
    s = backend.ToolCallStore(2, max_content_items=0)
    s.apply(chunk("s1", "c", items[0]))
    s.apply(chunk("s1", "c", items[1]))
    assert_record(s.get("s1", "c"), rec("c", _truncated={"droppedItems": 2}))


# ------------------------------------------------------------------------------------------
# plans, permission records
# ------------------------------------------------------------------------------------------


def _plan(sid, pid):
    return session_update(sid, {"sessionUpdate": "plan_update", "plan": {"planId": pid, "entries": []}})


def test_plans_beyond_the_bound_drop_the_oldest(backend):
    s = backend.ToolCallStore(max_plans=2)
    for pid in ("a", "b", "a", "c", "d"):
        s.apply(_plan("s1", pid))
    assert list(s.plans("s1")) == ["c", "d"]
    assert s.state()["sessions"]["s1"]["_truncated"] == {"droppedPlans": 2}
    s.apply(session_update("s1", {"sessionUpdate": "plan_removed", "planId": "c"}))
    s.apply(B.plan("s1", [B.plan_entry("x")]))
    assert list(s.plans("s1")) == ["d", "main"]
    s.apply(_plan("s2", "z"))
    assert "_truncated" not in s.state()["sessions"]["s2"]


def _ask(sid, rid):
    return frame(request(rid, "session/request_permission", {"sessionId": sid, "options": OPTIONS}))


def _answer(rid):
    return B.permission_response(rid, "allow")


def test_permission_records_keep_the_newest(backend):
    s = backend.ToolCallStore(max_permissions=2)
    for rid in (1, 2, 3):
        s.apply(_ask("s1", rid))
    # no resolved record to drop: the oldest pending one goes (issue 28: pending ones were kept)
    assert [p["id"] for p in s.permissions("s1")] == [2, 3]
    assert s.apply(_answer(1)) is None  # dropped: nothing to resolve
    s.apply(_answer(2))
    s.apply(_ask("s2", 9))
    assert [p["id"] for p in s.permissions("s1")] == [2, 3]  # another session's request
    s.apply(_ask("s1", 4))
    assert [p["id"] for p in s.permissions("s1")] == [3, 4]  # the resolved one first
    assert s.permission(1) is None and s.permission(3)["outcome"] == "pending"
    assert s.state()["sessions"]["s1"]["_truncated"] == {"droppedPermissions": 2}
    assert s.state()["permissionOrder"] == ["s1", "s2", "s1"]
    assert len(s.cancel_responses("s1")) == 2
    # long runs stay bounded, the pending records found by id
    for rid in range(100, 400):
        s.apply(_ask("s1", rid))
        assert change_of(backend, s.apply(_answer(rid)))[3] == "resolved"
    assert [p["id"] for p in s.permissions("s1")] == [4, 399]
    assert s.pending_permissions("s1") == [p for p in s.permissions("s1") if p["outcome"] == "pending"]
    assert s.apply(_answer(3)) is None
    assert change_of(backend, s.apply(_answer(4)))[2:4] == (4, "resolved")


_PERMISSION_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("ask"), st.sampled_from(["s1", "s2", "s3"]), st.integers(0, 12)),
        st.tuples(st.just("answer"), st.just(""), st.integers(0, 12)),
        st.tuples(st.just("restore"), st.just(""), st.just(0)),
    ),
    max_size=120,
)


@given(ops=_PERMISSION_OPS, limit=st.integers(1, 4))
def test_permission_bound_matches_a_linear_scan_model(backend, ops, limit):
    """The bound drops, per session, the resolved record first in request order, else the pending
    one first in request order (resolutions in any order, ids reused, checkpoints in between): the
    same records as a scan of the list from the start (the algorithm before issue 16's review made
    it a heap), the same counts."""
    s = backend.ToolCallStore(max_permissions=limit)
    records: list = []  # [sid, id, resolved], request order
    dropped: dict = {}
    for op, sid, rid in ops:
        note(f"{op} {sid} {rid}")
        if op == "restore":
            s = backend.ToolCallStore.from_json(s.to_json())
            continue
        if op == "answer":
            s.apply(_answer(rid))
            for r in records:
                if r[1] == rid and not r[2]:
                    r[2] = True
            continue
        s.apply(_ask(sid, rid))
        records = [r for r in records if r[1] != rid or r[2]] + [[sid, rid, False]]
        while sum(r[0] == sid for r in records) > limit:
            oldest = next((r for r in records if r[0] == sid and r[2]), None)
            if oldest is None:
                oldest = next(r for r in records if r[0] == sid)
            records.remove(oldest)
            dropped[sid] = dropped.get(sid, 0) + 1
        state = s.state()
        assert state["permissionOrder"] == [r[0] for r in records]
        for name in ("s1", "s2", "s3"):
            kept = [(p["id"], p["outcome"] != "pending") for p in s.permissions(name)]
            assert kept == [(r[1], r[2]) for r in records if r[0] == name]
            marker = state["sessions"].get(name, {}).get("_truncated", {})
            assert marker.get("droppedPermissions", 0) == dropped.get(name, 0)


# ------------------------------------------------------------------------------------------
# checkpoints
# ------------------------------------------------------------------------------------------


def _bounded_store(backend):
    s = backend.ToolCallStore(
        2, max_terminal_bytes=2, max_content_items=1, max_plans=1, max_permissions=1, max_updates=1
    )
    s.apply(out_chunk("s1", "t", b"abcd"))
    s.apply(chunk("s1", "c", B.text_content("A")))
    s.apply(chunk("s1", "c", B.text_content("B")))
    s.apply(_plan("s1", "p"))
    s.apply(_plan("s1", "q"))
    s.apply(_ask("s1", 1))
    s.apply(_answer(1))
    s.apply(_ask("s1", 2))
    s.apply(session_update("s1", {"sessionUpdate": "_x"}))
    s.apply(session_update("s1", {"sessionUpdate": "_y"}))
    return s


def test_markers_in_the_checkpoint(backend):
    s = _bounded_store(backend)
    doc = s.to_json()
    assert doc.startswith(
        b'{"format":"acp-fast-state/2","protocolVersion":2,"negotiatedVersion":null,"maxToolCalls":1000,'
        b'"maxTerminalBytes":2,"maxContentItems":1,"maxPlans":1,"maxPermissions":1,"maxUpdates":1,"evicted":0,'
    )
    assert b'"locations":[],"_truncated":{"droppedItems":1}}' in doc
    assert b'"output":"Y2Q=","_truncated":{"droppedBytes":2}}' in doc
    assert doc.endswith(
        b'"updates":[{"sessionUpdate":"_y"}],"_truncated":{"droppedPlans":1,"droppedPermissions":1,"droppedUpdates":1}}},'
        b'"permissionOrder":["s1"]}'
    )
    restored = backend.ToolCallStore.from_json(doc)
    assert restored.to_json() == doc
    assert_record(restored.state(), s.state())
    assert (restored.max_terminal_bytes, restored.max_content_items, restored.max_plans, restored.max_permissions) == (
        2,
        1,
        1,
        1,
    )
    # the restored store goes on counting
    for store in (s, restored):
        store.apply(out_chunk("s1", "t", b"e"))
        store.apply(chunk("s1", "c", B.text_content("C")))
    assert restored.to_json() == s.to_json()
    assert s.terminal("s1", "t")["_truncated"] == {"droppedBytes": 3}


def _doc(**session):
    return {
        **empty_state(sessions={"s1": {"toolCalls": {}, "terminals": {}, "plans": {}, "permissions": [], **session}})
    }


TC = {"toolCallId": "c", "kind": "other", "status": "pending", "content": [], "locations": []}
TERM = {"terminalId": "t", "output": ""}
BAD_MARKERS = [
    (
        _doc(toolCalls={"c": {**TC, "_truncated": 3}}),
        'expected "state.sessions.s1.toolCalls.c._truncated" to be an object, found number',
    ),
    (
        _doc(toolCalls={"c": {**TC, "_truncated": {}}}),
        'expected "state.sessions.s1.toolCalls.c._truncated.droppedItems" to be present, found none',
    ),
    (
        _doc(toolCalls={"c": {**TC, "_truncated": {"droppedItems": 0}}}),
        'expected "state.sessions.s1.toolCalls.c._truncated.droppedItems" to be a positive integer, found number',
    ),
    (
        _doc(toolCalls={"c": {**TC, "_truncated": {"droppedItems": 1, "droppedBytes": 1}}}),
        'expected "state.sessions.s1.toolCalls.c._truncated.droppedBytes" to be absent, found number',
    ),
    (
        _doc(toolCalls={"c": {**TC, "_truncated": {"droppedItems": "1"}}}),
        'expected "state.sessions.s1.toolCalls.c._truncated.droppedItems" to be a positive integer, found string',
    ),
    (
        {
            **_doc(toolCalls={"c": {**TC, "_truncated": {"droppedItems": 1}}}),
            "maxContentItems": None,
            "maxContentBytes": None,
        },
        (
            'expected "state.sessions.s1.toolCalls.c._truncated.droppedItems" to be absent (state.maxContentItems'
            " and state.maxContentBytes are null), found number"
        ),
    ),
    (
        _doc(terminals={"t": {**TERM, "_truncated": {"droppedBytes": -1}}}),
        'expected "state.sessions.s1.terminals.t._truncated.droppedBytes" to be a positive integer, found number',
    ),
    (
        _doc(terminals={"t": {**TERM, "_truncated": {"droppedItems": 2}}}),
        'expected "state.sessions.s1.terminals.t._truncated.droppedItems" to be absent, found number',
    ),
    (
        {**_doc(terminals={"t": {**TERM, "_truncated": {"droppedBytes": 2}}}), "maxTerminalBytes": None},
        'expected "state.sessions.s1.terminals.t._truncated.droppedBytes" to be absent (state.maxTerminalBytes is null), found number',
    ),
    (
        _doc(_truncated={}),
        'expected "state.sessions.s1._truncated" to be an object with at least one count, found object',
    ),
    (
        _doc(_truncated={"droppedPlans": 1.5}),
        'expected "state.sessions.s1._truncated.droppedPlans" to be a positive integer, found number',
    ),
    (
        {**_doc(_truncated={"droppedPermissions": 1}), "maxPermissions": None},
        'expected "state.sessions.s1._truncated.droppedPermissions" to be absent (state.maxPermissions is null), found number',
    ),
    ({**_doc(), "maxPlans": 0}, 'expected "state.maxPlans" to be a positive integer or null, found number'),
    (
        {**_doc(), "maxPermissions": True},
        'expected "state.maxPermissions" to be a positive integer or null, found boolean',
    ),
    (
        {**_doc(), "maxTerminalBytes": -1},
        'expected "state.maxTerminalBytes" to be a non-negative integer or null, found number',
    ),
    (
        {**_doc(), "maxContentItems": 2**63},
        'expected "state.maxContentItems" to be a non-negative integer or null, found number',
    ),
]


@pytest.mark.parametrize(("doc", "message"), BAD_MARKERS, ids=[str(i) for i in range(len(BAD_MARKERS))])
def test_from_json_rejects_inconsistent_markers(backend, doc, message):
    with pytest.raises(ValueError) as info:
        backend.ToolCallStore.from_json(json.dumps(doc))
    assert type(info.value) is ValueError
    assert str(info.value) == message


def test_restore_is_exact_and_the_bounds_apply_to_what_follows(backend):
    # a checkpoint may hold more than its bounds (written with others): restored as it is
    doc = _doc(terminals={"t": {**TERM, "output": b64(b"abcdef")}}, toolCalls={"c": {**TC, "content": [1, 2, 3]}})
    doc["maxTerminalBytes"] = 4
    doc["maxContentItems"] = 2
    s = backend.ToolCallStore.from_json(json.dumps(doc))
    assert s.terminal("s1", "t")["output"] == b"abcdef"
    assert s.get("s1", "c")["content"] == [1, 2, 3]
    s.apply(out_chunk("s1", "t", b"g"))
    s.apply(chunk("s1", "c", {"n": 4}))
    assert s.terminal("s1", "t") == {"terminalId": "t", "output": b"defg", "_truncated": {"droppedBytes": 3}}
    assert s.get("s1", "c")["content"] == [3, {"n": 4}] and s.get("s1", "c")["_truncated"] == {"droppedItems": 2}


def test_checkpoint_counts_are_63_bit_integers(backend):
    # the same on both backends: within 64 bits or beyond, signed or not
    for member, what in (("maxToolCalls", "a positive integer or null"), ("evicted", "a non-negative integer")):
        for value in (2**63, 2**64 - 1, 2**64, 10**30, -(2**64)):
            with pytest.raises(ValueError) as info:
                backend.ToolCallStore.from_json(json.dumps({**empty_state(), member: value}))
            assert type(info.value) is ValueError
            assert str(info.value) == f'expected "state.{member}" to be {what}, found number', value
    # up to 2**63-1 they are taken, in a checkpoint and as an argument
    doc = json.dumps({**empty_state(), "maxToolCalls": 2**63 - 1, "evicted": 2**63 - 1})
    s = backend.ToolCallStore.from_json(doc)
    assert (s.max_tool_calls, s.evicted) == (2**63 - 1, 2**63 - 1)
    assert s.to_json() == doc.replace(" ", "").encode()
    assert backend.ToolCallStore(max_tool_calls=2**63 - 1).max_tool_calls == 2**63 - 1
    for bad in (2**63, 2**64, 0):
        with pytest.raises(ValueError) as info:
            backend.ToolCallStore(max_tool_calls=bad)
        assert str(info.value) == f"expected max_tool_calls to be a positive integer or None, found {bad!r}"


# ------------------------------------------------------------------------------------------
# the proxy
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--max-terminal-bytes", "-1"),
        ("--max-terminal-bytes", "x"),
        ("--max-content-items", "1.5"),
        ("--max-plans", "0"),
        ("--max-permissions", "0"),
        ("--max-permissions", str(2**63)),
        ("--max-updates", "-3"),
        ("--max-terminals", "0"),
        ("--max-terminals", "-1"),
    ],
)
def test_proxy_bound_options_are_checked(backend_id, option, value):
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    cmd = [PY, "-m", "acp_fast.cli", "proxy", option, value, "--", PY, "-c", "pass"]
    done = subprocess.run(cmd, input=b"", capture_output=True, env=env, timeout=60)
    assert done.returncode == 2
    last = done.stderr.decode().strip().splitlines()[-1]
    assert last.startswith("acp-fast proxy: error: ") and option in last and "Traceback" not in done.stderr.decode()
    least = 1 if option in ("--max-plans", "--max-permissions", "--max-terminals") else 0
    assert f"expected an integer from {least} to 2**63-1 or none, found " in last


def test_proxy_bounds_reach_the_state(tmp_path, backend_id):
    frames = [
        out_chunk("s1", "u", b"x"),
        out_chunk("s1", "t", b"abcdef"),
        chunk("s1", "c", {"n": 1}),
        chunk("s1", "c", {"n": 2}),
        _plan("s1", "p"),
        _plan("s1", "q"),
    ]
    data = b"".join(f + b"\n" for f in frames)
    (tmp_path / "out.ndjson").write_bytes(data)
    agent = [PY, "-c", f"import sys; sys.stdout.buffer.write(open({str(tmp_path / 'out.ndjson')!r}, 'rb').read())"]
    state = tmp_path / "state.json"
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    options = ["--max-terminal-bytes", "3", "--max-content-items", "1", "--max-plans", "1", "--max-permissions", "none"]
    options += ["--max-terminals", "1"]
    cmd = [PY, "-m", "acp_fast.cli", "proxy", "--state-json", str(state), *options, "--", *agent]
    done = subprocess.run(cmd, input=b"", capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == data
    doc = json.loads(state.read_bytes())
    assert (doc["maxTerminalBytes"], doc["maxContentItems"], doc["maxPlans"], doc["maxPermissions"]) == (3, 1, 1, None)
    assert doc["maxTerminals"] == 1
    session = doc["sessions"]["s1"]
    # the terminal u, the oldest, was dropped for t
    assert session["terminals"] == {"t": {"terminalId": "t", "output": b64(b"def"), "_truncated": {"droppedBytes": 3}}}
    assert session["toolCalls"]["c"]["_truncated"] == {"droppedItems": 1}
    assert session["_truncated"] == {"droppedTerminals": 1, "droppedPlans": 1}


# ------------------------------------------------------------------------------------------
# both backends alike, on generated traffic with small bounds
# ------------------------------------------------------------------------------------------

SMALL = st.fixed_dictionaries(
    {
        "max_terminal_bytes": st.sampled_from([0, 1, 2, 3, 5, None]),
        "max_content_items": st.sampled_from([0, 1, 2, None]),
        "max_plans": st.sampled_from([1, 2, None]),
        "max_permissions": st.sampled_from([1, 2, None]),
        "max_updates": st.sampled_from([0, 1, 2, None]),
        "max_terminals": st.sampled_from([1, 2, None]),
    }
)


@given(
    bounds=SMALL,
    version=st.sampled_from([None, 1, 2]),
    streams=st.lists(st.one_of(MIXED_STREAMS, TERMINAL_STREAMS, TOOL_CALL_STREAMS), min_size=1, max_size=3),
)
def test_both_backends_bound_alike(both_backends, bounds, version, streams):
    native, fallback = both_backends
    stores = [b.ToolCallStore(version, **bounds) for b in both_backends]
    for i, data in enumerate(f for stream in streams for f in stream):
        note(f"frame {i}: {data!r}")
        got = []
        for backend, store in zip(both_backends, stores):
            try:
                got.append(results_key(backend, store.apply(data)))
            except DecodeError as exc:
                got.append(("raised", exc))
        assert got[0] == got[1]
        assert stores[0].to_json() == stores[1].to_json()
    doc = stores[0].to_json()
    for backend in both_backends:
        restored = backend.ToolCallStore.from_json(doc)
        assert restored.to_json() == doc
    # the stream once more through feed, in one piece: the same state
    fed = [b.ToolCallStore(version, **bounds) for b in both_backends]
    for store in fed:
        store.feed(b"".join(f + b"\n" for stream in streams for f in stream))
    assert fed[0].to_json() == fed[1].to_json() == doc
    assert_record(native.loads(doc), fallback.ToolCallStore.from_json(doc).state())
