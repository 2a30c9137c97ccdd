"""The state engine (DESIGN 7): ``ToolCallStore`` keeps the tool calls, agent-owned terminals,
plans and permission requests of every session as frames are applied; ``Change`` is the light
event that ``apply`` / ``feed`` return.

A frame is parsed once with orjson (re-parsed only when orjson's values would not give back the text
of one of its numbers: ``read.exactly``) and validated by ``message_or_none``; the parsed values
are fresh per frame, so the store keeps them as they are (``tool_call.py``). Queries build fresh
objects on every call (a number kept as its text given as its Python value). -32602 errors are
located in the frame with the scanner on the error path only (``read.py``).

Mirror of ``rust/state/`` module for module and function for function (this file is
``mod.rs``): ``records`` (what is stored), ``rules`` (the update table, read from the schema's
``x-state`` rules), ``read`` (reading frames, -32602 errors, base64),
``tool_call``, ``terminal``, ``plan``, ``permission``, ``entity`` (one function per update kind,
dispatched from ``ToolCallStore._dispatch`` and ``TABLES`` below; ``unknown_update``, here, keeps
the updates no rule handles), ``evict`` (the bounds), ``checkpoint`` (``to_json`` / ``from_json``). The
per-frame loop (framing, parsing, the strict check, batches) is ``_fallback/engine.py``, as it is
``rust/engine.rs``. Differences on purpose: here the store is the Python class itself, with the
queries; Rust's binding (``rust/python/state.rs``) builds the objects of the core's outcomes.

Every public method and property runs under the store's lock (``framing.exclusive``; docs/API.md
"Threads"); ``from_json`` builds a new store and takes none.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from functools import partial
from threading import RLock
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple, cast

from ...errors import DecodeError as PyDecodeError
from .. import engine
from ..error import DecodeError, to_python
from ..framing import (
    DEFAULT_MAX_FRAME_BYTES,
    MAX_FRAME_BYTES,
    Framer,
    check_bool,
    check_max_frame_bytes,
    exclusive,
)
from ..message import Message
from ..scanner import to_bytes
from . import checkpoint, rules
from .entity import entity_update, message_entities
from .evict import (
    DEFAULT_MAX_CONTENT_BYTES,
    DEFAULT_MAX_CONTENT_ITEMS,
    DEFAULT_MAX_ENTITIES,
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_PERMISSIONS,
    DEFAULT_MAX_PLANS,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_TERMINAL_BYTES,
    DEFAULT_MAX_TERMINALS,
    DEFAULT_MAX_TOOL_CALLS,
    DEFAULT_MAX_UPDATES,
    touch_session,
    touch_session_id,
    trim_front,
)
from .permission import cancel_request, cancel_responses, permission_request, response
from .plan import plan, plan_removed, plan_update
from .read import BAD_SID, exactly, text
from .records import Change, Entities, Session, terminal_record, tool_call_record
from .records import fresh as _fresh
from .request import new_requests, new_session, request
from .terminal import terminal_chunk, terminal_update
from .tool_call import content_chunk, tool_call, tool_call_update

__all__ = ["ToolCallStore", "Change", "DEFAULT_MAX_FRAME_BYTES", "MAX_FRAME_BYTES", "STATE_FORMAT"]

STATE_FORMAT = checkpoint.FORMAT

_I64_MIN = -(2**63)
_I64_MAX = 2**63 - 1

#: A function of the update table: ``(store, sessionId, update dict) -> Change or None``.
UpdateFn = Callable[["ToolCallStore", str, Dict[str, Any]], Optional[Change]]

#: The store's functions of the update table (``rules.py`` maps the kinds to them).
_FUNCTIONS: Dict[str, UpdateFn] = {
    "tool_call": tool_call,
    "tool_call_update": tool_call_update,
    "content_chunk": content_chunk,
    "terminal_update": terminal_update,
    "terminal_chunk": terminal_chunk,
    "plan": plan,
    "plan_update": plan_update,
    "plan_removed": plan_removed,
}
_KINDS = rules.get()[0]


def _function(name: rules.Kind, version: int, entities: bool) -> Optional[UpdateFn]:
    """The function of a kind of the table under ``version`` (None: not one the store applies)."""
    if isinstance(name, tuple):
        # A rule applied as written (entity.py): under v2, unless max_entities is 0.
        return partial(entity_update, index=name[1]) if version >= 2 and entities else None
    return _FUNCTIONS.get(name)


def _ignored(name: rules.Kind, version: int) -> bool:
    """Is a kind one the version defines without applying it?"""
    if isinstance(name, tuple):
        return version >= 2 or name[2]  # v2 defines it (applied unless max_entities is 0); v1 too
    return name in (rules.DEFINED, rules.DEFINED_V1 if version == 1 else rules.DEFINED_V2)


def _table(version: int, keeping: bool, entities: bool) -> Dict[Optional[str], Optional[UpdateFn]]:
    """``params.update.sessionUpdate`` -> its function (DESIGN 7.3), from the schema's rules
    (``rules.py``), for the version in force, whether the store keeps unknown updates and applies
    entity rules. A store that keeps unknown updates maps the kinds the version defines and does
    not apply to None (ignored: v1's conversation, commands, modes...), and None
    (``Message._update_kind`` of an update that is not an object with a string ``sessionUpdate``:
    ignored); a kind absent from a table (custom ``_`` kinds, kinds of the other version, kinds no
    version defines; any when not keeping) goes to ``unknown_update`` when keeping, else is
    ignored."""
    table: Dict[Optional[str], Optional[UpdateFn]] = {}
    if keeping:
        table[None] = None
        table.update(dict.fromkeys(kind for kind, name in _KINDS.items() if _ignored(name, version)))
    for kind, name in _KINDS.items():
        f = _function(name, version, entities)
        if f is not None:
            table[kind] = f
    return table


#: The update tables, by (version in force, keeps unknown updates, applies entity rules).
TABLES: Dict[Tuple[int, bool, bool], Dict[Optional[str], Optional[UpdateFn]]] = {
    (version, keeping, entities): _table(version, keeping, entities)
    for version in (1, 2)
    for keeping in (False, True)
    for entities in (False, True)
}


def _check_source(source: Any) -> None:
    if source is not None and (not isinstance(source, str) or source not in ("agent", "client")):
        raise ValueError(f"expected source to be 'agent', 'client' or None, found {source!r}")


def _key(value: Any, name: str) -> str:
    """A session / tool-call / terminal id argument: a str (TypeError otherwise)."""
    if type(value) is not str and not isinstance(value, str):
        raise TypeError(f"expected {name} to be a str, found {type(value).__name__}")
    return value


def _draft_index(draft: Any) -> int:
    """The index in ``DRAFTS`` of a ``draft`` (checked by ``strict_arg`` before; None: 0)."""
    if draft is None:
        return 0
    from ..schema import draft_index

    return draft_index(draft)


def _limit(value: Any, name: str, least: int) -> Optional[int]:
    """A bound argument (``max_updates``, ...): None (no bound) or an int from ``least`` to
    2**63-1; the binding's ``limit_arg``, word for word."""
    if value is not None and (type(value) is not int or not least <= value <= _I64_MAX):
        what = "a non-negative integer" if least == 0 else "a positive integer"
        raise ValueError(f"expected {name} to be {what} or None, found {value!r}")
    return value


def unknown_update(store: ToolCallStore, sid: str, update: Dict[str, Any]) -> Change:
    """An update of a kind no rule handles (and the version in force does not define: ``TABLES``),
    kept as received in its session's ``updates``, the last ``max_updates`` of them."""
    s = store._session(sid)
    s.updates.append(update)
    s.dropped_updates += trim_front(s.updates, store._max_updates)
    return Change(sid, "update", text(update["sessionUpdate"]), "appended", None)


class ToolCallStore:
    """The state of every tool call, agent-owned terminal, plan and permission request of a
    connection, per session, as its frames are applied (DESIGN 7)."""

    __slots__ = (
        "_fixed",
        "_negotiated",
        "_v2",
        "_max_tool_calls",
        "_sessions",
        "_permissions",
        "_pending",
        "_cancel_requests",
        "_tool_call_count",
        "_evicted",
        "_order",
        "_order_base",
        "_order_head",
        "_finished",
        "_created",
        "_framer",
        "_updates",
        "_lock",
        "_busy",
        "_keeping",
        "_unknown",
        "_max_terminal_bytes",
        "_max_content_items",
        "_max_plans",
        "_max_permissions",
        "_max_updates",
        "_max_terminals",
        "_max_entities",
        "_max_files",
        "_max_content_bytes",
        "_max_sessions",
        "_tick",
        "_activity",
        "_evicted_sessions",
        "_requests",
        "_closed_sessions",
        "_agent",
        "_wrap_bare_content",
        "_permission_holes",
        "_strict",
        "_options",
    )

    def __init__(
        self,
        protocol_version: Optional[int] = None,
        *,
        max_tool_calls: Optional[int] = DEFAULT_MAX_TOOL_CALLS,
        max_frame_bytes: Optional[int] = DEFAULT_MAX_FRAME_BYTES,
        max_terminal_bytes: Optional[int] = DEFAULT_MAX_TERMINAL_BYTES,
        max_content_items: Optional[int] = DEFAULT_MAX_CONTENT_ITEMS,
        max_plans: Optional[int] = DEFAULT_MAX_PLANS,
        max_permissions: Optional[int] = DEFAULT_MAX_PERMISSIONS,
        max_updates: Optional[int] = DEFAULT_MAX_UPDATES,
        max_terminals: Optional[int] = DEFAULT_MAX_TERMINALS,
        max_entities: Optional[int] = DEFAULT_MAX_ENTITIES,
        max_files: Optional[int] = DEFAULT_MAX_FILES,
        max_content_bytes: Optional[int] = DEFAULT_MAX_CONTENT_BYTES,
        max_sessions: Optional[int] = DEFAULT_MAX_SESSIONS,
        strict_schema: Any = False,
        unstable: bool = False,
        draft: Optional[str] = None,
        wrap_bare_content: bool = False,
    ) -> None:
        if protocol_version is not None and (type(protocol_version) is not int or protocol_version not in (1, 2)):
            raise ValueError(f"expected protocol_version to be 1, 2 or None, found {protocol_version!r}")
        if max_tool_calls is not None and (type(max_tool_calls) is not int or not 1 <= max_tool_calls <= _I64_MAX):
            raise ValueError(f"expected max_tool_calls to be a positive integer or None, found {max_tool_calls!r}")
        self._max_terminal_bytes = _limit(max_terminal_bytes, "max_terminal_bytes", 0)
        self._max_content_items = _limit(max_content_items, "max_content_items", 0)
        self._max_plans = _limit(max_plans, "max_plans", 1)
        self._max_permissions = _limit(max_permissions, "max_permissions", 1)
        self._max_updates = _limit(max_updates, "max_updates", 0)
        self._max_terminals = _limit(max_terminals, "max_terminals", 1)
        self._max_entities = _limit(max_entities, "max_entities", 0)
        self._max_files = _limit(max_files, "max_files", 0)
        self._max_content_bytes = _limit(max_content_bytes, "max_content_bytes", 0)
        self._max_sessions = _limit(max_sessions, "max_sessions", 1)
        self._wrap_bare_content = bool(wrap_bare_content)
        self._framer = Framer(max_frame_bytes=max_frame_bytes)
        # `strict_schema`: the schema check every frame passes before it is applied.
        self._strict: Any = None
        if (strict_schema is not None and strict_schema is not False) or draft is not None:
            from ..schema.stream import strict_arg

            self._strict = strict_arg(strict_schema, unstable, draft)
        # The options a checkpoint keeps (checkpoint.py, Rust's `checkpoint::Options`): the frame
        # limit, the strict check's setting (False, True, 1 or 2), unstable and the draft's index.
        self._options: Tuple[int, Any, bool, int] = (
            check_max_frame_bytes(max_frame_bytes),
            False if self._strict is None else True if self._strict.fixed is None else self._strict.fixed,
            bool(unstable),
            _draft_index(draft),
        )
        self._fixed: Optional[int] = protocol_version
        self._negotiated: Optional[int] = None
        # The version in force is 2 (cached: tool_call_update's null rule reads it per frame).
        self._v2 = protocol_version == 2
        self._max_tool_calls: Optional[int] = max_tool_calls
        # Sessions in first-seen order; a session stays once it has held anything.
        self._sessions: Dict[str, Session] = {}
        # Every permission request in request order, as [session id, record] (None: a pending
        # request replaced by a later one with its id, or dropped by the bound; _permission_holes
        # of them); pending ones by id -> index.
        self._permissions: List[Optional[List[Any]]] = []
        self._permission_holes = 0
        self._pending: Dict[Any, int] = {}
        # The last MAX_CANCEL_REQUESTS $/cancel_request notifications as (request id, source).
        self._cancel_requests: Deque[Tuple[Any, Any]] = deque()
        self._tool_call_count = 0
        self._evicted = 0
        # Requests whose answer is applied (request.py), by (sent by the agent, id), oldest first;
        # sessions dropped by an answered session/close or session/delete; the agent's own targets
        # of the schema's rules (authStatus), by their index in rules.targets().
        self._requests = new_requests()
        self._closed_sessions = 0
        # With a bound on sessions (evict.py): the number of the frame being applied, the sessions
        # from the least to the most recently active, and the sessions the bound dropped.
        self._tick = 0
        self._activity: Dict[str, Session] = OrderedDict()
        self._evicted_sessions = 0
        self._agent: List[Entities] = []
        # With a bound (evict.py): (session, id) of each tool call by creation number (None:
        # evicted), the creation number of _order[0], the first entry that may be live, the
        # creation numbers of finished tool calls (a heap), and (session, id) -> [creation
        # number, queued].
        self._order: List[Optional[Tuple[str, str]]] = []
        self._order_base = 0
        self._order_head = 0
        self._finished: List[int] = []
        self._created: Dict[Tuple[str, str], List[Any]] = {}
        # The update table of the version in force (TABLES; when keeping, unknown updates go to
        # `_unknown`).
        self._keeping = self._max_updates != 0
        self._unknown: Optional[UpdateFn] = unknown_update if self._keeping else None
        self._updates = TABLES[self._version(), self._keeping, self._max_entities != 0]
        self._lock = RLock()
        self._busy = False

    @exclusive
    def apply(self, frame: Any, *, source: Optional[str] = None) -> Any:
        """Apply one frame (Message, Batch / list, bytes, str, dict): a Change or None for one
        message, a list for a batch; raises DecodeError for a bad frame (the store unchanged)."""
        _check_source(source)
        t = type(frame)
        if t is Message:
            return engine.message(self, frame, source, True, None)
        if t is not bytes:
            if isinstance(frame, PyDecodeError):
                return frame
            if isinstance(frame, list):
                if frame and (type(frame[0]) is Message or isinstance(frame[0], PyDecodeError)):
                    return engine.entries(self, frame, source)
            elif not isinstance(frame, (dict, bytes, str, bytearray, memoryview)):
                raise TypeError(f"expected a Message, bytes, str, a dict or a list, found {type(frame).__name__}")
        return engine.frame(self, frame, source)

    @exclusive
    def feed(self, data: Any, *, changes: bool = True, source: Optional[str] = None) -> List[Any]:
        """Apply every line that ``data`` completes; returns the Changes and DecodeErrors in
        stream order (only the DecodeErrors with ``changes=False``). Framing, limits and line
        numbers are those of a FrameDecoder (DESIGN 6, 7.2); ``source`` as for ``apply``."""
        check_bool(changes)
        _check_source(source)
        if type(data) is not bytes:
            data = to_bytes(data, "feed")
            if type(data) is DecodeError:
                raise to_python(data, None)
        return engine.feed(self, data, source, changes)

    @exclusive
    def finish(self, *, changes: bool = True, source: Optional[str] = None) -> List[Any]:
        """Apply a final line that has no newline; returns its Changes / DecodeErrors (only the
        DecodeErrors with ``changes=False``)."""
        check_bool(changes)
        _check_source(source)
        return engine.finish(self, source, changes)

    @exclusive
    def get(self, session_id: str, tool_call_id: str) -> Optional[Dict[str, Any]]:
        """The tool call as a fresh dict in ACP wire shape, or None."""
        tcid = _key(tool_call_id, "tool_call_id")
        s = self._sessions.get(_key(session_id, "session_id"))
        f = None if s is None else s.tool_calls.get(tcid)
        if f is None:
            return None
        return cast(Dict[str, Any], _fresh(tool_call_record(tcid, f)))

    @exclusive
    def tool_calls(self, session_id: str) -> Dict[str, Any]:
        """``{toolCallId: record}`` of a session, in first-seen order."""
        s = self._sessions.get(_key(session_id, "session_id"))
        if s is None:
            return {}
        return cast(Dict[str, Any], _fresh({tcid: tool_call_record(tcid, f) for tcid, f in s.tool_calls.items()}))

    @exclusive
    def snapshot(self) -> Dict[str, Any]:
        """``{sessionId: {toolCallId: record}}`` of the sessions that hold tool calls."""
        return cast(
            Dict[str, Any],
            _fresh(
                {
                    sid: {tcid: tool_call_record(tcid, f) for tcid, f in s.tool_calls.items()}
                    for sid, s in self._sessions.items()
                    if s.tool_calls
                }
            ),
        )

    @exclusive
    def terminal(self, session_id: str, terminal_id: str) -> Optional[Dict[str, Any]]:
        """The terminal (``output`` as bytes), or None."""
        tid = _key(terminal_id, "terminal_id")
        s = self._sessions.get(_key(session_id, "session_id"))
        term = None if s is None else s.terminals.get(tid)
        if term is None:
            return None
        return cast(Dict[str, Any], _fresh(terminal_record(tid, term, term.kept())))

    @exclusive
    def terminals(self, session_id: str) -> Dict[str, Any]:
        """``{terminalId: record}`` of a session, in first-seen order."""
        s = self._sessions.get(_key(session_id, "session_id"))
        if s is None:
            return {}
        records = {tid: terminal_record(tid, t, t.kept()) for tid, t in s.terminals.items()}
        return cast(Dict[str, Any], _fresh(records))

    @exclusive
    def plans(self, session_id: str) -> Dict[str, Any]:
        """``{planId: record}`` of a session, in first-seen order."""
        s = self._sessions.get(_key(session_id, "session_id"))
        if s is None:
            return {}
        return cast(Dict[str, Any], _fresh(dict(s.plans)))

    @exclusive
    def entities(self, session_id: str) -> Dict[str, Any]:
        """The entities of a session, ``{target: value}`` (DESIGN 7.3)."""
        s = self._sessions.get(_key(session_id, "session_id"))
        return cast(Dict[str, Any], _fresh(checkpoint.entities(s)))

    @exclusive
    def agent_entities(self) -> Dict[str, Any]:
        """The agent's own targets of the schema's rules (``authStatus``): ``{target: value}``."""
        return cast(Dict[str, Any], _fresh(checkpoint.entity_map(self._agent)))

    @exclusive
    def files(self, session_id: str) -> List[Dict[str, Any]]:
        """The answered file requests of a session, oldest first (DESIGN 7.10)."""
        s = self._sessions.get(_key(session_id, "session_id"))
        if s is None:
            return []
        return cast(List[Dict[str, Any]], _fresh(list(s.files)))

    @exclusive
    def replaying(self, session_id: str) -> bool:
        """Is the session's history being replayed (DESIGN 7.10)?"""
        s = self._sessions.get(_key(session_id, "session_id"))
        return s is not None and s.replaying

    @exclusive
    def updates(self, session_id: str) -> List[Dict[str, Any]]:
        """The unknown updates kept for a session, in arrival order (DESIGN 7.3)."""
        s = self._sessions.get(_key(session_id, "session_id"))
        if s is None:
            return []
        return cast(List[Dict[str, Any]], _fresh(list(s.updates)))

    @exclusive
    def permission(self, request_id: Any) -> Optional[Dict[str, Any]]:
        """The latest permission request with this id (``1`` and ``"1"`` differ): the pending one,
        else the last resolved one; None if there is none."""
        t = type(request_id)
        if not (request_id is None or t is str or (t is int and _I64_MIN <= request_id <= _I64_MAX)):
            if isinstance(request_id, str):
                request_id = str.__str__(request_id)
            elif (
                isinstance(request_id, int) and not isinstance(request_id, bool) and _I64_MIN <= request_id <= _I64_MAX
            ):
                request_id = int(request_id)
            else:
                raise TypeError(f"expected a request id (str, int or None), found {t.__name__}")
        index = self._pending.get(request_id)
        if index is not None:
            return cast(Dict[str, Any], _fresh(cast(List[Any], self._permissions[index])[1]))
        id_type = type(request_id)
        for entry in reversed(self._permissions):
            if entry is not None:
                rid = entry[1]["id"]
                if rid == request_id and type(rid) is id_type:
                    return cast(Dict[str, Any], _fresh(entry[1]))
        return None

    @exclusive
    def permissions(self, session_id: str) -> List[Dict[str, Any]]:
        """The permission requests of a session (pending and resolved), in request order."""
        return self._permission_list(session_id, False)

    @exclusive
    def pending_permissions(self, session_id: str) -> List[Dict[str, Any]]:
        """The pending permission requests of a session, in request order."""
        return self._permission_list(session_id, True)

    @exclusive
    def cancel_requests(self) -> List[Dict[str, Any]]:
        """The ``$/cancel_request`` notifications seen (the last 1000), oldest first:
        ``{"requestId": id, "source": "agent" | "client" | None}``."""
        return checkpoint.cancel_request_list(self)

    @exclusive
    def cancel_responses(self, session_id: str) -> List[bytes]:
        """For each pending permission request of a session (request order), the frame a client
        must answer with after ``session/cancel``."""
        return cancel_responses(self, _key(session_id, "session_id"))

    @exclusive
    def state(self) -> Dict[str, Any]:
        """The whole store as a JSON-compatible dict (DESIGN 7.8); terminal output as base64."""
        return cast(Dict[str, Any], _fresh(checkpoint.state(self)))

    @exclusive
    def to_json(self) -> bytes:
        """``dumps(state())``: a checkpoint for ``from_json``."""
        return checkpoint.to_json(self)

    @classmethod
    def from_json(cls, data: Any) -> ToolCallStore:
        """Rebuild a store from ``to_json()`` output (bytes or str). A document of another shape
        raises ValueError naming the path. The restored store starts a fresh decoder; its
        eviction order is the checkpoint's order."""
        return checkpoint.from_json(cls, data)

    @property
    @exclusive
    def protocol_version(self) -> int:
        """The version in force: the fixed one, else the negotiated one, else 1."""
        return self._version()

    @property
    @exclusive
    def negotiated_version(self) -> Optional[int]:
        """The version learned from an ``initialize`` response, or None."""
        return self._negotiated

    @property
    @exclusive
    def max_tool_calls(self) -> Optional[int]:
        return self._max_tool_calls

    @property
    @exclusive
    def max_terminal_bytes(self) -> Optional[int]:
        """Output bytes kept per terminal (the last ones; None: no bound)."""
        return self._max_terminal_bytes

    @property
    @exclusive
    def max_content_items(self) -> Optional[int]:
        """Content items kept per tool call (the last ones; None: no bound)."""
        return self._max_content_items

    @property
    @exclusive
    def max_plans(self) -> Optional[int]:
        """Plans kept per session (None: no bound)."""
        return self._max_plans

    @property
    @exclusive
    def max_permissions(self) -> Optional[int]:
        """Permission records kept per session (pending ones always; None: no bound)."""
        return self._max_permissions

    @property
    @exclusive
    def max_updates(self) -> Optional[int]:
        """Unknown updates kept per session (the last ones; 0: none; None: no bound)."""
        return self._max_updates

    @property
    @exclusive
    def max_terminals(self) -> Optional[int]:
        """Terminals kept per session (the oldest exited ones dropped first; None: no bound)."""
        return self._max_terminals

    @property
    @exclusive
    def wrap_bare_content(self) -> bool:
        """Are bare content blocks in a tool call's content wrapped (``{"type": "content", ...}``)?"""
        return self._wrap_bare_content

    @property
    @exclusive
    def max_entities(self) -> Optional[int]:
        """Entities kept per target of a session (the oldest dropped first; None: no bound)."""
        return self._max_entities

    @property
    @exclusive
    def strict_schema(self) -> Any:
        """``strict_schema`` as given: False (off), True (follows the negotiation), 1 or 2."""
        if self._strict is None:
            return False
        from ..schema.stream import strict_setting

        return strict_setting(self._strict)

    @property
    @exclusive
    def max_files(self) -> Optional[int]:
        """Answered file requests kept per session (the last ones; 0: not tracked; None: no bound)."""
        return self._max_files

    @property
    @exclusive
    def max_content_bytes(self) -> Optional[int]:
        """Bytes of content kept per tool call (its items' JSON text, the newest item always;
        None: no bound)."""
        return self._max_content_bytes

    @property
    @exclusive
    def max_sessions(self) -> Optional[int]:
        """Sessions kept in the store (the least recently active dropped first; None: no bound)."""
        return self._max_sessions

    @property
    @exclusive
    def evicted(self) -> int:
        """Tool calls dropped by the ``max_tool_calls`` bound."""
        return self._evicted

    @property
    @exclusive
    def closed_sessions(self) -> int:
        """Sessions dropped by an answered ``session/close`` or ``session/delete``."""
        return self._closed_sessions

    @property
    @exclusive
    def evicted_sessions(self) -> int:
        """Sessions dropped by the ``max_sessions`` bound."""
        return self._evicted_sessions

    @property
    @exclusive
    def line(self) -> int:
        """Lines completed by ``feed`` / ``finish`` so far."""
        return self._framer.line

    @exclusive
    def __len__(self) -> int:
        return self._tool_call_count

    @exclusive
    def __repr__(self) -> str:
        return f"ToolCallStore(protocol_version={self._version()}, tool_calls={self._tool_call_count})"

    # -- helpers (Rust: the core Store's methods and the binding's StoreState) ---------------

    def _version(self) -> int:
        if self._fixed is not None:
            return self._fixed
        if self._negotiated is not None:
            return self._negotiated
        return 1

    def _set_negotiated(self, version: Optional[int]) -> None:
        """Set the negotiated version; what depends on the version in force follows."""
        self._negotiated = version
        self._v2 = self._version() == 2
        self._updates = TABLES[self._version(), self._keeping, self._max_entities != 0]

    def _session(self, sid: str) -> Session:
        """The session ``sid``, created if needed."""
        s = self._sessions.get(sid)
        if s is None:
            return new_session(self, sid)
        if self._max_sessions is not None:
            touch_session(self, sid, s)
        return s

    def _dispatch(self, value: Any, m: Any, source: Any, frame: Optional[bytes]) -> Optional[Change]:
        """Apply one valid message (Rust: ``Store::apply``) whose parsed object is ``value``.
        ``frame``: its bytes when ``value`` is orjson's parse (re-parsed exactly when needed:
        ``read.exactly``), None when already exact."""
        self._tick += 1
        kind = m._kind
        if kind == "notification":
            method = m._method
            if method == "session/update":
                # The update table (Rust: `session_update`; inlined in `engine.feed`).
                update_fn = self._updates.get(m._update_kind, self._unknown)
                if update_fn is None:
                    return None
                sid = m._session_id
                if sid is None:
                    raise BAD_SID
                if frame is not None:
                    value = exactly(frame, value)
                return update_fn(self, sid, value["params"]["update"])
            if method == "session/cancel":
                if type(value.get("params")) is not dict:
                    return None
                sid = m._session_id
                if sid is None:
                    raise BAD_SID
                if self._max_sessions is not None:
                    touch_session_id(self, sid)
                return Change(sid, "session", None, "cancelled", None)
            if method == "$/cancel_request":
                params = value.get("params")
                if type(params) is not dict:
                    return None
                if frame is not None:
                    value = exactly(frame, value)
                return cancel_request(self, value["params"], source)
            return self._notification(value, method, frame)
        if kind == "request":
            if m._method == "session/request_permission":
                if type(value.get("params")) is not dict:
                    return None
                if frame is not None:
                    value = exactly(frame, value)
                return permission_request(self, value["params"], m._id)
            return request(self, value, m._method, m._id, source, frame)
        return response(self, value, m, source, frame)

    def _notification(self, value: Any, method: Optional[str], frame: Optional[bytes]) -> Optional[Change]:
        """Another notification: the rules the schema gives it, under v2 (``auth/status_update``)."""
        if not self._v2 or self._max_entities == 0 or method is None:
            return None
        rules_ = rules.notification_rules(method)
        if not rules_ or type(value.get("params")) is not dict:
            return None
        if frame is not None:
            value = exactly(frame, value)
        return message_entities(self, rules_, value["params"], None)

    def _permission_list(self, session_id: Any, pending: bool) -> List[Dict[str, Any]]:
        sid = _key(session_id, "session_id")
        return cast(
            List[Dict[str, Any]],
            _fresh(
                [
                    e[1]
                    for e in self._permissions
                    if e is not None and e[0] == sid and (not pending or e[1]["outcome"] == "pending")
                ]
            ),
        )
