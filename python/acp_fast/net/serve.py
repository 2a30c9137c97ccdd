"""`acp-fast serve`: a stdio ACP agent exposed over Streamable HTTP and WebSocket, one agent process
per client connection (docs/NETWORK.md).

One endpoint (`/acp`): a POST of `initialize` starts an agent and answers 200 with the agent's
response and an `Acp-Connection-Id` header; every later client message is a POST answered 202;
the agent's messages come on long-lived SSE streams (a GET per connection, and one per session
with `Acp-Session-Id`); DELETE ends a connection. A WebSocket upgrade on the same endpoint is a
connection too, one JSON-RPC message per text frame.

The agent's lines go out as they came (an SSE `data:` event or a text frame holds the line's bytes);
a POST body or a frame from the client goes to the agent as one line (a body written on several
lines is compacted first). Per connection: the sessions' state, `--record` / `--trace` files,
`--strict`, `--coalesce`, `--bridge` and its own `--middleware` instances (`_flow.Flow`). Limits: connections, request body size, idle time, and a bounded queue per SSE
stream: when a client reads slower than its agent writes, the gateway stops reading that agent's
stdout (the agent then blocks on its pipe) instead of buffering without bound.
"""

from __future__ import annotations

import asyncio
import collections
import hmac
import os
import secrets
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, List, Optional, Set, Tuple

import orjson
from aiohttp import WSMsgType, web

import acp_fast

from .._outputs import output_error
from .._terminal import printable
from ..proxy import DEFAULT_MAX_SESSIONS, DEFAULT_MAX_TOOL_CALLS
from ..proxy._middleware import make
from ..proxy._relay import line_error, request_id
from . import _wire as wire
from ._flow import Flow, Sends
from ._tap import Tap, output_path

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_QUEUE",
    "Gateway",
    "Options",
    "run",
]

#: `--max-connections`: client connections (agent processes) held at once.
DEFAULT_MAX_CONNECTIONS = 512
#: `--max-body-bytes`: the largest POST body or WebSocket frame (the proxy's frame limit).
DEFAULT_MAX_BODY_BYTES = acp_fast.DEFAULT_MAX_FRAME_BYTES
#: `--idle-timeout`: seconds without a message either way before a connection is ended.
DEFAULT_IDLE_TIMEOUT = 600.0
#: `--queue`: messages an SSE stream holds for a client that reads slowly (or has not opened the
#: stream yet) before the gateway stops reading the agent.
DEFAULT_QUEUE = 256
#: How long `initialize` waits for the agent's answer.
INITIALIZE_TIMEOUT = 30.0
#: Seconds an agent gets, after its stdin closed, to exit before SIGTERM, then SIGKILL.
STOP_GRACE = 5.0
#: How often recordings are flushed (a record reaches its file within this time).
FLUSH_SECONDS = 0.1
#: Seconds the agent's last messages wait, after the agent ended, for an HTTP client that has not
#: fetched them yet (its stream not open yet, or behind): GET still serves them, then the stream
#: ends. On shutdown the wait is `stop_grace` at most.
DRAIN_SECONDS = 30.0


@dataclass
class Options:
    """What `acp-fast serve` was given (docs/NETWORK.md describes each)."""

    command: List[str]
    host: str = "127.0.0.1"
    port: int = 8765
    token: Optional[str] = None
    max_connections: Optional[int] = DEFAULT_MAX_CONNECTIONS
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    queue: int = DEFAULT_QUEUE
    strict: bool = False
    record: Optional[str] = None
    trace: Optional[str] = None
    max_tool_calls: Optional[int] = DEFAULT_MAX_TOOL_CALLS
    max_sessions: Optional[int] = DEFAULT_MAX_SESSIONS
    quiet: bool = False
    stop_grace: float = STOP_GRACE
    #: `--coalesce MS`: the agent's tool-call updates held up to MS milliseconds per connection and
    #: merged (`acp_fast.Coalescer`); None: off.
    coalesce: Optional[float] = None
    #: `--bridge EDITOR:AGENT`: the protocol versions of the client and of the agent (a bridge per
    #: connection, `acp_fast.bridge.Bridge`); None: off.
    bridge: Optional[Tuple[int, int]] = None
    #: `--middleware MODULE:FACTORY`: (the option's value, the factory), called once per connection.
    middleware: List[Tuple[str, Callable[[], Any]]] = field(default_factory=list)


def _error(status: int, text: str, headers: Optional[Dict[str, str]] = None) -> web.Response:
    """An HTTP error with a JSON body `{"error": text}` (what the ACP SDKs send)."""
    return web.Response(
        status=status, body=orjson.dumps({"error": text}), content_type="application/json", headers=headers
    )


class StartError(Exception):
    """A connection that could not start: the HTTP status and the reason for the client."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status


class Channel:
    """A bounded queue of lines for one SSE stream. `put` waits while it is full: the agent's
    reader waits with it, so the agent's stdout is not read while a client is behind."""

    __slots__ = ("capacity", "closed", "items", "_readable", "_writable", "reader")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.items: Deque[bytes] = collections.deque()
        self.closed = False
        self._readable = asyncio.Event()
        self._writable = asyncio.Event()
        self._writable.set()
        #: An SSE response reads it (one at a time).
        self.reader = False

    async def put(self, line: bytes) -> None:
        while len(self.items) >= self.capacity and not self.closed:
            self._writable.clear()
            await self._writable.wait()
        if not self.closed:
            self.items.append(line)
            self._readable.set()

    async def take(self, timeout: float) -> Optional[List[bytes]]:
        """Every line held (waiting up to `timeout` for one: [] then); None once closed and empty."""
        if not self.items:
            if self.closed:
                return None
            self._readable.clear()
            try:
                await asyncio.wait_for(self._readable.wait(), timeout)
            except asyncio.TimeoutError:
                return []
            if not self.items:
                return None if self.closed else []
        out = list(self.items)
        self.items.clear()
        self._writable.set()
        return out

    async def drained(self, timeout: float) -> bool:
        """Wait up to `timeout` until a reader has taken every line held; whether it did."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.items:
            left = deadline - loop.time()
            if left <= 0:
                return False
            self._writable.clear()
            try:
                await asyncio.wait_for(self._writable.wait(), left)
            except asyncio.TimeoutError:
                return False
        return True

    def close(self) -> None:
        self.closed = True
        self._readable.set()
        self._writable.set()


class Connection:
    """One client connection: its agent process, its tap (state, recording, trace) and where the
    agent's messages go (SSE channels for HTTP, the socket for WebSocket)."""

    def __init__(self, gateway: Gateway, kind: str) -> None:
        self.gateway = gateway
        self.kind = kind
        self.id = secrets.token_hex(16)
        gateway.count += 1
        self.number = gateway.count
        self.proc: Optional[asyncio.subprocess.Process] = None
        self.tap: Optional[Tap] = None
        self.last = time.monotonic()
        self.ended = False
        self.ending: Optional[asyncio.Task[None]] = None
        self.reader: Optional[asyncio.Task[None]] = None
        self.status: Optional[int] = None
        self.client_lines = 0
        # HTTP routing
        self.init_id: Optional[str] = None
        self.init_answer: Optional[asyncio.Future[bytes]] = None
        self.stream: Optional[Channel] = None
        self.sessions: Dict[str, Channel] = {}
        self.routes: Dict[str, str] = {}
        self.loads: Dict[str, str] = {}
        self.provisional: Set[str] = set()
        # WebSocket
        self.ws: Optional[web.WebSocketResponse] = None
        # --bridge, --middleware, --coalesce: every frame passes through the flow; `emitting` keeps
        # the order of what goes to the client between the agent's reader, the client's messages
        # and the task that releases held updates when they are due
        self.flow: Optional[Flow] = None
        self.emitting = asyncio.Lock()
        self.releaser: Optional[asyncio.Task[None]] = None
        self.posted: Set[asyncio.Task[None]] = set()

    # -- life -----------------------------------------------------------------------------------

    async def start(self) -> None:
        g = self.gateway
        o = g.options
        record = output_path(o.record, self.id, self.number, ".jsonl") if o.record else None
        trace = output_path(o.trace, self.id, self.number, ".jsons") if o.trace else None
        try:
            self.tap = Tap(
                o.command,
                record=record,
                trace=trace,
                max_frame_bytes=o.max_body_bytes,
                max_tool_calls=o.max_tool_calls,
                max_sessions=o.max_sessions,
            )
        except OSError as e:
            path = e.filename if isinstance(e.filename, str) else (record or trace or "")
            option = "--trace" if trace and path == trace else "--record"
            self.note(f"not started: {option} {output_error(path, e)}")
            raise StartError(500, f"the gateway cannot write this connection's {option} file") from None
        try:
            middleware = [make(spec, factory) for spec, factory in o.middleware]  # this connection's own
        except ValueError as e:
            self.tap.close(None)
            self.tap = None
            self.note(f"not started: --middleware {e}")
            raise StartError(500, "the gateway cannot make this connection's middleware") from None
        self.flow = Flow(
            self.tap, bridge=o.bridge, coalesce=o.coalesce, middleware=middleware, note=self.note, post=self._post
        )
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *o.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=None,
                start_new_session=True,
            )
        except OSError as e:
            self.tap.close(None)
            self.tap = None
            raise StartError(502, f"cannot start the agent {printable(o.command[0])}: {e.strerror or e}") from None
        g.connections[self.id] = self
        self.reader = asyncio.ensure_future(self._read_agent())

    def note(self, text: str) -> None:
        self.gateway.note(f"connection {self.number} ({self.id[:8]}): {text}")

    def end(self, why: str) -> asyncio.Task[None]:
        """End the connection (once): the agent's stdin closed, the agent given `stop_grace`
        seconds to exit (its last lines still go out), then stopped; the streams closed, the
        recording completed."""
        if self.ending is None:
            self.ending = asyncio.ensure_future(self._end(why))
        return self.ending

    async def _end(self, why: str) -> None:
        g = self.gateway
        proc = self.proc
        if proc is not None:
            if proc.stdin is not None and not proc.stdin.is_closing():
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), g.options.stop_grace)
            except asyncio.TimeoutError:
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    try:
                        proc.send_signal(sig)
                    except ProcessLookupError:
                        break
                    try:
                        await asyncio.wait_for(proc.wait(), 2.0)
                        break
                    except asyncio.TimeoutError:
                        continue
            self.status = proc.returncode
        if self.releaser is not None:
            self.releaser.cancel()
        loop = asyncio.get_running_loop()
        drain_until = loop.time() + min(DRAIN_SECONDS, g.options.stop_grace if g.stopping else g.options.idle_timeout)
        reader = self.reader
        while reader is not None and not reader.done():
            # the agent's last lines: until its stdout ends (a grandchild may hold it open), and
            # while a stream the client has not read is full, until the drain time is over
            try:
                await asyncio.wait_for(asyncio.shield(reader), 1.0)
            except asyncio.TimeoutError:
                if not (self._waiting_for_client() and loop.time() < drain_until):
                    reader.cancel()
                    break
        self.ended = True
        self._close_streams()
        await self._drain(drain_until - loop.time())
        if self.ws is not None and not self.ws.closed:
            await self.ws.close(code=1001 if g.stopping else 1000, message=why.encode()[:120])
        g.connections.pop(self.id, None)
        if self.tap is not None:
            try:
                self.tap.close(-1 if self.status is None else self.status)
            except OSError as e:
                self.note(f"recording not completed: {e}")
            if not g.options.quiet:
                summary = self.tap.summary()
                c = None if self.flow is None else self.flow.coalescer
                if c is not None:
                    summary += (
                        f"; --coalesce: {c.updates_in} tool-call updates held, {c.frames_out} lines in their place"
                    )
                self.note(f"ended ({why}; agent exit status {self.status}): {summary}")

    def _channels(self) -> List[Channel]:
        return ([] if self.stream is None else [self.stream]) + list(self.sessions.values())

    def _waiting_for_client(self) -> bool:
        """Whether an SSE stream is full: the agent's reader then waits for the client."""
        return any(len(ch.items) >= ch.capacity for ch in self._channels())

    async def _drain(self, seconds: float) -> None:
        """After the end (streams closed): the lines the client has not fetched stay for it up to
        `seconds`, GET still serving them (a client may open its stream after a quick agent has
        already exited). The connection stays known until then."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        for ch in self._channels():
            if not await ch.drained(deadline - loop.time()):
                return

    def _close_streams(self) -> None:
        if self.stream is not None:
            self.stream.close()
        for ch in self.sessions.values():
            ch.close()
        if self.init_answer is not None and not self.init_answer.done():
            self.init_answer.set_exception(ConnectionError("the agent exited"))
            self.init_answer.exception()  # retrieved: no warning when nobody waits for it any more

    # -- client -> agent ------------------------------------------------------------------------

    async def to_agent(self, line: bytes, message: Any) -> None:
        """A message of the client (one line, no line ending) to the agent."""
        self.last = time.monotonic()
        flow = self.flow
        assert flow is not None and self.proc is not None and self.proc.stdin is not None
        if self.proc.stdin.is_closing():
            raise ConnectionResetError("the agent's stdin is closed")
        if self.kind == "http" and isinstance(message, dict) and "method" in message and "id" in message:
            sid = wire.session_of(message)
            k = wire.key(message["id"])
            if sid is not None and k is not None:
                if message["method"] in wire.SESSION_ATTACH_METHODS:
                    self.loads[k] = sid
                    if sid not in self.sessions:  # the client may open its stream while the replay comes
                        self.sessions[sid] = Channel(self.gateway.options.queue)
                        self.provisional.add(sid)
                else:
                    self.routes[k] = sid
        to_client, to_agent = flow.from_editor(line)
        await self._to_agent_lines(to_agent)
        if to_client:
            async with self.emitting:
                await self._to_client(to_client)

    async def _to_agent_lines(self, lines: List[bytes]) -> None:
        """Lines to the agent's stdin (ConnectionResetError once it is closed)."""
        if not lines:
            return
        assert self.proc is not None and self.proc.stdin is not None
        stdin = self.proc.stdin
        if stdin.is_closing():
            raise ConnectionResetError("the agent's stdin is closed")
        stdin.write(b"".join(x + b"\n" for x in lines))
        await stdin.drain()

    async def _to_client(self, lines: List[bytes], line: Optional[bytes] = None, message: Any = None) -> None:
        """Lines to the client, in order (the caller holds `emitting`); `line` is known to be
        `message` already."""
        for x in lines:
            await self._deliver(x, message if x is line else orjson.loads(x))

    async def _sends(self, sends: Sends) -> None:
        """What the flow gave back from the agent's side: to the client in order, and to the agent
        (which may have stopped reading: noted, not fatal to the client's side)."""
        to_client, to_agent = sends
        if to_client:
            async with self.emitting:
                await self._to_client(to_client)
        try:
            await self._to_agent_lines(to_agent)
        except ConnectionError:
            self.note(f"{len(to_agent)} frames for the agent not delivered (its stdin is closed)")

    def _post(self, sends: Sends) -> None:
        """Frames a middleware injected outside a call (`Flow.send`)."""
        task = asyncio.ensure_future(self._sends(sends))
        self.posted.add(task)
        task.add_done_callback(self.posted.discard)

    def invalid(self, line: bytes) -> Optional[bytes]:
        """`--strict`: the JSON-RPC error answering a client line that is not JSON-RPC (None: it is,
        or not strict: forwarded with a note)."""
        self.client_lines += 1
        error = line_error(line, self.client_lines)
        if error is None:
            return None
        if not self.gateway.options.strict:
            self.note(f"client message {self.client_lines}: {error} (forwarded)")
            return None
        self.note(f"client message {self.client_lines}: {error} (answered with an error, not forwarded)")
        assert self.tap is not None
        self.tap.line("editor", line, is_json=False, action="answered")
        answer = {
            "jsonrpc": "2.0",
            "id": request_id(line),
            "error": {
                "code": error.code,
                "message": str(error),
                "data": {"line": error.line, "position": error.position},
            },
        }
        return orjson.dumps(answer)

    # -- agent -> client ------------------------------------------------------------------------

    async def _read_agent(self) -> None:
        proc = self.proc
        tap = self.tap
        assert proc is not None and proc.stdout is not None and tap is not None
        framer = acp_fast.Framer(max_frame_bytes=self.gateway.options.max_body_bytes, keepends=True)
        stdout = proc.stdout
        try:
            while True:
                chunk = await stdout.read(1 << 16)
                events = framer.feed(chunk) if chunk else framer.finish()
                for event in events:
                    await self._agent_line(event)
                if not chunk:
                    break
            if self.flow is not None:  # what is still held goes out before the streams close
                await self._sends(self.flow.flush())
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            if not self.ended:
                self.end("the agent's output ended")

    async def _agent_line(self, event: Any) -> None:
        tap = self.tap
        assert tap is not None
        number, raw = event[0], event[1]
        if isinstance(raw, int):
            tap.too_large("agent", raw)
            self.note(f"agent line {number}: longer than {self.gateway.options.max_body_bytes} bytes (dropped)")
            return
        eol = raw.endswith(b"\n")
        crlf = raw.endswith(b"\r\n")
        line = raw[: len(raw) - (2 if crlf else 1 if eol else 0)]
        if not line.strip():
            return
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            message = None
        if not isinstance(message, (dict, list)):
            error = line_error(line, number)
            tap.line("agent", line, is_json=False, crlf=crlf, eol=eol, action="diverted")
            self.note(f"agent line {number}: {error} (diverted here)")
            sys.stderr.buffer.write(line + b"\n")
            return
        self.last = time.monotonic()
        flow = self.flow
        assert flow is not None
        async with self.emitting:
            to_client, to_agent = flow.from_agent(line, crlf=crlf, eol=eol)
            await self._to_client(to_client, line, message)
        await self._sends(([], to_agent))
        if flow.deadline is not None and (self.releaser is None or self.releaser.done()):
            self.releaser = asyncio.ensure_future(self._release_due())

    async def _deliver(self, line: bytes, message: Any) -> None:
        """An agent message to the client: a text frame, or routed to its SSE stream."""
        if self.ws is not None:
            if not self.ws.closed:
                await self.ws.send_frame(line, WSMsgType.TEXT)
            return
        await self._route(line, message)

    async def _release_due(self) -> None:
        """Release the held updates (`--coalesce`, `--bridge 1:2 --coalesce`) as they fall due
        (while the agent is quiet)."""
        flow = self.flow
        assert flow is not None
        while not self.ended:
            deadline = flow.deadline
            if deadline is None:
                break
            await asyncio.sleep(max(0.0, deadline - time.monotonic()))
            async with self.emitting:
                to_client, to_agent = flow.due(time.monotonic())
                await self._to_client(to_client)
            await self._sends(([], to_agent))

    async def _route(self, line: bytes, message: Any) -> None:
        """Where an agent message goes on HTTP: the answer to `initialize` in its POST; a response
        on the stream of its request's session (on the connection's when the response names a new
        session, or answers a load); a request or notification on its session's stream when that
        exists, else on the connection's."""
        sid: Optional[str] = wire.session_of(message)
        if wire.is_response(message):
            k = wire.key(message.get("id"))
            if k == self.init_id and self.init_answer is not None and not self.init_answer.done():
                self.init_answer.set_result(line)
                return
            sid = self._route_response(message, k)
        if sid is not None and sid in self.loads.values():
            sid = None  # a replay comes on the connection's stream, in order
        channel = self.sessions.get(sid, self.stream) if sid is not None else self.stream
        if channel is not None:
            await channel.put(line)

    def _route_response(self, message: Dict[str, Any], k: Optional[str]) -> Optional[str]:
        loaded = self.loads.pop(k, None) if k is not None else None
        if loaded is not None:
            if "result" in message:
                self.provisional.discard(loaded)
            elif loaded in self.provisional and loaded not in self.loads.values():
                self.provisional.discard(loaded)
                ch = self.sessions.pop(loaded, None)
                if ch is not None:
                    ch.close()
            return None
        sid = self.routes.pop(k, None) if k is not None else None
        new = wire.session_in_result(message)
        if new is not None:
            if new not in self.sessions:
                self.sessions[new] = Channel(self.gateway.options.queue)
            self.provisional.discard(new)
            return None  # the client learns the session from this response, then opens its stream
        return sid


class Gateway:
    """The server of `acp-fast serve`: the aiohttp application, the connections, the limits."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.connections: Dict[str, Connection] = {}
        self.count = 0
        self.stopping = False
        self.app = web.Application(client_max_size=options.max_body_bytes + 1, handler_args={"lingering_time": 0})
        self.app.router.add_route("POST", wire.ACP_PATH, self.post)
        self.app.router.add_route("GET", wire.ACP_PATH, self.get)
        self.app.router.add_route("DELETE", wire.ACP_PATH, self.delete)
        self.app.middlewares.append(self._auth)
        self.starting = 0

    def note(self, text: str) -> None:
        sys.stderr.write(f"acp-fast serve: {printable(text)}\n")
        sys.stderr.flush()

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        token = self.options.token
        if token is not None:
            given = request.headers.get("Authorization", "")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
                why = "no Authorization header" if not given else "a wrong token"
                return _error(
                    401,
                    f"expected Authorization: Bearer TOKEN (the gateway's --token), found {why}",
                    {"WWW-Authenticate": 'Bearer realm="acp"'},
                )
        if request.path != wire.ACP_PATH:
            return _error(404, f"expected the endpoint {wire.ACP_PATH}, found {request.path}")
        try:
            response: web.StreamResponse = await handler(request)
            return response
        except web.HTTPException:
            raise
        except Exception as e:  # noqa: BLE001 - one line, never a traceback
            self.note(f"{request.method} {request.path}: internal error: {type(e).__name__}: {e}")
            return _error(500, f"internal error: {type(e).__name__}: {e}")

    def _full(self) -> Optional[web.Response]:
        if self.stopping:
            return _error(503, "the gateway is shutting down", {"Retry-After": "5"})
        limit = self.options.max_connections
        if limit is not None and len(self.connections) + self.starting >= limit:
            return _error(
                503,
                f"the gateway holds its maximum of {self.options.max_connections} connections (--max-connections)",
                {"Retry-After": "1"},
            )
        return None

    async def _start(self, kind: str) -> Connection:
        self.starting += 1
        try:
            conn = Connection(self, kind)
            await conn.start()
            return conn
        finally:
            self.starting -= 1

    # -- POST -----------------------------------------------------------------------------------

    async def _body(self, request: web.Request) -> Any:
        limit = self.options.max_body_bytes
        length = request.content_length
        if length is not None and length > limit:
            return _error(413, f"expected a body of at most {limit} bytes (--max-body-bytes), found {length}")
        body = await request.content.read(limit + 1)
        if len(body) > limit:
            return _error(413, f"expected a body of at most {limit} bytes (--max-body-bytes), found more")
        return body

    async def post(self, request: web.Request) -> web.StreamResponse:
        ctype = request.headers.get("Content-Type", "")
        if not ctype.lower().startswith("application/json"):
            return _error(415, f"expected Content-Type: application/json, found {ctype or 'none'}")
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError as e:
            return _error(400, f"expected one JSON-RPC message as JSON, found invalid JSON: {e}")
        if isinstance(message, list):
            return _error(501, "batch requests are not supported over HTTP (send one message per POST)")
        if not isinstance(message, dict):
            return _error(400, "expected one JSON-RPC message (a JSON object)")
        line = body.strip()
        if b"\n" in line or b"\r" in line:
            line = orjson.dumps(message)  # one line for the agent
        if wire.is_initialize(message):
            return await self._initialize(request, line, message)
        cid = request.headers.get(wire.CONNECTION_HEADER)
        if cid is None:
            return _error(400, f"expected the {wire.CONNECTION_HEADER} header (the answer to initialize gave it)")
        conn = self.connections.get(cid)
        if conn is None or conn.ended:
            return _error(404, f"unknown connection {printable(cid)} (ended, or never started here)")
        sid = request.headers.get(wire.SESSION_HEADER)
        method = message.get("method")
        if method in wire.SESSION_SCOPED_METHODS and sid is None:
            return _error(400, f"expected the {wire.SESSION_HEADER} header with {method}")
        if sid is not None and sid not in conn.sessions:
            return _error(404, f"unknown session {printable(sid)} on this connection")
        answer = conn.invalid(line)
        if answer is not None:
            return web.Response(status=400, body=answer, content_type="application/json")
        try:
            await conn.to_agent(line, message)
        except ConnectionError:
            return _error(410, "the connection's agent has exited")
        return web.Response(status=202)

    async def _initialize(self, request: web.Request, line: bytes, message: Dict[str, Any]) -> web.StreamResponse:
        if request.headers.get(wire.CONNECTION_HEADER):
            return _error(400, "initialize starts a connection: expected no Acp-Connection-Id header")
        full = self._full()
        if full is not None:
            return full
        try:
            conn = await self._start("http")
        except StartError as e:
            return _error(e.status, str(e))
        conn.init_id = wire.key(message.get("id"))
        conn.init_answer = asyncio.get_running_loop().create_future()
        conn.stream = Channel(self.options.queue)
        refused = conn.invalid(line)
        if refused is not None:
            conn.end("initialize is not JSON-RPC (--strict)")
            return web.Response(status=400, body=refused, content_type="application/json")
        try:
            await conn.to_agent(line, message)
            answer = await asyncio.wait_for(asyncio.shield(conn.init_answer), INITIALIZE_TIMEOUT)
        except asyncio.TimeoutError:
            conn.end("no answer to initialize")
            return _error(504, f"the agent did not answer initialize within {INITIALIZE_TIMEOUT:g} s")
        except ConnectionError:
            conn.end("initialize not answered")
            return _error(502, "the agent exited before it answered initialize")
        except asyncio.CancelledError:  # the client went away
            conn.end("the client went away during initialize")
            raise
        return web.Response(body=answer, content_type="application/json", headers={wire.CONNECTION_HEADER: conn.id})

    # -- GET: SSE or WebSocket ------------------------------------------------------------------

    async def get(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return await self.websocket(request)
        accept = request.headers.get("Accept", "")
        if "text/event-stream" not in accept and "*/*" not in accept:
            return _error(406, f"expected Accept: text/event-stream, found {accept or 'none'}")
        cid = request.headers.get(wire.CONNECTION_HEADER)
        if cid is None:
            return _error(400, f"expected the {wire.CONNECTION_HEADER} header (the answer to initialize gave it)")
        conn = self.connections.get(cid)
        if conn is None or conn.stream is None:
            return _error(404, f"unknown connection {printable(cid)} (ended, or never started here)")
        sid = request.headers.get(wire.SESSION_HEADER)
        channel = conn.stream if sid is None else conn.sessions.get(sid)
        if channel is None:
            return _error(404, f"unknown session {printable(sid or '')} on this connection")
        if conn.ended and not channel.items:  # ended: only what the client has not fetched yet
            return _error(404, f"connection {printable(cid)} has ended (its agent exited)")
        if channel.reader:
            return _error(409, "this stream is already open (one GET per connection and per session)")
        channel.reader = True
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        )
        try:
            await response.prepare(request)
            while True:
                lines = await channel.take(wire.KEEPALIVE_SECONDS)
                if lines is None:
                    break
                if not lines:
                    await response.write(wire.KEEPALIVE)
                    continue
                await response.write(b"".join(b"data: " + x + b"\n\n" for x in lines))
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            channel.reader = False
        return response

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        full = self._full()
        if full is not None:
            return full
        ws = web.WebSocketResponse(max_msg_size=self.options.max_body_bytes, heartbeat=30.0)
        if not ws.can_prepare(request).ok:
            return _error(400, "expected a WebSocket upgrade request (Connection: Upgrade, Sec-WebSocket-Key)")
        try:
            conn = await self._start("ws")
        except StartError as e:
            return _error(e.status, str(e))
        ws.headers[wire.CONNECTION_HEADER] = conn.id
        conn.ws = ws
        try:
            await ws.prepare(request)
        except Exception:
            conn.ws = None
            await conn.end("WebSocket handshake failed")
            raise
        warned = False
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    line = msg.data.encode()
                    line = line.strip()
                    if b"\n" in line or b"\r" in line:
                        try:
                            line = orjson.dumps(orjson.loads(line))
                        except orjson.JSONDecodeError:
                            line = line.replace(b"\r", b" ").replace(b"\n", b" ")
                    answer = conn.invalid(line)
                    if answer is not None:
                        await ws.send_frame(answer, WSMsgType.TEXT)
                        continue
                    try:
                        message = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        message = None
                    await conn.to_agent(line, message)
                elif msg.type == WSMsgType.BINARY:
                    if not warned:
                        warned = True
                        conn.note("binary WebSocket frames ignored (ACP messages are text frames)")
                elif msg.type == WSMsgType.ERROR:
                    conn.note(f"WebSocket error: {ws.exception()}")
                    break
        except ConnectionError:
            pass
        finally:
            await conn.end("the client closed the WebSocket" if not conn.ended else "ended")
        return ws

    # -- DELETE ---------------------------------------------------------------------------------

    async def delete(self, request: web.Request) -> web.StreamResponse:
        cid = request.headers.get(wire.CONNECTION_HEADER)
        if cid is None:
            return _error(400, f"expected the {wire.CONNECTION_HEADER} header")
        conn = self.connections.get(cid)
        if conn is None:
            return _error(404, f"unknown connection {printable(cid)} (ended, or never started here)")
        conn.end("the client ended the connection (DELETE)")
        return web.Response(status=202)

    # -- housekeeping ---------------------------------------------------------------------------

    async def housekeeping(self) -> None:
        """Flush the recordings; end the connections idle longer than `--idle-timeout`."""
        idle = self.options.idle_timeout
        period = FLUSH_SECONDS
        next_idle = time.monotonic()
        while True:
            await asyncio.sleep(period)
            for conn in list(self.connections.values()):
                if conn.tap is not None:
                    conn.tap.flush()
            now = time.monotonic()
            if idle > 0 and now >= next_idle:
                next_idle = now + min(idle / 4, 5.0)
                for conn in list(self.connections.values()):
                    if conn.ending is None and now - conn.last > idle:
                        conn.end(f"idle for more than {idle:g} s (--idle-timeout)")

    async def shutdown(self) -> None:
        """Drain: every connection ended (agents given their grace), recordings completed."""
        self.stopping = True
        ends = [c.end("the gateway is shutting down") for c in list(self.connections.values())]
        if ends:
            await asyncio.gather(*ends, return_exceptions=True)


def _more_files() -> None:
    """Each connection holds several descriptors (its sockets, the agent's three pipes): the soft
    limit on open files is raised to the hard one (often 1,024 soft, too few for 500 connections)."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = hard if hard != resource.RLIM_INFINITY else 1 << 20
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ImportError, ValueError, OSError):  # not POSIX, or not allowed: the limit stays
        pass


def _watch_children_by_pidfd() -> Optional[Any]:
    """Python 3.11's asyncio waits for each agent process in a thread of its own (its threaded
    child watcher: 500 connections, 500 threads); where Linux gives process descriptors, the
    running event loop watches them instead, as Python 3.12 does by default. The watcher it
    replaced (None: nothing replaced)."""
    if sys.version_info >= (3, 12) or not hasattr(asyncio, "PidfdChildWatcher"):
        return None
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):  # not Linux 5.3+, or not allowed here: threads it is
        return None
    previous = asyncio.get_child_watcher()
    watcher = asyncio.PidfdChildWatcher()
    watcher.attach_loop(asyncio.get_running_loop())
    asyncio.set_child_watcher(watcher)
    return previous


async def serve(options: Options) -> int:
    """Run the gateway until SIGTERM or SIGINT; 0 after a clean shutdown."""
    previous = _watch_children_by_pidfd()
    try:
        return await _serve(options)
    finally:
        if previous is not None:
            asyncio.set_child_watcher(previous)


async def _serve(options: Options) -> int:
    _more_files()
    gateway = Gateway(options)
    stop = asyncio.Event()  # SIGTERM / SIGINT: from before the gateway says it listens
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    runner = web.AppRunner(gateway.app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, options.host, options.port, reuse_address=True)
    try:
        await site.start()
    except OSError as e:
        await runner.cleanup()
        print(
            f"acp-fast serve: error: cannot listen on {options.host}:{options.port}: {e.strerror or e}",
            file=sys.stderr,
        )
        return 1
    addresses = runner.addresses
    port = int(addresses[0][1]) if addresses else options.port
    host = options.host if ":" not in options.host else f"[{options.host}]"
    gateway.note(
        f"listening on http://{host}:{port}{wire.ACP_PATH} (WebSocket: ws://{host}:{port}{wire.ACP_PATH}); "
        f"agent: {' '.join(options.command)}"
    )
    keeper = asyncio.ensure_future(gateway.housekeeping())
    await stop.wait()
    gateway.note(f"shutting down: {len(gateway.connections)} connections to end")
    await site.stop()
    await gateway.shutdown()
    keeper.cancel()
    await runner.cleanup()
    gateway.note("stopped")
    return 0


def run(options: Options) -> int:
    """`serve` in a new event loop."""
    return asyncio.run(serve(options))


def is_loopback(host: str) -> bool:
    """The address can be reached only from this machine (`localhost`, 127.0.0.0/8, ::1)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
