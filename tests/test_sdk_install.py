"""The SDK integration (``acp_fast.integrations.acp_sdk``): the pinned SDK version, acp-fast
without the SDK, install / uninstall and the one-call helpers. Shared helpers: ``sdk_helpers.py``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import warnings
from typing import Any

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

import acp  # noqa: E402
import acp.agent.connection  # noqa: E402
import acp.client.connection  # noqa: E402
import acp.connection  # noqa: E402
import acp.core  # noqa: E402
import acp.stdio  # noqa: E402

from acp_fast.integrations import SDK_REQUIREMENT, SDK_TESTED_VERSIONS, SDK_VERSION, acp_sdk  # noqa: E402
from sdk_helpers import (  # noqa: E402
    TESTS,
    RecordingClient,
    run,
    scenario,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# ---------------------------------------------------------------------------------------------
# The SDK version, the optional dependency


def test_sdk_version_is_a_supported_one() -> None:
    from importlib.metadata import version

    from packaging.requirements import Requirement

    requirement = Requirement(SDK_REQUIREMENT)
    assert requirement.name == "agent-client-protocol"
    installed = version("agent-client-protocol")
    assert requirement.specifier.contains(installed, prereleases=True)
    assert SDK_VERSION == SDK_TESTED_VERSIONS[0] == "0.12.1"
    assert all(requirement.specifier.contains(v, prereleases=True) for v in SDK_TESTED_VERSIONS)
    pyproject = (TESTS.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert f'sdk = ["{SDK_REQUIREMENT}"]' in pyproject
    for extra in ("test", "bench"):
        line = next(line for line in pyproject.splitlines() if line.startswith(f"{extra} = ["))
        assert f'"{SDK_REQUIREMENT}"' in line


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
        assert "agent-client-protocol>=0.12.1,<2" in line


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
