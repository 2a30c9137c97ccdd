"""Agent-side frame builders: complete ACP frames as ``bytes``, ready to write to stdout.

Every frame builder below returns one frame: compact JSON, keys in wire order, ending in exactly
one ``b"\\n"``. The constant parts of the frame (the JSON-RPC envelope, method, ``sessionUpdate``
discriminators, fixed keys) are pre-encoded bytes; only the variable values go through
:func:`acp_fast.dumps`. The small builders (message chunks, failed updates, plans, permission
answers) dump each value on its own and skip building any dict, which makes them about 1.2-1.6
times faster than ``dumps({...}) + b"\\n"`` of the equivalent message (native backend). The
field-rich tool-call builders dump their ``update`` object in one call, since one native call beats
several; with their argument checks they cost about 1.3-1.4 times a hand-written dict literal::

    out.write(tool_call("sess_1", "call_1", "Read README.md", kind="read",
                        locations=[location("/repo/README.md")]))
    out.write(tool_call_update("sess_1", "call_1", status="completed",
                               content=[text_content("# acp-fast ...")]))

Omitted fields and ``None``
    Optional fields default to :data:`UNSET`, which leaves the key out of the frame. An explicit
    ``None`` writes JSON ``null``. In a protocol v2 ``tool_call_update`` ``null`` clears the field;
    protocol v1 reads ``null`` exactly like an omitted key (v1 cannot clear a field), so the v1
    builders refuse ``None`` with a ``ValueError`` instead of emitting a frame that silently does
    nothing.

Checks
    Arguments are checked cheaply (types of ids and names, enumeration values that the chosen
    protocol version closes, required combinations). Nested values such as ``content`` items and
    ``rawInput`` are written as given: build them with the content helpers (:func:`text_content`,
    :func:`diff_content`, :func:`terminal_content`, :func:`location`, :func:`plan_entry`,
    :func:`permission_option`) to stay within the schema. Wrong types raise ``TypeError``, wrong
    values ``ValueError``; values JSON cannot hold raise :class:`acp_fast.EncodeError`.

Content helpers return plain dicts (they are the inputs of the frame builders), and so do
:func:`todo_plan_entries` and the tool-kind helpers' mappings.
"""

from __future__ import annotations

import base64 as _b64
from types import MappingProxyType
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Union

from . import dumps as _dumps

__all__ = [
    "UNSET",
    "DEFAULT_TOOL_KINDS",
    "ToolKindMap",
    "diff_content",
    "error_response",
    "failed_tool_call_update",
    "location",
    "message_chunk",
    "notification",
    "permission_option",
    "permission_response",
    "plan",
    "plan_entry",
    "plan_update",
    "request",
    "request_permission",
    "response",
    "session_update",
    "terminal_content",
    "terminal_output_chunk",
    "terminal_update",
    "text_content",
    "todo_plan_entries",
    "tool_call",
    "tool_call_content_chunk",
    "tool_call_update",
    "tool_kind",
]


class _Unset:
    """Type of :data:`UNSET`, the marker of an omitted optional field (a singleton)."""

    __slots__ = ()
    _instance: Optional[_Unset] = None

    def __new__(cls) -> _Unset:  # noqa: PYI034 - a singleton: always the one instance, never a subclass
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNSET"


#: Marks an optional field as omitted (the key is left out of the frame). ``None`` means JSON null.
UNSET: Any = _Unset()

# ---------------------------------------------------------------------------------------------
# Enumerations (schema v1 closes them; v2 keeps them open, "_"-prefixed values are extensions)

V1_TOOL_KINDS = frozenset(
    ("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other")
)
V1_TOOL_STATUSES = frozenset(("pending", "in_progress", "completed", "failed"))
V2_TOOL_STATUSES = V1_TOOL_STATUSES | {"cancelled"}
V1_PLAN_STATUSES = frozenset(("pending", "in_progress", "completed"))
V2_PLAN_STATUSES = V1_PLAN_STATUSES | {"cancelled"}
PLAN_PRIORITIES = frozenset(("high", "medium", "low"))
PERMISSION_OPTION_KINDS = frozenset(("allow_once", "allow_always", "reject_once", "reject_always"))
MESSAGE_CHUNK_KINDS = ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk")

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1

# ---------------------------------------------------------------------------------------------
# Pre-encoded pieces

_JSONRPC = b'{"jsonrpc":"2.0"'
_ID_HEAD = b'{"jsonrpc":"2.0","id":'
_SESSION_UPDATE_HEAD = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":'
_UPDATE_OPEN = b',"update":{"sessionUpdate":'
_CLOSE_UPDATE = b"}}}\n"

_UPDATE_KEY = b',"update":'
_TOOL_CALL_UPDATE_OPEN = _UPDATE_OPEN + b'"tool_call_update","toolCallId":'
_CONTENT_CHUNK_OPEN = _UPDATE_OPEN + b'"tool_call_content_chunk","toolCallId":'
_TERMINAL_UPDATE_OPEN = _UPDATE_OPEN + b'"terminal_update","terminalId":'
_TERMINAL_CHUNK_OPEN = _UPDATE_OPEN + b'"terminal_output_chunk","terminalId":'
_PLAN_OPEN = _UPDATE_OPEN + b'"plan","entries":'
_PLAN_UPDATE_OPEN = _UPDATE_OPEN + b'"plan_update","plan":{"type":"items","planId":'

_MESSAGE_CHUNK_OPEN = {
    kind: _UPDATE_OPEN + b'"' + kind.encode() + b'","content":{"type":"text","text":' for kind in MESSAGE_CHUNK_KINDS
}

_PERMISSION_HEAD = b',"method":"session/request_permission","params":{"sessionId":'
_SELECTED_HEAD = b',"result":{"outcome":{"outcome":"selected","optionId":'
_CANCELLED_RESULT = b',"result":{"outcome":{"outcome":"cancelled"}}}\n'

_FAILED_STATUS = b',"status":"failed"'
_TEXT_ITEM_HEAD = b',"content":[{"type":"content","content":{"type":"text","text":'

# The values the fast paths accept without further checks (None: JSON null, checked elsewhere).
_V1_KINDS_OK = V1_TOOL_KINDS
_V1_STATUSES_OK = V1_TOOL_STATUSES
_V2_STATUSES_OK = V2_TOOL_STATUSES | {None}

# Keys written by the pieces-based builders.
_CONTENT = b',"content":'
_RAW_OUTPUT = b',"rawOutput":'
_META = b',"_meta":'
_NULL = b"null"

# ---------------------------------------------------------------------------------------------
# Cheap argument checks (the fast paths are inlined in the builders; these raise or handle the
# uncommon cases)


def _version(protocol_version: Any) -> int:
    if (protocol_version == 1 or protocol_version == 2) and type(protocol_version) is int:
        return protocol_version
    raise ValueError(f"protocol_version must be 1 or 2, found {protocol_version!r}")


def _str(value: Any, name: str) -> bytes:
    if type(value) is not str and not isinstance(value, str):
        raise TypeError(f"{name} must be a str, found {type(value).__name__}")
    return _dumps(value)


def _request_id(value: Any, *, allow_null: bool = False) -> bytes:
    if type(value) is str:
        return _dumps(value)
    if type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
        if _INT64_MIN <= value <= _INT64_MAX:
            return b"%d" % value
        raise ValueError(f"request_id must fit in a signed 64-bit integer, found {value}")
    if value is None and allow_null:
        return _NULL
    expected = "a str, an int or None" if allow_null else "a str or an int"
    raise TypeError(f"request_id must be {expected}, found {type(value).__name__}")


def _meta(value: Any) -> bytes:
    if not isinstance(value, dict):
        raise TypeError(f"meta must be a dict, found {type(value).__name__}")
    return _dumps(value)


def _no_null_in_v1(builder: str, fields: Mapping[str, Any]) -> None:
    for name, value in fields.items():
        if value is None:
            raise ValueError(
                f"{builder}: {name}=None cannot be sent in protocol version 1, which reads null as "
                f"'unchanged' and cannot clear a field; leave {name} out (UNSET) or use "
                f"protocol_version=2"
            )


def _bad_str(value: Any, name: str) -> None:
    """Raise unless ``value`` is a str subclass (the fast paths test ``type(value) is str``)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, found {type(value).__name__}")


def _check_array(value: Any, name: str) -> None:
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list, found {type(value).__name__}")
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise TypeError(f"{name}[{index}] must be a dict, found {type(item).__name__}")


def _check_objects(value: Any, name: str) -> None:
    """``value`` must be None (JSON null) or a list of dicts; otherwise `_check_array` says why."""
    if type(value) is list:
        if all(type(item) is dict for item in value):
            return
    elif value is None:
        return
    _check_array(value, name)


def _check_kind(kind: Any, version: int) -> None:
    if kind is None:
        return
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a str, found {type(kind).__name__}")
    if version == 1 and kind not in V1_TOOL_KINDS:
        raise ValueError(f"kind must be one of {sorted(V1_TOOL_KINDS)} in protocol version 1, found {kind!r}")


def _check_status(status: Any, version: int) -> None:
    if status is None:
        return
    if not isinstance(status, str):
        raise TypeError(f"status must be a str, found {type(status).__name__}")
    if version == 1 and status not in V1_TOOL_STATUSES:
        raise ValueError(f"status must be one of {sorted(V1_TOOL_STATUSES)} in protocol version 1, found {status!r}")


def _tool_fields(
    update: Dict[str, Any],
    version: int,
    title: Any,
    kind: Any,
    status: Any,
    content: Any,
    locations: Any,
    raw_input: Any,
    raw_output: Any,
    name: Any,
    meta: Any,
) -> None:
    """Check the optional tool-call fields and add the given ones to ``update``, in wire order.

    ``None`` stays None (JSON null); the callers have already refused it where it is not allowed.
    """
    unset = UNSET
    if title is not unset:
        if type(title) is not str and title is not None:
            _bad_str(title, "title")
        update["title"] = title
    if kind is not unset:
        if kind not in _V1_KINDS_OK if version == 1 else type(kind) is not str:
            _check_kind(kind, version)
        update["kind"] = kind
    if status is not unset:
        if status not in (_V1_STATUSES_OK if version == 1 else _V2_STATUSES_OK):
            _check_status(status, version)
        update["status"] = status
    if content is not unset:
        _check_objects(content, "content")
        update["content"] = content
    if locations is not unset:
        _check_objects(locations, "locations")
        update["locations"] = locations
    if raw_input is not unset:
        update["rawInput"] = raw_input
    if raw_output is not unset:
        update["rawOutput"] = raw_output
    if name is not unset:
        if type(name) is not str and name is not None:
            _bad_str(name, "name")
        update["name"] = name
    if meta is not unset:
        if type(meta) is not dict and meta is not None:
            _meta(meta)
        update["_meta"] = meta


# ---------------------------------------------------------------------------------------------
# Content helpers (plain dicts in ACP wire shape)


def text_content(text: str) -> Dict[str, Any]:
    """A tool-call content item holding text: ``{"type":"content","content":{"type":"text","text":...}}``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, found {type(text).__name__}")
    return {"type": "content", "content": {"type": "text", "text": text}}


def diff_content(path: str, new_text: str, old_text: Optional[str] = None) -> Dict[str, Any]:
    """A protocol v1 diff item ``{"type":"diff","path","oldText","newText"}``.

    ``old_text=None`` (a new file) leaves ``oldText`` out. ``path`` should be absolute. (Protocol v2
    describes diffs with ``changes`` and a git patch instead; this helper does not build those.)
    """
    if not isinstance(path, str):
        raise TypeError(f"path must be a str, found {type(path).__name__}")
    if not isinstance(new_text, str):
        raise TypeError(f"new_text must be a str, found {type(new_text).__name__}")
    if old_text is None:
        return {"type": "diff", "path": path, "newText": new_text}
    if not isinstance(old_text, str):
        raise TypeError(f"old_text must be a str or None, found {type(old_text).__name__}")
    return {"type": "diff", "path": path, "oldText": old_text, "newText": new_text}


def terminal_content(terminal_id: str) -> Dict[str, Any]:
    """A terminal item ``{"type":"terminal","terminalId":...}``."""
    if not isinstance(terminal_id, str):
        raise TypeError(f"terminal_id must be a str, found {type(terminal_id).__name__}")
    return {"type": "terminal", "terminalId": terminal_id}


def location(path: str, line: Optional[int] = None) -> Dict[str, Any]:
    """A tool-call location ``{"path":..., "line":...}`` (``line`` left out when None)."""
    if not isinstance(path, str):
        raise TypeError(f"path must be a str, found {type(path).__name__}")
    if line is None:
        return {"path": path}
    if not isinstance(line, int) or isinstance(line, bool):
        raise TypeError(f"line must be an int or None, found {type(line).__name__}")
    if not 0 <= line <= 0xFFFFFFFF:
        raise ValueError(f"line must be between 0 and 4294967295, found {line}")
    return {"path": path, "line": line}


def plan_entry(content: str, *, priority: str = "medium", status: str = "pending") -> Dict[str, Any]:
    """A plan entry ``{"content","priority","status"}``.

    Known priorities are ``high``, ``medium``, ``low``; known statuses ``pending``,
    ``in_progress``, ``completed`` (and ``cancelled``, v2 only). ``_``-prefixed values are
    extensions (v2). :func:`plan` (v1) refuses values outside the v1 sets.
    """
    if not isinstance(content, str):
        raise TypeError(f"content must be a str, found {type(content).__name__}")
    if priority not in PLAN_PRIORITIES and not (isinstance(priority, str) and priority.startswith("_")):
        raise ValueError(f"priority must be one of ['high', 'low', 'medium'] or start with '_', found {priority!r}")
    if status not in V2_PLAN_STATUSES and not (isinstance(status, str) and status.startswith("_")):
        raise ValueError(f"status must be one of {sorted(V2_PLAN_STATUSES)} or start with '_', found {status!r}")
    return {"content": content, "priority": priority, "status": status}


def permission_option(option_id: str, name: str, kind: str) -> Dict[str, Any]:
    """A permission option ``{"optionId","name","kind"}``.

    ``kind`` is ``allow_once``, ``allow_always``, ``reject_once`` or ``reject_always`` (v2 also
    accepts ``_``-prefixed extension kinds; :func:`request_permission` checks per version).
    """
    if not isinstance(option_id, str):
        raise TypeError(f"option_id must be a str, found {type(option_id).__name__}")
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, found {type(name).__name__}")
    if kind not in PERMISSION_OPTION_KINDS and not (isinstance(kind, str) and kind.startswith("_")):
        raise ValueError(f"kind must be one of {sorted(PERMISSION_OPTION_KINDS)} or start with '_', found {kind!r}")
    return {"optionId": option_id, "name": name, "kind": kind}


# ---------------------------------------------------------------------------------------------
# Generic envelopes


def request(request_id: Union[str, int], method: str, params: Any = UNSET) -> bytes:
    """A request frame ``{"jsonrpc":"2.0","id","method","params"}`` (``params`` left out when UNSET)."""
    parts = [_JSONRPC, b',"id":', _request_id(request_id), b',"method":', _str(method, "method")]
    if params is not UNSET:
        parts.append(b',"params":')
        parts.append(_dumps(params))
    parts.append(b"}\n")
    return b"".join(parts)


def notification(method: str, params: Any = UNSET) -> bytes:
    """A notification frame ``{"jsonrpc":"2.0","method","params"}`` (no ``id``)."""
    parts = [_JSONRPC, b',"method":', _str(method, "method")]
    if params is not UNSET:
        parts.append(b',"params":')
        parts.append(_dumps(params))
    parts.append(b"}\n")
    return b"".join(parts)


def response(request_id: Union[str, int], result: Any) -> bytes:
    """A success response frame ``{"jsonrpc":"2.0","id","result"}``."""
    return b"".join((_JSONRPC, b',"id":', _request_id(request_id), b',"result":', _dumps(result), b"}\n"))


def error_response(request_id: Union[str, int, None], code: int, message: str, data: Any = UNSET) -> bytes:
    """An error response frame ``{"jsonrpc":"2.0","id","error":{"code","message","data"}}``.

    ``request_id`` may be None (``id: null``) when the request's id could not be read. ``code`` is
    a 32-bit integer (e.g. -32601 method not found, -32800 request cancelled).
    """
    if not isinstance(code, int) or isinstance(code, bool):
        raise TypeError(f"code must be an int, found {type(code).__name__}")
    if not _INT32_MIN <= code <= _INT32_MAX:
        raise ValueError(f"code must fit in a signed 32-bit integer, found {code}")
    parts = [
        _JSONRPC,
        b',"id":',
        _request_id(request_id, allow_null=True),
        b',"error":{"code":',
        str(int(code)).encode(),
        b',"message":',
        _str(message, "message"),
    ]
    if data is not UNSET:
        parts.append(b',"data":')
        parts.append(_dumps(data))
    parts.append(b"}}\n")
    return b"".join(parts)


def session_update(session_id: str, update: Mapping[str, Any]) -> bytes:
    """A ``session/update`` notification carrying ``update`` as given (it must hold ``sessionUpdate``)."""
    if not isinstance(update, dict):
        raise TypeError(f"update must be a dict, found {type(update).__name__}")
    if not isinstance(update.get("sessionUpdate"), str):
        raise ValueError('update must hold a string "sessionUpdate"')
    return b"".join((_SESSION_UPDATE_HEAD, _str(session_id, "session_id"), b',"update":', _dumps(update), b"}}\n"))


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
# Permission requests


def request_permission(
    request_id: Union[str, int],
    session_id: str,
    tool_call: Union[str, Mapping[str, Any]],
    options: Sequence[Mapping[str, Any]],
    *,
    protocol_version: int = 1,
    title: Optional[str] = None,
    description: Optional[str] = None,
) -> bytes:
    """A ``session/request_permission`` request (agent to client).

    ``tool_call`` is a tool-call update dict (it must hold ``toolCallId``) or just the tool call id.
    v1 writes ``params.toolCall`` and has no ``title``/``description`` (passing them raises
    ``ValueError``). v2 requires ``title`` (the prompt text), takes an optional ``description``,
    writes the tool call as ``subject: {"type":"tool_call","toolCall":...}`` and needs at least one
    option.
    """
    version = _version(protocol_version)
    if isinstance(tool_call, str):
        tool_call = {"toolCallId": tool_call}
    elif not isinstance(tool_call, dict):
        raise TypeError(f"tool_call must be a dict or a tool call id, found {type(tool_call).__name__}")
    elif not isinstance(tool_call.get("toolCallId"), str):
        raise ValueError('tool_call must hold a string "toolCallId"')
    if not isinstance(options, (list, tuple)):
        raise TypeError(f"options must be a list, found {type(options).__name__}")
    for index, option in enumerate(options):
        if not isinstance(option, dict):
            raise TypeError(f"options[{index}] must be a dict, found {type(option).__name__}")
        if version == 1 and option.get("kind") not in PERMISSION_OPTION_KINDS:
            raise ValueError(
                f"options[{index}].kind must be one of {sorted(PERMISSION_OPTION_KINDS)} in protocol "
                f"version 1, found {option.get('kind')!r}"
            )
    parts = [_JSONRPC, b',"id":', _request_id(request_id), _PERMISSION_HEAD, _str(session_id, "session_id")]
    if version == 1:
        if title is not None or description is not None:
            raise ValueError("request_permission: title and description exist only in protocol version 2")
        if None in tool_call.values():
            raise ValueError(
                "request_permission: the tool call holds a null field, which protocol version 1 reads as "
                "'unchanged'; leave the key out"
            )
        parts += (b',"toolCall":', _dumps(tool_call), b',"options":', _dumps(options), b"}}\n")
    else:
        if title is None:
            raise ValueError("request_permission: protocol version 2 requires a title")
        parts += (b',"title":', _str(title, "title"))
        if description is not None:
            parts += (b',"description":', _str(description, "description"))
        if not options:
            raise ValueError("request_permission: protocol version 2 requires at least one option")
        parts += (
            b',"subject":{"type":"tool_call","toolCall":',
            _dumps(tool_call),
            b'},"options":',
            _dumps(options),
            b"}}\n",
        )
    return b"".join(parts)


def permission_response(
    request_id: Union[str, int], option_id: Optional[str] = None, *, cancelled: bool = False
) -> bytes:
    """The client's answer to a permission request: the selected option, or ``cancelled=True``."""
    if type(request_id) is int and _INT64_MIN <= request_id <= _INT64_MAX:
        rid = b"%d" % request_id
    else:
        rid = _request_id(request_id)
    if cancelled:
        if option_id is not None:
            raise ValueError("permission_response: pass either option_id or cancelled=True, not both")
        return _ID_HEAD + rid + _CANCELLED_RESULT
    if type(option_id) is not str:
        if option_id is None:
            raise ValueError("permission_response: pass the selected option_id, or cancelled=True")
        _bad_str(option_id, "option_id")
    return _ID_HEAD + rid + _SELECTED_HEAD + _dumps(option_id) + b"}}}\n"


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


# ---------------------------------------------------------------------------------------------
# Tool kinds

#: Default ACP tool kind of common agent tool names.
DEFAULT_TOOL_KINDS: Mapping[str, str] = MappingProxyType(
    {
        "read_file": "read",
        "list_directory": "read",
        "edit_file": "edit",
        "grep": "search",
        "find_path": "search",
        "terminal": "execute",
        "thinking": "think",
        "fetch": "fetch",
        "web_search": "fetch",
    }
)


def tool_kind(tool_name: str, extra: Optional[Mapping[str, str]] = None) -> str:
    """The ACP tool kind of ``tool_name``: from ``extra`` first, then :data:`DEFAULT_TOOL_KINDS`, else ``"other"``."""
    if extra is not None:
        kind = extra.get(tool_name)
        if kind is not None:
            return kind
    return DEFAULT_TOOL_KINDS.get(tool_name, "other")


class ToolKindMap(dict[str, str]):
    """A ``dict`` of tool name -> ACP tool kind, starting from :data:`DEFAULT_TOOL_KINDS`.

    >>> kinds = ToolKindMap({"bash": "execute"})
    >>> kinds.kind("bash"), kinds.kind("read_file"), kinds.kind("mystery")
    ('execute', 'read', 'other')
    """

    def __init__(self, extra: Union[Mapping[str, str], Iterable[Any], None] = None) -> None:
        super().__init__(DEFAULT_TOOL_KINDS)
        if extra is not None:
            for name, kind in dict(extra).items():
                self.register(name, kind)

    def kind(self, tool_name: str) -> str:
        """The kind registered for ``tool_name``, or ``"other"``."""
        return self.get(tool_name, "other")

    def register(self, tool_name: str, kind: str) -> None:
        """Map ``tool_name`` to ``kind`` (replacing any earlier mapping)."""
        if not isinstance(tool_name, str):
            raise TypeError(f"tool_name must be a str, found {type(tool_name).__name__}")
        if not isinstance(kind, str):
            raise TypeError(f"kind must be a str, found {type(kind).__name__}")
        self[tool_name] = kind
