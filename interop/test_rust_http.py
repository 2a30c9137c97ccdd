"""`make interop`: the official ACP Rust SDK's HTTP/WebSocket transport
(`agent-client-protocol-http`, from crates.io) against acp-fast's network gateways.

Two small programs in interop/rust-http/, written with the Rust SDK and built by `make interop`:

* `acp-rust-http-client URL`: the SDK's client side over `HttpClient` drives one prompt turn
  (`initialize`, `session/new`, `session/prompt`, the first allow option for a permission request)
  and prints every frame its transport delivered, one JSON line each. Against
  `acp-fast serve --record DIR -- acp-fast demo-agent`, over HTTP/SSE and over WebSocket: the whole
  turn arrives, every agent frame the gateway recorded reached the Rust client in order, and the
  gateway's recording is the one `acp-fast proxy --record` writes for the same client lines over
  stdio, times aside.
* `acp-rust-http-server ADDR FRAMES`: a Rust SDK agent (message chunks, a tool call and its
  completion, one permission request, `end_turn`) served by `AcpHttpServer`, appending each frame
  it sends to FRAMES. A scripted editor drives a turn through `acp-fast connect URL --record R`:
  the editor reads the frames the Rust agent sent, in order, and R holds both sides.

The binaries' paths come from ACP_FAST_RUST_HTTP_CLIENT and ACP_FAST_RUST_HTTP_SERVER (`make
interop` sets them); without the binaries these tests are skipped, saying how to build them. The
gateways run on both backends (`ACP_FAST_BACKEND`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from net_helpers import TIMEOUT, Editor, Serve, normalised, stdio_recording  # noqa: E402

BUILT = ROOT / ".interop" / "rust-http-target" / "release"
CLIENT = os.environ.get("ACP_FAST_RUST_HTTP_CLIENT") or str(BUILT / "acp-rust-http-client")
SERVER = os.environ.get("ACP_FAST_RUST_HTTP_SERVER") or str(BUILT / "acp-rust-http-server")
BUILD = (
    "`make interop` builds it (cargo build --release --manifest-path interop/rust-http/Cargo.toml "
    "--target-dir .interop/rust-http-target)"
)
BACKENDS = pytest.mark.parametrize("backend_id", ["rust", "python"])


def _need(binary: str) -> None:
    if not os.access(binary, os.X_OK):
        pytest.skip(f"{binary} is not built: {BUILD}")


def _kinds(messages: List[Dict[str, Any]]) -> List[str]:
    return [m["params"]["update"]["sessionUpdate"] for m in messages if m.get("method") == "session/update"]


def _editor_frames(recording: Path) -> List[bytes]:
    """The editor's frames in a recording, as the bytes it sent."""
    return [
        line[line.index(b'"frame":') + 8 : -1]
        for line in recording.read_bytes().splitlines()
        if b'"from":"editor"' in line[:40] and b'"frame":' in line
    ]


@BACKENDS
@pytest.mark.parametrize("scheme", ["http", "ws"])
def test_the_rust_client_drives_a_turn_through_serve(backend_id: str, scheme: str, tmp_path: Path) -> None:
    _need(CLIENT)
    (tmp_path / "rec").mkdir()
    with Serve("--record", str(tmp_path / "rec"), backend_id=backend_id) as gw:
        url = gw.url if scheme == "http" else gw.ws_url
        run = subprocess.run([CLIENT, url], capture_output=True, timeout=TIMEOUT)
        assert run.returncode == 0, run.stderr.decode()
        gw.wait_for("ended (")
        assert gw.stop() == 0
    received = [json.loads(line) for line in run.stdout.splitlines()]
    # the whole turn of the demo agent reached the Rust client
    kinds = _kinds(received)
    for expected in ("agent_thought_chunk", "plan", "tool_call", "tool_call_update", "agent_message_chunk"):
        assert expected in kinds, kinds
    (permission,) = [m for m in received if m.get("method") == "session/request_permission"]
    assert permission["params"]["toolCall"]["toolCallId"] == "call_1_edit"
    assert received[-1]["result"] == {"stopReason": "end_turn"}
    # every agent frame the gateway recorded reached the Rust client, in order, and nothing else
    (path,) = (tmp_path / "rec").glob("*.jsonl")
    records = normalised(path)
    assert [r["frame"] for r in records if r.get("from") == "agent" and "frame" in r] == received
    sent = [r["frame"] for r in records if r.get("from") == "editor" and "frame" in r]
    assert [m.get("method") for m in sent] == ["initialize", "session/new", "session/prompt", None]
    assert sent[-1]["result"] == {"outcome": {"outcome": "selected", "optionId": "allow"}}
    # the same client lines through the stdio proxy: the same recording
    raw = _editor_frames(path)
    assert [json.loads(line) for line in raw] == sent
    assert normalised(path) == normalised(stdio_recording(tmp_path, backend_id, raw, prompt_id=sent[2]["id"]))


@pytest.fixture
def rust_server(tmp_path: Path) -> Iterator[Tuple[str, Path]]:
    """The Rust SDK agent under `AcpHttpServer`: (its http:// URL, the file of the frames it sent)."""
    _need(SERVER)
    frames = tmp_path / "frames.jsonl"
    proc = subprocess.Popen([SERVER, "127.0.0.1:0", str(frames)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        assert line.startswith("listening on http://"), proc.stderr.read().decode() if proc.stderr else line
        yield line.split()[-1], frames
    finally:
        proc.terminate()
        proc.wait(TIMEOUT)


@BACKENDS
@pytest.mark.parametrize("scheme", ["http", "ws"])
def test_connect_drives_a_turn_of_the_rust_server(
    backend_id: str, scheme: str, rust_server: Tuple[str, Path], tmp_path: Path
) -> None:
    url, frames = rust_server
    if scheme == "ws":
        url = "ws" + url[4:]
    recorded = tmp_path / "connect.jsonl"
    editor = Editor(url, "--record", str(recorded), backend_id=backend_id)
    seen = editor.turn()
    assert editor.close() == 0, editor.proc.stderr.read().decode() if editor.proc.stderr else ""
    # the turn the Rust agent plays
    assert _kinds(seen) == ["agent_message_chunk"] * 3 + ["tool_call", "tool_call_update", "agent_message_chunk"]
    updates = [m["params"]["update"] for m in seen if m.get("method") == "session/update"]
    assert updates[4] == {"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "completed"}
    assert updates[5]["content"] == {"type": "text", "text": "Chose allow."}
    (permission,) = [m for m in seen if m.get("method") == "session/request_permission"]
    assert [o["optionId"] for o in permission["params"]["options"]] == ["allow", "reject"]
    assert seen[-1] == {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}
    # every frame the Rust agent sent reached the editor, in order, byte for byte
    assert [line.rstrip(b"\n") for line in editor.lines] == frames.read_bytes().splitlines()
    sent = [json.loads(line) for line in frames.read_bytes().splitlines()]
    assert len(sent) == 2 + len(seen)  # and the answers to initialize and session/new, before the turn
    # connect's recording holds both sides: the editor's four frames and every agent frame
    records = normalised(recorded)
    assert records[0]["argv"] == [url]
    editor_frames = [r["frame"] for r in records if r.get("from") == "editor" and "frame" in r]
    assert [m.get("method") for m in editor_frames] == ["initialize", "session/new", "session/prompt", None]
    assert [r["frame"] for r in records if r.get("from") == "agent" and "frame" in r] == sent
