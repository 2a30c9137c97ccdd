"""Reading a checkpoint (DESIGN 7.8), moved out of ``checkpoint.py``: the helpers that check the
document's values (``_object``, ``_find``, ``_version``, ``_record_id``, ``_no_nulls``, and the
errors' ``_name``, ``_fail``, ``_count``; ``from_json`` in ``checkpoint.py`` walks the document with
them), and the readers of one session's records, each checked then added to the store:
``restore_tool_calls``, ``restore_terminals``, ``restore_plans``, ``read_permissions`` (the
records, ordered across sessions by ``from_json``) and ``restore_updates`` (unknown updates and the
session's marker). The ``_truncated`` markers are read by one table-driven reader,
``read_marker`` (the counts of each marker and the bound each follows: ``TOOL_CALL_COUNTS``,
``TERMINAL_COUNTS``, ``SESSION_COUNTS``).

Mirror of ``rust/state/restore.rs`` (where the helpers are the methods of its ``Reader``).
Differences on purpose: as in ``checkpoint.py``, values are read from the dict ``loads`` gives
here, from the document's bytes in Rust.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import orjson

from . import rules
from .evict import LIMITS, number_terminals
from .read import base64_decode, plain, text
from .records import BYTES, MISSING, OUTCOMES, Entities, Session, Store, Terminal, finished, held_len, permission_record

__all__ = [
    "SESSION_COUNTS",
    "TERMINAL_COUNTS",
    "TOOL_CALL_COUNTS",
    "read_marker",
    "read_entities",
    "read_permissions",
    "restore_entities",
    "restore_files",
    "restore_plans",
    "restore_terminals",
    "restore_tool_calls",
    "restore_updates",
]

_Fragment = orjson.Fragment
_I64_MAX = 2**63 - 1


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


def _find(obj: Dict[str, Any], key: str, path: str) -> Any:
    """The member ``key`` of ``obj``, or the error naming ``path.key``."""
    if key not in obj:
        raise ValueError(f'expected "{path}.{key}" to be present, found none')
    return obj[key]


def _object(value: Any, path: str) -> Dict[str, Any]:
    if type(value) is not dict:
        raise _fail(path, "an object", value)
    return value


def _count(value: Any, least: int) -> Optional[int]:
    """The integer ``value`` when it is in ``least..2**63-1`` (the range of every count and bound)."""
    value = plain(value)
    if type(value) is int and least <= value <= _I64_MAX:
        return value
    return None


def _version(value: Any, path: str) -> Any:
    """``protocolVersion`` / ``negotiatedVersion``: 1, 2 or null."""
    if value is not None and not (type(value) is int and value in (1, 2)):
        raise _fail(path, "1, 2 or null", value)
    return value


def _fail(path: str, what: str, value: Any) -> ValueError:
    return ValueError(f'expected "{path}" to be {what}, found {_name(value)}')


# ---------------------------------------------------------------------------------------------
# Reading


def _record_id(record: Dict[str, Any], key: str, member: str, path: str) -> None:
    """The record's ``member`` must be the key it is filed under."""
    value = text(_find(record, member, path))
    if value != key or type(value) is not str:
        raise ValueError(f'expected "{path}.{member}" to be {key!r}, found {_name(value)}')


def _no_nulls(record: Dict[str, Any], path: str) -> None:
    """No member of the record is null."""
    for name, value in record.items():
        if value is None:
            raise _fail(f"{path}.{name}", "a value other than null", value)


def restore_tool_calls(store: Store, sid: str, s: Session, session: Dict[str, Any], sp: str) -> None:
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
        (dropped,) = read_marker(store, record, rp, TOOL_CALL_COUNTS)
        f = s.tool_calls[tcid] = {k: v for k, v in record.items() if k != "toolCallId" and k != "_truncated"}
        if dropped:
            f["_truncated"] = dropped
        if store._max_content_bytes is not None and "content" in f:
            f[BYTES] = sum(held_len(item) for item in f["content"])
        store._tool_call_count += 1
        if bounded:
            # In document order; `compact` below numbers them and queues the finished ones.
            key = (sid, tcid)
            store._created[key] = [0, finished(f)]
            store._order.append(key)


def restore_terminals(store: Store, s: Session, session: Dict[str, Any], sp: str) -> None:
    """``{sp}.terminals``: each record checked (``output`` base64 text), then added."""
    path = f"{sp}.terminals"
    for tid, record in _object(_find(session, "terminals", sp), path).items():
        rp = f"{path}.{tid}"
        _object(record, rp)
        _record_id(record, tid, "terminalId", rp)
        output = text(_find(record, "output", rp))
        if type(output) is not str:
            raise _fail(f"{rp}.output", "a string", output)
        data = base64_decode(output)
        if data is None:
            raise ValueError(f'expected "{rp}.output" to be base64 text, found string')
        _no_nulls(record, rp)
        term = s.terminals[tid] = Terminal()
        (term.dropped,) = read_marker(store, record, rp, TERMINAL_COUNTS)
        term.output = bytearray(data)
        term.fields = {k: v for k, v in record.items() if k not in ("terminalId", "output", "_truncated")}
    if store._max_terminals is not None:
        number_terminals(s)


def restore_plans(s: Session, session: Dict[str, Any], sp: str) -> None:
    """``{sp}.plans``: each record checked (its ``planId`` its key), then added."""
    path = f"{sp}.plans"
    for pid, record in _object(_find(session, "plans", sp), path).items():
        rp = f"{path}.{pid}"
        _object(record, rp)
        _record_id(record, pid, "planId", rp)
        s.plans[pid] = record


def restore_updates(store: Store, s: Session, session: Dict[str, Any], sp: str) -> None:
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
            if type(text(_find(update, "sessionUpdate", up))) is not str:
                raise _fail(f"{up}.sessionUpdate", "a string", update["sessionUpdate"])
            s.updates.append(update)
    counts = read_marker(store, session, sp, SESSION_COUNTS)
    (
        s.dropped_terminals,
        s.dropped_plans,
        s.dropped_permissions,
        s.dropped_updates,
        s.dropped_entities,
        s.dropped_files,
    ) = counts


def restore_entities(s: Session, session: Dict[str, Any], sp: str) -> None:
    """``{sp}.entities`` (optional): ``{target: value}`` for targets of the update table
    (``rules.py``), a target with ids ``{id: entity}``; each entity a record (an object; with ids,
    its id member the key it is filed under) or, for a target a rule replaces by a value, any
    value."""
    if "entities" not in session:
        return
    s.entities = read_entities(session["entities"], f"{sp}.entities")


def read_entities(doc: Any, path: str) -> List[Entities]:
    """The entities ``doc`` at ``path``: ``{target: value}`` for targets of the update table, by
    their index in ``rules.targets()`` (a session's ``entities``, or the agent's own,
    ``state.agent``)."""
    out: List[Entities] = []
    targets = rules.targets()
    for name, value in _object(doc, path).items():
        tp = f"{path}.{name}"
        index = next((i for i, t in enumerate(targets) if t.name == name), None)
        if index is None:
            raise _fail(tp, "a target of the update table", value)
        t = targets[index]
        held = Entities()
        if t.id is None:
            held.one = restore_entity(value, t, tp)
        else:
            for key, entity in _object(value, tp).items():
                ep = f"{tp}.{key}"
                held.by_id[key] = restore_entity(entity, t, ep)
                if not t.whole:
                    _record_id(entity, key, t.id, ep)
        while len(out) <= index:
            out.append(Entities())
        out[index] = held
    return out


def restore_files(s: Session, session: Dict[str, Any], sp: str) -> None:
    """``{sp}.files`` (optional): the answered file requests, each an object whose ``op`` is
    ``"read"`` or ``"write"`` and whose ``path`` is a string (``request.py``)."""
    if "files" not in session:
        return
    path = f"{sp}.files"
    files = session["files"]
    if type(files) is not list:
        raise _fail(path, "an array", files)
    for i, record in enumerate(files):
        fp = f"{path}.{i}"
        _object(record, fp)
        op = text(_find(record, "op", fp))
        if op not in ("read", "write") or type(op) is not str:
            raise _fail(f"{fp}.op", '"read" or "write"', op)
        if type(text(_find(record, "path", fp))) is not str:
            raise _fail(f"{fp}.path", "a string", record["path"])
        s.files.append(record)


def restore_entity(value: Any, t: rules.TargetRule, ep: str) -> Any:
    """One entity of the target ``t`` at ``ep``."""
    if t.whole:
        return value
    return _object(value, ep)


#: The counts of each ``_truncated`` marker (DESIGN 7.8), in document order: (member, the
#: checkpoint member of the bound it follows); a tool call's, a terminal's, a session's.
TOOL_CALL_COUNTS = (("droppedItems", "maxContentItems", "maxContentBytes"),)
TERMINAL_COUNTS = (("droppedBytes", "maxTerminalBytes"),)
SESSION_COUNTS = (
    ("droppedTerminals", "maxTerminals"),
    ("droppedPlans", "maxPlans"),
    ("droppedPermissions", "maxPermissions"),
    ("droppedUpdates", "maxUpdates"),
    ("droppedEntities", "maxEntities"),
    ("droppedFiles", "maxFiles"),
)
# A bound's checkpoint member -> the store's attribute.
_BOUND_ATTRS = {name: attr for name, attr, _, _ in LIMITS}


def read_marker(store: Store, record: Dict[str, Any], rp: str, counts: Tuple[Tuple[str, ...], ...]) -> List[int]:
    """The ``_truncated`` marker of ``record`` at ``rp``, if any: a value for each of ``counts``
    (the tables above), each present one a positive integer whose bound in ``store`` is on, at
    least one, no other member."""
    values = [0] * len(counts)
    if "_truncated" not in record:
        return values
    path = f"{rp}._truncated"
    names = [c[0] for c in counts]
    for name, value in _object(record["_truncated"], path).items():
        member = f"{path}.{name}"
        if name not in names:
            raise ValueError(f'expected "{member}" to be absent, found {_name(value)}')
        i = names.index(name)
        bounds = counts[i][1:]
        if all(getattr(store, _BOUND_ATTRS[bound]) is None for bound in bounds):
            off = " and ".join(f"state.{bound}" for bound in bounds) + (" is null" if len(bounds) == 1 else " are null")
            raise ValueError(f'expected "{member}" to be absent ({off}), found {_name(value)}')
        count = _count(value, 1)
        if count is None:
            raise _fail(member, "a positive integer", value)
        values[i] = count
    if not any(values):
        if len(counts) == 1:
            raise ValueError(f'expected "{path}.{counts[0][0]}" to be present, found none')
        raise _fail(path, "an object with at least one count", record["_truncated"])
    return values


def read_permissions(sid: str, session: Dict[str, Any], sp: str) -> List[List[Any]]:
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
        outcome = text(_find(record, "outcome", rp))
        if type(outcome) is not str or outcome not in OUTCOMES:
            raise _fail(f"{rp}.outcome", "one of " + ", ".join(OUTCOMES), outcome)
        approved = _find(record, "approved", rp)
        if type(approved) is not bool:
            raise _fail(f"{rp}.approved", "a boolean", approved)
        for name in ("toolCallId", "optionId"):
            if name in record and type(text(record[name])) is not str:
                raise _fail(f"{rp}.{name}", "a string", record[name])
        entry = permission_record(
            rid,
            sid,
            text(record.get("toolCallId")),
            options,
            outcome,
            text(record.get("optionId")),
            approved,
            record.get("response", MISSING),
        )
        out.append([sid, entry])
    return out
