"""``acp-fast demo-agent`` as a real subprocess over real pipes: driven by the official ACP SDK
client (v1), and by a scripted client for both protocol versions. Everything the agent writes
must be valid against the official schema of its version (checked with ``acp-fast validate
--schema`` and directly with jsonschema), on both backends."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
from typing import Any, Dict, List, Optional, Tuple

import pytest

import acp_fast
from acp_fast import recording
from acp_fast.cli import _shapes
from acp_fast.cli import inspect as inspector

PY = sys.executable
AGENT = [PY, "-m", "acp_fast.cli", "demo-agent"]


class Driver:
    """A scripted client: writes frames to the agent, reads its frames (with a timeout), and keeps
    the whole conversation as a proxy recording would."""

    def __init__(self, *options: str, backend_id: str = "rust"):
        env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
        self.proc = subprocess.Popen(
            [*AGENT, *options], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self.lines: queue.Queue[Optional[bytes]] = queue.Queue()
        self.transcript: List[Tuple[str, bytes]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, frame: Any) -> None:
        data = frame if isinstance(frame, bytes) else acp_fast.dumps(frame) + b"\n"
        self.transcript.append(("editor", data))
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def recv(self) -> Dict[str, Any]:
        line = self.lines.get(timeout=30)
        assert line is not None, "the agent closed its stdout"
        self.transcript.append(("agent", line))
        return json.loads(line)

    def until(self, predicate) -> List[Dict[str, Any]]:
        seen = []
        while True:
            msg = self.recv()
            seen.append(msg)
            if predicate(msg):
                return seen

    def close(self) -> int:
        self.proc.stdin.close()
        rest = self.lines.get(timeout=30)
        while rest is not None:
            self.transcript.append(("agent", rest))
            rest = self.lines.get(timeout=30)
        return self.proc.wait(timeout=30)

    def recording(self) -> bytes:
        import io

        out = io.BytesIO()
        writer = recording.RecordWriter(out, ["acp-fast", "demo-agent"], "test")
        for i, (side, line) in enumerate(self.transcript):
            writer.line(side, line.rstrip(b"\n"), True, 1.0 + i)
        writer.exit(self.proc.returncode or 0)
        return out.getvalue()


def initialize(d: Driver, version: int) -> Dict[str, Any]:
    params: Dict[str, Any] = {"protocolVersion": version}
    params.update({"clientCapabilities": {}} if version == 1 else {"info": {"name": "driver", "version": "1"}})
    d.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    return d.recv()


def new_session(d: Driver, request_id: int = 1) -> str:
    d.send({"jsonrpc": "2.0", "id": request_id, "method": "session/new", "params": {"cwd": "/repo", "mcpServers": []}})
    return d.recv()["result"]["sessionId"]


def prompt(d: Driver, sid: str, request_id: int = 2) -> None:
    d.send(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "fix it"}]},
        }
    )


def turn_over(version: int, request_id: int = 2):
    if version == 1:
        return lambda m: m.get("id") == request_id and "result" in m
    return lambda m: (m.get("params") or {}).get("update", {}).get("state") == "idle"


def updates(messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [m["params"]["update"] for m in messages if m.get("method") == "session/update"]


def full_turn(
    version: int, answer: str = "allow", *options: str, backend_id: str = "rust"
) -> Tuple[Driver, List[Dict[str, Any]]]:
    """initialize, session/new, one prompt whose permission request gets ``answer``."""
    d = Driver("--protocol", str(version), *options, backend_id=backend_id)
    init = initialize(d, version)
    assert init["result"]["protocolVersion"] == version
    sid = new_session(d)
    prompt(d, sid)
    seen = d.until(lambda m: m.get("method") == "session/request_permission")
    request = seen[-1]
    if answer == "error":
        d.send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32603, "message": "no UI"}})
    else:
        d.send(
            {"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": {"outcome": "selected", "optionId": answer}}}
        )
    seen += d.until(turn_over(version))
    assert d.close() == 0
    return d, seen


# --------------------------------------------------------------------------------------------
# the official SDK client drives the agent (v1)
# --------------------------------------------------------------------------------------------


class SdkClient:
    def __init__(self, option: str):
        self.option = option
        self.updates: List[Any] = []
        self.permissions: List[Any] = []

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        from acp.schema import AllowedOutcome, RequestPermissionResponse

        self.permissions.append((session_id, tool_call, options))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.option))

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append((session_id, update))

    def on_connect(self, conn):
        pass


async def _sdk_session(option: str, backend_id: str):
    from acp import spawn_agent_process, text_block

    client = SdkClient(option)
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    async with spawn_agent_process(client, AGENT[0], *AGENT[1:], env=env) as (conn, process):
        init = await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd="/work/project", mcp_servers=[])
        result = await conn.prompt(session_id=session.session_id, prompt=[text_block("please fix the greeting")])
    return init, session, result, client


@pytest.mark.parametrize("option", ["allow", "reject"])
def test_official_sdk_client_drives_the_demo_agent(backend_id, option):
    init, session, result, client = asyncio.run(asyncio.wait_for(_sdk_session(option, backend_id), 60))
    assert init.protocol_version == 1
    assert init.agent_info.name == "acp-fast-demo-agent"
    assert session.session_id == "sess_1"
    assert result.stop_reason == "end_turn"
    # the permission request reached the client's handler, for the edit tool call
    ((sid, tool_call, options),) = client.permissions
    assert sid == "sess_1" and tool_call.tool_call_id == "call_1_edit"
    assert [o.option_id for o in options] == ["allow", "reject"]
    kinds = [u.session_update for _, u in client.updates]
    for expected in ("agent_thought_chunk", "plan", "tool_call", "tool_call_update", "agent_message_chunk"):
        assert expected in kinds
    # the edit carried a diff and ended completed (allowed) or failed (rejected)
    edit_start = next(
        u for _, u in client.updates if u.session_update == "tool_call" and u.tool_call_id == "call_1_edit"
    )
    assert edit_start.content[0].type == "diff" and edit_start.content[0].path == "/work/project/src/app.py"
    edit_end = [
        u for _, u in client.updates if u.session_update == "tool_call_update" and u.tool_call_id == "call_1_edit"
    ][-1]
    assert edit_end.status == ("completed" if option == "allow" else "failed")
    # the terminal tool call (v1: content is a terminal item)
    run = next(u for _, u in client.updates if u.session_update == "tool_call" and u.tool_call_id == "call_1_run")
    assert run.kind == "execute" and run.content[0].type == "terminal" and run.content[0].terminal_id == "term_1"
    text = "".join(u.content.text for _, u in client.updates if u.session_update == "agent_message_chunk")
    assert text.startswith("I read the README") and text.endswith(
        "Done." if option == "allow" else "Done, without the edit."
    )


# --------------------------------------------------------------------------------------------
# every frame valid against the official schema of its version
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_every_frame_validates_against_the_schema(tmp_path, backend_id, version):
    d, seen = full_turn(version, "allow", "--chunks", "3", backend_id=backend_id)
    d2, _ = full_turn(version, "reject", backend_id=backend_id)
    # 1. the validator, on the recorded conversation (both directions, the schema, fixed version)
    for i, driver in enumerate((d, d2)):
        path = tmp_path / f"conv{i}.ndjson"
        path.write_bytes(driver.recording())
        done = subprocess.run(
            [PY, "-m", "acp_fast.cli", "validate", str(path), "--protocol", str(version)],
            capture_output=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stdout.decode()
        assert done.stdout.decode().endswith(": no problems\n")
    # 2. jsonschema directly: each agent frame against the schema's Agent message union
    from jsonschema import Draft202012Validator

    root = _shapes.load_schema(version)
    agent_message = Draft202012Validator({"$defs": root["$defs"], **root["anyOf"][0]})
    agent_frames = [json.loads(line) for side, line in d.transcript + d2.transcript if side == "agent"]
    assert len(agent_frames) > 20
    for frame in agent_frames:
        errors = list(agent_message.iter_errors(frame))
        assert not errors, (frame, errors[0].message[:300])


def test_v2_turn(backend_id):
    d, seen = full_turn(2, "allow", "--chunks", "2", backend_id=backend_id)
    ups = updates(seen)
    kinds = [u["sessionUpdate"] for u in ups]
    # v2: the prompt is acknowledged with the user message's id before the work, the message is
    # echoed, the turn ends with state_update idle
    assert seen[0] == {"jsonrpc": "2.0", "id": 2, "result": {"messageId": "msg_1_user"}}
    assert ups[0]["sessionUpdate"] == "user_message" and ups[0]["messageId"] == "msg_1_user"
    assert ups[0]["content"] and ups[0]["content"][0]["type"] == "text"
    assert kinds[1] == "state_update" and ups[1]["state"] == "running"
    assert ups[-1] == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
    for expected in (
        "tool_call_update",
        "tool_call_content_chunk",
        "terminal_update",
        "terminal_output_chunk",
        "plan_update",
    ):
        assert expected in kinds
    assert "tool_call" not in kinds and "plan" not in kinds
    chunks = [u for u in ups if u["sessionUpdate"] == "agent_message_chunk"]
    assert all(isinstance(u["messageId"], str) for u in chunks)
    output = b"".join(
        __import__("base64").b64decode(u["data"]) for u in ups if u["sessionUpdate"] == "terminal_output_chunk"
    )
    assert output == b"test_0 PASSED\ntest_1 PASSED\n2 passed\n"
    diff = next(u for u in ups if u.get("toolCallId") == "call_1_edit" and u.get("content"))["content"][0]
    assert diff["changes"] == [{"operation": "modify", "path": "/repo/src/app.py", "fileType": "text"}]
    assert diff["patch"]["format"] == "git_patch" and diff["patch"]["text"].startswith("diff --git a/repo/src/app.py")
    # the state the turn leaves, replayed through the state engine
    store = inspector.replay(d.recording())
    assert store.negotiated_version == 2
    assert {tc: r["status"] for tc, r in store.tool_calls("sess_1").items()} == {
        "call_1_read": "completed",
        "call_1_edit": "completed",
        "call_1_run": "completed",
    }
    assert store.terminal("sess_1", "term_1")["exitStatus"] == {"exitCode": 0}
    assert [e["status"] for e in store.plans("sess_1")["main"]["entries"]] == ["completed"] * 3
    assert store.permissions("sess_1")[0]["outcome"] == "selected"


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("answer", ["reject", "error"])
def test_rejected_permission_fails_the_edit(version, answer):
    d, seen = full_turn(version, answer)
    edits = [u for u in updates(seen) if u.get("toolCallId") == "call_1_edit"]
    assert edits[-1]["status"] == "failed"
    assert edits[-1]["content"][0]["content"]["text"].startswith("Not applied: ")
    end = seen[-1]
    assert (end["result"]["stopReason"] if version == 1 else end["params"]["update"]["stopReason"]) == "end_turn"


@pytest.mark.parametrize("version", [1, 2])
def test_session_cancel_during_the_permission_request(version, backend_id):
    d = Driver("--protocol", str(version), backend_id=backend_id)
    initialize(d, version)
    sid = new_session(d)
    prompt(d, sid)
    request = d.until(lambda m: m.get("method") == "session/request_permission")[-1]
    # the client cancels, then (as ACP requires) answers the pending request with "cancelled"
    d.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
    d.send({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": {"outcome": "cancelled"}}})
    seen = d.until(turn_over(version))
    ups = updates(seen)
    failed = [u for u in ups if u.get("status") == "failed"]
    assert [u["toolCallId"] for u in failed] == ["call_1_edit"]
    if version == 1:
        assert seen[-1] == {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "cancelled"}}
    else:
        assert ups[-1] == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}
    # no terminal work after the cancellation
    assert not any(u.get("toolCallId") == "call_1_run" for u in ups)
    # the agent still serves the session: a second prompt runs a full turn
    prompt(d, sid, request_id=3)
    request = d.until(lambda m: m.get("method") == "session/request_permission")[-1]
    assert request["params"]["sessionId"] == sid and request["id"] == 1
    d.send({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
    d.until(turn_over(version, 3))
    assert d.close() == 0


def test_cancel_with_delay_between_frames():
    # --delay paces the turn; a cancel sent during the pauses stops it at the next frame
    d = Driver("--delay", "0.05", "--chunks", "200", "--no-permission")
    initialize(d, 1)
    sid = new_session(d)
    prompt(d, sid)
    d.until(lambda m: (m.get("params") or {}).get("update", {}).get("sessionUpdate") == "agent_message_chunk")
    d.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
    seen = d.until(turn_over(1))
    assert seen[-1]["result"] == {"stopReason": "cancelled"}
    chunks = [u for u in updates(d_all(d)) if u["sessionUpdate"] == "agent_message_chunk"]
    assert len(chunks) < 200
    assert d.close() == 0


def d_all(d: Driver) -> List[Dict[str, Any]]:
    return [json.loads(line) for side, line in d.transcript if side == "agent"]


def test_errors_and_unknown_methods(backend_id):
    d = Driver(backend_id=backend_id)
    d.send(b"hello, not json\n")
    assert d.recv() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "expected a JSON value, found 'h'"},
    }
    d.send(b'{"id":5}\n')
    err = d.recv()
    assert err["id"] is None and err["error"]["code"] == -32600
    d.send(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "session/load",
            "params": {"sessionId": "x", "cwd": "/", "mcpServers": []},
        }
    )
    assert d.recv() == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32601, "message": "Method not found: session/load"},
    }
    d.send({"jsonrpc": "2.0", "id": "p", "method": "session/prompt", "params": {"sessionId": "nope", "prompt": []}})
    assert d.recv()["error"]["code"] == -32602
    d.send({"jsonrpc": "2.0", "method": "_unknown/notification", "params": {}})  # ignored
    d.send({"jsonrpc": "2.0", "id": 8, "method": "_acme/ext"})
    assert d.recv()["error"]["code"] == -32601
    assert d.close() == 0
    assert d.proc.stderr.read() == b""


def test_batch_of_requests_answered_in_one_array():
    d = Driver("--protocol", "2")
    d.send(
        b'[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}},'
        b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"none"}},'
        b'{"jsonrpc":"2.0","id":2,"method":"nope"}]\n'
    )
    reply = d.recv()
    assert isinstance(reply, list) and [r["id"] for r in reply] == [1, 2]
    assert reply[0]["result"]["protocolVersion"] == 2 and reply[1]["error"]["code"] == -32601
    assert d.close() == 0


def test_chunks_option_makes_longer_streams():
    _, short = full_turn(1, "allow", "--chunks", "1")
    _, long = full_turn(1, "allow", "--chunks", "40")
    count = lambda seen: sum(1 for u in updates(seen) if u["sessionUpdate"] == "agent_message_chunk")  # noqa: E731
    assert count(short) == 1 + 1  # N message chunks + the closing one
    assert count(long) == 40 + 1
    assert len(long) > len(short) + 38


def test_stdin_closed_mid_turn_exits_cleanly():
    d = Driver()
    initialize(d, 1)
    sid = new_session(d)
    prompt(d, sid)
    d.until(lambda m: m.get("method") == "session/request_permission")
    assert d.close() == 0  # no answer will come: the agent stops instead of waiting forever


def test_usage_errors():
    for bad in (["--protocol", "3"], ["--chunks", "0"], ["--delay", "-1"]):
        done = subprocess.run([*AGENT, *bad], capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
        assert done.returncode == 2, bad
    helped = subprocess.run([*AGENT, "--help"], capture_output=True, timeout=30)
    assert helped.returncode == 0 and b"--chunks" in helped.stdout


# -- at a terminal (issue 32) ------------------------------------------------------------------


class TerminalDriver(Driver):
    """The agent as ``acp-fast proxy`` run at a terminal starts it: frames over pipes, its
    stderr a terminal (a pseudo-terminal whose output this driver collects)."""

    def __init__(self, *options: str, backend_id: str = "rust"):
        import pty

        leader, follower = pty.openpty()
        env = dict(os.environ, ACP_FAST_BACKEND=backend_id, TERM="dumb")
        self.proc = subprocess.Popen(
            [*AGENT, *options], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=follower, env=env
        )
        os.close(follower)
        self.leader = leader
        self.terminal = bytearray()
        self.lines = queue.Queue()
        self.transcript = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_terminal, daemon=True).start()

    def _read_terminal(self) -> None:
        while True:
            try:
                chunk = os.read(self.leader, 4096)
            except OSError:  # EIO: the agent is gone
                return
            if not chunk:
                return
            self.terminal += chunk

    def terminal_text(self, containing: str, timeout: float = 30.0) -> str:
        import time

        deadline = time.monotonic() + timeout
        while containing not in self.terminal.decode(errors="replace") and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.terminal.decode(errors="replace").replace("\r\n", "\n")


@pytest.mark.parametrize("version", [1, 2])
def test_at_a_terminal_the_agent_says_how_to_answer_its_permission_request(backend_id, version):
    d = TerminalDriver("--protocol", str(version), backend_id=backend_id)
    initialize(d, version)
    prompt(d, new_session(d))
    request = d.until(lambda m: m.get("method") == "session/request_permission")[-1]
    text = d.terminal_text("reject:")
    assert f"permission request {request['id']}; paste one line:" in text
    lines = {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip() for line in text.splitlines()[1:3]}
    assert set(lines) == {"allow", "reject"}
    # the line shown, pasted as is, answers the request and the edit is applied
    d.send(lines["allow"].encode() + b"\n")
    seen = d.until(turn_over(version))
    edit = [u for u in updates(seen) if u.get("toolCallId") == "call_1_edit" and u.get("status")]
    assert edit[-1]["status"] == "completed"
    assert d.close() == 0
    os.close(d.leader)


def test_without_a_terminal_the_agent_prints_nothing_on_stderr(backend_id):
    d, _ = full_turn(1, "allow", backend_id=backend_id)  # the permission request answered, stdin closed
    assert d.proc.stderr.read() == b""


def test_ctrl_c_ends_the_agent_without_a_traceback(backend_id):
    """Ctrl-C at ``acp-fast proxy -- acp-fast demo-agent`` reaches the agent too (SIGINT to the
    terminal's foreground job): status 130, nothing on stderr, even mid-turn."""
    import signal

    d = Driver(backend_id=backend_id)
    initialize(d, 1)
    prompt(d, new_session(d))
    d.until(lambda m: m.get("method") == "session/request_permission")  # waiting for the answer
    d.proc.send_signal(signal.SIGINT)
    assert d.proc.wait(timeout=30) == 130
    assert d.proc.stderr.read() == b""


def test_version_help_exits_0():
    done = subprocess.run([PY, "-m", "acp_fast.cli", "version", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("usage: acp-fast version"), done
