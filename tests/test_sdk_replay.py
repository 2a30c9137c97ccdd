"""Session replays in ``acp_fast.integrations.session_state.SessionAccumulator``: an agent answers
``session/load`` (and a v2 ``session/resume`` with ``replayFrom``) by sending the session's
history again; the SDK's own accumulator applies it on top of what it holds (the history twice),
ours starts the session afresh at the request and marks the replay (``replaying``) until the
response, the v2 ``replay_complete`` update, or the end of a ``replay()`` block. Frames, a byte
stream and the SDK's models (through a real SDK connection), on both backends. Shared helpers:
``sdk_helpers.py``.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from typing import Any, Dict, List, Optional

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

from acp.contrib import session_state as sdk  # noqa: E402
from acp.schema import SessionNotification  # noqa: E402

from acp_fast.integrations.session_state import SessionAccumulator  # noqa: E402
from sdk_helpers import agent_message, client_side, run, until  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _update(session_id: str, update: Dict[str, Any]) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}}


def _said(who: str, text: str, session_id: str = "s1", **extra: Any) -> Dict[str, Any]:
    update = {"sessionUpdate": f"{who}_message_chunk", "content": {"type": "text", "text": text}, **extra}
    return _update(session_id, update)


def _tool(tool_call_id: str, status: str, session_id: str = "s1") -> Dict[str, Any]:
    update = {"sessionUpdate": "tool_call", "toolCallId": tool_call_id, "title": "Read", "status": status}
    return _update(session_id, update)


#: The history of session s1 as its agent sends it live, and again when the session is loaded.
HISTORY = [_said("user", "hi"), _tool("c1", "completed"), _said("agent", "done")]


def _load(request_id: Any, session_id: str = "s1") -> Dict[str, Any]:
    params = {"sessionId": session_id, "cwd": "/w", "mcpServers": []}
    return {"jsonrpc": "2.0", "id": request_id, "method": "session/load", "params": params}


def _answer(request_id: Any, result: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {} if result is None else result}


def _sdk_snapshot(frames: List[Dict[str, Any]]) -> Any:
    """What the SDK's accumulator makes of the session updates of ``frames``."""
    acc = sdk.SessionAccumulator()
    for frame in frames:
        if frame.get("method") == "session/update":
            acc.apply(SessionNotification.model_validate(frame["params"]))
    return acc.snapshot()


def _texts(snapshot: Any) -> List[List[str]]:
    return [[m.content.text for m in messages] for messages in (snapshot.user_messages, snapshot.agent_messages)]


def test_the_sdk_accumulator_doubles_a_loaded_session() -> None:
    """The reference behaviour: the SDK's accumulator never sees the ``session/load`` request and
    applies the replayed history on top of the live one."""
    twice = _sdk_snapshot([*HISTORY, _load(1), *HISTORY, _answer(1)])
    assert _texts(twice) == [["hi", "hi"], ["done", "done"]]


@pytest.mark.parametrize("feed_as", ["frames", "stream"])
def test_a_loaded_session_is_rebuilt_not_doubled(backend: Any, feed_as: str) -> None:
    """Ours, shown the request: the replay rebuilds the session, which then holds its history once
    (the SDK's snapshot of one copy), and goes on with the live updates after it."""
    frames = [*HISTORY, _load(1), *HISTORY, _answer(1), _said("agent", "more")]
    acc = SessionAccumulator(backend=backend)
    if feed_as == "frames":
        for frame in frames:
            acc.apply(frame)
    else:
        assert acc.feed("".join(json.dumps(frame) + "\n" for frame in frames).encode()) == []
    once = _sdk_snapshot([*HISTORY, _said("agent", "more")])
    assert acc.snapshot() == once
    assert _texts(acc.snapshot()) == [["hi"], ["done", "more"]]
    assert list(acc.snapshot().tool_calls) == ["c1"]


def test_replayed_updates_are_marked_until_the_response(backend: Any) -> None:
    """``replaying`` is the session's id from the request to its response (a result or an error),
    for the subscribers too; a response to another request does not end it; snapshots taken
    before the load keep the history they had."""
    acc = SessionAccumulator(backend=backend)
    seen: List[Any] = []
    acc.subscribe(lambda snapshot, frame: seen.append((frame.params["update"]["content"]["text"], acc.replaying)))
    before = acc.apply(HISTORY[0])
    acc.apply(_load(7))
    assert acc.replaying == "s1" and acc.snapshot().user_messages == ()
    acc.apply(_said("user", "hi"))
    acc.apply(_answer(8))  # another request's
    acc.apply(_answer("7"))  # not the same id
    acc.apply(_said("agent", "done"))
    acc.apply({"jsonrpc": "2.0", "id": 7, "error": {"code": -32002, "message": "Resource not found"}})
    assert acc.replaying is None
    acc.apply(_said("agent", "live"))
    assert seen == [("hi", None), ("hi", "s1"), ("done", "s1"), ("live", None)]
    assert _texts(before) == [["hi"], []]
    assert _texts(acc.snapshot()) == [["hi"], ["done", "live"]]


def test_loading_another_session_leaves_the_current_one(backend: Any) -> None:
    """A load of another session does not touch the current one; its replay then changes the
    session as any update of another session does (reset, as the SDK's accumulator does)."""
    acc = SessionAccumulator(backend=backend)
    for frame in HISTORY:
        acc.apply(frame)
    acc.apply(_load(1, "s2"))
    assert acc.replaying == "s2" and acc.session_id == "s1"
    assert _texts(acc.snapshot()) == [["hi"], ["done"]]
    acc.apply(_said("user", "other", "s2"))
    assert acc.session_id == "s2" and _texts(acc.snapshot()) == [["other"], []]
    acc.apply(_answer(1))
    assert acc.replaying is None


def _resume(request_id: Any, replay_from: Any = "absent") -> Dict[str, Any]:
    params: Dict[str, Any] = {"sessionId": "s1", "cwd": "/w"}
    if replay_from != "absent":
        params["replayFrom"] = replay_from
    return {"jsonrpc": "2.0", "id": request_id, "method": "session/resume", "params": params}


V2_INIT = _answer(0, {"protocolVersion": 2, "info": {"name": "a", "version": "1"}})
V2_HISTORY = [_said("user", "hi", messageId="u1"), _said("agent", "done", messageId="a1")]
REPLAY_COMPLETE = _update("s1", {"sessionUpdate": "replay_complete"})


def test_v2_resume_replays_only_with_replay_from(backend: Any) -> None:
    """v2 ``session/resume``: without ``replayFrom`` (or with null) nothing is replayed and the
    session is kept; with it the session is rebuilt, and ``replay_complete`` (the replay's last
    update) ends the replay before the response does."""
    acc = SessionAccumulator(backend=backend)
    for frame in [V2_INIT, *V2_HISTORY, _resume(1), _answer(1), _resume(2, None), _answer(2)]:
        acc.apply(frame)
        assert acc.replaying is None
    assert acc.protocol_version == 2 and _texts(acc.snapshot()) == [["hi"], ["done"]]
    marks: List[Any] = []
    acc.subscribe(lambda snapshot, frame: marks.append((frame.update_kind, acc.replaying)))
    for frame in [_resume(3, {"type": "start"}), *V2_HISTORY, REPLAY_COMPLETE, _said("agent", "live"), _answer(3)]:
        acc.apply(frame)
    assert marks == [
        ("user_message_chunk", "s1"),
        ("agent_message_chunk", "s1"),
        ("replay_complete", "s1"),
        ("agent_message_chunk", None),
    ]
    assert _texts(acc.snapshot()) == [["hi"], ["done", "live"]]


def test_v1_resume_replays_nothing(backend: Any) -> None:
    """v1 ``session/resume`` resumes "without replaying the message history": the state stays."""
    acc = SessionAccumulator(backend=backend)
    for frame in [*HISTORY, _resume(1), _answer(1)]:
        acc.apply(frame)
        assert acc.replaying is None
    assert _texts(acc.snapshot()) == [["hi"], ["done"]]


def test_replay_block_with_the_sdk_models(backend: Any) -> None:
    """A client that applies the SDK's models never shows the accumulator the request:
    ``replay(session_id)`` around the SDK's ``load_session`` does it. A real SDK client connection
    (on acp-fast) loads a session whose agent replays it: the history once, the replayed updates
    marked, and the mark gone after the block."""
    acc = SessionAccumulator(backend=backend)
    marks: List[Any] = []
    acc.subscribe(lambda snapshot, notification: marks.append(acc.replaying))

    class Client:
        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            acc.apply(SessionNotification(session_id=session_id, update=update))

    def chunk(text: str) -> Dict[str, Any]:
        return _update("s1", agent_message(text).model_dump(mode="json", by_alias=True, exclude_none=True))

    async def main() -> Any:
        async with client_side(Client(), fast=True, backend=backend) as (conn, peer):
            peer.send(chunk("a"), chunk("b"))
            await until(lambda: len(marks) == 2)
            with acc.replay("s1"):
                assert acc.replaying == "s1" and acc.snapshot().agent_messages == ()
                load = asyncio.ensure_future(conn.load_session(cwd="/w", session_id="s1", mcp_servers=[]))
                request = await peer.line()
                assert (request["method"], request["params"]["sessionId"]) == ("session/load", "s1")
                peer.send(chunk("a"), chunk("b"), _answer(request["id"]))
                await load
            assert acc.replaying is None
            peer.send(chunk("c"))
            await until(lambda: len(marks) == 5)

    run(main())
    assert marks == [None, None, "s1", "s1", None]
    assert _texts(acc.snapshot()) == [[], ["a", "b", "c"]]
    assert acc.snapshot() == _sdk_snapshot([chunk("a"), chunk("b"), chunk("c")])
