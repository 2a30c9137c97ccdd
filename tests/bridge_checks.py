"""Helpers of the bridge tests (tests/test_bridge*.py): run a conversation through a
:class:`acp_fast.bridge.Bridge`, check what it emits against the official schema of the side that
receives it, and state each side's view of the session the way docs/BRIDGE.md says they differ.

``Conversation`` plays both peers: each frame is sent by the agent or by the editor, the bridge
converts it, and two ``ToolCallStore``s are fed as the two peers would be: the agent's with what it
sent and received under the agent's version, the editor's likewise under the editor's version.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

import pytest

import acp_fast
from acp_fast import traffic
from acp_fast.bridge import REJECT_OPTION, Bridge, BridgeError, diff_text, terminal_text, v1_diff_to_v2, v2_diff_to_v1
from acp_fast.cli import _shapes
from acp_fast.cli._shapes import load_schema

V1_KINDS = {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}
V1_STATUSES = {"pending", "in_progress", "completed", "failed"}
V1_BLOCKS = {"text", "image", "audio", "resource_link", "resource"}
V1_OPTION_KINDS = {"allow_once", "allow_always", "reject_once", "reject_always"}


class ReferenceChecker:
    """The reference judge of what the bridge emits: the `jsonschema` package on one definition of
    the official schema (independent of acp-fast's own validator)."""

    def __init__(self, version: int) -> None:
        import jsonschema

        self._defs = load_schema(version)["$defs"]
        self._validators: Dict[str, Any] = {}
        self._cls = jsonschema.Draft202012Validator

    def check(self, def_name: str, value: Any, path: Tuple[Any, ...]) -> List[str]:
        """What is wrong with ``value`` (found at ``path``) as a ``def_name``: [] when valid."""
        if def_name not in self._validators:
            self._validators[def_name] = self._cls({"$ref": f"#/$defs/{def_name}", "$defs": self._defs})
        return [
            f"{'.'.join(map(str, path + tuple(e.absolute_path)))}: {e.message}"
            for e in self._validators[def_name].iter_errors(value)
        ]


_CHECKERS: Dict[int, ReferenceChecker] = {}


def checker(version: int) -> ReferenceChecker:
    if version not in _CHECKERS:
        _CHECKERS[version] = ReferenceChecker(version)
    return _CHECKERS[version]


def _id(value: Any) -> Tuple[bool, Any]:
    return (isinstance(value, str), value)


class Side:
    """One peer as the tests see it: its store, the requests it sent (id -> method), what it received."""

    def __init__(self, name: str, version: int, backend: Any) -> None:
        self.name = name
        self.version = version
        self.store = backend.ToolCallStore(version)
        self.asked: Dict[Tuple[bool, Any], str] = {}
        self.received: List[bytes] = []
        self.answered: List[Any] = []  # ids of the responses it received

    def sent(self, frame: bytes, backend: Any) -> None:
        msg = backend.decode(frame)
        if msg.kind == "request":
            self.asked[_id(msg.id)] = msg.method
        self.store.apply(msg, source="client" if self.name == "editor" else "agent")


class Conversation:
    """Frames through a bridge, both ways, with the two peers' stores kept up to date."""

    def __init__(self, bridge: Bridge, backend: Any) -> None:
        self.bridge = bridge
        self.backend = backend
        self.editor = Side("editor", bridge.editor, backend)
        self.agent = Side("agent", bridge.agent, backend)

    def send(self, sender: str, frame: bytes) -> List[bytes]:
        source, target = (self.agent, self.editor) if sender == "agent" else (self.editor, self.agent)
        source.sent(frame, self.backend)
        out = self.bridge.from_agent(frame) if sender == "agent" else self.bridge.from_editor(frame)
        for item in out:
            msg = self.backend.decode(item)
            target.received.append(item)
            if msg.kind in ("response", "error"):
                target.answered.append(msg.id)
            target.store.apply(msg, source="agent" if sender == "agent" else "client")
        return out


# ---------------------------------------------------------------------------------------------
# Frames of the unit tests


def frame(obj: Dict[str, Any]) -> bytes:
    return acp_fast.dumps(obj) + b"\n"


def upd(sid: str = "s1", **update: Any) -> bytes:
    return frame({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})


def tcu(tcid: str = "c1", **fields: Any) -> bytes:
    return upd(sessionUpdate="tool_call_update", toolCallId=tcid, **fields)


def chunk(tcid: str, item: Dict[str, Any]) -> bytes:
    return upd(sessionUpdate="tool_call_content_chunk", toolCallId=tcid, content=item)


def text(value: str) -> Dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": value}}


def updates(frames: List[bytes]) -> List[Dict[str, Any]]:
    return [acp_fast.loads(f)["params"]["update"] for f in frames]


def valid(frames: List[bytes], version: int) -> List[bytes]:
    """``frames`` (session updates or requests), checked against the schema of ``version``."""
    from acp_fast.cli import _shapes

    for f in frames:
        msg = acp_fast.loads(f)
        info = _shapes.protocol(version).get(msg["method"])
        assert info is not None and info.params_def
        assert checker(version).check(info.params_def, msg["params"], ("params",)) == [], f
    return frames


def refused(bridge: Bridge, side: str, data: bytes, pattern: str) -> BridgeError:
    before = bridge.store.to_json()
    with pytest.raises(BridgeError) as info:
        (bridge.from_agent if side == "agent" else bridge.from_editor)(data)
    assert re.search(pattern, str(info.value)), str(info.value)
    assert bridge.store.to_json() == before  # the refused frame changed nothing
    return info.value


# ---------------------------------------------------------------------------------------------
# Traffic: who sends each frame of a profile


def senders(frames: List[bytes], version: int) -> List[Tuple[str, bytes]]:
    """Each frame of a traffic profile with its sender (``"agent"`` or ``"editor"``): calls by the
    method's side in the official schema, responses as the other side of their request."""
    proto = _shapes.protocol(version)
    asked: Dict[Tuple[bool, Any], str] = {}
    out = []
    for frame in frames:
        msg = acp_fast.decode(frame)
        if msg.kind in ("request", "notification"):
            info = proto.get(msg.method)
            assert info is not None, msg.method
            sender = "editor" if info.sender == "client" else "agent"
            if msg.kind == "request":
                asked[_id(msg.id)] = sender
        else:
            sender = "agent" if asked.pop(_id(msg.id)) == "editor" else "editor"
        out.append((sender, frame))
    return out


def as_editor(frames: List[Tuple[str, bytes]], editor: int) -> List[Tuple[str, bytes]]:
    """The frames with the editor's ``initialize`` request in the editor's own version (the
    traffic profiles speak one version on both sides)."""
    first = acp_fast.loads(traffic.frames("mixed" if editor == 1 else "v2", 1)[0])
    out = []
    for sender, frame in frames:
        msg = acp_fast.decode(frame)
        if msg.method == "initialize":
            frame = acp_fast.dumps({**first, "id": msg.id}) + b"\n"
        out.append((sender, frame))
    return out


# ---------------------------------------------------------------------------------------------
# Schema of what the bridge emits


def schema_problems(side: Side, other: Side) -> List[str]:
    """Everything ``side`` received from the bridge, checked against the official schema of its
    version: calls by their method's params, responses by the result of the request ``side`` sent."""
    proto = _shapes.protocol(side.version)
    check = checker(side.version)
    problems = []
    for frame in side.received:
        msg = acp_fast.decode(frame)
        doc = msg.to_dict()
        if msg.kind in ("request", "notification"):
            if msg.method.startswith("_"):
                continue
            info = proto.get(msg.method)
            if info is None:
                problems.append(f"unknown method {msg.method} in {frame[:200]!r}")
                continue
            if info.sender is not None and (info.sender == "client") != (other.name == "editor"):
                problems.append(f"{msg.method} sent by the wrong side")
            if info.params_def:
                issues = check.check(info.params_def, doc.get("params"), ("params",))
                problems += [f"{i} in {frame[:300]!r}" for i in issues]
        elif msg.kind == "response":
            method = side.asked.get(_id(msg.id))
            if method is None:
                problems.append(f"a response to no request: {frame[:200]!r}")
                continue
            info = proto.get(method)
            if info is not None and info.result_def:
                issues = check.check(info.result_def, doc.get("result"), ("result",))
                problems += [f"{i} in {frame[:300]!r}" for i in issues]
        else:
            problems += list(check.check("Error", doc.get("error"), ("error",)))
    seen = set()
    for rid in side.answered:
        if _id(rid) in seen:
            problems.append(f"request {rid!r} answered twice")
        seen.add(_id(rid))
    return problems


# ---------------------------------------------------------------------------------------------
# Each side's state, as docs/BRIDGE.md says they differ


def _text_item(text: str, item: Dict[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {"type": "content", "content": {"type": "text", "text": text}}
    if item.get("_meta") is not None:
        out["_meta"] = item["_meta"]
    return out


def _no_meta(record: Dict[str, Any]) -> Dict[str, Any]:
    """``record`` with an empty ``_meta`` left out: no keys means no metadata (the draft's
    ``apply_meta_update``), and v1, which cannot unset ``_meta``, is told ``{}``."""
    if record.get("_meta") == {}:
        return {k: v for k, v in record.items() if k != "_meta"}
    return record


def v1_tool_call(record: Dict[str, Any], store: Any, sid: str, subagents: bool = False) -> Dict[str, Any]:
    """A v2 agent's tool call as its v1 editor holds it (docs/BRIDGE.md, "v2 agent, v1 editor")."""
    out = {k: v for k, v in record.items() if k != "capabilities"}
    if not isinstance(out.get("title"), str):
        out["title"] = ""
    if out["kind"] not in V1_KINDS:
        out["kind"] = "other"
    if out["status"] not in V1_STATUSES:
        out["status"] = "failed" if out["status"] == "cancelled" else "in_progress"
    content = []
    for item in out["content"]:
        kind = item.get("type") if isinstance(item, dict) else None
        block = item.get("content") if kind == "content" else None
        if (isinstance(block, dict) and block.get("type") in V1_BLOCKS) or (kind == "session" and subagents):
            content.append(item)
        elif kind == "diff":
            content.append(v2_diff_to_v1(item) or _text_item(diff_text(item), item))
        elif kind == "terminal":
            content.append(_text_item(terminal_text(store.terminal(sid, item["terminalId"])), item))
    out["content"] = content
    return out


def v2_tool_call(record: Dict[str, Any]) -> Dict[str, Any]:
    """A v1 agent's tool call as its v2 editor holds it (docs/BRIDGE.md, "v1 agent, v2 editor")."""
    content = []
    for item in record["content"]:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "diff":
            item = v1_diff_to_v2(item)
        elif kind == "terminal":
            item = None
        if item is not None:
            content.append(item)
    out = {**record, "content": content}
    if isinstance(record.get("_meta"), dict):  # v2 cannot hold a _meta key set to null
        out["_meta"] = {k: v for k, v in record["_meta"].items() if v is not None}
    if "locations" in record:  # v2 has no line 0: such a location has no line
        out["locations"] = [
            {k: v for k, v in loc.items() if k != "line"}
            if isinstance(loc, dict) and type(loc.get("line")) is int and loc["line"] == 0
            else loc
            for loc in record["locations"]
        ]
    return out


def v1_plan(plans: Dict[str, Any]) -> List[Any]:
    entries: List[Any] = []
    for plan in plans.values():
        if plan.get("type") != "items":
            continue
        for entry in plan["entries"]:
            entry = dict(entry)
            if entry.get("priority") not in ("high", "medium", "low"):
                entry["priority"] = "medium"
            if entry.get("status") not in ("pending", "in_progress", "completed"):
                entry["status"] = "pending"
            entries.append(entry)
    return entries


def _permission(record: Dict[str, Any], editor: int) -> Dict[str, Any]:
    out = {k: record.get(k) for k in ("id", "sessionId", "toolCallId", "outcome", "approved")}
    if editor == 1:
        out["options"] = [
            {**o, "kind": "reject_once"} if isinstance(o, dict) and o.get("kind") not in V1_OPTION_KINDS else o
            for o in record["options"]
        ]
    else:
        out["options"] = record["options"]
    return out


def state_differences(conv: Conversation, sessions: List[str]) -> List[str]:
    """What differs between the editor's state and the agent's, once the documented differences
    are taken into account (empty when the bridge kept them equal)."""
    editor, agent = conv.editor.store, conv.agent.store
    problems = []
    for sid in sessions:
        mine = {tcid: _no_meta(r) for tcid, r in editor.tool_calls(sid).items()}
        theirs = agent.tool_calls(sid)
        if conv.bridge.editor == 1 and conv.bridge.agent == 2:
            subagents = conv.bridge._subagents
            want = {tcid: v1_tool_call(r, agent, sid, subagents) for tcid, r in theirs.items()}
        elif conv.bridge.editor == 2 and conv.bridge.agent == 1:
            want = {tcid: v2_tool_call(r) for tcid, r in theirs.items()}
        else:
            want = theirs
        want = {tcid: _no_meta(r) for tcid, r in want.items()}
        if mine != want:
            for tcid in set(mine) | set(want):
                if mine.get(tcid) != want.get(tcid):
                    problems.append(f"{sid}/{tcid}: editor {mine.get(tcid)!r} != expected {want.get(tcid)!r}")
        if conv.bridge.editor == 1 and conv.bridge.agent == 2:
            plan = editor.plans(sid).get("main", {"entries": []})
            if plan["entries"] != v1_plan(agent.plans(sid)):
                problems.append(f"{sid}: plan {plan!r} != {agent.plans(sid)!r}")
        else:
            if editor.plans(sid) != agent.plans(sid):
                problems.append(f"{sid}: plans {editor.plans(sid)!r} != {agent.plans(sid)!r}")
            if editor.terminals(sid) != agent.terminals(sid):
                problems.append(f"{sid}: terminals differ")
        mine_p = []
        for record in editor.permissions(sid):
            p = _permission(record, conv.bridge.editor)
            if conv.bridge.agent == 1 and conv.bridge.editor == 2:
                if p["options"] == [REJECT_OPTION]:  # added for v2, which needs an option
                    p["options"] = []
                    if record.get("optionId") == REJECT_OPTION["optionId"]:
                        p["outcome"] = "cancelled"
                if p["outcome"] == "unknown":
                    p["outcome"] = "cancelled"  # fail closed for a v1 agent
            mine_p.append(p)
        theirs_p = [_permission(p, conv.bridge.editor) for p in agent.permissions(sid)]
        if conv.bridge.editor == 1:
            theirs_p = [{**p, "options": _permission(p, 1)["options"]} for p in theirs_p]
        if mine_p != theirs_p:
            problems.append(f"{sid}: permissions {mine_p!r} != {theirs_p!r}")
    return problems


def sessions_of(conv: Conversation) -> List[str]:
    state: Dict[str, Any] = conv.agent.store.state()["sessions"]
    return list(state)


def only(frames: List[bytes]) -> Dict[str, Any]:
    """The one frame of ``frames``, parsed."""
    assert len(frames) == 1, frames
    out: Dict[str, Any] = acp_fast.loads(frames[0])
    return out


def update_of(frame: bytes) -> Optional[Dict[str, Any]]:
    params = acp_fast.loads(frame).get("params")
    return params.get("update") if isinstance(params, dict) else None
