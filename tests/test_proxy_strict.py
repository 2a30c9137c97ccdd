"""``acp-fast proxy --strict-schema`` through whole sessions negotiated by ``initialize``
(docs/PROXY.md): a v2 and a v1 session with ``acp-fast demo-agent``, and the same across
``--bridge 2:1`` and ``--bridge 1:2``, on both backends. The check follows the negotiation (the
``initialize`` answer is checked in the conversation that saw the request), so the editor gets
every answer and nothing is refused; a frame the schema refuses is still answered with -32602."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest

CLI = [sys.executable, "-m", "acp_fast.cli"]


def _env(backend_id: str) -> Dict[str, str]:
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id, PYTHONPATH=os.pathsep.join(sys.path))
    env.pop("ACP_FAST_PROXY_RELAY", None)
    return env


class Editor:
    """A scripted editor speaking to ``acp-fast proxy`` over pipes."""

    def __init__(self, command: List[str], env: Dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self.watchdog = threading.Timer(60, self.proc.kill)  # a hang fails the test instead of blocking
        self.watchdog.start()
        self.received: List[Dict[str, Any]] = []

    def send(self, message: Dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def until(self, done: Callable[[Dict[str, Any]], bool]) -> Dict[str, Any]:
        """Read (answering permission requests with their first option) until ``done(message)``."""
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, f"the proxy closed its output; received {self.received}"
            message = json.loads(line)
            self.received.append(message)
            if message.get("method") == "session/request_permission":
                outcome = {"outcome": "selected", "optionId": message["params"]["options"][0]["optionId"]}
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}})
            elif done(message):
                return message

    def answer(self, rid: Any) -> Dict[str, Any]:
        return self.until(lambda m: m.get("id") == rid and "method" not in m)

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        stderr = self.proc.stderr.read().decode()
        self.proc.wait(timeout=60)
        self.watchdog.cancel()
        return stderr


def _session(editor: Editor, version: int, bad_frame: bool = False) -> Optional[Dict[str, Any]]:
    """initialize, session/new, session/prompt to the end of the turn, in ``version``; with
    ``bad_frame``, also a session/new the schema refuses (its answer is returned)."""
    if version == 2:
        init = {"protocolVersion": 2, "info": {"name": "ed", "version": "2"}}
        new: Dict[str, Any] = {"cwd": "/work/demo"}
    else:
        init = {"protocolVersion": 1, "clientCapabilities": {}}
        new = {"cwd": "/work/demo", "mcpServers": []}
    editor.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
    assert editor.answer(1)["result"]["protocolVersion"] == version
    refused = None
    if bad_frame:
        editor.send({"jsonrpc": "2.0", "id": 9, "method": "session/new", "params": {**new, "cwd": 5}})
        refused = editor.answer(9)
    editor.send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": new})
    sid = editor.answer(2)["result"]["sessionId"]
    editor.send(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]},
        }
    )
    done = editor.answer(3)["result"]
    if version == 2:
        # v2: an acknowledgement naming the user message; the turn ends with the idle state
        assert "stopReason" not in done and isinstance(done["messageId"], str)
        end = editor.until(lambda m: m.get("params", {}).get("update", {}).get("state") == "idle")
        assert end["params"]["update"] == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
    else:
        assert done == {"stopReason": "end_turn"}
    return refused


@pytest.mark.parametrize(
    "editor_version, agent_version, options",
    [(2, 2, []), (1, 1, []), (2, 1, ["--bridge", "2:1"]), (1, 2, ["--bridge", "1:2"])],
    ids=["v2", "v1", "bridge-2-1", "bridge-1-2"],
)
def test_strict_schema_sessions_negotiated_by_initialize(
    backend_id: str, editor_version: int, agent_version: int, options: List[str], tmp_path: Path
) -> None:
    summary = tmp_path / "summary.json"
    command = [
        *CLI,
        "proxy",
        "--strict-schema",
        *options,
        "--summary-json",
        str(summary),
        "--",
        *CLI,
        "demo-agent",
        "--protocol",
        str(agent_version),
    ]
    editor = Editor(command, _env(backend_id))
    try:
        refused = _session(editor, editor_version, bad_frame=True)
    finally:
        stderr = editor.close()
    assert editor.proc.returncode == 0, stderr
    # the refused frame: answered by the proxy with -32602, not forwarded; nothing else refused
    assert refused is not None and refused["error"]["code"] == -32602
    assert refused["error"]["message"].startswith('expected "params.cwd" to be string')
    assert refused["error"]["data"]["line"] == 2
    lines = [line for line in stderr.splitlines() if line.startswith("acp-fast proxy:")]
    assert len(lines) == 1 and lines[0].startswith("acp-fast proxy: editor line 2: "), stderr
    report = json.loads(summary.read_text())
    assert report["editor_to_agent"]["answered"] == 1 and report["editor_to_agent"]["invalid"] == 1
    assert report["agent_to_editor"]["invalid"] == 0
    assert report["tool_calls"] == 3


def test_strict_schema_refuses_an_agent_frame_after_a_v2_negotiation(backend_id: str, tmp_path: Path) -> None:
    # An agent that negotiates v2 by initialize, then sends a v1 message chunk (no messageId, which
    # v2 requires): refused under the v2 schema and diverted (--agent-invalid's default); the
    # frames before and after it reach the editor.
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import json, sys\n"
        "def out(m):\n"
        "    sys.stdout.write(json.dumps(m) + '\\n'); sys.stdout.flush()\n"
        "request = json.loads(sys.stdin.readline())\n"
        "out({'jsonrpc': '2.0', 'id': request['id'], 'result': {'protocolVersion': 2,"
        " 'info': {'name': 'a', 'version': '1'}, 'capabilities': {}, 'authMethods': []}})\n"
        "out({'jsonrpc': '2.0', 'method': 'session/update', 'params': {'sessionId': 's',"
        " 'update': {'sessionUpdate': 'tool_call', 'toolCallId': 'c1', 'title': 'Read', 'status': 'pending'}}})\n"
        "out({'jsonrpc': '2.0', 'method': 'session/update', 'params': {'sessionId': 's',"
        " 'update': {'sessionUpdate': 'agent_message_chunk', 'content': {'type': 'text', 'text': 'v1'}}}})\n"
        "out({'jsonrpc': '2.0', 'method': 'session/update', 'params': {'sessionId': 's',"
        " 'update': {'sessionUpdate': 'tool_call_update', 'toolCallId': 'c1', 'status': 'completed'}}})\n"
    )
    command = [*CLI, "proxy", "--strict-schema", "--", sys.executable, str(agent)]
    editor = Editor(command, _env(backend_id))
    try:
        editor.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": 2, "info": {"name": "ed", "version": "2"}},
            }
        )
        assert editor.answer(1)["result"]["protocolVersion"] == 2
        editor.until(lambda m: m.get("params", {}).get("update", {}).get("sessionUpdate") == "tool_call_update")
    finally:
        stderr = editor.close()
    kinds = [m.get("params", {}).get("update", {}).get("sessionUpdate") for m in editor.received]
    assert kinds == [None, "tool_call", "tool_call_update"]
    diverted = (
        '{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": '
        '{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "v1"}}}}'
    )
    assert stderr.splitlines() == [diverted]  # as it came


@pytest.mark.parametrize("options", [[], ["--answer-cancelled-permissions"]], ids=["plain", "middleware"])
def test_a_batch_under_v2_is_answered_with_one_error(backend_id: str, options: List[str]) -> None:
    """v2 has no batches: with ``--strict`` the proxy answers an editor's batch, once v2 is
    negotiated, with one -32600 error of id null, as the official SDKs do, and forwards nothing of
    it; the session goes on (with a middleware too)."""
    command = [*CLI, "proxy", "--strict", *options, "--", *CLI, "demo-agent", "--protocol", "2"]
    editor = Editor(command, _env(backend_id))
    try:
        init = {"protocolVersion": 2, "info": {"name": "ed", "version": "2"}}
        editor.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert editor.answer(1)["result"]["protocolVersion"] == 2
        editor.send([{"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/w"}}])
        error = editor.answer(None)
        assert error["error"]["code"] == -32600
        assert error["error"]["message"].startswith("expected one message, found a batch (protocol v2 has no batches)")
        editor.send({"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {"cwd": "/w"}})
        assert editor.answer(3)["result"]["sessionId"]
        assert not any(m.get("id") == 2 for m in editor.received)
    finally:
        stderr = editor.close()
    assert "(answered with an error, not forwarded)" in stderr
