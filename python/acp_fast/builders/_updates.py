"""Message chunk, plan and v2 terminal frame builders of [`acp_fast.builders`][acp_fast.builders] (private;
re-exported there)."""

from __future__ import annotations

import base64 as _b64
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Union

from .. import dumps as _dumps
from ._pieces import (
    _CLOSE_UPDATE,
    _MESSAGE_CHUNK_OPEN,
    _META,
    _NULL,
    _PLAN_OPEN,
    _PLAN_UPDATE_OPEN,
    _SESSION_UPDATE_HEAD,
    _TERMINAL_CHUNK_OPEN,
    _TERMINAL_UPDATE_OPEN,
    MESSAGE_CHUNK_KINDS,
    PLAN_PRIORITIES,
    UNSET,
    V1_PLAN_STATUSES,
    V2_PLAN_STATUSES,
    _meta,
    _str,
    _version,
)

# ---------------------------------------------------------------------------------------------
# Messages


def message_chunk(
    session_id: str,
    text: str,
    *,
    kind: str = "agent_message_chunk",
    message_id: Optional[str] = None,
    meta: Any = UNSET,
) -> bytes:
    """A text message chunk (``agent_message_chunk``, ``agent_thought_chunk`` or ``user_message_chunk``).

    ``message_id`` is optional in protocol v1 and required in v2 (pass it for v2 sessions).
    """
    head = _MESSAGE_CHUNK_OPEN.get(kind)
    if head is None:
        raise ValueError(f"kind must be one of {list(MESSAGE_CHUNK_KINDS)}, found {kind!r}")
    if type(text) is not str and not isinstance(text, str):
        raise TypeError(f"text must be a str, found {type(text).__name__}")
    if message_id is None and meta is UNSET and type(session_id) is str:
        return _SESSION_UPDATE_HEAD + _dumps(session_id) + head + _dumps(text) + b"}}}}\n"
    parts = [_SESSION_UPDATE_HEAD, _str(session_id, "session_id"), head, _dumps(text), b"}"]
    if message_id is not None:
        parts.append(b',"messageId":')
        parts.append(_str(message_id, "message_id"))
    if meta is not UNSET:
        parts.append(_META + (_NULL if meta is None else _meta(meta)))
    parts.append(_CLOSE_UPDATE)
    return b"".join(parts)


# ---------------------------------------------------------------------------------------------
# Plans


def _entries(entries: Any, statuses: FrozenSet[str], version: int) -> bytes:
    if not isinstance(entries, (list, tuple)):
        raise TypeError(f"entries must be a list, found {type(entries).__name__}")
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise TypeError(f"entries[{index}] must be a dict, found {type(entry).__name__}")
        if version == 1:
            if entry.get("priority") not in PLAN_PRIORITIES:
                raise ValueError(
                    f"entries[{index}].priority must be one of ['high', 'low', 'medium'] in protocol "
                    f"version 1, found {entry.get('priority')!r}"
                )
            if entry.get("status") not in statuses:
                raise ValueError(
                    f"entries[{index}].status must be one of {sorted(statuses)} in protocol version 1, "
                    f"found {entry.get('status')!r}"
                )
    return _dumps(entries)


def plan(session_id: str, entries: Sequence[Mapping[str, Any]]) -> bytes:
    """A protocol v1 ``plan`` update: the complete list of entries (replaces the client's plan)."""
    return b"".join(
        (
            _SESSION_UPDATE_HEAD,
            _str(session_id, "session_id"),
            _PLAN_OPEN,
            _entries(entries, V1_PLAN_STATUSES, 1),
            b"}}}\n",
        )
    )


def plan_update(session_id: str, plan_id: str, entries: Sequence[Mapping[str, Any]]) -> bytes:
    """A protocol v2 ``plan_update`` with ``{"type":"items","planId":...,"entries":[...]}``."""
    return b"".join(
        (
            _SESSION_UPDATE_HEAD,
            _str(session_id, "session_id"),
            _PLAN_UPDATE_OPEN,
            _str(plan_id, "plan_id"),
            b',"entries":',
            _entries(entries, V2_PLAN_STATUSES, 2),
            b"}}}}\n",
        )
    )


def todo_plan_entries(todos: Any, *, protocol_version: int = 1) -> Optional[List[Dict[str, Any]]]:
    """Plan entries for the input of a ``todo_write`` tool call (spec §7, seed mapping).

    ``todos`` is the input's ``todos`` value, or the whole input mapping (its ``"todos"`` member is
    then used). Returns None when it is missing or not a list (no plan update). A todo without a
    string ``content`` or a string ``status`` is skipped; ``pending``, ``in_progress`` and
    ``completed`` are kept, any other status becomes ``pending`` — except ``cancelled`` in protocol
    v2, which is valid there and kept. The priority is always ``medium``.
    """
    version = _version(protocol_version)
    if isinstance(todos, Mapping):
        todos = todos.get("todos")
    if not isinstance(todos, list):
        return None
    kept = V2_PLAN_STATUSES if version == 2 else V1_PLAN_STATUSES
    entries: List[Dict[str, Any]] = []
    for todo in todos:
        if not isinstance(todo, Mapping):
            continue
        content = todo.get("content")
        status = todo.get("status")
        if not isinstance(content, str) or not isinstance(status, str):
            continue
        entries.append({"content": content, "priority": "medium", "status": status if status in kept else "pending"})
    return entries


# ---------------------------------------------------------------------------------------------
# v2 agent-owned terminals


def _base64(data: Union[bytes, bytearray, memoryview, str], name: str) -> bytes:
    if isinstance(data, str):
        data = data.encode("utf-8")
    elif not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be bytes or str, found {type(data).__name__}")
    return b'"' + _b64.b64encode(data) + b'"'


def terminal_update(
    session_id: str,
    terminal_id: str,
    *,
    command: Any = UNSET,
    cwd: Any = UNSET,
    output: Any = UNSET,
    exit_status: Any = UNSET,
    meta: Any = UNSET,
) -> bytes:
    """A protocol v2 ``terminal_update`` (upsert; ``None`` clears a field).

    ``output`` is the full output snapshot as bytes (or str, encoded as UTF-8), written as
    ``{"data": base64}``; ``exit_status`` is a dict such as ``{"exitCode": 0}`` (any dict, even
    ``{}``, marks the terminal exited).
    """
    parts = [
        _SESSION_UPDATE_HEAD,
        _str(session_id, "session_id"),
        _TERMINAL_UPDATE_OPEN,
        _str(terminal_id, "terminal_id"),
    ]
    if command is not UNSET:
        parts.append(b',"command":' + (_NULL if command is None else _str(command, "command")))
    if cwd is not UNSET:
        parts.append(b',"cwd":' + (_NULL if cwd is None else _str(cwd, "cwd")))
    if output is not UNSET:
        parts.append(b',"output":' + (_NULL if output is None else b'{"data":' + _base64(output, "output") + b"}"))
    if exit_status is not UNSET:
        if exit_status is None:
            parts.append(b',"exitStatus":null')
        else:
            parts.append(b',"exitStatus":' + _meta_like(exit_status, "exit_status"))
    if meta is not UNSET:
        parts.append(_META + (_NULL if meta is None else _meta(meta)))
    parts.append(_CLOSE_UPDATE)
    return b"".join(parts)


def _meta_like(value: Any, name: str) -> bytes:
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be a dict, found {type(value).__name__}")
    return _dumps(value)


def terminal_output_chunk(session_id: str, terminal_id: str, data: Union[bytes, str], *, meta: Any = UNSET) -> bytes:
    """A protocol v2 ``terminal_output_chunk``: ``data`` (bytes, or str as UTF-8) base64-encoded."""
    parts = [
        _SESSION_UPDATE_HEAD,
        _str(session_id, "session_id"),
        _TERMINAL_CHUNK_OPEN,
        _str(terminal_id, "terminal_id"),
        b',"data":',
        _base64(data, "data"),
    ]
    if meta is not UNSET:
        parts.append(_META + (_NULL if meta is None else _meta(meta)))
    parts.append(_CLOSE_UPDATE)
    return b"".join(parts)
