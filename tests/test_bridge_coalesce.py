"""Coalescing through the bridge, both directions, on random conversations (both backends):

- v2 agent, v1 editor: ``Bridge(coalesce=MS)`` holds the tool calls the agent changes and makes
  their v1 frames only when it releases them;
- v1 agent, v2 editor: the v2 updates the bridge makes go through a ``Coalescer(protocol=2)``, as
  ``acp-fast proxy --bridge 2:1 --coalesce`` does.

Either way the editor ends with the state it has when nothing is held (and, as without holding,
the state docs/BRIDGE.md says the agent's state is for it), gets at most as many frames, and every
prompt turn still ends once. The conversations are test_bridge_invariants.py's.
"""

from __future__ import annotations

from typing import Any, List, Tuple

from hypothesis import example, given, settings
from hypothesis import strategies as st

from acp_fast.bridge import Bridge
from bridge_checks import Conversation
from test_bridge_invariants import _agent_ops, _check, _frame, _run


class Clock:
    """A fake monotonic clock: each reading is 20 ms after the last."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.02
        return self.now


class Held(Conversation):
    """A conversation whose agent-to-editor frames go through a coalescing stage: the bridge's own
    (v1 editor) or a ``Coalescer`` after it (v2 editor). Before each agent frame, what is due is
    released to the editor."""

    def __init__(self, bridge: Bridge, backend: Any, clock: Clock) -> None:
        super().__init__(bridge, backend)
        self.clock = clock
        self.coalescer = backend.Coalescer(50, protocol=2) if bridge.editor == 2 else None

    def deliver(self, frames: List[bytes]) -> None:
        for item in frames:
            msg = self.backend.decode(item)
            self.editor.received.append(item)
            if msg.kind in ("response", "error"):
                self.editor.answered.append(msg.id)
            self.editor.store.apply(msg, source="agent")

    def send(self, sender: str, frame: bytes) -> List[bytes]:
        if sender == "editor":
            return super().send(sender, frame)
        self.deliver(self.due())
        self.agent.sent(frame, self.backend)
        out = self.bridge.from_agent(frame)
        if self.coalescer is not None:
            data = self.coalescer.push(b"".join(out), self.clock.now)
            out = [line + b"\n" for line in data.split(b"\n")[:-1]]
        self.deliver(out)
        return out

    def due(self) -> List[bytes]:
        now = self.clock()
        if self.coalescer is None:
            return self.bridge.release_due(now)
        return [line + b"\n" for line in self.coalescer.due(now).split(b"\n")[:-1]]

    def finish(self) -> None:
        if self.coalescer is None:
            self.deliver(self.bridge.release())
        else:
            self.deliver([line + b"\n" for line in self.coalescer.flush().split(b"\n")[:-1]])


def _tool_calls(conv: Conversation) -> Any:
    """The editor's tool calls by session, each session's in the order the editor created them.

    A v1 editor's ``"_meta": {}`` and no ``_meta`` are the same state: v1 cannot unset ``_meta``,
    so the bridge sends ``{}`` (no keys) when the agent unsets one the editor has seen; a held
    update may release only after the unset, when the editor never saw the ``_meta`` at all."""

    def same(call: Any) -> Any:
        return {k: v for k, v in call.items() if not (k == "_meta" and v == {})}

    return {sid: [(tcid, same(c)) for tcid, c in calls.items()] for sid, calls in conv.editor.store.snapshot().items()}


def _play(backend: Any, editor: int, ops: List[Tuple[Any, ...]], held: bool) -> Tuple[Conversation, Any]:
    agent = 3 - editor
    clock = Clock()
    bridge = Bridge(editor=editor, agent=agent, backend=backend, coalesce=50 if held else None, clock=clock)
    conv: Conversation = Held(bridge, backend, clock) if held else Conversation(bridge, backend)
    if editor == 1:
        init = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "e", "version": "1"}}
        conv.send("editor", _frame({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
    answers = _run(conv, ops)
    if isinstance(conv, Held):
        conv.finish()
    return conv, answers


_UNSET_META = [
    ("ack",),
    ("notify", "s2", {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": None, "_meta": {}}),
    ("notify", "s2", {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": None, "_meta": None}),
]


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(_agent_ops(2), min_size=3, max_size=40))
@example(ops=_UNSET_META)  # found by CI: the editor saw no _meta held, {} plain
def test_v2_agent_v1_editor_held_by_the_bridge(backend: Any, ops: List[Tuple[Any, ...]]) -> None:
    plain, plain_answers = _play(backend, 1, ops, held=False)
    held, answers = _play(backend, 1, ops, held=True)
    assert answers == plain_answers  # every ended turn answered once, as without holding
    assert _tool_calls(held) == _tool_calls(plain)
    assert len(held.editor.received) <= len(plain.editor.received)
    _check(held)


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(_agent_ops(1), min_size=3, max_size=40))
def test_v1_agent_v2_editor_coalesced_after_the_bridge(backend: Any, ops: List[Tuple[Any, ...]]) -> None:
    plain, plain_answers = _play(backend, 2, ops, held=False)
    held, answers = _play(backend, 2, ops, held=True)
    assert answers == plain_answers
    assert _tool_calls(held) == _tool_calls(plain)
    assert len(held.editor.received) <= len(plain.editor.received)
    _check(held)


def test_the_bridge_holds_nothing_for_a_v1_agent_or_without_coalesce(backend: Any) -> None:
    # holding is the v2-agent / v1-editor case only (the other way, the proxy's coalescer does it)
    assert Bridge(editor=2, agent=1, backend=backend, coalesce=50).window is None
    assert Bridge(editor=1, agent=2, backend=backend).window is None
    assert Bridge(editor=1, agent=2, backend=backend, coalesce=50).window == 0.05


def test_chunks_of_one_turn_reach_a_v1_editor_in_fewer_frames(backend: Any) -> None:
    chunk = {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t1"}
    items = [{"type": "content", "content": {"type": "text", "text": f"line {i}"}} for i in range(5)]
    ops: List[Tuple[Any, ...]] = [("notify", "s1", {"sessionUpdate": "tool_call_update", "toolCallId": "t1"})]
    ops += [("notify", "s1", {**chunk, "content": item}) for item in items]
    ops += [("notify", "s1", {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})]
    plain, _ = _play(backend, 1, ops, held=False)
    held, _ = _play(backend, 1, ops, held=True)
    assert _tool_calls(held) == _tool_calls(plain)
    tool_frames = [f for f in held.editor.received if b'"toolCallId"' in f]
    assert len(tool_frames) < len([f for f in plain.editor.received if b'"toolCallId"' in f])
    assert b'"completed"' in tool_frames[-1]
