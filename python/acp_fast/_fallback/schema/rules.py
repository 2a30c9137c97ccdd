"""The protocol rules the schema cannot express, as checks of their own.

Mirror of ``rust/schema/rules.rs`` (its top comment lists the rules): ``mark``,
``custom_values`` and :class:`Conversation`, over dicts and lists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set, Tuple, Union

from ...problems import SchemaProblem
from ..encoder import dumps
from . import explain
from .check import listed, needs_prefix
from .compile import Compiled

if TYPE_CHECKING:
    from . import Schema
    from .check import Check

__all__ = [
    "PREFIXED_ENUMS",
    "CUSTOM_VALUE_PREFIX",
    "TOOL_CALL_TITLE",
    "UNEXPECTED_RESPONSE",
    "mark",
    "custom_values",
    "Conversation",
]

#: The extensible enumerations of protocol v2 whose custom values must begin with ``_``.
PREFIXED_ENUMS = ("ToolKind", "ToolCallStatus", "PermissionOptionKind")

CUSTOM_VALUE_PREFIX = "custom-value-prefix"
TOOL_CALL_TITLE = "tool-call-title"
UNEXPECTED_RESPONSE = "unexpected-response"

PathList = List[Union[str, int]]


def mark(c: Compiled, version: int) -> None:
    """Mark the nodes of ``PREFIXED_ENUMS`` (protocol v2)."""
    if version < 2:
        return
    for name in PREFIXED_ENUMS:
        index = c.defs.get(name)
        if index is not None:
            c.nodes[index].open_prefix = True


def custom_values(check: Check, index: int, value: Any, path: PathList, out: List[SchemaProblem]) -> None:
    """Report the custom values without ``_`` in a value, following the branches that matched."""
    c = check.schema
    n = c.nodes[index]
    if n.open_prefix and isinstance(value, str) and needs_prefix(c, n, value):
        names = ", ".join(explain.lit_text(lit) for lit in listed(c, n))
        out.append(
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
            target = n.properties.get(key, n.additional)
            if target is not None:
                custom_values(check, target, member, path + [key], out)
    elif isinstance(value, list) and n.items is not None:
        for i, item in enumerate(value):
            custom_values(check, n.items, item, path + [i], out)


def _id_key(value: Any) -> Tuple[str, Any]:
    """An id as a key: its type and its value (``1`` and ``"1"`` differ)."""
    return (type(value).__name__, value)


def _json_text(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return "object" if isinstance(value, dict) else "array"
    return dumps(value).decode("utf-8")


class Conversation:
    """The conversation so far: the requests still pending (by sender and id) and the tool calls
    already reported (by session and id)."""

    def __init__(self) -> None:
        #: By id: [sender, method] of each pending request, in the order they were made.
        self.pending: Dict[Tuple[str, Any], List[List[Optional[str]]]] = {}
        self.tool_calls: Set[Tuple[str, str]] = set()
        #: The protocol version of the answer to ``initialize`` (1 for an answer of 1 or less,
        #: else 2), once there was one: for callers that follow the negotiation.
        self.negotiated: Optional[int] = None

    def check(self, schema: Schema, frame: Any, sender: Optional[str]) -> List[SchemaProblem]:
        """The problems of one parsed frame, ``sender`` being the side it comes from."""
        out: List[SchemaProblem] = []
        if isinstance(frame, list) and schema.version >= 2 and frame:
            for i, entry in enumerate(frame):
                self._message(schema, entry, [i], sender, out)
        elif isinstance(frame, dict):
            self._message(schema, frame, [], sender, out)
        else:
            schema.frame(frame, None, out)
        return out

    def _message(
        self, schema: Schema, msg: Any, path: PathList, sender: Optional[str], out: List[SchemaProblem]
    ) -> None:
        if not isinstance(msg, dict):
            schema.message(msg, None, path, out)
            return
        method = msg.get("method")
        hint: Optional[str] = None
        if "method" in msg:
            if isinstance(method, str) and "id" in msg:
                entries = self.pending.setdefault(_id_key(msg["id"]), [])
                same = next((entry for entry in entries if entry[0] == sender), None)
                if same is not None:
                    same[1] = method
                else:
                    entries.append([sender, method])
            if method == "session/update":
                self._tool_call(msg, path, out)
        elif "id" in msg:
            key = _id_key(msg["id"])
            entries = self.pending.get(key, [])
            at = next((i for i, entry in enumerate(entries) if sender is None or entry[0] != sender), None)
            if at is not None:
                hint = entries.pop(at)[1]
            if not entries:
                self.pending.pop(key, None)
            if at is None:
                out.append(
                    explain.problem(
                        path + ["id"],
                        "expected a response to a request that was made, found one for id "
                        f"{_json_text(msg['id'])} (no such request pending)",
                        rule=UNEXPECTED_RESPONSE,
                    )
                )
        if hint == "initialize":
            self._learn_version(msg)
        schema.message(msg, hint, path, out)

    def _learn_version(self, msg: Dict[str, Any]) -> None:
        result = msg.get("result")
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if isinstance(version, int) and not isinstance(version, bool):
            self.negotiated = 1 if version <= 1 else 2

    def _tool_call(self, msg: Dict[str, Any], path: PathList, out: List[SchemaProblem]) -> None:
        params = msg.get("params")
        update = params.get("update") if isinstance(params, dict) else None
        if not isinstance(update, dict) or update.get("sessionUpdate") not in ("tool_call", "tool_call_update"):
            return
        session, tool_call = params.get("sessionId"), update.get("toolCallId")  # type: ignore[union-attr]
        if not isinstance(session, str) or not isinstance(tool_call, str) or (session, tool_call) in self.tool_calls:
            return
        self.tool_calls.add((session, tool_call))
        if not isinstance(update.get("title"), str):
            where = path + ["params", "update", "title"]
            out.append(
                explain.problem(
                    where,
                    f"expected {explain.quote(where)} the first time tool call {explain.lit_text(tool_call)} is "
                    "reported (an agent SHOULD give a title), found none",
                    severity="warning",
                    rule=TOOL_CALL_TITLE,
                )
            )
