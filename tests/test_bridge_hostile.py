"""A frame the bridge cannot convert costs nothing else (docs/BRIDGE.md "Frames the bridge
refuses"), on both backends:

* ``Bridge.from_agent`` / ``from_editor`` raise only the codec's ``DecodeError`` (a frame that is
  not JSON-RPC, nests too deeply, or that the conversion fails on) or, with ``strict=True``,
  :class:`BridgeError`; when they raise, the bridge's state is as if the frame had not arrived
  (held tool calls released for it go out with the next frames, as if they had come due);
* the triggers a hostile tester found (an option ``kind`` that is an array or an object, a
  permission with both ``toolCall`` and ``subject.toolCall``, a frame nested to the limit whose
  converted form is deeper, a ``rawInput`` nested past Python's recursion limit followed by an
  innocent update) are converted or refused, and the frames around them go on;
* ``acp-fast proxy --bridge`` diverts such a frame from the agent, answers a request with an
  error, relays every other frame and exits cleanly; a middleware raising ``SystemExit`` or
  ``KeyboardInterrupt`` drops its frame only.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Tuple

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import acp_fast
from acp_fast import traffic
from acp_fast.bridge import BRIDGE_MAX_DEPTH, Bridge, BridgeError
from bridge_checks import as_editor, senders
from hostile import mutate

CLI = [sys.executable, "-m", "acp_fast.cli"]
HOSTILE: List[Any] = [
    [],
    {},
    [1, [2]],
    {"a": {"b": []}},
    None,
    0,
    -1,
    2**70,
    1.5,
    True,
    "",
    ["kind"],
    {"type": "tool_call"},
]
_SKIP = {"store", "_acp", "_dumps", "_clock", "_lines", "_where"}


def _deep(levels: int, leaf: Any = "x") -> Any:
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def _frame(obj: Dict[str, Any]) -> bytes:
    return acp_fast.dumps(obj) + b"\n"


def _update(update: Dict[str, Any], sid: str = "s1") -> bytes:
    return _frame({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})


def _state(bridge: Bridge) -> Tuple[bytes, List[str]]:
    """Everything the bridge keeps: its store's checkpoint and its own tables."""
    mine = [f"{k}={v!r}" for k, v in vars(bridge).items() if k not in _SKIP]
    return bytes(bridge.store.to_json()), mine


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), strict=st.booleans(), held=st.booleans())
def test_a_refused_frame_leaves_the_state_as_it_was(backend: Any, seed: int, strict: bool, held: bool) -> None:
    rng = random.Random(seed)
    profile = rng.choice(["v2", "mixed", "tiny"])
    agent = traffic.PROTOCOL_VERSIONS[profile]
    bridge = Bridge(editor=3 - agent, agent=agent, backend=backend, strict=strict, coalesce=50 if held else None)
    refused = 0
    for sender, frame in as_editor(senders(traffic.frames(profile, 60, seed), agent), 3 - agent):
        if rng.random() < 0.3:
            frame = mutate(frame, rng, HOSTILE)
        before = _state(bridge)
        try:
            out = (bridge.from_agent if sender == "agent" else bridge.from_editor)(frame)
        except (acp_fast.DecodeError, BridgeError):
            refused += 1
            if bridge._early:  # released for the frame: the next frames carry them
                early = list(bridge._early)
                assert bridge.deadline == 0.0
                assert bridge.release_due()[: len(early)] == early
                continue
            assert _state(bridge) == before
        else:
            assert all(isinstance(f, bytes) and f.endswith(b"\n") for f in out)


def test_the_hostile_testers_triggers(backend: Any) -> None:
    perm = {"jsonrpc": "2.0", "method": "session/request_permission"}
    # an option kind that is an array or an object: asked as reject_once, as an unknown kind is
    bridge = Bridge(editor=1, agent=2, backend=backend)
    for i, kind in enumerate((["allow_once"], {"k": 1})):
        option = {"optionId": "o", "name": "n", "kind": kind}
        params = {"sessionId": "s1", "options": [option], "subject": {"type": "command", "command": "ls"}}
        (out,) = bridge.from_agent(_frame({**perm, "id": i, "params": params}))
        assert orjson.loads(out)["params"]["options"][0]["kind"] == "reject_once"
    # a permission with both toolCall and subject.toolCall
    call = {"toolCallId": "c9", "title": "t"}
    params = {"sessionId": "s1", "options": [], "toolCall": call, "subject": {"type": "tool_call", "toolCall": call}}
    out = bridge.from_agent(_frame({**perm, "id": 5, "params": params}))
    assert orjson.loads(out[-1])["params"]["toolCall"]["toolCallId"] == "c9"
    # rawInput nested past Python's recursion limit, then an innocent update of the same tool call
    first = {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "t", "rawInput": _deep(1005)}
    assert bridge.from_agent(_update(first))
    (done,) = bridge.from_agent(
        _update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"})
    )
    assert orjson.loads(done)["params"]["update"]["status"] == "completed"
    # a frame at the codec's limit whose converted form would be deeper: refused before any change
    bridge = Bridge(editor=1, agent=2, backend=backend)
    bridge.from_agent(_update({"sessionUpdate": "tool_call_update", "toolCallId": "c2", "title": "before"}))
    before = _state(bridge)
    deep = {"sessionUpdate": "tool_call_update", "toolCallId": "c2", "title": "t", "rawInput": _deep(1018)}
    with pytest.raises(acp_fast.DecodeError) as e:
        bridge.from_agent(_update(deep))
    assert e.value.kind == "depth_limit" and f"deeper than {BRIDGE_MAX_DEPTH} levels" in str(e.value)
    assert _state(bridge) == before
    # the same the other way (a v1 permission's toolCall is v2's subject.toolCall, a level deeper)
    back = Bridge(editor=2, agent=1, backend=backend)
    params = {"sessionId": "s1", "options": [], "toolCall": {"toolCallId": "c", "rawInput": _deep(1018)}}
    with pytest.raises(acp_fast.DecodeError):
        back.from_agent(_frame({**perm, "id": 1, "params": params}))


def test_the_bridge_depth_margin_is_the_codecs_limit_less_eight() -> None:
    from acp_fast._fallback.scanner import MAX_DEPTH

    assert BRIDGE_MAX_DEPTH == MAX_DEPTH - 8
    acp_fast.dumps(_deep(MAX_DEPTH))  # the codec's limit, on the backend in use
    with pytest.raises(acp_fast.EncodeError):
        acp_fast.dumps(_deep(MAX_DEPTH + 1))


def test_a_refused_frame_does_not_cost_the_held_tool_calls(backend: Any) -> None:
    clock = iter(range(1000)).__next__
    bridge = Bridge(editor=1, agent=2, backend=backend, coalesce=50, clock=lambda: float(clock()))
    assert bridge.from_agent(_update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "t"})) == []
    bad = _update({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": [], "entries": []}})
    with pytest.raises(acp_fast.DecodeError):
        bridge.from_agent(bad)
    assert bridge.deadline == 0.0
    (released,) = bridge.release_due()
    assert orjson.loads(released)["params"]["update"]["toolCallId"] == "c1"
    assert bridge.deadline is None


AGENT = textwrap.dedent(
    """
    import sys
    frames = [l for l in open(sys.argv[1], "rb")]
    for f in frames:
        sys.stdout.buffer.write(f)
        sys.stdout.buffer.flush()
    for _ in range(200):  # an agent that keeps writing after the bad frames
        sys.stdout.buffer.write(frames[0])
    sys.stdout.buffer.flush()
    """
)


def test_proxy_bridge_goes_on_after_frames_it_cannot_convert(backend: Any, tmp_path: Path) -> None:
    ok = [
        _update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"m{i}"}})
        for i in range(7)
    ]
    deep = {"sessionUpdate": "tool_call_update", "toolCallId": "c2", "title": "t", "rawInput": _deep(1018)}
    option = {"optionId": "o", "name": "n", "kind": ["x"]}
    bad = [
        _update(deep),
        _frame(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "session/request_permission",
                "params": {
                    "sessionId": "s1",
                    "options": [option],
                    "subject": {"type": "tool_call", "toolCall": {"toolCallId": 5}},
                },
            }
        ),
    ]
    frames = [ok[0], bad[0], *ok[1:4], bad[1], *ok[4:]]
    (tmp_path / "frames").write_bytes(b"".join(frames))
    (tmp_path / "agent.py").write_text(AGENT)
    env = dict(os.environ, ACP_FAST_BACKEND="rust" if backend.__name__.endswith("_native") else "python")
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    cmd = [*CLI, "proxy", "--bridge", "1:2", "--record", str(tmp_path / "rec.ndjson"), "--"]
    run = subprocess.run(
        [*cmd, sys.executable, str(tmp_path / "agent.py"), str(tmp_path / "frames")],
        input=b"",
        capture_output=True,
        timeout=120,
        env=env,
    )
    assert run.returncode == 0, run.stderr.decode()
    texts = [orjson.loads(f)["params"]["update"]["content"]["text"] for f in run.stdout.splitlines()]
    assert texts[:7] == [f"m{i}" for i in range(7)] and len(texts) == 207  # every good frame, in order
    err = run.stderr.decode()
    assert "Traceback" not in err
    assert [line + b"\n" for line in run.stderr.splitlines() if line.startswith(b"{")] == bad  # diverted
    records = [orjson.loads(r) for r in (tmp_path / "rec.ndjson").read_bytes().splitlines()[1:]]
    diverted = [r for r in records if r.get("action") == "diverted"]
    assert len(diverted) == 2 and diverted[1]["frame"]["id"] == 7


EXITING = """
def exiting(message, sender, ctx):
    if message.method == "x/exit":
        sys.exit(3)
    if message.method == "x/interrupt":
        raise KeyboardInterrupt
    return message
MIDDLEWARE = [exiting]
"""


@pytest.mark.parametrize("backend_id", ["rust", "python"])
def test_a_middleware_raising_systemexit_or_keyboardinterrupt_drops_its_frame_only(
    backend_id: str, tmp_path: Path
) -> None:
    from test_proxy_middleware import _frame as method_frame
    from test_proxy_middleware import run, runner, script

    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    methods = ["a", "x/exit", "b", "x/interrupt", "c"]
    agent = script(
        tmp_path, "agent", f'for m in {methods!r}:\n    out(b\'{{"jsonrpc":"2.0","method":"%s"}}\\n\' % m.encode())\n'
    )
    done = run(env, runner(tmp_path, EXITING), agent, b"", timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [method_frame(m).rstrip() for m in ("a", "b", "c")]
    assert b"middleware exiting raised SystemExit: 3; the frame is dropped" in done.stderr
    assert b"middleware exiting raised KeyboardInterrupt" in done.stderr
    assert b"Traceback" not in done.stderr


def test_the_bridge_is_bounded_across_sessions_requests_and_tool_calls(backend: Any) -> None:
    """Many sessions, prompts never answered, message ids and finished tool calls: every table the
    bridge keeps stays within its bound (docs/BRIDGE.md "Bounds"), and ``dropped`` counts what went."""
    bridge = Bridge(editor=1, agent=2, backend=backend, max_sessions=50, max_pending=40)
    init = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "e", "version": "1"}}
    bridge.from_editor(_frame({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init}))
    for i in range(400):
        sid = f"s{i}"
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
        bridge.from_editor(_frame({"jsonrpc": "2.0", "id": i, "method": "session/prompt", "params": prompt}))
        message = {"sessionUpdate": "agent_message", "messageId": f"m{i}", "content": [{"type": "text", "text": "x"}]}
        bridge.from_agent(_update(message, sid))
        call = {"sessionUpdate": "tool_call_update", "toolCallId": f"c{i}", "title": "t", "status": "completed"}
        bridge.from_agent(_update(call, "s0"))
        for j in range(3):  # message ids of one long session
            message = {
                "sessionUpdate": "agent_message",
                "messageId": f"m{i}.{j}",
                "content": [{"type": "text", "text": "y"}],
            }
            bridge.from_agent(_update(message, "s0"))
    assert len(bridge._asked_agent) <= 40 and len(bridge._prompt_session) <= 40
    for per_session in (bridge._prompts, bridge._messages_seen, bridge._unechoed, bridge._plans):
        assert len(per_session) <= 50
    assert all(len(ids) <= 40 for ids in bridge._messages_seen.values())
    assert len(bridge.store.tool_calls("s0")) <= 41  # the store: at most max_pending finished ones
    assert len(bridge._views) <= 2 * 41 + 1  # swept when they double past what the store keeps
    assert bridge.dropped > 400
    # what is still kept converts as before: the newest session's turn ends with its response
    (end,) = bridge.from_agent(
        _update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}, "s399")
    )
    assert orjson.loads(end) == {"jsonrpc": "2.0", "id": 399, "result": {"stopReason": "end_turn"}}


def test_bridge_bounds_are_checked(backend: Any) -> None:
    for bad in (0, -1, 1.5, True, None):
        with pytest.raises(ValueError, match="to be an int >= 1"):
            Bridge(editor=1, agent=2, backend=backend, max_sessions=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="to be an int >= 1"):
            Bridge(editor=1, agent=2, backend=backend, max_pending=bad)  # type: ignore[arg-type]


def test_a_batch_from_a_v2_side_is_refused_and_a_v1_sides_is_split(backend: Any) -> None:
    batch = b'[{"jsonrpc":"2.0","method":"_x/a"},{"jsonrpc":"2.0","method":"_x/b"}]\n'
    v2_agent = Bridge(editor=1, agent=2, backend=backend)
    before = _state(v2_agent)
    with pytest.raises(acp_fast.DecodeError) as e:
        v2_agent.from_agent(batch)
    assert e.value.kind == "batch_in_v2" and _state(v2_agent) == before
    v1_agent = Bridge(editor=2, agent=1, backend=backend)
    assert v1_agent.from_agent(batch) == [batch]  # entries that pass unchanged: the batch as it is
