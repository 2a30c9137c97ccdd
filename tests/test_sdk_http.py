"""The SDK integration on the SDK's network transports (SDK 1.0's ``acp.http`` and ``acp.ws``, with
its ``http`` extra): an SDK client talking to the SDK's own ASGI application (``AcpServer`` under
``acp.http.asgi.create_asgi_app``, served by uvicorn on a free port of the loopback) over
Streamable HTTP and over WebSocket, with and without ``acp_sdk.install()``, gives the same handler
calls and results, and the JSON of every message goes through acp-fast; ``install(strict=True)``
refuses there what it refuses on stdio; a transport module of another shape is left alone with one
warning naming it. Skipped, with the SDK release in the reason, where the SDK has no network
transports (0.12) or its ``http`` extra or uvicorn is missing. Runs on both backends (the
``backend`` fixture is handed to the integration). Shared helpers: ``sdk_helpers.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.metadata
import importlib.util
import json
import logging
import socket
import sys
import types
import warnings
from typing import Any, Dict, List, Optional, Tuple

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")


def _missing() -> Optional[str]:
    """Why the network transports cannot be tested here, or None."""
    version = importlib.metadata.version("agent-client-protocol")
    if importlib.util.find_spec("acp.http") is None or importlib.util.find_spec("acp.ws") is None:
        return f"agent-client-protocol {version} has no network transports (acp.http, acp.ws)"
    for module in ("acp.http.asgi", "acp.http.client", "acp.ws.client", "acp.ws.server", "uvicorn", "websockets"):
        try:
            importlib.import_module(module)
        except ImportError as error:  # the SDK's own message names its extra
            return f"agent-client-protocol {version}: {error}"
    return None


if _missing() is not None:
    pytest.skip(_missing(), allow_module_level=True)

import acp  # noqa: E402
import acp.connection  # noqa: E402
import acp.http.client  # noqa: E402
import uvicorn  # noqa: E402
from acp import schema as S  # noqa: E402
from acp.http import create_http_stream  # noqa: E402
from acp.http.asgi import create_asgi_app  # noqa: E402
from acp.ws import create_websocket_stream  # noqa: E402

from acp_fast.integrations import _sdk_network, _sdk_support, acp_sdk  # noqa: E402
from sdk_helpers import RecordingClient, check_turn_calls, run, scenario  # noqa: E402

# tests/sdk_peers/agent.py (sdk_helpers puts tests/sdk_peers on sys.path)
PeerAgent = importlib.import_module("agent").PeerAgent

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TRANSPORTS = ["http", "ws"]


# ---------------------------------------------------------------------------------------------
# Harness


class CountingBackend:
    """An acp-fast backend whose ``loads`` / ``dumps`` count their calls."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self.loads_calls = 0
        self.dumps_calls = 0

    def loads(self, data: Any) -> Any:
        self.loads_calls += 1
        return self._backend.loads(data)

    def dumps(self, obj: Any) -> bytes:
        self.dumps_calls += 1
        return self._backend.dumps(obj)  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)


@contextlib.asynccontextmanager
async def served(agent_factory: Any = None) -> Any:
    """The SDK's ASGI application (one ``PeerAgent`` per connection) under uvicorn on a free port of
    the loopback; yields its base URL (``http://127.0.0.1:PORT``)."""
    agents: List[Any] = []

    def factory(conn: Any) -> Any:
        agent = PeerAgent()
        agents.append(agent)
        return agent

    app = create_asgi_app(agent_factory or factory)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", ws_max_size=64 * 1024 * 1024)
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()


async def open_transport(kind: str, base: str) -> Any:
    if kind == "http":
        return create_http_stream(base + "/acp")
    return await create_websocket_stream(base.replace("http://", "ws://") + "/acp")


async def prompt_turn(kind: str, base: str) -> Tuple[List[Any], List[Any], List[Any], int, Any]:
    """A full prompt turn (``PeerAgent``: every update of the scenario, a permission, a file read
    and write, an extension method and notification), then the agent's record; the client's calls,
    the results, the agent's calls, the updates seen when ``prompt`` returned, and the class of
    the client's connection."""
    client = RecordingClient()
    transport = await open_transport(kind, base)
    conn = acp.connect_to_agent(client, transport)
    try:
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
        session_id = results[-1].session_id
        prompt = scenario.golden_model("prompt_request")
        results.append(await conn.prompt(session_id=session_id, prompt=prompt.prompt))
        updates_seen = sum(1 for name, _ in client.calls if name == "session_update")
        results.append(
            await conn.ext_method("peer/echo", {"big": 2**70, "unicode": "日本 \u2028", "list": [None, 1.5e300]})
        )
        record = await conn.ext_method("peer/record", {})
    finally:
        await conn.close()
    return client.calls, results, record["calls"], updates_seen, type(conn._conn)


async def session(kind: str, install: Any) -> Any:
    with install:
        async with served() as base:
            return await prompt_turn(kind, base)


@pytest.fixture(scope="module")
def plain() -> Dict[str, Any]:
    """The reference: the SDK alone, over each transport."""
    return {kind: run(session(kind, contextlib.nullcontext())) for kind in TRANSPORTS}


# ---------------------------------------------------------------------------------------------
# A full prompt turn


def test_plain_sdk_turn_is_complete(plain: Dict[str, Any]) -> None:
    for kind in TRANSPORTS:
        calls, results, agent_calls, updates_seen, connection = plain[kind]
        assert connection is acp.connection.Connection
        check_turn_calls(calls, agent_calls, updates_seen, cancel=False)


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_install_gives_the_same_turn_through_acp_fast_json(plain: Dict[str, Any], backend: Any, kind: str) -> None:
    counting = CountingBackend(backend)
    calls, results, agent_calls, updates_seen, connection = run(session(kind, acp_sdk.installed(backend=counting)))
    plain_calls, plain_results, plain_agent_calls, plain_updates_seen, _ = plain[kind]
    assert connection is acp_sdk.FastConnection
    assert calls == plain_calls  # same handlers, same order, same pydantic models
    assert results == plain_results
    assert agent_calls == plain_agent_calls
    assert updates_seen == plain_updates_seen
    # Every message went through acp-fast's JSON: written once where it is sent, parsed once where
    # it is received, but for the initialize answer over HTTP (parsed by httpx on the client; written
    # with json's default separators, so by json, by SDK 0.12's server). Messages: one per client
    # handler call (the agent's updates, requests and notification), the answers to the client's 5
    # requests, the client's 5 requests and its answers to the agent's 4 requests.
    messages = len(plain_calls) + 5 + 5 + 4
    assert messages - (kind == "http") <= counting.dumps_calls <= messages
    assert counting.loads_calls == messages - (kind == "http")


def test_install_replaces_every_network_path_and_uninstall_restores_them(backend: Any) -> None:
    for name in _sdk_network.NETWORK_MODULES:
        importlib.import_module(name)
    names = {
        (path.module, hook.attribute)
        for path in _sdk_network.NETWORK_PATHS
        for alternative in path.alternatives
        for hook in alternative
        if hasattr(sys.modules[path.module], hook.attribute)
    }
    before = {(module, attribute): getattr(sys.modules[module], attribute) for module, attribute in names}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the installed SDK has a known shape
        with acp_sdk.installed(backend=backend):
            now = {(module, attribute): getattr(sys.modules[module], attribute) for module, attribute in names}
            replaced = {key for key in names if now[key] is not before[key]}
            for path in _sdk_network.NETWORK_PATHS:
                mine = {key for key in names if key[0] == path.module}
                # each module that parses or writes JSON itself has its per-message JSON replaced
                assert not mine or mine & replaced, path
            assert isinstance(sys.modules["acp._sse"].json, _sdk_network.FastJson)
    after = {(module, attribute): getattr(sys.modules[module], attribute) for module, attribute in names}
    assert after == before
    assert sys.modules["acp.ws.client"].json is json


def test_fast_json_writes_the_kind_of_text_the_sdk_writes(backend: Any) -> None:
    """Where the SDK writes with json.dumps (ASCII, non-ASCII escaped), FastJson writes the same
    text: an SSE stream or WebSocket frame never carries raw UTF-8 the SDK would not have sent
    (SDK 0.12's client decodes SSE chunks as they come and breaks on a character split across two)."""
    fast = _sdk_network.FastJson(backend)
    compact = {"separators": (",", ":")}
    plain = {"jsonrpc": "2.0", "id": 7, "method": "session/update", "params": {"sessionId": "s", "n": [1, None, True]}}
    wide = {"jsonrpc": "2.0", "method": "x", "params": {"text": "naïve 日本 \u2028 😀" * 3}}
    for message in (plain, wide):
        assert fast.dumps(message, **compact) == json.dumps(message, **compact)
        assert fast.loads(fast.dumps(message, **compact)) == message
    # ensure_ascii=False (Starlette's send_json): acp-fast's raw UTF-8, the same JSON
    assert fast.dumps(wide, ensure_ascii=False, **compact) == json.dumps(wide, ensure_ascii=False, **compact)
    assert fast.dumps(plain) == json.dumps(plain)  # default separators: json's own
    assert fast.dumps({"x": float("nan")}, **compact) == json.dumps({"x": float("nan")}, **compact)
    with pytest.raises(json.JSONDecodeError):
        fast.loads("{")


# ---------------------------------------------------------------------------------------------
# strict=True


class StrictProbeAgent(PeerAgent):  # type: ignore[misc, valid-type]
    """Sends, in its prompt turn, what the SDK's models accept and the schema refuses (written raw,
    through the SDK's JSON-RPC connection: the SDK's own models would drop the bad field): an update
    with a negative line number, and a file read with one; then a valid update."""

    async def prompt(self, **kwargs: Any) -> S.PromptResponse:
        session_id = kwargs["session_id"]
        rpc = self.conn._conn  # the SDK's Connection
        update = {
            "sessionUpdate": "tool_call",
            "toolCallId": "t",
            "title": "T",
            "locations": [{"path": "/a", "line": -3}],
        }
        await rpc.send_notification("session/update", {"sessionId": session_id, "update": update})
        try:
            result = await rpc.send_request("fs/read_text_file", {"sessionId": session_id, "path": "/a", "line": -1})
            self.calls.append(("read_result", result))
        except acp.RequestError as error:
            self.calls.append(("read_error", {"code": error.code, "data": error.data}))
        await self.conn.session_update(session_id, scenario.prompt_updates()[0])
        return S.PromptResponse(stop_reason="end_turn")


async def strict_turn(kind: str) -> Tuple[List[Any], List[Any]]:
    client = RecordingClient()
    async with served(lambda conn: StrictProbeAgent()) as base:
        transport = await open_transport(kind, base)
        conn = acp.connect_to_agent(client, transport)
        try:
            await conn.initialize(protocol_version=1)
            session_id = (await conn.new_session(cwd="/", mcp_servers=[])).session_id
            await conn.prompt(session_id=session_id, prompt=[S.TextContentBlock(type="text", text="hi")])
            record = await conn.ext_method("peer/record", {})
        finally:
            await conn.close()
    return client.calls, record["calls"]


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("strict", [False, True])
def test_strict_refuses_on_the_client_as_on_stdio(backend: Any, kind: str, strict: bool, caplog: Any) -> None:
    logs = caplog.at_level(logging.WARNING, logger="acp_fast.integrations.acp_sdk")
    with logs, acp_sdk.installed(backend=backend, strict=strict):
        calls, agent_calls = run(strict_turn(kind))
    names = [name for name, _ in calls]
    outcome = [entry for entry in agent_calls if entry[0] in ("read_result", "read_error")]
    if not strict:  # the SDK's models take both: the default is unchanged
        assert names == ["session_update", "read_text_file", "session_update"]
        assert [name for name, _ in outcome] == ["read_result"]
        assert "refused by the schema" not in caplog.text
        return
    # the notification: logged and dropped; the request: answered with -32602, its handler not called
    assert names == ["session_update"]
    assert calls[0][1]["update"] == scenario.prompt_updates()[0]
    assert 'refused by the schema: expected "params.update.locations[0].line" to be >= 0' in caplog.text
    [(name, error)] = outcome
    assert name == "read_error"
    assert error["code"] == -32602
    assert error["data"]["details"] == 'expected "params.line" to be >= 0, found number -1'


async def raw_http_prompt_without_session_id(base: str) -> Dict[str, Any]:
    """A raw Streamable HTTP client: initialize, session/new, then a session/prompt whose params
    lack the required sessionId; the answer to it, read from the connection's SSE stream."""
    url = base + "/acp"
    httpx = getattr(acp.http.client, "httpx2", None) or acp.http.client.httpx  # the SDK's HTTP client library
    async with httpx.AsyncClient(timeout=httpx.Timeout(10)) as http:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
        response = await http.post(url, json=init, headers={"Content-Type": "application/json"})
        assert response.status_code == 200, response.text
        headers = {"Content-Type": "application/json", "Acp-Connection-Id": response.headers["Acp-Connection-Id"]}
        answers: asyncio.Queue[Dict[str, Any]] = asyncio.Queue()

        async def read_stream() -> None:
            async with http.stream("GET", url, headers={**headers, "Accept": "text/event-stream"}) as stream:
                async for line in stream.aiter_lines():
                    if line.startswith("data:"):
                        answers.put_nowait(json.loads(line[5:]))

        reader = asyncio.ensure_future(read_stream())
        try:
            new = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}
            assert (await http.post(url, json=new, headers=headers)).status_code == 202
            session_id = (await asyncio.wait_for(answers.get(), 10))["result"]["sessionId"]
            bad = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"prompt": []}}
            response = await http.post(url, json=bad, headers={**headers, "Acp-Session-Id": session_id})
            assert response.status_code == 202
            answer = await asyncio.wait_for(answers.get(), 10)
            await http.request("DELETE", url, headers=headers)
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
    return answer


@pytest.mark.parametrize("strict", [False, True])
def test_strict_refuses_on_the_http_server_as_on_stdio(backend: Any, strict: bool) -> None:
    async def main() -> Dict[str, Any]:
        with acp_sdk.installed(backend=backend, strict=strict):
            async with served() as base:
                return await raw_http_prompt_without_session_id(base)

    answer = run(main())
    assert answer["id"] == 2
    assert answer["error"]["code"] == -32602
    if strict:  # refused by acp-fast's schema check, before the SDK's models see it
        assert answer["error"]["data"]["details"].startswith('expected "params.sessionId"')
    else:  # refused by the SDK's pydantic model
        assert "details" not in answer["error"]["data"]
        assert answer["error"]["data"]["errors"]


# ---------------------------------------------------------------------------------------------
# A transport of another shape


def test_a_transport_module_of_another_shape_is_left_alone_with_one_warning(backend: Any, monkeypatch: Any) -> None:
    fake = types.ModuleType("acp.ws.client")
    codec = types.SimpleNamespace(dumps=json.dumps, loads=json.loads)  # not the json module
    fake.json = codec  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "acp.ws.client", fake)
    monkeypatch.setattr(_sdk_support, "_warned", set())
    patches = _sdk_network.NetworkPatches([p for p in _sdk_network.NETWORK_PATHS if p.module == "acp.ws.client"])
    try:
        with pytest.warns(RuntimeWarning) as caught:
            patches.apply(backend)
        [warning] = caught
        assert str(warning.message) == (
            "acp-fast: the SDK's WebSocket client's frames (acp.ws.client) are not sped up: it does not "
            "parse and write its messages with the json module; they are parsed and written by the SDK's json"
        )
        assert fake.json is codec  # type: ignore[attr-defined]  # left alone
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            patches.apply(backend)  # once per process
        assert fake.json is codec  # type: ignore[attr-defined]
    finally:
        patches.apply(None)
        if patches._finder is not None:
            sys.meta_path.remove(patches._finder)


def test_a_module_without_json_of_its_own_is_left_alone_silently(backend: Any, monkeypatch: Any) -> None:
    """As SDK 0.12's acp.http.server, whose answers are written by its acp.http.asgi."""
    fake = types.ModuleType("acp.http.server")
    monkeypatch.setitem(sys.modules, "acp.http.server", fake)
    monkeypatch.setattr(_sdk_support, "_warned", set())
    patches = _sdk_network.NetworkPatches([p for p in _sdk_network.NETWORK_PATHS if p.module == "acp.http.server"])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            patches.apply(backend)
        assert not hasattr(fake, "json") and not hasattr(fake, "JSONResponse")
    finally:
        patches.apply(None)
        if patches._finder is not None:
            sys.meta_path.remove(patches._finder)
