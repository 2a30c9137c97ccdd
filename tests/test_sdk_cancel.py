"""``$/cancel_request`` with and without the integration: whatever the installed SDK does with it
(SDK 1.0 cancels the handler task of the request it names; SDK 0.12 has no such method), acp-fast
does the same — the same handler events, the same replies, the same cancel notifications sent.
Runs on both backends (the ``backend`` fixture is handed to the integration). Shared helpers:
``sdk_helpers.py``.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any, Dict, List, Tuple

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

import acp.connection  # noqa: E402
from acp import schema as S  # noqa: E402

from sdk_helpers import (  # noqa: E402
    RecordingClient,
    agent_side,
    client_side,
    run,
    scenario,
    text_block,
    until,
    update_frame,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

#: Whether the installed SDK cancels incoming requests (SDK 1.0) or not (0.12).
SDK_CANCELS = hasattr(acp.connection.Connection, "_cancel_incoming")
CANCELLED = {"code": -32800, "message": "Request cancelled", "data": None}


def prompt_request(request_id: Any) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "session/prompt", "params": scenario.golden("prompt_request")}


def cancel_request(params: Any) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "$/cancel_request", "params": params}


class SlowAgent:
    """An agent whose prompt handler notes when it starts, ends or is cancelled."""

    def __init__(self) -> None:
        self.events: List[Tuple[str, str]] = []

    async def initialize(self, **kwargs: Any) -> Any:
        return scenario.golden_model("initialize_response")

    async def prompt(self, session_id: str, prompt: Any, **kwargs: Any) -> Any:
        text = prompt[0].text
        self.events.append(("start", text))
        try:
            await asyncio.sleep(0.3)
        except asyncio.CancelledError:
            self.events.append(("cancelled", text))
            raise
        self.events.append(("end", text))
        return S.PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.events.append(("session/cancel", session_id))


async def _agent_exchange(fast: bool, backend: Any, script: Any) -> Tuple[List[Any], List[Any]]:
    agent = SlowAgent()
    async with agent_side(agent, fast=fast, backend=backend) as (conn, peer):
        replies = await script(agent, peer)
        await asyncio.sleep(0.05)
    return agent.events, replies


def _both(backend: Any, script: Any) -> Tuple[List[Any], List[Any]]:
    plain = run(_agent_exchange(False, backend, script))
    fast = run(_agent_exchange(True, backend, script))
    assert fast == plain
    return plain


def _hi(request: Dict[str, Any], text: str) -> Dict[str, Any]:
    request["params"]["prompt"] = [text_block(text).model_dump(by_alias=True, exclude_none=True)]
    return request


def test_a_cancel_request_cancels_the_running_handler_as_the_sdk_does(backend: Any) -> None:
    async def script(agent: SlowAgent, peer: Any) -> List[Any]:
        peer.send(_hi(prompt_request(1), "a"))
        await until(lambda: agent.events == [("start", "a")])
        peer.send(cancel_request({"requestId": 1}))
        return [await peer.line()]

    events, replies = _both(backend, script)
    if SDK_CANCELS:
        assert events == [("start", "a"), ("cancelled", "a")]
        assert replies == [{"jsonrpc": "2.0", "id": 1, "error": CANCELLED}]
    else:
        assert events == [("start", "a"), ("end", "a")]
        assert replies == [{"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}]


def test_a_cancel_read_with_its_request_cancels_it_before_it_starts(backend: Any) -> None:
    """The request and its cancellation in one read: the SDK creates the handler's task and cancels
    it before it runs a step; with acp-fast the handler does not start either."""

    async def script(agent: SlowAgent, peer: Any) -> List[Any]:
        peer.send(_hi(prompt_request("p"), "b"), cancel_request({"requestId": "p"}), update_frame(0))
        return [await peer.line()]

    events, replies = _both(backend, script)
    if SDK_CANCELS:
        assert events == []
        assert replies == [{"jsonrpc": "2.0", "id": "p", "error": CANCELLED}]
    else:
        assert events == [("start", "b"), ("end", "b")]


def test_cancels_naming_no_running_request_are_ignored(backend: Any) -> None:
    async def script(agent: SlowAgent, peer: Any) -> List[Any]:
        peer.send(_hi(prompt_request(1), "c"))
        await until(lambda: agent.events == [("start", "c")])
        peer.send(
            cancel_request({"requestId": 2}),  # no such request
            cancel_request({"requestId": "1"}),  # a string, not the integer 1
            cancel_request({"requestId": True}),  # not a request id (Python would alias it with 1)
            cancel_request({"requestId": 1.0}),
            cancel_request({}),  # requestId missing
            cancel_request(None),
            {"jsonrpc": "2.0", "id": 9, "method": "$/cancel_request", "params": {"requestId": 1}},  # a request
        )
        replies = [await peer.line()]  # the reply to id 9 (method not found), or the prompt's
        replies.append(await peer.line())
        peer.send(cancel_request({"requestId": 1}))  # already answered
        await asyncio.sleep(0.05)
        return sorted(replies, key=lambda reply: str(reply["id"]))

    events, replies = _both(backend, script)
    assert events == [("start", "c"), ("end", "c")]
    assert replies[0] == {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}
    assert replies[1]["id"] == 9 and replies[1]["error"]["code"] == -32601


def test_handlers_read_with_a_request_start_in_wire_order(backend: Any) -> None:
    """A request, a notification and another request in one read: their handlers start in the
    order of the wire, with and without acp-fast (the SDK gives each its task at once)."""

    async def script(agent: SlowAgent, peer: Any) -> List[Any]:
        cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": scenario.golden("cancel_notification")}
        peer.send(_hi(prompt_request(1), "first"), cancel, _hi(prompt_request(2), "second"))
        return sorted([await peer.line(), await peer.line()], key=lambda reply: reply["id"])

    events, replies = _both(backend, script)
    session = scenario.golden("cancel_notification")["sessionId"]
    assert events[:3] == [("start", "first"), ("session/cancel", session), ("start", "second")]
    assert [reply["result"] for reply in replies] == [{"stopReason": "end_turn"}] * 2


def test_a_client_handler_is_cancelled_as_the_sdk_does(backend: Any) -> None:
    events: List[str] = []

    class SlowClient(RecordingClient):
        async def read_text_file(self, **kwargs: Any) -> S.ReadTextFileResponse:
            events.append("start")
            try:
                await asyncio.sleep(0.3)
            except asyncio.CancelledError:
                events.append("cancelled")
                raise
            events.append("end")
            return await super().read_text_file(**kwargs)

    read = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "fs/read_text_file",
        "params": scenario.golden("fs_read_text_file_request"),
    }

    async def exchange(fast: bool) -> Any:
        events.clear()
        async with client_side(SlowClient(), fast=fast, backend=backend) as (conn, peer):
            peer.send(read)
            await until(lambda: events == ["start"])
            peer.send(cancel_request({"requestId": 7}))
            reply = await peer.line()
        return list(events), reply

    plain = run(exchange(False))
    assert run(exchange(True)) == plain
    if SDK_CANCELS:
        assert plain == (["start", "cancelled"], {"jsonrpc": "2.0", "id": 7, "error": CANCELLED})
    else:
        assert plain[0] == ["start", "end"] and plain[1]["result"] == scenario.golden("fs_read_text_file_response")


def test_a_cancelled_outgoing_request_sends_the_same_cancel(backend: Any) -> None:
    """The connection's own request, cancelled once it is on the wire: SDK 1.0 tells the peer with
    a ``$/cancel_request``, 0.12 does not; acp-fast writes the same lines."""

    async def exchange_lines(fast: bool) -> List[Any]:
        async with client_side(RecordingClient(), fast=fast, backend=backend) as (conn, peer):
            init = asyncio.ensure_future(conn.initialize(protocol_version=1))
            lines = [await peer.line()]
            init.cancel()
            with pytest.raises(asyncio.CancelledError):
                await init
            try:
                lines.append(await peer.line(timeout=0.3))
            except asyncio.TimeoutError:
                pass
        return lines

    plain = run(exchange_lines(False))
    assert run(exchange_lines(True)) == plain
    assert plain[0]["method"] == "initialize"
    if SDK_CANCELS:
        assert plain[1:] == [cancel_request({"requestId": plain[0]["id"]})]
    else:
        assert plain[1:] == []


def test_a_request_in_a_batch_is_cancelled_as_one_on_its_own_line(backend: Any) -> None:
    """The SDK skips batch lines; acp-fast dispatches them, and when the SDK cancels requests, one
    that arrived in a batch is cancelled too: its entry of the batch reply is the SDK's error."""

    async def script(agent: SlowAgent, peer: Any) -> List[Any]:
        peer.send([_hi(prompt_request(1), "x"), _hi(prompt_request(2), "y")])
        await until(lambda: len(agent.events) == 2)
        peer.send(cancel_request({"requestId": 2}))
        return [await peer.line()]

    events, replies = run(_agent_exchange(True, backend, script))
    assert events[:2] == [("start", "x"), ("start", "y")]
    batch = sorted(replies[0], key=lambda reply: reply["id"])
    assert batch[0] == {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}
    if SDK_CANCELS:
        assert ("cancelled", "y") in events
        assert batch[1] == {"jsonrpc": "2.0", "id": 2, "error": CANCELLED}
    else:
        assert ("end", "y") in events
        assert batch[1] == {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}
