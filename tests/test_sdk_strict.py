"""``acp_sdk.install(strict=True)``: every frame an SDK connection receives is checked against the
official schema by acp-fast (``FrameDecoder(strict_schema=True)``, told what the connection
sends), and an invalid one is refused as the SDK refuses invalid params. Runs on both backends
and, in CI, on every SDK release tested (.ci/sdk-versions). Shared helpers: ``sdk_helpers.py``.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from typing import Any, Dict

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

from acp.exceptions import RequestError  # noqa: E402

from acp_fast.integrations import acp_sdk  # noqa: E402
from acp_fast.integrations._sdk_transport import _StreamTransport, _StrictStreamTransport  # noqa: E402
from sdk_helpers import RecordingClient, agent_side, client_side, run, scenario, texts, until, update_frame  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# What the SDK's models accept and the schema does not: a negative line number (uint32).
BAD_READ = {"sessionId": "s1", "path": "/a", "line": -1}


def _read(request_id: Any, params: Dict[str, Any]) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "fs/read_text_file", "params": params}


def _bad_update() -> Dict[str, Any]:
    frame = update_frame(9)
    frame["params"]["update"] = {
        "sessionUpdate": "tool_call",
        "toolCallId": "t",
        "title": "T",
        "locations": [{"path": "/a", "line": -3}],
    }
    return frame


@pytest.mark.parametrize("strict", [False, True])
def test_invalid_request_and_notification(backend: Any, strict: bool, caplog: Any) -> None:
    async def main() -> Any:
        client = RecordingClient()
        async with client_side(client, fast=True, backend=backend, strict=strict) as (conn, peer):
            transport = type(conn._conn._stream)
            peer.send(_read(1, BAD_READ), _bad_update(), update_frame(0), _read(2, {"sessionId": "s1", "path": "/a"}))
            replies = [await peer.line(), await peer.line()]
            await until(lambda: len(client.calls) == (2 if strict else 4))
            return transport, client.calls, replies, await peer.silent()

    with caplog.at_level(logging.WARNING, logger="acp_fast.integrations.acp_sdk"):
        transport, calls, replies, silent = run(main())
    assert silent
    by_id = {r["id"]: r for r in replies}
    assert by_id[2]["result"] == scenario.golden("fs_read_text_file_response")
    if not strict:  # the SDK's models take both frames: the default is unchanged
        assert transport is _StreamTransport
        assert [name for name, _ in calls] == ["read_text_file", "session_update", "session_update", "read_text_file"]
        assert by_id[1]["result"] == scenario.golden("fs_read_text_file_response")
        assert "refused by the schema" not in caplog.text
        return
    assert transport is _StrictStreamTransport
    # the request: answered as the SDK answers invalid params, its handler never called
    assert [name for name, _ in calls] == ["session_update", "read_text_file"]
    error = by_id[1]["error"]
    assert (error["code"], error["message"]) == (-32602, "Invalid params")
    assert error["data"]["details"] == 'expected "params.line" to be >= 0, found number -1'
    assert error["data"]["errors"] == [
        {"path": "params.line", "message": 'expected "params.line" to be >= 0, found number -1', "rule": "schema"}
    ]
    # the notification: logged and dropped
    assert 'line 2 refused by the schema: expected "params.update.locations[0].line" to be >= 0' in caplog.text
    assert calls[0][1]["update"].content.text == "0"


def test_invalid_response_fails_its_request_and_valid_ones_resolve(backend: Any) -> None:
    """Responses are checked against the request they answer (the decoder is told what the
    connection sent): a valid one resolves its request, an invalid one fails it with -32602."""

    async def main() -> Any:
        async with client_side(RecordingClient(), fast=True, backend=backend, strict=True) as (conn, peer):
            first = asyncio.ensure_future(conn.initialize(protocol_version=1))
            request = await peer.line()
            peer.send({"jsonrpc": "2.0", "id": request["id"], "result": scenario.golden("initialize_response")})
            init = await first
            second = asyncio.ensure_future(conn.new_session(cwd="/tmp"))
            request = await peer.line()
            peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": 5}})
            with pytest.raises(RequestError) as failed:
                await second
            return init, failed.value

    init, error = run(main())
    assert init == scenario.golden_model("initialize_response")
    assert error.code == -32602
    assert error.data["details"] == 'expected "result.sessionId" to be string, found number 5'
    assert error.data["response"]["result"] == {"sessionId": 5}


def test_batch_refused_as_a_whole_answers_each_request(backend: Any) -> None:
    """A v1 batch with an invalid entry is refused as a whole (a strict decoder judges frames
    whole): each of its requests is answered with an error of its id, in one array; its
    notifications are dropped."""

    async def main() -> Any:
        client = RecordingClient()
        async with client_side(client, fast=True, backend=backend, strict=True) as (conn, peer):
            peer.send([_read("r", {"sessionId": "s1", "path": "/a"}), update_frame(0), _read(3, BAD_READ)])
            reply = await peer.line()
            peer.send(update_frame(1))
            await until(lambda: texts(client) == ["1"])
            return client.calls, reply, await peer.silent()

    calls, reply, silent = run(main())
    assert silent and [name for name, _ in calls] == ["session_update"]
    assert [(r["id"], r["error"]["code"]) for r in reply] == [("r", -32602), (3, -32602)]
    details = 'expected "[2].params.line" to be >= 0, found number -1'
    assert reply[0]["error"]["data"]["details"] == details


def test_strict_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match=r"^expected strict to be a bool, found 1$"):
        acp_sdk.install(strict=1)  # type: ignore[arg-type]
    assert not acp_sdk.is_installed()


def test_agent_side(backend: Any) -> None:
    """The agent's connection too: a request the SDK's models would take (``"yes"`` for a bool)
    is answered with -32602 and never reaches the agent; a valid one is handled."""

    class Agent:
        def __init__(self) -> None:
            self.calls: list = []

        async def initialize(self, **kwargs: Any) -> Any:
            self.calls.append(kwargs["protocol_version"])
            return scenario.golden_model("initialize_response")

    bad = {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": "yes"}}}

    async def exchange(strict: bool) -> Any:
        agent = Agent()
        async with agent_side(agent, fast=True, backend=backend, strict=strict) as (conn, peer):
            peer.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": bad})
            peer.send({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": 1}})
            replies = [await peer.line(), await peer.line()]
            return agent.calls, {r["id"]: r for r in replies}

    calls, replies = run(exchange(False))
    assert calls == [1, 1] and "result" in replies[1]
    calls, replies = run(exchange(True))
    assert calls == [1] and replies[2]["result"] == scenario.golden("initialize_response")
    error = replies[1]["error"]
    assert (error["code"], error["data"]["errors"][0]["path"]) == (-32602, "params.clientCapabilities.fs.readTextFile")
