"""Conversions between acp-fast (frames, [`acp_fast.Message`][acp_fast.Message], ToolCallStore records — plain
dicts in ACP wire shape) and the pydantic models of the ACP Python SDK (``acp.schema``).

    >>> from acp_fast.integrations import models
    >>> from acp.schema import ToolCallStart
    >>> start = ToolCallStart(session_update="tool_call", tool_call_id="c1", title="Read", kind="read")
    >>> models.to_wire(start)
    {'toolCallId': 'c1', 'title': 'Read', 'kind': 'read', 'sessionUpdate': 'tool_call'}
    >>> frame = models.notification_frame("s1", start)
    >>> models.session_notification(frame).update == start
    True

Wire shape is what the SDK itself sends: ``model_dump(mode="json", by_alias=True)`` without the
fields that were never set, so an explicit ``None`` (a v2 ``null`` clear) survives.
"""

from __future__ import annotations

import typing
from typing import Any, Dict, Iterable, List, Optional, Type, Union, cast

from . import require_sdk

require_sdk("acp_fast.integrations.models")

from acp import schema as _schema  # noqa: E402
from acp.contrib.session_state import ToolCallView  # noqa: E402
from pydantic import BaseModel, TypeAdapter, ValidationError  # noqa: E402

import acp_fast  # noqa: E402

__all__ = [
    "CONTENT_ADAPTER",
    "PARAMS_MODELS",
    "content_items",
    "location_items",
    "notification_frame",
    "params_model",
    "session_notification",
    "session_update",
    "to_wire",
    "tool_call_start",
    "tool_call_update",
    "tool_call_view",
]

#: The SDK's params model of every method it routes (requests and notifications, both sides).
PARAMS_MODELS: Dict[str, Type[BaseModel]] = {
    "initialize": _schema.InitializeRequest,
    "authenticate": _schema.AuthenticateRequest,
    "session/new": _schema.NewSessionRequest,
    "session/load": _schema.LoadSessionRequest,
    "session/list": _schema.ListSessionsRequest,
    "session/resume": _schema.ResumeSessionRequest,
    "session/fork": _schema.ForkSessionRequest,
    "session/close": _schema.CloseSessionRequest,
    "session/set_mode": _schema.SetSessionModeRequest,
    "session/prompt": _schema.PromptRequest,
    "session/cancel": _schema.CancelNotification,
    "session/update": _schema.SessionNotification,
    "session/request_permission": _schema.RequestPermissionRequest,
    "fs/read_text_file": _schema.ReadTextFileRequest,
    "fs/write_text_file": _schema.WriteTextFileRequest,
    "terminal/create": _schema.CreateTerminalRequest,
    "terminal/output": _schema.TerminalOutputRequest,
    "terminal/release": _schema.ReleaseTerminalRequest,
    "terminal/wait_for_exit": _schema.WaitForTerminalExitRequest,
    "terminal/kill": _schema.KillTerminalRequest,
}

# cast: a field's annotation is typed `type | None` (pydantic >= 2.14 types TypeAdapter's argument).
_UPDATE_ADAPTER: TypeAdapter[Any] = TypeAdapter(
    cast(Any, _schema.SessionNotification.model_fields["update"].annotation)
)
_CONTENT_ITEM = typing.get_args(typing.get_args(_schema.ToolCallUpdate.model_fields["content"].annotation)[0])[0]
#: Validates one tool-call content item (``content`` / ``diff`` / ``terminal``) into its SDK model.
CONTENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(_CONTENT_ITEM)
_LOCATION_ADAPTER: TypeAdapter[Any] = TypeAdapter(_schema.ToolCallLocation)


def to_wire(model: BaseModel) -> Dict[str, Any]:
    """An SDK model as an ACP wire dict (camelCase keys, JSON values; unset fields left out)."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def _message(frame: Any) -> Any:
    if isinstance(frame, (bytes, bytearray, memoryview, str)):
        return acp_fast.decode(frame)
    return frame


def notification_frame(session_id: str, update: Union[BaseModel, Dict[str, Any]], **meta: Any) -> bytes:
    """A ``session/update`` frame (bytes ending in ``\\n``) for an SDK update model or wire dict."""
    params: Dict[str, Any] = {
        "sessionId": session_id,
        "update": to_wire(update) if isinstance(update, BaseModel) else update,
    }
    if meta:
        params["_meta"] = meta
    return acp_fast.dumps({"jsonrpc": "2.0", "method": "session/update", "params": params}) + b"\n"


def session_notification(frame: Any) -> _schema.SessionNotification:
    """The SDK's ``SessionNotification`` for a ``session/update`` frame (bytes, str, Message or the
    message dict), validated exactly as the SDK's router validates it. Raises pydantic's
    ValidationError when the SDK cannot represent it (an unknown / v2-only update)."""
    message = _message(frame)
    params = message.get("params") if isinstance(message, dict) else message.params
    return _schema.SessionNotification.model_validate(params)


def session_update(update: Union[Dict[str, Any], Any]) -> Any:
    """The SDK model of one ``update`` object (``AgentMessageChunk``, ``ToolCallStart``, ...)."""
    return _UPDATE_ADAPTER.validate_python(update)


def params_model(frame: Any) -> BaseModel:
    """The SDK params model of a request or notification frame (by its method, see
    [`PARAMS_MODELS`][acp_fast.integrations.models.PARAMS_MODELS]). KeyError for a method the SDK does not route."""
    message = _message(frame)
    method: Any  # None (no method) is a KeyError below, as documented
    if isinstance(message, dict):
        method, params = message.get("method"), message.get("params")
    else:
        method, params = message.method, message.params
    return PARAMS_MODELS[method].model_validate(params)


def content_items(items: Optional[Iterable[Any]]) -> List[Any]:
    """Tool-call content as SDK models; an item the SDK's models cannot hold (a v2 diff, an unknown
    type) stays the wire dict it was, rather than being dropped."""
    out: List[Any] = []
    for item in items or ():
        if isinstance(item, BaseModel):
            out.append(item)
            continue
        try:
            out.append(CONTENT_ADAPTER.validate_python(item))
        except ValidationError:
            out.append(item)
    return out


def location_items(items: Optional[Iterable[Any]]) -> List[Any]:
    """Tool-call locations as ``ToolCallLocation`` models (wire dicts kept as they are when invalid)."""
    out: List[Any] = []
    for item in items or ():
        if isinstance(item, BaseModel):
            out.append(item)
            continue
        try:
            out.append(_LOCATION_ADAPTER.validate_python(item))
        except ValidationError:
            out.append(item)
    return out


def tool_call_view(record: Dict[str, Any], *, kind_set: bool = True, status_set: bool = True) -> ToolCallView:
    """The SDK's ``ToolCallView`` (acp.contrib.session_state) of a ToolCallStore record.

    A store record always carries ``kind`` / ``status`` (defaults ``"other"`` / ``"pending"``);
    the SDK's view has ``None`` for a field no update ever set — say so with ``kind_set`` /
    ``status_set``. Empty ``content`` / ``locations`` are ``None``, as in the SDK."""
    content = content_items(record.get("content"))
    locations = location_items(record.get("locations"))
    return ToolCallView.model_construct(
        tool_call_id=record["toolCallId"],
        title=record.get("title"),
        kind=record.get("kind") if kind_set else None,
        status=record.get("status") if status_set else None,
        content=tuple(content) if content else None,
        locations=tuple(locations) if locations else None,
        raw_input=record.get("rawInput"),
        raw_output=record.get("rawOutput"),
    )


def _tool_call_fields(record: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in record.items() if k != "sessionUpdate"}


def tool_call_update(record: Dict[str, Any]) -> _schema.ToolCallUpdate:
    """A ToolCallStore record as the SDK's ``ToolCallUpdate`` (e.g. for a permission request)."""
    return _schema.ToolCallUpdate.model_validate(_tool_call_fields(record))


def tool_call_start(record: Dict[str, Any]) -> _schema.ToolCallStart:
    """A ToolCallStore record as the SDK's ``ToolCallStart`` (a v1 ``tool_call`` update that
    recreates it). Needs a ``title``, as the SDK model does."""
    return _schema.ToolCallStart.model_validate({**_tool_call_fields(record), "sessionUpdate": "tool_call"})
