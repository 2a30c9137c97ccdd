"""Plans (mirrors ``rust/state/plan.rs`` and ``_fallback/state/plan.py``): DESIGN.md §7.6 and the plan
errors of §7.7.

Every behaviour test takes the ``backend`` fixture and runs on both backends (ids rust, python);
expected values are written out in full. Shared helpers: ``state_helpers.py``, ``state_model.py``.
"""

from __future__ import annotations

import pytest

from acp_fast import builders as B
from state_helpers import (
    ENTRIES,
    _good_after,
    expect_error,
    rec,
)
from state_model import (
    assert_record,
    change_of,
    session_update,
    value_at,
)

# ------------------------------------------------------------------------------------------
# 7.7 errors (plans)
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "update, path, what, found, at",
    [
        ({"sessionUpdate": "plan"}, "params.update.entries", "an array", "none", b'"update":'),
        ({"sessionUpdate": "plan", "entries": None}, "params.update.entries", "an array", "null", b'"entries":'),
        ({"sessionUpdate": "plan", "entries": {"0": {}}}, "params.update.entries", "an array", "object", b'"entries":'),
        ({"sessionUpdate": "plan_update"}, "params.update.plan", "an object", "none", b'"update":'),
        ({"sessionUpdate": "plan_update", "plan": None}, "params.update.plan", "an object", "null", b'"plan":'),
        ({"sessionUpdate": "plan_update", "plan": [1]}, "params.update.plan", "an object", "array", b'"plan":'),
        (
            {"sessionUpdate": "plan_update", "plan": {"type": "items", "entries": []}},
            "params.update.plan.planId",
            "a string",
            "none",
            b'"plan":',
        ),
        (
            {"sessionUpdate": "plan_update", "plan": {"planId": 7}},
            "params.update.plan.planId",
            "a string",
            "number 7",
            b'"planId":',
        ),
        ({"sessionUpdate": "plan_removed"}, "params.update.planId", "a string", "none", b'"update":'),
        ({"sessionUpdate": "plan_removed", "planId": None}, "params.update.planId", "a string", "null", b'"planId":'),
    ],
)
def test_invalid_plan(backend, update, path, what, found, at):
    s = backend.ToolCallStore()
    s.apply(B.plan("s1", [B.plan_entry("x")]))
    data = session_update("s1", update)
    expect_error(backend, s, data, "invalid_plan", f'expected "{path}" to be {what}, found {found}', value_at(data, at))
    _good_after(backend, s)


# ------------------------------------------------------------------------------------------
# 7.6 plans
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, None])
def test_v1_plan_is_main(backend, version):
    s = backend.ToolCallStore(version)
    c = s.apply(B.plan("s1", ENTRIES))
    assert change_of(backend, c) == ("s1", "plan", "main", "created", None)
    assert_record(s.plans("s1"), {"main": {"type": "items", "planId": "main", "entries": ENTRIES}})
    c = s.apply(B.plan("s1", ENTRIES[:1]))
    assert change_of(backend, c) == ("s1", "plan", "main", "replaced", None)
    assert_record(s.plans("s1"), {"main": {"type": "items", "planId": "main", "entries": ENTRIES[:1]}})
    s.apply(B.plan("s1", []))
    assert_record(s.plans("s1"), {"main": {"type": "items", "planId": "main", "entries": []}})
    assert len(s) == 0


def test_v1_plan_meta(backend):
    s = backend.ToolCallStore()
    s.apply(session_update("s1", {"sessionUpdate": "plan", "_meta": {"m": 1}, "entries": ENTRIES, "extra": 1}))
    assert_record(s.plans("s1"), {"main": {"type": "items", "planId": "main", "entries": ENTRIES, "_meta": {"m": 1}}})
    s.apply(session_update("s1", {"sessionUpdate": "plan", "entries": ENTRIES, "_meta": None}))
    assert_record(s.plans("s1"), {"main": {"type": "items", "planId": "main", "entries": ENTRIES}})


@pytest.mark.parametrize("version", [1, 2, None])
def test_v2_plan_update_per_plan_id(backend, version):
    s = backend.ToolCallStore(version)
    c = s.apply(B.plan_update("s1", "p1", ENTRIES))
    assert change_of(backend, c) == ("s1", "plan", "p1", "created", None)
    odd = {"planId": "p2", "_meta": None, "type": "_acme_markdown", "content": "# x", "entries": None}
    c = s.apply(session_update("s1", {"sessionUpdate": "plan_update", "plan": odd, "_meta": {"ignored": 1}}))
    assert change_of(backend, c) == ("s1", "plan", "p2", "created", None)
    c = s.apply(B.plan_update("s1", "p1", ENTRIES[1:]))
    assert change_of(backend, c) == ("s1", "plan", "p1", "replaced", None)
    assert_record(
        s.plans("s1"),
        {"p1": {"type": "items", "planId": "p1", "entries": ENTRIES[1:]}, "p2": odd},
    )


def test_v1_plan_and_v2_main_share_the_id(backend):
    s = backend.ToolCallStore()
    s.apply(B.plan_update("s1", "main", ENTRIES))
    c = s.apply(B.plan("s1", ENTRIES[:1]))
    assert change_of(backend, c) == ("s1", "plan", "main", "replaced", None)
    assert_record(s.plans("s1"), {"main": {"type": "items", "planId": "main", "entries": ENTRIES[:1]}})


def test_plan_removed(backend):
    s = backend.ToolCallStore()
    s.apply(B.plan_update("s1", "p1", ENTRIES))
    s.apply(B.plan_update("s1", "p2", ENTRIES))
    s.apply(B.plan_update("s2", "p1", ENTRIES))
    remove = session_update("s1", {"sessionUpdate": "plan_removed", "planId": "p1"})
    c = s.apply(remove)
    assert change_of(backend, c) == ("s1", "plan", "p1", "removed", None)
    assert list(s.plans("s1")) == ["p2"]
    assert list(s.plans("s2")) == ["p1"]
    assert s.apply(remove) is None
    assert s.apply(session_update("s3", {"sessionUpdate": "plan_removed", "planId": "p1"})) is None
    c = s.apply(B.plan_update("s1", "p1", ENTRIES))
    assert change_of(backend, c) == ("s1", "plan", "p1", "created", None)
    assert list(s.plans("s1")) == ["p2", "p1"]
    assert s.plans("s9") == {}


@pytest.mark.parametrize("version", [1, 2])
def test_todo_plan_entries_to_store(backend, version):
    todos = {
        "todos": [
            {"content": "a", "status": "in_progress", "priority": "high"},
            {"content": "b", "status": "weird"},
            {"content": 3, "status": "pending"},
            {"content": "c", "status": "cancelled"},
            {"content": "d"},
            "junk",
        ]
    }
    entries = B.todo_plan_entries(todos, protocol_version=version)
    expected = [
        {"content": "a", "priority": "medium", "status": "in_progress"},
        {"content": "b", "priority": "medium", "status": "pending"},
        {"content": "c", "priority": "medium", "status": "cancelled" if version == 2 else "pending"},
    ]
    assert entries == expected
    s = backend.ToolCallStore(version)
    s.apply(B.tool_call("s1", "todo", "todo_write", raw_input=todos))
    if version == 1:
        c = s.apply(B.plan("s1", entries))
        assert change_of(backend, c) == ("s1", "plan", "main", "created", None)
        assert_record(s.plans("s1"), {"main": {"type": "items", "planId": "main", "entries": expected}})
    else:
        c = s.apply(B.plan_update("s1", "main", entries))
        assert change_of(backend, c) == ("s1", "plan", "main", "created", None)
        assert_record(s.plans("s1"), {"main": {"type": "items", "planId": "main", "entries": expected}})
    assert_record(s.get("s1", "todo"), rec("todo", title="todo_write", rawInput=todos))
