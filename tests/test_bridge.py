"""Unit tests of the v1 <-> v2 bridge (docs/BRIDGE.md): construction, framing, tool calls,
content, terminals, plans and messages, each rewrite and each strict refusal, on both backends.
Sessions, prompt turns, permissions and ``initialize``: tests/test_bridge_session.py; the
invariants on generated conversations: tests/test_bridge_invariants.py."""

from __future__ import annotations

import base64
import pickle
from typing import Any, Dict, List, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

import acp_fast
from acp_fast import AcpError, DecodeError
from acp_fast.bridge import Bridge, BridgeError, diff_text, git_patch, terminal_text, v1_diff_to_v2
from bridge_checks import chunk, frame, refused, tcu, text, upd, updates, valid

# ---------------------------------------------------------------------------------------------
# construction and framing


@pytest.mark.parametrize("bad", [0, 3, True, "1", None, 1.0])
def test_versions_are_1_or_2(backend: Any, bad: Any) -> None:
    with pytest.raises(ValueError, match="expected editor to be 1 or 2"):
        Bridge(editor=bad, agent=2, backend=backend)
    with pytest.raises(ValueError, match="expected agent to be 1 or 2"):
        Bridge(editor=1, agent=bad, backend=backend)


def test_defaults(backend: Any) -> None:
    bridge = Bridge(backend=backend)
    assert (bridge.editor, bridge.agent, bridge.strict, bridge.passthrough) == (1, 2, False, False)
    assert bridge.store.protocol_version == 2


@pytest.mark.parametrize("version", [1, 2])
def test_same_version_passes_everything(backend: Any, version: int) -> None:
    bridge = Bridge(editor=version, agent=version, backend=backend)
    assert bridge.passthrough
    data = tcu(title=None, status="cancelled")
    assert bridge.from_agent(data)[0] is data
    assert bridge.from_editor(data)[0] is data


def test_unchanged_frames_are_the_same_object(v1_editor: Bridge) -> None:
    data = upd(sessionUpdate="agent_message_chunk", messageId="m1", content={"type": "text", "text": "hi"})
    assert v1_editor.from_agent(data)[0] is data


def test_frame_types(v1_editor: Bridge, backend: Any) -> None:
    data = upd(sessionUpdate="usage_update", used=1, size=2)
    bare = data[:-1]
    assert v1_editor.from_agent(bare) == [data]  # a line ending is added
    assert v1_editor.from_agent(bare.decode() + "\r\n") == [data]
    assert v1_editor.from_agent(bytearray(bare)) == [data]
    assert v1_editor.from_agent(memoryview(bare)) == [data]
    assert v1_editor.from_agent(backend.decode(bare)) == [data]  # a Message
    with pytest.raises(TypeError, match="expected a frame"):
        v1_editor.from_agent(42)  # type: ignore[arg-type]  # the wrong type on purpose


@pytest.mark.parametrize("data", [b"{", b"[]", b'{"jsonrpc":"1.0","method":"x"}', b"1"])
def test_bad_frames_raise_the_codecs_decode_error(v1_editor: Bridge, backend: Any, data: bytes) -> None:
    with pytest.raises(DecodeError) as info:
        v1_editor.from_agent(data)
    with pytest.raises(DecodeError) as expected:
        backend.decode(data)
    assert info.value == expected.value


def test_bad_state_update_raises_the_stores_decode_error(v1_editor: Bridge) -> None:
    with pytest.raises(DecodeError) as info:
        v1_editor.from_agent(upd(sessionUpdate="tool_call_update", toolCallId="c1", content=5))
    assert info.value.code == -32602 and info.value.kind == "invalid_content"


def test_batches_of_a_v1_side_are_split_and_a_v2_sides_refused(v1_editor: Bridge, backend: Any) -> None:
    a = acp_fast.loads(tcu("c1", title="A"))
    b = acp_fast.loads(upd(sessionUpdate="usage_update", used=1, size=2))
    with pytest.raises(acp_fast.DecodeError, match="protocol v2 has no batches"):  # v2 has none
        v1_editor.from_agent(acp_fast.dumps([a, b]) + b"\n")
    # a v1 editor's batch, for a v2 agent: entry by entry
    info = {"name": "e", "version": "1"}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientInfo": info}}
    cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}}
    out = v1_editor.from_editor(acp_fast.dumps([init, cancel]) + b"\n")
    assert [acp_fast.loads(f)["method"] for f in out] == ["initialize", "session/cancel"]
    assert acp_fast.loads(out[0])["params"]["protocolVersion"] == 2
    unchanged = acp_fast.dumps([cancel, cancel]) + b"\n"
    assert v1_editor.from_editor(unchanged) == [unchanged]
    broken = b'[{"jsonrpc":"2.0","method":"x"},5]\n'
    assert v1_editor.from_editor(broken) == [broken]


def test_bridge_error(strict_v1: Bridge) -> None:
    error = refused(strict_v1, "agent", tcu(title="Run", status="cancelled"), "status")
    assert isinstance(error, AcpError) and isinstance(error, ValueError)
    assert (error.side, error.line, error.what, error.target) == ("agent", 1, "session/update tool_call_update", 1)
    assert str(error) == (
        "line 1 from the agent (session/update tool_call_update) cannot be said in protocol v1: the tool call "
        "status 'cancelled' (v1 knows completed, failed, in_progress, pending)"
    )
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.line) == (BridgeError, str(error), 1)


def test_bridge_error_line_is_the_messages_line(strict_v1: Bridge, backend: Any) -> None:
    decoder = backend.FrameDecoder()
    messages = decoder.feed(b"\n\n" + tcu(title="A", kind="_deploy"))
    with pytest.raises(BridgeError, match=r"^line 3 from the agent") as info:
        strict_v1.from_agent(messages[0])
    assert info.value.line == 3


# ---------------------------------------------------------------------------------------------
# v2 agent, v1 editor: tool calls


def test_first_update_becomes_a_tool_call(v1_editor: Bridge) -> None:
    out = valid(v1_editor.from_agent(tcu(title="Read", kind="read", rawInput={"p": 1})), 1)
    assert updates(out) == [
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "c1",
            "title": "Read",
            "kind": "read",
            "status": "pending",
            "content": [],
            "locations": [],
            "rawInput": {"p": 1},
        }
    ]


def test_first_update_without_title(v1_editor: Bridge, strict_v1: Bridge) -> None:
    assert updates(valid(v1_editor.from_agent(tcu(status="in_progress")), 1))[0]["title"] == ""
    refused(strict_v1, "agent", tcu(status="in_progress"), "first reported without a title")


def test_later_clean_update_passes_byte_exact(v1_editor: Bridge) -> None:
    v1_editor.from_agent(tcu(title="Run"))
    data = tcu(status="completed", rawOutput={"ok": True}, content=[text("done")])
    assert v1_editor.from_agent(data)[0] is data
    noop = tcu(rawInput=None)  # null on a field never set: v1 reads it as "unchanged" too
    assert v1_editor.from_agent(noop)[0] is noop


@pytest.mark.parametrize(
    ("field", "value", "sent", "pattern"),
    [
        ("status", "cancelled", "failed", "status 'cancelled'"),
        ("status", "_waiting", "in_progress", "status '_waiting'"),
        ("kind", "_deploy", "other", "kind '_deploy'"),
        ("kind", "teleport", "other", "kind 'teleport'"),
    ],
)
def test_values_v1_does_not_know(
    v1_editor: Bridge, strict_v1: Bridge, field: str, value: str, sent: str, pattern: str
) -> None:
    for bridge in (v1_editor, strict_v1):
        bridge.from_agent(tcu(title="Run", kind="read"))
    out = valid(v1_editor.from_agent(tcu(**{field: value})), 1)
    assert updates(out) == [{"sessionUpdate": "tool_call_update", "toolCallId": "c1", field: sent}]
    refused(strict_v1, "agent", tcu(**{field: value}), pattern)


@pytest.mark.parametrize("field", ["rawInput", "rawOutput", "name", "zeta"])
def test_null_clear_of_a_field_sends_the_tool_call_again(v1_editor: Bridge, strict_v1: Bridge, field: str) -> None:
    for bridge in (v1_editor, strict_v1):
        bridge.from_agent(tcu(title="Run", status="in_progress", **{field: {"x": 1}}))
    out = valid(v1_editor.from_agent(tcu(**{field: None})), 1)
    assert updates(out) == [
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "c1",
            "title": "Run",
            "kind": "other",
            "status": "in_progress",
            "content": [],
            "locations": [],
        }
    ]
    refused(strict_v1, "agent", tcu(**{field: None}), f'"{field}": null')


def test_null_clears_v1_can_say(v1_editor: Bridge, strict_v1: Bridge) -> None:
    for bridge in (v1_editor, strict_v1):
        bridge.from_agent(
            tcu(title="Run", kind="read", status="completed", content=[text("a")], locations=[{"path": "/a"}])
        )
    data = tcu(kind=None, status=None, content=None, locations=None)
    want = {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "kind": "other", "status": "pending"}
    want.update(content=[], locations=[])
    assert updates(v1_editor.from_agent(data)) == [want]
    assert updates(strict_v1.from_agent(data)) == [want]


def test_title_clear(v1_editor: Bridge, strict_v1: Bridge) -> None:
    for bridge in (v1_editor, strict_v1):
        bridge.from_agent(tcu(title="Run"))
    assert updates(v1_editor.from_agent(tcu(title=None))) == [
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": ""}
    ]
    refused(strict_v1, "agent", tcu(title=None), '"title": null')


def test_chunks_accumulate_into_whole_content(v1_editor: Bridge) -> None:
    v1_editor.from_agent(tcu(title="Read"))
    out = v1_editor.from_agent(chunk("c1", text("A")))
    assert updates(out) == [{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "content": [text("A")]}]
    out = valid(v1_editor.from_agent(chunk("c1", text("B"))), 1)
    assert updates(out)[0]["content"] == [text("A"), text("B")]
    v1_editor.from_agent(tcu(content=[text("C")]))
    assert updates(v1_editor.from_agent(chunk("c1", text("D"))))[0]["content"] == [text("C"), text("D")]


def test_chunk_for_an_unknown_tool_call(v1_editor: Bridge, strict_v1: Bridge) -> None:
    assert updates(v1_editor.from_agent(chunk("c9", text("A"))))[0] == {
        "sessionUpdate": "tool_call",
        "toolCallId": "c9",
        "title": "",
        "kind": "other",
        "status": "pending",
        "content": [text("A")],
        "locations": [],
    }
    refused(strict_v1, "agent", chunk("c9", text("A")), "content chunk for a tool call not reported yet")


def test_sessions_are_apart(v1_editor: Bridge) -> None:
    v1_editor.from_agent(tcu(title="A"))
    other = upd("s2", sessionUpdate="tool_call_update", toolCallId="c1", title="B")
    assert updates(v1_editor.from_agent(other))[0]["sessionUpdate"] == "tool_call"


def test_envelope_meta_is_kept(v1_editor: Bridge) -> None:
    data = frame(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": "s1",
                "update": {"sessionUpdate": "tool_call_update", "toolCallId": "c1"},
                "_meta": {"t": 1},
            },
        }
    )
    assert acp_fast.loads(v1_editor.from_agent(data)[0])["params"]["_meta"] == {"t": 1}


# content


DIFF = {
    "type": "diff",
    "changes": [{"operation": "modify", "path": "/a.py"}],
    "patch": {"format": "git_patch", "text": "diff --git a/a.py b/a.py\n"},
}


@pytest.mark.parametrize(
    ("item", "shown", "pattern"),
    [
        (DIFF, text("diff --git a/a.py b/a.py\n"), "a v2 diff"),
        (
            {
                "type": "diff",
                "changes": [{"operation": "move", "oldPath": "/a", "path": "/b"}, {"operation": "add", "path": "/c"}],
                "_meta": {"m": 1},
            },
            {**text("move /a -> /b\nadd /c"), "_meta": {"m": 1}},
            "a v2 diff",
        ),
        ({"type": "_acme_card", "x": 1}, None, "content type '_acme_card'"),
        ({"type": "content", "content": {"type": "_widget"}}, None, "content block type '_widget'"),
    ],
)
def test_content_v1_cannot_show(
    v1_editor: Bridge, strict_v1: Bridge, item: Dict[str, Any], shown: Optional[Dict[str, Any]], pattern: str
) -> None:
    for bridge in (v1_editor, strict_v1):
        bridge.from_agent(tcu(title="Edit"))
    out = valid(v1_editor.from_agent(tcu(content=[text("x"), item])), 1)
    assert updates(out)[0]["content"] == [text("x")] + ([shown] if shown else [])
    refused(strict_v1, "agent", tcu(content=[item]), pattern)
    refused(strict_v1, "agent", chunk("c1", item), pattern)


def test_diff_text() -> None:
    assert diff_text(DIFF) == "diff --git a/a.py b/a.py\n"
    assert diff_text({"type": "diff", "changes": [{"operation": "delete", "path": "/x"}, 5]}) == "delete /x"
    assert diff_text({"type": "diff"}) == ""


# terminals


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_terminal_is_shown_as_text_in_its_tool_calls(v1_editor: Bridge, strict_v1: Bridge) -> None:
    v1_editor.from_agent(tcu(title="Run", content=[{"type": "terminal", "terminalId": "t1"}]))
    v1_editor.from_agent(tcu("c2", title="Also", content=[{"type": "terminal", "terminalId": "t1"}]))
    out = valid(v1_editor.from_agent(upd(sessionUpdate="terminal_update", terminalId="t1", command="ls")), 1)
    assert updates(out) == [
        {"sessionUpdate": "tool_call_update", "toolCallId": tcid, "content": [text("$ ls\n")]} for tcid in ("c1", "c2")
    ]
    out = v1_editor.from_agent(upd(sessionUpdate="terminal_output_chunk", terminalId="t1", data=b64(b"a\xe2\x9c")))
    assert updates(out)[0]["content"] == [text("$ ls\na\ufffd")]  # a cut UTF-8 sequence, for now
    out = v1_editor.from_agent(upd(sessionUpdate="terminal_output_chunk", terminalId="t1", data=b64(b"\x93 ok")))
    assert updates(out)[0]["content"] == [text("$ ls\na\u2713 ok")]
    out = v1_editor.from_agent(upd(sessionUpdate="terminal_update", terminalId="t1", exitStatus={"exitCode": 0}))
    assert updates(out)[0]["content"] == [text("$ ls\na\u2713 ok\n[exit code 0]")]
    assert v1_editor.from_agent(upd(sessionUpdate="terminal_update", terminalId="t9", command="x")) == []
    refused(strict_v1, "agent", upd(sessionUpdate="terminal_update", terminalId="t1"), "agent-owned terminal")
    refused(strict_v1, "agent", upd(sessionUpdate="terminal_output_chunk", terminalId="t1", data=""), "agent-owned")
    refused(strict_v1, "agent", tcu(title="R", content=[{"type": "terminal", "terminalId": "t1"}]), "agent-owned")


def test_terminal_seen_before_its_tool_call(v1_editor: Bridge) -> None:
    v1_editor.from_agent(upd(sessionUpdate="terminal_update", terminalId="t1", output={"data": b64(b"hi")}))
    out = v1_editor.from_agent(tcu(title="Run", content=[{"type": "terminal", "terminalId": "t1", "_meta": {"a": 1}}]))
    assert updates(out)[0]["content"] == [{**text("hi"), "_meta": {"a": 1}}]


def test_terminal_text() -> None:
    assert terminal_text(None) == ""
    assert terminal_text({"terminalId": "t", "output": b""}) == ""
    assert (
        terminal_text({"terminalId": "t", "output": b"x", "exitStatus": {"signal": "SIGTERM"}}) == "x\n[signal SIGTERM]"
    )
    assert terminal_text({"terminalId": "t", "output": b"", "exitStatus": {}}) == "\n[exited]"


# ---------------------------------------------------------------------------------------------
# v1 agent, v2 editor: tool calls


def tool_call(tcid: str = "c1", **fields: Any) -> bytes:
    return upd(sessionUpdate="tool_call", toolCallId=tcid, **fields)


def test_tool_call_becomes_an_upsert(v2_editor: Bridge) -> None:
    out = valid(v2_editor.from_agent(tool_call(title="Read", kind="read", status="pending", rawInput=None)), 2)
    assert updates(out) == [{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "Read", "kind": "read"}]


def test_v1_update_passes_or_drops_its_nulls(v2_editor: Bridge) -> None:
    v2_editor.from_agent(tool_call(title="Read"))
    data = tcu(status="completed", content=[text("x")])
    assert v2_editor.from_agent(data)[0] is data
    out = v2_editor.from_agent(tcu(status="failed", title=None, rawOutput=None))
    assert updates(out) == [{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "failed"}]
    first = tcu("c2", title="New")  # an update for an unknown tool call: a v2 upsert says the same
    assert v2_editor.from_agent(first)[0] is first


def test_repeated_tool_call_replaces_with_explicit_nulls(v2_editor: Bridge) -> None:
    v2_editor.from_agent(tool_call(title="Read", kind="read", status="completed", rawInput={"a": 1}, _meta={"m": 1}))
    out = valid(v2_editor.from_agent(tool_call(title="Read again")), 2)
    assert updates(out) == [
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "title": "Read again",
            "kind": "other",
            "status": "pending",
            "rawInput": None,
            "_meta": None,
        }
    ]


def test_v1_diff_becomes_a_v2_diff(v2_editor: Bridge, strict_v2: Bridge) -> None:
    diff = {"type": "diff", "path": "/p/a.py", "oldText": "a\nb\n", "newText": "a\nc\n"}
    out = valid(v2_editor.from_agent(tool_call(title="Edit", content=[diff, text("t")])), 2)
    assert updates(out)[0]["content"] == [
        {
            "type": "diff",
            "changes": [{"operation": "modify", "path": "/p/a.py", "fileType": "text"}],
            "patch": {
                "format": "git_patch",
                "text": "diff --git /p/a.py /p/a.py\n--- /p/a.py\n+++ /p/a.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n",
            },
        },
        text("t"),
    ]
    assert strict_v2.from_agent(tool_call(title="Edit", content=[diff]))  # nothing lost: accepted


def test_v1_terminal_content_is_left_out(v2_editor: Bridge, strict_v2: Bridge) -> None:
    item = {"type": "terminal", "terminalId": "term-1"}
    out = v2_editor.from_agent(tool_call(title="Run", content=[item, text("x")]))
    assert updates(out)[0]["content"] == [text("x")]
    refused(strict_v2, "agent", tool_call(title="Run", content=[item]), "editor-owned terminal")
    refused(strict_v2, "agent", tool_call(title="Run", content=[{"type": "diff", "path": 1}]), "malformed diff")


def _read_patch(patch: str) -> tuple[Optional[str], str]:
    """Both texts back from a whole-file patch (git_patch's promise)."""
    lines = patch.split("\n")
    new_file = "new file mode 100644" in lines
    old: List[str] = []
    new: List[str] = []
    body = patch[patch.index("@@") :].split("\n", 1)[1] if "@@" in patch else ""
    last: List[List[str]] = []
    for line in [piece + "\n" for piece in body.split("\n")[:-1]]:
        if line.startswith("\\"):
            for side in last:
                side[-1] = side[-1][:-1]
            continue
        mark, rest = line[0], line[1:]
        last = [old, new] if mark == " " else [old] if mark == "-" else [new]
        for side in last:
            side.append(rest)
    if "@@" not in patch:
        return (None if new_file else "<same>"), "<same>"
    return (None if new_file else "".join(old)), "".join(new)


@given(
    old=st.none() | st.text(st.sampled_from("ab\n\r\t\u00e9"), max_size=30),
    new=st.text(st.sampled_from("ab\n\r\t\u00e9"), max_size=30),
)
def test_git_patch_keeps_both_texts(old: Optional[str], new: str) -> None:
    patch = git_patch("/x/f.txt", old, new)
    got_old, got_new = _read_patch(patch)
    if got_new == "<same>":  # no hunk: nothing changed (or an empty new file)
        assert (old or "") == new
        return
    assert (got_old, got_new) == (old, new)
    item = v1_diff_to_v2({"type": "diff", "path": "/x/f.txt", "oldText": old, "newText": new})
    assert item is not None and item["changes"][0]["operation"] == ("add" if old is None else "modify")


def test_v1_diff_to_v2_malformed() -> None:
    assert v1_diff_to_v2({"type": "diff", "path": "/a"}) is None
    assert v1_diff_to_v2({"type": "diff", "path": "/a", "newText": "x", "oldText": 1}) is None
    item = v1_diff_to_v2({"type": "diff", "path": "/a", "newText": "x\n", "_meta": {"k": 1}})
    assert item is not None and item["_meta"] == {"k": 1}
    assert (
        item["patch"]["text"] == "diff --git /a /a\nnew file mode 100644\n--- /dev/null\n+++ /a\n@@ -0,0 +1,1 @@\n+x\n"
    )


# ---------------------------------------------------------------------------------------------
# plans


def plan_update(pid: str, entries: List[Dict[str, Any]], kind: str = "items") -> bytes:
    return upd(sessionUpdate="plan_update", plan={"type": kind, "planId": pid, "entries": entries})


def entry(content: str, priority: str = "high", status: str = "pending") -> Dict[str, Any]:
    return {"content": content, "priority": priority, "status": status}


def test_v2_plans_become_the_one_v1_plan(v1_editor: Bridge) -> None:
    out = valid(v1_editor.from_agent(plan_update("main", [entry("a"), entry("b", "_urgent", "cancelled")])), 1)
    assert updates(out) == [{"sessionUpdate": "plan", "entries": [entry("a"), entry("b", "medium", "pending")]}]
    out = v1_editor.from_agent(plan_update("p2", [entry("c")]))
    assert updates(out)[0]["entries"] == [entry("a"), entry("b", "medium", "pending"), entry("c")]
    assert updates(v1_editor.from_agent(upd(sessionUpdate="plan_removed", planId="main")))[0]["entries"] == [entry("c")]
    assert v1_editor.from_agent(upd(sessionUpdate="plan_removed", planId="zz")) == []  # nothing changed
    assert v1_editor.from_agent(plan_update("p3", [], kind="_board")) == []
    assert updates(v1_editor.from_agent(upd(sessionUpdate="plan_removed", planId="p2")))[0]["entries"] == []
    assert v1_editor.from_agent(upd("s2", sessionUpdate="plan_removed", planId="p2")) == []


def test_plans_strict(strict_v1: Bridge) -> None:
    refused(strict_v1, "agent", plan_update("main", [entry("a", status="cancelled")]), "plan entry status 'cancelled'")
    refused(strict_v1, "agent", plan_update("main", [entry("a", priority="_p")]), "priority")
    refused(strict_v1, "agent", plan_update("m", [], kind="markdown"), "a plan of type 'markdown'")
    strict_v1.from_agent(plan_update("main", [entry("a")]))
    refused(strict_v1, "agent", plan_update("p2", [entry("b")]), "a second plan 'p2' besides 'main'")
    assert updates(strict_v1.from_agent(upd(sessionUpdate="plan_removed", planId="main"))) == [
        {"sessionUpdate": "plan", "entries": []}
    ]


def test_v1_plan_becomes_plan_main(v2_editor: Bridge) -> None:
    out = valid(v2_editor.from_agent(upd(sessionUpdate="plan", entries=[entry("a")], _meta={"m": 1})), 2)
    assert updates(out) == [
        {
            "sessionUpdate": "plan_update",
            "plan": {"type": "items", "planId": "main", "entries": [entry("a")], "_meta": {"m": 1}},
        }
    ]


# ---------------------------------------------------------------------------------------------
# messages and other session updates


def test_v2_message_chunks(v1_editor: Bridge, strict_v1: Bridge) -> None:
    data = upd(sessionUpdate="agent_message_chunk", messageId="m1", content={"type": "text", "text": "x"})
    assert v1_editor.from_agent(data)[0] is data
    odd = upd(sessionUpdate="agent_message_chunk", messageId="m1", content={"type": "_sticker"})
    assert v1_editor.from_agent(odd) == []
    refused(strict_v1, "agent", odd, "content block type '_sticker'")


def test_v2_whole_messages(v1_editor: Bridge, strict_v1: Bridge) -> None:
    blocks = [{"type": "text", "text": "a"}, {"type": "_x"}, {"type": "text", "text": "b"}]
    out = valid(v1_editor.from_agent(upd(sessionUpdate="agent_thought", messageId="m1", content=blocks)), 1)
    assert updates(out) == [
        {"sessionUpdate": "agent_thought_chunk", "content": b, "messageId": "m1"} for b in (blocks[0], blocks[2])
    ]
    again = upd(sessionUpdate="agent_thought", messageId="m1", content=blocks[:1])
    assert v1_editor.from_agent(again) == []
    refused(
        strict_v1, "agent", upd(sessionUpdate="user_message", messageId="m2", content=None), "a change to a message"
    )
    chunk_first = upd(sessionUpdate="agent_message_chunk", messageId="m3", content=blocks[0])
    strict_v1.from_agent(chunk_first)
    refused(strict_v1, "agent", upd(sessionUpdate="agent_message", messageId="m3", content=blocks[:1]), "already shown")


def test_v1_chunks_get_message_ids(v2_editor: Bridge) -> None:
    def send(kind: str, sid: str = "s1", **extra: Any) -> Any:
        out = v2_editor.from_agent(upd(sid, sessionUpdate=kind, content={"type": "text", "text": "x"}, **extra))
        return updates(valid(out[-1:], 2))[0].get("messageId") if out else None  # after any acknowledgement

    first = send("agent_message_chunk")
    assert first is not None and send("agent_message_chunk") == first  # one message
    thought = send("agent_thought_chunk")
    assert thought not in (None, first)
    assert send("agent_message_chunk") not in (first, thought)  # the kind changed: a new message
    assert send("agent_message_chunk", "s2") not in (first, thought)
    assert send("user_message_chunk", messageId=None) is not None
    data = upd(sessionUpdate="agent_message_chunk", content={"type": "text", "text": "x"}, messageId="own")
    assert v2_editor.from_agent(data)[0] is data
    before = send("agent_message_chunk")
    v2_editor.from_editor(
        frame({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": []}})
    )
    assert send("agent_message_chunk") != before  # a new turn: a new message


def test_v1_tool_call_between_chunks_starts_a_new_message(v2_editor: Bridge) -> None:
    """Chunks of one kind with a tool call (or a permission request) between them are two messages,
    as a v1 editor shows them (the v2 demo agent gives them two message ids too)."""

    def send(kind: str = "agent_message_chunk") -> Any:
        block = {"type": "text", "text": "x"}
        return updates(valid(v2_editor.from_agent(upd(sessionUpdate=kind, content=block)), 2))[0]["messageId"]

    first = send()
    v2_editor.from_agent(upd(sessionUpdate="tool_call_update", toolCallId="c1", status="in_progress"))
    assert send() == first  # an update of a tool call is not shown between them (a v1 editor appends)
    v2_editor.from_agent(upd(sessionUpdate="tool_call", toolCallId="c2", title="Read"))
    second = send()
    assert second != first
    asked = {"sessionId": "s1", "toolCall": {"toolCallId": "c2"}, "options": []}
    v2_editor.from_agent(frame({"jsonrpc": "2.0", "id": 9, "method": "session/request_permission", "params": asked}))
    assert send() not in (first, second)


def test_commands_input(v1_editor: Bridge, v2_editor: Bridge, strict_v1: Bridge) -> None:
    v2_cmds = [
        {"name": "a", "description": "A", "input": {"type": "text", "hint": "h"}},
        {"name": "b", "description": "B"},
    ]
    out = valid(v1_editor.from_agent(upd(sessionUpdate="available_commands_update", availableCommands=v2_cmds)), 1)
    assert updates(out)[0]["availableCommands"][0]["input"] == {"hint": "h"}
    odd = [{"name": "c", "description": "C", "input": {"type": "_form", "fields": []}}]
    assert (
        updates(v1_editor.from_agent(upd(sessionUpdate="available_commands_update", availableCommands=odd)))[0][
            "availableCommands"
        ][0]["input"]
        is None
    )
    refused(strict_v1, "agent", upd(sessionUpdate="available_commands_update", availableCommands=odd), "command input")
    v1_cmds = [{"name": "a", "description": "A", "input": {"hint": "h"}}]
    out = valid(v2_editor.from_agent(upd(sessionUpdate="available_commands_update", availableCommands=v1_cmds)), 2)
    assert updates(out)[0]["availableCommands"][0]["input"] == {"type": "text", "hint": "h"}
    plain = upd(sessionUpdate="available_commands_update", availableCommands=[{"name": "x", "description": "X"}])
    assert v1_editor.from_agent(plain)[0] is plain


def test_updates_only_one_version_has(
    v1_editor: Bridge, v2_editor: Bridge, strict_v1: Bridge, strict_v2: Bridge
) -> None:
    odd = upd(sessionUpdate="_acme_status", x=1)
    assert v1_editor.from_agent(odd) == []
    refused(strict_v1, "agent", odd, 'the session update "_acme_status"')
    mode = upd(sessionUpdate="current_mode_update", currentModeId="ask")
    assert v2_editor.from_agent(mode) == []
    refused(strict_v2, "agent", mode, "session mode change")
    for data in (
        upd(sessionUpdate="usage_update", used=1, size=2),
        upd(sessionUpdate="session_info_update", title="T"),
    ):
        assert v1_editor.from_agent(data)[0] is data and v2_editor.from_agent(data)[0] is data
