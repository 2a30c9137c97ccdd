"""Requests whose answer changes the state (DESIGN 7.10): the v1 client methods an agent calls
(``terminal/create``, ``terminal/output``, ``terminal/wait_for_exit``, ``terminal/kill``,
``terminal/release``, ``fs/read_text_file``, ``fs/write_text_file``), the session lifecycle a
client asks for (``session/close``, ``session/delete``, ``session/load``, ``session/resume`` with
a replay cursor) and, under v2, the requests whose answer has rules in the schema (``session/new``,
``auth/status``, ...: ``entity.message_entities``). ``request`` keeps what the answer will need,
``answered`` applies it when the answer comes, ``drop_session`` removes a session and all it holds.

Pending requests are keyed by sender and id (the agent's ids and the client's are apart), at most
``MAX_PENDING_REQUESTS`` of them (the oldest forgotten first); they are not part of a checkpoint,
nor is the replay mark.

Mirror of ``rust/state/request.rs``. Differences on purpose: here a file request keeps the start
of its record as a dict and a ``terminal/create`` the fields of the terminal it will create; Rust
keeps JSON text. Rust's answer changes name their session and id through ``Store::held``; here the
Change is built with them.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Dict, List, Optional, Tuple

from . import rules
from .entity import message_entities
from .evict import close_permission_holes, touch_session, touch_terminal, trim_front, trim_order, trim_output
from .read import BAD_SID, Bad, exactly, text
from .records import Change, Session, Store, Terminal

__all__ = ["MAX_PENDING_REQUESTS", "answered", "drop_session", "new_session", "request"]

#: How many requests a store waits an answer for (the oldest forgotten first).
MAX_PENDING_REQUESTS = 1000

#: The methods whose answer is applied, and whether the agent sends them.
METHODS: Dict[str, bool] = {
    "fs/read_text_file": True,
    "fs/write_text_file": True,
    "terminal/create": True,
    "terminal/output": True,
    "terminal/wait_for_exit": True,
    "terminal/kill": True,
    "terminal/release": True,
    "session/close": False,
    "session/delete": False,
    "session/load": False,
    "session/resume": False,
}
_TERMINAL_IDS = frozenset(("terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release"))
_FILES = frozenset(("fs/read_text_file", "fs/write_text_file"))
# Members of a terminal/create request that are not the terminal's fields.
_NOT_FIELDS = frozenset(("sessionId", "terminalId", "output", "outputMeta", "_truncated"))
#: The answer of another request whose answer has rules (`rules.answer_rules`).
RULES = "rules"
#: `session/load`, or `session/resume` with `replayFrom`.
REPLAY = "replay"


class Pending:
    """A request waiting for its answer: what the answer needs of it."""

    __slots__ = ("method", "session", "id", "record", "bytes", "terminal", "rules")

    def __init__(self, method: str, session: Optional[str], rules_: List[rules.MessageRule]) -> None:
        self.method = method
        self.session = session
        # The terminal (terminal/*) or the path (fs/*).
        self.id: Optional[str] = None
        # A file request: its record up to `bytes`.
        self.record: Optional[Dict[str, Any]] = None
        # fs/write_text_file: the UTF-8 bytes of `content` (when a string).
        self.bytes: Optional[int] = None
        # terminal/create: the fields of the terminal it creates.
        self.terminal: Optional[Dict[str, Any]] = None
        # The schema's rules for the answer (v2; entity.message_entities).
        self.rules = rules_


def request(
    store: Store, value: Dict[str, Any], method: Optional[str], rid: Any, source: Any, frame: Optional[bytes]
) -> Optional[Change]:
    """A request other than ``session/request_permission`` (its parsed object ``value``; ``frame``:
    its bytes when ``value`` is orjson's parse): if its method's answer is applied, check and keep
    what the answer needs (replacing a pending request with its key); a ``session/load`` (or a
    ``session/resume`` replaying from the start) first drops the session, which its replay
    rebuilds, and marks it replaying."""
    if method is None:
        return None
    answer = rules.answer_rules(method) if store._v2 and store._max_entities != 0 else []
    by_agent = METHODS.get(method)
    m: str = method
    if by_agent is None:
        if not answer:
            return None
        by_agent, m = False, RULES
    # A method sent by the other side than its sender: not followed.
    if source == ("client" if by_agent else "agent"):
        return None
    if type(value.get("params")) is not dict:
        return None
    if method in _FILES and store._max_files == 0:
        return None
    if frame is not None:
        value = exactly(frame, value)
    params = value["params"]
    cursor = None
    if method == "session/load":
        m = REPLAY
    elif method == "session/resume":
        cursor = params.get("replayFrom")
        if type(cursor) is dict:
            m = REPLAY
        elif answer:
            m = RULES
        else:
            return None
    # The answer's rules name the session the answer gives, else the request's (if any).
    sid = text(params.get("sessionId"))
    if m == RULES:
        sid = sid if type(sid) is str else None
    elif type(sid) is not str:
        raise BAD_SID
    pending = Pending(m, sid, answer)
    if m in _TERMINAL_IDS:
        tid = text(params.get("terminalId"))
        if type(tid) is not str:
            raise Bad("invalid_terminal_id", ("params", "terminalId"), "a string")
        pending.id = tid
    elif m in _FILES:
        file_request(params, pending)
    elif m == "terminal/create":
        pending.terminal = created_terminal(params)
    change = None
    if m == REPLAY:
        assert sid is not None
        from_start = type(cursor) is not dict or cursor.get("type") == "start"
        if from_start and sid in store._sessions:
            drop_session(store, sid)
        store._session(sid).replaying = True
        change = Change(sid, "session", None, "replaying", None)
    requests = store._requests
    key = (by_agent, rid)
    requests.pop(key, None)
    requests[key] = pending
    if len(requests) > MAX_PENDING_REQUESTS:
        requests.popitem(last=False)  # type: ignore[call-arg]
    return change


def file_request(params: Dict[str, Any], pending: Pending) -> None:
    """``fs/*``: ``params.path`` must be a string; the record's start, and a write's byte count."""
    path = text(params.get("path"))
    if type(path) is not str:
        raise Bad("invalid_path", ("params", "path"), "a string")
    pending.id = path
    record: Dict[str, Any] = {"op": "read" if pending.method == "fs/read_text_file" else "write", "path": path}
    for name in ("line", "limit"):
        value = params.get(name)
        if value is not None:
            record[name] = value
    pending.record = record
    if pending.method == "fs/write_text_file":
        content = text(params.get("content"))
        if type(content) is str:
            pending.bytes = utf8_len(content)


def created_terminal(params: Dict[str, Any]) -> Dict[str, Any]:
    """``terminal/create``: the fields of the terminal its answer creates (the request's members
    but those that are not a terminal's fields, in member order; null ones skipped)."""
    return {k: v for k, v in params.items() if k not in _NOT_FIELDS and v is not None}


def utf8_len(text: str) -> int:
    """The UTF-8 byte length of ``text`` (lone surrogates of ``\\ud800`` escapes count 3, as the
    scanner writes them)."""
    return len(text.encode("utf-8", "surrogatepass"))


def answered(store: Store, value: Dict[str, Any], kind: str, rid: Any, source: Any) -> Any:
    """A response or error response (``kind``) that answers a pending request: the answer
    applied (DESIGN 7.10), its Change or None; ``False`` when it answers none. The request is
    forgotten whatever the outcome."""
    requests = store._requests
    pending = None
    # The client answers the agent's requests, and the other way round.
    if source != "agent":
        pending = requests.pop((True, rid), None)
    if pending is None and source != "client":
        pending = requests.pop((False, rid), None)
    if pending is None:
        return False
    return apply_answer(store, value, kind, pending)


def apply_answer(store: Store, value: Dict[str, Any], kind: str, pending: Pending) -> Optional[Change]:
    error = value.get("error") if kind == "error" else None
    result = value.get("result") if kind == "response" else None
    method = pending.method
    sid = pending.session
    rules_change = None
    if type(result) is dict and pending.rules:
        # The answer's session: its `sessionId` (session/new, session/fork), else the request's.
        answer_sid = text(result.get("sessionId"))
        if type(answer_sid) is str:
            sid = answer_sid
        rules_change = message_entities(store, pending.rules, result, sid)
    if method in _FILES:
        assert sid is not None and pending.record is not None
        record = dict(pending.record)
        nbytes = pending.bytes
        if method == "fs/read_text_file":
            content = text(result.get("content")) if type(result) is dict else None
            nbytes = utf8_len(content) if type(content) is str else None
        record["bytes"] = None if kind == "error" else nbytes
        if kind == "error":
            record["error"] = error
        s = store._session(sid)
        s.files.append(record)
        s.dropped_files += trim_front(s.files, store._max_files)
        return Change(sid, "file", pending.id, "appended", None)
    if kind == "error" and method not in ("session/close", REPLAY):
        return None
    if method == "terminal/create":
        assert sid is not None and pending.terminal is not None
        tid = text(result.get("terminalId")) if type(result) is dict else None
        if type(tid) is not str:
            raise Bad("invalid_terminal_id", ("result", "terminalId"), "a string")
        s, old, existed = held_terminal(store, sid, tid)
        term = s.terminals[tid] = Terminal()  # a terminal held keeps its place and its number
        term.seq = old.seq
        term.fields = dict(pending.terminal)
        if store._max_terminals is not None:
            touch_terminal(store, s, tid, term, not existed)
        return Change(sid, "terminal", tid, "replaced" if existed else "created", None)
    if method in _TERMINAL_IDS:
        assert sid is not None and pending.id is not None
        output = None
        if method == "terminal/output":
            output = text(result.get("output")) if type(result) is dict else None
            if type(output) is not str:
                raise Bad("invalid_output", ("result", "output"), "a string")
        tid = pending.id
        s, term, existed = held_terminal(store, sid, tid)
        f = term.fields
        if method == "terminal/output":
            assert type(result) is dict and output is not None
            term.set_output(output.encode("utf-8", "surrogatepass"))
            trim_output(term, store._max_terminal_bytes)
            truncated = result.get("truncated")
            if truncated is not None:
                f["truncated"] = truncated
            exit_status = result.get("exitStatus")
            if exit_status is not None:
                f["exitStatus"] = exit_status
        elif method == "terminal/wait_for_exit":
            if type(result) is dict:
                f["exitStatus"] = result
        elif method == "terminal/kill":
            f["killed"] = True
        else:
            f["released"] = True
        if store._max_terminals is not None and (not existed or (not term.queued and "exitStatus" in f)):
            touch_terminal(store, s, tid, term, not existed)
        return Change(sid, "terminal", tid, "updated" if existed else "created", None)
    if method in ("session/close", "session/delete"):
        assert sid is not None
        # -32002 (no such session) answers a close as a success would.
        if kind == "error":
            code = error.get("code") if type(error) is dict else None
            if method != "session/close" or type(code) is not int or code != -32002:
                return None
        if sid in store._sessions:
            drop_session(store, sid)
            store._closed_sessions += 1
        return Change(sid, "session", None, "closed", None)
    if method == REPLAY:
        assert sid is not None
        replayed = store._sessions.get(pending.session or "")
        if replayed is not None:
            replayed.replaying = False
            if store._max_sessions is not None:
                touch_session(store, pending.session or "", replayed)
        return Change(pending.session, "session", None, "replayed", None)
    return rules_change


def held_terminal(store: Store, sid: str, tid: str) -> Tuple[Session, Terminal, bool]:
    """The terminal ``tid`` of the session ``sid``, created if needed: the session, the terminal,
    and whether it existed."""
    s = store._session(sid)
    term = s.terminals.get(tid)
    if term is not None:
        return s, term, True
    term = s.terminals[tid] = Terminal()
    return s, term, False


def new_session(store: Store, sid: str) -> Session:
    """A new session ``sid``, touched by the frame being applied. With a bound on sessions, while
    the store holds as many as the bound, the least recently active session is dropped first
    (``request.drop_session``), counted in ``evicted_sessions``; never one the frame being applied
    touched (the store then holds more for a while)."""
    limit = store._max_sessions
    if limit is not None:
        activity = store._activity
        while len(store._sessions) >= limit and activity:
            oldest, s = next(iter(activity.items()))
            if s.active == store._tick:
                break
            drop_session(store, oldest)
            store._evicted_sessions += 1
    s = store._sessions[sid] = Session()
    if limit is not None:
        s.active = store._tick
        store._activity[sid] = s
    return s


def drop_session(store: Store, sid: str) -> None:
    """Drop the session ``sid`` and all it holds: its tool calls (and their place in the
    ``max_tool_calls`` bound), terminals, plans, permission records (pending ones too), unknown
    updates, entities, file records and pending requests."""
    s = store._sessions.pop(sid, None)
    if s is None:
        return
    if store._max_sessions is not None:
        del store._activity[sid]
    store._tool_call_count -= len(s.tool_calls)
    if store._max_tool_calls is not None:
        created = store._created
        order = store._order
        base = store._order_base
        for tcid in s.tool_calls:
            entry = created.pop((sid, tcid), None)
            if entry is not None and entry[0] >= base:
                order[entry[0] - base] = None
        trim_order(store)
    if s.permission_count:
        perms = store._permissions
        pending = store._pending
        for i, e in enumerate(perms):
            if e is not None and e[0] == sid:
                rid = e[1]["id"]
                if pending.get(rid) == i:
                    del pending[rid]
                perms[i] = None
                store._permission_holes += 1
        close_permission_holes(store)
    requests = store._requests
    for key in [k for k, p in requests.items() if p.session == sid]:
        del requests[key]


def new_requests() -> Dict[Any, Pending]:
    """An empty map of pending requests (ordered: the oldest is forgotten first)."""
    return OrderedDict()
