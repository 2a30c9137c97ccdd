"""The HTTP stack of `acp-fast serve`, chosen by measurement: N concurrent SSE streams, each sent M
events of an ACP-sized line, served by aiohttp's web server and by uvicorn + Starlette (the ACP
Python SDK's `AcpServer` stack), read by the same aiohttp client in another process.

    python benches/net_stack.py [N] [M]        # default 500 streams, 200 events each

Prints, per stack: the events/s over all streams, the server's CPU seconds, and its RSS idle and
with the N streams open (per stream). Needs aiohttp, uvicorn and starlette.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time

LINE = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":'
    b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"' + b"x" * 120 + b'"}}}}'
)
EVENT = b"data: " + LINE + b"\n\n"


def serve_aiohttp(port: int, m: int) -> None:
    from aiohttp import web

    async def get(request: web.Request) -> web.StreamResponse:
        r = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await r.prepare(request)
        for _ in range(m):
            await r.write(EVENT)
        await asyncio.Event().wait()  # held open until the client goes
        return r

    app = web.Application()
    app.router.add_get("/acp", get)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def serve_starlette(port: int, m: int) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    async def events():
        for _ in range(m):
            yield EVENT
        await asyncio.Event().wait()

    async def get(request):
        return StreamingResponse(events(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/acp", get)])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", access_log=False)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def load(port: int, n: int, m: int, pid: int) -> tuple:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:
        got = 0
        opened = asyncio.Event()
        ready = [0]

        async def one() -> None:
            nonlocal got
            async with http.get(f"http://127.0.0.1:{port}/acp", timeout=aiohttp.ClientTimeout(total=None)) as r:
                ready[0] += 1
                if ready[0] == n:
                    opened.set()
                seen = 0
                async for chunk in r.content.iter_any():
                    seen += chunk.count(b"\n\n")
                    if seen >= m:
                        break
                got += seen
                await opened.wait()
                await done.wait()

        done = asyncio.Event()
        cpu0 = cpu_seconds(pid)
        t0 = time.perf_counter()
        tasks = [asyncio.ensure_future(one()) for _ in range(n)]
        while got < n * m:  # noqa: ASYNC110 - polled: the streams count without a callback
            await asyncio.sleep(0.01)
        elapsed = time.perf_counter() - t0
        cpu = cpu_seconds(pid) - cpu0
        held = rss_kib(pid)
        done.set()
        await asyncio.gather(*tasks)
        return got / elapsed, cpu, held


def main() -> None:
    if sys.argv[1:2] == ["server"]:
        kind, port, m = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        (serve_aiohttp if kind == "aiohttp" else serve_starlette)(port, m)
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    m = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    for kind in ("aiohttp", "uvicorn+starlette"):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen([sys.executable, __file__, "server", kind.split("+")[0], str(port), str(m)])
        try:
            for _ in range(200):
                try:
                    socket.create_connection(("127.0.0.1", port), 0.1).close()
                    break
                except OSError:
                    time.sleep(0.05)
            idle = rss_kib(server.pid)
            rate, cpu, held = asyncio.run(load(port, n, m, server.pid))
            print(
                f"{kind:18} {n} streams x {m} events: {rate:,.0f} events/s, server CPU {cpu:.2f} s, "
                f"RSS {idle / 1024:.1f} MiB idle, {held / 1024:.1f} MiB with the streams open "
                f"({(held - idle) / n:.1f} KiB per stream)"
            )
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
