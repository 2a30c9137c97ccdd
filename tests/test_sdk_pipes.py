"""The SDK integration over real pipes: an SDK client (this process) and an SDK agent
(``tests/sdk_peers/agent.py``, a subprocess), with and without the integration on either side,
both receive the same handler calls with the same models. Runs on both backends (the ``backend``
fixture is handed to the integration). Shared helpers: ``sdk_helpers.py``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from typing import Any, List

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

import acp  # noqa: E402
import acp.agent.connection  # noqa: E402
import acp.client.connection  # noqa: E402
import acp.connection  # noqa: E402
import acp.core  # noqa: E402
import acp.stdio  # noqa: E402
from acp import schema as S  # noqa: E402

from acp_fast.integrations import acp_sdk  # noqa: E402
from sdk_helpers import (  # noqa: E402
    AGENT,
    RecordingClient,
    check_turn_calls,
    run,
    scenario,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# ---------------------------------------------------------------------------------------------
# SDK client <-> SDK agent over real pipes


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
    check_turn_calls(calls, agent_calls, updates_seen, cancel=True)


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
