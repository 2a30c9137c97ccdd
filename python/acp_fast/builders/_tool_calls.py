"""Tool-call frame builders of [`acp_fast.builders`][acp_fast.builders] (private; re-exported there)."""

from __future__ import annotations

from typing import Any, Mapping, Union

from .. import dumps as _dumps
from ._pieces import (
    _CLOSE_UPDATE,
    _CONTENT,
    _CONTENT_CHUNK_OPEN,
    _FAILED_STATUS,
    _META,
    _NULL,
    _RAW_OUTPUT,
    _SESSION_UPDATE_HEAD,
    _TEXT_ITEM_HEAD,
    _TOOL_CALL_UPDATE_OPEN,
    _UPDATE_KEY,
    UNSET,
    _bad_str,
    _meta,
    _no_null_in_v1,
    _str,
    _tool_fields,
    _version,
)

# ---------------------------------------------------------------------------------------------
# Tool calls


def tool_call(
    session_id: str,
    tool_call_id: str,
    title: str,
    *,
    kind: Any = UNSET,
    status: Any = UNSET,
    content: Any = UNSET,
    locations: Any = UNSET,
    raw_input: Any = UNSET,
    raw_output: Any = UNSET,
    meta: Any = UNSET,
    name: Any = UNSET,
) -> bytes:
    """A protocol v1 ``tool_call`` update (creates, or replaces, the tool call).

    ``kind`` defaults (on the client) to ``other`` and ``status`` to ``pending``; ``content`` and
    ``locations`` are lists of items from the content helpers. ``name`` is the unstable tool name
    field. ``None`` is refused: v1 has no way to send a null here (leave the argument out).
    """
    if (
        kind is None
        or status is None
        or content is None
        or locations is None
        or raw_input is None
        or raw_output is None
        or meta is None
        or name is None
    ):
        _no_null_in_v1(
            "tool_call",
            {
                "kind": kind,
                "status": status,
                "content": content,
                "locations": locations,
                "raw_input": raw_input,
                "raw_output": raw_output,
                "meta": meta,
                "name": name,
            },
        )
    if type(title) is not str:
        if title is None or title is UNSET:
            raise TypeError("tool_call: title must be a str (v1 tool_call requires a title)")
        _bad_str(title, "title")
    if type(session_id) is not str:
        _bad_str(session_id, "session_id")
    if type(tool_call_id) is not str:
        _bad_str(tool_call_id, "tool_call_id")
    update = {"sessionUpdate": "tool_call", "toolCallId": tool_call_id, "title": title}
    _tool_fields(update, 1, UNSET, kind, status, content, locations, raw_input, raw_output, name, meta)
    return _SESSION_UPDATE_HEAD + _dumps(session_id) + _UPDATE_KEY + _dumps(update) + b"}}\n"


def tool_call_update(
    session_id: str,
    tool_call_id: str,
    *,
    protocol_version: int = 1,
    title: Any = UNSET,
    kind: Any = UNSET,
    status: Any = UNSET,
    content: Any = UNSET,
    locations: Any = UNSET,
    raw_input: Any = UNSET,
    raw_output: Any = UNSET,
    meta: Any = UNSET,
    name: Any = UNSET,
) -> bytes:
    """A ``tool_call_update``: a patch in protocol v1, an upsert in protocol v2.

    Only the fields passed are written. In v2 an explicit ``None`` writes ``null``, which clears
    the field on the client (``content``/``locations``: empties them). In v1 ``None`` raises
    ``ValueError`` because v1 reads ``null`` as "unchanged". ``content``/``locations`` replace the
    stored arrays as a whole (``[]`` empties them in both versions).
    """
    if protocol_version == 1 and type(protocol_version) is int:
        version = 1
    else:
        version = _version(protocol_version)
    if version == 1 and (
        title is None
        or kind is None
        or status is None
        or content is None
        or locations is None
        or raw_input is None
        or raw_output is None
        or meta is None
        or name is None
    ):
        _no_null_in_v1(
            "tool_call_update",
            {
                "title": title,
                "kind": kind,
                "status": status,
                "content": content,
                "locations": locations,
                "raw_input": raw_input,
                "raw_output": raw_output,
                "meta": meta,
                "name": name,
            },
        )
    if type(session_id) is not str:
        _bad_str(session_id, "session_id")
    if type(tool_call_id) is not str:
        _bad_str(tool_call_id, "tool_call_id")
    update = {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id}
    _tool_fields(update, version, title, kind, status, content, locations, raw_input, raw_output, name, meta)
    return _SESSION_UPDATE_HEAD + _dumps(session_id) + _UPDATE_KEY + _dumps(update) + b"}}\n"


def tool_call_content_chunk(
    session_id: str, tool_call_id: str, content: Mapping[str, Any], *, meta: Any = UNSET
) -> bytes:
    """A protocol v2 ``tool_call_content_chunk``: appends one content item to the tool call.

    ``meta`` belongs to the chunk only (``None`` writes null, which v2 reads like omitted).
    """
    if not isinstance(content, dict):
        raise TypeError(f"content must be one content item (a dict), found {type(content).__name__}")
    parts = [
        _SESSION_UPDATE_HEAD,
        _str(session_id, "session_id"),
        _CONTENT_CHUNK_OPEN,
        _str(tool_call_id, "tool_call_id"),
        _CONTENT,
        _dumps(content),
    ]
    if meta is not UNSET:
        parts.append(_META + (_NULL if meta is None else _meta(meta)))
    parts.append(_CLOSE_UPDATE)
    return b"".join(parts)


def failed_tool_call_update(
    session_id: str,
    tool_call_id: str,
    error: Union[str, BaseException],
    *,
    protocol_version: int = 1,
    raw_output: Any = UNSET,
) -> bytes:
    """A ``tool_call_update`` with ``status: "failed"`` and the error text as the only content item.

    ``error`` is a str or an exception (its ``str()``, or its class name when that is empty).
    The content is ``[{"type":"content","content":{"type":"text","text": error}}]``.
    """
    version = _version(protocol_version)
    if isinstance(error, BaseException):
        error = str(error) or type(error).__name__
    elif not isinstance(error, str):
        raise TypeError(f"error must be a str or an exception, found {type(error).__name__}")
    if version == 1 and raw_output is None:
        _no_null_in_v1("failed_tool_call_update", {"raw_output": raw_output})
    parts = [
        _SESSION_UPDATE_HEAD,
        _str(session_id, "session_id"),
        _TOOL_CALL_UPDATE_OPEN,
        _str(tool_call_id, "tool_call_id"),
        _FAILED_STATUS,
        _TEXT_ITEM_HEAD,
        _dumps(error),
        b"}}]",
    ]
    if raw_output is not UNSET:
        parts.append(_RAW_OUTPUT + _dumps(raw_output))
    parts.append(_CLOSE_UPDATE)
    return b"".join(parts)
