"""The state engine (DESIGN 7): ``ToolCallStore`` keeps the tool calls, agent-owned terminals,
plans and permission requests of every session as frames are applied; ``Change`` is the light
event that ``apply`` / ``feed`` return.

A frame is parsed once with orjson (re-parsed exactly only when it holds a digit run long enough
for orjson to round an integer, as ``loads`` does) and validated by ``message_or_none``. The parsed
values are fresh per frame, so the store keeps them as they are: an update patches the record's
fields dict in place, a content chunk is appended to the record's own ``content`` list and
terminal bytes to the terminal's own ``bytearray``, so one update costs the same however many came
before. Queries build fresh objects on every call. -32602 errors are located in the frame with the
scanner on the error path only.

Mirror of ``rust/state.rs`` (and of the ``ToolCallStore`` / ``Change`` bindings).
"""

from __future__ import annotations

import base64 as _base64
import binascii as _binascii
import re
from heapq import heapify, heappop, heappush
from typing import Any, Dict, Iterator, List, Optional, Tuple

import orjson

from .._checkpoint import FORMAT as STATE_FORMAT
from .._checkpoint import load_state
from ..errors import DecodeError as PyDecodeError
from .encoder import dumps
from .error import DecodeError, describe_value, to_python
from .framing import _BLANK, _BLANK_START, DEFAULT_MAX_FRAME_BYTES, FrameDecoder, _too_large
from .message import Message, decode_frame, decode_value, message_or_none
from .scanner import _DIGITS_TO_ZERO, _LONG_DIGIT_RUN, _exact, array_items, find_member, parse_exact, skip_ws
from .scanner import to_bytes
from .scanner import loads as _exact_loads

__all__ = ["ToolCallStore", "Change", "DEFAULT_MAX_FRAME_BYTES", "MAX_FRAME_BYTES", "STATE_FORMAT"]

#: Largest ``max_frame_bytes`` accepted (DESIGN 6).
MAX_FRAME_BYTES = 4294967294

_orjson_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError
_MISSING: Any = object()
_I64_MIN = -(2**63)
_I64_MAX = 2**63 - 1

_FINISHED = frozenset(("completed", "failed", "cancelled"))
_ALLOW = frozenset(("allow_once", "allow_always"))
# Tool-call fields with a fixed place in a materialized record (after toolCallId), DESIGN 7.3.
_TOOL_KNOWN = frozenset(("title", "kind", "status", "content", "locations", "rawInput", "rawOutput", "name", "_meta"))
# Terminal fields with a fixed place (after terminalId; `output` is the byte buffer), DESIGN 7.4.
_TERM_KNOWN = frozenset(("command", "cwd", "outputMeta", "exitStatus", "_meta"))
# terminal_update members that are not stored as fields (`outputMeta` derives from `output._meta`).
_TERM_SKIP = frozenset(("sessionUpdate", "terminalId", "output", "outputMeta"))

_b64_fullmatch = re.compile(r"[A-Za-z0-9+/]*={0,2}").fullmatch
_a2b = _binascii.a2b_base64
_b2a = _base64.b64encode

_CANCEL_HEAD = b'{"jsonrpc":"2.0","id":'
_CANCEL_TAIL = b',"result":{"outcome":{"outcome":"cancelled"}}}\n'


# ---------------------------------------------------------------------------------------------
# Change


class Change:
    """What one frame changed: ``(session_id, target, id, action, tool_call_id)``.

    ``target`` is ``"tool_call"``, ``"terminal"``, ``"plan"``, ``"permission"``, ``"session"`` or
    ``"protocol"``; ``id`` the tool call / terminal / plan id, the request id or the negotiated
    version. Immutable, hashable, equal when all five are equal; ``tuple(change)`` gives the five.
    """

    # Private slots behind read-only properties (as Message): setting any attribute raises
    # AttributeError, and construction is plain slot stores.
    __slots__ = ("_s", "_t", "_i", "_a", "_c")

    session_id = property(lambda self: self._s, doc="The session id (None for a protocol change).")
    target = property(lambda self: self._t, doc='"tool_call", "terminal", "plan", "permission", "session", "protocol".')
    id = property(lambda self: self._i, doc="Tool call / terminal / plan id, request id, version, or None.")
    action = property(lambda self: self._a, doc='What happened: "created", "updated", "appended", ...')
    tool_call_id = property(lambda self: self._c, doc="The tool call concerned, or None.")

    def __init__(self, session_id: Any, target: Any, id: Any, action: Any, tool_call_id: Any) -> None:
        self._s = session_id
        self._t = target
        self._i = id
        self._a = action
        self._c = tool_call_id

    def __iter__(self) -> Iterator[Any]:
        return iter((self._s, self._t, self._i, self._a, self._c))

    def __len__(self) -> int:
        return 5

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

    def __repr__(self) -> str:
        return (
            f"Change(session_id={self._s!r}, target={self._t!r}, id={self._i!r}, "
            f"action={self._a!r}, tool_call_id={self._c!r})"
        )

    def __reduce__(self) -> Any:
        return (Change, (self._s, self._t, self._i, self._a, self._c))


# ---------------------------------------------------------------------------------------------
# Helpers


class _Bad(Exception):
    """A broken state rule (DESIGN 7.7): its kind, the member's path from the message object and
    {what}. The caller, who knows the frame, turns it into the -32602 DecodeError."""

    def __init__(self, kind: str, keys: Tuple[str, ...], what: str) -> None:
        self.kind = kind
        self.keys = keys
        self.what = what


def _state_error(bad: _Bad, doc: bytes, obj_start: int) -> DecodeError:
    """The -32602 error value for the member at ``bad.keys`` under the message object whose ``{``
    is at ``obj_start`` in ``doc`` (the members on the way are objects): its {value} and offset,
    or ``none`` and the ``{`` of the object that lacks it."""
    container = obj_start
    found = None
    keys = bad.keys
    last = len(keys) - 1
    for i, key in enumerate(keys):
        found = find_member(doc, container, key)
        if found is None or i == last:
            break
        container = found[1]
    if found is None:
        value, position = "none", container
    else:
        ty, start, end = found
        value, position = describe_value(doc, ty, start, end), start
    path = ".".join(keys)
    return DecodeError.params(bad.kind, f'expected "{path}" to be {bad.what}, found {value}', position)


def _fresh(v: Any) -> Any:
    """A deep copy of a JSON value (dicts and lists copied, scalars shared), without recursion."""
    t = type(v)
    if t is dict:
        root: Any = v.copy()
    elif t is list:
        root = v[:]
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
    return root


def _b64decode(text: Any) -> Optional[bytes]:
    """The bytes of padded standard base64 text (DESIGN 7.4), or None."""
    if type(text) is not str or len(text) & 3 or _b64_fullmatch(text) is None:
        return None
    return _a2b(text)


def _exactly(frame: bytes, value: Any) -> Any:
    """``value`` (orjson's parse of ``frame``), re-parsed exactly when orjson may have rounded an
    integer (a run of 19+ digits somewhere in the frame)."""
    if _LONG_DIGIT_RUN in frame.translate(_DIGITS_TO_ZERO):
        return _exact(frame)
    return value


def _finished(fields: Dict[str, Any]) -> bool:
    """Is the tool call's status "completed", "failed" or "cancelled" (eviction first)?"""
    status = fields.get("status")
    return type(status) is str and status in _FINISHED


def _key(value: Any, name: str) -> Any:
    """A session / tool-call / terminal id argument: a str (TypeError otherwise)."""
    if type(value) is not str and not isinstance(value, str):
        raise TypeError(f"expected {name} to be a str, found {type(value).__name__}")
    return value


class _Session:
    """What one session holds, each in first-seen order: tool calls (id -> fields dict: the set
    fields but toolCallId, never null), terminals (id -> _Terminal) and plans (id -> record)."""

    __slots__ = ("calls", "terms", "plans")

    def __init__(self) -> None:
        self.calls: Dict[str, Dict[str, Any]] = {}
        self.terms: Dict[str, "_Terminal"] = {}
        self.plans: Dict[str, Any] = {}


class _Terminal:
    """A terminal: ``out`` its bytes, ``fields`` the rest (command, cwd, outputMeta, exitStatus,
    _meta and unknown fields, never null)."""

    __slots__ = ("fields", "out")

    def __init__(self) -> None:
        self.fields: Dict[str, Any] = {}
        self.out = bytearray()


def _tool_record(tcid: str, f: Dict[str, Any]) -> Dict[str, Any]:
    """The record in DESIGN 7.3 key order (values shared with the store: copy before handing out)."""
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
    known = _TOOL_KNOWN
    for k, v in f.items():
        if k not in known:
            r[k] = v
    return r


def _terminal_record(tid: str, term: _Terminal, output: Any) -> Dict[str, Any]:
    """The record in DESIGN 7.4 key order, with ``output`` as given (bytes, or base64 text)."""
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
    known = _TERM_KNOWN
    for k, v in f.items():
        if k not in known:
            r[k] = v
    return r


def _permission_record(
    ident: Any,
    sid: str,
    tcid: Optional[str],
    options: Any,
    outcome: str,
    option_id: Optional[str],
    approved: bool,
    response: Any,
) -> Dict[str, Any]:
    """A permission record in DESIGN 7.5 key order (``response`` _MISSING: absent)."""
    r: Dict[str, Any] = {"id": ident, "sessionId": sid}
    if tcid is not None:
        r["toolCallId"] = tcid
    r["options"] = options
    r["outcome"] = outcome
    if option_id is not None:
        r["optionId"] = option_id
    r["approved"] = approved
    if response is not _MISSING:
        r["response"] = response
    return r


# Paths of DESIGN 7.7 (from the message object).
_U = ("params", "update")
_P_UPDATE_TCID = _U + ("toolCallId",)
_P_UPDATE_CONTENT = _U + ("content",)
_P_UPDATE_LOCATIONS = _U + ("locations",)
_BAD_SID = _Bad("invalid_session_id", ("params", "sessionId"), "a string")


# ---------------------------------------------------------------------------------------------
# ToolCallStore


def _check_source(source: Any) -> None:
    if source is not None and (not isinstance(source, str) or source not in ("agent", "client")):
        raise ValueError(f"expected source to be 'agent', 'client' or None, found {source!r}")


class ToolCallStore:
    """The state of every tool call, agent-owned terminal, plan and permission request of a
    connection, per session, as its frames are applied (DESIGN 7)."""

    __slots__ = (
        "_fixed",
        "_negotiated",
        "_v2",
        "_max",
        "_evicted",
        "_count",
        "_sessions",
        "_perms",
        "_pending",
        "_dec",
        "_seq",
        "_created",
        "_heap",
        "_handlers",
    )

    def __init__(  # type: ignore[no-untyped-def]
        self, protocol_version=None, *, max_tool_calls=None, max_frame_bytes=DEFAULT_MAX_FRAME_BYTES
    ):
        if protocol_version is not None and (type(protocol_version) is not int or protocol_version not in (1, 2)):
            raise ValueError(f"expected protocol_version to be 1, 2 or None, found {protocol_version!r}")
        if max_tool_calls is not None and (type(max_tool_calls) is not int or max_tool_calls < 1):
            raise ValueError(f"expected max_tool_calls to be a positive integer or None, found {max_tool_calls!r}")
        if type(max_frame_bytes) is not int:
            if not isinstance(max_frame_bytes, int):
                raise TypeError(f"'{type(max_frame_bytes).__name__}' object cannot be interpreted as an integer")
            max_frame_bytes = int(max_frame_bytes)
        if not 1 <= max_frame_bytes <= MAX_FRAME_BYTES:
            raise ValueError(f"max_frame_bytes must be between 1 and {MAX_FRAME_BYTES}, found {max_frame_bytes}")
        self._dec = FrameDecoder(max_frame_bytes=max_frame_bytes)
        self._fixed: Optional[int] = protocol_version
        self._negotiated: Optional[int] = None
        self._v2 = protocol_version == 2
        self._max: Optional[int] = max_tool_calls
        self._evicted = 0
        self._count = 0
        # Sessions in first-seen order; a session stays once it has held anything.
        self._sessions: Dict[str, _Session] = {}
        # Every permission request in request order, as [session id, record] (None: a pending
        # request replaced by a later one with its id); pending ones by id -> index.
        self._perms: List[Optional[List[Any]]] = []
        self._pending: Dict[Any, int] = {}
        # Bound only: (sid, tcid) -> [creation number, queued in the heap], in creation order,
        # and a heap of (creation number, sid, tcid) of finished tool calls (stale entries are
        # skipped when they reach the top).
        self._seq = 0
        self._created: Dict[Tuple[str, str], List[Any]] = {}
        self._heap: List[Tuple[int, str, str]] = []
        self._handlers = _HANDLERS

    # -- properties ---------------------------------------------------------------------------

    @property
    def protocol_version(self) -> int:
        """The version in force: the fixed one, else the negotiated one, else 1."""
        if self._fixed is not None:
            return self._fixed
        if self._negotiated is not None:
            return self._negotiated
        return 1

    @property
    def negotiated_version(self) -> Optional[int]:
        """The version learned from an ``initialize`` response, or None."""
        return self._negotiated

    @property
    def max_tool_calls(self) -> Optional[int]:
        return self._max

    @property
    def evicted(self) -> int:
        """Tool calls dropped by the ``max_tool_calls`` bound."""
        return self._evicted

    @property
    def line(self) -> int:
        """Lines completed by ``feed`` / ``finish`` so far."""
        return self._dec._line

    def __len__(self) -> int:
        return self._count

    def __repr__(self) -> str:
        return f"ToolCallStore(protocol_version={self.protocol_version}, tool_calls={self._count})"

    # -- applying frames ----------------------------------------------------------------------

    def apply(self, frame, *, source=None):  # type: ignore[no-untyped-def]
        """Apply one frame (Message, Batch / list, bytes, str, dict): a Change or None for one
        message, a list for a batch; raises DecodeError for a bad frame (the store unchanged)."""
        _check_source(source)
        t = type(frame)
        if t is Message:
            return self._apply_message(frame, source, True)
        if t is not bytes:
            if isinstance(frame, PyDecodeError):
                return frame
            if isinstance(frame, list):
                if frame and (type(frame[0]) is Message or isinstance(frame[0], PyDecodeError)):
                    return self._apply_entries(frame, source)
                frame = dumps(frame)
            elif isinstance(frame, dict):
                frame = dumps(frame)
            elif isinstance(frame, (str, bytearray, memoryview)):
                frame = to_bytes(frame, "apply")
                if type(frame) is DecodeError:
                    raise to_python(frame, None)
            else:
                raise TypeError(
                    f"expected a Message, bytes, str, a dict or a list, found {type(frame).__name__}"
                )
        data = frame
        if data and data[-1] == 10:  # \n
            data = data[:-1]
        if data and data[-1] == 13:  # \r
            data = data[:-1]
        if b"\n" in data:
            nl = data.find(b"\n")
            err = DecodeError.json("embedded_newline", "expected one frame per line, found a newline", nl)
            raise to_python(err, data, raw=data)
        try:
            value = _orjson_loads(data)
        except _JSONDecodeError:
            result = decode_frame(data, None)
            if type(result) is PyDecodeError:
                raise result from None
            if type(result) is Message:
                return self._apply_message(result, source, True)
            return self._apply_batch(data, parse_exact(data), result, source, None)
        if type(value) is dict:
            m = message_or_none(data, value, None)
            if m is not None:
                try:
                    return self._dispatch(value, m, source, data)
                except _Bad as bad:
                    raise to_python(_state_error(bad, data, skip_ws(data, 0)), data, raw=data) from None
        elif type(value) is list and value:
            return self._apply_batch(data, value, None, source, None)
        raise decode_value(data, value, None)  # type: ignore[misc]  # an error here

    def _apply_message(self, m: Message, source: Any, raise_errors: bool) -> Any:
        """Apply a Message (its raw re-parsed); errors at offsets in its raw, without a line."""
        raw = m._raw
        try:
            return self._dispatch(parse_exact(raw), m, source, None)
        except _Bad as bad:
            err = to_python(_state_error(bad, raw, skip_ws(raw, 0)), raw, raw=raw)
            if raise_errors:
                raise err from None
            return err

    def _apply_entries(self, entries: list, source: Any) -> List[Any]:
        """A Batch (or list) of Messages and DecodeErrors: one result per entry, each Message
        applied on its own (error positions within the entry)."""
        out = []
        for entry in entries:
            if type(entry) is Message:
                out.append(self._apply_message(entry, source, False))
            elif isinstance(entry, PyDecodeError):
                out.append(entry)
            else:
                raise TypeError(
                    "expected the entries of a decoded batch (Message or DecodeError), "
                    f"found {type(entry).__name__}"
                )
        return out

    def _apply_batch(self, frame: bytes, value: list, batch: Any, source: Any, line: Optional[int]) -> Any:
        """Apply the entries of a batch frame whose parsed value is ``value`` (``batch``: its
        decoded Batch when known). The list of results, or the frame's DecodeError."""
        if batch is None:
            batch = decode_value(frame, value, line)
            if type(batch) is PyDecodeError:
                return batch
        value = _exactly(frame, value)
        out: List[Any] = []
        items = None
        dispatch = self._dispatch
        for i, entry in enumerate(batch):
            if type(entry) is not Message:
                out.append(entry)
                continue
            try:
                out.append(dispatch(value[i], entry, source, None))
            except _Bad as bad:
                # Offsets in the whole frame; raw = the entry's bytes (as -32600 entry errors).
                if items is None:
                    items = array_items(frame, skip_ws(frame, 0))
                _, start, end = items[i]
                out.append(to_python(_state_error(bad, frame, start), frame, line=line, raw=frame[start:end]))
        return out

    def feed(self, data, *, changes=True, source=None):  # type: ignore[no-untyped-def]
        """Apply every line that ``data`` completes; returns the Changes and DecodeErrors in
        stream order (only the DecodeErrors with ``changes=False``). Framing, limits and line
        numbers are those of a FrameDecoder (DESIGN 6, 7.2); ``source`` as for ``apply``."""
        _check_source(source)
        dec = self._dec
        if type(data) is not bytes:
            data = to_bytes(data, "feed")
            if type(data) is DecodeError:
                raise to_python(data, None)
        out: List[Any] = []
        # FrameDecoder.feed's framing; each frame's parsed value is applied directly.
        split = dec._split(data, out)
        if split is None:
            return out
        parts, tail = split[0], split[1]
        limit = dec._max
        line = dec._line
        blank_start = _BLANK_START
        append = out.append
        loads = _orjson_loads
        message = message_or_none
        dispatch = self._dispatch
        handlers = self._handlers
        long_run = _LONG_DIGIT_RUN
        to_zero = _DIGITS_TO_ZERO
        try:
            for frame in parts:
                line += 1
                if not frame:
                    continue
                if len(frame) > limit:
                    append(_too_large(limit, line))
                    continue
                if frame[-1] == 13:  # \r
                    frame = frame[:-1]
                    if not frame:
                        continue
                if frame[0] in blank_start and not frame.strip(_BLANK):
                    continue
                try:
                    value = loads(frame)
                except _JSONDecodeError:
                    self._collect(decode_frame(frame, line), out, changes, source)
                    continue
                if type(value) is dict:
                    m = message(frame, value, line)
                    if m is not None:
                        try:
                            if m._method == "session/update" and m._kind == "notification":
                                # _dispatch's session/update branch, inlined (most frames).
                                handler = handlers.get(m._update_kind)
                                if handler is None:
                                    continue
                                sid = m._session_id
                                if sid is None:
                                    raise _BAD_SID
                                if long_run in frame.translate(to_zero):
                                    value = _exact(frame)
                                change = handler(self, sid, value["params"]["update"])
                            else:
                                change = dispatch(value, m, source, frame)
                        except _Bad as bad:
                            err = _state_error(bad, frame, skip_ws(frame, 0))
                            append(to_python(err, frame, line=line, raw=frame))
                            continue
                        if change is not None and changes:
                            append(change)
                        continue
                elif type(value) is list and value:
                    self._collect(self._apply_batch(frame, value, None, source, line), out, changes, source)
                    continue
                append(decode_value(frame, value, line))
        finally:
            dec._line = line
        if tail:
            dec._hold(tail, out)
        return out

    def finish(self, *, changes=True, source=None):  # type: ignore[no-untyped-def]
        """Apply a final line that has no newline; returns its Changes / DecodeErrors (only the
        DecodeErrors with ``changes=False``)."""
        _check_source(source)
        out: List[Any] = []
        for result in self._dec.finish():
            self._collect(result, out, changes, source)
        return out

    def _collect(self, result: Any, out: List[Any], changes: bool, source: Any) -> None:
        """Add to ``out`` what one frame yields: ``result`` is its decoded Message / Batch /
        error, or the result list of a batch already applied."""
        t = type(result)
        if t is PyDecodeError:
            out.append(result)
            return
        if t is Message:
            result = [self._apply_message_in_stream(result, source)]
        elif t is not list:  # a Batch decoded from a frame orjson refused
            frame = result.raw
            result = self._apply_batch(frame, parse_exact(frame), result, source, result.line)
        for r in result:
            if r is not None and (changes or type(r) is not Change):
                out.append(r)

    def _apply_message_in_stream(self, m: Message, source: Any) -> Any:
        """A Message from the stream (a frame orjson refused): errors carry its line."""
        raw = m._raw
        try:
            return self._dispatch(parse_exact(raw), m, source, None)
        except _Bad as bad:
            return to_python(_state_error(bad, raw, skip_ws(raw, 0)), raw, line=m._line, raw=raw)

    # -- dispatch -----------------------------------------------------------------------------

    def _dispatch(self, value: dict, m: Message, source: Any, frame: Optional[bytes]) -> Optional[Change]:
        """Apply one valid message whose parsed object is ``value``. ``frame``: its bytes when
        ``value`` is orjson's parse (re-parsed exactly when needed), None when already exact."""
        kind = m._kind
        if kind == "notification":
            method = m._method
            if method == "session/update":
                handler = self._handlers.get(m._update_kind)
                if handler is None:
                    return None
                sid = m._session_id
                if sid is None:
                    raise _BAD_SID
                if frame is not None:
                    value = _exactly(frame, value)
                return handler(self, sid, value["params"]["update"])  # type: ignore[no-any-return]
            if method == "session/cancel":
                if type(value.get("params")) is not dict:
                    return None
                sid = m._session_id
                if sid is None:
                    raise _BAD_SID
                return Change(sid, "session", None, "cancelled", None)
            return None
        if kind == "request":
            if m._method == "session/request_permission" and type(value.get("params")) is dict:
                if frame is not None:
                    value = _exactly(frame, value)
                return self._on_permission_request(value["params"], m._id)
            return None
        # A response or an error response: resolves a pending request, or teaches the version.
        index = _MISSING
        if source != "agent" and self._pending:
            index = self._pending.get(m._id, _MISSING)
        if index is _MISSING:
            if kind != "response":
                return None
            result = value["result"]
            if type(result) is not dict or "protocolVersion" not in result:
                return None
        if frame is not None:
            value = _exactly(frame, value)
        if index is not _MISSING:
            del self._pending[m._id]
            return self._resolve(index, kind, value)
        pv = value["result"]["protocolVersion"]
        if type(pv) is not int:
            return None
        version = 1 if pv <= 1 else 2
        self._negotiated = version
        if self._fixed is None:
            self._v2 = version == 2
        return Change(None, "protocol", version, "negotiated", None)

    # -- tool calls ---------------------------------------------------------------------------

    def _session(self, sid: str) -> _Session:
        s = self._sessions.get(sid)
        if s is None:
            s = self._sessions[sid] = _Session()
        return s

    def _on_tool_call_update(self, sid: str, update: dict) -> Change:
        tcid = update.get("toolCallId")
        if type(tcid) is not str:
            raise _Bad("invalid_tool_call_id", _P_UPDATE_TCID, "a string")
        c = update.get("content")
        if c is not None and type(c) is not list:
            raise _Bad("invalid_content", _P_UPDATE_CONTENT, "an array or null")
        c = update.get("locations")
        if c is not None and type(c) is not list:
            raise _Bad("invalid_locations", _P_UPDATE_LOCATIONS, "an array or null")
        # _upsert's common case inlined: an existing record, no null member.
        s = self._sessions.get(sid)
        if s is not None:
            f = s.calls.get(tcid)
            if f is not None and None not in update.values():
                f.update(update)
                del f["toolCallId"]
                del f["sessionUpdate"]
                if self._max is not None:
                    self._touch(sid, tcid, f, False)
                return Change(sid, "tool_call", tcid, "updated", tcid)
        created = self._upsert(sid, tcid, update)
        return Change(sid, "tool_call", tcid, "created" if created else "updated", tcid)

    def _upsert(self, sid: str, tcid: str, update: dict) -> bool:
        """Apply a checked tool-call update with the null rule of the version in force; a new
        record takes the update dict itself as its fields. True if the record was created."""
        s = self._sessions.get(sid)
        if s is None:
            s = self._sessions[sid] = _Session()
        calls = s.calls
        f = calls.get(tcid)
        if f is None:
            del update["toolCallId"]
            update.pop("sessionUpdate", None)
            if None in update.values():
                update = {k: v for k, v in update.items() if v is not None}
            calls[tcid] = update
            self._count += 1
            if self._max is not None:
                self._touch(sid, tcid, update, True)
            return True
        if None not in update.values():
            f.update(update)
            del f["toolCallId"]
            f.pop("sessionUpdate", None)
        elif self._v2:
            for k, v in update.items():
                if v is None:
                    if k in f:
                        del f[k]
                elif k != "toolCallId" and k != "sessionUpdate":
                    f[k] = v
        else:
            for k, v in update.items():
                if v is not None and k != "toolCallId" and k != "sessionUpdate":
                    f[k] = v
        if self._max is not None:
            self._touch(sid, tcid, f, False)
        return False

    def _on_content_chunk(self, sid: str, update: dict) -> Change:
        tcid = update.get("toolCallId")
        if type(tcid) is not str:
            raise _Bad("invalid_tool_call_id", _P_UPDATE_TCID, "a string")
        item = update.get("content")
        if type(item) is not dict:
            raise _Bad("invalid_content", _P_UPDATE_CONTENT, "an object")
        s = self._sessions.get(sid)
        if s is None:
            s = self._sessions[sid] = _Session()
        calls = s.calls
        f = calls.get(tcid)
        if f is None:
            f = calls[tcid] = {"content": [item]}
            self._count += 1
            if self._max is not None:
                self._touch(sid, tcid, f, True)
            return Change(sid, "tool_call", tcid, "created", tcid)
        content = f.get("content")
        if content is None:
            f["content"] = [item]
        else:
            content.append(item)
        return Change(sid, "tool_call", tcid, "appended", tcid)

    def _on_tool_call(self, sid: str, update: dict) -> Change:
        tcid = update.get("toolCallId")
        if type(tcid) is not str:
            raise _Bad("invalid_tool_call_id", _P_UPDATE_TCID, "a string")
        c = update.get("content")
        if c is not None and type(c) is not list:
            raise _Bad("invalid_content", _P_UPDATE_CONTENT, "an array or null")
        c = update.get("locations")
        if c is not None and type(c) is not list:
            raise _Bad("invalid_locations", _P_UPDATE_LOCATIONS, "an array or null")
        del update["toolCallId"]
        del update["sessionUpdate"]
        if None in update.values():
            update = {k: v for k, v in update.items() if v is not None}
        calls = self._session(sid).calls
        created = tcid not in calls
        calls[tcid] = update  # a replaced record keeps its place
        if created:
            self._count += 1
        if self._max is not None:
            self._touch(sid, tcid, update, created)
        return Change(sid, "tool_call", tcid, "created" if created else "replaced", tcid)

    # -- the bound (DESIGN 7.8) -----------------------------------------------------------------

    def _touch(self, sid: str, tcid: str, f: dict, created: bool) -> None:
        """Bound only: track creation order and finished records; evict after a creation."""
        key = (sid, tcid)
        if created:
            self._seq += 1
            entry = self._created[key] = [self._seq, False]
        else:
            entry = self._created[key]
        if not entry[1] and _finished(f):
            entry[1] = True
            heappush(self._heap, (entry[0], sid, tcid))
        if created:
            while self._count > self._max:  # type: ignore[operator]
                self._evict_one(key)

    def _evict_one(self, touched: Tuple[str, str]) -> None:
        """Drop the oldest finished tool call but ``touched``, else the oldest but ``touched``."""
        heap = self._heap
        created = self._created
        sessions = self._sessions
        victim = None
        held = []
        while heap:
            seq, sid, tcid = heap[0]
            key = (sid, tcid)
            entry = created.get(key)
            if entry is None or entry[0] != seq:
                heappop(heap)  # stale: evicted, or evicted and created again
                continue
            if not _finished(sessions[sid].calls[tcid]):
                heappop(heap)  # no longer finished: queued again when it is
                entry[1] = False
                continue
            if key == touched:
                held.append(heappop(heap))
                continue
            heappop(heap)
            victim = key
            break
        for item in held:
            heappush(heap, item)
        if victim is None:
            for key in created:
                if key != touched:
                    victim = key
                    break
            else:  # pragma: no cover - more than max >= 1 retained: there is another one
                return
        del created[victim]
        del sessions[victim[0]].calls[victim[1]]
        self._count -= 1
        self._evicted += 1
        if len(heap) > 2 * len(created) + 64:
            self._rebuild_heap()

    def _rebuild_heap(self) -> None:
        sessions = self._sessions
        heap = []
        for (sid, tcid), entry in self._created.items():
            entry[1] = _finished(sessions[sid].calls[tcid])
            if entry[1]:
                heap.append((entry[0], sid, tcid))
        heapify(heap)
        self._heap = heap

    # -- terminals ----------------------------------------------------------------------------

    def _on_terminal_update(self, sid: str, update: dict) -> Change:
        tid = update.get("terminalId")
        if type(tid) is not str:
            raise _Bad("invalid_terminal_id", _U + ("terminalId",), "a string")
        output = update.get("output")
        data = None
        if output is not None:
            if type(output) is not dict:
                raise _Bad("invalid_output", _U + ("output",), "an object or null")
            data = _b64decode(output.get("data"))
            if data is None:
                raise _Bad("invalid_base64", _U + ("output", "data"), "base64 text")
        es = update.get("exitStatus")
        if es is not None and type(es) is not dict:
            raise _Bad("invalid_exit_status", _U + ("exitStatus",), "an object or null")
        terms = self._session(sid).terms
        term = terms.get(tid)
        created = term is None
        if term is None:
            term = terms[tid] = _Terminal()
        f = term.fields
        skip = _TERM_SKIP
        for k, v in update.items():
            if k in skip:
                if k == "output":
                    if v is None:
                        term.out = bytearray()
                        f.pop("outputMeta", None)
                    else:
                        term.out = bytearray(data)  # type: ignore[arg-type]
                        meta = v.get("_meta")
                        if meta is None:
                            f.pop("outputMeta", None)
                        else:
                            f["outputMeta"] = meta
            elif v is None:
                if k in f:
                    del f[k]
            else:
                f[k] = v
        return Change(sid, "terminal", tid, "created" if created else "updated", None)

    def _on_terminal_chunk(self, sid: str, update: dict) -> Change:
        tid = update.get("terminalId")
        if type(tid) is not str:
            raise _Bad("invalid_terminal_id", _U + ("terminalId",), "a string")
        data = _b64decode(update.get("data"))
        if data is None:
            raise _Bad("invalid_base64", _U + ("data",), "base64 text")
        terms = self._session(sid).terms
        term = terms.get(tid)
        if term is None:
            term = terms[tid] = _Terminal()
            term.out += data
            return Change(sid, "terminal", tid, "created", None)
        term.out += data
        return Change(sid, "terminal", tid, "appended", None)

    # -- plans --------------------------------------------------------------------------------

    def _on_plan(self, sid: str, update: dict) -> Change:
        entries = update.get("entries")
        if type(entries) is not list:
            raise _Bad("invalid_plan", _U + ("entries",), "an array")
        record = {"type": "items", "planId": "main", "entries": entries}
        meta = update.get("_meta")
        if meta is not None:
            record["_meta"] = meta
        plans = self._session(sid).plans
        action = "replaced" if "main" in plans else "created"
        plans["main"] = record
        return Change(sid, "plan", "main", action, None)

    def _on_plan_update(self, sid: str, update: dict) -> Change:
        plan = update.get("plan")
        if type(plan) is not dict:
            raise _Bad("invalid_plan", _U + ("plan",), "an object")
        pid = plan.get("planId")
        if type(pid) is not str:
            raise _Bad("invalid_plan", _U + ("plan", "planId"), "a string")
        plans = self._session(sid).plans
        action = "replaced" if pid in plans else "created"
        plans[pid] = plan
        return Change(sid, "plan", pid, action, None)

    def _on_plan_removed(self, sid: str, update: dict) -> Optional[Change]:
        pid = update.get("planId")
        if type(pid) is not str:
            raise _Bad("invalid_plan", _U + ("planId",), "a string")
        s = self._sessions.get(sid)
        if s is None or pid not in s.plans:
            return None
        del s.plans[pid]
        return Change(sid, "plan", pid, "removed", None)

    # -- permissions --------------------------------------------------------------------------

    def _on_permission_request(self, params: dict, ident: Any) -> Change:
        sid = params.get("sessionId")
        if type(sid) is not str:
            raise _BAD_SID
        # The tool-call update: params.toolCall (present and not null), else the toolCall of a
        # subject {"type": "tool_call"}; path () when there is none.
        tool_call = params.get("toolCall")
        path: Tuple[str, ...] = ("params", "toolCall")
        if tool_call is None:
            subject = params.get("subject")
            if type(subject) is dict and subject.get("type") == "tool_call":
                path = ("params", "subject", "toolCall")
                tool_call = subject.get("toolCall", _MISSING)
            else:
                path = ()
        # Checks: sessionId, the tool call's id (and content / locations), options, then the
        # tool call being an object (DESIGN 7.7 order).
        tcid = None
        if type(tool_call) is dict:
            tcid = tool_call.get("toolCallId")
            if type(tcid) is not str:
                raise _Bad("invalid_tool_call_id", path + ("toolCallId",), "a string")
            c = tool_call.get("content")
            if c is not None and type(c) is not list:
                raise _Bad("invalid_content", path + ("content",), "an array or null")
            c = tool_call.get("locations")
            if c is not None and type(c) is not list:
                raise _Bad("invalid_locations", path + ("locations",), "an array or null")
        options = params.get("options")
        if type(options) is not list:
            raise _Bad("invalid_options", ("params", "options"), "an array")
        if path and tcid is None:
            raise _Bad("invalid_tool_call", path, "an object")
        if tcid is not None:
            self._upsert(sid, tcid, tool_call)  # type: ignore[arg-type]
        else:
            self._session(sid)
        pending = self._pending
        old = pending.get(ident, _MISSING)
        if old is not _MISSING:
            self._perms[old] = None
        pending[ident] = len(self._perms)
        record = _permission_record(ident, sid, tcid, options, "pending", None, False, _MISSING)
        self._perms.append([sid, record])
        return Change(sid, "permission", ident, "requested", tcid)

    def _resolve(self, index: int, kind: str, value: dict) -> Change:
        """Resolve the pending request at ``index`` with a response (DESIGN 7.5)."""
        entry = self._perms[index]
        sid, record = entry  # type: ignore[misc]
        approved = False
        option_id = None
        if kind == "error":
            outcome = "error"
            response = value["error"]
        else:
            response = value["result"]
            outcome = "invalid"
            chosen = response.get("outcome") if type(response) is dict else None
            if type(chosen) is dict:
                tag = chosen.get("outcome")
                if type(tag) is not str:
                    outcome = "unknown"
                elif tag == "cancelled":
                    outcome = "cancelled"
                elif tag == "selected":
                    oid = chosen.get("optionId")
                    options = record["options"]
                    if type(oid) is str:
                        for option in options:
                            if type(option) is not dict:
                                continue
                            offered = option.get("optionId")
                            if offered == oid and type(offered) is str:
                                outcome = "selected"
                                option_id = oid
                                kind_ = option.get("kind")
                                approved = type(kind_) is str and kind_ in _ALLOW
                                break
                else:
                    outcome = "unknown"
        tcid = record.get("toolCallId")
        entry[1] = _permission_record(  # type: ignore[index]
            record["id"], sid, tcid, record["options"], outcome, option_id, approved, response
        )
        return Change(sid, "permission", record["id"], "resolved", tcid)

    def _permission_list(self, session_id: Any, pending: bool) -> List[Dict[str, Any]]:
        sid = _key(session_id, "session_id")
        return _fresh(
            [
                e[1]
                for e in self._perms
                if e is not None and e[0] == sid and (not pending or e[1]["outcome"] == "pending")
            ]
        )

    # -- queries ------------------------------------------------------------------------------

    def get(self, session_id, tool_call_id):  # type: ignore[no-untyped-def]
        """The tool call as a fresh dict in ACP wire shape, or None."""
        tcid = _key(tool_call_id, "tool_call_id")
        s = self._sessions.get(_key(session_id, "session_id"))
        f = None if s is None else s.calls.get(tcid)
        if f is None:
            return None
        return _fresh(_tool_record(tcid, f))

    def tool_calls(self, session_id):  # type: ignore[no-untyped-def]
        """``{toolCallId: record}`` of a session, in first-seen order."""
        s = self._sessions.get(_key(session_id, "session_id"))
        if s is None:
            return {}
        return _fresh({tcid: _tool_record(tcid, f) for tcid, f in s.calls.items()})

    def snapshot(self):  # type: ignore[no-untyped-def]
        """``{sessionId: {toolCallId: record}}`` of the sessions that hold tool calls."""
        return _fresh(
            {
                sid: {tcid: _tool_record(tcid, f) for tcid, f in s.calls.items()}
                for sid, s in self._sessions.items()
                if s.calls
            }
        )

    def terminal(self, session_id, terminal_id):  # type: ignore[no-untyped-def]
        """The terminal (``output`` as bytes), or None."""
        tid = _key(terminal_id, "terminal_id")
        s = self._sessions.get(_key(session_id, "session_id"))
        term = None if s is None else s.terms.get(tid)
        if term is None:
            return None
        return _fresh(_terminal_record(tid, term, bytes(term.out)))

    def terminals(self, session_id):  # type: ignore[no-untyped-def]
        """``{terminalId: record}`` of a session, in first-seen order."""
        s = self._sessions.get(_key(session_id, "session_id"))
        if s is None:
            return {}
        return _fresh({tid: _terminal_record(tid, t, bytes(t.out)) for tid, t in s.terms.items()})

    def plans(self, session_id):  # type: ignore[no-untyped-def]
        """``{planId: record}`` of a session, in first-seen order."""
        s = self._sessions.get(_key(session_id, "session_id"))
        if s is None:
            return {}
        return _fresh(s.plans)

    def permission(self, request_id):  # type: ignore[no-untyped-def]
        """The latest permission request with this id (``1`` and ``"1"`` differ): the pending one,
        else the last resolved one; None if there is none."""
        t = type(request_id)
        if not (request_id is None or t is str or (t is int and _I64_MIN <= request_id <= _I64_MAX)):
            if isinstance(request_id, str):
                request_id = str.__str__(request_id)
            elif (
                isinstance(request_id, int)
                and not isinstance(request_id, bool)
                and _I64_MIN <= request_id <= _I64_MAX
            ):
                request_id = int(request_id)
            else:
                raise TypeError(f"expected a request id (str, int or None), found {t.__name__}")
        index = self._pending.get(request_id)
        if index is not None:
            return _fresh(self._perms[index][1])  # type: ignore[index]
        id_type = type(request_id)
        for entry in reversed(self._perms):
            if entry is not None:
                rid = entry[1]["id"]
                if rid == request_id and type(rid) is id_type:
                    return _fresh(entry[1])
        return None

    def permissions(self, session_id):  # type: ignore[no-untyped-def]
        """The permission requests of a session (pending and resolved), in request order."""
        return self._permission_list(session_id, False)

    def pending_permissions(self, session_id):  # type: ignore[no-untyped-def]
        """The pending permission requests of a session, in request order."""
        return self._permission_list(session_id, True)

    def cancel_responses(self, session_id):  # type: ignore[no-untyped-def]
        """For each pending permission request of a session (request order), the frame a client
        must answer with after ``session/cancel``."""
        sid = _key(session_id, "session_id")
        return [
            _CANCEL_HEAD + dumps(e[1]["id"]) + _CANCEL_TAIL
            for e in self._perms
            if e is not None and e[0] == sid and e[1]["outcome"] == "pending"
        ]

    # -- checkpoints --------------------------------------------------------------------------

    def _state(self) -> Dict[str, Any]:
        """state() with values shared with the store (to_json writes it without copying)."""
        per_session: Dict[str, List[Any]] = {sid: [] for sid in self._sessions}
        for e in self._perms:
            if e is not None:
                per_session[e[0]].append(e[1])
        sessions: Dict[str, Any] = {}
        for sid, s in self._sessions.items():
            sessions[sid] = {
                "toolCalls": {tcid: _tool_record(tcid, f) for tcid, f in s.calls.items()},
                "terminals": {
                    tid: _terminal_record(tid, t, _b2a(t.out).decode("ascii")) for tid, t in s.terms.items()
                },
                "plans": dict(s.plans),
                "permissions": per_session[sid],
            }
        return {
            "format": STATE_FORMAT,
            "protocolVersion": self._fixed,
            "negotiatedVersion": self._negotiated,
            "maxToolCalls": self._max,
            "evicted": self._evicted,
            "sessions": sessions,
            "permissionOrder": [e[0] for e in self._perms if e is not None],
        }

    def state(self):  # type: ignore[no-untyped-def]
        """The whole store as a JSON-compatible dict (DESIGN 7.8); terminal output as base64."""
        return _fresh(self._state())

    def to_json(self):  # type: ignore[no-untyped-def]
        """``dumps(state())``: a checkpoint for ``from_json``."""
        return dumps(self._state())

    @classmethod
    def from_json(cls, data):  # type: ignore[no-untyped-def]
        """Rebuild a store from ``to_json()`` output (bytes or str). A document of another shape
        raises ValueError naming the path (the checks shared by both backends). The restored store
        starts a fresh decoder; its eviction order is the checkpoint's order."""
        doc = load_state(data, _exact_loads)
        store = cls(doc["protocolVersion"], max_tool_calls=doc["maxToolCalls"])
        negotiated = doc["negotiatedVersion"]
        store._negotiated = negotiated
        store._v2 = (store._fixed if store._fixed is not None else negotiated) == 2
        store._evicted = doc["evicted"]
        bounded = store._max is not None
        perms = store._perms
        pending = store._pending
        for sid, sdoc in doc["sessions"].items():
            s = store._sessions[sid] = _Session()
            for tcid, rec in sdoc["toolCalls"].items():
                f = {k: v for k, v in rec.items() if k != "toolCallId"}
                s.calls[tcid] = f
                store._count += 1
                if bounded:
                    store._seq += 1
                    store._created[(sid, tcid)] = [store._seq, False]
            for tid, rec in sdoc["terminals"].items():
                term = s.terms[tid] = _Terminal()
                term.out = bytearray(_a2b(rec["output"]))
                term.fields = {k: v for k, v in rec.items() if k != "terminalId" and k != "output"}
            s.plans.update(sdoc["plans"])
        records = {sid: iter(sdoc["permissions"]) for sid, sdoc in doc["sessions"].items()}
        for sid in doc["permissionOrder"]:
            rec = next(records[sid])
            ident = rec["id"]
            record = _permission_record(
                ident,
                sid,
                rec.get("toolCallId"),
                rec["options"],
                rec["outcome"],
                rec.get("optionId"),
                rec["approved"],
                rec.get("response", _MISSING),
            )
            if record["outcome"] == "pending":
                old = pending.get(ident, _MISSING)
                if old is not _MISSING:
                    perms[old] = None
                pending[ident] = len(perms)
            perms.append([sid, record])
        if bounded:
            store._rebuild_heap()
        return store


_HANDLERS = {
    "tool_call_update": ToolCallStore._on_tool_call_update,
    "tool_call_content_chunk": ToolCallStore._on_content_chunk,
    "tool_call": ToolCallStore._on_tool_call,
    "terminal_output_chunk": ToolCallStore._on_terminal_chunk,
    "terminal_update": ToolCallStore._on_terminal_update,
    "plan": ToolCallStore._on_plan,
    "plan_update": ToolCallStore._on_plan_update,
    "plan_removed": ToolCallStore._on_plan_removed,
}
