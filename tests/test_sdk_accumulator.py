"""``acp_fast.integrations.session_state.SessionAccumulator`` against the SDK's own
``acp.contrib.session_state.SessionAccumulator`` (whichever supported SDK release is installed;
the SDK's own tests below are those of 0.12.1).

* the SDK's own tests of its accumulator pass on ours;
* on the same v1 streams (acp-fast's seeded traffic, the SDK's golden updates), ours gives the
  same snapshot after every update, whether it is fed the SDK's models, frames or a byte stream,
  and whether the snapshot is read at once or long after;
* the lazy snapshot behaves as a ``SessionSnapshot`` (equality both ways, dump, copy, pickle,
  frozen) and ``apply`` builds nothing that is not read (the constant cost per update);
* where the SDK's accumulator cannot go: batches, v2 updates (null clears, content chunks,
  negotiated version), large frames, bad frames in a stream.

Behaviour tests run on both backends (``backend`` fixture).
"""

from __future__ import annotations

import copy
import pickle
import random
import sys
import warnings
from pathlib import Path
from typing import Any, Dict, List

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

from acp.contrib import session_state as sdk  # noqa: E402
from acp.schema import (  # noqa: E402
    AgentMessageChunk,
    AgentPlanUpdate,
    AvailableCommandsUpdate,
    ContentToolCallContent,
    CurrentModeUpdate,
    PlanEntry,
    SessionNotification,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)
from pydantic import ValidationError  # noqa: E402

import acp_fast  # noqa: E402
from acp_fast import traffic  # noqa: E402
from acp_fast.errors import DecodeError  # noqa: E402
from acp_fast.integrations import models, session_state  # noqa: E402
from acp_fast.integrations.session_state import LazySessionSnapshot, SessionAccumulator  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent / "sdk_peers"))
import scenario  # noqa: E402


def notification(session_id: str, update: Any) -> SessionNotification:
    return SessionNotification(session_id=session_id, update=update)


def single_session_frames(profile: str, n: int, seed: int = 1, session_id: str = "s1") -> List[bytes]:
    """The first ``n`` session/update frames of seeded traffic, all moved to one session (the
    SDK's accumulator follows one session at a time)."""
    out: List[bytes] = []
    for frame in traffic.frames(profile, 3 * n, seed):
        message = acp_fast.decode(frame)
        if message.method == "session/update":
            obj = message.to_dict()
            obj["params"]["sessionId"] = session_id
            out.append(acp_fast.dumps(obj) + b"\n")
            if len(out) == n:
                break
    return out


@pytest.fixture(scope="module")
def v1_stream() -> Any:
    frames = single_session_frames("mixed", 700)
    golden = [
        models.notification_frame("s1", scenario.golden_model(name))
        for name in sorted(scenario.GOLDEN_CASES)
        if name.startswith("session_update_")
    ]
    frames = frames[:300] + golden + frames[300:]
    notifications = [SessionNotification.model_validate(acp_fast.decode(f).params) for f in frames]
    reference = sdk.SessionAccumulator()
    return frames, notifications, [reference.apply(n) for n in notifications]  # the SDK's snapshots


# ---------------------------------------------------------------------------------------------
# The SDK's own tests of its accumulator (tests/contrib/test_contrib_session_state.py, 0.12.1)


@pytest.fixture(params=["sdk", "acp-fast"])
def Accumulator(request: Any, backend: Any) -> Any:
    if request.param == "sdk":
        return sdk.SessionAccumulator
    return lambda **kw: SessionAccumulator(backend=backend, **kw)


def test_sdk_suite_merges_tool_calls(Accumulator: Any) -> None:
    acc = Accumulator()
    start = ToolCallStart(session_update="tool_call", tool_call_id="call-1", title="Read file", status="in_progress")
    acc.apply(notification("s", start))
    progress = ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id="call-1",
        status="completed",
        content=[ContentToolCallContent(type="content", content=TextContentBlock(type="text", text="Done"))],
    )
    snapshot = acc.apply(notification("s", progress))
    tool = snapshot.tool_calls["call-1"]
    assert tool.status == "completed"
    assert tool.title == "Read file"
    assert tool.content and tool.content[0].content.text == "Done"


def test_sdk_suite_records_plan_and_mode(Accumulator: Any) -> None:
    acc = Accumulator()
    acc.apply(
        notification(
            "s",
            AgentPlanUpdate(
                session_update="plan", entries=[PlanEntry(content="Step 1", priority="medium", status="pending")]
            ),
        )
    )
    snapshot = acc.apply(
        notification("s", CurrentModeUpdate(session_update="current_mode_update", current_mode_id="coding"))
    )
    assert snapshot.plan_entries[0].content == "Step 1"
    assert snapshot.current_mode_id == "coding"


def test_sdk_suite_tracks_messages_and_commands(Accumulator: Any) -> None:
    acc = Accumulator()
    acc.apply(
        notification("s", AvailableCommandsUpdate(session_update="available_commands_update", available_commands=[]))
    )
    acc.apply(
        notification(
            "s",
            UserMessageChunk(session_update="user_message_chunk", content=TextContentBlock(type="text", text="Hello")),
        )
    )
    acc.apply(
        notification(
            "s",
            AgentMessageChunk(session_update="agent_message_chunk", content=TextContentBlock(type="text", text="Hi!")),
        )
    )
    snapshot = acc.snapshot()
    user_content = snapshot.user_messages[0].content
    agent_content = snapshot.agent_messages[0].content
    assert isinstance(user_content, TextContentBlock)
    assert isinstance(agent_content, TextContentBlock)
    assert user_content.text == "Hello"
    assert agent_content.text == "Hi!"


def test_sdk_suite_auto_resets_on_new_session(Accumulator: Any) -> None:
    acc = Accumulator()
    acc.apply(notification("s1", ToolCallStart(session_update="tool_call", tool_call_id="call-1", title="First")))
    acc.apply(notification("s2", ToolCallStart(session_update="tool_call", tool_call_id="call-2", title="Second")))
    snapshot = acc.snapshot()
    assert snapshot.session_id == "s2"
    assert "call-1" not in snapshot.tool_calls
    assert "call-2" in snapshot.tool_calls


def test_sdk_suite_rejects_cross_session_when_auto_reset_disabled(Accumulator: Any) -> None:
    acc = Accumulator(auto_reset_on_session_change=False)
    acc.apply(notification("s1", ToolCallStart(session_update="tool_call", tool_call_id="call-1", title="First")))
    with pytest.raises(ValueError):
        acc.apply(notification("s2", ToolCallStart(session_update="tool_call", tool_call_id="call-2", title="Second")))


def test_same_errors_and_exports_as_the_sdk(backend: Any) -> None:
    for name in (
        "SessionSnapshot",
        "ToolCallView",
        "SessionNotificationMismatchError",
        "SessionSnapshotUnavailableError",
    ):
        assert getattr(session_state, name) is getattr(sdk, name)
    for acc in (sdk.SessionAccumulator(), SessionAccumulator(backend=backend)):
        with pytest.raises(sdk.SessionSnapshotUnavailableError, match="has not processed any notifications yet"):
            acc.snapshot()
        assert acc.session_id is None
    acc = SessionAccumulator(auto_reset_on_session_change=False, backend=backend)
    acc.apply(models.notification_frame("s1", scenario.golden_model("session_update_tool_call")))
    with pytest.raises(sdk.SessionNotificationMismatchError, match="received notification for s2, expected s1"):
        acc.apply(models.notification_frame("s2", scenario.golden_model("session_update_tool_call")))
    assert acc.session_id == "s1" and list(acc.snapshot().tool_calls) == ["call_001"]


# ---------------------------------------------------------------------------------------------
# Same snapshots as the SDK on v1 streams


@pytest.mark.parametrize("feed_as", ["models", "frames", "stream"])
def test_same_snapshot_after_every_update(v1_stream: Any, backend: Any, feed_as: str) -> None:
    frames, notifications, expected = v1_stream
    acc = SessionAccumulator(backend=backend)
    if feed_as == "models":
        got = [acc.apply(n) for n in notifications]
    elif feed_as == "frames":
        got = [acc.apply(f) for f in frames]
    else:
        got = []
        acc.subscribe(lambda snapshot, message: got.append(snapshot))
        data = b"".join(frames)
        for i in range(0, len(data), 4093):  # pieces that cut frames anywhere
            assert acc.feed(data[i : i + 4093]) == []
        assert acc.finish() == []
    assert len(got) == len(expected)
    for i in range(0, len(expected), 7):  # snapshots read long after they were taken
        assert got[i] == expected[i], i
        assert expected[i] == got[i], i
    assert got[-1] == expected[-1] and acc.snapshot() == expected[-1]


def test_snapshots_read_at_random_times_stay_what_they_were(v1_stream: Any, backend: Any) -> None:
    frames, notifications, snapshots = v1_stream
    rng = random.Random(5)
    acc = SessionAccumulator(backend=backend)
    kept = []
    for i, n in enumerate(notifications):
        expected = snapshots[i]
        got = acc.apply(n if i % 2 else frames[i])
        if rng.random() < 0.2:
            kept.append((expected, got))
        if rng.random() < 0.1:
            tool = n.update.tool_call_id if hasattr(n.update, "tool_call_id") else None
            if tool is not None:  # read one field now, the rest later
                assert got.tool_calls[tool] == expected.tool_calls[tool]
        if rng.random() < 0.05 and kept:
            old_expected, old_got = rng.choice(kept)
            assert old_got.agent_messages == old_expected.agent_messages
    for expected, got in kept:
        assert got == expected


def test_session_changes_reset_as_in_the_sdk(backend: Any) -> None:
    """Interleaved sessions (the raw seeded traffic): both reset on every change of session."""
    frames = [f for f in traffic.frames("mixed", 600, 3) if acp_fast.decode(f).method == "session/update"]
    reference = sdk.SessionAccumulator()
    acc = SessionAccumulator(backend=backend)
    changes = 0
    for frame in frames:
        n = SessionNotification.model_validate(acp_fast.decode(frame).params)
        before = reference.session_id
        expected = reference.apply(n)
        changes += before is not None and before != n.session_id
        assert acc.apply(frame) == expected
    assert changes > 10


def test_subscribers(backend: Any) -> None:
    for acc in (sdk.SessionAccumulator(), SessionAccumulator(backend=backend)):
        _check_subscribers(acc)


def _check_subscribers(acc: Any) -> None:
    seen: List[Any] = []
    unsubscribe = acc.subscribe(lambda snapshot, n: seen.append((snapshot, n)))
    first = notification(
        "s", UserMessageChunk(session_update="user_message_chunk", content=TextContentBlock(type="text", text="a"))
    )
    returned = acc.apply(first)
    unsubscribe()
    unsubscribe()  # a second call is harmless
    acc.apply(first)
    assert len(seen) == 1 and seen[0][0] is returned and seen[0][1] is first
    assert [m.content.text for m in seen[0][0].user_messages] == ["a"]


def test_reset_keeps_old_snapshots(backend: Any) -> None:
    acc = SessionAccumulator(backend=backend)
    acc.apply(models.notification_frame("s", scenario.golden_model("session_update_tool_call")))
    acc.apply(models.notification_frame("s", scenario.golden_model("session_update_agent_message_chunk")))
    before = acc.snapshot()
    acc.reset()
    assert acc.session_id is None
    acc.apply(models.notification_frame("s", scenario.golden_model("session_update_tool_call_edit")))
    assert list(before.tool_calls) == ["call_001"] and len(before.agent_messages) == 1
    assert list(acc.snapshot().tool_calls) == ["call_003"] and acc.snapshot().agent_messages == ()


# ---------------------------------------------------------------------------------------------
# The lazy snapshot is a SessionSnapshot


def test_lazy_snapshot_behaves_as_the_sdk_snapshot(v1_stream: Any, backend: Any) -> None:
    frames, notifications, snapshots = v1_stream
    acc = SessionAccumulator(backend=backend)
    for n in notifications[:200]:
        got = acc.apply(n)
    expected = snapshots[199]
    assert isinstance(got, sdk.SessionSnapshot) and type(got) is LazySessionSnapshot
    assert "tool_calls" not in got.__dict__  # nothing built until read
    assert got.model_dump() == expected.model_dump()
    assert got.model_dump_json() == expected.model_dump_json()
    assert list(got) == list(expected)
    assert repr(got) == repr(expected).replace("SessionSnapshot(", "LazySessionSnapshot(", 1)
    assert got == expected and expected == got and not (got != expected)  # noqa: SIM202 - __ne__ is under test too
    plain = got.materialize()
    assert type(plain) is sdk.SessionSnapshot and plain == expected and expected == plain
    assert plain.model_fields_set == expected.model_fields_set
    for other in (copy.copy(got), copy.deepcopy(got), got.model_copy(), pickle.loads(pickle.dumps(got))):
        assert other == expected
    with pytest.raises(ValidationError):
        got.session_id = "other"  # frozen, as the SDK's
    with pytest.raises(TypeError):
        hash(got)
    with pytest.raises(TypeError):
        hash(expected)
    assert got != acc.apply(notifications[200])  # a later state differs
    with pytest.raises(AttributeError):
        _ = got.no_such_field


def test_apply_builds_nothing_that_is_not_read(v1_stream: Any, backend: Any, monkeypatch: Any) -> None:
    """The constant cost per update, stated without a clock: applying updates converts no record
    to a view and keeps no undo state once the snapshots that could need it are gone."""
    frames, notifications, _ = v1_stream
    built: List[str] = []
    original = session_state.tool_call_view
    monkeypatch.setattr(
        session_state,
        "tool_call_view",
        lambda record, **kw: built.append(record["toolCallId"]) or original(record, **kw),
    )
    acc = SessionAccumulator(backend=backend)
    for frame, n in zip(frames, notifications):
        acc.apply(n)
        acc.apply(frame)
    assert built == []
    assert acc._world.epoch is None or acc._world.epoch() is None  # no snapshot alive: no history kept
    kept = acc.snapshot()
    first = next(iter(acc.store.tool_calls("s1")))
    acc.apply(
        notification("s1", ToolCallProgress(session_update="tool_call_update", tool_call_id=first, title="changed"))
    )
    assert list(kept.__dict__["_lazy"].epoch.undo) == [first]  # what the kept snapshot needs, nothing else
    assert len(kept.tool_calls) == len(acc.snapshot().tool_calls)
    assert len(built) == len(kept.tool_calls) + 1  # every view of the first read, then the one that changed
    assert kept.tool_calls[first].title != "changed" and acc.snapshot().tool_calls[first].title == "changed"


# ---------------------------------------------------------------------------------------------
# Where the SDK's accumulator cannot go


def test_batches_apply_in_order(backend: Any) -> None:
    acc = SessionAccumulator(backend=backend)
    seen: List[Any] = []
    acc.subscribe(lambda snapshot, message: seen.append(message.update_kind))
    batch = [
        acp_fast.loads(models.notification_frame("s", scenario.golden_model("session_update_tool_call"))),
        acp_fast.loads(
            models.notification_frame("s", scenario.golden_model("session_update_tool_call_update_content"))
        ),
        acp_fast.loads(models.notification_frame("s", scenario.golden_model("session_update_agent_message_chunk"))),
    ]
    snapshot = acc.apply(acp_fast.dumps(batch))
    assert seen == ["tool_call", "tool_call_update", "agent_message_chunk"]
    tool = snapshot.tool_calls["call_001"]
    assert (tool.title, tool.status, tool.kind) == ("Reading configuration file", "in_progress", "read")
    again = acc.apply(batch)  # a list of dicts: the same batch again
    assert again.tool_calls == snapshot.tool_calls and again.agent_messages == snapshot.agent_messages * 2
    errors = acc.feed(acp_fast.dumps(batch) + b"\n[]\n[1]\n")
    assert [(e.code, e.kind, e.line, str(e)) for e in errors] == [
        (
            -32600,
            "empty_batch",
            2,
            "expected at least one message in the batch, found an empty array at line 2 column 1",
        ),
        (-32600, "not_an_object", 3, "expected a JSON-RPC message object, found number at line 3 column 2"),
    ]
    assert len(acc.snapshot().agent_messages) == 3


def _v2(update: Dict[str, Any], session_id: str = "s") -> bytes:
    return (
        acp_fast.dumps(
            {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}}
        )
        + b"\n"
    )


def test_v2_null_clears_and_content_chunks(backend: Any) -> None:
    text = {"type": "content", "content": {"type": "text", "text": "A"}}
    v2_diff = {"type": "diff", "changes": [{"operation": "add", "path": "/a.py", "fileType": "text"}]}
    acc = SessionAccumulator(backend=backend)
    stream = [
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}\n',  # the negotiated version
        _v2(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c1",
                "title": "Read",
                "kind": "read",
                "status": "pending",
            }
        ),
        _v2({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c1", "content": text}),
        _v2({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c1", "content": v2_diff}),
        _v2(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c1",
                "status": "cancelled",
                "title": None,
                "kind": None,
                "rawOutput": {"x": 1},
            }
        ),
        _v2({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c2", "content": text}),
        _v2({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "hi"}}),
        _v2({"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": "aGk="}),
        _v2({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p", "entries": []}}),
        _v2({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    ]
    assert acc.apply(stream[0]) is None  # no session yet
    snapshots = [acc.apply(frame) for frame in stream[1:]]
    assert acc.protocol_version == 2
    first, last = snapshots[2].tool_calls["c1"], acc.snapshot().tool_calls["c1"]
    assert (first.title, first.kind, first.status) == ("Read", "read", "pending")
    assert first.content == (models.CONTENT_ADAPTER.validate_python(text), v2_diff)
    assert (last.title, last.kind, last.status, last.raw_output) == (None, None, "cancelled", {"x": 1})
    assert last.content == first.content
    c2 = acc.snapshot().tool_calls["c2"]
    assert (c2.title, c2.kind, c2.status, c2.content) == (
        None,
        None,
        None,
        (models.CONTENT_ADAPTER.validate_python(text),),
    )
    assert acc.snapshot().agent_messages[0].message_id == "m1"
    assert acc.terminals()["t1"]["output"] == b"hi"
    assert acc.plans() == {"p": {"type": "items", "planId": "p", "entries": []}}
    assert snapshots[0].tool_calls["c1"].content is None  # earlier snapshots keep their state


def test_v1_nulls_leave_fields_unchanged(backend: Any) -> None:
    """The same update under v1 (the SDK's reading): null means unchanged."""
    sdk_acc, acc = sdk.SessionAccumulator(), SessionAccumulator(backend=backend)
    frames = [
        _v2({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read", "kind": "read"}),
        _v2(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c1",
                "title": None,
                "kind": None,
                "status": "completed",
            }
        ),
    ]
    for frame in frames:
        expected = sdk_acc.apply(SessionNotification.model_validate(acp_fast.decode(frame).params))
        assert acc.apply(frame) == expected
    assert acc.snapshot().tool_calls["c1"].title == "Read"


def test_v2_stream_matches_the_state_engine(backend: Any) -> None:
    """The whole seeded v2 profile, as one session: every view is the store's record as the SDK's
    types show it (kind / status None until set; null clears)."""
    frames = [b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}\n'] + single_session_frames("v2", 1500)
    acc = SessionAccumulator(backend=backend)
    assert acc.feed(b"".join(frames)) == []
    store = backend.ToolCallStore(2)
    present: Dict[str, set] = {}
    for frame in frames:
        store.apply(frame)
        message = acp_fast.decode(frame)
        if message.update_kind in ("tool_call_update", "tool_call_content_chunk"):
            update = message.params["update"]
            fields = present.setdefault(update["toolCallId"], set())
            for key in ("kind", "status"):
                if key in update:
                    (fields.discard if update[key] is None else fields.add)(key)
    snapshot = acc.snapshot()
    assert list(snapshot.tool_calls) == list(store.tool_calls("s1"))
    for tcid, record in store.tool_calls("s1").items():
        assert snapshot.tool_calls[tcid] == models.tool_call_view(
            record, kind_set="kind" in present[tcid], status_set="status" in present[tcid]
        )
    assert {v.status for v in snapshot.tool_calls.values()} >= {"cancelled", "completed"}
    assert len(snapshot.agent_messages) == sum(
        1 for f in frames if acp_fast.decode(f).update_kind == "agent_message_chunk"
    )


def test_large_frames_and_bad_frames_in_a_stream(backend: Any) -> None:
    big = {"type": "content", "content": {"type": "text", "text": "é" * 2_000_000}}
    frames = [
        _v2({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read"}),
        _v2({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "content": [big]}),
        b"garbage\n",
        _v2({"sessionUpdate": "tool_call_update", "toolCallId": 7}),
        _v2({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}),
    ]
    acc = SessionAccumulator(backend=backend)
    errors = acc.feed(b"".join(frames))
    assert [(e.code, e.kind, e.line) for e in errors] == [
        (-32700, "unexpected_character", 3),
        (-32602, "invalid_tool_call_id", 4),
    ]
    tool = acc.snapshot().tool_calls["c1"]
    assert tool.status == "completed" and tool.content[0].content.text == big["content"]["text"]
    small = SessionAccumulator(backend=backend, max_frame_bytes=1 << 20)
    errors = small.feed(b"".join(frames))
    assert [(e.kind, e.line) for e in errors] == [
        ("frame_too_large", 2),
        ("unexpected_character", 3),
        ("invalid_tool_call_id", 4),
    ]
    assert small.snapshot().tool_calls["c1"].content is None
    with pytest.raises(DecodeError):
        acc.apply(frames[3])


def test_permission_requests_update_the_tool_call(backend: Any) -> None:
    acc = SessionAccumulator(backend=backend)
    acc.apply(
        _v2({"sessionUpdate": "tool_call", "toolCallId": "call_001", "title": "Read"}, session_id="sess_abc123def456")
    )
    request = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "session/request_permission",
        "params": scenario.golden("request_permission_request"),
    }
    request["params"]["toolCall"]["status"] = "pending"
    assert acc.apply(request).tool_calls["call_001"].status == "pending"
    assert (
        acc.apply(
            {"jsonrpc": "2.0", "id": 3, "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}}
        ).session_id
        == "sess_abc123def456"
    )
    assert acc.store.permission(3)["approved"] is True
    assert acc.tool_call("call_001").status == "pending" and acc.tool_call("nope") is None


# ---------------------------------------------------------------------------------------------
# The benchmark's helpers (python -m acp_fast.bench.sdk; figures only there, no timing here)


def test_bench_helpers(monkeypatch: Any, capsys: Any) -> None:
    from acp_fast.bench import sdk as bench

    corpus = bench.accumulator_corpus(300)
    messages = [acp_fast.decode(frame) for frame in corpus]
    assert len(corpus) == 300 and {m.method for m in messages} == {"session/update"}
    assert {m.session_id for m in messages} == {"sess_bench"}
    assert len({m.session_id for m in map(acp_fast.decode, bench.pipeline_corpus(300))}) > 1
    assert bench.growth_exponent([(1000, 2.0), (2000, 8.0), (4000, 32.0)]) == pytest.approx(2.0)
    assert bench.project([(1000, 1.0), (2000, 4.0)], 4000) == pytest.approx(16.0)
    assert bench.project([(1000, 1.0), (2000, 1.5)], 4000) == pytest.approx(3.0)  # never below linear
    monkeypatch.setattr(bench, "_build_profile", lambda: "debug")
    assert bench.main(["--quick"]) == 2
    assert "refusing to run on a debug native build" in capsys.readouterr().err
