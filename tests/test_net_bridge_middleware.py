"""`acp-fast serve` and `acp-fast connect` with `--bridge EDITOR:AGENT` and `--middleware
MODULE:FACTORY` (docs/NETWORK.md, "Per connection"): a v1 client over Streamable HTTP and over
WebSocket drives a whole prompt turn of the v2 demo agent behind `serve --bridge 1:2`, and a v1
editor drives it through `connect --bridge 1:2`; each connection's recording is the one `acp-fast
proxy --bridge 1:2 --record` writes for the same turn over stdio, and `--coalesce` combines with
the bridge as under the proxy; the frames the bridge refuses, either way, are diverted, answered
and recorded as the proxy does. A middleware that rewrites and drops frames has the effect it has
under the proxy, with one instance per connection. Usage errors exit 2 as the proxy's do."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Tuple

from net_helpers import (
    AGENT,
    INITIALIZE,
    NEW_SESSION,
    PY,
    ROOT,
    Editor,
    Serve,
    allow,
    check_turn,
    env,
    http_turn,
    normalised,
    prompt,
    stdio_recording,
    ws_turn,
)

V2_AGENT = [*AGENT, "--protocol", "2"]

#: A middleware module: each instance rewrites the agent's message chunks to name itself (its
#: number, from 1 in each process) and drops the plans.
MIDDLEWARE = """
import itertools

from acp_fast.proxy import Drop

_made = itertools.count(1)


class Stamp:
    def __init__(self):
        self.number = next(_made)

    def __call__(self, message, sender, ctx):
        if sender == "agent" and message.method == "session/update":
            update = message.params["update"]
            if update["sessionUpdate"] == "agent_message_chunk":
                ctx.reason("stamped")
                text = {"type": "text", "text": f"instance {self.number}"}
                params = {"sessionId": message.params["sessionId"],
                          "update": {"sessionUpdate": "agent_message_chunk", "content": text}}
                return {"jsonrpc": "2.0", "method": "session/update", "params": params}
            if update["sessionUpdate"] == "plan":
                return Drop("no plans")
        return message


def make():
    return Stamp()


def broken():
    raise RuntimeError("no")
"""


def _module(tmp: Path) -> Dict[str, str]:
    """The middleware module in `tmp`, and the environment that finds it."""
    folder = tmp / "mods"
    folder.mkdir(exist_ok=True)
    (folder / "stamp_mw.py").write_text(MIDDLEWARE)
    return {"PYTHONPATH": os.pathsep.join([str(ROOT / "python"), str(folder)])}


def _lines(sid: str, seen: List[Any]) -> List[bytes]:
    permission = next(m for m in seen if m.get("method") == "session/request_permission")
    return [INITIALIZE, NEW_SESSION, prompt(sid), allow(permission["id"])]


def _updates(seen: List[Any], kind: str) -> List[Any]:
    return [
        m["params"]["update"]
        for m in seen
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == kind
    ]


# -- --bridge ------------------------------------------------------------------------------------


def test_serve_bridges_each_connection_as_the_proxy_does(backend_id, tmp_path):
    (tmp_path / "http").mkdir()
    (tmp_path / "ws").mkdir()
    record = ["--record", str(tmp_path / "{n}.jsonl")]
    with Serve("--bridge", "1:2", *record, backend_id=backend_id, agent=V2_AGENT) as gw:
        http = asyncio.run(http_turn(gw.url))
        gw.wait_for("connection 1 (")
        gw.wait_for("ended (the client ended")
        ws = asyncio.run(ws_turn(gw.ws_url))
        gw.wait_for("ended (the client closed the WebSocket")
        assert gw.stop() == 0
    http_seen = [m for _, m in http["seen"]]
    check_turn(http_seen)
    check_turn(ws["seen"])
    # the client got v1 frames: v1 plans and tool calls (the v2 agent sends plan_update)
    assert _updates(http_seen, "plan") and not _updates(http_seen, "plan_update")
    seen: List[Any] = []
    stdio = normalised(
        stdio_recording(tmp_path, backend_id, _lines(http["sid"], http_seen), V2_AGENT, ["--bridge", "1:2"], seen)
    )
    assert normalised(tmp_path / "1.jsonl") == stdio
    assert normalised(tmp_path / "2.jsonl") == stdio
    assert stdio[-1] == {"event": "exit", "status": 0}
    # the frames the client saw are the ones the proxy's editor saw, after initialize and session/new
    assert http_seen == seen[2:]
    assert ws["seen"] == seen[2:]


def test_serve_bridge_with_coalesce_as_the_proxy(backend_id, tmp_path):
    options = ["--bridge", "1:2", "--coalesce", "5000"]
    with Serve(*options, "--record", str(tmp_path / "{n}.jsonl"), backend_id=backend_id, agent=V2_AGENT) as gw:
        out = asyncio.run(ws_turn(gw.ws_url))
        gw.wait_for("ended (the client closed the WebSocket")
        assert gw.stop() == 0
    check_turn(out["seen"])
    seen: List[Any] = []
    stdio = normalised(stdio_recording(tmp_path, backend_id, _lines(out["sid"], out["seen"]), V2_AGENT, options, seen))
    assert normalised(tmp_path / "1.jsonl") == stdio
    assert out["seen"] == seen[2:]


def test_connect_bridges_its_editor_as_the_proxy_does(backend_id, tmp_path):
    turns = []
    with Serve(backend_id=backend_id, agent=V2_AGENT) as gw:
        for name, url in (("http", gw.url), ("ws", gw.ws_url)):
            path = tmp_path / f"{name}.jsonl"
            editor = Editor(url, "--bridge", "1:2", "--record", str(path), backend_id=backend_id)
            messages = editor.turn()
            check_turn(messages)
            assert editor.close() == 0
            turns.append((path, messages))
        assert gw.stop() == 0
    seen: List[Any] = []
    lines = _lines("sess_1", turns[0][1])
    stdio = normalised(stdio_recording(tmp_path, backend_id, lines, V2_AGENT, ["--bridge", "1:2"], seen))
    for path, messages in turns:
        assert normalised(path)[1:] == stdio[1:]  # (the headers name different commands)
        assert messages == seen[2:]


#: A v2 agent that answers `initialize`, then sends two frames the bridge refuses (a batch, which v2
#: has not; a request nested deeper than the bridge converts), then tells the client, in a frame the
#: bridge passes, what it got back for its request.
REFUSED_AGENT = """
import sys
sys.stdin.buffer.readline()
deep = b'{"jsonrpc":"2.0","id":7,"method":"_deep","params":{"x":' + b"[" * 1016 + b"]" * 1016 + b"}}"
out = [b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"agentCapabilities":{}}}',
       b'[{"jsonrpc":"2.0","method":"_batched","params":{}}]', deep]
sys.stdout.buffer.write(b"".join(line + b"\\n" for line in out))
sys.stdout.buffer.flush()
answer = sys.stdin.buffer.readline().strip()
sys.stdout.buffer.write(b'{"jsonrpc":"2.0","method":"_seen","params":{"answer":' + answer + b"}}\\n")
sys.stdout.buffer.flush()
sys.stdin.buffer.read()
"""
#: A request of the client that the bridge refuses (nested too deep).
DEEP_REQUEST = b'{"jsonrpc":"2.0","id":9,"method":"_deep","params":{"x":' + b"[" * 1016 + b"]" * 1016 + b"}}"


def _records(path: Path) -> List[bytes]:
    """A recording's lines without their times (as bytes: the deep frames are too deep for json)."""
    return [re.sub(rb'"t":[0-9.]+,', b"", line, count=1) for line in path.read_bytes().splitlines()]


def _refused_turn_stdio(tmp: Path, backend_id: str, agent: List[str]) -> Tuple[List[Any], List[bytes]]:
    """The refused frames' turn through `acp-fast proxy --bridge 1:2 --record` over stdio."""
    path = tmp / "stdio.jsonl"
    proc = subprocess.Popen(
        [PY, "-m", "acp_fast.cli", "proxy", "--bridge", "1:2", "--record", str(path), "--", *agent],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env(backend_id),
    )
    assert proc.stdin is not None and proc.stdout is not None
    seen = []
    for line, last in ((INITIALIZE, "_seen"), (DEEP_REQUEST, 9)):
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()
        while True:
            message = json.loads(proc.stdout.readline())
            seen.append(message)
            if message.get("method", message.get("id")) == last:
                break
    proc.stdin.close()
    assert proc.wait(60) == 0
    return seen, _records(path)


def test_serve_handles_the_frames_the_bridge_refuses_as_the_proxy(backend_id, tmp_path):
    script = tmp_path / "refusing_agent.py"
    script.write_text(REFUSED_AGENT)
    agent = [PY, str(script)]

    async def turn(url: str) -> List[Any]:
        import aiohttp

        seen = []
        async with aiohttp.ClientSession() as http, http.ws_connect(url) as ws:
            for line, last in ((INITIALIZE, "_seen"), (DEEP_REQUEST, 9)):
                await ws.send_str(line.decode())
                while True:
                    message = json.loads((await asyncio.wait_for(ws.receive(), 60)).data)
                    seen.append(message)
                    if message.get("method", message.get("id")) == last:
                        break
        return seen

    with Serve("--bridge", "1:2", "--record", str(tmp_path / "{n}.jsonl"), backend_id=backend_id, agent=agent) as gw:
        seen = asyncio.run(turn(gw.ws_url))
        gw.wait_for("ended (the client closed the WebSocket")
        assert gw.stop() == 0
        stderr = gw.stderr
    # the agent's refused request was answered, the client's too; the batch was diverted
    answer = seen[1]["params"]["answer"]
    assert (
        answer["id"] == 7 and answer["error"]["code"] == -32600 and answer["error"]["data"]["bridge"] == "depth_limit"
    )
    assert seen[2]["id"] == 9 and seen[2]["error"]["data"]["bridge"] == "depth_limit"
    assert "_batched" in stderr and "(diverted here)" in stderr
    proxied, stdio = _refused_turn_stdio(tmp_path, backend_id, agent)
    assert seen == proxied
    recorded = _records(tmp_path / "1.jsonl")
    # the same records; the proxy records the refused frames of a block it read before the block's
    # converted lines, the gateway each line in its place
    assert sorted(recorded) == sorted(stdio)
    actions = [
        (re.search(rb'"from":"(\w+)"', r).group(1).decode(), re.search(rb'"action":"(\w+)"', r).group(1).decode())
        for r in recorded
        if b'"action":' in r
    ]
    assert actions == [
        ("agent", "diverted"),
        ("agent", "diverted"),
        ("editor", "injected"),
        ("editor", "answered"),
        ("agent", "injected"),
    ]


# -- --middleware ----------------------------------------------------------------------------------


def test_serve_runs_a_middleware_instance_per_connection(backend_id, tmp_path):
    environ = _module(tmp_path)
    record = ["--record", str(tmp_path / "{n}.jsonl")]
    with Serve("--middleware", "stamp_mw:make", *record, backend_id=backend_id, **environ) as gw:
        http = asyncio.run(http_turn(gw.url))
        gw.wait_for("ended (the client ended")
        ws = asyncio.run(ws_turn(gw.ws_url))
        gw.wait_for("ended (the client closed the WebSocket")
        assert gw.stop() == 0
    http_seen = [m for _, m in http["seen"]]
    for number, seen in ((1, http_seen), (2, ws["seen"])):
        check_turn(seen)
        chunks = _updates(seen, "agent_message_chunk")
        assert chunks and all(c["content"]["text"] == f"instance {number}" for c in chunks)
        assert not _updates(seen, "plan")
    # the proxy's one instance does the same to the same turn, and records it the same way
    proxied: List[Any] = []
    stdio = normalised(
        stdio_recording(
            tmp_path, backend_id, _lines(http["sid"], http_seen), AGENT, ["--middleware", "stamp_mw:make"],
            proxied, **environ,
        )
    )  # fmt: skip
    assert http_seen == proxied[2:]
    assert normalised(tmp_path / "1.jsonl") == stdio
    actions = [(r.get("action"), r.get("reason")) for r in stdio if r.get("action")]
    assert ("dropped", "no plans") in actions and ("replaced", "stamped") in actions


def test_connect_runs_the_middleware_for_its_editor(backend_id, tmp_path):
    environ = _module(tmp_path)
    turns = []
    with Serve(backend_id=backend_id) as gw:
        for name, url in (("http", gw.url), ("ws", gw.ws_url)):
            path = tmp_path / f"{name}.jsonl"
            options = ["--middleware", "stamp_mw:make", "--record", str(path)]
            editor = Editor(url, *options, backend_id=backend_id, **environ)
            messages = editor.turn()
            assert editor.close() == 0
            turns.append((path, messages))
        assert gw.stop() == 0
    proxied: List[Any] = []
    stdio = normalised(
        stdio_recording(
            tmp_path, backend_id, _lines("sess_1", turns[0][1]), AGENT, ["--middleware", "stamp_mw:make"], proxied,
            **environ,
        )
    )  # fmt: skip
    for path, messages in turns:
        check_turn(messages)
        chunks = _updates(messages, "agent_message_chunk")
        assert chunks and all(c["content"]["text"] == "instance 1" for c in chunks)  # one connect, one instance
        assert not _updates(messages, "plan")
        assert messages == proxied[2:]
        assert normalised(path)[1:] == stdio[1:]


# -- usage errors ----------------------------------------------------------------------------------


def _usage(command: List[str], environ: Dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "acp_fast.cli", *command], capture_output=True, text=True, timeout=60, env=env("python", **environ)
    )


def test_bad_bridge_and_middleware_values_are_usage_errors(tmp_path):
    environ = _module(tmp_path)
    for head, tail in (
        (["serve"], ["--", "true"]),
        (["connect", "http://127.0.0.1:9/acp"], []),
        (["proxy"], ["--", "true"]),
    ):
        out = _usage([*head, "--bridge", "1:3", *tail], environ)
        assert out.returncode == 2, out.stderr
        assert "expected EDITOR:AGENT, each 1 or 2 (e.g. 1:2), found '1:3'" in out.stderr
        out = _usage([*head, "--middleware", "no_such_module_here:make", *tail], environ)
        assert out.returncode == 2, out.stderr
        assert "cannot import 'no_such_module_here': ModuleNotFoundError" in out.stderr
        out = _usage([*head, "--middleware", "stamp_mw", *tail], environ)
        assert out.returncode == 2 and "expected MODULE:FACTORY" in out.stderr, out.stderr
        out = _usage([*head, "--middleware", "stamp_mw:nothing", *tail], environ)
        assert out.returncode == 2 and "'stamp_mw' has no 'nothing'" in out.stderr, out.stderr
    # a factory that fails: at start for the proxy and connect (one instance each)
    for command in (["connect", "http://127.0.0.1:9/acp"], ["proxy"]):
        tail = ["--", "true"] if command == ["proxy"] else []
        out = _usage([*command, "--middleware", "stamp_mw:broken", *tail], environ)
        assert out.returncode == 2 and "stamp_mw:broken: the factory raised RuntimeError: no" in out.stderr


def test_serve_refuses_a_connection_whose_middleware_cannot_be_made(backend_id, tmp_path):
    environ = _module(tmp_path)
    with Serve("--middleware", "stamp_mw:broken", backend_id=backend_id, **environ) as gw:

        async def initialize() -> Any:
            import aiohttp

            headers = {"Content-Type": "application/json"}
            async with aiohttp.ClientSession() as http, http.post(gw.url, data=INITIALIZE, headers=headers) as r:
                return r.status, await r.text()

        status, text = asyncio.run(initialize())
        assert status == 500 and "middleware" in text
        gw.wait_for("not started: --middleware stamp_mw:broken: the factory raised RuntimeError: no")
        assert gw.stop() == 0
