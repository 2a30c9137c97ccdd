"""Helpers shared by the ``test_sdk_*.py`` files (the integration of the official ACP Python SDK,
``acp_fast.integrations.acp_sdk``, against the real SDK: whichever supported release is installed,
CI running them on agent-client-protocol 0.12.1 and on the newest 1.0 pre-release): an SDK client
that records its handler calls, the in-process harness (one SDK connection on one end of a socket
pair, raw bytes on the other) and models built directly (the helpers such as ``acp.text_block``
are gone in SDK 1.0). Puts ``tests/sdk_peers`` on ``sys.path`` and re-exports its ``scenario``
module.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import sys
import warnings
from pathlib import Path
from typing import Any, Dict, List, Tuple

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

import acp  # noqa: E402
import acp.agent.connection  # noqa: E402
import acp.client.connection  # noqa: E402
import acp.connection  # noqa: E402
from acp import schema as S  # noqa: E402

from acp_fast.integrations import acp_sdk  # noqa: E402

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS / "sdk_peers"))
import scenario  # noqa: E402

AGENT = str(TESTS / "sdk_peers" / "agent.py")

#: Whether the installed SDK has the experimental v2 API (``acp.experimental``, SDK 1.0).
HAS_V2 = importlib.util.find_spec("acp.experimental") is not None


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout=60))


# ---------------------------------------------------------------------------------------------
# An SDK client that records its handler calls


class RecordingClient:
    """An SDK client that records every handler call (with the models it receives)."""

    def __init__(self) -> None:
        self.calls: List[Tuple[str, Dict[str, Any]]] = []

    async def session_update(self, **kwargs: Any) -> None:
        self.calls.append(("session_update", kwargs))

    async def request_permission(self, **kwargs: Any) -> S.RequestPermissionResponse:
        self.calls.append(("request_permission", kwargs))
        return scenario.golden_model("request_permission_response_selected")

    async def read_text_file(self, **kwargs: Any) -> S.ReadTextFileResponse:
        self.calls.append(("read_text_file", kwargs))
        return scenario.golden_model("fs_read_text_file_response")

    async def write_text_file(self, **kwargs: Any) -> S.WriteTextFileResponse:
        self.calls.append(("write_text_file", kwargs))
        return S.WriteTextFileResponse()

    async def ext_method(self, method: str, params: Any) -> Any:
        self.calls.append(("ext_method", {"method": method, "params": params}))
        return {"echo": params}

    async def ext_notification(self, method: str, params: Any) -> None:
        self.calls.append(("ext_notification", {"method": method, "params": params}))


# ---------------------------------------------------------------------------------------------
# In-process harness: one SDK connection on one end of a socket pair, raw bytes on the other


class Peer:
    """The raw end: writes frames, reads the lines the connection writes."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def send(self, *frames: Any) -> None:
        for frame in frames:
            if not isinstance(frame, (bytes, str)):
                frame = json.dumps(frame)
            if isinstance(frame, str):
                frame = frame.encode()
            self.writer.write(frame if frame.endswith(b"\n") else frame + b"\n")

    async def line(self, timeout: float = 5.0) -> Any:
        return json.loads(await asyncio.wait_for(self.reader.readline(), timeout))

    async def silent(self, delay: float = 0.2) -> bool:
        try:
            await asyncio.wait_for(self.reader.readline(), delay)
        except asyncio.TimeoutError:
            return True
        return False


async def socket_pair() -> Tuple[Tuple[asyncio.StreamReader, asyncio.StreamWriter], Peer]:
    import socket

    a, b = socket.socketpair()
    mine = await asyncio.open_connection(sock=a)
    theirs = await asyncio.open_connection(sock=b)
    return mine, Peer(*theirs)


@contextlib.asynccontextmanager
async def client_side(client: Any, fast: bool, backend: Any = None, **options: Any) -> Any:
    (reader, writer), peer = await socket_pair()
    install = acp_sdk.installed(backend=backend, **options) if fast else contextlib.nullcontext()
    with install:
        conn = acp.client.connection.ClientSideConnection(client, writer, reader)
    assert type(conn._conn) is (acp_sdk.FastConnection if fast else acp.connection.Connection)
    try:
        yield conn, peer
    finally:
        await conn.close()
        peer.writer.close()


@contextlib.asynccontextmanager
async def agent_side(agent: Any, fast: bool, backend: Any = None, **options: Any) -> Any:
    (reader, writer), peer = await socket_pair()
    install = acp_sdk.installed(backend=backend, **options) if fast else contextlib.nullcontext()
    with install:
        conn = acp.agent.connection.AgentSideConnection(agent, writer, reader)
    try:
        yield conn, peer
    finally:
        await conn.close()
        peer.writer.close()


def check_turn_calls(calls: List[Any], agent_calls: List[Any], updates_seen: int, *, cancel: bool) -> None:
    """The scripted prompt turn, as the SDK's client handlers and the peer agent saw it: every
    update of the scenario in order, then the client's calls and the agent's (``cancel``: the
    agent also got the client's ``session/cancel``)."""
    updates = [kw["update"] for name, kw in calls if name == "session_update"]
    assert updates == scenario.prompt_updates()
    assert updates_seen == len(updates)
    assert [name for name, _ in calls if name != "session_update"] == [
        "request_permission",
        "read_text_file",
        "write_text_file",
        "ext_method",
        "ext_notification",
    ]
    agent = ["initialize", "new_session", "prompt", "permission_result", "read_result", "write_result", "ext_result"]
    assert [name for name, _ in agent_calls] == agent + (["cancel"] if cancel else []) + ["ext_method"]


def update_frame(i: int, session_id: str = "s1") -> Dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": session_id,
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": str(i)}},
        },
    }


async def until(predicate: Any, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.005)


def text_block(text: str) -> Any:
    """What ``acp.text_block(text)`` gave in SDK 0.12."""
    return S.TextContentBlock(type="text", text=text)


def agent_message(text: str) -> Any:
    """What ``acp.update_agent_message_text(text)`` gave in SDK 0.12."""
    return S.AgentMessageChunk(session_update="agent_message_chunk", content=text_block(text))


def texts(client: RecordingClient) -> List[str]:
    return [kw["update"].content.text for name, kw in client.calls if name == "session_update"]
