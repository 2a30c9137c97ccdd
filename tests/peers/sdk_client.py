"""An ACP client written with the official SDK, for the proxy tests: ``python sdk_client.py
CMD...`` spawns the agent CMD, runs initialize → session/new → session/prompt (granting the
first permission asked), and prints one JSON object: the stop reason and every session update
the client's handler received, as the SDK's models dumped to JSON."""

import asyncio
import json
import sys

from acp import spawn_agent_process, text_block
from acp.schema import AllowedOutcome, RequestPermissionResponse


class Client:
    def __init__(self):
        self.calls = []

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.calls.append(
            [
                "request_permission",
                session_id,
                tool_call.model_dump(mode="json"),
                [o.model_dump(mode="json") for o in options],
            ]
        )
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=options[0].option_id))

    async def session_update(self, session_id, update, **kwargs):
        self.calls.append(["session_update", session_id, update.model_dump(mode="json")])

    def on_connect(self, conn):
        pass


async def run(cmd):
    client = Client()
    async with spawn_agent_process(client, cmd[0], *cmd[1:]) as (conn, process):
        init = await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd="/tmp", mcp_servers=[])
        result = await conn.prompt(session_id=session.session_id, prompt=[text_block("hello")])
    print(json.dumps({"protocol": init.protocol_version, "stop_reason": result.stop_reason, "calls": client.calls}))


if __name__ == "__main__":
    asyncio.run(run(sys.argv[1:]))
