"""The checkpoint format of ``ToolCallStore.to_json()`` (docs/DESIGN.md §7.8): shape checks shared
by both backends, so that ``ToolCallStore.from_json`` rejects a bad document with the very same
``ValueError`` whichever backend runs. The backends rebuild their stores from the checked dict.
"""

from __future__ import annotations

import binascii
import re
from typing import Any, Callable, Dict, Optional

__all__ = ["FORMAT", "load_state"]

FORMAT = "acp-fast-state/1"
OUTCOMES = frozenset(("pending", "selected", "cancelled", "invalid", "unknown", "error"))
_BASE64 = re.compile(rb"[A-Za-z0-9+/]*={0,2}")


def _name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _fail(path: str, what: str, value: Any) -> ValueError:
    return ValueError(f'expected "{path}" to be {what}, found {_name(value)}')


def _object(value: Any, path: str) -> Dict[str, Any]:
    if type(value) is not dict:
        raise _fail(path, "an object", value)
    return value


def _member(obj: Dict[str, Any], key: str, path: str) -> Any:
    if key not in obj:
        raise ValueError(f'expected "{path}.{key}" to be present, found none')
    return obj[key]


def _version(value: Any, path: str) -> None:
    if value is not None and not (type(value) is int and value in (1, 2)):
        raise _fail(path, "1, 2 or null", value)


def _string(value: Any, path: str) -> str:
    if type(value) is not str:
        raise _fail(path, "a string", value)
    return value


def _check_record_id(record: Dict[str, Any], key: str, member: str, path: str) -> None:
    value = _member(record, member, path)
    if value != key or type(value) is not str:
        raise ValueError(f'expected "{path}.{member}" to be {key!r}, found {_name(value)}')


def load_state(data: Any, loads: Optional[Callable[[Any], Any]] = None) -> Dict[str, Any]:
    """Parse and check a checkpoint; returns the checked dict (raises ValueError naming the path
    of the first problem)."""
    if loads is None:
        from . import loads as loads  # the active backend's
    state = _object(loads(data), "state")
    fmt = _member(state, "format", "state")
    if fmt != FORMAT:
        raise ValueError(f'expected "state.format" to be {FORMAT!r}, found {fmt!r}')
    _version(_member(state, "protocolVersion", "state"), "state.protocolVersion")
    _version(_member(state, "negotiatedVersion", "state"), "state.negotiatedVersion")
    limit = _member(state, "maxToolCalls", "state")
    if limit is not None and not (type(limit) is int and limit >= 1):
        raise _fail("state.maxToolCalls", "a positive integer or null", limit)
    evicted = _member(state, "evicted", "state")
    if not (type(evicted) is int and evicted >= 0):
        raise _fail("state.evicted", "a non-negative integer", evicted)
    sessions = _object(_member(state, "sessions", "state"), "state.sessions")
    for sid, session in sessions.items():
        sp = f"state.sessions.{sid}"
        _object(session, sp)
        for tcid, record in _object(_member(session, "toolCalls", sp), f"{sp}.toolCalls").items():
            rp = f"{sp}.toolCalls.{tcid}"
            _object(record, rp)
            _check_record_id(record, tcid, "toolCallId", rp)
            for name in ("kind", "status"):
                _member(record, name, rp)
            for name in ("content", "locations"):
                if type(_member(record, name, rp)) is not list:
                    raise _fail(f"{rp}.{name}", "an array", record[name])
            for name, value in record.items():
                if value is None:
                    raise _fail(f"{rp}.{name}", "a value other than null", value)
        for tid, record in _object(_member(session, "terminals", sp), f"{sp}.terminals").items():
            rp = f"{sp}.terminals.{tid}"
            _object(record, rp)
            _check_record_id(record, tid, "terminalId", rp)
            output = _string(_member(record, "output", rp), f"{rp}.output").encode("utf-8")
            if len(output) % 4 or not _BASE64.fullmatch(output):
                raise ValueError(f'expected "{rp}.output" to be base64 text, found string')
            binascii.a2b_base64(output)
            for name, value in record.items():
                if value is None:
                    raise _fail(f"{rp}.{name}", "a value other than null", value)
        for pid, record in _object(_member(session, "plans", sp), f"{sp}.plans").items():
            _object(record, f"{sp}.plans.{pid}")
        permissions = _member(session, "permissions", sp)
        if type(permissions) is not list:
            raise _fail(f"{sp}.permissions", "an array", permissions)
        for i, record in enumerate(permissions):
            rp = f"{sp}.permissions.{i}"
            _object(record, rp)
            rid = _member(record, "id", rp)
            if rid is not None and type(rid) is not str and not (type(rid) is int and -(2**63) <= rid < 2**63):
                raise _fail(f"{rp}.id", "a string, an integer or null", rid)
            if _member(record, "sessionId", rp) != sid:
                raise ValueError(f'expected "{rp}.sessionId" to be {sid!r}, found {_name(record["sessionId"])}')
            if type(_member(record, "options", rp)) is not list:
                raise _fail(f"{rp}.options", "an array", record["options"])
            outcome = _member(record, "outcome", rp)
            if outcome not in OUTCOMES or type(outcome) is not str:
                raise _fail(f"{rp}.outcome", "one of " + ", ".join(sorted(OUTCOMES)), outcome)
            if type(_member(record, "approved", rp)) is not bool:
                raise _fail(f"{rp}.approved", "a boolean", record["approved"])
            for name in ("toolCallId", "optionId"):
                if name in record:
                    _string(record[name], f"{rp}.{name}")
    # The sessions of the permission records in request order across sessions (so permission(id)
    # finds the latest request after a restore). Optional: without it, session order.
    counts = {sid: len(session["permissions"]) for sid, session in sessions.items()}
    if "permissionOrder" not in state:
        state["permissionOrder"] = [sid for sid, n in counts.items() for _ in range(n)]
        return state
    order = state["permissionOrder"]
    if type(order) is not list:
        raise _fail("state.permissionOrder", "an array", order)
    seen: Dict[str, int] = {}
    for i, sid in enumerate(order):
        if type(sid) is not str or sid not in sessions:
            raise _fail(f"state.permissionOrder.{i}", "the id of a session in state.sessions", sid)
        seen[sid] = seen.get(sid, 0) + 1
        if seen[sid] > counts[sid]:
            raise ValueError(
                f'expected "state.permissionOrder" to name {sid!r} {counts[sid]} times (its permission records), found more'
            )
    for sid, n in counts.items():
        if seen.get(sid, 0) != n:
            raise ValueError(
                f'expected "state.permissionOrder" to name {sid!r} {n} times (its permission records), found {seen.get(sid, 0)}'
            )
    return state
