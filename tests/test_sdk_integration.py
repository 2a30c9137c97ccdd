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
from typing import Any, Dict, List, Optional, Tuple

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


async def _session(client_fast: bool, agent_fast: bool, backend: Any = None, backend_id: str = "rust", **agent_args: Any) -> Any:
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
                client_info=S.Implementation.model_validate(init_request["clientInfo"]) if "clientInfo" in init_request else None,
            )
        ]
        new_session = scenario.golden_model("new_session_request")
        results.append(await conn.new_session(cwd=new_session.cwd, mcp_servers=new_session.mcp_servers))
        prompt = scenario.golden_model("prompt_request")
        results.append(await conn.prompt(session_id=prompt.session_id, prompt=prompt.prompt))
        updates_seen = sum(1 for name, _ in client.calls if name == "session_update")
        await conn.cancel(session_id=prompt.session_id)
        results.append(await conn.ext_method("peer/echo", {"big": 2**70, "unicode": "日本 \u2028", "list": [None, 1.5e300]}))
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
        "request_permission", "read_text_file", "write_text_file", "ext_method", "ext_notification",
    ]
    assert [name for name, _ in agent_calls] == [
        "initialize", "new_session", "prompt", "permission_result", "read_result", "write_result", "ext_result", "cancel", "ext_method",
    ]


@pytest.mark.parametrize("client_fast,agent_fast", [(True, True), (True, False), (False, True)], ids=["both", "client", "agent"])
def test_sdk_client_and_agent_see_the_same_calls_with_and_without_acp_fast(
    plain_session: Any, backend: Any, backend_id: str, client_fast: bool, agent_fast: bool
) -> None:
    calls, results, agent_calls, updates_seen = run(_session(client_fast, agent_fast, backend, backend_id))
    plain_calls, plain_results, plain_agent_calls, plain_updates_seen = plain_session
    assert calls == plain_calls  # same handlers, same order, same pydantic models
    assert results == plain_results
    assert agent_calls == plain_agent_calls
    assert updates_seen == plain_updates_seen  # prompt() returned after every update was handled
