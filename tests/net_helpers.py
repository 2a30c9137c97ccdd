"""Shared by the tests of `acp-fast serve` and `acp-fast connect`: a gateway started in a
subprocess on a free port, a Streamable HTTP client and a WebSocket client written from the
transport's description (not from acp_fast.net), and the scripted turn they drive."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import aiohttp

PY = sys.executable
ROOT = Path(__file__).resolve().parent.parent
AGENT = [PY, "-m", "acp_fast.cli", "demo-agent"]
TIMEOUT = 60.0


def env(backend_id: str, **extra: str) -> Dict[str, str]:
    out = dict(os.environ, ACP_FAST_BACKEND=backend_id, PYTHONPATH=str(ROOT / "python"))
    out.update(extra)
    return out


class Serve:
    """`acp-fast serve [options] -- AGENT` on 127.0.0.1 and a free port; `url` once it listens."""

    def __init__(self, *options: str, backend_id: str = "rust", agent: Sequence[str] = AGENT, **environ: str) -> None:
        listen = [] if any(o.startswith("--listen") for o in options) else ["--listen", "127.0.0.1:0"]
        self.proc = subprocess.Popen(
            [PY, "-m", "acp_fast.cli", "serve", *listen, *options, "--", *agent],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(backend_id, **environ),
        )
        self.lines: List[str] = []
        self._seen = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        line = self.wait_for("serve: listening on ")
        found = re.search(r"http://([^ ]+?)/acp", line)
        assert found, line
        self.url = f"http://{found.group(1)}/acp"
        self.ws_url = "ws" + self.url[4:]

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            with self._seen:
                self.lines.append(raw.decode("utf-8", "replace"))
                self._seen.notify_all()
        with self._seen:
            self.lines.append("")  # end of stderr
            self._seen.notify_all()

    def wait_for(self, text: str, timeout: float = TIMEOUT) -> str:
        """The first stderr line containing `text` (waiting for it)."""
        deadline = time.monotonic() + timeout
        with self._seen:
            while True:
                for line in self.lines:
                    if text in line:
                        return line
                if self.lines and self.lines[-1] == "":
                    raise AssertionError(f"serve ended without {text!r}: {''.join(self.lines)}")
                left = deadline - time.monotonic()
                assert left > 0, f"no {text!r} on serve's stderr: {''.join(self.lines)}"
                self._seen.wait(left)

    @property
    def stderr(self) -> str:
        with self._seen:
            return "".join(self.lines)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        status = self.proc.wait(TIMEOUT)
        self._reader.join(TIMEOUT)
        return status

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(TIMEOUT)


# -- the scripted turn ---------------------------------------------------------------------------

INITIALIZE = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}'
NEW_SESSION = b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/repo","mcpServers":[]}}'


def prompt(sid: str) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"'
        + sid.encode()
        + b'","prompt":[{"type":"text","text":"fix it"}]}}'
    )


def allow(request_id: Any) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":'
        + json.dumps(request_id).encode()
        + b',"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}'
    )


def check_turn(messages: List[Dict[str, Any]]) -> None:
    """A whole turn of the demo agent: tool calls, a permission request, the end of the turn."""
    kinds = [m["params"]["update"]["sessionUpdate"] for m in messages if m.get("method") == "session/update"]
    assert "tool_call" in kinds and "tool_call_update" in kinds and "agent_message_chunk" in kinds, kinds
    assert any(m.get("method") == "session/request_permission" for m in messages)
    assert messages[-1] == {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}


class Editor:
    """A scripted editor on the stdin and stdout of `acp-fast connect URL [options]`."""

    def __init__(self, url: str, *options: str, backend_id: str, **environ: str) -> None:
        self.proc = subprocess.Popen(
            [PY, "-m", "acp_fast.cli", "connect", url, *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(backend_id, **environ),
        )
        self.lines: List[bytes] = []

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def recv(self) -> Any:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"connect ended: {self.proc.stderr.read().decode() if self.proc.stderr else ''}"
        self.lines.append(line)
        return json.loads(line)

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        status = self.proc.wait(TIMEOUT)
        return status

    def turn(self) -> List[Any]:
        self.send(INITIALIZE)
        assert self.recv()["result"]["protocolVersion"] == 1
        self.send(NEW_SESSION)
        sid = self.recv()["result"]["sessionId"]
        self.send(prompt(sid))
        seen = []
        while True:
            message = self.recv()
            seen.append(message)
            if message.get("method") == "session/request_permission":
                self.send(allow(message["id"]))
            if message.get("id") == 2 and "method" not in message:
                return seen


# -- a Streamable HTTP client --------------------------------------------------------------------


class HttpPeer:
    """The client side of Streamable HTTP: POSTs, and one SSE reader per stream into `inbox`
    (each message with the stream it came on: None for the connection's, else the session id)."""

    def __init__(self, session: aiohttp.ClientSession, url: str, headers: Optional[Dict[str, str]] = None):
        self.http = session
        self.url = url
        self.headers = dict(headers or {})
        self.cid: Optional[str] = None
        self.inbox: asyncio.Queue[Any] = asyncio.Queue()
        self.tasks: List[asyncio.Task[None]] = []

    async def initialize(self, open_stream: bool = True) -> Dict[str, Any]:
        async with self.http.post(
            self.url, data=INITIALIZE, headers={**self.headers, "Content-Type": "application/json"}
        ) as r:
            assert r.status == 200, await r.text()
            self.cid = r.headers["Acp-Connection-Id"]
            body = await r.read()
        if open_stream:
            self.open(None)
        return json.loads(body)

    async def new_session(self) -> str:
        """`session/new` (its answer comes on the connection's stream): the session's id."""
        r = await self.post(NEW_SESSION)
        assert r.status == 202
        stream, answer = await self.recv()
        assert stream is None and answer["id"] == 1, answer
        return answer["result"]["sessionId"]

    def open(self, sid: Optional[str]) -> None:
        self.tasks.append(asyncio.ensure_future(self._stream(sid)))

    async def _stream(self, sid: Optional[str]) -> None:
        try:
            await self._read_stream(sid)
        except (AssertionError, aiohttp.ClientError, ValueError) as e:  # fails the next recv
            await self.inbox.put((sid, AssertionError(f"the stream {sid or 'of the connection'}: {e!r}")))

    async def _read_stream(self, sid: Optional[str]) -> None:
        headers = {**self.headers, "Accept": "text/event-stream", "Acp-Connection-Id": self.cid or ""}
        if sid is not None:
            headers["Acp-Session-Id"] = sid
        async with self.http.get(self.url, headers=headers, timeout=aiohttp.ClientTimeout(total=None)) as r:
            assert r.status == 200, await r.text()
            assert r.headers["Content-Type"].startswith("text/event-stream")
            data: List[bytes] = []
            async for raw in r.content:
                line = raw.rstrip(b"\r\n")
                if not line:
                    if data:
                        await self.inbox.put((sid, json.loads(b"\n".join(data))))
                        data = []
                elif line.startswith(b"data:"):
                    data.append(line[5:].lstrip(b" "))
        await self.inbox.put((sid, None))

    async def post(self, body: bytes, sid: Optional[str] = None, **extra: str) -> aiohttp.ClientResponse:
        headers = {**self.headers, "Content-Type": "application/json", "Acp-Connection-Id": self.cid or "", **extra}
        if sid is not None:
            headers["Acp-Session-Id"] = sid
        async with self.http.post(self.url, data=body, headers=headers) as r:
            await r.read()
            return r

    async def recv(self) -> Any:
        stream, message = await asyncio.wait_for(self.inbox.get(), TIMEOUT)
        if isinstance(message, AssertionError):
            raise message
        return stream, message

    async def close(self) -> None:
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def http_turn(url: str, headers: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """A whole prompt turn over Streamable HTTP; what was seen, and on which stream."""
    async with aiohttp.ClientSession() as http:
        peer = HttpPeer(http, url, headers)
        init = await peer.initialize()
        assert init["result"]["protocolVersion"] == 1
        sid = await peer.new_session()
        peer.open(sid)
        r = await peer.post(prompt(sid), sid)
        assert r.status == 202
        seen: List[Any] = []
        while True:
            stream, message = await peer.recv()
            assert message is not None, "a stream ended during the turn"
            seen.append((stream, message))
            if message.get("method") == "session/request_permission":
                r = await peer.post(allow(message["id"]))
                assert r.status == 202
            if message.get("id") == 2 and "method" not in message:
                break
        async with http.delete(url, headers={**(headers or {}), "Acp-Connection-Id": peer.cid or ""}) as d:
            deleted = d.status
        # the connection's stream ends with the connection
        rest = []
        while True:
            stream, message = await peer.recv()
            if message is None and stream is None:
                break
            rest.append((stream, message))
        await peer.close()
        async with http.post(
            url,
            data=NEW_SESSION,
            headers={"Content-Type": "application/json", "Acp-Connection-Id": peer.cid or "", **(headers or {})},
        ) as after:
            after_status = after.status
        return {"sid": sid, "seen": seen, "deleted": deleted, "after": after_status, "cid": peer.cid}


async def ws_turn(url: str, headers: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """A whole prompt turn over WebSocket."""
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(url, headers=headers) as ws:
            cid = ws._response.headers.get("Acp-Connection-Id")

            async def recv() -> Any:
                msg = await asyncio.wait_for(ws.receive(), TIMEOUT)
                assert msg.type == aiohttp.WSMsgType.TEXT, msg
                return json.loads(msg.data)

            await ws.send_str(INITIALIZE.decode())
            init = await recv()
            assert init["id"] == 0 and init["result"]["protocolVersion"] == 1
            await ws.send_str(NEW_SESSION.decode())
            sid = (await recv())["result"]["sessionId"]
            await ws.send_str(prompt(sid).decode())
            seen = []
            while True:
                message = await recv()
                seen.append(message)
                if message.get("method") == "session/request_permission":
                    await ws.send_str(allow(message["id"]).decode())
                if message.get("id") == 2 and "method" not in message:
                    break
        return {"sid": sid, "seen": seen, "cid": cid}


# -- recordings ----------------------------------------------------------------------------------


def normalised(path: Path) -> List[Dict[str, Any]]:
    """A recording's records without their times."""
    out = []
    for line in path.read_bytes().splitlines():
        record = json.loads(line)
        record.pop("t", None)
        out.append(record)
    return out


def stdio_recording(
    tmp: Path,
    backend_id: str,
    lines: Sequence[bytes],
    agent: Sequence[str] = AGENT,
    options: Sequence[str] = (),
    seen: Optional[List[Any]] = None,
    prompt_id: Any = 2,
    **environ: str,
) -> Path:
    """The same turn through `acp-fast proxy --record [options] -- AGENT` over stdio: `lines` sent
    one at a time, each after the agent's answer to the one before (the permission answer after the
    request, until the answer to the prompt, whose id is `prompt_id`); the editor's messages go to
    `seen` when given."""
    path = tmp / "stdio.jsonl"
    proc = subprocess.Popen(
        [PY, "-m", "acp_fast.cli", "proxy", "--record", str(path), *options, "--", *agent],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env(backend_id, **environ),
    )
    assert proc.stdin is not None and proc.stdout is not None

    def until(predicate: Any) -> None:
        while True:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            assert line, "the proxy ended early"
            if seen is not None:
                seen.append(json.loads(line))
            if predicate(json.loads(line)):
                return

    for line in lines:
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()
        message = json.loads(line)
        if message.get("method") == "session/prompt":
            until(lambda m: m.get("method") == "session/request_permission")
        elif "method" in message:
            until(lambda m, i=message["id"]: m.get("id") == i and "method" not in m)
        else:  # the permission's answer: until the end of the turn
            until(lambda m: m.get("id") == prompt_id and "method" not in m)
    proc.stdin.close()
    assert proc.wait(TIMEOUT) == 0
    return path
