"""The integration's eager dispatcher against the SDK's: order, tasks, contexts, the update tracker,
observers, errors, receive timeout. Runs on both backends (the ``backend`` fixture is handed to the
integration). Shared helpers: ``sdk_helpers.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import warnings
from typing import Any, List, Tuple

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

import acp  # noqa: E402
import acp.agent.connection  # noqa: E402
import acp.client.connection  # noqa: E402
import acp.connection  # noqa: E402
import acp.core  # noqa: E402
import acp.stdio  # noqa: E402

from acp_fast.integrations import acp_sdk  # noqa: E402
from sdk_helpers import (  # noqa: E402
    RecordingClient,
    agent_message,
    agent_side,
    client_side,
    run,
    scenario,
    socket_pair,
    text_block,
    until,
    update_frame,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


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
            prompt = asyncio.ensure_future(conn.prompt(session_id="s1", prompt=[text_block("hi")]))
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
                await conn.session_update("s1", agent_message("hi"))
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
