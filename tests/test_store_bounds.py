"""Memory across sessions (issue 28, item 2, the store's share): every structure of the store that
grows with traffic is bounded, with a marker or a counter where something was dropped; both
backends.

* pending permission requests are bounded by ``max_permissions`` like resolved ones (the oldest
  resolved record of the session goes first, else the oldest pending one), counted in
  ``droppedPermissions``;
* an answered ``session/close`` / ``session/delete`` frees all the session held (``closed_sessions``);
* ``max_sessions``: a new session beyond the bound drops the least recently active one, with all it
  held (``evicted_sessions``, ``evictedSessions``), and a checkpoint keeps the activity order;
* ``max_content_bytes``: a tool call's content in bytes (its items' JSON text), the oldest items
  dropped first, never the newest (``droppedItems``).
"""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from acp_fast import DecodeError
from acp_fast import builders as B
from state_model import chunk, frame, request, response, session_update, tool_call_update
from state_strategies import MIXED_STREAMS

OPTIONS = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]


def _ask(sid, rid):
    return frame(request(rid, "session/request_permission", {"sessionId": sid, "options": OPTIONS}))


def test_pending_permission_requests_are_bounded(backend):
    # 100,000 requests nobody answers, with max_permissions=10: the last 10 are kept
    s = backend.ToolCallStore(max_permissions=10)
    n = 100_000
    for rid in range(n):
        s.apply(_ask("s1", rid))
    kept = [p["id"] for p in s.pending_permissions("s1")]
    assert kept == list(range(n - 10, n))
    assert s.state()["sessions"]["s1"]["_truncated"] == {"droppedPermissions": n - 10}
    assert len(s.cancel_responses("s1")) == 10
    assert len(s.state()["permissionOrder"]) == 10
    # a dropped request's answer resolves nothing; a kept one's resolves it
    assert s.apply(B.permission_response(0, "allow")) is None
    assert tuple(s.apply(B.permission_response(n - 1, "allow")))[3] == "resolved"
    # the same after a checkpoint
    r = backend.ToolCallStore.from_json(s.to_json())
    for store in (s, r):
        store.apply(_ask("s1", n))  # the resolved n - 1 goes first
        assert [p["id"] for p in store.permissions("s1")] == [*range(n - 10, n - 1), n]
    assert r.to_json() == s.to_json()


def test_pending_bound_is_per_session_and_resolved_go_first(backend):
    s = backend.ToolCallStore(max_permissions=2)
    s.apply(_ask("a", 1))
    s.apply(_ask("b", 2))
    s.apply(_ask("a", 3))
    s.apply(B.permission_response(3, "allow"))
    s.apply(_ask("a", 4))  # a holds 1 (pending), 3 (resolved), 4: the resolved 3 goes
    assert [p["id"] for p in s.permissions("a")] == [1, 4]
    s.apply(_ask("a", 5))  # no resolved one left: the oldest pending, 1
    assert [p["id"] for p in s.permissions("a")] == [4, 5]
    assert [p["id"] for p in s.permissions("b")] == [2]
    assert s.state()["sessions"]["a"]["_truncated"] == {"droppedPermissions": 2}
    assert s.permission(1) is None


def test_backends_agree_on_the_pending_bound(both_backends):
    docs = []
    for backend in both_backends:
        s = backend.ToolCallStore(max_permissions=3)
        for rid in range(50):
            s.apply(_ask(f"s{rid % 3}", rid))
            if rid % 7 == 0:
                s.apply(B.permission_response(rid - 2, "allow"))
        docs.append(s.to_json())
    assert docs[0] == docs[1]


@pytest.mark.parametrize("method", ["session/close", "session/delete"])
def test_close_and_delete_free_the_session(backend, method):
    s = backend.ToolCallStore()
    for i in range(100):
        s.apply(tool_call_update("s1", f"c{i}"))
    s.apply(_ask("s1", "p"))
    s.apply(tool_call_update("s2", "x"))
    assert len(s) == 101
    s.apply(frame(request(7, method, {"sessionId": "s1"})), source="client")
    assert len(s) == 101  # the request alone frees nothing: its answer does
    change = s.apply(response(7, {}), source="agent")
    assert tuple(change) == ("s1", "session", None, "closed", None)
    assert len(s) == 1 and s.closed_sessions == 1
    assert list(s.state()["sessions"]) == ["s2"]
    assert s.permission("p") is None and s.tool_calls("s1") == {}
    # many sessions opened and closed leave nothing behind
    for i in range(2000):
        sid = f"t{i}"
        s.apply(tool_call_update(sid, "c"))
        s.apply(frame(request(i + 100, method, {"sessionId": sid})), source="client")
        s.apply(response(i + 100, {}), source="agent")
    assert list(s.state()["sessions"]) == ["s2"] and s.closed_sessions == 2001


def test_the_default_store_is_bounded(backend):
    from acp_fast.proxy._proxy import DEFAULT_MAX_TOOL_CALLS

    s = backend.ToolCallStore()
    assert s.max_tool_calls == 1000 == DEFAULT_MAX_TOOL_CALLS  # the library's default is the proxy's
    for i in range(3000):
        s.apply(tool_call_update(f"s{i % 7}", f"c{i}"))
    assert len(s) == 1000 and s.evicted == 2000
    assert backend.ToolCallStore(max_tool_calls=None).max_tool_calls is None  # no bound, when asked


def test_a_null_answer_to_terminal_output_is_an_error_on_both_backends(both_backends):
    # found by the mixed-stream property test: the fallback raised AttributeError locating the
    # missing member under a null result
    errors = []
    for backend in both_backends:
        s = backend.ToolCallStore(2)
        s.apply(frame(request(3, "terminal/output", {"terminalId": "t1", "sessionId": "s1"})))
        with pytest.raises(DecodeError) as info:
            s.apply(response(3, None))
        errors.append((info.value.kind, str(info.value)))
    assert (
        errors[0]
        == errors[1]
        == (
            "invalid_output",
            'expected "result.output" to be a string, found none at line 1 column 34',
        )
    )


# ------------------------------------------------------------------------------------------------
# max_sessions: the least recently active session goes, with all it holds
# ------------------------------------------------------------------------------------------------


def _sessions(store):
    return list(store.state()["sessions"])


def test_the_least_recently_active_session_is_evicted(backend):
    from acp_fast.proxy._proxy import DEFAULT_MAX_SESSIONS

    assert backend.ToolCallStore().max_sessions == 1000 == DEFAULT_MAX_SESSIONS
    assert backend.ToolCallStore(max_sessions=None).max_sessions is None
    s = backend.ToolCallStore(max_sessions=3)
    for sid in ("a", "b", "c"):
        s.apply(tool_call_update(sid, "x"))
    s.apply(tool_call_update("a", "y"))  # a is touched: b is now the least recently active
    assert s.evicted_sessions == 0
    s.apply(tool_call_update("d", "x"))
    assert _sessions(s) == ["a", "c", "d"] and s.evicted_sessions == 1
    assert s.tool_calls("b") == {} and len(s) == 4
    assert s.state()["evictedSessions"] == 1
    # any frame touching a session counts: a plan, a cancel, a permission answer
    s.apply(frame(request(1, "session/request_permission", {"sessionId": "c", "options": OPTIONS})))
    s.apply(B.permission_response(1, "allow"), source="client")  # c resolved last
    s.apply(frame({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "a"}}))
    s.apply(tool_call_update("e", "x"))  # d is the least recently active
    assert _sessions(s) == ["a", "c", "e"]
    s.apply(tool_call_update("f", "x"))  # then c (its permission answer was before the cancel of a)
    assert _sessions(s) == ["a", "e", "f"] and s.evicted_sessions == 3


def test_eviction_frees_everything_the_session_held(backend):
    s = backend.ToolCallStore(max_sessions=1, max_tool_calls=5)
    for i in range(3):
        s.apply(tool_call_update("old", f"c{i}"))
    s.apply(_ask("old", "p1"))
    s.apply(frame(request(9, "terminal/create", {"sessionId": "old", "command": "ls"})), source="agent")
    s.apply(response(9, {"terminalId": "t1"}), source="client")
    s.apply(frame(request(10, "terminal/kill", {"sessionId": "old", "terminalId": "t1"})), source="agent")
    s.apply(session_update("old", {"sessionUpdate": "plan", "entries": []}))
    assert s.terminals("old") and s.plans("old") and s.pending_permissions("old")
    s.apply(tool_call_update("new", "c0"))
    assert _sessions(s) == ["new"] and len(s) == 1 and s.evicted_sessions == 1
    assert s.permission("p1") is None and s.cancel_responses("old") == []
    state = s.state()
    assert state["permissionOrder"] == [] and "toolCallOrder" not in state
    # the pending terminal/kill of the evicted session is forgotten: its answer creates nothing
    assert s.apply(response(10, {}), source="client") is None
    assert _sessions(s) == ["new"]
    # the tool-call bound no longer counts the evicted tool calls
    for i in range(1, 5):
        s.apply(tool_call_update("new", f"c{i}"))
    assert len(s) == 5 and s.evicted == 0


def test_many_sessions_stay_bounded(backend):
    s = backend.ToolCallStore(max_sessions=10)
    for i in range(5000):
        s.apply(tool_call_update(f"s{i}", "c"))
        s.apply(_ask(f"s{i}", i))
    assert _sessions(s) == [f"s{i}" for i in range(4990, 5000)]
    assert s.evicted_sessions == 4990 and len(s) == 10
    assert len(s.state()["permissionOrder"]) == 10


def test_the_counter_and_the_bound_in_checkpoints(backend):
    s = backend.ToolCallStore(max_sessions=2)
    for sid in ("a", "b", "a", "c"):
        s.apply(tool_call_update(sid, "x"))
    doc = s.state()
    assert doc["evictedSessions"] == 1 and list(doc["sessions"]) == ["a", "c"]
    assert doc["maxSessions"] == 2 and "maxSessions" not in backend.ToolCallStore().state()  # not the default
    r = backend.ToolCallStore.from_json(s.to_json())
    assert r.evicted_sessions == 1 and r.max_sessions == 2 and r.to_json() == s.to_json()
    assert backend.ToolCallStore.from_json(backend.ToolCallStore(max_sessions=None).to_json()).max_sessions is None
    assert backend.ToolCallStore(max_sessions=7).state()["maxSessions"] == 7


def test_a_checkpoint_keeps_the_activity_order(backend):
    s = backend.ToolCallStore(max_sessions=3)
    for sid in ("a", "b", "c", "a", "b"):  # activity: c, a, b; document order: a, b, c
        s.apply(tool_call_update(sid, "x"))
    doc = s.state()
    assert doc["sessionOrder"] == ["c", "a", "b"]
    r = backend.ToolCallStore.from_json(s.to_json())
    for store in (s, r):
        store.apply(tool_call_update("d", "x"))
        assert _sessions(store) == ["a", "b", "d"]
        store.apply(tool_call_update("e", "x"))
        assert _sessions(store) == ["b", "d", "e"]
    assert r.to_json() == s.to_json()
    # in the document's order: no member
    t = backend.ToolCallStore(max_sessions=3)
    for sid in ("a", "b"):
        t.apply(tool_call_update(sid, "x"))
    assert "sessionOrder" not in t.state()


def test_older_checkpoints_take_the_document_order(backend):
    s = backend.ToolCallStore(max_sessions=3)
    for sid in ("a", "b", "c", "a"):
        s.apply(tool_call_update(sid, "x"))
    doc = s.state()
    del doc["sessionOrder"]
    doc["format"] = "acp-fast-state/1"
    r = backend.ToolCallStore.from_json(orjson.dumps(doc))
    r.apply(tool_call_update("d", "x"))  # without the order, a (first in the document) goes
    assert _sessions(r) == ["b", "c", "d"]


@pytest.mark.parametrize(
    ("order", "message"),
    [
        ("a", 'expected "state.sessionOrder" to be an array, found string'),
        (
            ["a", "zz"],
            (
                'expected "state.sessionOrder.1" to be the id of a session in state.sessions not named before, '
                "found string"
            ),
        ),
        (
            ["a", "a"],
            (
                'expected "state.sessionOrder.1" to be the id of a session in state.sessions not named before, '
                "found string"
            ),
        ),
        (["a"], 'expected "state.sessionOrder" to be an array naming every session of state.sessions, found array'),
    ],
)
def test_bad_session_orders_are_refused(backend, order, message):
    s = backend.ToolCallStore()
    for sid in ("a", "b"):
        s.apply(tool_call_update(sid, "x"))
    doc = s.state()
    doc["sessionOrder"] = order
    with pytest.raises(ValueError) as info:
        backend.ToolCallStore.from_json(orjson.dumps(doc))
    assert str(info.value) == message


def test_a_request_that_evicts_a_session_records_itself_right(backend):
    # the eviction closes the holes of the permission list (renumbering it) before the new
    # request is recorded
    s = backend.ToolCallStore(max_sessions=1)
    for rid in range(40):
        s.apply(_ask("a", rid))
    s.apply(_ask("b", "new"))
    assert _sessions(s) == ["b"] and [p["id"] for p in s.pending_permissions("b")] == ["new"]
    change = s.apply(B.permission_response("new", "allow"), source="client")
    assert tuple(change)[:4] == ("b", "permission", "new", "resolved")
    assert s.permission("new")["outcome"] == "selected"


@pytest.mark.parametrize("value", [0, -1, 1.5, "3", True])
def test_max_sessions_is_checked(backend, value):
    with pytest.raises(ValueError, match="expected max_sessions to be a positive integer or None"):
        backend.ToolCallStore(max_sessions=value)
    if value != 0:
        with pytest.raises(ValueError, match="expected max_content_bytes to be a non-negative integer or None"):
            backend.ToolCallStore(max_content_bytes=value)


# ------------------------------------------------------------------------------------------------
# max_content_bytes: a tool call's content in bytes
# ------------------------------------------------------------------------------------------------


def _text(n, tag="x"):
    return {"type": "content", "content": {"type": "text", "text": tag * n}}


def _size(item):
    return len(orjson.dumps(item))


def test_content_bytes_drop_the_oldest_items(backend):
    assert backend.ToolCallStore().max_content_bytes == 1 << 20
    item = _text(100)
    size = _size(item)
    s = backend.ToolCallStore(max_content_bytes=3 * size)
    for i in range(10):
        s.apply(chunk("s1", "c", _text(100, str(i))))
    tc = s.get("s1", "c")
    assert [c["content"]["text"][0] for c in tc["content"]] == ["7", "8", "9"]
    assert tc["_truncated"] == {"droppedItems": 7}
    # the count is of the JSON text as held: whitespace in the frame does not count
    spaced = backend.ToolCallStore(max_content_bytes=3 * size)
    for i in range(10):
        spaced.apply(frame(orjson.loads(chunk("s1", "c", _text(100, str(i)))), spaced=True))
    assert spaced.get("s1", "c") == tc
    # content set by an update: its newest items within the bound
    s.apply(tool_call_update("s1", "c", {"content": [_text(100, str(i)) for i in range(5)]}))
    tc = s.get("s1", "c")
    assert [c["content"]["text"][0] for c in tc["content"]] == ["2", "3", "4"]
    assert tc["_truncated"] == {"droppedItems": 2}
    # and in a checkpoint, which keeps the bound and the count
    r = backend.ToolCallStore.from_json(s.to_json())
    for store in (s, r):
        store.apply(chunk("s1", "c", _text(100, "z")))
        assert store.get("s1", "c")["_truncated"] == {"droppedItems": 3}
    assert r.to_json() == s.to_json() and r.max_content_bytes == 3 * size


def test_an_item_larger_than_the_bound_is_kept_whole(backend):
    s = backend.ToolCallStore(max_content_bytes=1000)
    s.apply(chunk("s1", "c", _text(10)))
    s.apply(chunk("s1", "c", _text(5000, "h")))
    tc = s.get("s1", "c")
    assert [len(c["content"]["text"]) for c in tc["content"]] == [5000]
    assert tc["_truncated"] == {"droppedItems": 1}
    s.apply(chunk("s1", "c", _text(10)))  # the huge one goes as soon as it is not the newest
    assert [len(c["content"]["text"]) for c in s.get("s1", "c")["content"]] == [10]
    s.apply(tool_call_update("s1", "d", {"content": [_text(5000), _text(6000)]}))
    assert [len(c["content"]["text"]) for c in s.get("s1", "d")["content"]] == [6000]


def test_1500_chunks_of_1mb_stay_within_the_default(backend):
    s = backend.ToolCallStore()
    big = "x" * (1 << 20)
    for _ in range(40):
        s.apply(chunk("s1", "c", {"type": "content", "content": {"type": "text", "text": big}}))
    tc = s.get("s1", "c")
    assert len(tc["content"]) == 1 and tc["_truncated"] == {"droppedItems": 39}
    assert backend.ToolCallStore(max_content_bytes=None).max_content_bytes is None


def test_backends_count_content_bytes_alike(both_backends):
    # escapes, numbers kept as text, duplicate keys, wrapped bare blocks: the text a checkpoint holds
    items = [
        b'{"type":"content","content":{"type":"text","text":"\\u00e9\\/"}}',
        b'{"type": "diff", "n": 2.50, "n": 1E2, "\\u0061": [1, 2 ,3]}',
        b'{"type":"text","text":"bare"}',
    ]
    docs = []
    for backend in both_backends:
        s = backend.ToolCallStore(max_content_bytes=120, wrap_bare_content=True)
        for n in range(12):
            item = items[n % 3]
            line = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
            line += b'{"sessionUpdate":"tool_call_content_chunk","toolCallId":"c","content":' + item + b"}}}"
            s.apply(line)
        docs.append(s.to_json())
    assert docs[0] == docs[1]


# ------------------------------------------------------------------------------------------------
# both backends on random traffic with small bounds
# ------------------------------------------------------------------------------------------------


def _outcome(backend, store, data):
    try:
        result = store.apply(data, source="client" if b'"result"' in data else "agent")
    except DecodeError as e:
        return ("error", e.kind)
    items = result if isinstance(result, list) else [result]
    return [("error", r.kind) if isinstance(r, DecodeError) else (None if r is None else tuple(r)) for r in items]


@settings(max_examples=150, deadline=None)
@given(stream=MIXED_STREAMS, sessions=st.integers(1, 3), content=st.integers(0, 400), cut=st.integers(0, 40))
def test_backends_agree_with_small_bounds(both_backends, stream, sessions, content, cut):
    stores = [b.ToolCallStore(max_sessions=sessions, max_content_bytes=content) for b in both_backends]
    for index, data in enumerate(stream):
        note(f"frame {index}: {data!r}")
        outcomes = [_outcome(b, s, data) for b, s in zip(both_backends, stores)]
        assert outcomes[0] == outcomes[1], (index, data)
        docs = [s.to_json() for s in stores]
        assert docs[0] == docs[1], (index, data)
        assert stores[0].evicted_sessions == stores[1].evicted_sessions
        if index == cut:  # a checkpoint in the middle: the restored stores go on alike
            stores = [b.ToolCallStore.from_json(d) for b, d in zip(both_backends, docs)]
