"""Records and ``Change`` (mirrors ``rust/state/records.rs`` and ``_fallback/state/records.py``):
the materialized tool-call record and its defaults (docs/API.md "The record", DESIGN.md §7.3), and
the ``Change`` event (§7.9).

Every behaviour test takes the ``backend`` fixture and runs on both backends (ids rust, python);
expected values are written out in full. Shared helpers: ``state_helpers.py``, ``state_model.py``.
"""

from __future__ import annotations

import json
import pickle

import pytest

from acp_fast import builders as B
from state_helpers import (
    CANCEL,
    INIT_V2,
    LINE,
    A,
    canonical_numbers,
    rec,
)
from state_model import (
    assert_record,
    change_of,
    chunk,
    frame,
    request,
    tool_call,
    tool_call_update,
)

# ------------------------------------------------------------------------------------------
# the record and its defaults (docs/API.md "The record")
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, None])
def test_record_defaults(backend, version):
    s = backend.ToolCallStore(version)
    c = s.apply(tool_call_update("s1", "c1"))
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "created", "c1")
    assert_record(
        s.get("s1", "c1"), {"toolCallId": "c1", "kind": "other", "status": "pending", "content": [], "locations": []}
    )
    assert len(s) == 1


def test_get_unknown_is_none(backend):
    s = backend.ToolCallStore()
    s.apply(tool_call_update("s1", "c1"))
    assert s.get("s1", "c2") is None
    assert s.get("s2", "c1") is None
    assert s.tool_calls("s2") == {}


def test_materialized_key_order_is_fixed(backend):
    s = backend.ToolCallStore(2)
    fields = {
        "zeta": 1,
        "_meta": {"m": 1},
        "name": "n",
        "rawOutput": 2,
        "rawInput": 1,
        "alpha": 2,
        "locations": [{"path": "/x"}],
        "content": [A],
        "status": "failed",
        "kind": "edit",
        "title": "T",
    }
    s.apply(tool_call_update("s1", "c1", fields))
    got = s.get("s1", "c1")
    assert list(got) == [
        "toolCallId",
        "title",
        "kind",
        "status",
        "content",
        "locations",
        "rawInput",
        "rawOutput",
        "name",
        "_meta",
        "zeta",
        "alpha",
    ]
    assert_record(
        got,
        rec(
            "c1",
            title="T",
            kind="edit",
            status="failed",
            content=[A],
            locations=[{"path": "/x"}],
            rawInput=1,
            rawOutput=2,
            name="n",
            _meta={"m": 1},
            zeta=1,
            alpha=2,
        ),
    )


def test_unknown_fields_in_first_set_order(backend):
    s = backend.ToolCallStore(2)
    s.apply(tool_call_update("s1", "c1", {"zeta": 1, "alpha": 2}))
    s.apply(tool_call_update("s1", "c1", {"beta": 3, "zeta": 10}))  # zeta keeps its place
    assert_record(s.get("s1", "c1"), rec("c1", zeta=10, alpha=2, beta=3))
    s.apply(tool_call_update("s1", "c1", {"zeta": None}))  # unset ...
    assert_record(s.get("s1", "c1"), rec("c1", alpha=2, beta=3))
    s.apply(tool_call_update("s1", "c1", {"zeta": "again"}))  # ... and set again: goes last
    assert_record(s.get("s1", "c1"), rec("c1", alpha=2, beta=3, zeta="again"))


def test_field_values_kept_whatever_their_json_type(backend):
    s = backend.ToolCallStore(2)
    fields = {
        "title": 42,
        "kind": {"k": 1},
        "status": ["a"],
        "name": False,
        "rawInput": "text",
        "rawOutput": 0,
        "_meta": 1.5,
    }
    s.apply(tool_call_update("s1", "c1", fields))
    assert_record(
        s.get("s1", "c1"),
        rec("c1", title=42, kind={"k": 1}, status=["a"], name=False, rawInput="text", rawOutput=0, _meta=1.5),
    )


@pytest.mark.parametrize("version", [1, 2])
def test_custom_and_unknown_kinds_and_statuses_preserved(backend, version):
    s = backend.ToolCallStore(version)
    s.apply(B.tool_call("s1", "c1", "x", kind="read"))
    s.apply(tool_call_update("s1", "c1", {"kind": "_acme_deploy", "status": "_waiting_for_ci"}))
    assert_record(s.get("s1", "c1"), rec("c1", title="x", kind="_acme_deploy", status="_waiting_for_ci"))
    s.apply(tool_call_update("s1", "c1", {"kind": "teleport", "status": "paused"}))
    assert_record(s.get("s1", "c1"), rec("c1", title="x", kind="teleport", status="paused"))
    s.apply(tool_call("s1", "c2", {"title": "y", "kind": "switch_mode", "status": "cancelled"}))
    assert_record(s.get("s1", "c2"), rec("c2", title="y", kind="switch_mode", status="cancelled"))


@pytest.mark.parametrize("version", [1, 2])
def test_unknown_content_types_preserved_exactly(backend, version):
    items = [
        {"type": "_acme_widget", "payload": {"z": [1, {"y": None}], "a": "é"}, "extra": None},
        {"type": "future_thing"},
        {"type": "diff", "changes": [{"operation": "move", "oldPath": "/a", "path": "/b", "_meta": {}}], "patch": None},
        {"type": "diff", "path": "/a", "oldText": None, "newText": "x"},
        {"type": "terminal", "terminalId": "t1"},
        {"no_type": True},
    ]
    s = backend.ToolCallStore(version)
    s.apply(tool_call_update("s1", "c1", {"content": items, "locations": [{"path": "/a", "line": None, "_x": [None]}]}))
    assert_record(s.get("s1", "c1"), rec("c1", content=items, locations=[{"path": "/a", "line": None, "_x": [None]}]))
    odd = {"type": "_chunky", "data": [None, {"k": None}]}
    s.apply(chunk("s1", "c1", odd))
    assert_record(s.get("s1", "c1")["content"], items + [odd])


def test_values_equal_stdlib_json_loads(backend):
    # big ints, floats (exponents, underflow, -0.0), -0, escapes of every kind, raw non-ASCII
    text = (
        r'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\u00e91",'
        r'"update":{"sessionUpdate":"tool_call_update","toolCallId":"c\ud83d\ude00",'
        r'"title":"line\nbreak \"q\" \\ \/ \u0000 \u00e9 é 😀 \b\f\r\t \u2028",'
        r'"rawInput":{"big":123456789012345678901234567890123456789,"neg":-98765432109876543210987654321,'
        r'"f":1.5E+300,"tiny":5e-324,"nz":-0.0,"z":-0,"e":1E2,"d":0.1,"under":1e-400,"l":[1,2.50,-3e-2]},'
        r'"rawOutput":[true,false,null,"\uD834\uDD1E"],'
        r'"x_\u00fcnicode":"\u00FC"}}}'
    )
    data = text.encode("utf-8")
    expected = json.loads(text)
    update = expected["params"]["update"]
    sid, tcid = "sé1", "c😀"
    s = backend.ToolCallStore(2)
    c = s.apply(data)
    assert change_of(backend, c) == (sid, "tool_call", tcid, "created", tcid)
    want = rec(tcid, title=update["title"], rawInput=update["rawInput"], rawOutput=update["rawOutput"], x_ünicode="ü")
    assert_record(s.get(sid, tcid), want)
    assert_record(s.snapshot(), {sid: {tcid: want}})
    # dumps(state()) but for numbers, which keep their text as received (DESIGN 7.8)
    assert canonical_numbers(s.to_json()) == backend.dumps(s.state())
    assert (
        b'"f":1.5E+300,"tiny":5e-324,"nz":-0.0,"z":-0,"e":1E2,"d":0.1,"under":1e-400,"l":[1,2.50,-3e-2]' in s.to_json()
    )
    assert_record(json.loads(s.to_json())["sessions"][sid]["toolCalls"][tcid], want)


def test_duplicate_members_last_wins(backend):
    s = backend.ToolCallStore(2)
    data = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s0","sessionId":"s1","update":'
        b'{"sessionUpdate":"tool_call_update","toolCallId":"a","toolCallId":"c1","zeta":1,"alpha":2,"zeta":3,'
        b'"title":"x","title":null,"kind":null,"kind":"read","rawInput":{"k":1,"k":2}}}}'
    )
    c = s.apply(data)
    assert change_of(backend, c) == ("s1", "tool_call", "c1", "created", "c1")
    assert s.get("s1", "a") is None and s.get("s0", "c1") is None
    assert_record(s.get("s1", "c1"), rec("c1", kind="read", rawInput={"k": 2}, zeta=3, alpha=2))


# ------------------------------------------------------------------------------------------
# 7.9 Change
# ------------------------------------------------------------------------------------------


def _change(backend, data=LINE, store=None):
    return (store or backend.ToolCallStore()).apply(data)


def test_change_fields(backend):
    c = _change(backend)
    assert type(c) is backend.Change
    assert (c.session_id, c.target, c.id, c.action, c.tool_call_id) == ("s1", "tool_call", "c1", "created", "c1")
    assert tuple(c) == ("s1", "tool_call", "c1", "created", "c1")
    assert list(c) == ["s1", "tool_call", "c1", "created", "c1"]


def test_change_equality_and_hash(backend):
    a, b = _change(backend), _change(backend)
    assert a == b
    assert (a != b) is False
    assert hash(a) == hash(b)
    s = backend.ToolCallStore()
    s.apply(LINE)
    other = s.apply(LINE)
    assert tuple(other) == ("s1", "tool_call", "c1", "updated", "c1")
    assert a != other
    assert len({a, b, other}) == 2
    p1 = _change(backend, B.request_permission(1, "s1", "c1", []))
    p2 = _change(backend, B.request_permission("1", "s1", "c1", []))
    assert p1 != p2
    assert (p1.id, p2.id) == (1, "1")
    assert a != "not a change"


def test_change_repr(backend):
    assert (
        repr(_change(backend))
        == "Change(session_id='s1', target='tool_call', id='c1', action='created', tool_call_id='c1')"
    )
    assert (
        repr(_change(backend, INIT_V2))
        == "Change(session_id=None, target='protocol', id=2, action='negotiated', tool_call_id=None)"
    )
    assert repr(_change(backend, B.request_permission(7, "s1", "c1", []))) == (
        "Change(session_id='s1', target='permission', id=7, action='requested', tool_call_id='c1')"
    )
    assert (
        repr(_change(backend, CANCEL))
        == "Change(session_id='s1', target='session', id=None, action='cancelled', tool_call_id=None)"
    )
    assert repr(_change(backend, B.terminal_update("it's", 'say "hi"'))) == (
        "Change(session_id=\"it's\", target='terminal', id='say \"hi\"', action='created', tool_call_id=None)"
    )


def test_change_is_immutable(backend):
    c = _change(backend)
    for attr in ("session_id", "target", "id", "action", "tool_call_id"):
        with pytest.raises((AttributeError, TypeError)):
            setattr(c, attr, "x")
        with pytest.raises((AttributeError, TypeError)):
            delattr(c, attr)
    with pytest.raises((AttributeError, TypeError)):
        c.new_attribute = 1
    assert tuple(c) == ("s1", "tool_call", "c1", "created", "c1")


@pytest.mark.parametrize(
    "data",
    [LINE, INIT_V2, CANCEL, frame(request(None, "session/request_permission", {"sessionId": "s1", "options": []}))],
    ids=["tool_call", "protocol", "session", "null_id"],
)
def test_change_pickles(backend, data):
    c = _change(backend, data)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(c, protocol))
        assert type(back) is backend.Change
        assert back == c and hash(back) == hash(c) and tuple(back) == tuple(c)
