"""Entities (mirrors ``rust/state/entity.rs`` and ``_fallback/state/entity.py``): the targets of the
schema's ``x-state`` rules that the store applies as written under v2 (messages by ``messageId``,
the session ``state``, ``usage``, ``sessionInfo``, commands, configuration options, compactions,
...), DESIGN.md §7.3. The cases follow the schema crate's own documentation of each rule
(agent-client-protocol-schema 1.20.0, src/v2/client.rs).

Every behaviour test takes the ``backend`` fixture and runs on both backends (ids rust, python).
"""

from __future__ import annotations

import json

import pytest

from state_helpers import expect_error
from state_model import change_of, session_update, value_at


def upd(update, sid="s1"):
    return session_update(sid, update)


def raw_upd(text: bytes, sid: bytes = b"s1") -> bytes:
    """A session/update frame around the update's text (numbers and spacing as written)."""
    return b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":%s}}' % (sid, text)


TEXT = {"type": "text", "text": "Hel"}
TEXT2 = {"type": "text", "text": "lo"}


def test_messages_upsert_and_append_in_arrival_order(backend):
    # UserMessage / AgentMessage docs: an upsert's `content` replaces what chunks accumulated,
    # later chunks append to it; a chunk's `_meta` does not patch the stored one.
    s = backend.ToolCallStore(2)
    changes = [
        s.apply(upd({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": TEXT})),
        s.apply(upd({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": TEXT2, "_meta": {"c": 1}})),
        s.apply(upd({"sessionUpdate": "agent_message", "messageId": "m1", "content": [TEXT2], "_meta": {"a": 1}})),
        s.apply(upd({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": TEXT})),
        s.apply(upd({"sessionUpdate": "user_message", "messageId": "u1", "content": [TEXT]})),
        s.apply(upd({"sessionUpdate": "agent_thought_chunk", "messageId": "t1", "content": TEXT})),
    ]
    assert [change_of(backend, c) for c in changes] == [
        ("s1", "agentMessage", "m1", "created", None),
        ("s1", "agentMessage", "m1", "appended", None),
        ("s1", "agentMessage", "m1", "updated", None),
        ("s1", "agentMessage", "m1", "appended", None),
        ("s1", "userMessage", "u1", "created", None),
        ("s1", "agentThought", "t1", "created", None),
    ]
    entities = s.entities("s1")
    assert entities == {
        "userMessage": {"u1": {"messageId": "u1", "content": [TEXT]}},
        "agentMessage": {"m1": {"messageId": "m1", "content": [TEXT2, TEXT], "_meta": {"a": 1}}},
        "agentThought": {"t1": {"messageId": "t1", "content": [TEXT]}},
    }
    # the targets in the table's order, the members in first-set order
    assert list(entities) == ["userMessage", "agentMessage", "agentThought"]
    assert list(entities["agentMessage"]["m1"]) == ["messageId", "content", "_meta"]
    # null clears; `_meta` patches by top-level key
    s.apply(upd({"sessionUpdate": "agent_message", "messageId": "m1", "content": None, "_meta": {"a": None, "b": 2}}))
    assert s.entities("s1")["agentMessage"]["m1"] == {"messageId": "m1", "_meta": {"b": 2}}
    s.apply(upd({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": TEXT}))
    assert s.entities("s1")["agentMessage"]["m1"] == {"messageId": "m1", "_meta": {"b": 2}, "content": [TEXT]}


def test_single_targets_upsert_and_replace(backend):
    s = backend.ToolCallStore(2)
    # UsageUpdate: `cost` omitted leaves it, null clears it
    s.apply(raw_upd(b'{"sessionUpdate":"usage_update","used":10,"size":100,"cost":{"amount":0.50,"currency":"USD"}}'))
    s.apply(upd({"sessionUpdate": "usage_update", "used": 11, "size": 100}))
    assert s.entities("s1")["usage"] == {"used": 11, "size": 100, "cost": {"amount": 0.5, "currency": "USD"}}
    assert b'"usage":{"used":11,"size":100,"cost":{"amount":0.50,"currency":"USD"}}' in s.to_json()
    c = s.apply(upd({"sessionUpdate": "usage_update", "used": 12, "size": 100, "cost": None}))
    assert change_of(backend, c) == ("s1", "usage", None, "updated", None)
    assert s.entities("s1")["usage"] == {"used": 12, "size": 100}
    # SessionInfoUpdate: partial updates, null clears
    s.apply(upd({"sessionUpdate": "session_info_update", "title": "T", "updatedAt": "2026-11-28T00:00:00Z"}))
    s.apply(upd({"sessionUpdate": "session_info_update", "title": None}))
    assert s.entities("s1")["sessionInfo"] == {"updatedAt": "2026-11-28T00:00:00Z"}
    # state_update replaces the state whole (as received, nulls included)
    c = s.apply(upd({"sessionUpdate": "state_update", "state": "running"}))
    assert change_of(backend, c) == ("s1", "state", None, "created", None)
    error = {"code": -32603, "message": "model unavailable"}
    c = s.apply(upd({"sessionUpdate": "state_update", "state": "idle", "stopReason": "error", "error": error}))
    assert change_of(backend, c) == ("s1", "state", None, "replaced", None)
    assert s.entities("s1")["state"] == {"state": "idle", "stopReason": "error", "error": error}
    # available commands and config options: the value, replaced whole
    commands = [{"name": "web", "description": "Search"}]
    s.apply(upd({"sessionUpdate": "available_commands_update", "availableCommands": commands}))
    s.apply(upd({"sessionUpdate": "available_commands_update", "availableCommands": commands[:0]}))
    assert s.entities("s1")["availableCommands"] == []


def test_compactions_cursors_subagents(backend):
    s = backend.ToolCallStore(2)
    # CompactionSummaryChunk: a first-seen id creates the compaction; chunks append in order
    c = s.apply(upd({"sessionUpdate": "compaction_summary_chunk", "compactionId": "k1", "content": TEXT}))
    assert change_of(backend, c) == ("s1", "compaction", "k1", "created", None)
    s.apply(upd({"sessionUpdate": "compaction_summary_chunk", "compactionId": "k1", "content": TEXT2}))
    s.apply(upd({"sessionUpdate": "compaction_update", "compactionId": "k1", "status": "completed"}))
    assert s.entities("s1")["compaction"] == {
        "k1": {"compactionId": "k1", "summary": [TEXT, TEXT2], "status": "completed"}
    }
    # `summary: []` clears it, chunks then append to the new list
    s.apply(upd({"sessionUpdate": "compaction_update", "compactionId": "k1", "summary": []}))
    s.apply(upd({"sessionUpdate": "compaction_summary_chunk", "compactionId": "k1", "content": TEXT}))
    assert s.entities("s1")["compaction"]["k1"]["summary"] == [TEXT]
    # subagents are keyed by the child's sessionId (the update's own member)
    s.apply(upd({"sessionUpdate": "subagent_update", "sessionId": "child", "title": "Tests"}))
    s.apply(upd({"sessionUpdate": "subagent_update", "sessionId": "child", "title": None, "description": "d"}))
    assert s.entities("s1")["subagent"] == {"child": {"sessionId": "child", "description": "d"}}
    s.apply(upd({"sessionUpdate": "cursor_update", "cursorId": "x", "anchor": {"messageId": "m1"}}))
    assert s.entities("s1")["cursor"] == {"x": {"cursorId": "x", "anchor": {"messageId": "m1"}}}


def test_entities_in_the_checkpoint_and_back(backend):
    s = backend.ToolCallStore(2, max_entities=2)
    for i in range(4):
        s.apply(upd({"sessionUpdate": "agent_message_chunk", "messageId": f"m{i}", "content": TEXT}))
    s.apply(raw_upd(b'{"sessionUpdate":"usage_update","used":1,"size":2.50}'))
    state = s.state()
    session = state["sessions"]["s1"]
    assert state["maxEntities"] == 2
    assert list(session["entities"]["agentMessage"]) == ["m2", "m3"]
    assert session["_truncated"] == {"droppedEntities": 2}
    data = s.to_json()
    assert b'"usage":{"used":1,"size":2.50}' in data
    back = backend.ToolCallStore.from_json(data)
    assert back.to_json() == data
    assert back.max_entities == 2
    # the restored lists are lists: appends go on
    back.apply(upd({"sessionUpdate": "agent_message_chunk", "messageId": "m3", "content": TEXT2}))
    assert back.entities("s1")["agentMessage"]["m3"]["content"] == [TEXT, TEXT2]


@pytest.mark.parametrize(
    "entities, path, what, found",
    [
        ({"bogus": {}}, "state.sessions.s1.entities.bogus", "a target of the update table", "object"),
        ({"agentMessage": []}, "state.sessions.s1.entities.agentMessage", "an object", "array"),
        ({"agentMessage": {"m1": 1}}, "state.sessions.s1.entities.agentMessage.m1", "an object", "number"),
        ({"usage": "x"}, "state.sessions.s1.entities.usage", "an object", "string"),
    ],
)
def test_checkpoint_entities_are_checked(backend, entities, path, what, found):
    s = backend.ToolCallStore(2)
    s.apply(upd({"sessionUpdate": "usage_update", "used": 1, "size": 2}))
    doc = s.state()
    doc["sessions"]["s1"]["entities"] = entities
    with pytest.raises(ValueError) as info:
        backend.ToolCallStore.from_json(json.dumps(doc))
    assert str(info.value) == f'expected "{path}" to be {what}, found {found}'


def test_checkpoint_entity_ids_match_their_keys(backend):
    s = backend.ToolCallStore(2)
    s.apply(upd({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": TEXT}))
    doc = s.state()
    doc["sessions"]["s1"]["entities"]["agentMessage"]["m1"]["messageId"] = "m2"
    with pytest.raises(ValueError) as info:
        backend.ToolCallStore.from_json(json.dumps(doc))
    assert (
        str(info.value) == "expected \"state.sessions.s1.entities.agentMessage.m1.messageId\" to be 'm1', found string"
    )


@pytest.mark.parametrize(
    "update, kind, description, at",
    [
        (
            {"sessionUpdate": "agent_message_chunk", "content": TEXT},
            "invalid_id",
            'expected "params.update.messageId" to be a string, found none',
            b'"update":',
        ),
        (
            {"sessionUpdate": "agent_message", "messageId": 7},
            "invalid_id",
            'expected "params.update.messageId" to be a string, found number 7',
            b'"messageId":',
        ),
        (
            {"sessionUpdate": "agent_message_chunk", "messageId": "m1"},
            "invalid_value",
            'expected "params.update.content" to be a value other than null, found none',
            b'"update":',
        ),
        (
            {"sessionUpdate": "available_commands_update", "availableCommands": None},
            "invalid_value",
            'expected "params.update.availableCommands" to be a value other than null, found null',
            b'"availableCommands":',
        ),
    ],
)
def test_invalid_entity_updates(backend, update, kind, description, at):
    s = backend.ToolCallStore(2)
    s.apply(upd({"sessionUpdate": "usage_update", "used": 1, "size": 2}))
    data = upd(update)
    expect_error(backend, s, data, kind, description, value_at(data, at))


def test_v1_applies_no_rule(backend):
    # v1 publishes no x-state: its message chunks are ignored, v2-only kinds are unknown updates
    s = backend.ToolCallStore(1)
    assert s.apply(upd({"sessionUpdate": "agent_message_chunk", "content": TEXT})) is None
    c = s.apply(upd({"sessionUpdate": "state_update", "state": "idle"}))
    assert change_of(backend, c) == ("s1", "update", "state_update", "appended", None)
    assert s.entities("s1") == {}
    assert "entities" not in s.state()["sessions"]["s1"]
    # with max_updates=0, nothing is checked or kept
    s = backend.ToolCallStore(1, max_updates=0)
    assert s.apply(upd({"sessionUpdate": "state_update"})) is None
    assert s.entities("nobody") == {}


def test_negotiating_v2_starts_applying_the_rules(backend):
    s = backend.ToolCallStore()
    chunk = upd({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": TEXT})
    assert s.apply(chunk) is None
    s.apply(b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}')
    assert change_of(backend, s.apply(chunk)) == ("s1", "agentMessage", "m1", "created", None)


def test_max_entities_argument(backend):
    assert backend.ToolCallStore().max_entities == 1000
    assert backend.ToolCallStore(max_entities=None).max_entities is None
    with pytest.raises(ValueError, match="max_entities"):
        backend.ToolCallStore(max_entities=-1)
    # 0: the rules are not applied, nothing is checked
    s = backend.ToolCallStore(2, max_entities=0)
    assert s.apply(upd({"sessionUpdate": "agent_message_chunk", "content": TEXT})) is None
    assert s.apply(upd({"sessionUpdate": "state_update", "state": "idle"})) is None
    assert s.entities("s1") == {} and s.state()["maxEntities"] == 0
    # ... but v2-only kinds are still not unknown updates under v2, and are under v1
    assert s.updates("s1") == []
    s1 = backend.ToolCallStore(1, max_entities=0)
    c = s1.apply(upd({"sessionUpdate": "state_update", "state": "idle"}))
    assert change_of(backend, c) == ("s1", "update", "state_update", "appended", None)


def test_backends_agree_on_a_v2_session(both_backends):
    frames = [
        raw_upd(b'{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"1.0"}}'),
        raw_upd(b'{"sessionUpdate":"agent_message","messageId":"m1","_meta":{"z":1,"a":{"n":1.50}},"x":null}'),
        raw_upd(b'{"sessionUpdate":"agent_message","messageId":"m1","_meta":{"z":null,"q":[]},"x":2}'),
        raw_upd(b'{"sessionUpdate":"usage_update","used":1,"size":2,"cost":{"amount":1E2,"currency":"EUR"}}'),
        raw_upd(b'{"sessionUpdate":"state_update","state":"idle","stopReason":null}'),
        raw_upd(b'{"sessionUpdate":"config_option_update","configOptions":[{"id":"m","value":-0}]}'),
        raw_upd(
            b'{"sessionUpdate":"session_message_chunk","messageId":"\\u00e9","content":{"type":"text","text":"x"}}'
        ),
    ]
    out = []
    for backend in both_backends:
        s = backend.ToolCallStore(2)
        changes = [tuple(s.apply(f)) for f in frames]
        out.append((changes, s.entities("s1"), s.to_json()))
    assert out[0] == out[1]
    assert b'"_meta":{"a":{"n":1.50},"q":[]},"x":2' in out[0][2]
