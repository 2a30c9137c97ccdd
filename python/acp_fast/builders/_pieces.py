"""The builders' shared pieces: the [`UNSET`][acp_fast.builders.UNSET] marker, the enumerations, the pre-encoded
frame parts and the cheap argument checks (private; the public names are re-exported by
[`acp_fast.builders`][acp_fast.builders])."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from .. import dumps as _dumps


class _Unset:
    """Type of [`UNSET`][acp_fast.builders.UNSET], the marker of an omitted optional field (a singleton)."""

    # Public as acp_fast.builders.UNSET: pickles name that module, as before the package split.
    __module__ = "acp_fast.builders"
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
