"""``acp-fast inspect`` and :func:`acp_fast.cli.inspect.replay`: a recording or stream replayed
through the state engine gives the state the proxy held live; the real command's report."""

from __future__ import annotations

import io
import json
import os
import queue
import random
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Dict, Optional

import pytest

import acp_fast
from acp_fast import builders as B
from acp_fast import recording, traffic
from acp_fast.cli import inspect as inspector

PY = sys.executable


@pytest.fixture
def codec(backend, monkeypatch):
    """Run in-process code on the given backend: acp_fast's codec names point at it."""
    for name in ("FrameDecoder", "decode", "loads", "dumps", "encode", "ToolCallStore", "Message", "BACKEND"):
        monkeypatch.setattr(acp_fast, name, getattr(backend, name))
    return backend


def inspect(*args: str, backend_id: str = "rust", stdin: Optional[bytes] = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    return subprocess.run(
        [PY, "-m", "acp_fast.cli", "inspect", *args], input=stdin, capture_output=True, env=env, timeout=60
    )


def write_recording(records, exit_status: Optional[int] = 0) -> bytes:
    """A recording written with the proxy's own writer: records are (side, line, action)."""
    out = io.BytesIO()
    writer = recording.RecordWriter(out, ["acp-fast", "demo-agent"], "test")
    for i, (side, line, action) in enumerate(records):
        line = line.rstrip(b"\n")
        try:
            acp_fast.loads(line)
            is_json = True
        except acp_fast.DecodeError:
            is_json = False
        writer.line(side, line, is_json, 100.0 + i, action=action)
    if exit_status is not None:
        writer.exit(exit_status)
    return out.getvalue()


# --------------------------------------------------------------------------------------------
# a real proxy session with the demo agent: the recording and the proxy's live state
# --------------------------------------------------------------------------------------------


def proxy_session(tmp: Path, version: int, answer: str = "allow") -> Dict[str, Path]:
    """Run ``acp-fast proxy --record --state-json -- acp-fast demo-agent`` and drive it as an
    editor: initialize, session/new, a prompt whose permission request gets ``answer``, a stray
    line, then a second prompt."""
    rec, state = tmp / f"v{version}.rec", tmp / f"v{version}.state.json"
    cmd = [
        PY,
        "-m",
        "acp_fast.cli",
        "proxy",
        "--quiet",
        "--record",
        str(rec),
        "--state-json",
        str(state),
        "--",
        PY,
        "-m",
        "acp_fast.cli",
        "demo-agent",
        "--protocol",
        str(version),
        "--chunks",
        "3",
    ]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: queue.Queue[Optional[bytes]] = queue.Queue()
    threading.Thread(target=lambda: ([lines.put(x) for x in proc.stdout], lines.put(None)), daemon=True).start()

    def send(obj: Any) -> None:
        proc.stdin.write(obj if isinstance(obj, bytes) else acp_fast.dumps(obj) + b"\n")
        proc.stdin.flush()

    def until(pred) -> Dict[str, Any]:
        while True:
            line = lines.get(timeout=30)
            assert line is not None
            msg = json.loads(line)
            if pred(msg):
                return msg

    def turn(request_id: int, sid: str) -> None:
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]},
            }
        )
        req = until(lambda m: m.get("method") == "session/request_permission")
        send({"jsonrpc": "2.0", "id": req["id"], "result": {"outcome": {"outcome": "selected", "optionId": answer}}})
        if version == 1:
            until(lambda m: m.get("id") == request_id and "result" in m)
        else:
            until(lambda m: (m.get("params") or {}).get("update", {}).get("state") == "idle")

    info = {"clientCapabilities": {}} if version == 1 else {"info": {"name": "t", "version": "1"}}
    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": version, **info}})
    until(lambda m: m.get("id") == 0)
    send({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/repo", "mcpServers": []}})
    sid = until(lambda m: m.get("id") == 1)["result"]["sessionId"]
    turn(2, sid)
    send(b"a stray line from the editor\n")
    until(lambda m: "error" in m and m["id"] is None)
    turn(3, sid)
    proc.stdin.close()
    while lines.get(timeout=30) is not None:
        pass
    assert proc.wait(timeout=30) == 0, proc.stderr.read()
    return {"rec": rec, "state": state}


@pytest.fixture(scope="module")
def sessions(tmp_path_factory) -> Dict[int, Dict[str, Path]]:
    tmp = tmp_path_factory.mktemp("proxy")
    return {1: proxy_session(tmp, 1), 2: proxy_session(tmp, 2)}


@pytest.mark.parametrize("version", [1, 2])
def test_replay_gives_the_state_the_proxy_held_live(codec, sessions, version):
    paths = sessions[version]
    live = acp_fast.ToolCallStore.from_json(paths["state"].read_bytes())
    # the proxy's default bounds (inspect keeps every session by default)
    replayed = inspector.replay(paths["rec"], max_tool_calls=1000, max_sessions=1000)
    assert replayed.state() == live.state()
    assert replayed.negotiated_version == version
    # the same from the bytes, and as the proxy's own recording reader replays it
    bounds = {"max_tool_calls": 1000, "max_sessions": 1000}
    assert inspector.replay(paths["rec"].read_bytes(), **bounds).state() == live.state()
    by_reader = acp_fast.ToolCallStore(max_tool_calls=1000)
    for r in recording.read(paths["rec"].read_bytes()):
        if isinstance(r, recording.Record) and r.is_json:
            by_reader.apply(r.data, source=r.source)
    assert by_reader.state() == live.state()
    # two turns: 6 tool calls, 2 permission requests granted
    assert len(replayed.tool_calls("sess_1")) == 6
    assert [p["outcome"] for p in replayed.permissions("sess_1")] == ["selected", "selected"]


def test_replay_result_counts(sessions):
    result = inspector.replay_file(sessions[2]["rec"])
    rec_lines = sessions[2]["rec"].read_bytes().count(b"\n")
    assert result.format == "recording" and result.lines == rec_lines
    assert result.frames == rec_lines - 3  # header, the stray line (text), footer
    assert result.exit_status == 0 and result.header["acp-fast-recording"] == 1
    # the stray editor line is a JSON error, at its recording line
    (err,) = result.errors
    assert err.kind == "json" and err.message == "expected a JSON value, found 'a'"
    line = sessions[2]["rec"].read_bytes().split(b"\n")[err.line - 1]
    assert line[err.column - 1 :].startswith(b"a stray line")


# --------------------------------------------------------------------------------------------
# replay on its own
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["mixed", "v2"])
def test_replay_of_a_stream_equals_feeding_the_store(codec, profile):
    data = traffic.generate(profile, 1500, seed=4)
    direct = acp_fast.ToolCallStore(max_tool_calls=None, max_sessions=None)  # inspect keeps every tool call, session
    direct.feed(data)
    direct.finish()
    result = inspector.replay_file(data)
    assert result.store.state() == direct.state()
    assert (result.format, result.lines, result.frames, result.error_count) == ("ndjson", 1500, 1500, 0)
    # from a path and from a binary file too
    assert inspector.replay(io.BytesIO(data)).state() == direct.state()


def test_recording_frames_applied_with_their_side(codec):
    ask = B.request_permission(
        0, "s", {"toolCallId": "c", "title": "Edit"}, [B.permission_option("y", "Yes", "allow_once")]
    )
    answer = B.permission_response(0, "y")
    # an agent-side response with the same id must not resolve the request (source="agent")
    rec = write_recording([("agent", ask, None), ("agent", answer, None)])
    store = inspector.replay(rec)
    assert store.permission(0)["outcome"] == "pending"
    rec = write_recording([("agent", ask, None), ("editor", answer, None)])
    store = inspector.replay(rec)
    assert store.permission(0)["outcome"] == "selected" and store.permission(0)["approved"] is True
    # a plain stream has no sides: the response resolves it
    assert inspector.replay(ask + answer).permission(0)["outcome"] == "selected"


def test_forwarded_only_skips_what_the_proxy_did_not_forward(codec):
    rec = write_recording(
        [
            ("agent", B.tool_call("s", "c1", "Kept"), None),
            ("agent", B.tool_call("s", "c2", "Dropped"), "dropped"),
            ("agent", b"print('debug')", "diverted"),
        ]
    )
    everything = inspector.replay_file(rec)
    assert list(everything.store.tool_calls("s")) == ["c1", "c2"]
    assert everything.error_count == 1  # the diverted non-JSON line
    forwarded = inspector.replay_file(rec, forwarded_only=True)
    assert list(forwarded.store.tool_calls("s")) == ["c1"]
    assert (forwarded.skipped, forwarded.error_count) == (2, 0)


def test_errors_counted_listed_and_the_replay_goes_on(codec):
    data = (
        B.tool_call("s", "c1", "One")
        + b"garbage\n"
        + b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update"}}}\n'
        + b"\xff\xfe\n"
        + b'[{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c2","title":"Two"}}}, 5]\n'
        + B.tool_call_update("s", "c1", status="completed")
    )
    result = inspector.replay_file(data, max_errors=3)
    assert result.error_count == 4 and len(result.errors) == 3
    assert [(e.line, e.kind, e.code) for e in result.errors] == [
        (2, "json", -32700),
        (3, "state", -32602),
        (4, "json", -32700),
    ]
    assert result.errors[1].message == 'expected "params.update.toolCallId" to be a string, found none'
    assert result.errors[1].column == data.split(b"\n")[2].index(b'{"sessionUpdate"') + 1
    assert result.errors_by_kind == {"json": 2, "state": 1, "jsonrpc": 1}
    store = result.store
    assert store.get("s", "c1")["status"] == "completed" and store.get("s", "c2")["title"] == "Two"


def test_content_summary():
    assert inspector.content_summary([]) == "-"
    assert inspector.content_summary(None) == "-"
    items = [B.diff_content("/r/a.py", "new", "old"), B.text_content("x" * 120)]
    assert inspector.content_summary(items) == "2 items: diff /r/a.py, text 120 chars"
    v2_diff = {
        "type": "diff",
        "changes": [{"operation": "add", "path": "/r/b"}, {"operation": "delete", "path": "/r/c"}],
    }
    many = [B.terminal_content("t1"), v2_diff, {"type": "_custom"}, B.text_content("z")]
    assert inspector.content_summary(many) == "4 items: terminal t1, diff 2 files, _custom, ..."
    link = {"type": "content", "content": {"type": "resource_link", "name": "n", "uri": "file:///r/x"}}
    assert inspector.content_summary([link]) == "1 item: link file:///r/x"


# --------------------------------------------------------------------------------------------
# the command
# --------------------------------------------------------------------------------------------


def test_text_report_v1(sessions, backend_id):
    done = inspect(str(sessions[1]["rec"]), backend_id=backend_id)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    path = sessions[1]["rec"]
    head, errors = out.splitlines()[:2]
    assert head.startswith(f"{path}: recording of `") and "demo-agent --protocol 1 --chunks 3`" in head
    assert head.endswith("protocol v1 (negotiated), agent exit status 0")
    assert errors == "errors: 1 (json 1)"
    assert "[json] expected a JSON value, found 'a'" in out
    assert "session sess_1: 6 tool calls, 2 permission requests, 1 plan, 0 terminals" in out
    table = out[out.index("  tool calls") :]
    rows = [line.split() for line in table.splitlines()[1:8]]
    assert rows[0] == ["ID", "TITLE", "KIND", "STATUS", "CONTENT"]
    assert rows[1][:6] == ["call_1_read", "Read", "README.md", "read", "completed", "1"]
    assert " ".join(rows[2]) == "call_1_edit Edit src/app.py edit completed 1 item: diff /repo/src/app.py"
    assert " ".join(rows[3]).startswith("call_1_run Run the tests execute completed 2 items: terminal term_1, text")
    assert (
        "permission requests\n    ID  TOOL CALL    OUTCOME   OPTION  APPROVED\n    0   call_1_edit  selected  allow   yes\n"
        in out
    )
    assert "  plan main (3 entries)\n    [completed] Read README.md (high)\n" in out


def test_text_report_v2_terminals(sessions, backend_id):
    out = inspect(str(sessions[2]["rec"]), backend_id=backend_id).stdout.decode()
    assert "session sess_1: 6 tool calls, 2 permission requests, 1 plan, 2 terminals" in out
    assert (
        "call_1_read  Read README.md   read     completed  5 items: text 15 chars, text 1 chars, text 44 chars, ..."
        in out
    )
    terminals = out[out.index("  terminals") :].splitlines()
    assert terminals[1].split() == ["ID", "COMMAND", "EXIT", "BYTES", "LAST", "LINE"]
    assert terminals[2].split() == ["term_1", "pytest", "-q", "exit", "0", "51", "3", "passed"]
    # v2 entities: the conversation by messageId, the session state
    entities = out[out.index("  entities (v2)") :].splitlines()
    assert entities[1].split() == ["TARGET", "COUNT", "LATEST"]
    assert entities[2].split() == ["userMessage", "2", "go"]
    assert entities[3].split() == ["agentMessage", "4", "Done."]
    assert entities[5].split() == ["state", "-", '{"state":"idle","stopReason":"end_turn"}']


def test_text_report_v1_client_terminals_and_files(backend_id):
    # a v1 agent runs a command in the client's terminal and reads / writes files through it
    path = Path(__file__).parent / "data" / "v1-client-methods.ndjson"
    close = [
        B.tool_call("s0", "c1", "Gone"),
        b'{"jsonrpc":"2.0","id":3,"method":"session/close","params":{"sessionId":"s0"}}\n',
        b'{"jsonrpc":"2.0","id":3,"result":{}}\n',
    ]
    done = inspect("-", stdin=b"".join(close) + path.read_bytes(), backend_id=backend_id)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert "closed: 1 session (session/close, session/delete), their state dropped\n" in out
    assert "session s0" not in out
    assert "session s1: 0 tool calls, 0 permission requests, 0 plans, 1 terminal, 2 file requests\n" in out
    terminals = out[out.index("  terminals") :].splitlines()
    assert terminals[2].split() == [
        "term-1",
        "pytest",
        "exit",
        "1,",
        "released",
        "32",
        "1",
        "failed,",
        "2",
        "passed",
        "in",
        "0.12s",
    ]
    files = out[out.index("  files") :].splitlines()
    assert files[1].split() == ["OP", "PATH", "LINES", "BYTES", "RESULT"]
    assert files[2].split() == ["read", "/w/src/main.py", "10+20", "32", "ok"]
    assert files[3].split() == ["write", "/w/src/main.py", "-", "-", "error:", "permission", "denied"]
    summary = json.loads(inspect("--json", str(path), backend_id=backend_id).stdout)["summary"]
    assert (summary["terminals"], summary["files"], summary["closedSessions"]) == (1, 2, 0)


def test_text_report_says_what_the_bounds_dropped(backend_id):
    data = [B.tool_call("a", "c1", "Big", content=[B.text_content("x")] * 1003), B.tool_call("b", "c2", "Whole")]
    for rid in range(1002):
        data += [B.request_permission(rid, "a", "c1", [B.permission_option("ok", "OK", "allow_once")])]
        data += [B.permission_response(rid, "ok")]
    data += [B.session_update("a", {"sessionUpdate": f"_custom_{i}"}) for i in range(3)]
    done = inspect("-", "--max-updates", "1", stdin=b"".join(data), backend_id=backend_id)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert (
        "session a: 1 tool call, 1000 permission requests, 0 plans, 0 terminals\n"
        "  dropped by the bounds: 2 permission requests, 2 unknown updates, 3 content items (1 tool call)\n"
    ) in out
    assert "session b: 1 tool call, 0 permission requests, 0 plans, 0 terminals\n  tool calls\n" in out
    assert out.count("dropped by the bounds") == 1


def test_truncation_line():
    assert inspector.truncation({"toolCalls": {}, "terminals": {}}) == ""
    session = {
        "toolCalls": {"c": {"_truncated": {"droppedItems": 1}}, "d": {}},
        "terminals": {"t": {"_truncated": {"droppedBytes": 4096}}, "u": {"_truncated": {"droppedBytes": 1}}},
        "_truncated": {
            "droppedTerminals": 1,
            "droppedPlans": 3,
            "droppedPermissions": 1,
            "droppedUpdates": 5,
            "droppedEntities": 2,
        },
    }
    assert inspector.truncation(session) == (
        "1 terminal, 3 plans, 1 permission request, 5 unknown updates, 2 entities, "
        "1 content item (1 tool call), 4097 output bytes (2 terminals)"
    )


def test_json_report(sessions, backend_id):
    done = inspect(str(sessions[2]["rec"]), "--json", backend_id=backend_id)
    assert done.returncode == 0
    report = json.loads(done.stdout)
    assert report["state"] == inspector.replay(sessions[2]["rec"]).state()
    assert report["format"] == "recording" and report["protocolVersion"] == 2 and report["exitStatus"] == 0
    summary = report["summary"]
    assert summary["sessions"] == 1 and summary["toolCalls"] == 6
    assert summary["toolCallsByStatus"] == {"completed": 6}
    assert summary["permissionsByOutcome"] == {"selected": 2}
    assert (summary["plans"], summary["terminals"], summary["errors"]) == (1, 2, 1)
    assert summary["entities"] == {"userMessage": 2, "agentMessage": 4, "agentThought": 2, "state": 1}
    assert report["errors"][0]["kind"] == "json"


def test_plain_stream_from_stdin_and_session_filter(backend_id):
    data = (
        B.tool_call("a", "c1", "In A")
        + B.tool_call("b", "c2", "In B")
        + B.plan("b", [B.plan_entry("step", status="in_progress")])
    )
    done = inspect("-", "--session", "b", stdin=data, backend_id=backend_id)
    out = done.stdout.decode()
    assert done.returncode == 0
    assert out.startswith("<stdin>: ndjson, 3 lines, 3 frames, protocol v1 (default)\nerrors: none\n")
    assert "session b: 1 tool call, 0 permission requests, 1 plan, 0 terminals" in out and "session a" not in out
    assert "    [in_progress] step (medium)" in out


def test_max_errors_and_garbage(tmp_path, backend_id):
    rng = random.Random(3)
    path = tmp_path / "g.bin"
    path.write_bytes(bytes(rng.randrange(256) for _ in range(50000)) + b"\n" + B.tool_call("s", "c", "After"))
    done = inspect(str(path), "--max-errors", "2", backend_id=backend_id)
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    out = done.stdout.decode()
    listed = [line for line in out.splitlines() if line.startswith(f"  {path}:")]
    assert len(listed) == 2 and "  ... " in out
    assert ["c", "After", "other", "pending", "-"] in [
        line.split() for line in out.splitlines()
    ]  # applied after the garbage
    assert inspect(str(path), "--json", backend_id=backend_id).returncode == 0


def test_progress_only_when_asked(tmp_path):
    path = tmp_path / "big.ndjson"
    path.write_bytes(traffic.generate("large", 300, seed=1))
    assert inspect(str(path)).stderr == b""
    shown = inspect(str(path), "--progress")
    assert shown.returncode == 0 and b"inspect " in shown.stderr and b"MiB" in shown.stderr


def test_usage_errors(tmp_path):
    assert inspect().returncode == 2
    missing = inspect(str(tmp_path / "nope"))
    assert missing.returncode == 2 and b"cannot read" in missing.stderr
    assert inspect(str(tmp_path), "--protocol", "9").returncode == 2
    assert inspect("-", "--max-tool-calls", "0", stdin=b"").returncode == 2
    helped = inspect("--help")
    assert helped.returncode == 0 and b"--json" in helped.stdout


def test_main_in_process(capsys, codec, tmp_path):
    path = tmp_path / "s.ndjson"
    path.write_bytes(B.tool_call("s", "c1", "Read", kind="read") + B.tool_call_update("s", "c1", status="failed"))
    assert inspector.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "    c1  Read   read  failed  -" in out
    from acp_fast.cli import main

    assert main(["inspect", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["toolCallsByStatus"] == {"failed": 1}


@pytest.mark.parametrize("backend_id", ["rust", "python"])
def test_values_nested_where_a_string_belongs_are_shown_in_short(backend_id: str, tmp_path: Path) -> None:
    """A tool call's status or a content item's type that is a list nested ~1,000 levels (which the
    state keeps as sent) is shown in short, in text and JSON, never a RecursionError."""
    deep: Any = "x"
    for _ in range(1000):
        deep = [deep]
    updates = [
        {"sessionUpdate": "tool_call", "toolCallId": "a", "title": "t", "status": deep},
        {"sessionUpdate": "tool_call", "toolCallId": "b", "title": "t", "content": [{"type": deep}]},
    ]
    path = tmp_path / "deep.ndjson"
    path.write_bytes(
        b"".join(
            acp_fast.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": u}})
            + b"\n"
            for u in updates
        )
    )
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    for extra in ([], ["--json"]):
        done = subprocess.run(
            [sys.executable, "-m", "acp_fast.cli", "inspect", *extra, str(path)],
            capture_output=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
        assert b"[[[[" in done.stdout and len(done.stdout) < 20_000
