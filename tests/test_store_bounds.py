"""Memory across sessions (issue 28, item 2, the store's share): every structure of the store that
grows with traffic is bounded, with a marker or a counter where something was dropped; both
backends.

* pending permission requests are bounded by ``max_permissions`` like resolved ones (the oldest
  resolved record of the session goes first, else the oldest pending one), counted in
  ``droppedPermissions``;
* an answered ``session/close`` / ``session/delete`` frees all the session held (``closed_sessions``).
"""

from __future__ import annotations

import pytest

from acp_fast import DecodeError
from acp_fast import builders as B
from state_model import frame, request, response, tool_call_update

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
