"""`acp-fast connect URL` against the ACP Python SDK's own network server (docs/NETWORK.md): the
SDK's ASGI application (`acp.http.asgi.create_asgi_app`, its `AcpServer` and WebSocket handler)
under uvicorn, with an agent written with the SDK (tests/peers/sdk_agent.py). A scripted editor
drives a whole prompt turn, with a tool call and a permission request, through `acp-fast connect`
over Streamable HTTP and over WebSocket: the lines the editor reads are the frames the SDK server
sent, byte for byte, and connect's recording of the turn is the one `acp-fast proxy --record`
writes for the same editor lines and the same agent over stdio, times and header aside. Both
backends (connect gets `ACP_FAST_BACKEND`).

Needs the SDK's network transports (agent-client-protocol 1.0 pre-releases with the `http` extra)
and uvicorn; CI runs the `test_sdk_*` files on every tested SDK release (.ci/sdk-versions); on one
without them (0.12.1) this file is skipped, saying which SDK it needs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

try:
    import acp.http.asgi  # noqa: F401
    import uvicorn  # noqa: F401
    import websockets  # noqa: F401  (uvicorn's WebSocket protocol; the SDK's `http` extra brings it)
except ImportError:  # SDK 0.12.1, or no `http` extra, or no uvicorn
    pytest.skip(
        "needs the network server of the ACP Python SDK (acp.http.asgi: agent-client-protocol[http] 1.0 "
        "pre-releases, e.g. 1.0.0rc3, with websockets) and uvicorn; .ci/sdk-versions runs this file there",
        allow_module_level=True,
    )

from net_helpers import PY, TIMEOUT, Editor, check_turn, normalised, stdio_recording

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

PEERS = Path(__file__).resolve().parent / "peers"


@pytest.fixture
def sdk_server(tmp_path: Path) -> Iterator[tuple]:
    """The SDK's ASGI application under uvicorn: (its http:// URL, the file of the frames it sent)."""
    frames = tmp_path / "frames.txt"
    proc = subprocess.Popen(
        [PY, str(PEERS / "sdk_http_agent.py"), str(frames)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        assert line.startswith("listening "), proc.stderr.read().decode() if proc.stderr else line
        yield f"http://127.0.0.1:{int(line.split()[1])}/acp", frames
    finally:
        proc.terminate()
        proc.wait(TIMEOUT)


@pytest.mark.parametrize("scheme", ["http", "ws"])
def test_a_prompt_turn_through_connect_to_the_sdk_server(backend_id, scheme, sdk_server, tmp_path):
    url, frames = sdk_server
    if scheme == "ws":
        url = "ws" + url[4:]
    editor = Editor(url, "--record", str(tmp_path / "connect.jsonl"), backend_id=backend_id)
    seen = editor.turn()
    assert editor.close() == 0, editor.proc.stderr.read().decode() if editor.proc.stderr else ""
    check_turn(seen)
    permission = next(m for m in seen if m.get("method") == "session/request_permission")
    assert permission["params"]["toolCall"]["toolCallId"] == "call-1"
    updates = [m["params"]["update"] for m in seen if m.get("method") == "session/update"]
    assert {"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "completed"} in updates
    # byte for byte: the editor read the frames the SDK server sent, in their order
    assert [line.rstrip(b"\n") for line in editor.lines] == frames.read_bytes().splitlines()
    # the stdio equivalent: the same editor lines to the same SDK agent through `acp-fast proxy`
    recorded = tmp_path / "connect.jsonl"
    raw = [
        line[line.index(b'"frame":') + 8 : -1]
        for line in recorded.read_bytes().splitlines()
        if b'"from":"editor"' in line[:40] and b'"frame":' in line
    ]
    assert len(raw) == 4  # initialize, session/new, session/prompt, the permission's answer
    stdio = stdio_recording(tmp_path, backend_id, raw, agent=[PY, str(PEERS / "sdk_agent.py")])
    assert normalised(recorded)[1:] == normalised(stdio)[1:]
    assert normalised(recorded)[0]["argv"] == [url]
    assert json.loads(raw[0])["method"] == "initialize"
