"""`acp-fast connect URL`: a stdio endpoint for an editor, talking to a remote ACP agent over
Streamable HTTP (an `http://` or `https://` URL) or WebSocket (`ws://`, `wss://`); docs/NETWORK.md.

The editor's lines go out as they came (a POST body or a text frame holds the line's bytes); the
agent's messages are written to stdout as they came (an SSE `data:` field or a text frame), one
line each. On HTTP, `initialize` must come first (its answer names the connection); the
connection's SSE stream is opened then, and each session's stream when a message names the
session. The editor's end of input ends the connection (DELETE, or the socket closed).

Between the two, each frame passes through the connection's flow (`_flow.Flow`): `--bridge`, the
middleware, the state and the recording, `--coalesce`, in the order of `acp-fast proxy`.
"""

from __future__ import annotations

import asyncio
import os
import select
import sys
import threading
import time
from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence, Set, Tuple

import aiohttp
import orjson

import acp_fast

from .._terminal import printable
from ..proxy._middleware import Middleware
from ..proxy._relay import line_error, request_id
from . import _wire as wire
from ._flow import Flow, Sends
from ._tap import Tap

__all__ = ["DRAIN_SECONDS", "Endpoint", "run"]

#: After the editor's end of input (HTTP): how long the agent's last lines are awaited (the
#: gateway ends the connection's stream once its agent has exited).
DRAIN_SECONDS = 10.0


class GatewayError(Exception):
    """The remote end refused or broke the connection (the message says how)."""


class Endpoint:
    """One editor (this process's stdin and stdout) and one remote agent at `url`."""

    def __init__(
        self,
        url: str,
        *,
        token: Optional[str] = None,
        record: Optional[str] = None,
        trace: Optional[str] = None,
        strict: bool = False,
        coalesce: Optional[float] = None,
        bridge: Optional[Tuple[int, int]] = None,
        middleware: Sequence[Middleware] = (),
        max_frame_bytes: int = acp_fast.DEFAULT_MAX_FRAME_BYTES,
        stdin: int = 0,
        stdout: int = 1,
    ) -> None:
        self.url = url
        self.ws_mode = url.lower().startswith(("ws://", "wss://"))
        self.headers: Dict[str, str] = {"Authorization": f"Bearer {token}"} if token else {}
        self.strict = strict
        self.max_frame_bytes = max_frame_bytes
        self.stdin = stdin
        self.stdout = stdout
        self.tap = Tap([url], record=record, trace=trace, max_frame_bytes=max_frame_bytes)
        self.cid: Optional[str] = None
        self.streams: Set[str] = set()
        self.loads: Dict[str, str] = {}
        self.tasks: Set[asyncio.Task[None]] = set()
        self.done = asyncio.Event()
        self.failure: Optional[str] = None
        self.closing = False
        self.editor_lines = 0
        self.http: Optional[aiohttp.ClientSession] = None
        self.connection_stream: Optional[asyncio.Task[None]] = None
        #: `--bridge`, `--middleware`, `--coalesce`: every frame passes through it.
        self.flow = Flow(
            self.tap, bridge=bridge, coalesce=coalesce, middleware=middleware, note=self.note, post=self.sends
        )
        self.timer: Optional[asyncio.TimerHandle] = None
        #: Sends a line to the remote agent (set when the transport is up); `sending` keeps the
        #: order of the lines the flow gives back from the agent's side with the editor's.
        self.send: Optional[Callable[[bytes], Awaitable[None]]] = None
        self.sending = asyncio.Lock()
        self.posted: Set[asyncio.Task[None]] = set()

    def note(self, text: str) -> None:
        sys.stderr.write(f"acp-fast connect: {printable(text)}\n")
        sys.stderr.flush()

    def fail(self, text: str) -> None:
        if self.failure is None and not self.closing:
            self.failure = text
        self.done.set()

    # -- to the editor --------------------------------------------------------------------------

    def to_editor(self, line: bytes, *, is_json: bool = True) -> None:
        """A line of the agent to stdout (whole), through the flow (`--bridge`, middleware, state,
        recording, `--coalesce`); a line that is not JSON is recorded and written as it came."""
        if not is_json:
            self.tap.line("agent", line, is_json=False)
            self.write(line)
            return
        self.sends(self.flow.from_agent(line))

    def own(self, line: bytes) -> None:
        """An answer of connect's own to the editor (recorded as `"injected"`)."""
        self.sends(self.flow.inject("editor", line))

    def sends(self, sends: Sends) -> None:
        """What the flow gave back: lines to stdout now, lines to the agent sent in order."""
        to_editor, to_agent = sends
        for x in to_editor:
            self.write(x)
        if to_agent:
            task = asyncio.ensure_future(self._send_all(to_agent))
            self.posted.add(task)
            task.add_done_callback(self.posted.discard)
        self.schedule()

    async def _send_all(self, lines: List[bytes]) -> None:
        async with self.sending:
            send = self.send
            if send is None:
                self.note(f"{len(lines)} frames for the agent not sent (the connection is not up)")
                return
            for x in lines:
                await send(x)

    def schedule(self) -> None:
        """Release the held updates when the oldest is due (`--coalesce`, `--bridge 1:2 --coalesce`)."""
        deadline = self.flow.deadline
        if deadline is None or self.timer is not None:
            return
        self.timer = asyncio.get_running_loop().call_later(max(0.0, deadline - time.monotonic()), self.due)

    def due(self) -> None:
        self.timer = None
        self.sends(self.flow.due(time.monotonic()))

    def write(self, line: bytes) -> None:
        """One line to stdout, whole."""
        data = memoryview(line + b"\n")
        while data:
            try:
                n = os.write(self.stdout, data)
            except BlockingIOError:  # pragma: no cover - stdout is blocking
                continue
            except (BrokenPipeError, ConnectionResetError):
                self.fail("the editor closed its input (stdout)")
                return
            data = data[n:]

    def answer(self, line: bytes, code: int, text: str, data: Optional[Dict[str, Any]] = None) -> None:
        """A JSON-RPC error for the editor's request `line` (nothing for a notification or response)."""
        rid = request_id(line)
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            message = None
        if isinstance(message, dict) and ("method" not in message or "id" not in message):
            return
        error: Dict[str, Any] = {"code": code, "message": text}
        if data is not None:
            error["data"] = data
        self.own(orjson.dumps({"jsonrpc": "2.0", "id": rid, "error": error}))

    # -- from the editor ------------------------------------------------------------------------

    async def editor_lines_in(self, send: Any) -> None:
        """Read stdin, frame it, give each line to `send`; at its end, the connection ends."""
        loop = asyncio.get_running_loop()
        framer = acp_fast.Framer(max_frame_bytes=self.max_frame_bytes, keepends=True)
        chunks: asyncio.Queue[bytes] = asyncio.Queue(4)
        fd = self.stdin

        def read() -> None:  # a daemon thread: a blocked read never holds the exit
            while True:
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:  # a non-blocking stdin: wait until it is readable
                    select.select([fd], [], [])
                    continue
                except OSError as e:
                    loop.call_soon_threadsafe(self.note, f"cannot read stdin: {e.strerror or e}")
                    chunk = b""
                try:
                    asyncio.run_coroutine_threadsafe(chunks.put(chunk), loop).result()
                except BaseException:  # noqa: BLE001 - the loop is gone: the endpoint has ended
                    return
                if not chunk:
                    return

        threading.Thread(target=read, name="acp-fast connect stdin", daemon=True).start()
        while not self.done.is_set():
            chunk = await chunks.get()
            events: List[Any] = framer.feed(chunk) if chunk else framer.finish()
            for event in events:
                number, raw = event[0], event[1]
                if isinstance(raw, int):
                    self.tap.too_large("editor", raw)
                    self.note(f"editor line {number}: longer than {self.max_frame_bytes} bytes (dropped)")
                    continue
                eol = raw.endswith(b"\n")
                crlf = raw.endswith(b"\r\n")
                line = raw[: len(raw) - (2 if crlf else 1 if eol else 0)]
                if not line.strip():
                    continue
                self.editor_lines += 1
                error = line_error(line, number)
                if error is not None:
                    if self.strict:
                        self.tap.line("editor", line, is_json=False, crlf=crlf, eol=eol, action="answered")
                        self.note(f"editor line {number}: {error} (answered with an error, not forwarded)")
                        self.own(
                            orjson.dumps(
                                {
                                    "jsonrpc": "2.0",
                                    "id": request_id(line),
                                    "error": {
                                        "code": error.code,
                                        "message": str(error),
                                        "data": {"line": error.line, "position": error.position},
                                    },
                                }
                            )
                        )
                        continue
                    self.note(f"editor line {number}: {error} (forwarded)")
                to_editor, to_agent = self.flow.from_editor(line, crlf=crlf, eol=eol)
                async with self.sending:
                    for x in to_agent:
                        await send(x)
                self.sends((to_editor, []))
                if self.done.is_set():
                    return
            if not chunk:
                return

    # -- WebSocket ------------------------------------------------------------------------------

    async def run_ws(self, http: aiohttp.ClientSession) -> None:
        try:
            ws = await http.ws_connect(self.url, headers=self.headers, max_msg_size=self.max_frame_bytes)
        except aiohttp.WSServerHandshakeError as e:
            raise GatewayError(f"the gateway refused the WebSocket: HTTP {e.status} {e.message}") from None
        self.cid = ws._response.headers.get(wire.CONNECTION_HEADER) if ws._response is not None else None

        async def send(line: bytes) -> None:
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                self.note("an editor line is not UTF-8: a WebSocket text frame cannot carry it (dropped)")
                return
            await ws.send_str(text)

        self.send = send

        async def receive() -> None:
            async for msg in ws:
                if msg.type == aiohttp.WSMsgType.TEXT:
                    self.to_editor(msg.data.encode())
                elif msg.type == aiohttp.WSMsgType.ERROR:
                    self.fail(f"WebSocket error: {ws.exception()}")
                    return
            if not self.closing:
                self.fail(f"the gateway closed the WebSocket (code {ws.close_code})")
            else:
                self.done.set()

        reader = asyncio.ensure_future(receive())
        writer = asyncio.ensure_future(self.editor_lines_in(send))
        await asyncio.wait({reader, writer}, return_when=asyncio.FIRST_COMPLETED)
        self.closing = True
        if writer.done():
            await ws.close()
            try:
                await asyncio.wait_for(reader, 10.0)
            except asyncio.TimeoutError:
                reader.cancel()
        else:
            writer.cancel()
        for task in (reader, writer):
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]

    # -- Streamable HTTP ------------------------------------------------------------------------

    async def run_http(self, http: aiohttp.ClientSession) -> None:
        async def send(line: bytes) -> None:
            try:
                message = orjson.loads(line)
            except orjson.JSONDecodeError:
                message = None
            if self.cid is None:
                if not wire.is_initialize(message):
                    self.note("expected initialize first (it starts the connection over HTTP); line answered")
                    self.answer(line, -32002, "expected initialize first: the connection is not started")
                    return
                await self.initialize(http, line)
                return
            await self.post(http, line, message)

        self.send = send
        writer = asyncio.ensure_future(self.editor_lines_in(send))
        done_wait = asyncio.ensure_future(self.done.wait())
        await asyncio.wait({writer, done_wait}, return_when=asyncio.FIRST_COMPLETED)
        self.closing = True
        if not writer.done():
            writer.cancel()
        done_wait.cancel()
        if self.cid is not None and self.failure is None:
            try:
                async with http.delete(self.url, headers={**self.headers, wire.CONNECTION_HEADER: self.cid}):
                    pass
            except aiohttp.ClientError:
                pass
            else:
                # the agent's last lines: the gateway closes the streams once its agent has exited
                if self.connection_stream is not None:
                    await asyncio.wait({self.connection_stream}, timeout=DRAIN_SECONDS)
                pending = [t for t in self.tasks if not t.done()]
                if pending:
                    await asyncio.wait(pending, timeout=1.0)
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if writer.done() and not writer.cancelled() and writer.exception() is not None:
            raise writer.exception()  # type: ignore[misc]

    async def initialize(self, http: aiohttp.ClientSession, line: bytes) -> None:
        headers = {**self.headers, "Content-Type": "application/json"}
        async with http.post(self.url, data=line, headers=headers) as r:
            body = await r.read()
            if r.status != 200:
                raise GatewayError(f"initialize: the gateway answered HTTP {r.status}: {_text(body)}")
            cid = r.headers.get(wire.CONNECTION_HEADER)
            if not cid:
                raise GatewayError(f"initialize: the answer has no {wire.CONNECTION_HEADER} header")
        self.cid = cid
        self.to_editor(body.strip())
        self.open(None)

    async def post(self, http: aiohttp.ClientSession, line: bytes, message: Any) -> None:
        assert self.cid is not None
        headers = {**self.headers, "Content-Type": "application/json", wire.CONNECTION_HEADER: self.cid}
        method = message.get("method") if isinstance(message, dict) else None
        sid = wire.session_of(message)
        if method in wire.SESSION_SCOPED_METHODS and sid is not None:
            headers[wire.SESSION_HEADER] = sid
        k = wire.key(message.get("id")) if isinstance(message, dict) else None
        if method in wire.SESSION_ATTACH_METHODS and k is not None and sid is not None:
            self.loads[k] = sid
        async with http.post(self.url, data=line, headers=headers) as r:
            body = await r.read()
            status = r.status
        if status in (200, 202):
            if status == 200 and body.strip():
                self.to_editor(body.strip())
            return
        if k is not None:
            self.loads.pop(k, None)
        what = method or "a response"
        self.note(f"POST {what}: the gateway answered HTTP {status}: {_text(body)}")
        if status == 404 and "unknown connection" in _text(body):
            self.fail("the gateway no longer knows the connection")
        if status == 400 and body.startswith(b'{"jsonrpc"'):
            self.to_editor(body.strip())  # the gateway's --strict answer
            return
        self.answer(line, -32603, f"the gateway answered HTTP {status}: {_text(body)}")

    def open(self, sid: Optional[str]) -> None:
        if sid is not None:
            if sid in self.streams:
                return
            self.streams.add(sid)
        task = asyncio.ensure_future(self._stream(sid))
        if sid is None:
            self.connection_stream = task
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _stream(self, sid: Optional[str]) -> None:
        assert self.cid is not None
        headers = {**self.headers, "Accept": "text/event-stream", wire.CONNECTION_HEADER: self.cid}
        if sid is not None:
            headers[wire.SESSION_HEADER] = sid
        http = self.http
        assert http is not None
        try:
            async with http.get(self.url, headers=headers, timeout=aiohttp.ClientTimeout(total=None)) as r:
                if r.status != 200:
                    body = await r.read()
                    self.note(
                        f"GET {'session ' + sid if sid else 'the connection'}'s stream: HTTP {r.status}: {_text(body)}"
                    )
                    return
                data: List[bytes] = []
                async for raw in r.content:
                    line = raw.rstrip(b"\r\n")
                    if not line:
                        if data:
                            self.event(b"\n".join(data))
                            data = []
                    elif line.startswith(b"data:"):
                        value = line[5:]
                        data.append(value[1:] if value.startswith(b" ") else value)
                if data:
                    self.event(b"\n".join(data))
        except aiohttp.ClientError as e:
            if sid is None:
                self.fail(f"the connection's stream broke: {e}")
            return
        finally:
            if sid is not None:
                self.streams.discard(sid)
        if sid is None:
            self.fail("the gateway ended the connection (its stream ended)")

    def event(self, data: bytes) -> None:
        try:
            message = orjson.loads(data)
        except orjson.JSONDecodeError:
            self.note("an SSE event is not JSON (given to the editor as it is)")
            self.to_editor(data.replace(b"\n", b" "), is_json=False)
            return
        if wire.is_response(message):
            k = wire.key(message.get("id"))
            loaded = self.loads.pop(k, None) if k is not None else None
            if loaded is not None and "result" in message:
                self.open(loaded)
        sid = wire.session_of(message) or wire.session_in_result(message)
        if sid is not None and sid not in self.loads.values():
            self.open(sid)
        self.to_editor(data)

    # -- running --------------------------------------------------------------------------------

    async def run(self) -> int:
        status = 0
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, connect=30)) as http:
                self.http = http
                if self.ws_mode:
                    await self.run_ws(http)
                else:
                    await self.run_http(http)
        except GatewayError as e:
            self.failure = str(e)
        except (aiohttp.ClientError, OSError) as e:
            self.failure = f"cannot reach {self.url}: {e}"
        finally:
            if self.timer is not None:
                self.timer.cancel()
            for x in self.flow.flush()[0]:  # what is still held goes out before the end
                self.write(x)
            self.tap.close(0 if self.failure is None else 1)
        if self.failure is not None:
            self.note(f"error: {self.failure}")
            status = 1
        return status


def _text(body: bytes) -> str:
    """The error text of a gateway's JSON error body (`{"error": ...}`), else the body."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body.decode("utf-8", "replace").strip()[:300]
    if isinstance(value, dict) and isinstance(value.get("error"), str):
        return str(value["error"])
    return body.decode("utf-8", "replace").strip()[:300]


def run(url: str, **options: Any) -> int:
    """`Endpoint(url, **options).run()` in a new event loop: the exit status."""

    async def main() -> int:
        return await Endpoint(url, **options).run()

    return asyncio.run(main())
