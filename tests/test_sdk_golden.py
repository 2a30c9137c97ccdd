"""The SDK's golden messages (``tests/data/sdk_golden``) through the integration: they round-trip,
reach the client and agent handlers unchanged, and responses come back as the SDK's models. Runs
on both backends. Shared helpers: ``sdk_helpers.py``.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any, List

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

from acp import schema as S  # noqa: E402

from acp_fast.integrations import models  # noqa: E402
from sdk_helpers import (  # noqa: E402
    RecordingClient,
    agent_side,
    client_side,
    run,
    scenario,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


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
