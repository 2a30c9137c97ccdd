"""The bridge and the newest v2 draft (agent-client-protocol-schema 1.20.0; docs/BRIDGE.md, "The
newest draft"): each case the draft added that v1 cannot say, its documented choice and its strict
refusal, on both backends. The rules are the crate's own documentation (src/v2/*.rs): tool-call
statuses, ``title: null``, ``_meta`` patches (``apply_meta_update``), ``capabilities`` and the
cancel methods, ``session`` content, structured diffs, the prompt's response both ways, a
permission's ``subject.toolCall``, and a v1 agent's client methods."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

import acp_fast
from acp_fast.bridge import Bridge, git_patch, v1_diff_to_v2, v2_diff_to_v1
from bridge_checks import Conversation, chunk, frame, only, refused, tcu, text, upd, updates, valid


def req(rid: Any, method: str, params: Any) -> bytes:
    return frame({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


def res(rid: Any, result: Any) -> bytes:
    return frame({"jsonrpc": "2.0", "id": rid, "result": result})


def prompt(rid: Any, sid: str = "s1") -> bytes:
    return req(rid, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]})


def v1_tool_call(tcid: str = "c1", **fields: Any) -> bytes:
    return upd(sessionUpdate="tool_call", toolCallId=tcid, **fields)


def error_of(frames: List[bytes]) -> Dict[str, Any]:
    error: Dict[str, Any] = only(frames)["error"]
    return error


# ---------------------------------------------------------------------------------------------
# tool-call statuses: paused and cancelled


@pytest.mark.parametrize(("status", "sent"), [("paused", "in_progress"), ("cancelled", "failed")])
def test_paused_and_cancelled(v1_editor: Bridge, strict_v1: Bridge, status: str, sent: str) -> None:
    for bridge in (v1_editor, strict_v1):
        bridge.from_agent(tcu(title="Run"))
    out = valid(v1_editor.from_agent(tcu(status=status)), 1)
    assert updates(out) == [{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": sent}]
    assert v1_editor.store.get("s1", "c1")["status"] == status  # the agent's state keeps the draft's value
    refused(strict_v1, "agent", tcu(status=status), f"the tool call status '{status}'")


def test_paused_tool_call_resumes(v1_editor: Bridge) -> None:
    v1_editor.from_agent(tcu(title="Run", status="in_progress"))
    v1_editor.from_agent(tcu(status="paused"))
    again = tcu(status="in_progress")  # what the v1 editor holds already: it passes, a no-op
    assert v1_editor.from_agent(again)[0] is again


def test_paused_tool_call_first_seen(v1_editor: Bridge) -> None:
    out = valid(v1_editor.from_agent(tcu(title="Wait", status="paused")), 1)
    assert updates(out)[0]["sessionUpdate"] == "tool_call" and updates(out)[0]["status"] == "in_progress"


# ---------------------------------------------------------------------------------------------
# titles: null unsets, a new tool call starts without one


@pytest.mark.parametrize(
    "first",
    [
        tcu(status="in_progress"),
        tcu(title=None, kind="read"),
        chunk("c1", text("a")),
    ],
    ids=["no-title", "title-null", "chunk"],
)
def test_tool_call_created_without_a_title(v1_editor: Bridge, strict_v1: Bridge, first: bytes) -> None:
    [created] = updates(valid(v1_editor.from_agent(first), 1))
    assert created["sessionUpdate"] == "tool_call" and created["title"] == ""
    refused(strict_v1, "agent", first, "without a title|not reported yet")
    out = valid(v1_editor.from_agent(tcu(title="Read")), 1)  # the title arrives: an update
    assert updates(out) == [{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "Read"}]


def test_title_null_unsets(v1_editor: Bridge, strict_v1: Bridge) -> None:
    for bridge in (v1_editor, strict_v1):
        bridge.from_agent(tcu(title="Read"))
    out = valid(v1_editor.from_agent(tcu(title=None)), 1)
    assert updates(out) == [{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": ""}]
    assert "title" not in v1_editor.store.get("s1", "c1")
    refused(strict_v1, "agent", tcu(title=None), '"title": null')


# ---------------------------------------------------------------------------------------------
# _meta patches (src/v2/ext.rs, apply_meta_update)

STORED = {"zed.dev/kept": 1, "zed.dev/removed": True, "acme.dev/nested": {"a": 1, "b": 2}, "acme.dev/list": [1, 2]}
PATCH = {
    "zed.dev/removed": None,
    "zed.dev/absent": None,
    "acme.dev/nested": {"b": 3, "c": None},
    "acme.dev/list": [3],
    "acme.dev/added": [],
}
PATCHED = {"zed.dev/kept": 1, "acme.dev/nested": {"b": 3, "c": None}, "acme.dev/list": [3], "acme.dev/added": []}


def test_meta_patch_is_merged_before_the_v1_update(v1_editor: Bridge, strict_v1: Bridge, backend: Any) -> None:
    conv = Conversation(v1_editor, backend)
    conv.send("agent", tcu(title="Edit", _meta=STORED))
    out = valid(conv.send("agent", tcu(_meta=PATCH)), 1)
    # the crate's own example: nulls remove keys, values replace whole, nested nulls are data
    assert updates(out) == [{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "_meta": PATCHED}]
    assert conv.editor.store.get("s1", "c1")["_meta"] == PATCHED  # v1 replaces _meta: the merged one
    assert list(conv.editor.store.get("s1", "c1")["_meta"]) == list(PATCHED)  # in the stored key order
    assert conv.send("agent", tcu(_meta={})) == []  # an empty patch changes nothing
    assert conv.send("agent", chunk("c1", {**text("x"), "_meta": {"chunk": 1}}))  # a chunk's _meta is its own
    assert conv.editor.store.get("s1", "c1")["_meta"] == PATCHED
    out = valid(conv.send("agent", tcu(_meta=None)), 1)  # null clears: v1 is told "no keys"
    assert updates(out) == [{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "_meta": {}}]
    for data in (tcu(title="Edit", _meta=STORED), tcu(_meta=PATCH), tcu(_meta=None)):
        assert strict_v1.from_agent(data) is not None  # all of it can be said: strict accepts it


def test_meta_patch_equal_to_the_record_passes(v1_editor: Bridge) -> None:
    v1_editor.from_agent(tcu(title="Edit"))
    data = tcu(_meta={"a": 1})
    assert v1_editor.from_agent(data)[0] is data  # the first _meta: the patch is the whole record
    data = tcu(_meta={"b": 2})
    assert updates(v1_editor.from_agent(data))[0]["_meta"] == {"a": 1, "b": 2}


def test_v1_meta_becomes_a_patch(v2_editor: Bridge, strict_v2: Bridge, backend: Any) -> None:
    conv = Conversation(v2_editor, backend)
    conv.send("agent", v1_tool_call(title="Edit", _meta={"a": 1, "b": 2}))
    out = valid(conv.send("agent", upd(sessionUpdate="tool_call_update", toolCallId="c1", _meta={"b": 3})), 2)
    # v1 replaces _meta whole; for a v2 editor (which patches) the lost key is set to null
    assert updates(out) == [{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "_meta": {"a": None, "b": 3}}]
    assert conv.editor.store.get("s1", "c1")["_meta"] == {"b": 3}
    same = upd(sessionUpdate="tool_call_update", toolCallId="c1", _meta={"b": 3})
    assert conv.send("agent", same)[0] is same  # a patch changing nothing passes as it is
    # a v1 _meta key whose value is null: v2 cannot hold it (a patch removes such a key)
    data = upd(sessionUpdate="tool_call_update", toolCallId="c1", _meta={"b": 3, "n": None})
    assert conv.send("agent", data)[0] is data  # read as a v2 patch it leaves {"b": 3}: the same
    assert conv.editor.store.get("s1", "c1")["_meta"] == {"b": 3}
    strict_v2.from_agent(v1_tool_call(title="Edit"))
    refused(strict_v2, "agent", v1_tool_call(title="Edit", _meta={"n": None}), "the _meta key 'n' set to null")


# ---------------------------------------------------------------------------------------------
# capabilities, tool_call/cancel, terminal/cancel


def test_capabilities_are_left_out_for_v1(v1_editor: Bridge, strict_v1: Bridge) -> None:
    out = valid(v1_editor.from_agent(tcu(title="Run", capabilities={"cancel": {}})), 1)
    assert "capabilities" not in updates(out)[0]
    assert v1_editor.store.get("s1", "c1")["capabilities"] == {"cancel": {}}
    cleared = tcu(capabilities=None)
    assert valid(v1_editor.from_agent(cleared), 1)[0] is cleared  # nothing the v1 editor holds changes
    refused(strict_v1, "agent", tcu(title="Run", capabilities={"cancel": {}}), "capabilities cancel")
    for n, caps in enumerate(({}, {"cancel": None, "_meta": {"k": 1}}, None)):
        assert strict_v1.from_agent(tcu(f"c{n + 2}", title="Run", capabilities=caps))  # they advertise nothing


@pytest.mark.parametrize(
    ("method", "params", "pattern"),
    [
        ("tool_call/cancel", {"sessionId": "s1", "toolCallId": "c1"}, "the tool call 'c1' is not cancellable"),
        ("terminal/cancel", {"sessionId": "s1", "terminalId": "t1"}, "the terminal 't1' is unknown"),
    ],
)
def test_cancel_methods_are_answered_for_a_v1_agent(
    v2_editor: Bridge, strict_v2: Bridge, method: str, params: Dict[str, Any], pattern: str
) -> None:
    v2_editor.from_agent(v1_tool_call(title="Run"))
    assert v2_editor.from_editor(req(8, method, params)) == []  # nothing for the agent
    [reply] = v2_editor.replies("editor")
    answer = acp_fast.loads(reply)
    assert answer["id"] == 8 and answer["error"]["code"] == -32602  # what a v2 agent answers
    assert pattern in answer["error"]["message"]
    assert v2_editor.replies("editor") == [] and v2_editor.replies("agent") == []  # taken once
    assert v2_editor.from_agent(res(8, {})) == [res(8, {})]  # an answer to it is nobody's: it passes
    refused(strict_v2, "editor", req(8, method, params), f'the method "{method}"')
    assert strict_v2.replies("editor") == []


def test_replies_side_is_checked(v1_editor: Bridge) -> None:
    with pytest.raises(ValueError, match="expected side to be 'agent' or 'editor'"):
        v1_editor.replies("client")


# ---------------------------------------------------------------------------------------------
# session content (subagents)

SESSION = {"type": "session", "sessionId": "child-1"}


def v1_init(**caps: Any) -> bytes:
    return req(
        0, "initialize", {"protocolVersion": 1, "clientCapabilities": caps, "clientInfo": {"name": "z", "version": "1"}}
    )


def test_session_content_needs_subagents(v1_editor: Bridge, strict_v1: Bridge) -> None:
    for bridge in (v1_editor, strict_v1):
        bridge.from_editor(v1_init())
        bridge.from_agent(tcu(title="Delegate"))
    out = valid(v1_editor.from_agent(tcu(content=[text("a"), SESSION])), 1)
    assert updates(out)[0]["content"] == [text("a")]  # left out
    refused(strict_v1, "agent", tcu(content=[SESSION]), "a session reference")
    refused(strict_v1, "agent", chunk("c1", SESSION), "a session reference")
    announce = upd(sessionUpdate="subagent_update", sessionId="child-1")
    assert v1_editor.from_agent(announce) == []
    refused(strict_v1, "agent", announce, 'the session update "subagent_update"')


def test_session_content_for_an_editor_with_subagents(v1_editor: Bridge, strict_v1: Bridge) -> None:
    for bridge in (v1_editor, strict_v1):
        [sent] = bridge.from_editor(v1_init(subagents={}))
        assert "subagents" not in acp_fast.loads(sent)["params"]["capabilities"]  # v2: no capability needed
        bridge.from_agent(tcu(title="Delegate"))
    announce = upd(sessionUpdate="subagent_update", sessionId="child-1", cwd="/w")
    assert v1_editor.from_agent(announce)[0] is announce and strict_v1.from_agent(announce)[0] is announce
    out = valid(v1_editor.from_agent(chunk("c1", SESSION)), 1)
    assert updates(out)[0]["content"] == [SESSION]
    assert updates(valid(strict_v1.from_agent(tcu(content=[SESSION])), 1))[0]["content"] == [SESSION]
    for kind, extra in (
        ("session_message", {"messageId": "m1"}),
        ("session_message_chunk", {"messageId": "m1", "content": {"type": "text", "text": "x"}}),
    ):
        data = upd(sessionUpdate=kind, **extra)
        assert v1_editor.from_agent(data)[0] is data


def test_v1_session_content_reaches_a_v2_editor(v2_editor: Bridge, strict_v2: Bridge) -> None:
    data = v1_tool_call(title="Delegate", content=[SESSION])
    out = valid(v2_editor.from_agent(data), 2)
    assert updates(out)[0]["content"] == [SESSION]
    assert strict_v2.from_agent(data)


# ---------------------------------------------------------------------------------------------
# structured diffs


def test_created_file_becomes_a_v1_diff(v1_editor: Bridge, strict_v1: Bridge) -> None:
    patch = (
        "diff --git /w/new.py /w/new.py\nnew file mode 100644\n--- /dev/null\n+++ /w/new.py\n@@ -0,0 +1,2 @@\n+a\n+b\n"
    )
    item = {"type": "diff", "changes": [{"operation": "add", "path": "/w/new.py"}], "patch": {"format": "git_patch", "text": patch}, "_meta": {"m": 1}}  # fmt: skip
    for bridge in (v1_editor, strict_v1):
        bridge.from_agent(tcu(title="Write"))
    out = valid(v1_editor.from_agent(tcu(content=[item])), 1)
    assert updates(out)[0]["content"] == [{"type": "diff", "path": "/w/new.py", "newText": "a\nb\n", "_meta": {"m": 1}}]
    assert strict_v1.from_agent(tcu(content=[item]))  # exact: strict accepts it


@pytest.mark.parametrize(
    "item",
    [
        {  # a modification: the patch holds a hunk, not the file
            "type": "diff",
            "changes": [{"operation": "modify", "path": "/w/a.py"}],
            "patch": {
                "format": "git_patch",
                "text": "diff --git /w/a.py /w/a.py\n--- /w/a.py\n+++ /w/a.py\n@@ -3 +3 @@\n-x\n+y\n",
            },
        },
        {"type": "diff", "changes": [{"operation": "add", "path": "/w/b.png", "fileType": "binary"}]},
        {"type": "diff", "changes": [{"operation": "add", "path": "/w/c.py"}]},  # no patch: no text
        {"type": "diff", "changes": [{"operation": "delete", "path": "/w/d.py"}], "patch": None},
    ],
    ids=["modify", "binary", "no-patch", "delete"],
)
def test_structured_diff_without_texts(v1_editor: Bridge, strict_v1: Bridge, item: Dict[str, Any]) -> None:
    for bridge in (v1_editor, strict_v1):
        bridge.from_agent(tcu(title="Edit"))
    [shown] = updates(valid(v1_editor.from_agent(tcu(content=[item])), 1))[0]["content"]
    assert shown["type"] == "content" and shown["content"]["type"] == "text"
    assert shown["content"]["text"] == (item.get("patch") or {}).get("text") or shown["content"]["text"].startswith(
        item["changes"][0]["operation"]
    )
    refused(strict_v1, "agent", tcu(content=[item]), "a v2 diff")


@pytest.mark.parametrize(
    "text_",
    [
        "diff --git /w/a /w/a\nnew file mode 100644\n--- /dev/null\n+++ /w/a\n@@ -0,0 +1,2 @@\n+a\n",  # count
        "diff --git /w/a /w/a\n--- /dev/null\n+++ /w/b\n@@ -0,0 +1 @@\n+a\n",  # another path
        "diff --git /w/a /w/a\n--- /dev/null\n+++ /w/a\n@@ -0,0 +1 @@\n+a\n@@ -5 +5 @@\n+b\n",  # two hunks
        "diff --git /w/a /w/a\n--- /dev/null\n+++ /w/a\n@@ -0,0 +1 @@\n+a\ndiff --git /w/z /w/z\n",  # two files
        "diff --git a/w/a b/w/a\n--- /dev/null\n+++ b/w/a\n@@ -0,0 +1 @@\n+a\n",  # git's relative paths
        "diff --git /w/a /w/a\n--- /dev/null\n+++ /w/a\n@@ -0,0 +1 @@\n+a",  # a cut line
        "diff --git /w/a /w/a\n",  # nothing says it is new
    ],
)
def test_v2_diff_to_v1_needs_a_whole_created_file(text_: str) -> None:
    item = {
        "type": "diff",
        "changes": [{"operation": "add", "path": "/w/a"}],
        "patch": {"format": "git_patch", "text": text_},
    }
    assert v2_diff_to_v1(item) is None


def test_v2_diff_to_v1_git_forms() -> None:
    def add(path: str, patch: str) -> Optional[Dict[str, Any]]:
        return v2_diff_to_v1(
            {
                "type": "diff",
                "changes": [{"operation": "add", "path": path}],
                "patch": {"format": "git_patch", "text": patch},
            }
        )

    # git writes "+1" for a one-line hunk, no ---/+++ lines for an empty file
    assert add("/w/a", "diff --git /w/a /w/a\nnew file mode 100644\nindex 0000000..7898192\n--- /dev/null\n+++ /w/a\n@@ -0,0 +1 @@\n+a\n") == {"type": "diff", "path": "/w/a", "newText": "a\n"}  # fmt: skip
    assert add("/w/e", "diff --git /w/e /w/e\nnew file mode 100644\nindex 0000000..e69de29\n") == {"type": "diff", "path": "/w/e", "newText": ""}  # fmt: skip
    assert git_patch("/w/my file", None, "x").startswith("diff --git /w/my file /w/my file\n")
    assert "+++ /w/my file\t\n" in git_patch("/w/my file", None, "x")  # git's tab after a name with a space
    assert git_patch('/w/q"\u00e9', "a", "b").startswith('diff --git "/w/q\\"\\303\\251" "/w/q\\"\\303\\251"\n')


@given(
    path=st.sampled_from(["/w/a.py", "/w/my file.txt", '/w/"q"', "/w/\u00e9t\u00e9", "/w/tab\there"]),
    new=st.text(st.sampled_from("ab\n\r\t\u00e9\\+- "), max_size=30),
)
def test_a_created_file_goes_round(path: str, new: str) -> None:
    v2 = v1_diff_to_v2({"type": "diff", "path": path, "newText": new})
    assert v2 is not None and not v2["patch"]["text"].startswith("diff --git a/")  # absolute, no prefix
    assert v2_diff_to_v1(v2) == {"type": "diff", "path": path, "newText": new}


# ---------------------------------------------------------------------------------------------
# the prompt's response, both ways


def test_v2_error_stop_reason_is_the_v1_prompts_error(v1_editor: Bridge, strict_v1: Bridge) -> None:
    error = {"code": -32099, "message": "Provider unavailable", "data": {"status": 503}}
    for bridge in (v1_editor, strict_v1):
        bridge.from_editor(prompt(7))
        assert bridge.from_agent(res(7, {"messageId": "u1"})) == []
        out = bridge.from_agent(upd(sessionUpdate="state_update", state="idle", stopReason="error", error=error))
        assert only(out) == {"jsonrpc": "2.0", "id": 7, "error": error}
        assert bridge.from_agent(upd(sessionUpdate="state_update", state="idle")) == []  # nothing pending


@pytest.mark.parametrize("details", [None, "failed", {"message": "missing code"}, {"code": True, "message": "x"}])
def test_v2_error_stop_reason_without_details(v1_editor: Bridge, details: Any) -> None:
    v1_editor.from_editor(prompt(7))
    extra = {} if details is None else {"error": details}
    out = v1_editor.from_agent(upd(sessionUpdate="state_update", state="idle", stopReason="error", **extra))
    assert error_of(out)["code"] == -32603 and "no details" in error_of(out)["message"]
    assert v1_editor.from_agent(res(7, {"messageId": "u1"})) == []  # the late acknowledgement


def test_v2_echo_of_the_prompt_is_not_shown_twice(v1_editor: Bridge, strict_v1: Bridge) -> None:
    hi = [{"type": "text", "text": "hi"}]
    for bridge in (v1_editor, strict_v1):
        bridge.from_editor(prompt(1))
        # the echo may come before the acknowledgement (the crate: "may arrive before or after")
        assert bridge.from_agent(upd(sessionUpdate="user_message", messageId="u1", content=hi)) == []
        assert bridge.from_agent(res(1, {"messageId": "u1"})) == []
        echo_chunk = upd(sessionUpdate="user_message_chunk", messageId="u1", content={"type": "text", "text": "!"})
        assert bridge.from_agent(echo_chunk) == []
        bridge.from_agent(upd(sessionUpdate="state_update", state="idle", stopReason="end_turn"))
        bridge.from_editor(prompt(2))
        assert bridge.from_agent(res(2, {"messageId": "u2"})) == []
        assert bridge.from_agent(upd(sessionUpdate="user_message", messageId="u2", content=hi)) == []  # after it
    # another user message (a replay, a message of the agent's own) is shown
    out = valid(v1_editor.from_agent(upd(sessionUpdate="user_message", messageId="u3", content=hi)), 1)
    assert updates(out) == [{"sessionUpdate": "user_message_chunk", "content": hi[0], "messageId": "u3"}]


def test_v1_prompt_gets_a_message_id_and_its_echo(v2_editor: Bridge, backend: Any) -> None:
    conv = Conversation(v2_editor, backend)
    blocks = [{"type": "text", "text": "hi"}, {"type": "resource_link", "uri": "file:///a", "name": "a"}]
    conv.send("editor", req(4, "session/prompt", {"sessionId": "s1", "prompt": blocks}))
    out = conv.send("agent", res(4, {"stopReason": "refusal"}))
    assert [acp_fast.loads(f).get("result") for f in out[:1]] == [{"messageId": "acp-fast-message-1"}]
    assert updates(valid(out[1:], 2)) == [
        {"sessionUpdate": "user_message", "messageId": "acp-fast-message-1", "content": blocks},
        {"sessionUpdate": "state_update", "state": "idle", "stopReason": "refusal"},
    ]


# ---------------------------------------------------------------------------------------------
# a permission's subject.toolCall


def ask(rid: Any, call: Dict[str, Any]) -> bytes:
    options = [{"optionId": "y", "name": "Yes", "kind": "allow_once"}]
    params = {
        "sessionId": "s1",
        "title": "Run it?",
        "subject": {"type": "tool_call", "toolCall": call},
        "options": options,
    }
    return req(rid, "session/request_permission", params)


def test_permission_subject_is_a_tool_call_first(v1_editor: Bridge, strict_v1: Bridge) -> None:
    out = valid(
        v1_editor.from_agent(ask(3, {"toolCallId": "c5", "kind": "execute", "capabilities": {"cancel": {}}})), 1
    )
    assert len(out) == 2
    assert updates(out[:1]) == [
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "c5",
            "title": "",
            "kind": "execute",
            "status": "pending",
            "content": [],
            "locations": [],
        }
    ]
    assert acp_fast.loads(out[1])["params"]["toolCall"] == {"toolCallId": "c5", "kind": "execute"}
    refused(strict_v1, "agent", ask(3, {"toolCallId": "c5", "kind": "execute"}), "first reported without a title")
    strict_v1.from_agent(tcu("c6", title="Run it?"))
    refused(strict_v1, "agent", ask(4, {"toolCallId": "c6", "capabilities": {"cancel": {}}}), "capabilities cancel")
    # a subject changing a tool call the editor knows: the changes ride in the request
    out = v1_editor.from_agent(ask(5, {"toolCallId": "c5", "status": "paused", "_meta": {"k": 1}}))
    assert len(out) == 1
    assert acp_fast.loads(out[0])["params"]["toolCall"] == {
        "toolCallId": "c5",
        "status": "in_progress",
        "_meta": {"k": 1},
    }


# ---------------------------------------------------------------------------------------------
# a v1 agent's fs/* and terminal/* for a v2 editor

CLIENT_METHODS = [
    ("fs/read_text_file", {"sessionId": "s1", "path": "/a", "line": 1, "limit": 2}),
    ("fs/write_text_file", {"sessionId": "s1", "path": "/a", "content": "x"}),
    ("terminal/create", {"sessionId": "s1", "command": "ls"}),
    ("terminal/output", {"sessionId": "s1", "terminalId": "t"}),
    ("terminal/wait_for_exit", {"sessionId": "s1", "terminalId": "t"}),
    ("terminal/kill", {"sessionId": "s1", "terminalId": "t"}),
    ("terminal/release", {"sessionId": "s1", "terminalId": "t"}),
]


@pytest.mark.parametrize(("method", "params"), CLIENT_METHODS)
def test_v1_client_methods_are_answered_not_forwarded(
    v2_editor: Bridge, strict_v2: Bridge, method: str, params: Dict[str, Any]
) -> None:
    assert v2_editor.from_agent(req("r1", method, params)) == []
    [reply] = v2_editor.replies("agent")
    answer = acp_fast.loads(reply)
    assert answer["id"] == "r1"
    assert answer["error"]["code"] == -32601 and answer["error"]["data"] == {"method": method}
    assert answer["error"]["message"].startswith(f"Method not found: {method} (the editor speaks ACP v2")
    assert v2_editor.replies("editor") == []
    # a stray notification of it: nothing to answer, nothing forwarded
    assert v2_editor.from_agent(frame({"jsonrpc": "2.0", "method": method, "params": params})) == []
    assert v2_editor.replies("agent") == []
    refused(strict_v2, "agent", req("r1", method, params), f'the method "{method}"')
    assert strict_v2.replies("agent") == []


def test_v1_client_methods_in_a_batch(v2_editor: Bridge) -> None:
    batch = b"[" + req(1, "fs/read_text_file", {"sessionId": "s1", "path": "/a"})[:-1] + b"," + upd(sessionUpdate="usage_update", used=1, size=2)[:-1] + b"]\n"  # fmt: skip
    assert v2_editor.from_agent(batch) == [upd(sessionUpdate="usage_update", used=1, size=2)]
    assert error_of(v2_editor.replies("agent"))["code"] == -32601
