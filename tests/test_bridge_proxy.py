"""``acp-fast proxy --bridge EDITOR:AGENT`` (docs/BRIDGE.md, docs/PROXY.md): the real ACP Python
SDK 0.12.1 (a v1 client) served end to end by ``acp-fast demo-agent --protocol 2`` behind
``--bridge 1:2``, with the recording, the summary and the state written as without a bridge; and a
v2 editor (raw frames, each checked against the v2 schema) served by the v1 demo agent behind
``--bridge 2:1`` (the SDK's experimental v2 client through it: tests/test_sdk_bridge_v2.py, run on
SDK 1.0 by .ci/sdk-versions). Runs on both backends (the subprocesses get ``ACP_FAST_BACKEND``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any, Dict, List

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

import acp  # noqa: E402
from acp import schema as S  # noqa: E402
from acp.contrib.session_state import SessionAccumulator  # noqa: E402

from acp_fast.cli import _shapes  # noqa: E402
from bridge_checks import checker  # noqa: E402
from sdk_helpers import RecordingClient, run  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CLI = [sys.executable, "-m", "acp_fast.cli"]


def _env(backend_id: str) -> Dict[str, str]:
    return dict(os.environ, ACP_FAST_BACKEND=backend_id, PYTHONPATH=os.pathsep.join(sys.path))


class AllowingClient(RecordingClient):
    """Answers a permission request with its first ``allow_*`` option."""

    async def request_permission(self, **kwargs: Any) -> S.RequestPermissionResponse:
        self.calls.append(("request_permission", kwargs))
        option = next(o for o in kwargs["options"] if o.kind.startswith("allow"))
        return S.RequestPermissionResponse(outcome=S.AllowedOutcome(outcome="selected", option_id=option.option_id))


def test_bridge_option_is_checked() -> None:
    out = subprocess.run(
        [*CLI, "proxy", "--bridge", "1:3", "--", "true"], capture_output=True, text=True, timeout=60, env=_env("python")
    )
    assert out.returncode == 2
    assert "expected EDITOR:AGENT, each 1 or 2 (e.g. 1:2), found '1:3'" in out.stderr


async def _v1_sdk_session(backend_id: str, tmp: Path) -> Any:
    client = AllowingClient()
    proxy = [
        "-m",
        "acp_fast.cli",
        "proxy",
        "--bridge",
        "1:2",
        "--record",
        str(tmp / "rec.ndjson"),
        "--summary-json",
        str(tmp / "summary.json"),
        "--state-json",
        str(tmp / "state.json"),
        "--",
        *CLI,
        "demo-agent",
        "--protocol",
        "2",
    ]
    async with acp.spawn_agent_process(client, sys.executable, *proxy, env=_env(backend_id)) as (conn, _process):
        init = await conn.initialize(
            protocol_version=1,
            client_capabilities=S.ClientCapabilities(),
            client_info=S.Implementation(name="sdk-client", version="0.12.1"),
        )
        session = await conn.new_session(cwd="/work/demo", mcp_servers=[])
        done = await conn.prompt(session_id=session.session_id, prompt=[S.TextContentBlock(type="text", text="Fix it")])
    return client, init, session, done


def test_sdk_v1_client_through_bridge_to_v2_demo_agent(backend_id: str, tmp_path: Path) -> None:
    client, init, session, done = run(_v1_sdk_session(backend_id, tmp_path))
    assert init.protocol_version == 1
    assert init.agent_info is not None and init.agent_info.name == "acp-fast-demo-agent"
    assert done.stop_reason == "end_turn"  # the v2 agent's state_update idle, as the v1 prompt's answer

    accumulator = SessionAccumulator()
    for name, kwargs in client.calls:
        if name == "session_update":
            accumulator.apply(S.SessionNotification(session_id=kwargs["session_id"], update=kwargs["update"]))
    snapshot = accumulator.snapshot()
    calls = snapshot.tool_calls
    assert list(calls) == ["call_1_read", "call_1_edit", "call_1_run"]
    assert all(call.status == "completed" for call in calls.values())  # the edit was allowed
    read_text = "".join(item.content.text for item in calls["call_1_read"].content or ())
    assert read_text.startswith("# demo project\n")  # the v2 content chunks, accumulated
    run_text = calls["call_1_run"].content[0].content.text  # the agent-owned terminal, as text
    assert run_text.startswith("$ pytest -q\ntest_0 PASSED\n") and run_text.endswith("4 passed\n\n[exit code 0]")
    assert calls["call_1_edit"].content[0].content.text.startswith("diff --git")  # the v2 diff's patch
    assert [e.status for e in snapshot.plan_entries] == ["completed", "completed", "completed"]
    permissions = [kwargs for name, kwargs in client.calls if name == "request_permission"]
    assert len(permissions) == 1 and permissions[0]["tool_call"].tool_call_id == "call_1_edit"

    # the recording, summary and state describe the editor's side of the bridge (protocol v1)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == 0 and summary["tool_calls_by_status"] == {"completed": 3}
    assert summary["permissions_by_outcome"] == {"selected": 1}
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["negotiatedVersion"] == 1
    assert list(state["sessions"][session.session_id]["toolCalls"]) == list(calls)
    records = [json.loads(line) for line in (tmp_path / "rec.ndjson").read_text().splitlines()]
    sent = [r["frame"] for r in records if r.get("from") == "agent" and isinstance(r.get("frame"), dict)]
    kinds = {m["params"]["update"]["sessionUpdate"] for m in sent if m.get("method") == "session/update"}
    assert "tool_call" in kinds and not kinds & {"tool_call_content_chunk", "terminal_update", "state_update"}


def test_v2_editor_through_bridge_to_v1_demo_agent(backend_id: str) -> None:
    command = [*CLI, "proxy", "--bridge", "2:1", "--", *CLI, "demo-agent", "--protocol", "1"]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_env(backend_id))
    watchdog = threading.Timer(60, proc.kill)  # a hang fails the test instead of blocking the suite
    watchdog.start()
    assert proc.stdin is not None and proc.stdout is not None
    received: List[Dict[str, Any]] = []

    def send(message: Dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()

    def until(done: Any) -> Dict[str, Any]:
        """Read (answering permission requests with the first option) until ``done(message)``."""
        while True:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line, "the proxy closed its output"
            message = json.loads(line)
            received.append(message)
            if message.get("method") == "session/request_permission":
                outcome = {"outcome": "selected", "optionId": message["params"]["options"][0]["optionId"]}
                send({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}})
            elif done(message):
                return message

    def answer(rid: int) -> Any:
        return lambda message: message.get("id") == rid and "method" not in message

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": 2, "info": {"name": "ed", "version": "2"}},
            }
        )
        assert until(answer(1))["result"]["protocolVersion"] == 2
        send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/work/demo"}})
        sid = until(answer(2))["result"]["sessionId"]
        send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": sid, "prompt": []}})
        assert until(answer(3))["result"] == {"messageId": "acp-fast-message-1"}  # v2: the acknowledgement
        until(lambda message: message.get("params", {}).get("update", {}).get("state") == "idle")
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        watchdog.cancel()
    assert received[-1]["params"]["update"] == {
        "sessionUpdate": "state_update",
        "state": "idle",
        "stopReason": "end_turn",
    }
    proto = _shapes.protocol(2)
    for message in received:
        if "method" in message:
            info = proto.get(message["method"])
            assert info is not None and checker(2).check(info.params_def, message["params"], ("params",)) == []
    kinds = [m["params"]["update"]["sessionUpdate"] for m in received if m.get("method") == "session/update"]
    assert "plan_update" in kinds and "tool_call" not in kinds and "plan" not in kinds
    assert all(
        u.get("messageId")
        for m in received
        if m.get("method") == "session/update"
        for u in [m["params"]["update"]]
        if u["sessionUpdate"].endswith("_chunk")
    )


V1_AGENT_ASKING_FOR_A_FILE = r"""
import json, sys
answer_path = sys.argv[1]
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}})
        params = {"sessionId": "s1", "path": "/etc/hosts"}
        send({"jsonrpc": "2.0", "id": 100, "method": "fs/read_text_file", "params": params})
    elif m.get("id") == 100 and "method" not in m:
        with open(answer_path, "w") as f:
            json.dump(m, f)
"""


def test_v1_agent_client_methods_are_answered_by_the_bridge(backend_id: str, tmp_path: Path) -> None:
    # docs/BRIDGE.md: a v1 agent's fs/* and terminal/* have no form a v2 editor knows: the proxy
    # answers the agent itself (-32601) and the editor never sees them.
    answer = tmp_path / "answer.json"
    agent = [sys.executable, "-c", V1_AGENT_ASKING_FOR_A_FILE, str(answer)]
    command = [*CLI, "proxy", "--bridge", "2:1", "--record", str(tmp_path / "s.rec"), "--", *agent]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_env(backend_id))
    watchdog = threading.Timer(60, proc.kill)
    watchdog.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        init = {"protocolVersion": 2, "info": {"name": "ed", "version": "2"}}
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}).encode())
        proc.stdin.write(b"\n")
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())
        assert first["id"] == 1 and first["result"]["protocolVersion"] == 2
        for _ in range(600):
            if answer.exists() and answer.read_text():
                break
            threading.Event().wait(0.05)
        reply = json.loads(answer.read_text())
        assert reply["id"] == 100 and reply["error"]["code"] == -32601
        assert "fs/read_text_file" in reply["error"]["message"]
        proc.stdin.close()
        rest = proc.stdout.read()
        assert b"fs/read_text_file" not in rest  # the editor never saw the request
        assert proc.wait(30) == 0
    finally:
        watchdog.cancel()
        proc.kill()
    # the recording has the answer, as sent to the agent on the editor's behalf
    records = [json.loads(line) for line in (tmp_path / "s.rec").read_text().splitlines()[1:]]
    injected = [r for r in records if r.get("action") == "injected"]
    assert len(injected) == 1 and injected[0]["from"] == "editor"
