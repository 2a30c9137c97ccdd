"""Generic JSON-RPC envelopes and the permission request and answer of [`acp_fast.builders`][acp_fast.builders]
(private; re-exported there)."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union

from .. import dumps as _dumps
from ._pieces import (
    _CANCELLED_RESULT,
    _ID_HEAD,
    _INT32_MAX,
    _INT32_MIN,
    _INT64_MAX,
    _INT64_MIN,
    _JSONRPC,
    _PERMISSION_HEAD,
    _SELECTED_HEAD,
    _SESSION_UPDATE_HEAD,
    PERMISSION_OPTION_KINDS,
    UNSET,
    _bad_str,
    _request_id,
    _str,
    _version,
)

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
