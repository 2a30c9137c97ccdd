"""Checkpoints (DESIGN 7.8): ``to_json`` writes the whole store and its options as an
``acp-fast-state/2`` document, ``dumps(state())`` but for numbers and string values, which keep
their text as received (``read.Exact``); ``from_json`` checks a document (``/2``, or the older
``/1``) and rebuilds the store with its options, so that it behaves as the original (its
eviction order is the creation order, ``toolCallOrder``).

Moved to ``restore.py`` (``rust/state/restore.rs`` in Rust): the helpers that check the document's
values (``_object``, ``_find``, ``_fail``, ...: Rust's ``Reader``) and the readers of a session's
records (``restore_tool_calls``, ``restore_terminals``, ``restore_plans``, ``read_permissions``,
``restore_updates``, the markers' ``read_marker``); ``from_json`` stays here.

Mirror of ``rust/state/checkpoint.rs``. Differences on purpose: here ``state`` builds the document
as a dict (shared with the store; ``ToolCallStore.state`` copies it) and ``to_json`` is ``dumps`` of
it, and ``from_json`` checks the dict that ``loads`` gives; Rust writes the document straight from
the records and reads it straight from its bytes. The checks run in the same order in both, so a
bad document gets the same error text.
"""

from __future__ import annotations

import binascii
from itertools import pairwise
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, TypeVar, cast

import orjson

from ...errors import DecodeError as PyDecodeError
from ..encoder import write
from ..error import DecodeError, to_python
from ..framing import DEFAULT_MAX_FRAME_BYTES, MAX_FRAME_BYTES
from ..scanner import MAX_DEPTH as _FRAME_DEPTH
from ..scanner import loads, parse_document, to_bytes
from ..schema import DRAFTS
from . import rules
from .evict import LIMITS, activity_order, compact, drop_permission, order_sessions, push_permission
from .permission import MAX_CANCEL_REQUESTS
from .read import exactly, plain, text
from .records import (
    MISSING,
    Entities,
    Session,
    Store,
    exact_text,
    fresh,
    terminal_record,
    tool_call_record,
    truncated,
)
from .restore import (
    _count,
    _fail,
    _find,
    _object,
    _version,
    read_entities,
    read_permissions,
    restore_entities,
    restore_files,
    restore_plans,
    restore_terminals,
    restore_tool_calls,
    restore_updates,
)

#: The store class ``from_json`` builds (``ToolCallStore``).
S = TypeVar("S", bound=Store)

__all__ = ["FORMAT", "FORMAT_V1", "MAX_DEPTH", "from_json", "state", "to_json"]

#: The ``format`` of a checkpoint (``/2``: the options, ``toolCallOrder``, strings as received).
FORMAT = "acp-fast-state/2"

#: The format of the checkpoints before ``FORMAT``, still read: it lacks what ``/2`` added, which
#: a restore then takes as the defaults (options), session order (``toolCallOrder``) or what the
#: document holds (strings written in ``dumps``' form).
FORMAT_V1 = "acp-fast-state/1"

#: Deepest nesting of a checkpoint: the one limit (``scanner.MAX_DEPTH``, what a frame may nest)
#: and the levels a checkpoint adds around what a frame held: a record's members sit 5 levels
#: deep (state, sessions, session, its map or list, the record), a value in a frame at least 1
#: (``result``, ``error``). The values inside are never deeper than a frame could hold them.
MAX_DEPTH = _FRAME_DEPTH + 4

# `loads` gives any JSON value (typed here for the calls below).
_loads: Callable[[Any], Any] = loads
_orjson_dumps = orjson.dumps
# `read.Exact` strings go to `exact_text` (other subclasses never reach a document).
_PASSTHROUGH = orjson.OPT_PASSTHROUGH_SUBCLASS
_I64_MAX = 2**63 - 1


_b2a = binascii.b2a_base64
_a2b = binascii.a2b_base64

# ---------------------------------------------------------------------------------------------
# Writing


def to_json(store: Store) -> bytes:
    """The checkpoint document of ``store``: ``dumps(state())``, numbers as received, with a
    checkpoint's nesting limit."""
    doc = state(store)
    try:
        return _orjson_dumps(doc, default=exact_text, option=_PASSTHROUGH)
    except TypeError:  # nested deeper than orjson writes: the encoder, with a checkpoint's limit
        return write(doc, MAX_DEPTH)


# ---------------------------------------------------------------------------------------------
# Reading


def state(store: Store) -> Dict[str, Any]:
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
        if any(not e.is_empty() for e in s.entities):
            sd["entities"] = entities(s)
        if s.files:
            sd["files"] = list(s.files)
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
    write_options(doc, store)
    doc["evicted"] = store._evicted
    if store._closed_sessions:  # present only when a session was closed
        doc["closedSessions"] = store._closed_sessions
    if store._evicted_sessions:  # present only when the bound dropped a session
        doc["evictedSessions"] = store._evicted_sessions
    if any(not e.is_empty() for e in store._agent):  # present only when the agent's targets hold one
        doc["agent"] = entity_map(store._agent)
    doc["sessions"] = sessions
    doc["permissionOrder"] = [e[0] for e in store._permissions if e is not None]
    # With a bound on tool calls, the session of each tool call in creation order across
    # sessions (the order the bound evicts in: evict.py), when it is not the document's order.
    if store._max_tool_calls is not None:
        order = [key[0] for key in store._order[store._order_head :] if key is not None]
        if not _creation_is_document_order(store, order):
            doc["toolCallOrder"] = order
    # With a bound on sessions, the sessions from the least to the most recently active (the order
    # the bound drops them in: evict.py), when it is not the document's order.
    if store._max_sessions is not None:
        active = activity_order(store)
        if active != list(store._sessions):
            doc["sessionOrder"] = active
    if store._cancel_requests:  # present only when the store has seen a $/cancel_request
        doc["cancelRequests"] = cancel_request_list(store)
    return doc


def _creation_is_document_order(store: Store, order: List[str]) -> bool:
    """Are the tool calls created in the document's order: session by session, each session's in
    its dict's order (its creation order)?"""
    place = {sid: i for i, sid in enumerate(store._sessions)}
    places = [place[sid] for sid in order]
    return all(a <= b for a, b in pairwise(places))


def write_options(doc: Dict[str, Any], store: Store) -> None:
    """The options that are not their default, in document order: ``maxFrameBytes``,
    ``strictSchema`` (``true``: follow the negotiation, or the fixed version) and with it
    ``unstable`` and ``draft``, ``wrapBareContent``."""
    max_frame_bytes, strict, unstable, draft = store._options
    if max_frame_bytes != DEFAULT_MAX_FRAME_BYTES:
        doc["maxFrameBytes"] = max_frame_bytes
    if strict is not False:
        doc["strictSchema"] = strict
        if unstable:
            doc["unstable"] = True
        if draft != 0:
            doc["draft"] = DRAFTS[draft][0]
    if store._wrap_bare_content:
        doc["wrapBareContent"] = True


def entities(s: Optional[Session]) -> Dict[str, Any]:
    """The entities of a session (``entity.py``): ``{target: value}`` for each target it holds,
    in table order, where a target with ids holds ``{id: entity}`` (Rust: document.rs)."""
    return {} if s is None else entity_map(s.entities)


def entity_map(held: List[Entities]) -> Dict[str, Any]:
    """``{target: value}`` for each target ``held`` holds (a session's entities, or the agent's
    own: ``store._agent``), in table order."""
    out: Dict[str, Any] = {}
    for t, e in zip(rules.targets(), held):
        if not e.is_empty():
            out[t.name] = e.one if e.one is not None else dict(e.by_id)
    return out


def cancel_request_list(store: Store) -> List[Dict[str, Any]]:
    """``state.cancelRequests``: ``[{"requestId": id, "source": "agent" | "client" | None}]``."""
    return [{"requestId": rid, "source": source} for rid, source in store._cancel_requests]


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


def from_json(cls: Callable[..., S], data: Any) -> S:
    """Check the document ``data`` (bytes or str) and rebuild the store it describes. Checks and
    messages: DESIGN 7.8 (in Rust's order, so both report the same first problem)."""
    value = _load(data)  # its errors for what is not JSON, with a checkpoint's nesting limit
    doc = _object(exactly(cast(bytes, to_bytes(data, "from_json")), value), "state")
    fmt = text(_find(doc, "format", "state"))
    if fmt not in (FORMAT, FORMAT_V1) or type(fmt) is not str:
        raise ValueError(f'expected "state.format" to be {FORMAT!r} or {FORMAT_V1!r}, found {fresh(fmt)!r}')
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
    options = read_options(doc)
    evicted = _count(_find(doc, "evicted", "state"), 0)
    if evicted is None:
        raise _fail("state.evicted", "a non-negative integer", doc["evicted"])
    closed: Optional[int] = 0
    if "closedSessions" in doc:
        closed = _count(doc["closedSessions"], 0)
        if closed is None:
            raise _fail("state.closedSessions", "a non-negative integer", doc["closedSessions"])
    evicted_sessions: Optional[int] = 0
    if "evictedSessions" in doc:
        evicted_sessions = _count(doc["evictedSessions"], 0)
        if evicted_sessions is None:
            raise _fail("state.evictedSessions", "a non-negative integer", doc["evictedSessions"])
    agent = read_entities(doc["agent"], "state.agent") if "agent" in doc else []
    sessions = _object(_find(doc, "sessions", "state"), "state.sessions")
    max_frame_bytes, strict, unstable, draft, wrap = options
    store = cls(
        fixed,
        max_tool_calls=limit,
        max_frame_bytes=max_frame_bytes,
        strict_schema=strict,
        unstable=unstable,
        draft=draft,
        wrap_bare_content=wrap,
        **bounds,
    )
    store._set_negotiated(negotiated)
    store._evicted = evicted
    store._closed_sessions = closed or 0
    store._evicted_sessions = evicted_sessions or 0
    store._agent = agent
    records: Dict[str, List[List[Any]]] = {}
    for sid, session in sessions.items():
        sp = f"state.sessions.{sid}"
        _object(session, sp)
        s = store._sessions[sid] = Session()
        restore_tool_calls(store, sid, s, session, sp)
        restore_terminals(store, s, session, sp)
        restore_plans(s, session, sp)
        records[sid] = read_permissions(sid, session, sp)
        restore_updates(store, s, session, sp)
        restore_entities(s, session, sp)
        restore_files(s, session, sp)
    # The session of each permission record in request order across sessions (optional:
    # without it, session order), naming each session as many times as it has records.
    counts = {sid: len(entries) for sid, entries in records.items()}
    if "permissionOrder" not in doc:
        order = [sid for sid, n in counts.items() for _ in range(n)]
    else:
        order = doc["permissionOrder"]
        if type(order) is not list:
            raise _fail("state.permissionOrder", "an array", order)
        order = [text(sid) for sid in order]
        seen: Dict[str, int] = {}
        for i, sid in enumerate(order):
            if type(sid) is not str or sid not in sessions:
                raise _fail(f"state.permissionOrder.{i}", "the id of a session in state.sessions", sid)
            seen[sid] = seen.get(sid, 0) + 1
            if seen[sid] > counts[sid]:
                raise _order_error(_PERMISSION_ORDER, sid, counts[sid], None)
        for sid, n in counts.items():
            if seen.get(sid, 0) != n:
                raise _order_error(_PERMISSION_ORDER, sid, n, seen.get(sid, 0))
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
    if "toolCallOrder" in doc:
        _read_tool_call_order(store, doc["toolCallOrder"])
    active = list(store._sessions)
    if "sessionOrder" in doc:
        active = _read_session_order(store, doc["sessionOrder"])
    if store._max_sessions is not None:
        order_sessions(store, active)
    if store._max_tool_calls is not None:
        compact(store)
    return store


def read_options(doc: Dict[str, Any]) -> Tuple[int, Any, bool, Optional[str], bool]:
    """The options (``write_options``), checked in document order; absent ones are the defaults:
    (max_frame_bytes, strict_schema, unstable, draft, wrap_bare_content)."""
    max_frame_bytes = DEFAULT_MAX_FRAME_BYTES
    if "maxFrameBytes" in doc:
        n = _count(doc["maxFrameBytes"], 1)
        if n is None or n > MAX_FRAME_BYTES:
            raise _fail("state.maxFrameBytes", f"an integer from 1 to {MAX_FRAME_BYTES}", doc["maxFrameBytes"])
        max_frame_bytes = n
    strict: Any = False
    if "strictSchema" in doc:
        strict = plain(doc["strictSchema"])
        if strict is not True and not (type(strict) is int and strict in (1, 2)):
            raise _fail("state.strictSchema", "true, 1 or 2", doc["strictSchema"])
    unstable = _flag(doc, "unstable")
    draft: Optional[str] = None
    if "draft" in doc:
        draft = text(doc["draft"])
        if type(draft) is not str or draft not in [name for name, _ in DRAFTS]:
            raise _fail("state.draft", " or ".join(f"'{name}'" for name, _ in DRAFTS), draft)
    return max_frame_bytes, strict, unstable, draft, _flag(doc, "wrapBareContent")


def _flag(doc: Dict[str, Any], name: str) -> bool:
    """The boolean member ``name`` (absent: False)."""
    value = doc.get(name, False)
    if type(value) is not bool:
        raise _fail(f"state.{name}", "a boolean", value)
    return value


_PERMISSION_ORDER = ("permissionOrder", "permission records")
_TOOL_CALL_ORDER = ("toolCallOrder", "tool calls")


def _order_error(order: Tuple[str, str], sid: str, expected: int, found: Optional[int]) -> ValueError:
    member, what = order
    shown = "more" if found is None else str(found)
    return ValueError(f'expected "state.{member}" to name {sid!r} {expected} times (its {what}), found {shown}')


def _read_tool_call_order(store: Store, order: Any) -> None:
    """``state.toolCallOrder`` (optional; without it, session order): the session of each tool
    call in creation order across sessions, naming each session as many times as it has tool
    calls. With a bound on tool calls it orders ``store._order`` (filled in session order by
    ``restore_tool_calls``); without one it is checked only."""
    if type(order) is not list:
        raise _fail("state.toolCallOrder", "an array", order)
    order = [text(sid) for sid in order]
    sessions = store._sessions
    seen: Dict[str, int] = {}
    for i, sid in enumerate(order):
        if type(sid) is not str or sid not in sessions:
            raise _fail(f"state.toolCallOrder.{i}", "the id of a session in state.sessions", sid)
        seen[sid] = n = seen.get(sid, 0) + 1
        if n > len(sessions[sid].tool_calls):
            raise _order_error(_TOOL_CALL_ORDER, sid, len(sessions[sid].tool_calls), None)
    for sid, s in sessions.items():
        if seen.get(sid, 0) != len(s.tool_calls):
            raise _order_error(_TOOL_CALL_ORDER, sid, len(s.tool_calls), seen.get(sid, 0))
    if store._max_tool_calls is not None:
        # `_order` holds each session's tool calls in turn: take them in the document's order.
        queues: Dict[str, Iterator[str]] = {sid: iter(s.tool_calls) for sid, s in sessions.items()}
        store._order = [(sid, next(queues[sid])) for sid in order]


def _read_session_order(store: Store, order: Any) -> List[str]:
    """``state.sessionOrder`` (optional; without it, session order): every session of the document
    once, from the least to the most recently active. With a bound on sessions it is the order the
    bound drops them in; without one it is checked only."""
    if type(order) is not list:
        raise _fail("state.sessionOrder", "an array", order)
    sessions = store._sessions
    seen: List[str] = []
    named = set()
    for i, sid in enumerate(order):
        sid = text(sid)
        if type(sid) is not str or sid not in sessions or sid in named:
            raise _fail(f"state.sessionOrder.{i}", "the id of a session in state.sessions not named before", sid)
        named.add(sid)
        seen.append(sid)
    if len(seen) != len(sessions):
        raise _fail("state.sessionOrder", "an array naming every session of state.sessions", order)
    return seen


def _read_cancel_requests(store: Store, items: Any) -> None:
    """``state.cancelRequests`` (optional): ``[{"requestId": id, "source": "agent" | "client" | null}]``."""
    if type(items) is not list:
        raise _fail("state.cancelRequests", "an array", items)
    for i, item in enumerate(items):
        rp = f"state.cancelRequests.{i}"
        _object(item, rp)
        rid = plain(_find(item, "requestId", rp))
        if rid is not None and type(rid) is not str and not (type(rid) is int and -(2**63) <= rid < 2**63):
            raise _fail(f"{rp}.requestId", "a string, an integer or null", rid)
        source = text(_find(item, "source", rp))
        if source not in (None, "agent", "client"):
            raise _fail(f"{rp}.source", '"agent", "client" or null', source)
        if len(store._cancel_requests) == MAX_CANCEL_REQUESTS:
            store._cancel_requests.popleft()
        store._cancel_requests.append((rid, source))
