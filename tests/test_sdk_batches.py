"""Batches and the protocol version: protocol v2 has no batches, so on a connection that speaks it
(the version its ``initialize`` answered, or an experimental v2 client or agent of SDK 1.0) a
batch frame is answered with one -32600 error of id ``null`` (kind ``batch_in_v2``, as the Rust
SDK answers it) and nothing of it reaches a handler; under v1 batches are dispatched as ever.
Client side and agent side, with and without ``strict``, on both backends. The experimental v2
cases need SDK 1.0 (``acp.experimental``); with an SDK that has no v2 they check that it is
absent. Shared helpers: ``sdk_helpers.py``.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from typing import Any, Dict, List

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

from acp_fast.integrations import acp_sdk  # noqa: E402
from sdk_helpers import (  # noqa: E402
    HAS_V2,
    RecordingClient,
    agent_side,
    client_side,
    run,
    scenario,
    socket_pair,
    texts,
    until,
    update_frame,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DETAILS = "expected one message, found a batch (protocol v2 has no batches)"


def _no_batches(line: int) -> Dict[str, Any]:
    """The reply to a batch frame on line ``line`` of a v2 connection."""
    details = f"{DETAILS} at line {line} column 1"
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Invalid request", "data": {"details": details}},
    }


def _read(request_id: Any) -> Dict[str, Any]:
    params = scenario.golden("fs_read_text_file_request")
    return {"jsonrpc": "2.0", "id": request_id, "method": "fs/read_text_file", "params": params}


def _note(n: int) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "_peer/note", "params": {"n": n}}


def _ext(request_id: Any) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "_peer/echo", "params": {"n": request_id}}


# ---------------------------------------------------------------------------------------------
# The SDK's v1 connections: the version their initialize answered


@pytest.mark.parametrize("strict", [False, True], ids=["lenient", "strict"])
@pytest.mark.parametrize("version", [1, 2])
def test_client_side_batches_follow_the_negotiated_version(backend: Any, version: int, strict: bool) -> None:
    """An SDK client whose agent answers ``initialize`` with ``version``: under v1 the batch's
    request and notification reach the client's handlers and the request is answered in an array;
    under v2 the batch gets one error of id null and reaches nothing (with ``strict`` too, where
    the schema check refuses a v2 array as a whole). The stream goes on in both."""

    async def main() -> Any:
        client = RecordingClient()
        async with client_side(client, fast=True, backend=backend, strict=strict) as (conn, peer):
            init = asyncio.ensure_future(conn.initialize(protocol_version=version))
            request = await peer.line()
            answer = {**scenario.golden("initialize_response"), "protocolVersion": version}
            peer.send({"jsonrpc": "2.0", "id": request["id"], "result": answer})
            assert (await init).protocol_version == version
            peer.send([_read(7), update_frame(1)], _note(2))
            reply = await peer.line()
            await until(lambda: client.calls and client.calls[-1][0] == "ext_notification")
            return reply, client.calls, await peer.silent()

    reply, calls, silent = run(main())
    assert silent
    note = ("ext_notification", {"method": "peer/note", "params": {"n": 2}})
    if version == 1:
        assert reply == [{"jsonrpc": "2.0", "id": 7, "result": scenario.golden("fs_read_text_file_response")}]
        assert [name for name, _ in calls] == ["read_text_file", "session_update", "ext_notification"]
        assert calls[-1] == note
    else:
        assert reply == _no_batches(2)
        assert calls == [note]


@pytest.mark.parametrize("strict", [False, True], ids=["lenient", "strict"])
@pytest.mark.parametrize("version", [1, 2])
def test_agent_side_batches_follow_the_version_it_answered(backend: Any, version: int, strict: bool) -> None:
    """An SDK agent that answers ``initialize`` with ``version`` (what it writes teaches the
    connection): under v1 a batch of requests is handled and answered in one array; under v2 it
    gets one error of id null and no handler runs; the requests after it are answered."""

    class Agent:
        def __init__(self) -> None:
            self.calls: List[Any] = []

        async def initialize(self, **kwargs: Any) -> Any:
            self.calls.append(("initialize", kwargs["protocol_version"]))
            return scenario.golden_model("initialize_response").model_copy(update={"protocol_version": version})

        async def ext_method(self, method: str, params: Any) -> Any:
            self.calls.append((method, params["n"]))
            return {"echo": params["n"]}

    async def main() -> Any:
        agent = Agent()
        async with agent_side(agent, fast=True, backend=backend, strict=strict) as (conn, peer):
            init = {**scenario.golden("initialize_request"), "protocolVersion": version}
            peer.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
            assert (await peer.line())["result"]["protocolVersion"] == version
            peer.send([_ext(2), _ext(3)], _ext(4))
            replies = [await peer.line(), await peer.line()]
            return replies, agent.calls, await peer.silent()

    replies, calls, silent = run(main())
    assert silent
    last = {"jsonrpc": "2.0", "id": 4, "result": {"echo": 4}}
    if version == 1:
        batch = sorted(replies[0], key=lambda reply: reply["id"])
        assert batch == [{"jsonrpc": "2.0", "id": i, "result": {"echo": i}} for i in (2, 3)]
        assert replies[1] == last
        assert calls == [("initialize", 1), ("peer/echo", 2), ("peer/echo", 3), ("peer/echo", 4)]
    else:
        assert replies == [_no_batches(2), last]
        assert calls == [("initialize", 2), ("peer/echo", 4)]


def test_before_initialize_a_connection_speaks_v1(backend: Any) -> None:
    """Until an ``initialize`` answer says otherwise the version in force is 1, so a batch read
    first is dispatched (a v1 client's connection cannot know better)."""

    async def main() -> Any:
        client = RecordingClient()
        async with client_side(client, fast=True, backend=backend) as (conn, peer):
            peer.send([update_frame(0), update_frame(1)])
            await until(lambda: len(texts(client)) == 2)
            return texts(client), conn._conn._stream.protocol_version, await peer.silent()

    assert run(main()) == (["0", "1"], 1, True)


def test_a_batch_under_v2_is_logged_and_only_logged_without_reply_errors(backend: Any, caplog: Any) -> None:
    """``reply_errors=False``: the batch is logged as a bad frame, not answered, and applied no
    more than with a reply."""

    async def main() -> Any:
        client = RecordingClient()
        async with client_side(client, fast=True, backend=backend, reply_errors=False) as (conn, peer):
            init = asyncio.ensure_future(conn.initialize(protocol_version=2))
            request = await peer.line()
            answer = {**scenario.golden("initialize_response"), "protocolVersion": 2}
            peer.send({"jsonrpc": "2.0", "id": request["id"], "result": answer})
            await init
            peer.send([update_frame(0)], update_frame(1))
            await until(lambda: texts(client) == ["1"])
            return await peer.silent()

    with caplog.at_level(logging.WARNING, logger="acp_fast.integrations.acp_sdk"):
        assert run(main())
    assert f"bad frame on line 2: {DETAILS} at line 2 column 1" in caplog.text


# ---------------------------------------------------------------------------------------------
# The experimental v2 client and agent (SDK 1.0): v2 from the first frame


def _v2() -> Any:
    from acp.experimental import v2

    return v2


def test_experimental_v2_agent_never_takes_a_batch(backend: Any) -> None:
    """An experimental v2 agent on acp-fast speaks v2 from its first frame: a batch before
    ``initialize`` and one after are each answered with one error, and its handlers never see
    them; the requests between them are handled."""
    if not HAS_V2:
        assert acp_sdk.sdk_draft() == "latest"
        return
    v2 = _v2()
    schema = v2.schema

    class Agent:
        def __init__(self) -> None:
            self.calls: List[Any] = []

        async def initialize(self, protocol_version: int, info: Any, **kwargs: Any) -> Any:
            self.calls.append("initialize")
            return schema.InitializeResponse(
                protocol_version=protocol_version, info=schema.Implementation(name="a", version="1")
            )

        async def new_session(self, cwd: str, **kwargs: Any) -> Any:
            self.calls.append(f"new_session {cwd}")
            return schema.NewSessionResponse(session_id="s1")

    def new_session(request_id: int) -> Dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "method": "session/new", "params": {"cwd": f"/{request_id}"}}

    async def main(strict: bool) -> Any:
        agent = Agent()
        (reader, writer), peer = await socket_pair()
        with acp_sdk.installed(backend=backend, strict=strict):
            conn = v2.AgentSideConnection(agent, writer, reader)
        assert type(conn._conn) is acp_sdk.FastConnection
        try:
            peer.send([new_session(1)])
            first = await peer.line()
            init = {"protocolVersion": 2, "info": {"name": "c", "version": "1"}}
            peer.send({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": init})
            assert (await peer.line())["result"]["protocolVersion"] == 2
            peer.send([new_session(3), new_session(4)], new_session(5))
            replies = [await peer.line(), await peer.line()]
            return [first, *replies], agent.calls, await peer.silent()
        finally:
            await conn._conn.close()
            peer.writer.close()

    for strict in (False, True):
        replies, calls, silent = run(main(strict))
        assert silent
        assert replies == [_no_batches(1), _no_batches(3), {"jsonrpc": "2.0", "id": 5, "result": {"sessionId": "s1"}}]
        assert calls == ["initialize", "new_session /5"]


@pytest.mark.filterwarnings("ignore:acp-fast. the session/update fast path is for v1 clients:RuntimeWarning")
def test_experimental_v2_client_never_takes_a_batch(backend: Any) -> None:
    """An experimental v2 client on acp-fast: a batch of updates from its agent is answered with
    one error and never reaches ``session_update``; the update after it does."""
    if not HAS_V2:
        assert acp_sdk.sdk_draft() == "latest"
        return
    v2 = _v2()
    schema = v2.schema

    class Client:
        def __init__(self) -> None:
            self.texts: List[str] = []

        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            self.texts.append(update.content.text)

    def chunk(i: int) -> Dict[str, Any]:
        update = {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text", "text": str(i)}}
        return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": update}}

    async def main(strict: bool) -> Any:
        client = Client()
        (reader, writer), peer = await socket_pair()
        with acp_sdk.installed(backend=backend, strict=strict):
            conn = v2.ClientSideConnection(client, writer, reader)
        assert type(conn._conn) is acp_sdk.FastConnection
        try:
            init = asyncio.ensure_future(
                conn.initialize(protocol_version=v2.PROTOCOL_VERSION, info=schema.Implementation(name="c", version="1"))
            )
            request = await peer.line()
            answer = {"protocolVersion": 2, "info": {"name": "a", "version": "1"}}
            peer.send({"jsonrpc": "2.0", "id": request["id"], "result": answer})
            await init
            peer.send([chunk(0), chunk(1)], chunk(2))
            reply = await peer.line()
            await until(lambda: client.texts == ["2"])
            return reply, await peer.silent()
        finally:
            await conn._conn.close()
            peer.writer.close()

    for strict in (False, True):
        assert run(main(strict)) == (_no_batches(2), True)


@pytest.mark.parametrize("version", [1, 2])
def test_the_protocol_router_negotiates_batches_away_under_v2(backend: Any, version: int) -> None:
    """``AgentProtocolRouter`` (SDK 1.0) picks its v1 or v2 agent from the first ``initialize``:
    the version it answers decides, as for any connection."""
    if not HAS_V2:
        assert acp_sdk.sdk_draft() == "latest"
        return
    from acp.experimental.negotiation import AgentProtocolRouter

    v2 = _v2()

    class V1Agent:
        async def initialize(self, **kwargs: Any) -> Any:
            return scenario.golden_model("initialize_response")

        async def ext_method(self, method: str, params: Any) -> Any:
            return {"v": 1, "n": params["n"]}

    class V2Agent:
        async def initialize(self, protocol_version: int, info: Any, **kwargs: Any) -> Any:
            return v2.schema.InitializeResponse(
                protocol_version=protocol_version, info=v2.schema.Implementation(name="a", version="1")
            )

        async def handle_extension_request(self, method: str, params: Any) -> Any:
            return {"v": 2, "n": params["n"]}

    async def main() -> Any:
        (reader, writer), peer = await socket_pair()
        router = AgentProtocolRouter(v1=lambda conn: V1Agent(), v2=lambda conn: V2Agent())
        with acp_sdk.installed(backend=backend):
            conn = router.connect(writer, reader)
        try:
            init = {"protocolVersion": version, "info": {"name": "c", "version": "1"}}
            if version == 1:
                init = {**scenario.golden("initialize_request"), "protocolVersion": 1}
            peer.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
            assert (await peer.line())["result"]["protocolVersion"] == version
            peer.send([_ext(2)], _ext(3))
            return [await peer.line(), await peer.line()], await peer.silent()
        finally:
            await conn.close()
            peer.writer.close()

    replies, silent = run(main())
    assert silent
    last = {"jsonrpc": "2.0", "id": 3, "result": {"v": version, "n": 3}}
    first = [{"jsonrpc": "2.0", "id": 2, "result": {"v": 1, "n": 2}}] if version == 1 else _no_batches(2)
    assert replies == [first, last]
