"""Load benchmark of ACP gateways over Streamable HTTP (or WebSocket): ``python -m acp_fast.bench.serve``.

Many concurrent connections (``--connections``, default 300), each: ``initialize``,
``session/new`` and its SSE streams (the connection's and the session's), then, once every
connection is set up (they are all held at once), a ``session/prompt`` that the agent answers
after ``--updates`` streamed ``session/update`` notifications (``agent_message_chunk``, about
``--update-bytes`` each, the agent's ``CLOCK_MONOTONIC`` send time in nanoseconds at the head of
the text), then ``DELETE`` (close). The same workload against each contender, one after the other:

* ``sdk``: the official Python SDK's own server (``acp.http.asgi.create_asgi_app``, its
  ``AcpServer``; SDK 1.0 with its ``http`` extra) under uvicorn, serving an SDK agent that streams
  the updates (``python -m acp_fast.bench.serve sdk-server``);
* ``sdk+install``: the same with ``acp_sdk.install()`` (acp-fast's JSON on the SDK's transports);
* ``acp-fast serve``: ``acp-fast serve --listen 127.0.0.1:PORT -- AGENT``, one stdio agent
  process per connection (``AGENT``: a small Python script streaming the same updates); skipped,
  and the report says so, where this acp-fast has no ``serve`` command;
* any other: ``--contender NAME URL COMMAND`` (``{port}`` in both is a free port; ``COMMAND`` is
  split as a shell would, ``-`` for a server already running, which is then not measured).

Two modes, two measures (run the bench once in each):

* throughput (the default, ``--interval 0``): each agent writes its updates back to back, as
  fast as it can; the figure is frames/s, with the gateway's CPU per frame delivered (the load
  client or the agents, not the gateway, may set the pace: the gateway's CPU per frame says what
  a frame costs it). The latency in this mode is mostly queueing (an update waits behind the
  frames sent before it), and differs in kind between contenders: the SDK's in-process agent
  makes each update when the server's loop runs it, a stdio agent writes all of its own at
  once; it is reported, not compared;
* latency (``--interval MS``): each agent, the SDK's in-process one and the stdio one alike,
  waits MS ms before each update (before the first, a random part of MS, so that the
  connections' updates spread over the interval rather than all leave at once) and stamps it
  as it sends it; p50 / p99 from that stamp to
  the client's receipt, with the system not saturated (choose MS so that
  connections × 1000 / MS frames/s is well below every contender's throughput).

Measured per contender: connections held at once (set up and open together), frames delivered
to the clients per second during the prompt phase (updates and answers, all connections), the
latency of an update from agent to client (p50 / p99: the client's ``CLOCK_MONOTONIC`` on arrival
minus the agent's send time), and the gateway's CPU seconds and RSS (peak, and the peak above its
idle RSS per connection), read from ``/proc``: for the server process alone and for its process
tree (with the agent processes of ``acp-fast serve``). The CPU covers the whole run of the load
client (set up, prompt, close); per frame, it is divided by the frames of the prompt phase, so it
includes each connection's set-up cost (small against the frames in throughput mode). The SDK's
agent runs inside its server, so the ``sdk`` gateway's CPU includes the agent's work; that of
``acp-fast serve`` does not (its agents are in the tree's figure).

The load client is an asyncio program on aiohttp (SSE parsed line by line) in a process of its
own (``python -m acp_fast.bench.serve client``), so that it never shares the server's GIL; it
raises its open-file limit to the hard limit, as this process does for the servers it starts.
``--repeat N`` runs the contenders in turn N times and reports, per contender, the run of median
frames/s (with the range of all runs; held and completed are the least of all runs). Prints
progress on stderr and a Markdown table on stdout; ``--json FILE`` writes the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shlex
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

#: The stdio agent behind ``acp-fast serve``: NDJSON on stdin / stdout, the standard library only
#: (``python -S``: one process per connection), each update written and flushed at once.
STDIO_AGENT = r"""
import json, random, sys, time
updates, size = int(sys.argv[1]), int(sys.argv[2])
interval = float(sys.argv[3]) / 1000 if len(sys.argv) > 3 else 0.0
out = sys.stdout.buffer
sessions = 0
for line in sys.stdin.buffer:
    if not line.strip():
        continue
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if rid is None or method is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
    elif method == "session/new":
        sessions += 1
        result = {"sessionId": "s%d" % sessions}
    elif method == "session/prompt":
        sid = msg["params"]["sessionId"]
        for i in range(updates):
            if interval:
                time.sleep(interval * random.random() if i == 0 else interval)
            stamp = "%020d " % time.monotonic_ns()
            text = stamp + "x" * max(0, size - 160 - len(stamp))
            update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
            out.write(json.dumps({"jsonrpc": "2.0", "method": "session/update",
                                  "params": {"sessionId": sid, "update": update}}).encode() + b"\n")
            out.flush()
        result = {"stopReason": "end_turn"}
    else:
        out.write(json.dumps({"jsonrpc": "2.0", "id": rid,
                              "error": {"code": -32601, "message": "Method not found"}}).encode() + b"\n")
        out.flush()
        continue
    out.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode() + b"\n")
    out.flush()
"""

#: The two modes, as the module docstring describes them (also in ``--help``).
_PARTS = (__doc__ or "").split("\n\n")
MODES = "\n\n".join(_PARTS[_PARTS.index(next(p for p in _PARTS if p.startswith("Two modes"))) :][:2])

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _progress(text: str) -> None:
    print(f"[bench.serve] {text}", file=sys.stderr, flush=True)


def raise_nofile() -> Tuple[int, int]:
    """Raise the soft limit of open files to the hard limit; the limits now in force."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not Linux
        return (-1, -1)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 16)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            pass
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def stamp_text(size: int) -> str:
    """An update's text: the send time (``CLOCK_MONOTONIC``, ns, 20 digits) and padding, so that
    the whole frame is about ``size`` bytes."""
    stamp = f"{time.monotonic_ns():020d} "
    return stamp + "x" * max(0, size - 160 - len(stamp))


# ---------------------------------------------------------------------------------------------
# The SDK's server (a contender), run as `python -m acp_fast.bench.serve sdk-server`


def sdk_server(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m acp_fast.bench.serve sdk-server")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--updates", type=int, default=20)
    p.add_argument("--update-bytes", type=int, default=400)
    p.add_argument("--interval", type=float, default=0.0, help="ms before each update (0: none)")
    p.add_argument("--install", action="store_true", help="acp_sdk.install() first")
    args = p.parse_args(argv)
    raise_nofile()
    import warnings

    warnings.simplefilter("ignore", DeprecationWarning)
    if args.install:
        from acp_fast.integrations import acp_sdk

        acp_sdk.install()
    import uvicorn
    from acp import schema as S
    from acp.http.asgi import create_asgi_app

    updates, size, interval = args.updates, args.update_bytes, args.interval / 1000

    class BenchAgent:
        def __init__(self) -> None:
            self.conn: Any = None
            self.sessions = 0

        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, **kwargs: Any) -> Any:
            return S.InitializeResponse(protocol_version=protocol_version)

        async def new_session(self, **kwargs: Any) -> Any:
            self.sessions += 1
            return S.NewSessionResponse(session_id=f"s{self.sessions}")

        async def prompt(self, session_id: str, **kwargs: Any) -> Any:
            for i in range(updates):
                if interval:
                    await asyncio.sleep(interval * random.random() if i == 0 else interval)
                chunk = S.AgentMessageChunk(
                    session_update="agent_message_chunk",
                    content=S.TextContentBlock(type="text", text=stamp_text(size)),
                )
                await self.conn.session_update(session_id, chunk)
            return S.PromptResponse(stop_reason="end_turn")

        async def cancel(self, **kwargs: Any) -> None:
            return None

    def factory(conn: Any) -> Any:  # one agent per connection
        return BenchAgent()

    app = create_asgi_app(factory)
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level="warning", backlog=4096)
    uvicorn.Server(config).run()
    return 0


# ---------------------------------------------------------------------------------------------
# The load client, run as `python -m acp_fast.bench.serve client`


class _Conn:
    """One client connection's state and figures."""

    def __init__(self) -> None:
        self.connection_id: Optional[str] = None
        self.session_id: Optional[str] = None
        self.inbox: asyncio.Queue[Any] = asyncio.Queue()
        self.tasks: List[asyncio.Task[Any]] = []
        self.responses: List[Any] = []
        self.latencies: List[int] = []
        self.frames = 0
        #: Set up (initialized, session created, streams open) and waiting for the others.
        self.held = False


async def _sse(response: Any, inbox: asyncio.Queue[Any], loads: Any) -> None:
    """The events of an SSE stream into ``inbox``, each with its arrival time. The stream is read
    in the chunks that arrive and cut at blank lines (an event per ``data:`` run), not line by
    line: the load client's own cost per frame stays small beside the gateways'."""
    rest = b""
    try:
        async for chunk in response.content.iter_any():
            at = time.monotonic_ns()
            events = (rest + chunk).replace(b"\r\n", b"\n").split(b"\n\n")
            rest = events.pop()
            for event in events:
                data = [line[5:] for line in event.split(b"\n") if line.startswith(b"data:")]
                if data:
                    text = b"\n".join(x[1:] if x[:1] == b" " else x for x in data)
                    inbox.put_nowait((at, loads(text)))
    except Exception as error:  # noqa: BLE001 - the stream's end, reported by the waiter
        inbox.put_nowait((time.monotonic_ns(), error))
    finally:
        response.close()


async def _next_message(conn: _Conn, timeout: float) -> Tuple[int, Any]:
    inbox = conn.inbox
    # a message already there is taken as it is (a wait_for would make a task for each)
    at, message = inbox.get_nowait() if not inbox.empty() else await asyncio.wait_for(inbox.get(), timeout)
    if isinstance(message, BaseException):
        raise message
    return at, message


async def _until_answered(conn: _Conn, timeout: float) -> None:
    """The prompt phase of a connection: every message until the prompt's answer (id 2)."""
    while True:
        at, message = await _next_message(conn, timeout)
        _take(conn, at, message)
        if message.get("id") == 2:
            conn.responses.append(message)
            return


def _take(conn: _Conn, at: int, message: Any) -> None:
    """Count a message received in the prompt phase; an update's latency."""
    conn.frames += 1
    if message.get("method") == "session/update":
        text = message["params"]["update"]["content"]["text"]
        conn.latencies.append(at - int(text[:20]))


#: The client's first two messages on every connection (the same for both transports).
_INITIALIZE = json.dumps(
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}
)
_SESSION_NEW = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}
)


def _prompt(session_id: Optional[str]) -> str:
    """The connection's one prompt (id 2), answered after the agent's updates."""
    params = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
    return json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": params})


async def _http_connection(
    http: Any, url: str, conn: _Conn, ready: Any, go: asyncio.Event, updates: int, timeout: float, loads: Any
) -> None:
    json_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    try:
        async with http.post(url, data=_INITIALIZE, headers=json_headers) as r:
            body = await r.read()
            if r.status != 200:
                raise RuntimeError(f"initialize: HTTP {r.status}: {body[:200]!r}")
            conn.connection_id = r.headers["Acp-Connection-Id"]
            loads(body)
        headers = {**json_headers, "Acp-Connection-Id": conn.connection_id}
        sse = {"Accept": "text/event-stream", "Acp-Connection-Id": conn.connection_id}
        stream = await http.get(url, headers=sse)
        if stream.status != 200:
            raise RuntimeError(f"GET (connection stream): HTTP {stream.status}")
        conn.tasks.append(asyncio.ensure_future(_sse(stream, conn.inbox, loads)))
        async with http.post(url, data=_SESSION_NEW, headers=headers) as r:
            await r.read()
            if r.status not in (200, 202):
                raise RuntimeError(f"session/new: HTTP {r.status}")
        while conn.session_id is None:
            _, message = await _next_message(conn, timeout)
            if message.get("id") == 1:
                conn.session_id = message["result"]["sessionId"]
        stream = await http.get(url, headers={**sse, "Acp-Session-Id": conn.session_id})
        if stream.status != 200:
            raise RuntimeError(f"GET (session stream): HTTP {stream.status}")
        conn.tasks.append(asyncio.ensure_future(_sse(stream, conn.inbox, loads)))
        conn.held = True
    finally:
        ready()
    await go.wait()
    prompt = _prompt(conn.session_id)
    async with http.post(url, data=prompt, headers={**headers, "Acp-Session-Id": conn.session_id}) as r:
        await r.read()
        if r.status not in (200, 202):
            raise RuntimeError(f"session/prompt: HTTP {r.status}")
    await _until_answered(conn, timeout)


async def _ws_connection(
    http: Any, url: str, conn: _Conn, ready: Any, go: asyncio.Event, updates: int, timeout: float, loads: Any
) -> None:
    ws_url = "ws" + url[4:] if url.startswith("http") else url
    try:
        ws = await http.ws_connect(ws_url, max_msg_size=0)
        await ws.send_str(_INITIALIZE)
        loads((await ws.receive(timeout)).data)
        await ws.send_str(_SESSION_NEW)
        conn.session_id = loads((await ws.receive(timeout)).data)["result"]["sessionId"]
        conn.tasks.append(asyncio.ensure_future(_ws_reader(ws, conn.inbox, loads)))
        conn.ws = ws  # type: ignore[attr-defined]
        conn.held = True
    finally:
        ready()
    await go.wait()
    prompt = _prompt(conn.session_id)
    await ws.send_str(prompt)
    await _until_answered(conn, timeout)


async def _ws_reader(ws: Any, inbox: asyncio.Queue[Any], loads: Any) -> None:
    import aiohttp

    try:
        async for frame in ws:
            if frame.type == aiohttp.WSMsgType.TEXT:
                inbox.put_nowait((time.monotonic_ns(), loads(frame.data)))
    except Exception as error:  # noqa: BLE001 - reported by the waiter
        inbox.put_nowait((time.monotonic_ns(), error))
    inbox.put_nowait((time.monotonic_ns(), ConnectionError("the WebSocket closed")))


async def _close(http: Any, url: str, conn: _Conn) -> None:
    ws = getattr(conn, "ws", None)
    if ws is not None:
        await ws.close()
    elif conn.connection_id is not None:
        try:
            async with http.delete(url, headers={"Acp-Connection-Id": conn.connection_id}) as r:
                await r.read()
        except Exception:  # noqa: BLE001 - the connection's figures are taken already
            pass
    for task in conn.tasks:
        task.cancel()
    await asyncio.gather(*conn.tasks, return_exceptions=True)


def _percentile(values: List[int], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


async def load(url: str, connections: int, updates: int, transport: str, timeout: float) -> Dict[str, Any]:
    """The client side of one run: every connection set up, all held, then all prompted at once."""
    import aiohttp

    try:
        import acp_fast

        loads: Any = acp_fast.loads
    except ImportError:  # pragma: no cover - the bench runs from the package
        loads = json.loads
    conns = [_Conn() for _ in range(connections)]
    go = asyncio.Event()
    all_ready = asyncio.Event()
    left = [connections]

    def ready() -> None:
        left[0] -= 1
        if left[0] == 0:
            all_ready.set()

    one = _http_connection if transport == "http" else _ws_connection
    connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=None)
    client_timeout = aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=None)
    async with aiohttp.ClientSession(connector=connector, timeout=client_timeout) as http:
        start = time.perf_counter()
        tasks = [asyncio.ensure_future(one(http, url, c, ready, go, updates, timeout, loads)) for c in conns]
        await asyncio.wait_for(all_ready.wait(), timeout * 4)
        setup = time.perf_counter() - start
        held = sum(1 for c in conns if c.held)
        prompt_start = time.perf_counter()
        go.set()
        done, _ = await asyncio.wait(tasks)
        prompt_seconds = time.perf_counter() - prompt_start
        await asyncio.gather(*(_close(http, url, c) for c in conns), return_exceptions=True)
    errors = [repr(t.exception()) for t in tasks if t.exception() is not None]
    latencies = [v for c in conns for v in c.latencies]
    frames = sum(c.frames for c in conns)
    ok = sum(1 for c in conns if c.responses and "result" in c.responses[0])
    return {
        "connections": connections,
        "held": held,
        "completed": ok,
        "failed": len(errors),
        "errors": sorted(set(errors))[:5],
        "setup_seconds": setup,
        "prompt_seconds": prompt_seconds,
        "frames": frames,
        "updates_received": len(latencies),
        "frames_per_s": frames / prompt_seconds if prompt_seconds > 0 else 0.0,
        "latency_us": {
            "p50": _percentile(latencies, 0.50) / 1e3,
            "p99": _percentile(latencies, 0.99) / 1e3,
            "max": (max(latencies) / 1e3) if latencies else float("nan"),
        },
    }


def client_main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m acp_fast.bench.serve client")
    p.add_argument("--url", required=True)
    p.add_argument("--connections", type=int, default=300)
    p.add_argument("--updates", type=int, default=20)
    p.add_argument("--transport", choices=("http", "ws"), default="http")
    p.add_argument("--timeout", type=float, default=60.0)
    args = p.parse_args(argv)
    raise_nofile()
    result = asyncio.run(load(args.url, args.connections, args.updates, args.transport, args.timeout))
    print(json.dumps(result))
    return 0


# ---------------------------------------------------------------------------------------------
# The gateway's CPU and memory, from /proc


def _children(pid: int) -> List[int]:
    found: List[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                found.extend(int(c) for c in fh.read().split())
    except OSError:
        pass
    return found


def process_tree(pid: int) -> List[int]:
    """``pid`` and its descendants alive now."""
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo.extend(_children(p))
    return tree


def _stat(pid: int) -> Tuple[float, float]:
    """(own CPU seconds, CPU seconds of the children it has waited for)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return (utime + stime) / TICKS, (cutime + cstime) / TICKS


def _rss(pid: int, field: str = "VmRSS") -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Sampler:
    """Samples the RSS of a server process and of its process tree until stopped."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.pid = pid
        self.interval = interval
        self.peak_rss = 0
        self.peak_tree_rss = 0
        self.peak_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        tree = process_tree(self.pid)
        self.peak_rss = max(self.peak_rss, _rss(self.pid))
        self.peak_tree_rss = max(self.peak_tree_rss, sum(_rss(p) for p in tree))
        self.peak_processes = max(self.peak_processes, len(tree))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> Sampler:  # noqa: PYI034 - not subclassed
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


def _children_cpu() -> float:
    """CPU seconds of the children of this process reaped so far."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu(pid: int) -> Tuple[float, float]:
    """(CPU seconds of the server process, of its tree: the processes alive and those reaped)."""
    own = _stat(pid)[0]
    tree = sum(sum(_stat(p)) for p in process_tree(pid))
    return own, tree


# ---------------------------------------------------------------------------------------------
# Contenders and the run


class Contender:
    """A server to measure: its start command (None: already running) and URL, ``{port}`` in
    either replaced by a free port."""

    def __init__(self, name: str, url: str, command: Optional[List[str]], skip: Optional[str] = None) -> None:
        self.name = name
        self.url = url
        self.command = command
        self.skip = skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(host: str, port: int, process: Optional[subprocess.Popen[bytes]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode} before listening")
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {host}:{port} after {timeout:.0f} s")


def http_stack() -> str:
    """What serves the SDK's app here: uvicorn's version, HTTP parser and event loop (its
    ``auto`` choices: httptools and uvloop when installed, else h11 and asyncio)."""
    import importlib.util

    try:
        from importlib.metadata import version

        uvicorn = f"uvicorn {version('uvicorn')}"
    except Exception:  # noqa: BLE001 - not installed
        return "uvicorn not installed"
    parser = "httptools" if importlib.util.find_spec("httptools") else "h11"
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    ws = "websockets" if importlib.util.find_spec("websockets") else "wsproto"
    return f"{uvicorn} ({parser}, {loop} loop, {ws}; HTTP/1.1: uvicorn has no HTTP/2)"


def sdk_unavailable(transport: str = "http") -> Optional[str]:
    """Why the SDK's server cannot run here (over ``transport``), or None."""
    import importlib
    import importlib.util

    try:
        importlib.import_module("acp.http.asgi")
    except ImportError as error:  # no acp.http, or the SDK's own message naming its extra
        return f"the SDK's HTTP server cannot be imported: {error}"
    if importlib.util.find_spec("uvicorn") is None:
        return "uvicorn is not installed"
    if transport == "ws" and not (importlib.util.find_spec("websockets") or importlib.util.find_spec("wsproto")):
        return "uvicorn has no WebSocket library (websockets or wsproto) here"
    return None


def serve_unavailable() -> Optional[str]:
    """Why ``acp-fast serve`` cannot run here, or None."""
    done = subprocess.run([sys.executable, "-m", "acp_fast.cli", "serve", "--help"], capture_output=True, timeout=60)
    if done.returncode != 0:
        return "this acp-fast has no `serve` command"
    return None


def builtin_contenders(
    updates: int, size: int, names: Sequence[str], transport: str = "http", interval_ms: float = 0.0
) -> List[Contender]:
    url = "http://127.0.0.1:{port}/acp"
    sdk = [sys.executable, "-m", "acp_fast.bench.serve", "sdk-server", "--port", "{port}",
           "--updates", str(updates), "--update-bytes", str(size), "--interval", str(interval_ms)]  # fmt: skip
    agent = [sys.executable, "-S", "-c", STDIO_AGENT, str(updates), str(size), str(interval_ms)]
    serve = [sys.executable, "-m", "acp_fast.cli", "serve", "--listen", "127.0.0.1:{port}", "--quiet",
             "--max-connections", "none", "--", *agent]  # fmt: skip
    out = []
    for name in names:
        if name == "sdk":
            out.append(Contender("sdk", url, sdk, sdk_unavailable(transport)))
        elif name == "sdk+install":
            out.append(Contender("sdk+install", url, [*sdk, "--install"], sdk_unavailable(transport)))
        elif name == "acp-fast serve":
            out.append(Contender("acp-fast serve", url, serve, serve_unavailable()))
        else:
            raise ValueError(f"unknown contender {name!r} (sdk, sdk+install, acp-fast serve)")
    return out


def run_contender(contender: Contender, args: argparse.Namespace) -> Dict[str, Any]:
    port = free_port()
    url = contender.url.replace("{port}", str(port))
    process: Optional[subprocess.Popen[bytes]] = None
    if contender.command is not None:
        command = [part.replace("{port}", str(port)) for part in contender.command]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        host = url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)
        _wait_listening(host[0], int(host[1]) if len(host) > 1 else 80, process, args.timeout)
        client = [sys.executable, "-m", "acp_fast.bench.serve", "client", "--url", url,
                  "--connections", str(args.connections), "--updates", str(args.updates),
                  "--transport", args.transport, "--timeout", str(args.timeout)]  # fmt: skip
        if process is None:
            done = subprocess.run(client, capture_output=True, timeout=args.timeout * 10)
            measured: Dict[str, Any] = (
                json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr.decode()[-2000:]}
            )
            measured["measured"] = False
            return measured
        idle_rss = _rss(process.pid)
        idle_tree_rss = sum(_rss(p) for p in process_tree(process.pid))
        cpu_before = cpu(process.pid)
        children_before = _children_cpu()
        with Sampler(process.pid) as sampler:
            done = subprocess.run(client, capture_output=True, timeout=args.timeout * 10)
            cpu_after = cpu(process.pid)
        if done.returncode != 0:
            raise RuntimeError(f"the load client failed: {done.stderr.decode()[-2000:]}")
        result: Dict[str, Any] = json.loads(done.stdout)
        # the load client's own CPU (the only child reaped meanwhile): near its wall time would
        # mean the client, not the server, sets the pace
        result["client_cpu_seconds"] = _children_cpu() - children_before
        n = max(1, result["held"])
        frames = max(1, result["frames"])
        result["gateway"] = {
            "cpu_seconds": cpu_after[0] - cpu_before[0],
            "cpu_us_per_frame": (cpu_after[0] - cpu_before[0]) / frames * 1e6,
            "rss_idle_mib": idle_rss / 2**20,
            "rss_peak_mib": max(sampler.peak_rss, _rss(process.pid, "VmHWM")) / 2**20,
            "rss_per_connection_kib": (sampler.peak_rss - idle_rss) / n / 1024,
        }
        result["tree"] = {
            "cpu_seconds": cpu_after[1] - cpu_before[1],
            "cpu_us_per_frame": (cpu_after[1] - cpu_before[1]) / frames * 1e6,
            "rss_idle_mib": idle_tree_rss / 2**20,
            "rss_peak_mib": sampler.peak_tree_rss / 2**20,
            "rss_per_connection_kib": (sampler.peak_tree_rss - idle_tree_rss) / n / 1024,
            "processes_peak": sampler.peak_processes,
        }
        result["measured"] = True
        return result
    finally:
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stderr is not None:
                tail = stderr_summary(process.stderr.read().decode(errors="replace"))
                if tail:
                    _progress(f"{contender.name} said on stderr: {tail}")


def stderr_summary(text: str, lines: int = 5, width: int = 200) -> str:
    """A server's stderr, short: the source of the bench's own stdio agent (which a server may
    echo in its agent command) replaced by ``<bench agent>``, its last ``lines`` lines, each cut
    to ``width`` characters."""
    for shown in (STDIO_AGENT, STDIO_AGENT.replace("\n", "\\n"), repr(STDIO_AGENT)):
        text = text.replace(shown, "<bench agent>")
    kept = [line if len(line) <= width else line[: width - 1] + "…" for line in text.strip().splitlines()]
    return " / ".join(kept[-lines:])


def median_run(runs: List[Dict[str, Any]], paced: bool = False) -> Dict[str, Any]:
    """The median run among ``runs`` (a failed one if any failed): of frames/s (throughput mode)
    or of p99 latency (``paced``), with every run's frames/s (``frames_per_s_runs``) and p99
    (``p99_us_runs``) and the least held and completed of all."""
    failed = [r for r in runs if "held" not in r]
    if failed:
        return failed[0]
    # an even number of runs: the worse of the two middle ones (lower frames/s, higher p99)
    ordered = sorted(runs, key=lambda r: r["latency_us"]["p99"] if paced else r["frames_per_s"])
    chosen = dict(ordered[len(ordered) // 2 if paced else (len(ordered) - 1) // 2])
    chosen["repeat"] = len(runs)
    chosen["frames_per_s_runs"] = [r["frames_per_s"] for r in runs]
    chosen["p99_us_runs"] = [r["latency_us"]["p99"] for r in runs]
    chosen["held_min"] = min(r["held"] for r in runs)
    chosen["completed_min"] = min(r["completed"] for r in runs)
    return chosen


def report(results: Dict[str, Any]) -> str:
    w = results["workload"]
    paced = w.get("interval_ms", 0) > 0
    mode = f"latency mode: one update every {w['interval_ms']:g} ms" if paced else "throughput mode: updates unpaced"
    lines = [
        (
            f"{w['connections']} connections ({w['transport']}), each a prompt answered after {w['updates']} "
            f"updates of about {w['update_bytes']} B ({mode}); {results['machine']}; the SDK's server under "
            f"{results['sdk_stack']}"
        ),
        "",
        (
            "| contender | held at once | completed | frames/s | update latency p50 / p99 | gateway CPU (client CPU) "
            "| gateway CPU per frame (tree) | gateway RSS peak (per connection) | tree RSS peak (per connection) |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results["contenders"].items():
        if "skipped" in r:
            lines.append(f"| {name} | not measured: {r['skipped']} | | | | | | | |")
            continue
        if "error" in r:
            lines.append(f"| {name} | failed: {r['error'][:200]} | | | | | | | |")
            continue
        lat = r["latency_us"]
        spread = r.get("frames_per_s_runs", [])
        spread_text = f" ({min(spread):,.0f}–{max(spread):,.0f})" if len(spread) > 1 else ""
        p99s = r.get("p99_us_runs", [])
        p99_text = f" ({min(p99s) / 1e3:,.1f}–{max(p99s) / 1e3:,.1f})" if len(p99s) > 1 else ""
        fps = f"{r['frames_per_s']:,.0f}{spread_text}"
        latency = f"{lat['p50'] / 1e3:,.1f} / {lat['p99'] / 1e3:,.1f}{p99_text} ms"
        fps, latency = (fps, f"**{latency}**") if paced else (f"**{fps}**", latency)
        row = (
            f"| {name} | {r.get('held_min', r['held'])} / {r['connections']} | {r.get('completed_min', r['completed'])} "
            f"| {fps} | {latency} |"
        )
        if r.get("measured"):
            g, t = r["gateway"], r["tree"]
            row += (
                f" {g['cpu_seconds']:.1f} s ({r['client_cpu_seconds']:.1f} s) "
                f"| {g['cpu_us_per_frame']:,.0f} µs ({t['cpu_us_per_frame']:,.0f} µs) "
                f"| {g['rss_peak_mib']:.0f} MiB ({g['rss_per_connection_kib']:.0f} KiB) | "
                f"{t['rss_peak_mib']:.0f} MiB ({t['rss_per_connection_kib']:.0f} KiB, {t['processes_peak']} processes) |"
            )
        else:
            row += " not measured (started elsewhere) | | | |"
        lines.append(row)
        if r.get("errors"):
            lines.append(f"| | errors: {'; '.join(r['errors'])[:300]} | | | | | | | |")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["sdk-server"]:
        return sdk_server(argv[1:])
    if argv[:1] == ["client"]:
        return client_main(argv[1:])
    p = argparse.ArgumentParser(
        prog="python -m acp_fast.bench.serve",
        description=__doc__.split("\n\n")[0] + "\n\n" + MODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--connections", type=int, default=300, help="concurrent connections (default 300)")
    p.add_argument("--updates", type=int, default=20, help="updates streamed per prompt (default 20)")
    p.add_argument("--update-bytes", type=int, default=400, help="about this many bytes per update (default 400)")
    p.add_argument("--transport", choices=("http", "ws"), default="http", help="Streamable HTTP (default) or WebSocket")
    p.add_argument(
        "--interval",
        type=float,
        default=0.0,
        metavar="MS",
        help="latency mode: each agent (all contenders alike) waits MS ms before each update, stamped at "
        "send; choose MS so that connections × 1000 / MS frames/s stays well below every contender's "
        "throughput (default 0: throughput mode, updates unpaced)",
    )
    p.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="built-in contenders to run: sdk, sdk+install, acp-fast serve (default all; repeatable)",
    )
    p.add_argument(
        "--contender",
        action="append",
        nargs=3,
        default=[],
        metavar=("NAME", "URL", "COMMAND"),
        help="another contender: its URL and start command ({port}: a free port; '-': already running)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs per contender, in turn; the report gives the run of median frames/s (default 1)",
    )
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for one step (default 60)")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    args = p.parse_args(argv)
    limits = raise_nofile()
    names = args.only or ["sdk", "sdk+install", "acp-fast serve"]
    if args.interval < 0:
        p.error("--interval must be 0 or more")
    contenders = builtin_contenders(args.updates, args.update_bytes, names, args.transport, args.interval)
    for name, url, command in args.contender:
        contenders.append(Contender(name, url, None if command == "-" else shlex.split(command)))
    try:
        load_average = " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:  # pragma: no cover
        load_average = "?"
    results: Dict[str, Any] = {
        "workload": {
            "connections": args.connections,
            "updates": args.updates,
            "update_bytes": args.update_bytes,
            "transport": args.transport,
            "interval_ms": args.interval,
        },
        "machine": f"{os.cpu_count()} CPUs, load average {load_average}, Python {platform.python_version()}, "
        f"open files {limits[0]}",
        "sdk_stack": http_stack(),
        "contenders": {},
    }
    runs: Dict[str, List[Dict[str, Any]]] = {}
    for i in range(args.repeat):  # the contenders in turn, run after run
        for contender in contenders:
            if contender.skip is not None:
                if i == 0:
                    _progress(f"{contender.name}: skipped ({contender.skip})")
                results["contenders"][contender.name] = {"skipped": contender.skip}
                continue
            _progress(f"{contender.name}: {args.connections} connections (run {i + 1}/{args.repeat})")
            try:
                r = run_contender(contender, args)
            except Exception as error:  # noqa: BLE001 - reported, the other contenders still run
                _progress(f"{contender.name}: failed: {error}")
                r = {"error": str(error)}
            runs.setdefault(contender.name, []).append(r)
            if "held" in r:
                _progress(
                    f"  held {r['held']}, completed {r['completed']}, {r['frames_per_s']:,.0f} frames/s, "
                    f"p50 {r['latency_us']['p50'] / 1e3:.1f} ms, p99 {r['latency_us']['p99'] / 1e3:.1f} ms"
                )
    for name, rs in runs.items():
        results["contenders"][name] = median_run(rs, paced=args.interval > 0)
    # in the order the contenders were given
    results["contenders"] = {c.name: results["contenders"][c.name] for c in contenders}
    print(report(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    failed = [r for r in results["contenders"].values() if "error" in r]
    return 1 if failed else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
