"""The protocol rules the schema cannot express, as checks of their own.

Mirror of ``rust/schema/rules.rs`` (its top comment lists the rules): ``mark``,
``custom_values`` and ``Conversation``, over dicts and lists; the conversation's limits are
``MAX_PENDING_IDS`` and ``MAX_TOOL_CALL_IDS``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Dict, List, Optional, Protocol, Tuple, Union

from ...problems import SchemaProblem
from ..encoder import dumps
from . import explain
from .check import Check, listed, needs_prefix
from .compile import Compiled
from .explain import Found

__all__ = [
    "PREFIXED_ENUMS",
    "CUSTOM_VALUE_PREFIX",
    "TOOL_CALL_TITLE",
    "UNEXPECTED_RESPONSE",
    "MAX_PENDING_IDS",
    "MAX_TOOL_CALL_IDS",
    "mark",
    "custom_values",
    "Conversation",
]

#: The extensible enumerations of protocol v2 whose custom values must begin with ``_``.
PREFIXED_ENUMS = ("ToolKind", "ToolCallStatus", "PermissionOptionKind")

CUSTOM_VALUE_PREFIX = "custom-value-prefix"
TOOL_CALL_TITLE = "tool-call-title"
UNEXPECTED_RESPONSE = "unexpected-response"

#: The most request ids a ``Conversation`` keeps pending (each with at most one request per
#: sender); past it the oldest is forgotten (Rust: ``MAX_PENDING_IDS``, the reasons there).
MAX_PENDING_IDS = 10_000
#: The most (sessionId, toolCallId) pairs a ``Conversation`` remembers for
#: ``tool-call-title``; past it the oldest is forgotten (Rust: ``MAX_TOOL_CALL_IDS``).
MAX_TOOL_CALL_IDS = 100_000

PathList = List[Union[str, int]]


class _Schema(Protocol):
    """What ``Conversation`` uses of the package's ``Schema`` (one protocol version's
    checks): named here so that this module does not import the package that imports it."""

    version: int

    def batches(self) -> bool: ...

    def frame(self, frame: Any, method: Optional[str], out: Found) -> None: ...

    def message(self, msg: Any, method: Optional[str], path: PathList, out: Found) -> None: ...


def mark(c: Compiled, version: int) -> None:
    """Mark the nodes of ``PREFIXED_ENUMS`` (protocol v2)."""
    if version < 2:
        return
    for name in PREFIXED_ENUMS:
        index = c.defs.get(name)
        if index is not None:
            c.nodes[index].open_prefix = True


def custom_values(check: Check, index: int, value: Any, path: PathList, out: Found) -> None:
    """Report the custom values without ``_`` in a value, following the branches that matched
    (nothing once ``out`` stopped)."""
    if out.stopped():
        return
    c = check.schema
    n = c.nodes[index]
    if n.open_prefix and isinstance(value, str) and needs_prefix(c, n, value):
        names = ", ".join(explain.lit_text(lit) for lit in listed(c, n))
        out.push(
            explain.problem(
                path,
                f'expected {explain.quote(path)} to be one of {names} or a custom value beginning with "_", '
                f"found {explain.describe(value)}",
                rule=CUSTOM_VALUE_PREFIX,
            )
        )
        return
    if n.reference is not None:
        custom_values(check, n.reference, value, path, out)
    for a in n.all_of:
        custom_values(check, a, value, path, out)
    for u in (n.any_of, n.one_of):
        if u is not None:
            for i in check.candidates(u, value):
                if check.valid(u.branches[i], value):
                    custom_values(check, u.branches[i], value, path, out)
                    break
    if isinstance(value, dict):
        for key, member in value.items():
            if out.stopped():
                return
            target = n.properties.get(key, n.additional)
            if target is not None:
                custom_values(check, target, member, path + [key], out)
    elif isinstance(value, list) and n.items is not None:
        for i, item in enumerate(value):
            if out.stopped():
                return
            custom_values(check, n.items, item, path + [i], out)


def _id_key(value: Any) -> Tuple[str, Any]:
    """An id as a key: its type and its value (``1`` and ``"1"`` differ)."""
    return (type(value).__name__, value)


def _json_text(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return "object" if isinstance(value, dict) else "array"
    return dumps(value).decode("utf-8")


def _asked_version(msg: Dict[str, Any]) -> int:
    """The version an ``initialize`` request asks for: 2 for a ``protocolVersion`` of 2 or more,
    else 1."""
    params = msg.get("params")
    version = params.get("protocolVersion") if isinstance(params, dict) else None
    return 2 if isinstance(version, int) and not isinstance(version, bool) and version >= 2 else 1


class Conversation:
    """The conversation so far: the requests still pending (by sender and id) and the tool calls
    already reported (by session and id).

    Both are bounded (``MAX_PENDING_IDS``, ``MAX_TOOL_CALL_IDS``, or the arguments): past a limit
    the oldest entry (in the order first seen) is forgotten, in O(1). Once any request was
    forgotten, a response to an id with no pending request may answer one of them, so
    ``unexpected-response`` is then a warning; a tool call forgotten and reported again without a
    title gets the ``tool-call-title`` warning again."""

    def __init__(self, pending: int = MAX_PENDING_IDS, tool_calls: int = MAX_TOOL_CALL_IDS) -> None:
        #: By id, in the order first seen: [sender, method] of each pending request, in the order
        #: they were made.
        self.pending: OrderedDict[Tuple[str, Any], List[List[Optional[str]]]] = OrderedDict()
        #: How many pending requests were forgotten to stay within ``pending_limit``.
        self.evicted = 0
        #: The tool calls reported, in the order first seen (the values are unused).
        self.tool_calls: OrderedDict[Tuple[str, str], None] = OrderedDict()
        self.pending_limit = max(pending, 1)
        self.tool_call_limit = max(tool_calls, 1)
        #: The protocol version of the answer to ``initialize`` (1 for an answer of 1 or less,
        #: else 2), once there was one: for callers that follow the negotiation.
        self.negotiated: Optional[int] = None
        #: The version an ``initialize`` request asked for (1 or 2) and its sender, until the
        #: answer: that sender speaks it meanwhile (a client may send ``session/new`` right behind it).
        self.asked: Optional[Tuple[int, Optional[str]]] = None

    def sizes(self) -> Tuple[int, int, int]:
        """(pending request ids, tool call ids remembered, pending requests forgotten so far)."""
        return len(self.pending), len(self.tool_calls), self.evicted

    def _add_pending(self, key: Tuple[str, Any], sender: Optional[str], method: str) -> None:
        """A request of ``method`` with id ``key`` from ``sender`` is pending; forget the oldest id
        past the limit."""
        entries = self.pending.get(key)
        if entries is not None:
            same = next((entry for entry in entries if entry[0] == sender), None)
            if same is not None:
                same[1] = method
            else:
                entries.append([sender, method])
            return
        self.pending[key] = [[sender, method]]
        while len(self.pending) > self.pending_limit:
            self.evicted += len(self.pending.popitem(last=False)[1])

    def _answer(self, key: Tuple[str, Any], sender: Optional[str]) -> Optional[str]:
        """The method of the earliest pending request with id ``key`` answered by ``sender`` (from
        another sender, or any when None), no longer pending."""
        entries = self.pending.get(key)
        if entries is None:
            return None
        at = next((i for i, entry in enumerate(entries) if sender is None or entry[0] != sender), None)
        found = entries.pop(at)[1] if at is not None else None
        if not entries:
            del self.pending[key]
        return found

    def _add_tool_call(self, session: str, tool_call: str) -> bool:
        """Remember that tool call ``tool_call`` of ``session`` was reported: False when it already
        was. Forget the oldest past the limit."""
        key = (session, tool_call)
        if key in self.tool_calls:
            return False
        self.tool_calls[key] = None
        while len(self.tool_calls) > self.tool_call_limit:
            self.tool_calls.popitem(last=False)
        return True

    def check(self, schema: _Schema, frame: Any, sender: Optional[str]) -> List[SchemaProblem]:
        """The problems of one parsed frame, ``sender`` being the side it comes from."""
        return self.check_at_most(schema, frame, sender, None)

    def check_at_most(
        self, schema: _Schema, frame: Any, sender: Optional[str], limit: Optional[int]
    ) -> List[SchemaProblem]:
        """``check``, stopping the check of a message (of each entry of a batch) at its
        ``limit + 1``th error (``Found``: the first ``limit`` errors, then a ``problem-limit``
        marker; None: no limit)."""
        if isinstance(frame, list) and schema.batches() and frame:
            out: List[SchemaProblem] = []
            for i, entry in enumerate(frame):
                found = Found(limit, [i])
                self._message(schema, entry, [i], sender, found)
                out.extend(found.list)
            return out
        found = Found(limit, [])
        if isinstance(frame, dict):
            self._message(schema, frame, [], sender, found)
        else:
            schema.frame(frame, None, found)
        return found.list

    def _message(self, schema: _Schema, msg: Any, path: PathList, sender: Optional[str], out: Found) -> None:
        if not isinstance(msg, dict):
            schema.message(msg, None, path, out)
            return
        method = msg.get("method")
        hint: Optional[str] = None
        if "method" in msg:
            if isinstance(method, str) and "id" in msg:
                self._add_pending(_id_key(msg["id"]), sender, method)
                if method == "initialize":
                    self.asked = (_asked_version(msg), sender)
            if method == "session/update":
                self._tool_call(msg, path, out)
        elif "id" in msg and not (msg["id"] is None and "error" in msg):
            # an error reply with "id": null answers a frame whose id could not be read (JSON-RPC
            # 2.0: a parse error, an invalid request): there is no request to pair it with
            hint = self._answer(_id_key(msg["id"]), sender)
            if hint is None:
                n = self.evicted
                forgotten = (
                    ""
                    if n == 0
                    else "; 1 older request was forgotten, it may answer it"
                    if n == 1
                    else f"; {n} older requests were forgotten, it may answer one of them"
                )
                out.push(
                    explain.problem(
                        path + ["id"],
                        "expected a response to a request that was made, found one for id "
                        f"{_json_text(msg['id'])} (no such request pending{forgotten})",
                        severity="warning" if n else "error",
                        rule=UNEXPECTED_RESPONSE,
                    )
                )
        if hint == "initialize":
            self._learn_version(msg)
        schema.message(msg, hint, path, out)

    def version_of(self, sender: Optional[str]) -> Optional[int]:
        """The version ``sender`` speaks: the negotiated one, else the one it asked for in an
        ``initialize`` not answered yet, else None (the caller's default)."""
        if self.negotiated is not None:
            return self.negotiated
        asked = self.asked
        if asked is not None and (asked[1] is None or asked[1] == sender):
            return asked[0]
        return None

    def _learn_version(self, msg: Dict[str, Any]) -> None:
        result = msg.get("result")
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if isinstance(version, int) and not isinstance(version, bool):
            self.negotiated = 1 if version <= 1 else 2

    def _tool_call(self, msg: Dict[str, Any], path: PathList, out: Found) -> None:
        params = msg.get("params")
        update = params.get("update") if isinstance(params, dict) else None
        if not isinstance(update, dict) or update.get("sessionUpdate") not in ("tool_call", "tool_call_update"):
            return
        session, tool_call = params.get("sessionId"), update.get("toolCallId")  # type: ignore[union-attr]
        if (
            not isinstance(session, str)
            or not isinstance(tool_call, str)
            or not self._add_tool_call(session, tool_call)
        ):
            return
        if not isinstance(update.get("title"), str):
            where = path + ["params", "update", "title"]
            out.push(
                explain.problem(
                    where,
                    f"expected {explain.quote(where)} the first time tool call {explain.lit_text(tool_call)} is "
                    "reported (an agent SHOULD give a title), found none",
                    severity="warning",
                    rule=TOOL_CALL_TITLE,
                )
            )
