"""Checkpoints (DESIGN 7.8): ``to_json`` writes the whole store as an ``acp-fast-state/1``
document, ``dumps(state())`` but for numbers, which keep their text as received; ``from_json``
checks a document and rebuilds the store (its eviction order is the document's order).

Mirror of ``rust/state/checkpoint.rs``. Differences on purpose: here ``state`` builds the document
as a dict (shared with the store; ``ToolCallStore.state`` copies it) and ``to_json`` is ``dumps`` of
it, and ``from_json`` checks the dict that ``loads`` gives; Rust writes the document straight from
the records and reads it straight from its bytes. The checks run in the same order in both, so a
bad document gets the same error text.
"""

from __future__ import annotations

import binascii
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Tuple, Type, cast

import orjson

from ...errors import DecodeError as PyDecodeError
from ..encoder import write
from ..error import DecodeError, to_python
from ..scanner import MAX_DEPTH as _FRAME_DEPTH
from ..scanner import loads, parse_document, to_bytes
from .evict import LIMITS, compact, drop_permission, number_terminals, push_permission
from .permission import MAX_CANCEL_REQUESTS
from .read import b64decode, exactly, plain
from .records import (
    MISSING,
    OUTCOMES,
    Session,
    Terminal,
    finished,
    fresh,
    permission_record,
    terminal_record,
    tool_call_record,
    truncated,
)

if TYPE_CHECKING:
    from . import ToolCallStore

__all__ = ["FORMAT", "MAX_DEPTH", "from_json", "state", "to_json"]

#: The ``format`` of a checkpoint.
FORMAT = "acp-fast-state/1"

#: Deepest nesting of a checkpoint: the one limit (``scanner.MAX_DEPTH``, what a frame may nest)
#: and the levels a checkpoint adds around what a frame held: a record's members sit 5 levels
#: deep (state, sessions, session, its map or list, the record), a value in a frame at least 1
#: (``result``, ``error``). The values inside are never deeper than a frame could hold them.
MAX_DEPTH = _FRAME_DEPTH + 4

# `loads` gives any JSON value (typed here for the calls below).
_loads: Callable[[Any], Any] = loads
_orjson_dumps = orjson.dumps
_Fragment = orjson.Fragment
_I64_MAX = 2**63 - 1


_b2a = binascii.b2a_base64
_a2b = binascii.a2b_base64

# ---------------------------------------------------------------------------------------------
# Errors (the text of each: DESIGN 7.8)


def _name(value: Any) -> str:
    """The JSON type name of a parsed value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float, _Fragment)):
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


def _count(value: Any, least: int) -> Optional[int]:
    """The integer ``value`` when it is in ``least..2**63-1`` (the range of every count and bound)."""
    value = plain(value)
    if type(value) is int and least <= value <= _I64_MAX:
        return value
    return None


# ---------------------------------------------------------------------------------------------
# Writing


def state(store: ToolCallStore) -> Dict[str, Any]:
    """The checkpoint document as a dict, its values shared with the store."""
    per_session: Dict[str, List[Any]] = {sid: [] for sid in store._sessions}
    for e in store._permissions:
        if e is not None:
            per_session[e[0]].append(e[1])
    sessions: Dict[str, Any] = {}
    for sid, s in store._sessions.items():
        sd = sessions[sid] = {
            "toolCalls": {tcid: tool_call_record(tcid, f) for tcid, f in s.tool_calls.items()},
            "terminals": {
                tid: terminal_record(tid, t, _b2a(t.kept(), newline=False).decode("ascii"))
                for tid, t in s.terminals.items()
            },
            "plans": dict(s.plans),
            "permissions": per_session[sid],
        }
        if s.updates:
            sd["updates"] = list(s.updates)
        truncated(sd, s.dropped())
    doc: Dict[str, Any] = {
        "format": FORMAT,
        "protocolVersion": store._fixed,
        "negotiatedVersion": store._negotiated,
        "maxToolCalls": store._max_tool_calls,
    }
    for name, attr, _, default in LIMITS:
        value = getattr(store, attr)
        if value != default:
            doc[name] = value
    doc["evicted"] = store._evicted
    doc["sessions"] = sessions
    doc["permissionOrder"] = [e[0] for e in store._permissions if e is not None]
    if store._cancel_requests:  # present only when the store has seen a $/cancel_request
        doc["cancelRequests"] = cancel_request_list(store)
    return doc


def cancel_request_list(store: ToolCallStore) -> List[Dict[str, Any]]:
    """``state.cancelRequests``: ``[{"requestId": id, "source": "agent" | "client" | None}]``."""
    return [{"requestId": rid, "source": source} for rid, source in store._cancel_requests]


def to_json(store: ToolCallStore) -> bytes:
    """The checkpoint document of ``store``: ``dumps(state())``, numbers as received, with a
    checkpoint's nesting limit."""
    doc = state(store)
    try:
        return _orjson_dumps(doc)
    except TypeError:  # nested deeper than orjson writes: the encoder, with a checkpoint's limit
        return write(doc, MAX_DEPTH)


# ---------------------------------------------------------------------------------------------
# Reading


def _object(value: Any, path: str) -> Dict[str, Any]:
    if type(value) is not dict:
        raise _fail(path, "an object", value)
    return value


def _find(obj: Dict[str, Any], key: str, path: str) -> Any:
    """The member ``key`` of ``obj``, or the error naming ``path.key``."""
    if key not in obj:
        raise ValueError(f'expected "{path}.{key}" to be present, found none')
    return obj[key]


def _version(value: Any, path: str) -> Any:
    """``protocolVersion`` / ``negotiatedVersion``: 1, 2 or null."""
    if value is not None and not (type(value) is int and value in (1, 2)):
        raise _fail(path, "1, 2 or null", value)
    return value


def _record_id(record: Dict[str, Any], key: str, member: str, path: str) -> None:
    """The record's ``member`` must be the key it is filed under."""
    value = _find(record, member, path)
    if value != key or type(value) is not str:
        raise ValueError(f'expected "{path}.{member}" to be {key!r}, found {_name(value)}')


def _no_nulls(record: Dict[str, Any], path: str) -> None:
    """No member of the record is null."""
    for name, value in record.items():
        if value is None:
            raise _fail(f"{path}.{name}", "a value other than null", value)


def _load(data: Any) -> Any:
    """``loads``, with a checkpoint's nesting limit (Rust: ``Scanner::max_depth``)."""
    try:
        return _loads(data)
    except PyDecodeError as e:
        if e.kind != "depth_limit":
            raise
    raw = to_bytes(data, "from_json")
    assert type(raw) is bytes  # `loads` took it
    value = parse_document(raw, MAX_DEPTH)
    if type(value) is DecodeError:
        raise to_python(value, raw) from None
    return value


def from_json(cls: Type[ToolCallStore], data: Any) -> ToolCallStore:
    """Check the document ``data`` (bytes or str) and rebuild the store it describes. Checks and
    messages: DESIGN 7.8 (in Rust's order, so both report the same first problem)."""
    value = _load(data)  # its errors for what is not JSON, with a checkpoint's nesting limit
    doc = _object(exactly(cast(bytes, to_bytes(data, "from_json")), value), "state")
    fmt = _find(doc, "format", "state")
    if fmt != FORMAT:
        raise ValueError(f'expected "state.format" to be {FORMAT!r}, found {fresh(fmt)!r}')
    fixed = _version(_find(doc, "protocolVersion", "state"), "state.protocolVersion")
    negotiated = _version(_find(doc, "negotiatedVersion", "state"), "state.negotiatedVersion")
    limit = _find(doc, "maxToolCalls", "state")
    if limit is not None:
        limit = _count(limit, 1)
        if limit is None:
            raise _fail("state.maxToolCalls", "a positive integer or null", doc["maxToolCalls"])
    bounds: Dict[str, Any] = {}
    for name, attr, least, _ in LIMITS:
        if name in doc:
            bound = doc[name]
            if bound is not None and _count(bound, least) is None:
                what = "a non-negative integer or null" if least == 0 else "a positive integer or null"
                raise _fail(f"state.{name}", what, bound)
            bounds[attr[1:]] = plain(bound)
    evicted = _count(_find(doc, "evicted", "state"), 0)
    if evicted is None:
        raise _fail("state.evicted", "a non-negative integer", doc["evicted"])
    sessions = _object(_find(doc, "sessions", "state"), "state.sessions")
    store = cls(fixed, max_tool_calls=limit, **bounds)
    store._set_negotiated(negotiated)
    store._evicted = evicted
    records: Dict[str, List[List[Any]]] = {}
    for sid, session in sessions.items():
        sp = f"state.sessions.{sid}"
        _object(session, sp)
        s = store._sessions[sid] = Session()
        _restore_tool_calls(store, sid, s, session, sp)
        _restore_terminals(store, s, session, sp)
        path = f"{sp}.plans"
        for pid, record in _object(_find(session, "plans", sp), path).items():
            rp = f"{path}.{pid}"
            _object(record, rp)
            _record_id(record, pid, "planId", rp)
            s.plans[pid] = record
        records[sid] = _read_permissions(sid, session, sp)
        _restore_updates(store, s, session, sp)
    # The session of each permission record in request order across sessions (optional:
    # without it, session order), naming each session as many times as it has records.
    counts = {sid: len(entries) for sid, entries in records.items()}
    if "permissionOrder" not in doc:
        order = [sid for sid, n in counts.items() for _ in range(n)]
    else:
        order = doc["permissionOrder"]
        if type(order) is not list:
            raise _fail("state.permissionOrder", "an array", order)
        seen: Dict[str, int] = {}
        for i, sid in enumerate(order):
            if type(sid) is not str or sid not in sessions:
                raise _fail(f"state.permissionOrder.{i}", "the id of a session in state.sessions", sid)
            seen[sid] = seen.get(sid, 0) + 1
            if seen[sid] > counts[sid]:
                raise ValueError(
                    f'expected "state.permissionOrder" to name {sid!r} {counts[sid]} times '
                    "(its permission records), found more"
                )
        for sid, n in counts.items():
            if seen.get(sid, 0) != n:
                raise ValueError(
                    f'expected "state.permissionOrder" to name {sid!r} {n} times '
                    f"(its permission records), found {seen.get(sid, 0)}"
                )
    pending = store._pending
    perms = store._permissions
    queues: Dict[str, Iterator[List[Any]]] = {sid: iter(entries) for sid, entries in records.items()}
    for sid in order:
        entry = next(queues[sid])
        ident = entry[1]["id"]
        if entry[1]["outcome"] == "pending":
            old = pending.get(ident, MISSING)
            if old is not MISSING:
                drop_permission(store, old)
            pending[ident] = len(perms)
        push_permission(store, entry)
    if "cancelRequests" in doc:
        _read_cancel_requests(store, doc["cancelRequests"])
    if store._max_tool_calls is not None:
        compact(store)
    return store


def _read_cancel_requests(store: ToolCallStore, items: Any) -> None:
    """``state.cancelRequests`` (optional): ``[{"requestId": id, "source": "agent" | "client" | null}]``."""
    if type(items) is not list:
        raise _fail("state.cancelRequests", "an array", items)
    for i, item in enumerate(items):
        rp = f"state.cancelRequests.{i}"
        _object(item, rp)
        rid = plain(_find(item, "requestId", rp))
        if rid is not None and type(rid) is not str and not (type(rid) is int and -(2**63) <= rid < 2**63):
            raise _fail(f"{rp}.requestId", "a string, an integer or null", rid)
        source = _find(item, "source", rp)
        if source not in (None, "agent", "client"):
            raise _fail(f"{rp}.source", '"agent", "client" or null', source)
        if len(store._cancel_requests) == MAX_CANCEL_REQUESTS:
            store._cancel_requests.popleft()
        store._cancel_requests.append((rid, source))


def _restore_tool_calls(store: ToolCallStore, sid: str, s: Session, session: Dict[str, Any], sp: str) -> None:
    """``{sp}.toolCalls``: each record checked, then added in document order (eviction order)."""
    path = f"{sp}.toolCalls"
    bounded = store._max_tool_calls is not None
    for tcid, record in _object(_find(session, "toolCalls", sp), path).items():
        rp = f"{path}.{tcid}"
        _object(record, rp)
        _record_id(record, tcid, "toolCallId", rp)
        for name in ("kind", "status"):
            _find(record, name, rp)
        for name in ("content", "locations"):
            if type(_find(record, name, rp)) is not list:
                raise _fail(f"{rp}.{name}", "an array", record[name])
        _no_nulls(record, rp)
        (dropped,) = _read_marker(record, rp, (("droppedItems", "maxContentItems", store._max_content_items),))
        f = s.tool_calls[tcid] = {k: v for k, v in record.items() if k != "toolCallId" and k != "_truncated"}
        if dropped:
            f["_truncated"] = dropped
        store._tool_call_count += 1
        if bounded:
            # In document order; `compact` below numbers them and queues the finished ones.
            key = (sid, tcid)
            store._created[key] = [0, finished(f)]
            store._order.append(key)


def _restore_terminals(store: ToolCallStore, s: Session, session: Dict[str, Any], sp: str) -> None:
    """``{sp}.terminals``: each record checked (``output`` base64 text), then added."""
    path = f"{sp}.terminals"
    for tid, record in _object(_find(session, "terminals", sp), path).items():
        rp = f"{path}.{tid}"
        _object(record, rp)
        _record_id(record, tid, "terminalId", rp)
        output = _find(record, "output", rp)
        if type(output) is not str:
            raise _fail(f"{rp}.output", "a string", output)
        data = b64decode(output)
        if data is None:
            raise ValueError(f'expected "{rp}.output" to be base64 text, found string')
        _no_nulls(record, rp)
        term = s.terminals[tid] = Terminal()
        (term.dropped,) = _read_marker(record, rp, (("droppedBytes", "maxTerminalBytes", store._max_terminal_bytes),))
        term.output = bytearray(data)
        term.fields = {k: v for k, v in record.items() if k not in ("terminalId", "output", "_truncated")}
    if store._max_terminals is not None:
        number_terminals(s)


def _restore_updates(store: ToolCallStore, s: Session, session: Dict[str, Any], sp: str) -> None:
    """``{sp}.updates`` (optional: unknown updates, each an object with a string
    ``sessionUpdate``) and ``{sp}._truncated`` (optional: what the bounds dropped), checked, then
    added."""
    if "updates" in session:
        path = f"{sp}.updates"
        updates = session["updates"]
        if type(updates) is not list:
            raise _fail(path, "an array", updates)
        for i, update in enumerate(updates):
            up = f"{path}.{i}"
            _object(update, up)
            if type(_find(update, "sessionUpdate", up)) is not str:
                raise _fail(f"{up}.sessionUpdate", "a string", update["sessionUpdate"])
            s.updates.append(update)
    bounds = (
        ("droppedTerminals", "maxTerminals", store._max_terminals),
        ("droppedPlans", "maxPlans", store._max_plans),
        ("droppedPermissions", "maxPermissions", store._max_permissions),
        ("droppedUpdates", "maxUpdates", store._max_updates),
    )
    counts = _read_marker(session, sp, bounds)
    s.dropped_terminals, s.dropped_plans, s.dropped_permissions, s.dropped_updates = counts


def _read_marker(record: Dict[str, Any], rp: str, bounds: Tuple[Tuple[str, str, Optional[int]], ...]) -> List[int]:
    """The ``_truncated`` marker of ``record`` at ``rp``, if any: a count for each of ``bounds``
    (member, bound's name, bound: a count needs its bound to be on), each present one a positive
    integer, at least one, no other member."""
    counts = [0] * len(bounds)
    if "_truncated" not in record:
        return counts
    path = f"{rp}._truncated"
    names = [b[0] for b in bounds]
    for name, value in _object(record["_truncated"], path).items():
        member = f"{path}.{name}"
        if name not in names:
            raise ValueError(f'expected "{member}" to be absent, found {_name(value)}')
        i = names.index(name)
        if bounds[i][2] is None:
            raise ValueError(f'expected "{member}" to be absent (state.{bounds[i][1]} is null), found {_name(value)}')
        count = _count(value, 1)
        if count is None:
            raise _fail(member, "a positive integer", value)
        counts[i] = count
    if not any(counts):
        if len(bounds) == 1:
            raise ValueError(f'expected "{path}.{bounds[0][0]}" to be present, found none')
        raise _fail(path, "an object with at least one count", record["_truncated"])
    return counts


def _read_permissions(sid: str, session: Dict[str, Any], sp: str) -> List[List[Any]]:
    """``{sp}.permissions``: the records of session ``sid``, checked, as ``[sid, record]``."""
    path = f"{sp}.permissions"
    permissions = _find(session, "permissions", sp)
    if type(permissions) is not list:
        raise _fail(path, "an array", permissions)
    out = []
    for i, record in enumerate(permissions):
        rp = f"{path}.{i}"
        _object(record, rp)
        rid = plain(_find(record, "id", rp))
        if rid is not None and type(rid) is not str and not (type(rid) is int and -(2**63) <= rid < 2**63):
            raise _fail(f"{rp}.id", "a string, an integer or null", rid)
        if _find(record, "sessionId", rp) != sid:
            raise ValueError(f'expected "{rp}.sessionId" to be {sid!r}, found {_name(record["sessionId"])}')
        options = _find(record, "options", rp)
        if type(options) is not list:
            raise _fail(f"{rp}.options", "an array", options)
        outcome = _find(record, "outcome", rp)
        if type(outcome) is not str or outcome not in OUTCOMES:
            raise _fail(f"{rp}.outcome", "one of " + ", ".join(OUTCOMES), outcome)
        approved = _find(record, "approved", rp)
        if type(approved) is not bool:
            raise _fail(f"{rp}.approved", "a boolean", approved)
        for name in ("toolCallId", "optionId"):
            if name in record and type(record[name]) is not str:
                raise _fail(f"{rp}.{name}", "a string", record[name])
        entry = permission_record(
            rid,
            sid,
            record.get("toolCallId"),
            options,
            outcome,
            record.get("optionId"),
            approved,
            record.get("response", MISSING),
        )
        out.append([sid, entry])
    return out
