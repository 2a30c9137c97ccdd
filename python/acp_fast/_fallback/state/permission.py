"""Permission requests and responses (DESIGN 7.5), and the protocol version a response teaches
(7.1): ``permission_request`` (a ``session/request_permission`` request: its tool call applied as
a ``tool_call_update``, the request recorded) and ``response`` (resolves a pending request, or
sets the negotiated version); ``cancel_responses``, what a client answers after ``session/cancel``;
``cancel_request``, a ``$/cancel_request`` notification (the request it cancels, who sent it).

Mirror of ``rust/state/permission.rs``. Differences on purpose: here a record is ``[session id,
record dict]``, the dict in materialized key order and rebuilt when the request is resolved; Rust
keeps a ``Permission`` with its session's slot and the JSON text of ``options`` / ``response``.
"""

from __future__ import annotations

from heapq import heappush
from typing import Any, Callable, Dict, List, Optional, Tuple, cast

from ..encoder import dumps
from .evict import drop_permission, push_permission, touch_session, trim_permissions
from .read import BAD_SID, Bad, exactly, plain, text
from .records import MISSING, Change, Store, permission_record
from .request import answered
from .tool_call import check_tool_call, commit_tool_call

__all__ = ["MAX_CANCEL_REQUESTS", "cancel_request", "cancel_responses", "permission_request", "response"]

#: How many ``$/cancel_request`` notifications a store keeps (the oldest go first).
MAX_CANCEL_REQUESTS = 1000

_ALLOW = frozenset(("allow_once", "allow_always"))
_CANCEL_HEAD = b'{"jsonrpc":"2.0","id":'
_CANCEL_TAIL = b',"result":{"outcome":{"outcome":"cancelled"}}}\n'
# `dumps` takes any JSON value (typed here for the call below).
_dumps: Callable[[Any], bytes] = dumps


def permission_request(store: Store, params: Dict[str, Any], ident: Any) -> Change:
    """A ``session/request_permission`` request: ``params.options`` must be an array; its tool call
    (``params.toolCall``, else the ``toolCall`` of a ``tool_call`` subject) is applied as a
    ``tool_call_update`` of the version in force; the request is recorded as pending (replacing a
    pending one with its id)."""
    sid = text(params.get("sessionId"))
    if type(sid) is not str:
        raise BAD_SID
    # The tool-call update: params.toolCall (present and not null), else the toolCall of a
    # subject {"type": "tool_call"}; path () when there is none.
    tool_call = params.get("toolCall")
    path: Tuple[str, ...] = ("params", "toolCall")
    if tool_call is None:
        subject = params.get("subject")
        if type(subject) is dict and subject.get("type") == "tool_call":
            path = ("params", "subject", "toolCall")
            tool_call = subject.get("toolCall", MISSING)
        else:
            path = ()
    # Checks in DESIGN 7.7 order: the tool call's id (and content / locations), options, then the
    # tool call being an object.
    tcid = None
    update: Optional[Dict[str, Any]] = None
    if type(tool_call) is dict:
        update = tool_call
        tcid = check_tool_call(update, path)
    options = params.get("options")
    if type(options) is not list:
        raise Bad("invalid_options", ("params", "options"), "an array")
    if path and tcid is None:
        raise Bad("invalid_tool_call", path, "an object")
    if tcid is not None and update is not None:
        commit_tool_call(store, sid, tcid, update)
    store._session(sid)  # first: a new session may drop another (max_sessions), and its records
    pending = store._pending
    old = pending.get(ident, MISSING)
    if old is not MISSING:
        drop_permission(store, old)
    pending[ident] = len(store._permissions)
    push_permission(store, [sid, permission_record(ident, sid, tcid, options, "pending", None, False, MISSING)])
    trim_permissions(store, sid)
    return Change(sid, "permission", ident, "requested", tcid)


def response(store: Store, value: Dict[str, Any], m: Any, source: Any, frame: Optional[bytes]) -> Optional[Change]:
    """A response or error response (the Message ``m``, its parsed object ``value``; ``frame``:
    its bytes when ``value`` is orjson's parse): resolves the pending request with its id (unless
    the agent sent it), else a success response whose ``result.protocolVersion`` is an integer sets
    the negotiated version."""
    kind = m._kind
    index = MISSING
    if source != "agent" and store._pending:
        index = store._pending.get(m._id, MISSING)
    if index is MISSING and store._requests:
        key = m._id
        if (source != "agent" and (True, key) in store._requests) or (
            source != "client" and (False, key) in store._requests
        ):
            if frame is not None:
                value = exactly(frame, value)
            return cast(Optional[Change], answered(store, value, kind, key, source))
    if index is MISSING:
        if kind != "response":
            return None
        result = value["result"]
        if type(result) is not dict or "protocolVersion" not in result:
            return None
    if frame is not None:
        value = exactly(frame, value)
    if index is not MISSING:
        del store._pending[m._id]
        return resolve(store, index, kind, value)
    pv = plain(value["result"]["protocolVersion"])
    if type(pv) is not int:
        return None
    version = 1 if pv <= 1 else 2
    store._set_negotiated(version)
    return Change(None, "protocol", version, "negotiated", None)


def cancel_responses(store: Store, sid: str) -> List[bytes]:
    """For each pending request of session ``sid`` (request order), the frame a client must answer
    with after ``session/cancel``."""
    return [
        _CANCEL_HEAD + _dumps(e[1]["id"]) + _CANCEL_TAIL
        for e in store._permissions
        if e is not None and e[0] == sid and e[1]["outcome"] == "pending"
    ]


def cancel_request(store: Store, params: Dict[str, Any], source: Any) -> Change:
    """A ``$/cancel_request`` notification: ``params.requestId`` (a string, an integer or null) and
    its sender are kept (the last ``MAX_CANCEL_REQUESTS``); the change names the request, and its
    session and tool call when it is a pending permission request."""
    rid = text(params.get("requestId", MISSING))
    if not (rid is None or type(rid) is str or (type(rid) is int and -(2**63) <= rid < 2**63)):
        raise Bad("invalid_request_id", ("params", "requestId"), "a string, an integer or null")
    requests = store._cancel_requests
    if len(requests) == MAX_CANCEL_REQUESTS:
        requests.popleft()
    requests.append((rid, source))
    index = store._pending.get(rid, MISSING)
    if index is MISSING:
        return Change(None, "request", rid, "cancelled", None)
    sid, record = store._permissions[index]
    return Change(sid, "request", rid, "cancelled", record.get("toolCallId"))


def resolve(store: Store, index: int, kind: str, value: Dict[str, Any]) -> Change:
    """Resolve the pending request at ``index`` with a response (DESIGN 7.5)."""
    entry = store._permissions[index]
    assert entry is not None  # a pending request's record
    sid, record = entry
    approved = False
    option_id = None
    if kind == "error":
        outcome = "error"
        answer = value["error"]
    else:
        answer = value["result"]
        outcome = "invalid"
        chosen = answer.get("outcome") if type(answer) is dict else None
        if type(chosen) is dict:
            tag = text(chosen.get("outcome"))
            if type(tag) is not str:
                outcome = "unknown"
            elif tag == "cancelled":
                outcome = "cancelled"
            elif tag == "selected":
                oid = text(chosen.get("optionId"))
                if type(oid) is str:
                    for option in record["options"]:
                        if type(option) is not dict:
                            continue
                        offered = text(option.get("optionId"))
                        if offered == oid and type(offered) is str:
                            outcome = "selected"
                            option_id = oid
                            kind_ = text(option.get("kind"))
                            approved = type(kind_) is str and kind_ in _ALLOW
                            break
            else:
                outcome = "unknown"
    tcid = record.get("toolCallId")
    entry[1] = permission_record(record["id"], sid, tcid, record["options"], outcome, option_id, approved, answer)
    s = store._sessions[sid]
    heappush(s.resolved, index)
    if store._max_sessions is not None:
        touch_session(store, sid, s)
    return Change(sid, "permission", record["id"], "resolved", tcid)
