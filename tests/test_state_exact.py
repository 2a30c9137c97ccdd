"""Data kept exactly (issue 16, item 4; docs/API.md "The record" and "Unknown updates", DESIGN
7.3 and 7.8): every number of a stored value keeps its text in ``to_json()`` — and so in a
checkpoint, ``acp-fast proxy --state-json`` and ``acp-fast inspect --json`` — while the queries
give its Python value; and the updates of kinds no rule handles are kept, bounded, with
``max_updates``. Both backends."""

from __future__ import annotations

import inspect as pyinspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acp_fast import DecodeError
from acp_fast import builders as B
from state_helpers import OPTIONS, canonical_numbers, empty_state, rec
from state_model import (
    assert_record,
    assert_state_error,
    change_of,
    frame,
    request,
    response,
    session_update,
    value_at,
)

PY = sys.executable
SCHEMAS = Path(__file__).resolve().parent.parent / "python" / "acp_fast" / "schema"

# Number texts that dumps(loads(text)) writes otherwise, each with its Python value.
ODD = [
    (b"2.50", 2.5),
    (b"1E2", 100.0),
    (b"1.0e+2", 100.0),
    (b"-0", 0),
    (b"0.10", 0.1),
    (b"1e5", 100000.0),
    (b"1e-400", 0.0),
    (b"5E-324", 5e-324),
    (b"12345678901234567890123", 12345678901234567890123),
    (b"-98765432109876543210", -98765432109876543210),
    (b"1e-05", 1e-05),
]
ODD_ARRAY = b"[" + b",".join(text for text, _ in ODD) + b"]"
ODD_VALUES = [value for _, value in ODD]


def upd(sid: str, update: bytes) -> bytes:
    """A session/update frame around the update object's text (numbers as written)."""
    return b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":%s}}' % (
        sid.encode(),
        update,
    )


def odd_frames():
    """Frames that store the odd numbers in every kind of record (text, as sent)."""
    return [
        upd(
            "s1",
            b'{"sessionUpdate":"tool_call_update","toolCallId":"c1","title":2.50,"rawInput":%s,'
            b'"rawOutput":{"n":-0},"locations":[{"path":"/a","line":1E2}],"_meta":{"m":1.0e+2},"zz":0.10}' % ODD_ARRAY,
        ),
        upd("s1", b'{"sessionUpdate":"tool_call_content_chunk","toolCallId":"c1","content":{"type":"x","n":1e5}}'),
        upd("s1", b'{"sessionUpdate":"plan","entries":[{"content":"a","n":2.50}],"_meta":{"v":-0}}'),
        upd("s2", b'{"sessionUpdate":"plan_update","plan":{"planId":"p","entries":[],"score":1E2}}'),
        upd(
            "s1",
            b'{"sessionUpdate":"terminal_update","terminalId":"t1","exitStatus":{"exitCode":-0},'
            b'"output":{"data":"","_meta":{"x":5E-324}},"_meta":{"y":1e-400},"zz":[2.50]}',
        ),
        (
            b'{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s1",'
            b'"toolCall":{"toolCallId":"c2","rawInput":{"w":12345678901234567890123}},'
            b'"options":[{"optionId":"ok","name":"OK","kind":"allow_once","weight":0.10}]}}'
        ),
        b'{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"ok"},"score":-0}}',
    ]


ODD_TEXTS = [
    b'"title":2.50',
    b'"rawInput":' + ODD_ARRAY,
    b'"rawOutput":{"n":-0}',
    b'"locations":[{"path":"/a","line":1E2}]',
    b'"_meta":{"m":1.0e+2},"zz":0.10',
    b'"content":[{"type":"x","n":1e5}]',
    b'"entries":[{"content":"a","n":2.50}],"_meta":{"v":-0}',
    b'"score":1E2',
    b'"exitStatus":{"exitCode":-0}',
    b'"outputMeta":{"x":5E-324}',
    b'"_meta":{"y":1e-400},"zz":[2.50]',
    b'"rawInput":{"w":12345678901234567890123}',
    b'"weight":0.10',
    b'"score":-0}',
]


def _odd_store(backend, **kw):
    s = backend.ToolCallStore(2, **kw)
    for f in odd_frames():
        s.apply(f)
    return s


def test_numbers_keep_their_text_in_every_record(backend):
    s = _odd_store(backend)
    doc = s.to_json()
    for text in ODD_TEXTS:
        assert text in doc, text
    # dumps(state()) once the numbers are set aside: only their text differs
    assert canonical_numbers(doc) == backend.dumps(s.state())
    # the queries give the Python values
    got = s.get("s1", "c1")
    assert_record(got["rawInput"], ODD_VALUES)
    assert_record(
        got,
        rec(
            "c1",
            title=2.5,
            content=[{"type": "x", "n": 100000.0}],
            locations=[{"path": "/a", "line": 100.0}],
            rawInput=ODD_VALUES,
            rawOutput={"n": 0},
            _meta={"m": 100.0},
            zz=0.1,
        ),
    )
    assert_record(s.terminal("s1", "t1")["outputMeta"], {"x": 5e-324})
    assert_record(s.plans("s1")["main"]["_meta"], {"v": 0})
    assert_record(s.permission(7)["response"], {"outcome": {"outcome": "selected", "optionId": "ok"}, "score": 0})
    assert_record(backend.loads(doc), s.state())


def test_numbers_keep_their_text_through_feed(backend):
    # the stream path (feed), with frames written compact, spaced and with escapes: each frame's
    # numbers as it sent them
    lines = odd_frames()
    lines[0] = lines[0].replace(b'"title":2.50,', b'"title" : 2.50 ,  ').replace(b'"zz":0.10', b'"z\\u007a":0.10')
    s = backend.ToolCallStore(2)
    assert not [r for r in s.feed(b"\n".join(lines) + b"\n") if not isinstance(r, backend.Change)]
    doc = s.to_json()
    for text in ODD_TEXTS:
        assert text in doc, text
    assert doc == _odd_store(backend).to_json()


def test_strings_that_look_like_numbers_are_left_alone(backend):
    # a date ("-01"), a version ("v1.50") and a string "-0" hold no number; the -0 beside them does
    update = (
        b'{"sessionUpdate":"tool_call_update","toolCallId":"c1","title":"2024-01-05 v1.50 -0 x:-0 1e5",'
        b'"rawInput":{"a":-0,"b":"-0","c":[1,-0]},"rawOutput":[0,10,-5]}'
    )
    s = backend.ToolCallStore()
    s.apply(upd("s1", update))
    doc = s.to_json()
    assert b'"title":"2024-01-05 v1.50 -0 x:-0 1e5"' in doc
    assert b'"rawInput":{"a":-0,"b":"-0","c":[1,-0]},"rawOutput":[0,10,-5]' in doc
    assert_record(s.get("s1", "c1")["rawInput"], {"a": 0, "b": "-0", "c": [1, 0]})


def test_checkpoint_round_trip_keeps_numbers(backend):
    s = _odd_store(backend, max_updates=3)
    s.apply(upd("s1", b'{"sessionUpdate":"_acme","n":2.50,"big":-98765432109876543210}'))
    doc = s.to_json()
    restored = backend.ToolCallStore.from_json(doc)
    assert restored.to_json() == doc
    assert_record(restored.state(), s.state())
    assert_record(restored.updates("s1"), [{"sessionUpdate": "_acme", "n": 2.5, "big": -98765432109876543210}])
    # a document written by hand: numbers anywhere in the stored values, spaces and escapes
    text = (
        b'{"format":"acp-fast-state/2","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,'
        b'"evicted":0,"sessions":{"s1":{"toolCalls":{"c1":{"toolCallId":"c1","kind":"other","status":"pending",'
        b'"content":[ {"n": 1E2} ],"locations":[],"rawInput": [2.50, -0, 1e-400]}},"terminals":{},'
        b'"plans":{"p":{"planId":"p","n":0.10}},"permissions":[{"id":-0,"sessionId":"s1","options":[{"w":1.0e+2}],'
        b'"outcome":"pending","approved":false}]}}}'
    )
    restored = backend.ToolCallStore.from_json(text)
    again = restored.to_json()
    for part in (b'"content":[{"n":1E2}]', b'"rawInput":[2.50,-0,1e-400]', b'"n":0.10', b'"options":[{"w":1.0e+2}]'):
        assert part in again, part
    assert restored.permission(0)["id"] == 0
    assert backend.ToolCallStore.from_json(again).to_json() == again


def test_both_backends_write_the_same_checkpoint(both_backends):
    docs = []
    for backend in both_backends:
        s = _odd_store(backend, max_updates=None)
        s.apply(upd("s3", b'{"sessionUpdate":"_x","v":[1E2,-0,{"k":0.10}]}'))
        s.apply(
            frame(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {
                        "sessionId": "s3",
                        "update": {"sessionUpdate": "tool_call_update", "toolCallId": "c", "n": 10**30},
                    },
                }
            )
        )
        docs.append(s.to_json())
        assert backend.ToolCallStore.from_json(docs[-1]).to_json() == docs[-1]
    assert docs[0] == docs[1]


def test_a_response_learns_from_the_value_of_its_protocol_version(backend):
    s = backend.ToolCallStore(max_updates=1)
    assert change_of(backend, s.apply(b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":-0}}'))[2:4] == (
        1,
        "negotiated",
    )
    assert s.apply(b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2.0}}') is None
    assert (
        change_of(backend, s.apply(b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":20000000000000000000000}}'))[2]
        == 2
    )
    # v2 in force: state_update is a v2 kind (its rule applied), current_mode_update is not (kept)
    assert change_of(backend, s.apply(upd("s", b'{"sessionUpdate":"state_update","state":"idle"}'))) == (
        "s",
        "state",
        None,
        "created",
        None,
    )
    assert change_of(backend, s.apply(upd("s", b'{"sessionUpdate":"current_mode_update","n":1E2}'))) == (
        "s",
        "update",
        "current_mode_update",
        "appended",
        None,
    )


# ------------------------------------------------------------------------------------------
# unknown updates
# ------------------------------------------------------------------------------------------


def test_unknown_updates_are_kept_by_default(backend):
    s = backend.ToolCallStore()
    assert s.max_updates == 1000
    for i in range(1002):
        change = s.apply(upd("s1", b'{"sessionUpdate":"_acme_progress","i":%d}' % i))
        assert change_of(backend, change) == ("s1", "update", "_acme_progress", "appended", None)
    # the last 1000 are kept, the first ones dropped and counted
    assert [u["i"] for u in s.updates("s1")] == list(range(2, 1002))
    assert s.state()["sessions"]["s1"]["_truncated"] == {"droppedUpdates": 2}


def test_unknown_updates_are_ignored_with_max_updates_0(backend):
    s = backend.ToolCallStore(max_updates=0)
    assert s.max_updates == 0
    for kind in ("_acme_progress", "state_update", "future_kind"):
        assert s.apply(upd("s1", b'{"sessionUpdate":"%s"}' % kind.encode())) is None
    # not even checked: the store has no rule for them
    assert s.apply(session_update(5, {"sessionUpdate": "_acme"})) is None
    assert_record(s.state(), _with_bound(empty_state(), "maxUpdates", 0))
    assert s.updates("s1") == []


def _with_bound(state, name, value):
    """``state`` with the bound ``name`` written after ``maxToolCalls``, as a checkpoint has it."""
    out = {}
    for k, v in state.items():
        out[k] = v
        if k == "maxToolCalls":
            out[name] = value
    return out


def test_unknown_updates_are_kept_in_order_and_bounded(backend):
    s = backend.ToolCallStore(1, max_updates=2)
    assert s.max_updates == 2
    kinds = ["_acme_progress", "state_update", "agent_message_chunk", "_acme_progress", "teleport"]
    got = [s.apply(upd("s1", b'{"sessionUpdate":"%s","i":%d}' % (k.encode(), i))) for i, k in enumerate(kinds)]
    assert got[2] is None  # a v1 kind without a rule: conversation, not state
    assert [change_of(backend, c) for c in got if c is not None] == [
        ("s1", "update", kind, "appended", None)
        for kind in ("_acme_progress", "state_update", "_acme_progress", "teleport")
    ]
    assert_record(s.updates("s1"), [{"sessionUpdate": "_acme_progress", "i": 3}, {"sessionUpdate": "teleport", "i": 4}])
    session = s.state()["sessions"]["s1"]
    assert_record(
        session,
        {
            "toolCalls": {},
            "terminals": {},
            "plans": {},
            "permissions": [],
            "updates": [{"sessionUpdate": "_acme_progress", "i": 3}, {"sessionUpdate": "teleport", "i": 4}],
            "_truncated": {"droppedUpdates": 2},
        },
    )
    assert s.snapshot() == {}
    # fresh objects: changing them never touches the store
    s.updates("s1")[0]["i"] = 99
    assert s.updates("s1")[0]["i"] == 3
    # each session has its own list; None keeps all
    s = backend.ToolCallStore(max_updates=None)
    for i in range(50):
        s.apply(upd(f"s{i % 2}", b'{"sessionUpdate":"_x","i":%d}' % i))
    assert [u["i"] for u in s.updates("s1")] == list(range(1, 50, 2))
    assert "_truncated" not in s.state()["sessions"]["s1"]


def _schema_kinds(version):
    kinds = set()
    for name in ("schema.json", "schema.unstable.json"):
        text = (SCHEMAS / f"v{version}" / name).read_text(encoding="utf-8")
        doc = json.loads(text)

        def walk(node):
            if isinstance(node, dict):
                tag = node.get("properties", {}).get("sessionUpdate")
                if isinstance(tag, dict) and isinstance(tag.get("const"), str):
                    kinds.add(tag["const"])
                for v in node.values():
                    walk(v)
            elif isinstance(node, list):
                for v in node:
                    walk(v)

        walk(doc)
    return kinds


RULES = {
    "tool_call",
    "tool_call_update",
    "tool_call_content_chunk",
    "terminal_update",
    "terminal_output_chunk",
    "plan",
    "plan_update",
    "plan_removed",
}


def _x_state_targets() -> dict[str, str]:
    """The v2 kinds with a session rule in the schema's x-state table, and the rule's target."""
    table = json.loads((SCHEMAS / "v2" / "state.json").read_text(encoding="utf-8"))
    return {k: rules["session"][0]["target"] for k, rules in table["updates"].items() if rules.get("session")}


@pytest.mark.parametrize("version", [1, 2])
def test_kinds_of_the_version_in_force_are_ignored_and_the_others_kept(backend, version):
    own, other = _schema_kinds(version), _schema_kinds(3 - version)
    assert {"agent_message_chunk", "user_message_chunk"} <= own and RULES & own
    ruled = _x_state_targets() if version == 2 else {}
    assert version == 1 or len(ruled.keys() - RULES) >= 15
    s = backend.ToolCallStore(version, max_updates=None)
    for kind in sorted(own - RULES):
        frame = upd("s1", b'{"sessionUpdate":"%s"}' % kind.encode())
        if kind not in ruled:
            assert s.apply(frame) is None, kind
            continue
        # v2 applies the schema's rule: a bare update lacks the id or value the rule names,
        # or sets the target (state, usage, sessionInfo)
        try:
            change = change_of(backend, s.apply(frame))
        except DecodeError as e:
            assert e.kind in ("invalid_id", "invalid_value"), kind
        else:
            assert change[1] == ruled[kind], kind
    kept = sorted(other - own - RULES) + ["_acme", "x_future"]
    assert len(kept) >= 3
    for kind in kept:
        assert change_of(backend, s.apply(upd("s1", b'{"sessionUpdate":"%s"}' % kind.encode())))[2] == kind
    assert [u["sessionUpdate"] for u in s.updates("s1")] == kept


def test_negotiation_in_the_middle_of_a_feed_changes_what_is_kept(backend):
    lines = [
        upd("s1", b'{"sessionUpdate":"state_update","n":1}'),
        response(0, {"protocolVersion": 2}),
        upd("s1", b'{"sessionUpdate":"state_update","n":2}'),
        upd("s1", b'{"sessionUpdate":"current_mode_update","n":3}'),
        response(0, {"protocolVersion": 1}),
        upd("s1", b'{"sessionUpdate":"current_mode_update","n":4}'),
        upd("s1", b'{"sessionUpdate":"state_update","n":5}'),
        # in a batch, and in a frame only the grammar takes (an integer beyond 64 bits)
        b'[{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}]',
        upd("s1", b'{"sessionUpdate":"state_update","n":6}'),
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"x":1%s}}' % (b"0" * 400),
        upd("s1", b'{"sessionUpdate":"state_update","n":7}'),
    ]
    s = backend.ToolCallStore(max_updates=10)
    out = s.feed(b"\n".join(lines) + b"\n")
    assert [tuple(c) for c in out if c.target == "update"] == [
        ("s1", "update", k, "appended", None)
        for k in ("state_update", "current_mode_update", "state_update", "state_update")
    ]
    assert [u["n"] for u in s.updates("s1")] == [1, 3, 5, 7]


def test_a_kept_update_needs_a_string_session(backend):
    s = backend.ToolCallStore(max_updates=1)
    data = session_update(5, {"sessionUpdate": "_acme"})
    with pytest.raises(DecodeError) as info:
        s.apply(data)
    desc = 'expected "params.sessionId" to be a string, found number 5'
    assert_state_error(info.value, "invalid_session_id", desc, value_at(data, b'"sessionId":'))
    # a kind the version defines is not checked
    assert s.apply(session_update(5, {"sessionUpdate": "agent_message_chunk"})) is None
    assert b',"maxUpdates":1,"evicted":0,"sessions":{},' in s.to_json()
    # in a batch, one result per entry
    batch = frame(
        [
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": "s", "update": {"sessionUpdate": "_a"}},
            },
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": [], "update": {"sessionUpdate": "_b"}},
            },
        ]
    )
    first, second = s.apply(batch)
    assert change_of(backend, first) == ("s", "update", "_a", "appended", None)
    assert second.kind == "invalid_session_id"


def test_max_updates_argument(backend):
    store = backend.ToolCallStore
    assert store(max_updates=None).max_updates is None
    assert store(max_updates=0).max_updates == 0
    assert store(max_updates=2**63 - 1).max_updates == 2**63 - 1
    for bad in (-1, True, "3", 1.0, 2**63):
        with pytest.raises(ValueError) as info:
            store(max_updates=bad)
        assert str(info.value) == f"expected max_updates to be a non-negative integer or None, found {bad!r}"
    assert pyinspect.signature(store).parameters["max_updates"].default == 1000


def _parameters(cls):
    return [(p.name, p.kind, p.default) for p in pyinspect.signature(cls).parameters.values()]


def test_same_constructor_signature(both_backends):
    native, fallback = both_backends
    assert _parameters(native.ToolCallStore) == _parameters(fallback.ToolCallStore)
    assert {"max_updates", "max_terminals", "strict_schema"} <= {
        name for name, _, _ in _parameters(native.ToolCallStore)
    }


BAD_UPDATE_DOCS = [
    ({"updates": {}}, 'expected "state.sessions.s1.updates" to be an array, found object'),
    ({"updates": [5]}, 'expected "state.sessions.s1.updates.0" to be an object, found number'),
    ({"updates": [{}]}, 'expected "state.sessions.s1.updates.0.sessionUpdate" to be present, found none'),
    (
        {"updates": [{"sessionUpdate": 1}]},
        'expected "state.sessions.s1.updates.0.sessionUpdate" to be a string, found number',
    ),
    ({"_truncated": []}, 'expected "state.sessions.s1._truncated" to be an object, found array'),
    (
        {"_truncated": {"droppedUpdates": 0}},
        'expected "state.sessions.s1._truncated.droppedUpdates" to be a positive integer, found number',
    ),
    (
        {"_truncated": {"droppedUpdates": 2**63}},
        'expected "state.sessions.s1._truncated.droppedUpdates" to be a positive integer, found number',
    ),
    (
        {"_truncated": {"droppedUpdates": "1"}},
        'expected "state.sessions.s1._truncated.droppedUpdates" to be a positive integer, found string',
    ),
    ({"_truncated": {"dropped": 1}}, 'expected "state.sessions.s1._truncated.dropped" to be absent, found number'),
]


@pytest.mark.parametrize(("extra", "message"), BAD_UPDATE_DOCS, ids=[m.split('"')[1] for _, m in BAD_UPDATE_DOCS])
def test_from_json_checks_updates_and_markers(backend, extra, message):
    doc = empty_state(sessions={"s1": {"toolCalls": {}, "terminals": {}, "plans": {}, "permissions": [], **extra}})
    doc["maxUpdates"] = 5
    with pytest.raises(ValueError) as info:
        backend.ToolCallStore.from_json(json.dumps(doc))
    assert type(info.value) is ValueError
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (
            {"maxUpdates": None},
            'expected "state.sessions.s1._truncated.droppedUpdates" to be absent (state.maxUpdates is null), found number',
        ),
        ({"maxUpdates": -1}, 'expected "state.maxUpdates" to be a non-negative integer or null, found number'),
        ({"maxUpdates": 2**63}, 'expected "state.maxUpdates" to be a non-negative integer or null, found number'),
        ({"maxUpdates": "5"}, 'expected "state.maxUpdates" to be a non-negative integer or null, found string'),
        ({"maxUpdates": 1.5}, 'expected "state.maxUpdates" to be a non-negative integer or null, found number'),
    ],
)
def test_from_json_checks_the_bound(backend, limits, message):
    session = {"toolCalls": {}, "terminals": {}, "plans": {}, "permissions": [], "_truncated": {"droppedUpdates": 1}}
    doc = {**empty_state(sessions={"s1": session}), **limits}
    with pytest.raises(ValueError) as info:
        backend.ToolCallStore.from_json(json.dumps(doc))
    assert str(info.value) == message


def test_bound_written_only_when_not_the_default(backend):
    assert b"maxUpdates" not in backend.ToolCallStore().to_json()
    assert b',"maxToolCalls":1000,"maxUpdates":null,"evicted":0,' in backend.ToolCallStore(max_updates=None).to_json()
    assert b',"maxToolCalls":1000,"maxUpdates":0,"evicted":0,' in backend.ToolCallStore(max_updates=0).to_json()
    restored = backend.ToolCallStore.from_json(backend.ToolCallStore(max_updates=7).to_json())
    assert restored.max_updates == 7
    assert backend.ToolCallStore.from_json(backend.ToolCallStore(max_updates=0).to_json()).max_updates == 0
    assert backend.ToolCallStore.from_json(backend.ToolCallStore().to_json()).max_updates == 1000


def test_checkpoint_without_max_updates_reads_with_the_default(backend):
    # A checkpoint written when the default was 0 (none kept) omits maxUpdates and holds no
    # updates: it reads as it is, with today's default (DESIGN 7.8), and keeps unknown updates
    # from then on.
    old = json.dumps(empty_state(sessions={"s1": {"toolCalls": {}, "terminals": {}, "plans": {}, "permissions": []}}))
    s = backend.ToolCallStore.from_json(old)
    assert s.max_updates == 1000
    assert s.to_json() == old.replace(" ", "").encode()
    assert s.updates("s1") == []
    assert change_of(backend, s.apply(upd("s1", b'{"sessionUpdate":"_x"}')))[1:] == ("update", "_x", "appended", None)
    assert s.updates("s1") == [{"sessionUpdate": "_x"}]


# ------------------------------------------------------------------------------------------
# the command line
# ------------------------------------------------------------------------------------------


def _odd_agent(tmp_path: Path):
    lines = b"\n".join(odd_frames()[:5] + [upd("s1", b'{"sessionUpdate":"_acme","n":2.50}')]) + b"\n"
    (tmp_path / "out.ndjson").write_bytes(lines)
    path = tmp_path / "agent.py"
    path.write_text(f"import sys\nsys.stdout.buffer.write(open({str(tmp_path / 'out.ndjson')!r}, 'rb').read())\n")
    return [PY, str(path)], lines


def test_proxy_state_json_keeps_numbers_and_unknown_updates(tmp_path, backend_id):
    agent, lines = _odd_agent(tmp_path)
    state = tmp_path / "state.json"
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    done = subprocess.run(
        [PY, "-m", "acp_fast.cli", "proxy", "--state-json", str(state), "--max-updates", "5", "--", *agent],
        input=b"",
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == lines  # the relay is byte-exact
    doc = state.read_bytes()
    for text in ODD_TEXTS[:11]:
        assert text in doc, text
    assert b'"updates":[{"sessionUpdate":"_acme","n":2.50}]' in doc


def test_inspect_json_keeps_numbers_and_counts_unknown_updates(tmp_path, backend_id):
    data = (
        b"\n".join(
            odd_frames()
            + [upd("s1", b'{"sessionUpdate":"_acme","n":2.50}')] * 3
            + [upd("s2", b'{"sessionUpdate":"_b"}')]
        )
        + b"\n"
    )
    path = tmp_path / "s.ndjson"
    path.write_bytes(data)
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    cmd = [PY, "-m", "acp_fast.cli", "inspect", str(path)]
    done = subprocess.run([*cmd, "--json", "--max-updates", "2"], capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    for text in ODD_TEXTS:
        assert text in done.stdout, text
    report = json.loads(done.stdout)
    assert report["summary"]["updates"] == 4 and report["summary"]["updatesByKind"] == {"_acme": 3, "_b": 1}
    assert report["state"]["sessions"]["s1"]["_truncated"] == {"droppedUpdates": 1}
    done = subprocess.run([*cmd, "--max-updates", "2"], capture_output=True, env=env, timeout=60)
    assert "  unknown updates: 3 (_acme 3), 2 kept\n" in done.stdout.decode()
    done = subprocess.run([*cmd, "--max-updates", "-1"], capture_output=True, env=env, timeout=60)
    assert done.returncode == 2 and b"--max-updates" in done.stderr


def test_replay_counts_unknown_updates(backend, monkeypatch):
    import acp_fast
    from acp_fast.cli import inspect as inspector

    for name in ("FrameDecoder", "decode", "loads", "dumps", "encode", "ToolCallStore", "Message", "BACKEND"):
        monkeypatch.setattr(acp_fast, name, getattr(backend, name))
    data = b"".join([B.tool_call("s", "c", "T"), upd("s", b'{"sessionUpdate":"_p"}') + b"\n"] * 2)
    assert inspector.replay_file(data, max_updates=0).updates_by_kind == {}
    # kept by default (issue 16)
    result = inspector.replay_file(data)
    assert result.updates_by_kind == {"s": {"_p": 2}}
    assert result.store.max_updates == 1000
    assert result.store.updates("s") == [{"sessionUpdate": "_p"}] * 2
    result = inspector.replay_file(data, max_updates=1)
    assert result.updates_by_kind == {"s": {"_p": 2}}
    assert result.store.updates("s") == [{"sessionUpdate": "_p"}]


def test_options_of_a_permission_keep_numbers(backend):
    # a permission request stored as received, resolved by a response whose result holds numbers
    s = backend.ToolCallStore()
    options = [dict(o, weight=1.5) for o in OPTIONS]
    s.apply(
        frame(request(3, "session/request_permission", {"sessionId": "s", "options": options})).replace(b"1.5", b"1.50")
    )
    s.apply(b'{"jsonrpc":"2.0","id":3,"error":{"code":-32800,"message":"x","data":{"t":1E2}}}')
    assert s.to_json().count(b'"weight":1.50') == 4
    assert b'"response":{"code":-32800,"message":"x","data":{"t":1E2}}' in s.to_json()
    assert s.permission(3)["response"]["data"] == {"t": 100.0}


def test_a_batch_under_v2_is_one_invalid_request(backend):
    """v2 has no batches: under it an array is one -32600 error (kind batch_in_v2, at its "["),
    nothing of it checked or applied; v1 applies each entry, and a negotiation in the middle of a
    stream applies from the next frame on."""
    call = upd("s1", b'{"sessionUpdate":"tool_call_update","toolCallId":"c1","title":"T"}')
    batch = b"[" + call + b"," + call.replace(b'"c1"', b'"c2"') + b"]"
    s = backend.ToolCallStore(2)
    (error,) = s.feed(b"  " + batch + b"\n")
    assert (error.code, error.kind, error.line, error.position, error.raw) == (
        -32600,
        "batch_in_v2",
        1,
        2,
        b"  " + batch,
    )
    assert str(error) == "expected one message, found a batch (protocol v2 has no batches) at line 1 column 3"
    with pytest.raises(DecodeError) as info:
        s.apply(batch)
    assert (info.value.code, info.value.kind, info.value.line, info.value.raw) == (-32600, "batch_in_v2", None, batch)
    assert s.snapshot() == {}
    # with a strict check too: the -32600 comes first, the schema is not asked
    (error,) = backend.ToolCallStore(2, strict_schema=True).feed(batch + b"\n")
    assert error.kind == "batch_in_v2"
    s = backend.ToolCallStore()
    lines = [batch, response(0, {"protocolVersion": 2}).strip(), batch.replace(b'"c', b'"d')]
    out = s.feed(b"\n".join(lines) + b"\n")
    assert [change_of(backend, c)[3] if not isinstance(c, DecodeError) else c.kind for c in out] == [
        "created",
        "created",
        "negotiated",
        "batch_in_v2",
    ]
    assert sorted(s.snapshot()["s1"]) == ["c1", "c2"]
