"""Checkpoints that round-trip behaviour, not only data (issue 28, item 6; DESIGN 7.8).

A store restored with ``from_json(to_json())`` behaves as the original: fed the same further
frames it gives the same results and the same state, the eviction order of ``max_tool_calls``
across sessions included (``toolCallOrder``); the options that change what the store does
(``strict_schema`` with ``unstable`` and ``draft``, ``max_frame_bytes``, ``wrap_bare_content``)
come back; and every string value keeps its text as received (``"\\u00e9"`` stays six characters
in the checkpoint). Both backends, and each reads the other's checkpoints. Format ``/1`` documents
are still read; another format is refused.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from acp_fast import DecodeError
from state_helpers import canonical_numbers
from state_model import assert_record, results_key, session_update, tool_call_update
from state_strategies import MIXED_STREAMS, answers_a_request


def _applied(backend, store, data: bytes):
    try:
        return results_key(backend, store.apply(data))
    except DecodeError as exc:
        return exc


def _everything(store):
    """What the queries give of every session, and the counters."""
    out = [store.state(), len(store), store.evicted, store.closed_sessions]
    for sid in store.state()["sessions"]:
        out.append(
            (
                store.tool_calls(sid),
                store.terminals(sid),
                store.plans(sid),
                store.permissions(sid),
                store.updates(sid),
                store.cancel_responses(sid),
            )
        )
    return out


# ------------------------------------------------------------------------------------------------
# Eviction order across sessions


@given(bound=st.sampled_from([1, 2, 3, 5]), stream=MIXED_STREAMS, more=MIXED_STREAMS)
def test_restored_store_evicts_what_the_original_would(backend, bound, stream, more):
    # Sessions s1, s2 and s\u00e93 interleave: the bound drops the oldest tool call across them.
    # A checkpoint does not keep the requests waiting for their answer (DESIGN 7.10).
    more = [d for d in more if not answers_a_request(d)]
    store = backend.ToolCallStore(max_tool_calls=bound)
    for data in stream:
        _applied(backend, store, data)
    restored = backend.ToolCallStore.from_json(store.to_json())
    assert restored.to_json() == store.to_json()
    for index, data in enumerate(more):
        note(f"more {index}: {data!r}")
        assert _applied(backend, restored, data) == _applied(backend, store, data), (index, data)
        assert restored.evicted == store.evicted
        assert restored.snapshot() == store.snapshot()
    assert restored.to_json() == store.to_json()
    assert_record(_everything(restored), _everything(store))


def test_eviction_order_across_sessions_survives(backend):
    s = backend.ToolCallStore(max_tool_calls=3)
    for sid, tcid in (("a", "1"), ("b", "2"), ("a", "3"), ("c", "4")):  # "1" is evicted
        s.apply(tool_call_update(sid, tcid))
    doc = s.to_json()
    assert json.loads(doc)["toolCallOrder"] == ["b", "a", "c"]
    r = backend.ToolCallStore.from_json(doc)
    for store in (s, r):
        store.apply(tool_call_update("c", "5"))  # the oldest is b/2, not a/3 (first in the document)
        assert store.snapshot() == {
            "a": {"3": store.get("a", "3")},
            "c": {"4": store.get("c", "4"), "5": store.get("c", "5")},
        }
        # a finished tool call goes first, across sessions too
        store.apply(tool_call_update("a", "3", {"status": "completed"}))
        store.apply(tool_call_update("b", "6"))
        assert store.get("a", "3") is None and store.get("c", "4") is not None
    assert r.to_json() == s.to_json()


def test_tool_call_order_is_left_out_when_it_is_the_document_order(backend):
    s = backend.ToolCallStore(max_tool_calls=5)
    for sid, tcid in (("a", "1"), ("a", "2"), ("b", "3")):
        s.apply(tool_call_update(sid, tcid))
    assert "toolCallOrder" not in s.state()
    s.apply(tool_call_update("a", "4"))
    assert s.state()["toolCallOrder"] == ["a", "a", "b", "a"]
    # without a bound the order changes nothing, and is not written
    u = backend.ToolCallStore(max_tool_calls=None)
    for sid, tcid in (("a", "1"), ("b", "2"), ("a", "3")):
        u.apply(tool_call_update(sid, tcid))
    assert "toolCallOrder" not in u.state()


@pytest.mark.parametrize(
    "order, message",
    [
        ('["b","a"]', "expected \"state.toolCallOrder\" to name 'a' 2 times (its tool calls), found 1"),
        ('["a","a","b","b"]', "expected \"state.toolCallOrder\" to name 'b' 1 times (its tool calls), found more"),
        ('["a","x","b"]', 'expected "state.toolCallOrder.1" to be the id of a session in state.sessions, found string'),
        ('{"a":1}', 'expected "state.toolCallOrder" to be an array, found object'),
    ],
)
def test_a_bad_tool_call_order_is_refused(backend, order, message):
    s = backend.ToolCallStore(max_tool_calls=5)
    for sid, tcid in (("a", "1"), ("b", "2"), ("a", "3")):
        s.apply(tool_call_update(sid, tcid))
    doc = s.to_json().replace(b'"toolCallOrder":["a","b","a"]', b'"toolCallOrder":' + order.encode())
    with pytest.raises(ValueError) as info:
        backend.ToolCallStore.from_json(doc)
    assert str(info.value) == message


# ------------------------------------------------------------------------------------------------
# The options


BAD_FRAME = session_update("s1", {"sessionUpdate": "tool_call", "toolCallId": "c", "status": "bogus"})


@pytest.mark.parametrize(
    "options, members",
    [
        ({"strict_schema": True}, {"strictSchema": True}),
        ({"strict_schema": 1}, {"strictSchema": 1}),
        ({"strict_schema": 2, "unstable": True}, {"strictSchema": 2, "unstable": True}),
        ({"strict_schema": True, "draft": "alpha.5"}, {"strictSchema": True, "draft": "alpha.5"}),
        ({"max_frame_bytes": 100}, {"maxFrameBytes": 100}),
        ({"wrap_bare_content": True}, {"wrapBareContent": True}),
        # a draft or unstable without the strict check changes nothing and is not kept
        ({"draft": "alpha.5", "unstable": True}, {}),
    ],
)
def test_options_survive_a_restore(backend, options, members):
    s = backend.ToolCallStore(**options)
    doc = s.to_json()
    state = json.loads(doc)
    assert {k: state[k] for k in members} == members
    for name in ("strictSchema", "unstable", "draft", "maxFrameBytes", "wrapBareContent"):
        assert (name in state) == (name in members), name
    r = backend.ToolCallStore.from_json(doc)
    assert r.to_json() == doc
    assert (r.strict_schema, r.wrap_bare_content) == (s.strict_schema, s.wrap_bare_content)
    long_line = tool_call_update("s1", "c", {"title": "x" * 200}) + b"\n"
    bare = tool_call_update("s1", "b", {"content": [{"type": "text", "text": "hi"}]})
    for frames in ([BAD_FRAME], [long_line], [bare]):
        for data in frames:
            assert _applied_feed(s, data) == _applied_feed(r, data)
    assert r.to_json() == s.to_json()


def _applied_feed(store, data: bytes):
    """What ``feed`` + ``finish`` give for ``data`` (errors by kind)."""
    out = store.feed(data if data.endswith(b"\n") else data + b"\n") + store.finish()
    return [
        (type(x).__name__, getattr(x, "kind", None), tuple(x) if not isinstance(x, DecodeError) else None) for x in out
    ]


def test_strict_schema_refuses_after_a_restore_as_before(backend):
    s = backend.ToolCallStore(strict_schema=True)
    r = backend.ToolCallStore.from_json(s.to_json())
    assert r.strict_schema is True
    for store in (s, r):
        with pytest.raises(DecodeError) as info:
            store.apply(BAD_FRAME)
        assert info.value.kind == "schema"
        assert store.snapshot() == {}
    # the default stays off
    assert backend.ToolCallStore.from_json(backend.ToolCallStore().to_json()).strict_schema is False


@pytest.mark.parametrize(
    "member, value, message",
    [
        ("strictSchema", "false", 'expected "state.strictSchema" to be true, 1 or 2, found boolean'),
        ("strictSchema", "3", 'expected "state.strictSchema" to be true, 1 or 2, found number'),
        ("unstable", "1", 'expected "state.unstable" to be a boolean, found number'),
        ("draft", '"beta"', "expected \"state.draft\" to be 'latest' or 'alpha.5', found string"),
        ("maxFrameBytes", "0", 'expected "state.maxFrameBytes" to be an integer from 1 to 4294967294, found number'),
        ("wrapBareContent", "null", 'expected "state.wrapBareContent" to be a boolean, found null'),
    ],
)
def test_bad_options_are_refused(backend, member, value, message):
    doc = backend.ToolCallStore().to_json().replace(b'"evicted"', f'"{member}":{value},"evicted"'.encode())
    with pytest.raises(ValueError) as info:
        backend.ToolCallStore.from_json(doc)
    assert str(info.value) == message


# ------------------------------------------------------------------------------------------------
# Strings as received


ESCAPED = [
    '"\\u00e9"',
    '"\\/"',
    '"\\u0041\\u0042"',
    '"\\ud83d\\ude00"',
    '"\\uD83D\\uDE00"',
    '"\\u001F"',
    '"\\u0008\\b"',
    '"tab\\ttab\\u0009"',
    '"\\u2028\\u00E9\\\\u00e9"',
    '"plain \\"quoted\\" \\\\ and \\n"',
    '"\u00e9 raw"',
]


def _escaped_frames(text: str):
    """Frames whose values hold the string ``text`` (JSON text, for ``@T``) in every kind of record."""
    head = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
    frames = [
        head
        + (
            '{"sessionUpdate":"tool_call","toolCallId":"c1","title":@T,"rawInput":{"k":[@T,1.50]},'
            '"content":[{"type":"content","content":{"type":"text","text":@T}}],"x":@T}}}'
        ),
        head + '{"sessionUpdate":"plan","entries":[{"content":@T,"priority":"high","status":"pending"}]}}}',
        head + '{"sessionUpdate":"_custom","v":@T}}}',
        (
            '{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s1",'
            '"options":[{"optionId":"o","name":@T,"kind":"allow_once"}]}}'
        ),
    ]
    return [f.replace("@T", text).encode() for f in frames]


@pytest.mark.parametrize("text", ESCAPED)
def test_strings_come_back_byte_exact(both_backends, text):
    docs = []
    for backend in both_backends:
        s = backend.ToolCallStore()
        for data in _escaped_frames(text):
            s.apply(data)
        doc = s.to_json()
        # every value keeps its text: the title, a nested string, a content item, an unknown
        # field, a plan, an unknown update, a permission option
        assert doc.count(text.encode()) >= 7, doc
        assert canonical_numbers(doc) == backend.dumps(s.state())
        assert s.get("s1", "c1")["title"] == json.loads(text)
        assert type(s.get("s1", "c1")["title"]) is str
        restored = backend.ToolCallStore.from_json(doc)
        assert restored.to_json() == doc
        assert restored.get("s1", "c1") == s.get("s1", "c1")
        # what follows changes them alike
        for store in (s, restored):
            store.apply(tool_call_update("s1", "c1", {"status": "completed"}))
        assert restored.to_json() == s.to_json()
        docs.append(doc)
    native, fallback = both_backends
    assert docs[0] == docs[1]
    assert fallback.ToolCallStore.from_json(docs[0]).to_json() == docs[0]
    assert native.ToolCallStore.from_json(docs[1]).to_json() == docs[1]


def test_ids_and_tags_with_escapes_are_read_as_their_text(both_backends):
    # an id or a tag with an escape is the string it stands for (as without the escape)
    head = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
    frames = [
        head.replace(b'"s1"', b'"s\\u0031"')
        + b'{"sessionUpdate":"tool_call","toolCallId":"c\\u0031","status":"complet\\u0065d"}}}',
        head + b'{"sessionUpdate":"plan_update","plan":{"planId":"p\\u0031","entries":[]}}}}',
        head + b'{"sessionUpdate":"terminal_output_chunk","terminalId":"t\\u0031","data":""}}}',
        (
            b'{"jsonrpc":"2.0","id":"r\\u0031","method":"session/request_permission","params":{"sessionId":"s1",'
            b'"options":[{"optionId":"o\\u0031","name":"n","kind":"allow_\\u006fnce"}]}}'
        ),
        b'{"jsonrpc":"2.0","id":"r1","result":{"outcome":{"outcome":"s\\u0065lected","optionId":"o\\u0031"}}}',
    ]
    docs = []
    for backend in both_backends:
        s = backend.ToolCallStore(max_tool_calls=1)
        results = [_applied(backend, s, data) for data in frames]
        assert all(not isinstance(r, DecodeError) for r in results), results
        assert list(s.tool_calls("s1")) == ["c1"] and type(next(iter(s.tool_calls("s1")))) is str
        assert s.get("s1", "c1")["status"] == "completed"
        assert list(s.plans("s1")) == ["p1"] and list(s.terminals("s1")) == ["t1"]
        perm = s.permission("r1")
        assert (perm["outcome"], perm["optionId"], perm["approved"]) == ("selected", "o1", True)
        s.apply(tool_call_update("s1", "c2"))  # the finished c1 goes first
        assert list(s.tool_calls("s1")) == ["c2"]
        doc = s.to_json()
        assert b'"planId":"p\\u0031"' in doc
        docs.append(doc)
        assert backend.ToolCallStore.from_json(doc).to_json() == doc
    assert docs[0] == docs[1]


# ------------------------------------------------------------------------------------------------
# Versions of the format


def test_format_1_documents_are_read(backend):
    doc = {
        "format": "acp-fast-state/1",
        "protocolVersion": None,
        "negotiatedVersion": None,
        "maxToolCalls": 2,
        "evicted": 0,
        "sessions": {
            "a": {
                "toolCalls": {
                    "1": {
                        "toolCallId": "1",
                        "title": "\u00e9",
                        "kind": "other",
                        "status": "pending",
                        "content": [],
                        "locations": [],
                    }
                },
                "terminals": {},
                "plans": {},
                "permissions": [],
            },
            "b": {
                "toolCalls": {
                    "2": {"toolCallId": "2", "kind": "other", "status": "pending", "content": [], "locations": []}
                },
                "terminals": {},
                "plans": {},
                "permissions": [],
            },
        },
        "permissionOrder": [],
    }
    s = backend.ToolCallStore.from_json(json.dumps(doc))
    assert (s.max_tool_calls, s.strict_schema, s.wrap_bare_content) == (2, False, False)
    assert s.get("a", "1")["title"] == "\u00e9"
    out = json.loads(s.to_json())
    assert out["format"] == "acp-fast-state/2"
    assert out["sessions"] == doc["sessions"]
    s.apply(tool_call_update("b", "3"))  # session order: "1" is the oldest
    assert s.get("a", "1") is None


@pytest.mark.parametrize("fmt", ["acp-fast-state/3", "acp-fast-state/0", "acp-fast-state", 2])
def test_other_formats_are_refused(backend, fmt):
    doc = json.loads(backend.ToolCallStore().to_json())
    doc["format"] = fmt
    with pytest.raises(ValueError) as info:
        backend.ToolCallStore.from_json(json.dumps(doc))
    assert str(info.value) == (
        f"expected \"state.format\" to be 'acp-fast-state/2' or 'acp-fast-state/1', found {fmt!r}"
    )


def test_checkpoints_cross_backends_with_options_and_order(both_backends):
    native, fallback = both_backends
    stores = [
        b.ToolCallStore(max_tool_calls=2, strict_schema=2, draft="alpha.5", max_frame_bytes=4096) for b in both_backends
    ]
    for s in stores:
        for sid, tcid in (("a", "1"), ("b", "2"), ("a", "3")):
            s.apply(tool_call_update(sid, tcid))
    rust, python = (s.to_json() for s in stores)
    assert rust == python
    for reader, doc in ((fallback, rust), (native, python)):
        r = reader.ToolCallStore.from_json(doc)
        assert (r.strict_schema, r.max_tool_calls) == (2, 2)
        assert r.to_json() == doc
        r.apply(tool_call_update("c", "4"))
        assert r.get("b", "2") is None and r.get("a", "3") is not None
