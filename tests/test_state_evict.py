"""The ``max_tool_calls`` bound (mirrors ``rust/state/evict.rs`` and ``_fallback/state/evict.py``):
DESIGN.md §7.8.

Every behaviour test takes the ``backend`` fixture and runs on both backends (ids rust, python);
expected values are written out in full. Shared helpers: ``state_helpers.py``, ``state_model.py``.
"""

from __future__ import annotations

import pytest

from acp_fast import builders as B
from state_helpers import (
    OPTIONS,
    A,
    _perm,
    empty_state,
    rec,
)
from state_model import (
    assert_record,
    change_of,
    chunk,
    tool_call_update,
)

# ------------------------------------------------------------------------------------------
# 7.8 bounds
# ------------------------------------------------------------------------------------------


def test_bound_evicts_oldest_finished(backend):
    s = backend.ToolCallStore(2, max_tool_calls=3)
    s.apply(tool_call_update("s1", "c1", {"status": "in_progress"}))
    s.apply(tool_call_update("s1", "c2", {"status": "failed"}))
    s.apply(tool_call_update("s2", "c3", {"status": "completed"}))
    assert (len(s), s.evicted) == (3, 0)
    c = s.apply(tool_call_update("s1", "c4"))
    assert change_of(backend, c) == ("s1", "tool_call", "c4", "created", "c4")
    assert (len(s), s.evicted) == (3, 1)
    assert s.get("s1", "c2") is None
    assert list(s.tool_calls("s1")) == ["c1", "c4"]
    s.apply(tool_call_update("s1", "c5"))
    assert s.get("s2", "c3") is None
    assert list(s.snapshot()) == ["s1"]
    assert (len(s), s.evicted) == (3, 2)


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled"])
def test_bound_each_finished_status(backend, status):
    s = backend.ToolCallStore(2, max_tool_calls=2)
    s.apply(tool_call_update("s1", "a", {"status": "in_progress"}))
    s.apply(tool_call_update("s1", "b", {"status": status}))
    s.apply(tool_call_update("s1", "c"))
    assert list(s.tool_calls("s1")) == ["a", "c"]


def test_bound_evicts_oldest_when_none_finished(backend):
    s = backend.ToolCallStore(2, max_tool_calls=2)
    s.apply(tool_call_update("s1", "a", {"status": "_done"}))
    s.apply(tool_call_update("s2", "b", {"status": "pending"}))
    s.apply(tool_call_update("s1", "a", {"title": "touched later"}))  # updates do not refresh age
    s.apply(tool_call_update("s1", "c", {"status": "in_progress"}))
    assert s.get("s1", "a") is None
    # s1 was seen first and keeps its place
    assert_record(s.snapshot(), {"s1": {"c": rec("c", status="in_progress")}, "s2": {"b": rec("b")}})
    assert s.evicted == 1


def test_bound_never_evicts_the_touched_record(backend):
    s = backend.ToolCallStore(1, max_tool_calls=1)
    s.apply(tool_call_update("s1", "a"))
    c = s.apply(tool_call_update("s1", "b", {"status": "completed"}))  # the only finished one is the new one
    assert change_of(backend, c) == ("s1", "tool_call", "b", "created", "b")
    assert_record(s.snapshot(), {"s1": {"b": rec("b", status="completed")}})
    s.apply(chunk("s1", "c", A))
    assert_record(s.snapshot(), {"s1": {"c": rec("c", content=[A])}})
    s.apply(B.tool_call("s1", "d", "D", status="completed"))
    assert_record(s.snapshot(), {"s1": {"d": rec("d", title="D", status="completed")}})
    assert (len(s), s.evicted) == (1, 3)


def test_bound_applies_to_permission_created_tool_calls(backend):
    s = backend.ToolCallStore(1, max_tool_calls=1)
    s.apply(tool_call_update("s1", "a", {"status": "completed"}))
    s.apply(B.request_permission(1, "s1", "b", OPTIONS))
    assert list(s.tool_calls("s1")) == ["b"]
    assert s.evicted == 1


def test_evicted_record_is_recreated_last(backend):
    s = backend.ToolCallStore(2, max_tool_calls=2)
    s.apply(tool_call_update("s1", "a", {"title": "A", "status": "completed"}))
    s.apply(tool_call_update("s1", "b"))
    s.apply(tool_call_update("s1", "c"))
    c = s.apply(tool_call_update("s1", "a", {"status": "in_progress"}))
    assert change_of(backend, c) == ("s1", "tool_call", "a", "created", "a")
    assert_record(s.tool_calls("s1"), {"c": rec("c"), "a": rec("a", status="in_progress")})
    assert s.evicted == 2


def test_session_stays_in_state_after_its_tool_calls_are_evicted(backend):
    s = backend.ToolCallStore(max_tool_calls=1)
    s.apply(B.tool_call("s1", "c1", "one"))
    s.apply(B.tool_call("s2", "c1", "two"))
    assert_record(s.snapshot(), {"s2": {"c1": rec("c1", title="two")}})
    empty = {"toolCalls": {}, "terminals": {}, "plans": {}, "permissions": []}
    assert_record(
        s.state(),
        empty_state(
            max_tool_calls=1,
            evicted=1,
            sessions={
                "s1": empty,
                "s2": {**empty, "toolCalls": {"c1": rec("c1", title="two")}},
            },
        ),
    )


def test_bound_keeps_terminals_plans_permissions_and_sessions(backend):
    s = backend.ToolCallStore(2, max_tool_calls=1)
    s.apply(tool_call_update("s1", "a"))
    s.apply(B.terminal_update("s1", "t1", command="x"))
    s.apply(B.terminal_update("s1", "t2", command="y"))
    s.apply(B.plan_update("s1", "p1", []))
    s.apply(B.plan_update("s1", "p2", []))
    s.apply(_perm({"sessionId": "s1", "options": []}, 1))
    s.apply(_perm({"sessionId": "s1", "options": []}, 2))
    s.apply(tool_call_update("s2", "b"))
    assert s.snapshot() == {"s2": {"b": rec("b")}}
    assert s.tool_calls("s1") == {}
    assert list(s.terminals("s1")) == ["t1", "t2"]
    assert list(s.plans("s1")) == ["p1", "p2"]
    assert len(s.permissions("s1")) == 2
    state = s.state()
    assert list(state["sessions"]) == ["s1", "s2"]
    assert state["sessions"]["s1"]["toolCalls"] == {}
    assert (state["maxToolCalls"], state["evicted"]) == (1, 1)


def test_bound_status_that_changes_back_is_not_finished(backend):
    s = backend.ToolCallStore(2, max_tool_calls=2)
    s.apply(tool_call_update("s1", "a"))
    s.apply(tool_call_update("s1", "b", {"status": "failed"}))
    s.apply(tool_call_update("s1", "b", {"status": "in_progress"}))
    s.apply(B.tool_call("s1", "c", "C", status="completed"))
    s.apply(B.tool_call("s1", "c", "C", status="pending"))  # replaced whole: no longer finished
    s.apply(tool_call_update("s1", "d"))
    assert list(s.tool_calls("s1")) == ["c", "d"]
    assert s.evicted == 2


def test_bound_with_an_old_unfinished_tool_call_and_churn(backend):
    # The old unfinished tool call stays while finished ones come and go behind it (some finish
    # after a later one has); a checkpoint taken in between evicts in the same order.
    s = backend.ToolCallStore(2, max_tool_calls=4)
    s.apply(tool_call_update("s1", "old"))
    for i in range(300):
        s.apply(tool_call_update("s1", f"c{i}", {"status": "in_progress" if i % 5 == 0 else "completed"}))
        if i % 5 == 1:
            s.apply(tool_call_update("s1", f"c{i - 1}", {"status": "failed"}))
    assert list(s.tool_calls("s1")) == ["old", "c297", "c298", "c299"]
    r = backend.ToolCallStore.from_json(s.to_json())
    for store in (s, r):
        store.apply(tool_call_update("s2", "x"))
        store.apply(tool_call_update("s2", "y"))
        assert list(store.tool_calls("s1")) == ["old", "c299"] and list(store.tool_calls("s2")) == ["x", "y"]
        assert (len(store), store.evicted) == (4, 299)
