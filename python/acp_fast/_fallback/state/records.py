"""What the store holds: tool calls, terminals, permission requests and sessions (DESIGN 7.3 -
7.5, 7.8), and the ``Change`` a frame yields (7.9); the materialized records that queries and
checkpoints give.

Mirror of ``rust/state/records.rs``. Differences on purpose: here a tool call is the dict of its
set fields (parsed values, never null, toolCallId apart), a terminal a dict plus its bytes, and a
permission record ``[session id, record dict]``, the dict already in materialized key order; Rust
keeps the JSON text of each value in fixed slots (and an ordered map where Python has dicts:
``OrderedMap``, moved out of ``records.rs`` into ``rust/state/ordered_map.rs``, Rust only). The
materialized records are dicts here, built once for the queries and ``checkpoint.state`` (which
``to_json`` dumps); Rust writes each once to a sink (``rust/state/document.rs``) that gives the
JSON bytes or, in the binding, the dicts. A number whose text its Python value would not give
back is stored as an ``orjson.Fragment`` of its text (``read.exact``), so that a checkpoint keeps
it.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Any, Deque, Dict, Iterator, List, Optional, Protocol, Tuple

import orjson

from .read import Exact, number, text

__all__ = [
    "BYTES",
    "MISSING",
    "exact_text",
    "OUTCOMES",
    "Change",
    "Session",
    "Store",
    "Terminal",
    "finished",
    "fresh",
    "held_len",
    "permission_record",
    "terminal_record",
    "tool_call_record",
    "truncated",
]

#: "Absent" where None is a value (a JSON null).
MISSING: Any = object()

_Fragment = orjson.Fragment
_orjson_dumps = orjson.dumps
_PASSTHROUGH = orjson.OPT_PASSTHROUGH_SUBCLASS

# ---------------------------------------------------------------------------------------------
# Tool calls

# Tool-call fields with a fixed place in a materialized record (after toolCallId), DESIGN 7.3, and
# `_truncated`: the count of content items the bound dropped (7.8), written last as the marker.
#: The key of a tool call's dict that holds, with a bound on content bytes, the bytes of its
#: content items (``held_len`` of each; Rust: ``ToolCall::content_bytes``): not a string, so no
#: update sets it, and no member of the record.
BYTES: Any = ("content bytes",)

_TOOL_CALL_FIELDS = frozenset(
    ("title", "kind", "status", "content", "locations", "rawInput", "rawOutput", "name", "_meta", "_truncated", BYTES)
)
_FINISHED = frozenset(("completed", "failed", "cancelled"))


def finished(fields: Dict[str, Any]) -> bool:
    """Is the tool call's status "completed", "failed" or "cancelled" (evicted first)?"""
    status = text(fields.get("status"))
    return type(status) is str and status in _FINISHED


# ---------------------------------------------------------------------------------------------
# Terminals

# Terminal fields with a fixed place (after terminalId; `output` is the byte buffer), DESIGN 7.4.
_TERMINAL_FIELDS = frozenset(("command", "cwd", "outputMeta", "exitStatus", "_meta"))


class Terminal:
    """A terminal: ``output`` its bytes from ``start`` on (``kept()``; those before were dropped by
    the bound, ``dropped`` of them since the output was last replaced), ``fields`` the rest
    (command, cwd, outputMeta, exitStatus, _meta and unknown fields, never null)."""

    __slots__ = ("fields", "output", "start", "dropped", "seq", "queued")

    def __init__(self) -> None:
        self.fields: Dict[str, Any] = {}
        self.output = bytearray()
        self.start = 0
        self.dropped = 0
        # With a bound: the creation number in its session, and whether it is in the session's
        # heap of exited terminals (evict.py).
        self.seq = 0
        self.queued = False

    def kept(self) -> bytes:
        """The output bytes kept (Rust: ``Terminal::output``)."""
        return bytes(memoryview(self.output)[self.start :])

    def set_output(self, data: bytes) -> None:
        """Replace the output (a ``terminal_update`` snapshot, or null: none)."""
        self.output = bytearray(data)
        self.start = 0
        self.dropped = 0


# ---------------------------------------------------------------------------------------------
# Permission requests

#: How a permission request can end, sorted (as checkpoint errors list them).
OUTCOMES = ("cancelled", "error", "invalid", "pending", "selected", "unknown")

# ---------------------------------------------------------------------------------------------
# Sessions


class Session:
    """What one session holds, each in first-seen order: tool calls (id -> fields dict),
    terminals (id -> Terminal) and plans (id -> record), both OrderedDicts, whose first key costs
    O(1) where a dict's costs its deleted prefix: their bounds drop the oldest, and unknown updates
    (DESIGN 7.3, in arrival order); ``dropped_*``: what the bounds dropped (7.8, its
    ``_truncated`` marker). Permission requests are kept by the store (one list in request order
    across sessions)."""

    __slots__ = (
        "tool_calls",
        "terminals",
        "plans",
        "updates",
        "permission_count",
        "resolved",
        "waiting",
        "terminal_seq",
        "exited",
        "dropped_terminals",
        "dropped_plans",
        "dropped_permissions",
        "entities",
        "dropped_updates",
        "dropped_entities",
        "files",
        "replaying",
        "dropped_files",
        "active",
    )

    def __init__(self) -> None:
        self.tool_calls: Dict[str, Dict[str, Any]] = {}
        self.terminals: Dict[str, Terminal] = OrderedDict()
        self.plans: Dict[str, Any] = OrderedDict()
        self.updates: Deque[Any] = deque()
        # permission records of this session held by the store (for its bound), and min-heaps of
        # the indices (in the store's list) of its resolved ones and of its pending ones (entries of
        # records resolved or dropped since are stale): the bound drops the oldest resolved first,
        # then the oldest pending
        self.permission_count = 0
        self.resolved: List[int] = []
        self.waiting: List[int] = []
        # with a bound on terminals (evict.py): the creation number of the next terminal, and a
        # min-heap of (creation number, id) of the terminals found exited
        self.terminal_seq = 0
        self.exited: List[Tuple[int, str]] = []
        self.dropped_terminals = 0
        self.dropped_plans = 0
        self.dropped_permissions = 0
        # the targets of the rules applied as written (entity.py), by their index in
        # rules.targets() (grown as needed)
        self.entities: List[Entities] = []
        self.dropped_updates = 0
        self.dropped_entities = 0
        # the answered file requests (request.py), each a record dict, oldest first
        self.files: Deque[Dict[str, Any]] = deque()
        # between a session/load (or a replaying session/resume) and its answer: what arrives is
        # the session's history (request.py)
        self.replaying = False
        self.dropped_files = 0
        # with a bound on sessions (evict.py): the frame that last touched the session
        # (`store._tick`); its place in the activity order is the store's `_activity`
        self.active = 0

    def dropped(self) -> List[Tuple[str, int]]:
        """The marker's members: (name, count), in materialized order (Rust: ``Dropped::counts``)."""
        return [
            ("droppedTerminals", self.dropped_terminals),
            ("droppedPlans", self.dropped_plans),
            ("droppedPermissions", self.dropped_permissions),
            ("droppedUpdates", self.dropped_updates),
            ("droppedEntities", self.dropped_entities),
            ("droppedFiles", self.dropped_files),
        ]


class Entities:
    """What a session holds of one target of the rules applied as written (``entity.py``): its
    value when its rules name no id, else its entities by id, in first-seen order (an
    OrderedDict: the bound drops the oldest)."""

    __slots__ = ("by_id", "one")

    def __init__(self) -> None:
        self.one: Any = None
        self.by_id: Dict[str, Any] = OrderedDict()

    def is_empty(self) -> bool:
        return self.one is None and not self.by_id


class Store(Protocol):
    """The store as the rule modules (``tool_call``, ``terminal``, ``plan``, ``permission``,
    ``evict``, ``restore``, ``checkpoint``) read and write it: the fields of ``ToolCallStore`` that
    they use, which Rust keeps in ``Store`` (``mod.rs``). Named here so that they take the store
    without importing the package that imports them (no import cycle, not even for typing)."""

    _fixed: Optional[int]
    _negotiated: Optional[int]
    _v2: bool
    _max_tool_calls: Optional[int]
    _max_terminal_bytes: Optional[int]
    _max_content_items: Optional[int]
    _max_plans: Optional[int]
    _max_permissions: Optional[int]
    _max_terminals: Optional[int]
    _max_entities: Optional[int]
    _max_files: Optional[int]
    _max_content_bytes: Optional[int]
    _max_sessions: Optional[int]
    _tick: int
    _activity: Dict[str, Session]
    _evicted_sessions: int
    _wrap_bare_content: bool
    _options: Tuple[int, Any, bool, int]
    _sessions: Dict[str, Session]
    _permissions: List[Optional[List[Any]]]
    _permission_holes: int
    _pending: Dict[Any, int]
    _cancel_requests: Deque[Tuple[Any, Any]]
    _tool_call_count: int
    _evicted: int
    _order: List[Optional[Tuple[str, str]]]
    _order_base: int
    _order_head: int
    _finished: List[int]
    _created: Dict[Tuple[str, str], List[Any]]
    _requests: Dict[Tuple[bool, Any], Any]
    _closed_sessions: int
    _agent: List[Entities]

    def _session(self, sid: str) -> Session: ...

    def _set_negotiated(self, version: Optional[int]) -> None: ...


# ---------------------------------------------------------------------------------------------
# Changes


class Change:
    """What one frame changed: ``(session_id, target, id, action, tool_call_id)``.

    ``target`` is ``"tool_call"``, ``"terminal"``, ``"plan"``, ``"permission"``, ``"session"``,
    ``"protocol"``, ``"request"``, ``"update"``, ``"file"`` or an entity target; ``id`` the tool
    call / terminal / plan / entity id, the request id, a file's path, the negotiated version, an
    unknown update's kind, or None. Immutable, hashable, equal when all five are equal;
    ``tuple(change)`` gives the five.
    """

    # Private slots behind read-only properties (as Message): setting any attribute raises
    # AttributeError, and construction is plain slot stores.
    __slots__ = ("_s", "_t", "_i", "_a", "_c")

    session_id = property(lambda self: self._s, doc="The session id (None for a protocol change).")
    target = property(
        lambda self: self._t,
        doc='"tool_call", "terminal", "plan", "permission", "session", "protocol", "request", "update", '
        '"file" or an entity target.',
    )
    id = property(
        lambda self: self._i,
        doc="Tool call / terminal / plan / entity id, request id, file path, version, update kind, or None.",
    )
    action = property(lambda self: self._a, doc='What happened: "created", "updated", "appended", ...')
    tool_call_id = property(lambda self: self._c, doc="The tool call concerned, or None.")

    def __init__(self, session_id: Any, target: Any, id: Any, action: Any, tool_call_id: Any) -> None:
        self._s = session_id
        self._t = target
        self._i = id
        self._a = action
        self._c = tool_call_id

    def __eq__(self, other: object) -> Any:
        if type(other) is not Change:
            return NotImplemented
        return (self._s, self._t, self._i, self._a, self._c) == (other._s, other._t, other._i, other._a, other._c)

    def __ne__(self, other: object) -> Any:
        if type(other) is not Change:
            return NotImplemented
        return (self._s, self._t, self._i, self._a, self._c) != (other._s, other._t, other._i, other._a, other._c)

    def __hash__(self) -> int:
        return hash((self._s, self._t, self._i, self._a, self._c))

    def __iter__(self) -> Iterator[Any]:
        return iter((self._s, self._t, self._i, self._a, self._c))

    def __len__(self) -> int:
        return 5

    def __repr__(self) -> str:
        return (
            f"Change(session_id={self._s!r}, target={self._t!r}, id={self._i!r}, "
            f"action={self._a!r}, tool_call_id={self._c!r})"
        )

    def __reduce__(self) -> Any:
        return (Change, (self._s, self._t, self._i, self._a, self._c))


# ---------------------------------------------------------------------------------------------
# Materialized records (values shared with the store: `fresh` copies them before they are handed
# out; Python only, Rust builds new objects anyway)


def fresh(v: Any) -> Any:
    """A deep copy of a JSON value (dicts and lists copied, scalars shared, numbers kept as their
    text given as their Python value: ``read.number``), without recursion."""
    t = type(v)
    if t is dict:
        root: Any = v.copy()
    elif t is list:
        root = v[:]
    elif t is _Fragment:
        return number(v)
    elif t is Exact:
        return str.__str__(v)
    else:
        return v
    stack = [root]
    pop = stack.pop
    push = stack.append
    while stack:
        c = pop()
        for k, x in c.items() if type(c) is dict else enumerate(c):
            tx = type(x)
            if tx is dict:
                x = x.copy()
                c[k] = x
                push(x)
            elif tx is list:
                x = x[:]
                c[k] = x
                push(x)
            elif tx is _Fragment:
                c[k] = number(x)
            elif tx is Exact:
                c[k] = str.__str__(x)
    return root


def tool_call_record(tcid: str, f: Dict[str, Any]) -> Dict[str, Any]:
    """The tool-call record in DESIGN 7.3 key order."""
    r: Dict[str, Any] = {"toolCallId": tcid}
    if "title" in f:
        r["title"] = f["title"]
    r["kind"] = f.get("kind", "other")
    r["status"] = f.get("status", "pending")
    r["content"] = f.get("content", [])
    r["locations"] = f.get("locations", [])
    if "rawInput" in f:
        r["rawInput"] = f["rawInput"]
    if "rawOutput" in f:
        r["rawOutput"] = f["rawOutput"]
    if "name" in f:
        r["name"] = f["name"]
    if "_meta" in f:
        r["_meta"] = f["_meta"]
    known = _TOOL_CALL_FIELDS
    for k, v in f.items():
        if k not in known:
            r[k] = v
    if "_truncated" in f:
        truncated(r, [("droppedItems", f["_truncated"])])
    return r


def terminal_record(tid: str, term: Terminal, output: Any) -> Dict[str, Any]:
    """The terminal record in DESIGN 7.4 key order, with ``output`` as given (bytes, or base64
    text in a checkpoint)."""
    f = term.fields
    r: Dict[str, Any] = {"terminalId": tid}
    if "command" in f:
        r["command"] = f["command"]
    if "cwd" in f:
        r["cwd"] = f["cwd"]
    r["output"] = output
    if "outputMeta" in f:
        r["outputMeta"] = f["outputMeta"]
    if "exitStatus" in f:
        r["exitStatus"] = f["exitStatus"]
    if "_meta" in f:
        r["_meta"] = f["_meta"]
    known = _TERMINAL_FIELDS
    for k, v in f.items():
        if k not in known:
            r[k] = v
    truncated(r, [("droppedBytes", term.dropped)])
    return r


def permission_record(
    ident: Any,
    sid: str,
    tcid: Optional[str],
    options: Any,
    outcome: str,
    option_id: Optional[str],
    approved: bool,
    response: Any,
) -> Dict[str, Any]:
    """A permission record in DESIGN 7.5 key order (``response`` MISSING: absent)."""
    r: Dict[str, Any] = {"id": ident, "sessionId": sid}
    if tcid is not None:
        r["toolCallId"] = tcid
    r["options"] = options
    r["outcome"] = outcome
    if option_id is not None:
        r["optionId"] = option_id
    r["approved"] = approved
    if response is not MISSING:
        r["response"] = response
    return r


def held_len(value: Any) -> int:
    """The length of the JSON text a checkpoint writes for the stored value ``value`` (strings and
    numbers as received): the size of a content item for ``max_content_bytes`` (Rust: the length
    of ``write_value``'s text)."""
    try:
        return len(_orjson_dumps(value, default=exact_text, option=_PASSTHROUGH))
    except TypeError:  # nested deeper than orjson writes
        from ..encoder import write

        return len(write(value, 1 << 20))


def exact_text(value: Any) -> Any:
    """orjson's ``default`` for a string value kept as received (``read.Exact``): its JSON text
    (``held_len``, ``checkpoint.to_json``)."""
    if type(value) is Exact:
        return _Fragment(value.raw)
    raise TypeError


def truncated(r: Dict[str, Any], counts: List[Tuple[str, int]]) -> None:
    """Add the ``_truncated`` marker of what a bound dropped (DESIGN 7.8) to the record ``r``: one
    member per non-zero count, in the order given; nothing when there is none."""
    marker = {name: n for name, n in counts if n}
    if marker:
        r["_truncated"] = marker
