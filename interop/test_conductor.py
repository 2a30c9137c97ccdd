"""`make interop`: acp-fast in a chain of the official ACP conductor
(`agent-client-protocol-conductor`, from crates.io): a prompt turn of the demo agent through
`conductor agent "acp-fast proxy --chain --record R" "acp-fast demo-agent"` gives the editor what
the demo agent gives it directly, and acp-fast's recording holds both sides as without the
conductor. The conductor's own trace of it reads in `acp-fast validate`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
CONDUCTOR = os.environ.get("ACP_FAST_CONDUCTOR") or str(ROOT / ".interop" / "bin" / "agent-client-protocol-conductor")
DEMO = f"{PY} -m acp_fast.cli demo-agent --no-permission"
EDITOR = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}\n'
    b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}\n'
    b'{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"go"}]}}\n'
)


def _talk(cmd: List[str]) -> List[Dict[str, Any]]:
    """The editor's side of a prompt turn: the messages it receives until the prompt's answer."""
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdin is not None and p.stdout is not None
    received: List[Dict[str, Any]] = []
    for request in EDITOR.splitlines(keepends=True):
        p.stdin.write(request)
        p.stdin.flush()
        rid = json.loads(request)["id"]
        while True:
            line = p.stdout.readline()
            assert line, p.stderr.read() if p.stderr else b""
            received.append(json.loads(line))
            if received[-1].get("id") == rid and "method" not in received[-1]:
                break
    time.sleep(0.5)  # the conductor kills its components when it exits: records reach the file within 0.1 s
    p.stdin.close()
    p.wait(timeout=30)
    return received


def test_acp_fast_in_the_conductors_chain(tmp_path: Path) -> None:
    if not os.access(CONDUCTOR, os.X_OK):
        pytest.fail(
            f"{CONDUCTOR} is missing: `make interop` installs it (cargo install agent-client-protocol-conductor)"
        )
    rec, trace = tmp_path / "r.ndjson", tmp_path / "conductor.jsons"
    component = f"{PY} -m acp_fast.cli proxy --chain --record {rec}"
    direct = _talk(DEMO.split())
    chained = _talk([CONDUCTOR, "--trace", str(trace), "agent", component, DEMO])
    assert chained == direct  # the same messages, in the same order
    assert len(direct) > 10
    from acp_fast import recording

    records = [r for r in recording.read(rec.read_bytes()) if isinstance(r, recording.Record)]
    sent = [json.loads(r.data) for r in records if r.side == "editor"]
    assert [m.get("method") for m in sent] == ["initialize", "session/new", "session/prompt"]
    got = [json.loads(r.data) for r in records if r.side == "agent"]

    def unnumbered(messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        return [{k: v for k, v in m.items() if k != "id" or "method" in m} for m in messages]

    # what the demo agent sent, unwrapped, as the proxy saw it (the conductor numbers the
    # requests on its side of the chain: the answers' ids are its own)
    assert unnumbered(got) == unnumbered(direct)
    # the conductor's trace of the chain reads in acp-fast validate
    check = subprocess.run([PY, "-m", "acp_fast.cli", "validate", "--format", "json", str(trace)], capture_output=True)
    report = json.loads(check.stdout)
    assert report["format"] == "trace" and report["problemCount"] == 0, report["problems"][:5]
