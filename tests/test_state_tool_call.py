"""Tool calls (mirrors ``rust/state/tool_call.rs`` and ``_fallback/state/tool_call.py``): the update
table of docs/API.md "How each update changes a record" (DESIGN.md §7.3) and the tool-call errors of
§7.7.

Every behaviour test takes the ``backend`` fixture and runs on both backends (ids rust, python);
expected values are written out in full. Shared helpers: ``state_helpers.py``, ``state_model.py``.
"""

from __future__ import annotations

import pytest

from acp_fast import builders as B
from state_helpers import (
    FULL,
    INIT_V2,
    A,
    Bc,
    C,
    D,
    E,
    _good_after,
    expect_error,
    full_v1_record_frame,
    rec,
)
from state_model import (
    assert_record,
    change_of,
    chunk,
    frame,
    session_update,
    tool_call,
    tool_call_update,
    value_at,
)

# ------------------------------------------------------------------------------------------
# the update table (docs/API.md "How each update changes a record")
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, None])
def test_v1_tool_call_creates_from_its_fields(backend, version):
    s = backend.ToolCallStore(version)
    c = s.apply(full_v1_record_frame())
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "created", "c1")
    assert_record(s.get("s1", "c1"), FULL)


@pytest.mark.parametrize("version", [1, 2, None])
def test_v1_tool_call_on_existing_replaces_whole(backend, version):
    s = backend.ToolCallStore(version)
    s.apply(full_v1_record_frame())
    s.apply(tool_call_update("s1", "c1", {"extra": 1}))
    s.apply(chunk("s1", "c1", Bc))
    s.apply(B.tool_call("s1", "c0", "other call"))
    c = s.apply(B.tool_call("s1", "c1", "Again"))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "replaced", "c1")
    assert_record(s.get("s1", "c1"), rec("c1", title="Again"))
    assert list(s.tool_calls("s1")) == ["c1", "c0"]  # still first seen first
    assert len(s) == 2


@pytest.mark.parametrize("version", [1, 2])
def test_v1_tool_call_null_means_absent(backend, version):
    fields = {
        "title": None,
        "kind": None,
        "status": None,
        "content": None,
        "locations": None,
        "rawInput": None,
        "rawOutput": None,
        "name": None,
        "_meta": None,
        "extra": None,
    }
    s = backend.ToolCallStore(version)
    c = s.apply(tool_call("s1", "c1", fields))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "created", "c1")
    assert_record(s.get("s1", "c1"), rec("c1"))
    s.apply(full_v1_record_frame())
    c = s.apply(tool_call("s1", "c1", {"title": "T", **{k: v for k, v in fields.items() if k != "title"}}))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "replaced", "c1")
    assert_record(s.get("s1", "c1"), rec("c1", title="T"))


def test_v1_tool_call_update_present_replaces(backend):
    s = backend.ToolCallStore(1)
    s.apply(full_v1_record_frame())
    c = s.apply(
        B.tool_call_update(
            "s1",
            "c1",
            title="New",
            kind="edit",
            status="completed",
            content=[Bc],
            locations=[],
            raw_input=[1],
            raw_output="out",
            name="edit_file",
            meta={"other": 2},
        )
    )
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "updated", "c1")
    assert_record(
        s.get("s1", "c1"),
        rec(
            "c1",
            title="New",
            kind="edit",
            status="completed",
            content=[Bc],
            locations=[],
            rawInput=[1],
            rawOutput="out",
            name="edit_file",
            _meta={"other": 2},
        ),
    )


def test_v1_tool_call_update_omitted_leaves_unchanged(backend):
    s = backend.ToolCallStore(1)
    s.apply(full_v1_record_frame())
    c = s.apply(B.tool_call_update("s1", "c1", status="completed"))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "updated", "c1")
    assert_record(s.get("s1", "c1"), {**FULL, "status": "completed"})


def test_v1_tool_call_update_null_leaves_unchanged(backend):
    s = backend.ToolCallStore(1)
    s.apply(full_v1_record_frame())
    s.apply(tool_call_update("s1", "c1", {"extra": "kept"}))
    nulls = {
        "title": None,
        "kind": None,
        "status": None,
        "content": None,
        "locations": None,
        "rawInput": None,
        "rawOutput": None,
        "name": None,
        "_meta": None,
        "extra": None,
    }
    c = s.apply(tool_call_update("s1", "c1", nulls))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "updated", "c1")
    assert_record(s.get("s1", "c1"), {**FULL, "extra": "kept"})


@pytest.mark.parametrize("version", [1, 2])
def test_tool_call_update_on_unknown_id_creates_from_non_null_fields(backend, version):
    s = backend.ToolCallStore(version)
    fields = {
        "title": None,
        "status": "in_progress",
        "kind": None,
        "content": None,
        "locations": [{"path": "/p"}],
        "rawInput": None,
        "extra": None,
        "other": 0,
        "_meta": None,
    }
    c = s.apply(tool_call_update("s1", "c9", fields))
    assert change_of(backend, c) == ("s1", "tool_call", "c9", "created", "c9")
    assert_record(s.get("s1", "c9"), rec("c9", status="in_progress", locations=[{"path": "/p"}], other=0))


def test_v2_tool_call_update_present_replaces(backend):
    s = backend.ToolCallStore(2)
    s.apply(full_v1_record_frame())
    c = s.apply(
        B.tool_call_update(
            "s1",
            "c1",
            protocol_version=2,
            title="New",
            kind="_custom",
            status="cancelled",
            content=[Bc],
            locations=[],
            raw_input=[1],
            raw_output="out",
            name="x",
            meta={"o": 2},
        )
    )
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "updated", "c1")
    assert_record(
        s.get("s1", "c1"),
        rec(
            "c1",
            title="New",
            kind="_custom",
            status="cancelled",
            content=[Bc],
            locations=[],
            rawInput=[1],
            rawOutput="out",
            name="x",
            # v2 `_meta` patches by top-level key: the record's `trace` stays.
            _meta={"trace": "t1", "o": 2},
        ),
    )


def test_v2_tool_call_update_null_unsets_and_restores_defaults(backend):
    s = backend.ToolCallStore(2)
    s.apply(full_v1_record_frame())
    s.apply(tool_call_update("s1", "c1", {"extra": 1, "more": 2}))
    c = s.apply(
        B.tool_call_update(
            "s1",
            "c1",
            protocol_version=2,
            title=None,
            kind=None,
            status=None,
            content=None,
            locations=None,
            raw_input=None,
            raw_output=None,
            name=None,
            meta=None,
        )
    )
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "updated", "c1")
    assert_record(s.get("s1", "c1"), rec("c1", extra=1, more=2))
    s.apply(tool_call_update("s1", "c1", {"extra": None}))
    assert_record(s.get("s1", "c1"), rec("c1", more=2))


def test_v2_tool_call_update_omitted_leaves_unchanged(backend):
    s = backend.ToolCallStore(2)
    s.apply(full_v1_record_frame())
    c = s.apply(B.tool_call_update("s1", "c1", protocol_version=2, status="completed"))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "updated", "c1")
    assert_record(s.get("s1", "c1"), {**FULL, "status": "completed"})


@pytest.mark.parametrize("version", [1, 2])
def test_update_that_changes_nothing_is_still_updated(backend, version):
    s = backend.ToolCallStore(version)
    s.apply(full_v1_record_frame())
    c = s.apply(tool_call_update("s1", "c1"))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "updated", "c1")
    assert_record(s.get("s1", "c1"), FULL)


@pytest.mark.parametrize("version", [1, 2, None])
def test_content_chunk_appends_to_existing(backend, version):
    s = backend.ToolCallStore(version)
    s.apply(tool_call_update("s1", "c1", {"title": "Run", "content": [A]}))
    c = s.apply(B.tool_call_content_chunk("s1", "c1", Bc))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "appended", "c1")
    assert_record(s.get("s1", "c1"), rec("c1", title="Run", content=[A, Bc]))


@pytest.mark.parametrize("version", [1, 2, None])
def test_content_chunk_on_unknown_id_creates(backend, version):
    s = backend.ToolCallStore(version)
    c = s.apply(B.tool_call_content_chunk("s1", "c1", A))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "created", "c1")
    assert_record(s.get("s1", "c1"), rec("c1", content=[A]))


def test_chunk_members_other_than_content_not_stored(backend):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1", {"_meta": {"record": 1}}))
    s.apply(chunk("s1", "c1", A, {"_meta": {"chunk": 1}, "extra": 5, "status": "completed", "title": "no"}))
    assert_record(s.get("s1", "c1"), rec("c1", content=[A], _meta={"record": 1}))
    s.apply(chunk("s1", "c2", A, {"_meta": {"chunk": 2}}))
    assert_record(s.get("s1", "c2"), rec("c2", content=[A]))


# ------------------------------------------------------------------------------------------
# content / locations replacement, _meta, envelope
# ------------------------------------------------------------------------------------------


def test_v2_chunks_and_replacing_updates_in_arrival_order(backend):
    # the permission-outcome rules (docs/API.md "Permission requests"), step by step
    s = backend.ToolCallStore(2)
    steps = [
        (B.tool_call_update("s1", "c1", protocol_version=2, title="Run", status="pending"), []),
        (B.tool_call_content_chunk("s1", "c1", A), [A]),
        (B.tool_call_content_chunk("s1", "c1", Bc), [A, Bc]),
        (B.tool_call_update("s1", "c1", protocol_version=2, status="in_progress"), [A, Bc]),
        (B.tool_call_update("s1", "c1", protocol_version=2, content=[C]), [C]),
        (B.tool_call_content_chunk("s1", "c1", D), [C, D]),
        (B.tool_call_update("s1", "c1", protocol_version=2, content=None), []),
        (B.tool_call_content_chunk("s1", "c1", E), [E]),
        (B.tool_call_update("s1", "c1", protocol_version=2, content=[]), []),
        (B.tool_call_content_chunk("s1", "c1", A), [A]),
    ]
    for data, content in steps:
        s.apply(data)
        assert_record(s.get("s1", "c1")["content"], content)
    assert_record(s.get("s1", "c1"), rec("c1", title="Run", status="in_progress", content=[A]))


@pytest.mark.parametrize("version", [1, 2])
def test_empty_array_empties_content_and_locations(backend, version):
    s = backend.ToolCallStore(version)
    s.apply(tool_call_update("s1", "c1", {"content": [A, Bc], "locations": [{"path": "/a"}]}))
    s.apply(chunk("s1", "c1", C))
    s.apply(tool_call_update("s1", "c1", {"content": [], "locations": []}))
    assert_record(s.get("s1", "c1"), rec("c1"))
    s.apply(chunk("s1", "c1", D))
    assert_record(s.get("s1", "c1"), rec("c1", content=[D]))


def test_v2_null_empties_content_and_locations(backend):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1", {"content": [A], "locations": [{"path": "/a"}]}))
    s.apply(tool_call_update("s1", "c1", {"content": None, "locations": None}))
    assert_record(s.get("s1", "c1"), rec("c1"))


def test_v1_null_keeps_content_and_locations(backend):
    s = backend.ToolCallStore(1)
    s.apply(tool_call_update("s1", "c1", {"content": [A], "locations": [{"path": "/a"}]}))
    s.apply(chunk("s1", "c1", Bc))
    s.apply(tool_call_update("s1", "c1", {"content": None, "locations": None}))
    assert_record(s.get("s1", "c1"), rec("c1", content=[A, Bc], locations=[{"path": "/a"}]))


@pytest.mark.parametrize("version", [1, 2])
def test_replacing_update_drops_chunks_and_later_chunks_append(backend, version):
    s = backend.ToolCallStore(version)
    s.apply(chunk("s1", "c1", A))
    s.apply(chunk("s1", "c1", Bc))
    s.apply(tool_call_update("s1", "c1", {"content": [C], "locations": [{"path": "/1"}, {"path": "/2"}]}))
    assert_record(s.get("s1", "c1"), rec("c1", content=[C], locations=[{"path": "/1"}, {"path": "/2"}]))
    s.apply(chunk("s1", "c1", D))
    s.apply(tool_call_update("s1", "c1", {"locations": [{"path": "/3"}]}))
    assert_record(s.get("s1", "c1"), rec("c1", content=[C, D], locations=[{"path": "/3"}]))


def test_v1_update_meta_replaces_whole(backend):
    s = backend.ToolCallStore(1)
    s.apply(tool_call_update("s1", "c1", {"_meta": {"a": 1, "b": {"x": 1}}}))
    s.apply(tool_call_update("s1", "c1", {"_meta": {"b": {"y": 2}}}))
    assert_record(s.get("s1", "c1"), rec("c1", _meta={"b": {"y": 2}}))


def test_v2_update_meta_patches_by_top_level_key(backend):
    # The schema crate's own example (tool_call_update_patches_meta_by_top_level_key): a writer
    # that knows only its key erases no other; null removes a key; a value replaces it whole.
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1", {"_meta": {"zed.dev/a": 1, "acme.dev/b": {"x": 1}}}))
    s.apply(tool_call_update("s1", "c1", {"_meta": {"proxy.dev/c": True}}))
    s.apply(tool_call_update("s1", "c1", {"_meta": {"zed.dev/a": None, "acme.dev/b": {"y": 2}}}))
    record = s.get("s1", "c1")
    assert_record(record, rec("c1", _meta={"acme.dev/b": {"y": 2}, "proxy.dev/c": True}))
    assert list(record["_meta"]) == ["acme.dev/b", "proxy.dev/c"]
    # A new tool call's `_meta` is a patch of none: its null keys are not stored.
    text = b'{"sessionUpdate":"tool_call_update","toolCallId":"c2","_meta":{ "a" : null, "b":2.50 }}'
    s.apply(b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":%s}}' % text)
    assert s.get("s1", "c2")["_meta"] == {"b": 2.5}
    assert b'"_meta":{"b":2.50}' in s.to_json()  # written compactly, each value as received
    # null still clears it whole.
    s.apply(tool_call_update("s1", "c1", {"_meta": None}))
    assert "_meta" not in s.get("s1", "c1")


def test_v2_null_meta_unsets(backend):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1", {"_meta": {"a": 1}}))
    s.apply(tool_call_update("s1", "c1", {"_meta": None}))
    assert_record(s.get("s1", "c1"), rec("c1"))


def test_v1_null_meta_keeps(backend):
    s = backend.ToolCallStore(1)
    s.apply(tool_call_update("s1", "c1", {"_meta": {"a": 1}}))
    s.apply(tool_call_update("s1", "c1", {"_meta": None}))
    assert_record(s.get("s1", "c1"), rec("c1", _meta={"a": 1}))


def test_chunk_meta_not_merged(backend):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1", {"_meta": {"a": 1}}))
    s.apply(B.tool_call_content_chunk("s1", "c1", A, meta={"a": 2, "chunk": True}))
    s.apply(B.tool_call_content_chunk("s1", "c1", Bc, meta=None))
    assert_record(s.get("s1", "c1"), rec("c1", content=[A, Bc], _meta={"a": 1}))


def test_session_update_and_envelope_not_in_record(backend):
    s = backend.ToolCallStore(2)
    data = frame(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": "s1",
                "_meta": {"p": 1},
                "extra": 2,
                "update": {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "T"},
            },
            "_top": 1,
        }
    )
    s.apply(data)
    assert_record(s.get("s1", "c1"), rec("c1", title="T"))


def test_sessions_isolated_with_repeated_tool_call_ids(backend):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1", {"title": "one", "content": [A]}))
    s.apply(tool_call_update("s2", "c1", {"title": "two"}))
    s.apply(chunk("s2", "c1", Bc))
    s.apply(tool_call_update("s2", "c1", {"title": None}))
    s.apply(B.tool_call("s3", "c1", "three"))
    assert_record(s.get("s1", "c1"), rec("c1", title="one", content=[A]))
    assert_record(s.get("s2", "c1"), rec("c1", content=[Bc]))
    assert_record(s.get("s3", "c1"), rec("c1", title="three"))
    assert len(s) == 3
    c = s.apply(chunk("s4", "c1", C))
    assert change_of(backend, c) == ("s4", "tool_call", "c1", "created", "c1")


def test_tool_calls_in_first_seen_order(backend):
    s = backend.ToolCallStore(1)
    for tcid in ("c3", "c1", "c2"):
        s.apply(tool_call_update("s1", tcid, {"title": tcid}))
    s.apply(tool_call_update("s1", "c1", {"status": "completed"}))
    s.apply(B.tool_call("s1", "c3", "again"))
    s.apply(chunk("s1", "c2", A))
    got = s.tool_calls("s1")
    assert list(got) == ["c3", "c1", "c2"]
    assert_record(
        got,
        {
            "c3": rec("c3", title="again"),
            "c1": rec("c1", title="c1", status="completed"),
            "c2": rec("c2", title="c2", content=[A]),
        },
    )


def test_snapshot_shape(backend):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s2", "x", {"title": "X"}))
    s.apply(B.terminal_update("s0", "t1", command="ls"))  # no tool call: not in the snapshot
    s.apply(B.plan("s9", [B.plan_entry("p")]))
    s.apply(tool_call_update("s1", "a"))
    s.apply(tool_call_update("s2", "y"))
    assert_record(
        s.snapshot(),
        {"s2": {"x": rec("x", title="X"), "y": rec("y")}, "s1": {"a": rec("a")}},
    )


@pytest.mark.parametrize("version", [2, "negotiated"])
def test_api_example_v2(backend, version):
    s = backend.ToolCallStore() if version == "negotiated" else backend.ToolCallStore(2)
    if version == "negotiated":
        s.apply(INIT_V2)
    frames = [
        B.tool_call_update("s1", "c1", protocol_version=2, title="Read", kind="read"),
        B.tool_call_content_chunk("s1", "c1", A),
        B.tool_call_content_chunk("s1", "c1", Bc),
        B.tool_call_update("s1", "c1", protocol_version=2, status="in_progress", title=None),
    ]
    changes = [change_of(backend, s.apply(f)) for f in frames]
    assert changes == [
        ("s1", "tool_call", "c1", "created", "c1"),
        ("s1", "tool_call", "c1", "appended", "c1"),
        ("s1", "tool_call", "c1", "appended", "c1"),
        ("s1", "tool_call", "c1", "updated", "c1"),
    ]
    assert_record(
        s.get("s1", "c1"),
        {"toolCallId": "c1", "kind": "read", "status": "in_progress", "content": [A, Bc], "locations": []},
    )


@pytest.mark.parametrize("version", [1, None])
def test_api_example_v1_keeps_title(backend, version):
    s = backend.ToolCallStore(version)
    frames = [
        B.tool_call_update("s1", "c1", protocol_version=2, title="Read", kind="read"),
        B.tool_call_content_chunk("s1", "c1", A),
        B.tool_call_content_chunk("s1", "c1", Bc),
        B.tool_call_update("s1", "c1", protocol_version=2, status="in_progress", title=None),
    ]
    for f in frames:
        s.apply(f)
    assert_record(
        s.get("s1", "c1"),
        {
            "toolCallId": "c1",
            "title": "Read",
            "kind": "read",
            "status": "in_progress",
            "content": [A, Bc],
            "locations": [],
        },
    )


# ------------------------------------------------------------------------------------------
# 7.7 errors (tool calls)
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("update_kind", ["tool_call", "tool_call_update", "tool_call_content_chunk"])
def test_missing_tool_call_id(backend, update_kind):
    s = backend.ToolCallStore(2)
    data = session_update(
        "s1",
        {"sessionUpdate": update_kind, "title": "x", "content": [A] if update_kind != "tool_call_content_chunk" else A},
    )
    expect_error(
        backend,
        s,
        data,
        "invalid_tool_call_id",
        'expected "params.update.toolCallId" to be a string, found none',
        value_at(data, b'"update":'),
    )
    _good_after(backend, s)


@pytest.mark.parametrize(
    "tcid, found",
    [
        (12, "number 12"),
        (None, "null"),
        ({"id": "c1"}, "object"),
        (False, "false"),
        (1.5e300, "number 1.5e+300"),
        (123456789012345678901234567890123, "number"),
    ],
)
def test_bad_tool_call_id(backend, tcid, found):
    s = backend.ToolCallStore(2)
    data = tool_call_update("s1", tcid, {"title": "x"})
    expect_error(
        backend,
        s,
        data,
        "invalid_tool_call_id",
        f'expected "params.update.toolCallId" to be a string, found {found}',
        value_at(data, b'"toolCallId":'),
    )


def test_tool_call_id_checked_before_content(backend):
    s = backend.ToolCallStore(2)
    data = session_update("s1", {"sessionUpdate": "tool_call_update", "content": "x", "locations": 1})
    expect_error(
        backend,
        s,
        data,
        "invalid_tool_call_id",
        'expected "params.update.toolCallId" to be a string, found none',
        value_at(data, b'"update":'),
    )


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("update_kind", ["tool_call", "tool_call_update"])
@pytest.mark.parametrize(
    "content, found",
    [
        ("x", 'string "x"'),
        ({"type": "content"}, "object"),
        (5, "number 5"),
        (True, "true"),
        ("a" * 30, 'string "' + "a" * 30 + '"'),
        ("a" * 31, "string"),
    ],
)
def test_update_content_must_be_array_or_null(backend, version, update_kind, content, found):
    s = backend.ToolCallStore(version)
    s.apply(tool_call_update("s1", "c1", {"content": [A]}))
    data = session_update("s1", {"sessionUpdate": update_kind, "toolCallId": "c1", "title": "t", "content": content})
    expect_error(
        backend,
        s,
        data,
        "invalid_content",
        f'expected "params.update.content" to be an array or null, found {found}',
        value_at(data, b'"content":'),
    )
    _good_after(backend, s)


@pytest.mark.parametrize("content, found", [([A], "array"), (None, "null"), ("text", 'string "text"'), (0, "number 0")])
def test_chunk_content_must_be_object(backend, content, found):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1", {"content": [A]}))
    data = chunk("s1", "c1", content)
    expect_error(
        backend,
        s,
        data,
        "invalid_content",
        f'expected "params.update.content" to be an object, found {found}',
        value_at(data, b'"content":'),
    )
    _good_after(backend, s)


def test_chunk_without_content(backend):
    s = backend.ToolCallStore(2)
    data = session_update("s1", {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c1", "_meta": {}})
    expect_error(
        backend,
        s,
        data,
        "invalid_content",
        'expected "params.update.content" to be an object, found none',
        value_at(data, b'"update":'),
    )
    assert s.get("s1", "c1") is None


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("update_kind", ["tool_call", "tool_call_update"])
@pytest.mark.parametrize(
    "locations, found", [({"path": "/a"}, "object"), ("/a", 'string "/a"'), (-1, "number -1"), (False, "false")]
)
def test_locations_must_be_array_or_null(backend, version, update_kind, locations, found):
    s = backend.ToolCallStore(version)
    data = session_update("s1", {"sessionUpdate": update_kind, "toolCallId": "c1", "locations": locations})
    expect_error(
        backend,
        s,
        data,
        "invalid_locations",
        f'expected "params.update.locations" to be an array or null, found {found}',
        value_at(data, b'"locations":'),
    )


def test_content_checked_before_locations(backend):
    s = backend.ToolCallStore(2)
    data = session_update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "locations": 1, "content": 2})
    expect_error(
        backend,
        s,
        data,
        "invalid_content",
        'expected "params.update.content" to be an array or null, found number 2',
        value_at(data, b'"content":'),
    )


def test_error_leaves_existing_record_untouched(backend):
    s = backend.ToolCallStore(2)
    s.apply(full_v1_record_frame())
    data = tool_call_update("s1", "c1", {"title": None, "status": "completed", "content": [C], "locations": 9})
    expect_error(
        backend,
        s,
        data,
        "invalid_locations",
        'expected "params.update.locations" to be an array or null, found number 9',
        value_at(data, b'"locations":'),
    )
    assert_record(s.get("s1", "c1"), FULL)
    data = tool_call("s1", "c1", {"title": "Replaced", "content": {}})
    expect_error(
        backend,
        s,
        data,
        "invalid_content",
        'expected "params.update.content" to be an array or null, found object',
        value_at(data, b'"content":'),
    )
    assert_record(s.get("s1", "c1"), FULL)
    assert len(s) == 1


def test_error_position_with_whitespace_and_escapes(backend):
    s = backend.ToolCallStore(2)
    data = (
        '{ "jsonrpc" : "2.0" , "method" : "session/update" , "params" : { "sessionId" : "s\\u00e9" , '
        '"update" : { "sessionUpdate" : "tool_call_update" , "toolCallId" : "é" , "content" : "\\u00e9" } } }'
    ).encode()
    expect_error(
        backend,
        s,
        data,
        "invalid_content",
        'expected "params.update.content" to be an array or null, found string "\\u00e9"',
        value_at(data, b'"content" : '),
    )


# ------------------------------------------------------------------------------------------
# wrap_bare_content (docs/API.md "The record")
# ------------------------------------------------------------------------------------------


def test_bare_content_blocks_are_kept_unless_wrapped(backend):
    bare = {"type": "text", "text": "out"}
    wrapped = {"type": "content", "content": bare}
    diff = {"type": "diff", "path": "/a", "newText": "x"}
    for wrap in (False, True):
        s = backend.ToolCallStore(2, wrap_bare_content=wrap)
        assert s.wrap_bare_content is wrap
        s.apply(tool_call_update("s1", "c1", {"content": [bare, diff, wrapped, 7]}))
        s.apply(chunk("s1", "c1", {"type": "image", "data": "AA==", "mimeType": "image/png"}))
        s.apply(chunk("s1", "c1", {"type": "_custom"}))
        image = {"type": "image", "data": "AA==", "mimeType": "image/png"}
        expected = [bare, diff, wrapped, 7, image, {"type": "_custom"}]
        if wrap:
            expected[0] = wrapped
            expected[4] = {"type": "content", "content": image}
        assert s.get("s1", "c1")["content"] == expected
        # a v1 tool_call and a permission request's tool call too
        s.apply(tool_call("s1", "c2", {"title": "t", "content": [bare]}))
        assert s.get("s1", "c2")["content"] == [wrapped if wrap else bare]
        # a checkpoint keeps the option
        assert backend.ToolCallStore.from_json(s.to_json()).wrap_bare_content is wrap


def test_wrapped_content_keeps_number_text(both_backends):
    data = tool_call_update("s1", "c1", {"content": []}).replace(
        b'"content":[]', b'"content":[{"type":"resource","resource":{"uri":"u","n":1.50}}]'
    )
    outs = []
    for backend in both_backends:
        s = backend.ToolCallStore(2, wrap_bare_content=True)
        s.apply(data)
        outs.append(s.to_json())
    assert outs[0] == outs[1]
    assert b'"content":[{"type":"content","content":{"type":"resource","resource":{"uri":"u","n":1.50}}}]' in outs[0]
