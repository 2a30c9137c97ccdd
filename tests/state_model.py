"""Helpers shared by the ``test_state_*.py`` files: frame construction (exact
bytes, so error positions can be computed from them) and small assertion helpers for the state
engine (DESIGN.md §7, docs/API.md "Tool-call state").

Nothing here knows the rules of the engine; the model of the tool-call rules lives in
``test_state_properties.py``.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

from vectors import strict_equal

__all__ = [
    "frame",
    "notification",
    "request",
    "response",
    "error_response",
    "session_update",
    "tool_call",
    "tool_call_update",
    "chunk",
    "value_at",
    "change_of",
    "assert_record",
    "assert_state_error",
    "results_key",
]


def frame(obj: Any, *, ensure_ascii: bool = False, spaced: bool = False) -> bytes:
    """One frame (no line ending) as compact JSON (or with ``", "``/``": "`` separators)."""
    separators = (", ", ": ") if spaced else (",", ":")
    return json.dumps(obj, ensure_ascii=ensure_ascii, separators=separators, allow_nan=False).encode("utf-8")


def notification(method: str, params: Any) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def request(id_: Any, method: str, params: Any) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def response(id_: Any, result: Any) -> bytes:
    return frame({"jsonrpc": "2.0", "id": id_, "result": result})


def error_response(id_: Any, code: int = -32800, message: str = "cancelled") -> bytes:
    return frame({"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}})


def session_update(sid: Any, update: Any) -> bytes:
    """A ``session/update`` notification frame for ``update`` (a dict: its keys in the given order)."""
    return frame(notification("session/update", {"sessionId": sid, "update": update}))


def tool_call(sid: str, tcid: Any, fields: Optional[Dict[str, Any]] = None) -> bytes:
    """A v1 ``tool_call`` frame with ``fields`` (in order) after ``toolCallId``."""
    return session_update(sid, {"sessionUpdate": "tool_call", "toolCallId": tcid, **(fields or {})})


def tool_call_update(sid: str, tcid: Any, fields: Optional[Dict[str, Any]] = None) -> bytes:
    """A ``tool_call_update`` frame with ``fields`` (in order, ``None`` = JSON null)."""
    return session_update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tcid, **(fields or {})})


def chunk(sid: str, tcid: Any, content: Any, extra: Optional[Dict[str, Any]] = None) -> bytes:
    """A ``tool_call_content_chunk`` frame (``extra`` members after ``content``)."""
    return session_update(
        sid, {"sessionUpdate": "tool_call_content_chunk", "toolCallId": tcid, "content": content, **(extra or {})}
    )


def value_at(data: bytes, marker: bytes, start: int = 0) -> int:
    """Byte offset just after the first ``marker`` found at or after ``start`` (e.g. the offset of a
    member's value with ``marker = b'"key":'``)."""
    i = data.index(marker, start)
    return i + len(marker)


def change_of(backend: Any, change: Any) -> tuple:
    """The five fields of a Change, after checking its type (``backend.Change``)."""
    assert type(change) is backend.Change, f"expected a {backend.Change!r}, found {change!r}"
    return tuple(change)


def assert_record(actual: Any, expected: Any) -> None:
    """Type-strict, key-order-strict equality (DESIGN 7.3 fixes the materialized key order)."""
    assert strict_equal(actual, expected), f"\n  actual:   {actual!r}\n  expected: {expected!r}"


def assert_state_error(
    err: Any,
    kind: str,
    description: str,
    position: int,
    *,
    code: int = -32602,
    line: Optional[int] = None,
) -> None:
    """A DecodeError with exactly this code, kind, description and position (DESIGN 7.7, §3).

    Outside a stream (``line`` None) the frame is one line: ``lineno`` 1, ``colno`` position + 1.
    From ``feed`` the frame is line ``line`` of the stream: ``lineno = line``, ``colno = position + 1``.
    """
    from acp_fast import DecodeError

    assert isinstance(err, DecodeError), f"expected a DecodeError, found {err!r}"
    got = (err.code, err.kind, err.msg, err.position, err.line)
    assert got == (code, kind, description, position, line), (
        f"\n  got:      {got!r}\n  expected: {(code, kind, description, position, line)!r}"
    )
    assert err.lineno == (1 if line is None else line)
    assert err.colno == position + 1
    assert str(err) == f"{description} at line {err.lineno} column {position + 1}"


def results_key(backend: Any, result: Any) -> Any:
    """A comparable form of what ``apply`` returned: None, the Change tuple, the DecodeError itself
    (DecodeError equality covers type, code, kind, message, position, line and raw), or a list of
    those for a batch."""
    from acp_fast import DecodeError

    if result is None or isinstance(result, DecodeError):
        return result
    if isinstance(result, list):
        return [results_key(backend, r) for r in result]
    return ("change",) + change_of(backend, result)
