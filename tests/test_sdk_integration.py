"""The acp-fast integration of the official ACP Python SDK (``acp_fast.integrations.acp_sdk``),
against the real SDK (agent-client-protocol 0.12.1, pinned by the ``sdk`` / ``test`` extras).

* an SDK client (this process) and an SDK agent (``tests/sdk_peers/agent.py``, a subprocess) over
  real pipes: with and without the integration on either side, both receive the same handler
  calls with the same models;
* the SDK's golden messages (``tests/data/sdk_golden``) round-trip;
* what the SDK gets wrong and the integration does per the JSON-RPC / ACP specs: batch arrays, bad
  lines, oversized lines, invalid responses, NaN;
* dispatch order, task and context semantics of the eager dispatcher;
* install / uninstall and the one-call helpers; the conversions of ``integrations.models``.

Behaviour tests run on both backends (the ``backend`` fixture is handed to the integration).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

import acp  # noqa: E402
import acp.agent.connection  # noqa: E402
import acp.client.connection  # noqa: E402
import acp.connection  # noqa: E402
import acp.core  # noqa: E402
import acp.stdio  # noqa: E402
from acp import schema as S  # noqa: E402
from acp.exceptions import RequestError  # noqa: E402
from pydantic import ValidationError  # noqa: E402

import acp_fast  # noqa: E402
from acp_fast.integrations import SDK_VERSION, acp_sdk, models  # noqa: E402

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS / "sdk_peers"))
import scenario  # noqa: E402

AGENT = str(TESTS / "sdk_peers" / "agent.py")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout=60))


# ---------------------------------------------------------------------------------------------
# The SDK version, the optional dependency


def test_sdk_version_is_the_pinned_one() -> None:
    from importlib.metadata import version

    assert version("agent-client-protocol") == SDK_VERSION == "0.12.1"
    pyproject = (TESTS.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert f'sdk = ["agent-client-protocol=={SDK_VERSION}"]' in pyproject


def test_without_the_sdk_acp_fast_imports_and_the_integration_names_the_extra() -> None:
    code = textwrap.dedent(
        """
        import importlib, sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "acp" or name.startswith("acp."):
                    raise ImportError("blocked: " + name)
        sys.meta_path.insert(0, Block())
        import acp_fast, acp_fast.integrations
        assert acp_fast.integrations.SDK_VERSION == "0.12.1"
        for name in ("acp_sdk", "session_state", "models"):
            try:
                importlib.import_module("acp_fast.integrations." + name)
            except ImportError as exc:
                print(name, "|", exc)
            else:
                raise SystemExit(name + " imported without the SDK")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert [line.split(" | ")[0] for line in lines] == ["acp_sdk", "session_state", "models"]
    for line in lines:
        assert "pip install 'acp-fast[sdk]'" in line
        assert "agent-client-protocol==0.12.1" in line


# ---------------------------------------------------------------------------------------------
# SDK client <-> SDK agent over real pipes


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


async def _session(
    client_fast: bool, agent_fast: bool, backend: Any = None, backend_id: str = "rust", **agent_args: Any
) -> Any:
    client = RecordingClient()
    args = [AGENT] + (["--fast"] if agent_fast else [])
    for key, value in agent_args.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    env = {"ACP_FAST_BACKEND": backend_id, "PYTHONPATH": os.pathsep.join(sys.path)}
    install = acp_sdk.installed(backend=backend) if client_fast else contextlib.nullcontext()
    with install:
        spawned = acp.spawn_agent_process(client, sys.executable, *args, env=env)
        conn, process = await spawned.__aenter__()
    try:
        assert type(conn._conn) is (acp_sdk.FastConnection if client_fast else acp.connection.Connection)
        init_request = scenario.golden("initialize_request")
        results: List[Any] = [
            await conn.initialize(
                protocol_version=init_request["protocolVersion"],
                client_capabilities=S.ClientCapabilities.model_validate(init_request["clientCapabilities"]),
                client_info=S.Implementation.model_validate(init_request["clientInfo"])
                if "clientInfo" in init_request
                else None,
            )
        ]
        new_session = scenario.golden_model("new_session_request")
        results.append(await conn.new_session(cwd=new_session.cwd, mcp_servers=new_session.mcp_servers))
        prompt = scenario.golden_model("prompt_request")
        results.append(await conn.prompt(session_id=prompt.session_id, prompt=prompt.prompt))
        updates_seen = sum(1 for name, _ in client.calls if name == "session_update")
        await conn.cancel(session_id=prompt.session_id)
        results.append(
            await conn.ext_method("peer/echo", {"big": 2**70, "unicode": "日本 \u2028", "list": [None, 1.5e300]})
        )
        record = await conn.ext_method("peer/record", {})
    finally:
        await spawned.__aexit__(None, None, None)
    return client.calls, results, record["calls"], updates_seen


@pytest.fixture(scope="module")
def plain_session() -> Any:
    """The reference: SDK client and SDK agent, no acp-fast anywhere."""
    return run(_session(False, False))


def test_plain_sdk_session_is_complete(plain_session: Any) -> None:
    calls, results, agent_calls, updates_seen = plain_session
    updates = [kw["update"] for name, kw in calls if name == "session_update"]
    assert len(updates) == updates_seen == len(scenario.prompt_updates())
    assert updates == scenario.prompt_updates()
    assert [name for name, _ in calls if name != "session_update"] == [
        "request_permission",
        "read_text_file",
        "write_text_file",
        "ext_method",
        "ext_notification",
    ]
    assert [name for name, _ in agent_calls] == [
        "initialize",
        "new_session",
        "prompt",
        "permission_result",
        "read_result",
        "write_result",
        "ext_result",
        "cancel",
        "ext_method",
    ]


@pytest.mark.parametrize(
    "client_fast,agent_fast", [(True, True), (True, False), (False, True)], ids=["both", "client", "agent"]
)
def test_sdk_client_and_agent_see_the_same_calls_with_and_without_acp_fast(
    plain_session: Any, backend: Any, client_fast: bool, agent_fast: bool
) -> None:
    """The agent subprocess runs the same backend (ACP_FAST_BACKEND) as the client here."""
    calls, results, agent_calls, updates_seen = run(_session(client_fast, agent_fast, backend, backend.BACKEND))
    plain_calls, plain_results, plain_agent_calls, plain_updates_seen = plain_session
    assert calls == plain_calls  # same handlers, same order, same pydantic models
    assert results == plain_results
    assert agent_calls == plain_agent_calls
    assert updates_seen == plain_updates_seen  # prompt() returned after every update was handled


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


def texts(client: RecordingClient) -> List[str]:
    return [kw["update"].content.text for name, kw in client.calls if name == "session_update"]


# ---------------------------------------------------------------------------------------------
# What the SDK gets wrong: batches, bad lines, oversized lines, invalid responses, NaN


def test_the_sdk_alone_dies_on_a_batch_array() -> None:
    """The reference behaviour the integration fixes: after a batch line the SDK's receive loop is
    gone (it calls ``.get`` on a list), and nothing after it is delivered."""

    async def main() -> List[str]:
        client = RecordingClient()
        async with client_side(client, fast=False) as (conn, peer):
            peer.send(update_frame(0), [update_frame(1), update_frame(2)], update_frame(3))
            await asyncio.sleep(0.3)
            return texts(client)

    assert run(main()) == ["0"]


def test_batch_of_notifications_is_dispatched_in_array_order(backend: Any) -> None:
    async def main() -> Any:
        client = RecordingClient()
        async with client_side(client, fast=True, backend=backend) as (conn, peer):
            peer.send(update_frame(0), [update_frame(1), 17, update_frame(2)], update_frame(3))
            await until(lambda: len(texts(client)) == 4)
            reply = await peer.line()  # the invalid entry's error, alone in an array
            return texts(client), reply, await peer.silent()

    delivered, reply, silent = run(main())
    assert delivered == ["0", "1", "2", "3"]
    column = json.dumps([update_frame(1), 17, update_frame(2)]).index(" 17,") + 2
    details = f"expected a JSON-RPC message object, found number at line 2 column {column}"
    assert reply == [
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": "Invalid request", "data": {"details": details}},
        }
    ]
    assert silent


def test_batch_with_requests_gets_one_array_reply_after_all_are_handled(backend: Any) -> None:
    release = None

    class SlowClient(RecordingClient):
        async def read_text_file(self, **kwargs: Any) -> S.ReadTextFileResponse:
            await release.wait()
            return await super().read_text_file(**kwargs)

    async def main() -> Any:
        nonlocal release
        release = asyncio.Event()
        client = SlowClient()
        permission = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "session/request_permission",
            "params": scenario.golden("request_permission_request"),
        }
        read = {
            "jsonrpc": "2.0",
            "id": "r",
            "method": "fs/read_text_file",
            "params": scenario.golden("fs_read_text_file_request"),
        }
        async with client_side(client, fast=True, backend=backend) as (conn, peer):
            peer.send([permission, update_frame(1), {"jsonrpc": "2.0"}, read])
            nothing_yet = await peer.silent(0.2)  # read_text_file is still running
            release.set()
            reply = await peer.line()
            return client.calls, reply, nothing_yet, await peer.silent()

    calls, reply, nothing_yet, silent = run(main())
    assert nothing_yet and silent
    assert [name for name, _ in calls] == ["request_permission", "session_update", "read_text_file"]
    by_id = {json.dumps(entry["id"]): entry for entry in reply}
    assert len(reply) == 3 and set(by_id) == {"5", '"r"', "null"}
    assert by_id["5"]["result"] == scenario.golden("request_permission_response_selected")
    assert by_id['"r"']["result"] == scenario.golden("fs_read_text_file_response")
    assert by_id["null"]["error"]["code"] == -32600


def test_batch_of_responses_resolves_each_request(backend: Any) -> None:
    async def main() -> Any:
        async with client_side(RecordingClient(), fast=True, backend=backend) as (conn, peer):
            first = asyncio.ensure_future(conn.initialize(protocol_version=1))
            second = asyncio.ensure_future(conn.new_session(cwd="/tmp"))
            requests = [await peer.line(), await peer.line()]
            peer.send(
                [
                    {"jsonrpc": "2.0", "id": requests[1]["id"], "result": scenario.golden("new_session_response")},
                    {"jsonrpc": "2.0", "id": requests[0]["id"], "result": scenario.golden("initialize_response")},
                ]
            )
            return await first, await second

    init, session = run(main())
    assert init == scenario.golden_model("initialize_response")
    assert session == scenario.golden_model("new_session_response")


def test_empty_batch_and_bad_lines_get_error_replies_and_the_stream_goes_on(backend: Any) -> None:
    async def main() -> Any:
        client = RecordingClient()
        async with client_side(client, fast=True, backend=backend) as (conn, peer):
            peer.send(b"[]", b"not json", b'{"jsonrpc":"2.0","method":"x","params":NaN}', update_frame(0), b"", b"\r")
            peer.send(b'{"jsonrpc":"1.0","id":3,"method":"session/update"}', update_frame(1))
            replies = [await peer.line() for _ in range(4)]
            await until(lambda: len(texts(client)) == 2)
            return replies, texts(client), await peer.silent()

    replies, delivered, silent = run(main())
    assert delivered == ["0", "1"] and silent
    assert [(r["id"], r["error"]["code"], r["error"]["message"]) for r in replies] == [
        (None, -32600, "Invalid request"),
        (None, -32700, "Parse error"),
        (None, -32700, "Parse error"),
        (None, -32600, "Invalid request"),
    ]
    assert replies[0]["error"]["data"]["details"].startswith("expected at least one message in the batch")
    assert replies[1]["error"]["data"]["details"] == "expected 'null', found 'o' at line 2 column 2"
    assert replies[2]["error"]["data"]["details"] == "expected a JSON value, found 'N' at line 3 column 40"
    assert "line 7" in replies[3]["error"]["data"]["details"]


def test_reply_errors_false_only_logs(backend: Any, caplog: Any) -> None:
    async def main() -> Any:
        client = RecordingClient()
        async with client_side(client, fast=True, backend=backend, reply_errors=False) as (conn, peer):
            peer.send(b"{oops", update_frame(0))
            await until(lambda: texts(client) == ["0"])
            return await peer.silent()

    with caplog.at_level(logging.WARNING, logger="acp_fast.integrations.acp_sdk"):
        assert run(main())
    assert "bad frame on line 1: expected a string key, found 'o' at line 1 column 2" in caplog.text


def test_oversized_frame_is_refused_and_the_next_one_delivered(backend: Any) -> None:
    async def main() -> Any:
        client = RecordingClient()
        async with client_side(client, fast=True, backend=backend, max_frame_bytes=4096) as (conn, peer):
            assert conn._conn.max_frame_bytes == 4096
            big = update_frame(0)
            big["params"]["update"]["content"]["text"] = "x" * 100_000
            peer.send(big, update_frame(1))
            reply = await peer.line()
            await until(lambda: texts(client) == ["1"])
            return reply

    reply = run(main())
    assert reply["id"] is None and reply["error"]["code"] == -32700
    assert reply["error"]["data"]["details"].startswith("expected a frame of at most 4096 bytes, found a longer line")


def test_large_frames_beyond_64_kib_are_delivered_whole(backend: Any) -> None:
    async def main() -> Any:
        client = RecordingClient()
        async with client_side(client, fast=True, backend=backend) as (conn, peer):
            frames = [update_frame(i) for i in range(3)]
            frames[1]["params"]["update"]["content"]["text"] = "ü" * 3_000_000
            peer.send(*frames)
            await until(lambda: len(texts(client)) == 3)
            return texts(client)

    delivered = run(main())
    assert delivered[0] == "0" and delivered[2] == "2" and delivered[1] == "ü" * 3_000_000


@pytest.mark.parametrize("fast", [False, True], ids=["sdk", "acp-fast"])
def test_invalid_response_to_a_pending_request(backend: Any, fast: bool) -> None:
    """The SDK resolves ``{"jsonrpc": "2.0", "id": 0}`` (neither result nor error) with ``None``;
    the integration fails the request with -32600 instead of inventing a result."""

    async def main() -> Any:
        async with client_side(RecordingClient(), fast=fast, backend=backend) as (conn, peer):
            pending = asyncio.ensure_future(conn._conn.send_request("_x/y", {}))
            request = await peer.line()
            peer.send({"jsonrpc": "2.0", "id": request["id"]})
            try:
                return await pending
            except RequestError as exc:
                return exc.code, str(exc), await peer.silent()

    result = run(main())
    if fast:
        assert result == (-32600, "Invalid request", True)
    else:
        assert result is None


@pytest.mark.parametrize("fast", [False, True], ids=["sdk", "acp-fast"])
def test_outgoing_json(backend: Any, fast: bool) -> None:
    """What goes on the wire: the same JSON values (the SDK escapes non-ASCII, acp-fast writes
    UTF-8); keys that are not str are written as the SDK writes them; NaN is refused by acp-fast
    (the SDK writes ``NaN``, which is not JSON)."""

    async def main() -> Any:
        async with client_side(RecordingClient(), fast=fast, backend=backend) as (conn, peer):
            request = asyncio.ensure_future(
                conn._conn.send_request("_a", {"t": "日本\u2028", "n": 2**70, 1: [1.5, None]})
            )
            raw = await asyncio.wait_for(peer.reader.readline(), 5)
            try:
                await conn._conn.send_notification("_b", {"x": float("nan")})
                nan = await asyncio.wait_for(peer.reader.readline(), 5)
            except ValueError as exc:
                nan = exc
            request.cancel()  # never answered: only its bytes on the wire count
            return raw, nan

    raw, nan = run(main())
    assert json.loads(raw) == {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "_a",
        "params": {"t": "日本\u2028", "n": 2**70, "1": [1.5, None]},
    }
    if fast:
        assert isinstance(nan, ValueError) and "Out of range float values are not JSON compliant" in str(nan)
    else:
        assert b"NaN" in nan


# ---------------------------------------------------------------------------------------------
# Dispatch: order, tasks, contexts, the update tracker, observers, errors


@pytest.mark.parametrize("fast", [False, True], ids=["sdk", "acp-fast"])
def test_handlers_start_in_wire_order_even_when_some_suspend(backend: Any, fast: bool) -> None:
    events: List[Tuple[str, str]] = []

    class Client:
        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            text = update.content.text
            events.append(("start", text))
            for _ in range(int(text) % 3):
                await asyncio.sleep(0)
            events.append(("end", text))

    async def main() -> None:
        async with client_side(Client(), fast=fast, backend=backend) as (conn, peer):
            peer.send(*[update_frame(i) for i in range(30)])
            if fast:  # the SDK alone cannot take a batch
                peer.send([update_frame(i) for i in range(30, 40)])
            else:
                peer.send(*[update_frame(i) for i in range(30, 40)])
            await until(lambda: len(events) == 80)

    run(main())
    starts = [text for kind, text in events if kind == "start"]
    assert starts == [str(i) for i in range(40)]
    assert sorted(text for kind, text in events if kind == "end") == sorted(starts)


def test_a_suspended_handler_keeps_its_task_and_its_context(backend: Any) -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: List[Any] = []

    class Client:
        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            text = update.content.text
            seen.append(("before", text, var.get()))
            var.set(text)
            task = asyncio.current_task()
            if text == "1":
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.sleep(10), 0.01)
                if hasattr(asyncio, "timeout"):
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(0.01):
                            await asyncio.sleep(10)
            await asyncio.sleep(0)
            seen.append(("after", text, var.get(), asyncio.current_task() is task))

    async def main() -> None:
        async with client_side(Client(), fast=True, backend=backend) as (conn, peer):
            peer.send(*[update_frame(i) for i in range(4)])
            await until(lambda: len(seen) == 8)
            peer.send(update_frame(9))  # the connection still works
            await until(lambda: len(seen) == 10)

    run(main())
    assert [entry for entry in seen if entry[0] == "before"] == [("before", str(i), "unset") for i in (0, 1, 2, 3, 9)]
    assert sorted(entry for entry in seen if entry[0] == "after") == [
        ("after", str(i), str(i), True) for i in (0, 1, 2, 3, 9)
    ]


@pytest.mark.parametrize("fast", [False, True], ids=["sdk", "acp-fast"])
def test_handlers_that_end_at_once_each_get_their_own_context(backend: Any, fast: bool, caplog: Any) -> None:
    """Handlers that end without suspending run one after the other in the dispatcher (through one
    driver): each still sees a fresh copy of the context, an error ends only its own handler, and
    a handler that suspends in between hands the rest of the queue on, as in the SDK (a task per
    message)."""
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: List[Tuple[str, str]] = []

    class Client:
        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> Any:
            text = update.content.text
            seen.append((text, var.get()))
            var.set(text)
            if text.startswith("boom"):
                raise RuntimeError(text)
            if text == "suspend":
                await asyncio.sleep(0.01)
                seen.append(("resumed", var.get()))
                raise RuntimeError("after suspending")
            return text  # ignored

    texts_sent = ["0", "boom1", "2", "suspend", "3", "boom4", "5"]

    async def main() -> None:
        async with client_side(Client(), fast=fast, backend=backend) as (conn, peer):
            frames = [update_frame(0) for _ in texts_sent]
            for frame, text in zip(frames, texts_sent):
                frame["params"]["update"]["content"]["text"] = text
            peer.send(*frames)
            await until(lambda: len(seen) == len(texts_sent) + 1)
            await asyncio.sleep(0.05)

    with caplog.at_level(logging.ERROR):
        run(main())
    assert [entry for entry in seen if entry[0] != "resumed"] == [(text, "unset") for text in texts_sent]
    assert ("resumed", "suspend") in seen
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert messages.count("Unhandled error while handling notification method=session/update") == 3


@pytest.mark.parametrize("fast", [False, True], ids=["sdk", "acp-fast"])
def test_prompt_returns_after_the_updates_still_running(backend: Any, fast: bool) -> None:
    """The SDK's client waits, after a prompt's response, for the updates whose handlers are still
    running; the integration keeps that (its fast path only skips the bookkeeping for handlers
    that complete at once)."""
    finished: List[str] = []

    class Client:
        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            if update.content.text == "slow":
                await asyncio.sleep(0.2)
            finished.append(update.content.text)

    async def main() -> List[str]:
        async with client_side(Client(), fast=fast, backend=backend) as (conn, peer):
            prompt = asyncio.ensure_future(conn.prompt(session_id="s1", prompt=[acp.text_block("hi")]))
            request = await peer.line()
            slow, fast_update = update_frame(0), update_frame(1)
            slow["params"]["update"]["content"]["text"] = "slow"
            peer.send(slow, fast_update, {"jsonrpc": "2.0", "id": request["id"], "result": {"stopReason": "end_turn"}})
            response = await prompt
            assert response.stop_reason == "end_turn"
            return list(finished)

    assert run(main()) == ["1", "slow"]


@pytest.mark.parametrize("fast", [False, True], ids=["sdk", "acp-fast"])
def test_handler_errors_are_logged_as_the_sdk_logs_them(backend: Any, fast: bool, caplog: Any) -> None:
    class Client:
        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            if update.content.text == "boom":
                raise RuntimeError("boom")
            if update.content.text == "later":
                await asyncio.sleep(0)
                raise RuntimeError("later")

    async def main() -> Any:
        async with client_side(Client(), fast=fast, backend=backend) as (conn, peer):
            boom, later = update_frame(0), update_frame(1)
            boom["params"]["update"]["content"]["text"] = "boom"
            later["params"]["update"]["content"]["text"] = "later"
            bad = update_frame(2)
            bad["params"]["update"]["content"] = {"type": "nope"}
            peer.send(boom, later, bad)
            await asyncio.sleep(0.2)

    with caplog.at_level(logging.ERROR):
        run(main())
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert messages.count("Unhandled error while handling notification method=session/update") == 3


@pytest.mark.parametrize("direction", ["client", "agent"])
def test_observers_see_the_same_events(backend: Any, direction: str) -> None:
    class Agent:
        async def initialize(self, **kwargs: Any) -> Any:
            return scenario.golden_model("initialize_response")

    async def exchange(fast: bool, batch: bool = False) -> List[Any]:
        events: List[Any] = []

        def observe(event: Any) -> None:
            events.append((event.direction.value, event.message))

        if direction == "client":
            async with client_side(RecordingClient(), fast=fast, backend=backend) as (conn, peer):
                conn._conn.add_observer(observe)
                read = {
                    "jsonrpc": "2.0",
                    "id": 9,
                    "method": "fs/read_text_file",
                    "params": scenario.golden("fs_read_text_file_request"),
                }
                peer.send(
                    update_frame(0), [update_frame(1), read] if batch else update_frame(1), *(() if batch else (read,))
                )
                await peer.line()
                init = asyncio.ensure_future(conn.initialize(protocol_version=1))
                request = await peer.line()
                peer.send({"jsonrpc": "2.0", "id": request["id"], "result": scenario.golden("initialize_response")})
                await init
        else:
            async with agent_side(Agent(), fast=fast, backend=backend) as (conn, peer):
                conn._conn.add_observer(observe)
                peer.send(
                    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": scenario.golden("initialize_request")}
                )
                await peer.line()
                await conn.session_update("s1", acp.update_agent_message_text("hi"))
                await peer.line()
        await asyncio.sleep(0.05)
        return events

    plain = run(exchange(False))
    assert run(exchange(True)) == plain
    assert [e[0] for e in plain] == (
        ["incoming", "incoming", "incoming", "outgoing", "outgoing", "incoming"]
        if direction == "client"
        else ["incoming", "outgoing", "outgoing"]
    )
    if direction == "client":
        # batch entries are observed one by one, the batch reply as its responses
        assert run(exchange(True, batch=True)) == plain


def test_receive_timeout_disconnects_as_in_the_sdk(backend: Any) -> None:
    async def main(fast: bool) -> Any:
        (reader, writer), peer = await socket_pair()
        with acp_sdk.installed(backend=backend) if fast else contextlib.nullcontext():
            conn = acp.client.connection.ClientSideConnection(RecordingClient(), writer, reader, receive_timeout=0.1)
        try:
            await conn.initialize(protocol_version=1)
        except Exception as exc:  # noqa: BLE001
            return type(exc), str(exc)
        finally:
            await conn.close()

    assert run(main(True)) == run(main(False)) == (ConnectionError, "Connection closed")


# ---------------------------------------------------------------------------------------------
# install / uninstall, the one-call helpers


def test_install_patches_the_sdk_constructors_and_uninstall_restores_them() -> None:
    modules = (acp.client.connection, acp.agent.connection, acp.stdio, acp.core)
    originals = [m.Connection for m in modules]
    assert all(c is acp.connection.Connection for c in originals) and not acp_sdk.is_installed()
    acp_sdk.install(max_frame_bytes=1234)
    try:
        assert acp_sdk.is_installed() and all(m.Connection is acp_sdk.FastConnection for m in modules)
        with acp_sdk.installed(max_frame_bytes=99):
            assert acp_sdk._options.max_frame_bytes == 99
        assert acp_sdk.is_installed() and acp_sdk._options.max_frame_bytes == 1234
    finally:
        acp_sdk.uninstall()
    assert [m.Connection for m in modules] == originals and not acp_sdk.is_installed()
    assert acp.connection.Connection is originals[0]  # the SDK's class itself is never replaced
    with pytest.raises(ValueError, match="max_frame_bytes"):
        acp_sdk.install(max_frame_bytes=0)
    assert not acp_sdk.is_installed()


def test_connect_to_agent_and_run_agent_helpers(backend: Any) -> None:
    class Agent:
        async def initialize(self, **kwargs: Any) -> Any:
            return scenario.golden_model("initialize_response")

    async def main() -> Any:
        import socket

        a, b = socket.socketpair()
        agent_reader, agent_writer = await asyncio.open_connection(sock=a)
        client_reader, client_writer = await asyncio.open_connection(sock=b)
        agent_task = asyncio.ensure_future(acp_sdk.run_agent(Agent(), agent_writer, agent_reader, backend=backend))
        conn = acp_sdk.connect_to_agent(
            RecordingClient(), client_writer, client_reader, backend=backend, max_frame_bytes=1 << 20
        )
        assert not acp_sdk.is_installed()
        assert type(conn._conn) is acp_sdk.FastConnection and conn._conn.max_frame_bytes == 1 << 20
        response = await conn.initialize(protocol_version=1)
        await conn.close()
        client_writer.close()
        await asyncio.wait_for(agent_task, 5)
        return response

    assert run(main()) == scenario.golden_model("initialize_response")


def test_message_level_transports_are_left_to_the_sdk(backend: Any) -> None:
    from acp._transport import memory_transport_pair

    class Agent:
        async def initialize(self, **kwargs: Any) -> Any:
            return scenario.golden_model("initialize_response")

    async def main() -> Any:
        left, right = memory_transport_pair()
        with acp_sdk.installed(backend=backend):
            agent = acp.agent.connection.AgentSideConnection(Agent(), left)
            client = acp.client.connection.ClientSideConnection(RecordingClient(), right)
        assert type(client._conn) is acp_sdk.FastConnection and client._conn.max_frame_bytes is None
        response = await client.initialize(protocol_version=1)
        await client.close()
        await agent.close()
        return response

    assert run(main()) == scenario.golden_model("initialize_response")


# ---------------------------------------------------------------------------------------------
# The SDK's golden messages


@pytest.mark.parametrize("name", sorted(scenario.GOLDEN_CASES))
def test_golden_message_round_trips(name: str, backend: Any) -> None:
    raw = scenario.golden(name)
    assert backend.loads(backend.dumps(raw)) == raw
    model = scenario.GOLDEN_CASES[name].model_validate(raw)
    assert models.to_wire(model) == raw
    assert scenario.GOLDEN_CASES[name].model_validate(backend.loads(backend.dumps(models.to_wire(model)))) == model


GOLDEN_TO_CLIENT = {
    "fs_read_text_file_request": ("fs/read_text_file", "read_text_file"),
    "fs_write_text_file_request": ("fs/write_text_file", "write_text_file"),
    "request_permission_request": ("session/request_permission", "request_permission"),
}
GOLDEN_TO_AGENT = {
    "initialize_request": ("initialize", "initialize"),
    "new_session_request": ("session/new", "new_session"),
    "prompt_request": ("session/prompt", "prompt"),
    "cancel_notification": ("session/cancel", "cancel"),
    "set_session_config_option_request": ("session/set_config_option", "set_config_option"),
}


def test_golden_messages_reach_the_client_handlers_unchanged(backend: Any) -> None:
    updates = sorted(name for name in scenario.GOLDEN_CASES if name.startswith("session_update_"))

    async def deliver(fast: bool) -> Any:
        client = RecordingClient()
        async with client_side(client, fast=fast, backend=backend) as (conn, peer):
            for name in updates:
                peer.send(
                    {
                        "jsonrpc": "2.0",
                        "method": "session/update",
                        "params": {"sessionId": "s", "update": scenario.golden(name)},
                    }
                )
            for i, name in enumerate(GOLDEN_TO_CLIENT):
                peer.send(
                    {"jsonrpc": "2.0", "id": i, "method": GOLDEN_TO_CLIENT[name][0], "params": scenario.golden(name)}
                )
            replies = [await peer.line() for _ in GOLDEN_TO_CLIENT]
        return client.calls, replies

    calls, replies = run(deliver(True))
    assert (calls, replies) == run(deliver(False))
    assert [kw["update"] for name, kw in calls[: len(updates)]] == [scenario.golden_model(name) for name in updates]
    assert [models.to_wire(kw["update"]) for name, kw in calls[: len(updates)]] == [
        scenario.golden(name) for name in updates
    ]
    permission = scenario.golden_model("request_permission_request")
    assert dict(calls[-1][1]) == {
        "session_id": permission.session_id,
        "tool_call": permission.tool_call,
        "options": permission.options,
    }
    assert replies[2]["result"] == scenario.golden("request_permission_response_selected")
    assert replies[0]["result"] == scenario.golden("fs_read_text_file_response")


def test_golden_messages_reach_the_agent_handlers_unchanged(backend: Any) -> None:
    class Agent:
        def __init__(self) -> None:
            self.calls: List[Any] = []

        def __getattr__(self, name: str) -> Any:
            if name not in {v[1] for v in GOLDEN_TO_AGENT.values()}:
                raise AttributeError(name)

            async def handler(**kwargs: Any) -> Any:
                self.calls.append((name, kwargs))
                return {
                    "initialize": scenario.golden_model("initialize_response"),
                    "new_session": scenario.golden_model("new_session_response"),
                    "set_config_option": scenario.golden_model("set_session_config_option_response"),
                }.get(name, S.PromptResponse(stop_reason="end_turn"))

            return handler

    async def deliver(fast: bool) -> Any:
        agent = Agent()
        async with agent_side(agent, fast=fast, backend=backend) as (conn, peer):
            for i, name in enumerate(GOLDEN_TO_AGENT):
                method = GOLDEN_TO_AGENT[name][0]
                if name == "cancel_notification":
                    peer.send({"jsonrpc": "2.0", "method": method, "params": scenario.golden(name)})
                else:
                    peer.send({"jsonrpc": "2.0", "id": i, "method": method, "params": scenario.golden(name)})
            replies = [await peer.line() for _ in range(len(GOLDEN_TO_AGENT) - 1)]
        return agent.calls, sorted(replies, key=lambda r: r["id"])

    calls, replies = run(deliver(True))
    assert (calls, replies) == run(deliver(False))
    assert [name for name, _ in calls] == [v[1] for v in GOLDEN_TO_AGENT.values()]
    assert calls[0][1]["protocol_version"] == scenario.golden("initialize_request")["protocolVersion"]
    assert replies[0]["result"] == scenario.golden("initialize_response")
    assert replies[1]["result"] == scenario.golden("new_session_response")


def test_golden_responses_come_back_as_the_sdk_models(backend: Any) -> None:
    async def ask(fast: bool) -> Any:
        async with client_side(RecordingClient(), fast=fast, backend=backend) as (conn, peer):
            out = []
            for call, golden in (
                (lambda: conn.initialize(protocol_version=1), "initialize_response"),
                (lambda: conn.new_session(cwd="/"), "new_session_response"),
            ):
                pending = asyncio.ensure_future(call())
                request = await peer.line()
                peer.send({"jsonrpc": "2.0", "id": request["id"], "result": scenario.golden(golden)})
                out.append(await pending)
            return out

    results = run(ask(True))
    assert (
        results
        == run(ask(False))
        == [scenario.golden_model("initialize_response"), scenario.golden_model("new_session_response")]
    )


# ---------------------------------------------------------------------------------------------
# Conversions (integrations.models)


def test_model_conversions(backend: Any) -> None:
    start = scenario.golden_model("session_update_tool_call_locations_rawinput")
    frame = models.notification_frame("s1", start)
    message = backend.decode(frame)
    assert message.method == "session/update" and message.session_id == "s1" and message.tool_call_id == "call_lr"
    assert models.session_notification(frame).update == start
    assert models.session_notification(message) == S.SessionNotification(session_id="s1", update=start)
    assert models.session_update(scenario.golden("session_update_plan")) == scenario.golden_model("session_update_plan")
    assert models.params_model(message) == S.SessionNotification(session_id="s1", update=start)
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "fs/read_text_file",
        "params": scenario.golden("fs_read_text_file_request"),
    }
    assert models.params_model(request) == scenario.golden_model("fs_read_text_file_request")

    store = backend.ToolCallStore()
    store.apply(frame)
    store.apply(
        models.notification_frame(
            "s1",
            scenario.golden_model("session_update_tool_call_update_content").model_copy(
                update={"tool_call_id": "call_lr"}
            ),
        )
    )
    record = store.get("s1", "call_lr")
    assert models.tool_call_update(record) == S.ToolCallUpdate(
        tool_call_id="call_lr",
        title="Tracking file",
        kind="other",
        status="in_progress",
        content=scenario.golden_model("session_update_tool_call_update_content").content,
        locations=start.locations,
        raw_input=start.raw_input,
    )
    assert models.tool_call_start(record).title == "Tracking file"
    view = models.tool_call_view(record, kind_set=False)
    assert view.kind is None and view.status == "in_progress" and view.locations == tuple(start.locations)
    assert view.content == tuple(scenario.golden_model("session_update_tool_call_update_content").content)
    # v2 content the SDK's models cannot hold stays a wire dict
    v2_diff = {"type": "diff", "changes": [{"operation": "add", "path": "/a", "fileType": "text"}]}
    assert models.content_items([scenario.golden("tool_content_terminal"), v2_diff]) == [
        scenario.golden_model("tool_content_terminal"),
        v2_diff,
    ]
    with pytest.raises(KeyError):
        models.params_model({"jsonrpc": "2.0", "method": "_ext", "params": {}})


def test_the_update_fast_path_validates_exactly_as_the_sdk() -> None:
    """The client's hot path validates ``params.update`` alone with the validator of
    ``SessionNotification.update``: same model, same type, same fields set, on every update of
    seeded traffic and every golden update."""
    from acp_fast import traffic

    assert acp_sdk._validate_update is not None
    updates = [
        acp_fast.decode(frame).params["update"]
        for frame in traffic.frames("mixed", 3000, 11)
        if acp_fast.decode(frame).method == "session/update"
    ]
    updates += [scenario.golden(name) for name in scenario.GOLDEN_CASES if name.startswith("session_update_")]
    for update in updates:
        expected = S.SessionNotification.model_validate({"sessionId": "s", "update": update}).update
        got = acp_sdk._validate_update(update)
        assert type(got) is type(expected) and got == expected
        assert got.model_dump(exclude_unset=True) == expected.model_dump(exclude_unset=True)


def _wrapper_calls(monkeypatch: Any) -> List[str]:
    """Counts the calls of the SDK's lenient-deserialization helpers (looked up in ``acp.schema``
    by its generated field validators at call time)."""
    calls: List[str] = []
    for name in ("salvage_on_error", "skip_invalid_items"):
        original = getattr(S, name)

        def counting(*args: Any, _name: str = name, _original: Any = original) -> Any:
            calls.append(_name)
            return _original(*args)

        monkeypatch.setattr(S, name, counting)
    return calls


def _seeded_and_golden_updates() -> List[Dict[str, Any]]:
    from acp_fast import traffic

    updates = [
        acp_fast.decode(frame).params["update"]
        for frame in traffic.frames("mixed", 3000, 11)
        if acp_fast.decode(frame).method == "session/update"
    ]
    return updates + [scenario.golden(name) for name in scenario.GOLDEN_CASES if name.startswith("session_update_")]


# Updates the SDK's lenient validators repair: an invalid optional field gets its default, invalid
# list items are dropped, an invalid ``_meta`` becomes None.
SALVAGED_UPDATES = [
    {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "x", "kind": "bogus", "status": 5},
    {
        "sessionUpdate": "tool_call",
        "toolCallId": "t2",
        "title": "x",
        "locations": [{"path": "/a", "line": 1}, {"nopath": 1}, {"path": "/b", "line": -3}],
        "content": [{"type": "nope"}, {"type": "content", "content": {"type": "text", "text": "ok"}}],
    },
    {"sessionUpdate": "tool_call_update", "toolCallId": "t2", "status": "done", "_meta": 7},
    {
        "sessionUpdate": "plan",
        "entries": [{"content": "a", "priority": "high", "status": "pending"}, {"content": "b"}],
    },
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "t", "annotations": 3}},
    {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "t", "annotations": {"audience": ["user", 5], "priority": "x"}},
    },
]


def test_the_strict_update_validators_give_the_sdk_models() -> None:
    """The hot path first tries, per ``sessionUpdate`` tag, the schema of that member of
    ``SessionNotification.update`` without the SDK's lenient wrappers: on every update of seeded
    traffic and every golden one it gives the same model, type and fields set as the SDK, without
    calling the wrappers; on updates the SDK repairs it fails (and the hot path falls back to the
    SDK's validator)."""
    strict = acp_sdk._update_validators()
    field = S.SessionNotification.model_fields["update"]
    tags = [member.model_fields["session_update"].annotation.__args__[0] for member in field.annotation.__args__]
    assert sorted(strict) == sorted(tags) and len(tags) == 13
    unusual = [  # accepted as they are by the SDK too: field names, unknown fields, lax numbers
        {"sessionUpdate": "tool_call", "tool_call_id": "t", "title": "x", "raw_input": {"a": [1, 2.5, None]}},
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "t",
            "title": "x",
            "extra": 1,
            "locations": [{"path": "/a", "line": 3.0}],
        },
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "x", "_meta": {"a": 1}},
            "messageId": "m",
        },
    ]
    for update in _seeded_and_golden_updates() + unusual:
        expected = S.SessionNotification.model_validate({"sessionId": "s", "update": update}).update
        got = strict[update["sessionUpdate"]](update)
        assert type(got) is type(expected) and got == expected
        assert got.model_dump(exclude_unset=True) == expected.model_dump(exclude_unset=True)
    for update in SALVAGED_UPDATES:
        S.SessionNotification.model_validate({"sessionId": "s", "update": update})  # the SDK accepts it...
        with pytest.raises(ValidationError):
            strict[update["sessionUpdate"]](update)  # ...after repairs the strict validator does not make


def test_the_strict_update_validators_skip_the_wrappers_and_leave_the_sdk_as_it_was(monkeypatch: Any) -> None:
    import pydantic

    strict = acp_sdk._update_validators()
    calls = _wrapper_calls(monkeypatch)
    update = {
        "sessionUpdate": "tool_call",
        "toolCallId": "t",
        "title": "t",
        "kind": "read",
        "locations": [{"path": "/a", "line": 2}],
        "_meta": {"k": 1},
    }
    strict["tool_call"](update)
    assert calls == []
    acp_sdk._validate_update(update)
    assert "salvage_on_error" in calls and "skip_invalid_items" in calls
    # building them marked the SDK's classes incomplete for a moment only
    incomplete = [
        name
        for name, cls in vars(S).items()
        if isinstance(cls, type)
        and issubclass(cls, pydantic.BaseModel)
        and cls.__module__ == S.__name__
        and cls.__dict__.get("__pydantic_complete__") is not True
    ]
    assert incomplete == []


def test_updates_the_sdk_repairs_reach_the_handler_repaired(backend: Any) -> None:
    """Updates the strict validators refuse go through the SDK's lenient ones (repaired), or fail
    as in the SDK: same handler calls, same models, same errors logged, in the same order."""
    frames = [
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}}
        for update in SALVAGED_UPDATES
        + [
            {"sessionUpdate": "no_such_update", "x": 1},  # unknown tag: the SDK's error
            {"sessionUpdate": "tool_call", "title": "no id"},  # required field missing: the SDK's error
            {"sessionUpdate": 5},
            {"content": {"type": "text", "text": "no tag"}},
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "last"}},
        ]
    ]

    async def deliver(fast: bool) -> Any:
        client = RecordingClient()
        async with client_side(client, fast=fast, backend=backend) as (conn, peer):
            peer.send(*frames)
            await until(lambda: len(client.calls) == len(SALVAGED_UPDATES) + 1)
        return client.calls

    logger = logging.getLogger()
    results = {}
    for fast in (False, True):
        records: List[logging.LogRecord] = []
        handler = logging.Handler(logging.ERROR)
        handler.emit = records.append  # type: ignore[method-assign]
        logger.addHandler(handler)
        try:
            calls = run(deliver(fast))
        finally:
            logger.removeHandler(handler)
        results[fast] = (calls, [r.getMessage() for r in records], [type(r.exc_info[1]) for r in records if r.exc_info])
    assert results[True] == results[False]
    calls, messages, errors = results[True]
    assert messages == ["Unhandled error while handling notification method=session/update"] * 4
    assert errors == [ValidationError] * 4
    updates = [kw["update"] for _, kw in calls]
    assert updates[0].kind is None and updates[0].status is None
    assert [(loc.path, loc.line) for loc in updates[1].locations] == [("/a", 1), ("/b", None)]
    assert [item.content.text for item in updates[1].content] == ["ok"]
    assert updates[2].status is None and updates[2].field_meta is None
    assert [e.content for e in updates[3].entries] == ["a"]
    assert updates[-1].content.text == "last"


# ---------------------------------------------------------------------------------------------
# docs/SDK.md: every example runs as written


def _doc_examples() -> List[str]:
    text = (TESTS.parent / "docs" / "SDK.md").read_text(encoding="utf-8")
    blocks, current = [], None
    for line in text.splitlines():
        if current is None and line.strip() == "```python":
            current = []
        elif current is not None and line.strip() == "```":
            blocks.append("\n".join(current) + "\n")
            current = None
        elif current is not None:
            current.append(line)
    return blocks


@pytest.mark.parametrize("index", range(len(_doc_examples())))
def test_docs_sdk_examples_run(index: int, backend: Any) -> None:
    code = _doc_examples()[index]
    env = dict(os.environ, ACP_FAST_BACKEND=backend.BACKEND, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr
