"""Invariants of the v1 <-> v2 bridge (docs/BRIDGE.md), on both backends.

On generated conversations — the traffic profiles of :mod:`acp_fast.traffic` and random streams of
agent frames that use what one version can say and the other cannot (null clears, custom kinds
and statuses, content chunks, v2 diffs and terminals, several plans, v1 diffs and editor-owned
terminals, empty permission options, unknown permission outcomes, prompt turns) — in both
directions:

* the editor's state, built from what the bridge sent it with the editor's rules
  (``ToolCallStore(protocol_version=editor)``), equals the agent's state, built from what it sent
  with the agent's rules, once the documented differences are applied (tests/bridge_checks.py);
* every frame the bridge emits validates against the official schema of the side that receives
  it (the method's params, or the result of the request that side sent), and no request is
  answered twice.
"""

from __future__ import annotations

import base64
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import acp_fast
from acp_fast import traffic
from acp_fast.bridge import REJECT_OPTION, Bridge, git_patch
from bridge_checks import Conversation, as_editor, schema_problems, senders, sessions_of, state_differences

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
SCALARS = st.one_of(st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False, allow_infinity=False), TEXT)
JSON = st.recursive(
    st.one_of(st.none(), SCALARS),
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(TEXT, kids, max_size=3)),
    max_leaves=6,
)
OBJECTS = st.dictionaries(TEXT, JSON, max_size=2)
SESSIONS = st.sampled_from(["s1", "s2"])
TOOL_CALLS = st.sampled_from(["c1", "c2"])
TERMINALS = st.sampled_from(["t1", "t2"])
LOCATIONS = st.lists(
    st.fixed_dictionaries({"path": st.sampled_from(["/a", "/b/c"])}, optional={"line": st.integers(0, 2**32 - 1)}),
    max_size=2,
)
TEXT_BLOCK = st.builds(lambda t: {"type": "text", "text": t}, TEXT)
IMAGE_BLOCK = st.just({"type": "image", "data": "AAAA", "mimeType": "image/png"})


def _with_meta(items: st.SearchStrategy[Dict[str, Any]]) -> st.SearchStrategy[Dict[str, Any]]:
    return st.builds(lambda item, meta: item if meta is None else {**item, "_meta": meta}, items, st.none() | OBJECTS)


V2_ITEMS = _with_meta(
    st.one_of(
        st.builds(lambda b: {"type": "content", "content": b}, TEXT_BLOCK | IMAGE_BLOCK),
        st.just({"type": "content", "content": {"type": "_widget", "x": 1}}),
        st.builds(
            lambda text: {
                "type": "diff",
                "changes": [{"operation": "modify", "path": "/a", "fileType": "text"}],
                "patch": {"format": "git_patch", "text": text},
            },
            TEXT,
        ),
        st.just({"type": "diff", "changes": [{"operation": "move", "oldPath": "/a", "path": "/b"}]}),
        st.builds(  # a created file: v1 can hold it as a diff
            lambda text: {
                "type": "diff",
                "changes": [{"operation": "add", "path": "/n"}],
                "patch": {"format": "git_patch", "text": git_patch("/n", None, text)},
            },
            st.text(st.sampled_from("ab\n"), max_size=8),
        ),
        st.builds(lambda t: {"type": "terminal", "terminalId": t}, TERMINALS),
        st.just({"type": "session", "sessionId": "child"}),
        st.just({"type": "_acme_card", "x": [1]}),
    )
)
V1_ITEMS = _with_meta(
    st.one_of(
        st.builds(lambda b: {"type": "content", "content": b}, TEXT_BLOCK | IMAGE_BLOCK),
        st.builds(
            lambda path, old, new: {
                "type": "diff",
                "path": path,
                "newText": new,
                **({} if old is None else {"oldText": old}),
            },
            st.sampled_from(["/a", "/b/c.py"]),
            st.none() | st.text(st.sampled_from("ab\n\r"), max_size=12),
            st.text(st.sampled_from("abc\n"), max_size=12),
        ),
        st.builds(lambda t: {"type": "terminal", "terminalId": t}, TERMINALS),
        st.just({"type": "session", "sessionId": "child"}),
    )
)
META_PATCHES = st.dictionaries(st.sampled_from(["a", "b", "c"]), st.none() | SCALARS, max_size=3)


def _fields(version: int) -> Dict[str, st.SearchStrategy[Any]]:
    items = V2_ITEMS if version == 2 else V1_ITEMS
    kinds = ["read", "edit", "execute", "other"] + (["_deploy", "teleport"] if version == 2 else ["switch_mode"])
    statuses = ["pending", "in_progress", "completed", "failed"]
    statuses += ["paused", "cancelled", "_waiting"] if version == 2 else []
    extra = {"capabilities": st.none() | st.just({}) | st.just({"cancel": {}})} if version == 2 else {}
    return {
        **extra,
        "title": st.none() | TEXT,
        "kind": st.none() | st.sampled_from(kinds),
        "status": st.none() | st.sampled_from(statuses),
        "content": st.none() | st.lists(items, max_size=3),
        "locations": st.none() | LOCATIONS,
        "rawInput": JSON,
        "rawOutput": JSON,
        "_meta": st.none() | OBJECTS | META_PATCHES,
        "zeta": JSON,
    }


def _update(version: int) -> st.SearchStrategy[Dict[str, Any]]:
    fields = _fields(version)
    return st.builds(
        lambda tcid, picked: {"toolCallId": tcid, **picked},
        TOOL_CALLS,
        st.fixed_dictionaries({}, optional=fields),
    )


def _frame(obj: Dict[str, Any]) -> bytes:
    return acp_fast.dumps(obj) + b"\n"


def _notify(sid: str, update: Dict[str, Any]) -> bytes:
    return _frame({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})


B64 = st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())
ENTRY = st.fixed_dictionaries(
    {
        "content": TEXT,
        "priority": st.sampled_from(["high", "medium", "low", "_urgent"]),
        "status": st.sampled_from(["pending", "in_progress", "completed", "cancelled", "_later"]),
    }
)
V1_ENTRY = st.fixed_dictionaries(
    {
        "content": TEXT,
        "priority": st.sampled_from(["high", "medium", "low"]),
        "status": st.sampled_from(["pending", "in_progress", "completed"]),
    }
)
OPTION_KINDS = ["allow_once", "allow_always", "reject_once", "reject_always"]


def _options(version: int) -> st.SearchStrategy[List[Dict[str, Any]]]:
    kinds = st.sampled_from(OPTION_KINDS + (["_ask_later"] if version == 2 else []))
    option = st.builds(lambda i, k: {"optionId": f"o{i}", "name": f"Option {i}", "kind": k}, st.integers(1, 3), kinds)
    return st.lists(option, min_size=1 if version == 2 else 0, max_size=3, unique_by=lambda o: o["optionId"])


def _agent_ops(version: int) -> st.SearchStrategy[Tuple[Any, ...]]:
    """One step of a conversation, as data: ("notify", sid, update), ("permission", sid, params,
    answer), ("prompt", sid), ("ack",), ("end", stopReason)."""
    update = _update(version)
    updates = st.tuples(st.just("notify"), SESSIONS, update.map(lambda u: {"sessionUpdate": "tool_call_update", **u}))
    ops = [
        updates,
        updates,
        updates,
        st.tuples(st.just("prompt"), SESSIONS),
        st.tuples(st.just("end"), st.sampled_from(["end_turn", "cancelled", "max_tokens"])),
    ]
    answer = st.one_of(st.tuples(st.just("selected"), st.integers(0, 3)), st.just(("cancelled",)))
    if version == 2:
        subject = update.map(lambda u: {"type": "tool_call", "toolCall": u})
        permission = st.fixed_dictionaries({"title": TEXT, "subject": subject, "options": _options(2)})
        ops += [
            st.tuples(
                st.just("notify"),
                SESSIONS,
                st.builds(
                    lambda t, c: {"sessionUpdate": "tool_call_content_chunk", "toolCallId": t, "content": c},
                    TOOL_CALLS,
                    V2_ITEMS,
                ),
            ),
            st.tuples(
                st.just("notify"),
                SESSIONS,
                st.builds(
                    lambda tid, fields: {"sessionUpdate": "terminal_update", "terminalId": tid, **fields},
                    TERMINALS,
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "command": st.none() | TEXT,
                            "cwd": st.none() | st.just("/w"),
                            "output": st.none() | B64.map(lambda d: {"data": d}),
                            "exitStatus": st.none()
                            | st.sampled_from([{}, {"exitCode": 0}, {"exitCode": 2}, {"signal": "SIGTERM"}]),
                        },
                    ),
                ),
            ),
            st.tuples(
                st.just("notify"),
                SESSIONS,
                st.builds(
                    lambda t, d: {"sessionUpdate": "terminal_output_chunk", "terminalId": t, "data": d}, TERMINALS, B64
                ),
            ),
            st.tuples(
                st.just("notify"),
                SESSIONS,
                st.one_of(
                    st.builds(
                        lambda pid, entries: {
                            "sessionUpdate": "plan_update",
                            "plan": {"type": "items", "planId": pid, "entries": entries},
                        },
                        st.sampled_from(["main", "p2"]),
                        st.lists(ENTRY, max_size=3),
                    ),
                    st.just({"sessionUpdate": "plan_update", "plan": {"type": "_board", "planId": "p3", "cards": []}}),
                    st.builds(
                        lambda pid: {"sessionUpdate": "plan_removed", "planId": pid},
                        st.sampled_from(["main", "p2", "p3"]),
                    ),
                ),
            ),
            st.tuples(st.just("permission"), SESSIONS, permission, answer),
            st.tuples(st.just("ack")),
        ]
    else:
        call = update.map(lambda u: {k: v for k, v in u.items()})
        tool_call = st.builds(lambda u, title: {"sessionUpdate": "tool_call", **u, "title": title}, _update(1), TEXT)
        permission = st.fixed_dictionaries({"toolCall": call, "options": _options(1)})
        answer = answer | st.just(("_later",))
        ops += [
            st.tuples(st.just("notify"), SESSIONS, tool_call),
            st.tuples(
                st.just("notify"),
                SESSIONS,
                st.builds(
                    lambda entries: {"sessionUpdate": "plan", "entries": entries}, st.lists(V1_ENTRY, max_size=3)
                ),
            ),
            st.tuples(st.just("permission"), SESSIONS, permission, answer),
        ]
    return st.one_of(*ops)


def _run(conv: Conversation, ops: List[Tuple[Any, ...]]) -> Dict[Any, int]:
    """Plays ``ops``; returns, for each prompt the agent ended, how many answers the editor got."""
    next_id = iter(range(100, 10_000))
    pending: List[Tuple[int, str]] = []  # prompts sent, not ended: (id, session)
    unacked: List[int] = []
    ended: List[int] = []
    agent = conv.bridge.agent
    for op in ops:
        if op[0] == "notify":
            conv.send("agent", _notify(op[1], op[2]))
        elif op[0] == "prompt":
            rid = next(next_id)
            params = {"sessionId": op[1], "prompt": [{"type": "text", "text": "go"}]}
            conv.send("editor", _frame({"jsonrpc": "2.0", "id": rid, "method": "session/prompt", "params": params}))
            pending.append((rid, op[1]))
            unacked.append(rid)
        elif op[0] == "ack" and unacked:
            conv.send("agent", _frame({"jsonrpc": "2.0", "id": unacked.pop(0), "result": {}}))
        elif op[0] == "end" and pending:
            rid, sid = pending.pop(0)
            if agent == 2:
                conv.send(
                    "agent", _notify(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": op[1]})
                )
                if rid in unacked:
                    unacked.remove(rid)
                    conv.send("agent", _frame({"jsonrpc": "2.0", "id": rid, "result": {}}))
            else:
                conv.send("agent", _frame({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": op[1]}}))
            ended.append(rid)
        elif op[0] == "permission":
            rid = next(next_id)
            params = {"sessionId": op[1], **op[2]}
            out = conv.send(
                "agent", _frame({"jsonrpc": "2.0", "id": rid, "method": "session/request_permission", "params": params})
            )
            offered = acp_fast.loads(out[-1])["params"]["options"]
            answer = op[3]
            if answer[0] == "selected":
                result: Dict[str, Any] = {
                    "outcome": {"outcome": "selected", "optionId": offered[answer[1] % len(offered)]["optionId"]}
                }
            else:
                result = {"outcome": {"outcome": answer[0]}}
            conv.send("editor", _frame({"jsonrpc": "2.0", "id": rid, "result": result}))
    answers = {rid: conv.editor.answered.count(rid) for rid in ended}
    return answers


def _check(conv: Conversation) -> None:
    problems = state_differences(conv, sessions_of(conv))
    problems += schema_problems(conv.editor, conv.agent) + schema_problems(conv.agent, conv.editor)
    assert not problems, "\n".join(problems[:10])


@settings(max_examples=60)
@given(ops=st.lists(_agent_ops(2), min_size=3, max_size=40), subagents=st.booleans())
def test_v2_agent_v1_editor_random_streams(backend: Any, ops: List[Tuple[Any, ...]], subagents: bool) -> None:
    conv = Conversation(Bridge(editor=1, agent=2, backend=backend), backend)
    caps = {"subagents": {}} if subagents else {}  # v1 shows session content only then
    init = {"protocolVersion": 1, "clientCapabilities": caps, "clientInfo": {"name": "e", "version": "1"}}
    conv.send("editor", _frame({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
    answers = _run(conv, ops)
    assert all(n == 1 for n in answers.values()), answers  # one v1 response per ended turn
    _check(conv)


@settings(max_examples=60)
@given(ops=st.lists(_agent_ops(1), min_size=3, max_size=40))
def test_v1_agent_v2_editor_random_streams(backend: Any, ops: List[Tuple[Any, ...]]) -> None:
    conv = Conversation(Bridge(editor=2, agent=1, backend=backend), backend)
    answers = _run(conv, ops)
    assert all(n == 1 for n in answers.values()), answers  # one acknowledgement per turn
    idle = [f for f in conv.editor.received if b'"state":"idle"' in f]
    assert len(idle) == len(answers)
    _check(conv)


@settings(max_examples=10)
@given(profile=st.sampled_from(["v2", "mixed", "tiny"]), seed=st.integers(0, 2**32), n=st.integers(50, 300))
def test_traffic_both_directions(backend: Any, profile: str, seed: int, n: int) -> None:
    agent = traffic.PROTOCOL_VERSIONS[profile]
    for editor in (1, 2):
        conv = Conversation(Bridge(editor=editor, agent=agent, backend=backend), backend)
        for sender, frame in as_editor(senders(traffic.frames(profile, n, seed), agent), editor):
            conv.send(sender, frame)
        _check(conv)


@pytest.mark.parametrize("profile", ["v2", "mixed", "large"])
def test_traffic_long_conversations(backend: Any, profile: str) -> None:
    """A few thousand frames of each profile through a bridge to the other version."""
    agent = traffic.PROTOCOL_VERSIONS[profile]
    conv = Conversation(Bridge(editor=3 - agent, agent=agent, backend=backend), backend)
    frames = traffic.frames(profile, 100 if profile == "large" else 1000, seed=7)
    for sender, frame in as_editor(senders(frames, agent), 3 - agent):
        conv.send(sender, frame)
    _check(conv)
    if agent == 2:  # every turn the agent ended reached the v1 editor as the prompt's response
        turns = sum(1 for f in frames if b'"state":"idle"' in f)
        responses = [f for f in conv.editor.received if b'"stopReason"' in f]
        assert len(responses) == turns > 0


def test_reject_option_and_unknown_outcome_normalised(backend: Any) -> None:
    """The checks' normalisation of the two permission choices is exercised (not vacuous)."""
    conv = Conversation(Bridge(editor=2, agent=1, backend=backend), backend)
    request = {"sessionId": "s1", "toolCall": {"toolCallId": "c1", "title": "Run"}, "options": []}
    out = conv.send(
        "agent", _frame({"jsonrpc": "2.0", "id": 5, "method": "session/request_permission", "params": request})
    )
    assert acp_fast.loads(out[0])["params"]["options"] == [REJECT_OPTION]
    reply = {"outcome": {"outcome": "selected", "optionId": REJECT_OPTION["optionId"]}}
    back = conv.send("editor", _frame({"jsonrpc": "2.0", "id": 5, "result": reply}))
    assert acp_fast.loads(back[0])["result"] == {"outcome": {"outcome": "cancelled"}}
    assert conv.agent.store.permission(5)["outcome"] == "cancelled"
    assert conv.editor.store.permission(5)["outcome"] == "selected"
