"""`acp-fast proxy --chain` (docs/PROXY.md, "In a conductor's chain"): the component's stdio as
the ACP conductor drives it, played by the test: `_proxy/initialize` from upstream, the
component's `_proxy/successor` requests answered by "the conductor", the successor's own
requests and notifications arriving wrapped. The proxy's view (its recording) is an editor and
an agent as without the conductor. The real conductor runs the same in `make interop`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from acp_fast import recording

PY = sys.executable


class Component:
    """`acp-fast proxy --chain` with the test as its conductor."""

    def __init__(self, tmp: Path, backend_id: str, *options: str) -> None:
        self.rec = tmp / "r.ndjson"
        env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
        self.p = subprocess.Popen(
            [PY, "-m", "acp_fast.cli", "proxy", "--chain", "--record", str(self.rec), *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )

    def send(self, message: Dict[str, Any]) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(json.dumps(message).encode() + b"\n")
        self.p.stdin.flush()

    def receive(self) -> Dict[str, Any]:
        assert self.p.stdout is not None
        line = self.p.stdout.readline()
        assert line, self.p.stderr.read() if self.p.stderr else b""
        value: Dict[str, Any] = json.loads(line)
        return value

    def close(self) -> int:
        assert self.p.stdin is not None
        self.p.stdin.close()
        return self.p.wait(timeout=30)


@pytest.mark.parametrize("ns", ["", "_"], ids=["released", "underscored"])
def test_a_session_through_the_chain(tmp_path: Path, backend_id: str, ns: str) -> None:
    """The conductor's released names (`proxy/...`) and its newer sources' (`_proxy/...`)."""
    c = Component(tmp_path, backend_id)
    # upstream initializes the component as a proxy: it initializes its successor first
    c.send({"jsonrpc": "2.0", "id": 0, "method": f"{ns}proxy/initialize", "params": {"protocolVersion": 1}})
    wrapped = c.receive()
    assert wrapped["method"] == f"{ns}proxy/successor" and isinstance(wrapped["id"], str)
    assert wrapped["params"] == {"method": "initialize", "params": {"protocolVersion": 1}}
    result = {"protocolVersion": 1, "agentCapabilities": {"loadSession": False}, "authMethods": []}
    c.send({"jsonrpc": "2.0", "id": wrapped["id"], "result": result})
    assert c.receive() == {"jsonrpc": "2.0", "id": 0, "result": result}
    # session/new, the same way
    c.send({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/r", "mcpServers": []}})
    wrapped = c.receive()
    assert wrapped["params"]["method"] == "session/new"
    c.send({"jsonrpc": "2.0", "id": wrapped["id"], "result": {"sessionId": "s1"}})
    assert c.receive() == {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}}
    # a prompt; the successor streams a tool call and asks permission, wrapped by the conductor
    c.send({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
            "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "go"}]}})  # fmt: skip
    prompt = c.receive()
    assert prompt["params"]["method"] == "session/prompt"
    update = {"sessionId": "s1", "update": {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "ls",
                                             "kind": "execute", "status": "pending"}}  # fmt: skip
    c.send(
        {"jsonrpc": "2.0", "method": f"{ns}proxy/successor", "params": {"method": "session/update", "params": update}}
    )
    assert c.receive() == {"jsonrpc": "2.0", "method": "session/update", "params": update}
    ask = {"sessionId": "s1", "toolCall": {"toolCallId": "t1"},
           "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]}  # fmt: skip
    c.send({"jsonrpc": "2.0", "id": 77, "method": f"{ns}proxy/successor",
            "params": {"method": "session/request_permission", "params": ask}})  # fmt: skip
    asked = c.receive()
    assert asked["method"] == "session/request_permission" and asked["params"] == ask
    assert isinstance(asked["id"], str) and asked["id"] != 77
    outcome = {"outcome": {"outcome": "selected", "optionId": "ok"}}
    c.send({"jsonrpc": "2.0", "id": asked["id"], "result": outcome})
    assert c.receive() == {"jsonrpc": "2.0", "id": 77, "result": outcome}
    done = {
        "sessionId": "s1",
        "update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"},
    }
    c.send({"jsonrpc": "2.0", "method": f"{ns}proxy/successor", "params": {"method": "session/update", "params": done}})
    assert c.receive()["params"] == done
    c.send({"jsonrpc": "2.0", "id": prompt["id"], "error": {"code": -32000, "message": "no"}})
    assert c.receive() == {"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "no"}}
    assert c.close() == 0
    # the proxy saw an editor and an agent as without the conductor: its recording says so
    records = [r for r in recording.read(c.rec.read_bytes()) if isinstance(r, recording.Record)]
    seen = [(r.side, json.loads(r.data).get("method"), json.loads(r.data).get("id")) for r in records]
    assert seen[:2] == [("editor", "initialize", 0), ("agent", None, 0)]
    assert ("agent", "session/request_permission", asked["id"]) in seen
    assert ("editor", None, asked["id"]) in seen
    assert seen[-1] == ("agent", None, 2)
    assert all(r.action is None for r in records)


def test_chain_takes_no_agent_command(tmp_path: Path) -> None:
    done = subprocess.run([PY, "-m", "acp_fast.cli", "proxy", "--chain", "--", "cat"], capture_output=True, timeout=30)
    assert done.returncode == 2 and b"--chain takes no agent command" in done.stderr


def test_lines_that_are_not_json_rpc_go_to_the_editor_side(tmp_path: Path, backend_id: str) -> None:
    """Upstream's garbage reaches the proxy's editor side, whose rules apply (forwarded to the
    successor as it is: the proxy passes invalid editor lines by default)."""
    c = Component(tmp_path, backend_id)
    assert c.p.stdin is not None and c.p.stdout is not None
    c.p.stdin.write(b"not json\n")
    c.p.stdin.flush()
    assert c.p.stdout.readline() == b"not json\n"
    assert c.close() == 0


def test_unknown_answers_pass_as_they_are(tmp_path: Path, backend_id: str) -> None:
    c = Component(tmp_path, backend_id)
    answer = {"jsonrpc": "2.0", "id": "nobody-asked", "result": {}}
    c.send(answer)  # an answer the component never asked for: the editor side's, passed on
    got: List[Dict[str, Any]] = [c.receive()]
    assert got == [answer]
    assert c.close() == 0
