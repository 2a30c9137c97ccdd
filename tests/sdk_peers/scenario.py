"""What the SDK peers say to each other: the SDK's golden messages, a slice of acp-fast's seeded
traffic, and a few frames the 64 KiB line limit of asyncio would have to deal with.

Shared by ``tests/sdk_peers/agent.py`` (run as a subprocess) and the tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

from acp import schema as S
from pydantic import BaseModel

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "data" / "sdk_golden"

# The mapping of the SDK's own tests/test_golden.py (0.12.1): each golden file and its model.
GOLDEN_CASES: Dict[str, type] = {
    "cancel_notification": S.CancelNotification,
    "content_audio": S.AudioContentBlock,
    "content_image": S.ImageContentBlock,
    "content_resource_blob": S.EmbeddedResourceContentBlock,
    "content_resource_link": S.ResourceContentBlock,
    "content_resource_text": S.EmbeddedResourceContentBlock,
    "content_text": S.TextContentBlock,
    "fs_read_text_file_request": S.ReadTextFileRequest,
    "fs_read_text_file_response": S.ReadTextFileResponse,
    "fs_write_text_file_request": S.WriteTextFileRequest,
    "initialize_request": S.InitializeRequest,
    "initialize_response": S.InitializeResponse,
    "new_session_request": S.NewSessionRequest,
    "new_session_response": S.NewSessionResponse,
    "permission_outcome_cancelled": S.DeniedOutcome,
    "permission_outcome_selected": S.AllowedOutcome,
    "prompt_request": S.PromptRequest,
    "request_permission_request": S.RequestPermissionRequest,
    "request_permission_response_selected": S.RequestPermissionResponse,
    "session_update_agent_message_chunk": S.AgentMessageChunk,
    "session_update_agent_thought_chunk": S.AgentThoughtChunk,
    "session_update_config_option_update": S.ConfigOptionUpdate,
    "session_update_plan": S.AgentPlanUpdate,
    "session_update_tool_call": S.ToolCallStart,
    "session_update_tool_call_edit": S.ToolCallStart,
    "session_update_tool_call_locations_rawinput": S.ToolCallStart,
    "session_update_tool_call_read": S.ToolCallStart,
    "session_update_tool_call_update_content": S.ToolCallProgress,
    "session_update_tool_call_update_more_fields": S.ToolCallProgress,
    "session_update_user_message_chunk": S.UserMessageChunk,
    "set_session_config_option_request": S.SetSessionConfigOptionSelectRequest,
    "set_session_config_option_response": S.SetSessionConfigOptionResponse,
    "tool_content_content_text": S.ContentToolCallContent,
    "tool_content_diff": S.FileEditToolCallContent,
    "tool_content_diff_no_old": S.FileEditToolCallContent,
    "tool_content_terminal": S.TerminalToolCallContent,
}

#: Text of the large message chunks (more than asyncio's 64 KiB default line limit).
LARGE_TEXT_BYTES = 300_000
#: How many updates of acp-fast's seeded "mixed" traffic the agent sends in a prompt turn.
TRAFFIC_UPDATES = 400


def golden(name: str) -> Any:
    return json.loads((GOLDEN_DIR / f"{name}.json").read_text(encoding="utf-8"))


def golden_model(name: str) -> Any:
    return GOLDEN_CASES[name].model_validate(golden(name))


def traffic_updates(n: int = TRAFFIC_UPDATES, seed: int = 7) -> List[Any]:
    """``update`` models of the first ``n`` session/update notifications of seeded traffic."""
    import acp_fast
    from acp_fast import traffic

    updates: List[Any] = []
    for frame in traffic.frames("mixed", 3 * n, seed):
        message = acp_fast.decode(frame)
        if message.method == "session/update":
            updates.append(S.SessionNotification.model_validate(message.params).update)
            if len(updates) == n:
                break
    return updates


def prompt_updates() -> List[Any]:
    """Every update the agent sends during the prompt turn, in order."""
    updates: List[Any] = [golden_model(name) for name in sorted(GOLDEN_CASES) if name.startswith("session_update_")]
    updates.append(
        S.AgentMessageChunk(
            session_update="agent_message_chunk",
            content=S.TextContentBlock(type="text", text="é" * (LARGE_TEXT_BYTES // 2)),
        )
    )
    updates.extend(traffic_updates())
    updates.append(
        S.ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id="big",
            content=[
                S.ContentToolCallContent(
                    type="content", content=S.TextContentBlock(type="text", text="x" * LARGE_TEXT_BYTES)
                )
            ],
        )
    )
    return updates


def record(value: Any) -> Any:
    """A JSON-able, comparable description of a handler argument (models keep their class name)."""
    if isinstance(value, BaseModel):
        return {"$model": type(value).__name__, "value": value.model_dump(mode="json", by_alias=True)}
    if isinstance(value, (list, tuple)):
        return [record(v) for v in value]
    if isinstance(value, dict):
        return {k: record(v) for k, v in value.items()}
    return value


def record_call(name: str, **kwargs: Any) -> Tuple[str, Dict[str, Any]]:
    return name, {k: record(v) for k, v in sorted(kwargs.items())}
