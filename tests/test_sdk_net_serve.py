"""The ACP Python SDK's own network clients against `acp-fast serve -- acp-fast demo-agent`
(docs/NETWORK.md): the SDK's Streamable HTTP client (`acp.http.create_http_stream`) and its
WebSocket client (`acp.ws.create_websocket_stream`), each a whole prompt turn with tool calls and a
permission request answered by the SDK client's handler; the gateway's recording of the turn is
the one `acp-fast proxy --record` writes for the same lines over stdio, times aside. Both
backends (the gateway gets `ACP_FAST_BACKEND`).

Needs the SDK's network transports (agent-client-protocol 1.0 pre-releases with the `http` extra);
CI runs the `test_sdk_*` files on every tested SDK release (.ci/sdk-versions); on one without
them (0.12.1) this file is skipped, saying which SDK it needs.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path
from typing import Any, List

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

try:
    from acp.http import create_http_stream
    from acp.ws import create_websocket_stream
except ImportError:  # SDK 0.12.1, or no `http` extra
    pytest.skip(
        "needs the network transports of the ACP Python SDK (acp.http, acp.ws: agent-client-protocol[http] "
        "1.0 pre-releases, e.g. 1.0.0rc3; .ci/sdk-versions runs this file there)",
        allow_module_level=True,
    )

from net_helpers import Serve, normalised, stdio_recording  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class Client:
    """An SDK client: keeps the updates, allows the permission request."""

    def __init__(self) -> None:
        self.updates: List[Any] = []
        self.permissions: List[Any] = []

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kwargs: Any) -> Any:
        from acp.schema import AllowedOutcome, RequestPermissionResponse

        self.permissions.append((session_id, tool_call.tool_call_id))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="allow"))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    def on_connect(self, conn: Any) -> None:
        pass


async def sdk_turn(url: str, scheme: str) -> Any:
    from acp import connect_to_agent
    from acp.schema import TextContentBlock

    transport = create_http_stream(url) if scheme == "http" else await create_websocket_stream(url)
    client = Client()
    conn = connect_to_agent(client, transport)
    try:
        init = await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd="/repo", mcp_servers=[])
        result = await conn.prompt(session_id=session.session_id, prompt=[TextContentBlock(type="text", text="fix it")])
    finally:
        await conn.close()
    return init, session, result, client


@pytest.mark.parametrize("scheme", ["http", "ws"])
def test_the_sdk_clients_drive_a_turn_through_serve(backend_id, scheme, tmp_path):
    (tmp_path / "rec").mkdir()
    with Serve("--record", str(tmp_path / "rec"), backend_id=backend_id) as gw:
        url = gw.url if scheme == "http" else gw.ws_url
        init, session, result, client = asyncio.run(asyncio.wait_for(sdk_turn(url, scheme), 60))
        gw.wait_for("ended (")
        assert gw.stop() == 0
    assert init.protocol_version == 1 and init.agent_info.name == "acp-fast-demo-agent"
    assert result.stop_reason == "end_turn"
    assert client.permissions == [(session.session_id, "call_1_edit")]
    kinds = [u.session_update for _, u in client.updates]
    for expected in ("agent_thought_chunk", "plan", "tool_call", "tool_call_update", "agent_message_chunk"):
        assert expected in kinds
    # the same client lines through the stdio proxy: the same recording
    (path,) = (tmp_path / "rec").glob("*.jsonl")
    sent = [
        json.dumps(r["frame"], separators=(",", ":")).encode() for r in normalised(path) if r.get("from") == "editor"
    ]
    raw = [
        line[line.index(b'"frame":') + 8 : -1]
        for line in path.read_bytes().splitlines()
        if b'"from":"editor"' in line[:40] and b'"frame":' in line
    ]
    assert len(raw) == len(sent) >= 4
    stdio = normalised(stdio_recording(tmp_path, backend_id, raw))
    assert normalised(path) == stdio


_ = Path
