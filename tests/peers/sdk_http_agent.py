"""The SDK agent of sdk_agent.py served over Streamable HTTP and WebSocket by the SDK's own ASGI
application (`acp.http.asgi.create_asgi_app`, one agent per connection) under uvicorn, on
127.0.0.1 and a free port, for the tests of `acp-fast connect`.

    python sdk_http_agent.py FRAMES

Prints `listening PORT` once it listens. Every message the application sends to a client is
appended to FRAMES as it went on the wire, one per line: the body of the answer to `initialize`,
the `data:` of each SSE event, the text of each WebSocket frame.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import warnings
from pathlib import Path
from typing import Any, Dict

sys.path.insert(0, str(Path(__file__).resolve().parent))
warnings.simplefilter("ignore", DeprecationWarning)

import uvicorn  # noqa: E402
from acp.http.asgi import create_asgi_app  # noqa: E402
from sdk_agent import Agent  # noqa: E402


class Frames:
    """An ASGI wrapper that writes down what the application sends to its clients."""

    def __init__(self, app: Any, path: str) -> None:
        self.app = app
        self.out = open(path, "ab", buffering=0)  # noqa: SIM115 - open for the server's life

    def frame(self, data: bytes) -> None:
        self.out.write(data + b"\n")

    async def __call__(self, scope: Dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        kind: Dict[str, Any] = {"sse": False, "json": False, "pending": b""}

        async def tapped(event: Dict[str, Any]) -> None:
            t = event["type"]
            if t == "http.response.start":
                headers = {k.lower(): v for k, v in event.get("headers", [])}
                ctype = headers.get(b"content-type", b"")
                kind["sse"] = ctype.startswith(b"text/event-stream")
                kind["json"] = event.get("status") == 200 and ctype.startswith(b"application/json")
            elif t == "http.response.body":
                body = event.get("body", b"")
                if kind["json"] and body:
                    self.frame(body)
                elif kind["sse"]:
                    kind["pending"] += body
                    while b"\n\n" in kind["pending"]:
                        block, kind["pending"] = kind["pending"].split(b"\n\n", 1)
                        data = [x[5:].lstrip(b" ") for x in block.split(b"\n") if x.startswith(b"data:")]
                        if data:
                            self.frame(b"\n".join(data))
            elif t == "websocket.send" and event.get("text") is not None:
                self.frame(event["text"].encode())
            await send(event)

        await self.app(scope, receive, tapped)


def main() -> None:
    app = Frames(create_asgi_app(lambda conn: Agent()), sys.argv[1])
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", ws="websockets"))
    print(f"listening {sock.getsockname()[1]}", flush=True)
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
