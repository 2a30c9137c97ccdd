"""An ACP agent written with the official SDK, run over stdio by the tests.

    python agent.py [--fast] [--max-frame-bytes N]

``--fast`` installs the acp-fast integration (``acp_sdk.install()``, backend chosen by
``ACP_FAST_BACKEND``) before the SDK's ``run_agent``; without it the agent is the SDK alone.
It records every handler call it receives and hands the record back on the extension request
``_peer/record``.

During a prompt turn it sends every update of ``scenario.prompt_updates()`` (the SDK's golden
updates, two frames larger than 64 KiB, seeded traffic), then asks the client for a permission,
reads and writes a file, calls an extension method and sends an extension notification.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import warnings
from pathlib import Path
from typing import Any, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
warnings.simplefilter("ignore", DeprecationWarning)

import acp  # noqa: E402
from acp import schema as S  # noqa: E402
from scenario import golden, golden_model, prompt_updates, record, record_call  # noqa: E402


class PeerAgent:
    def __init__(self) -> None:
        self.calls: List[Any] = []
        self.conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, **kwargs: Any) -> S.InitializeResponse:
        self.calls.append(record_call("initialize", **kwargs))
        return golden_model("initialize_response")

    async def new_session(self, **kwargs: Any) -> S.NewSessionResponse:
        self.calls.append(record_call("new_session", **kwargs))
        return golden_model("new_session_response")

    async def prompt(self, **kwargs: Any) -> S.PromptResponse:
        self.calls.append(record_call("prompt", **kwargs))
        session_id = kwargs["session_id"]
        for update in prompt_updates():
            await self.conn.session_update(session_id, update)
        permission = golden_model("request_permission_request")
        outcome = await self.conn.request_permission(
            session_id=session_id, tool_call=permission.tool_call, options=permission.options
        )
        self.calls.append(("permission_result", record(outcome)))
        read = golden("fs_read_text_file_request")
        result = await self.conn.read_text_file(
            session_id=session_id, path=read["path"], line=read.get("line"), limit=read.get("limit")
        )
        self.calls.append(("read_result", record(result)))
        write = golden("fs_write_text_file_request")
        result = await self.conn.write_text_file(session_id=session_id, path=write["path"], content=write["content"])
        self.calls.append(("write_result", record(result)))
        echo = await self.conn.ext_method(
            "peer/echo", {"n": 2**70, "text": 'naïve \u2028 "q"', "nested": [1, 2.5, None, {"k": True}]}
        )
        self.calls.append(("ext_result", record(echo)))
        await self.conn.ext_notification("peer/note", {"done": True})
        return S.PromptResponse(stop_reason="end_turn")

    async def cancel(self, **kwargs: Any) -> None:
        self.calls.append(record_call("cancel", **kwargs))

    async def ext_method(self, method: str, params: Any) -> Any:
        if method == "peer/record":
            return {"calls": self.calls}
        self.calls.append(record_call("ext_method", method=method, params=params))
        return {"echo": params}

    async def ext_notification(self, method: str, params: Any) -> None:
        self.calls.append(record_call("ext_notification", method=method, params=params))


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fast", action="store_true")
    parser.add_argument("--max-frame-bytes", type=int, default=None)
    args = parser.parse_args()
    if args.fast:
        from acp_fast.integrations import acp_sdk

        options = {} if args.max_frame_bytes is None else {"max_frame_bytes": args.max_frame_bytes}
        acp_sdk.install(**options)
    await acp.run_agent(PeerAgent())


if __name__ == "__main__":
    asyncio.run(main())
