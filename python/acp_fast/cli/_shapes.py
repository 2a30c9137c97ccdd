"""ACP message shapes for ``acp-fast validate`` (private).

Three things live here:

* :func:`protocol` — the method table of one protocol version (v1, v2, optionally with the
  unstable surface), read from the official schema shipped in ``acp_fast/schema/``: which side
  sends each method, whether it is a request or a notification, and the schema definitions of its
  params and result.
* The shape checks: small hand-written descriptions of the messages that matter most (the
  ``session/update`` variants, permission requests, ``initialize``, ``session/new``,
  ``session/prompt``), following the spec digest; every other method gets its top-level required
  members and their simple types from the schema. A check returns :class:`Issue` objects whose
  messages read like the codec's own (``expected "params.update.toolCallId" to be a string, found
  none``).
* :class:`SchemaChecker` — validation against the official schema with
  :func:`acp_fast.validate_schema`, which finds and reports the failing branch of a union.

Plus :func:`locate`, which finds the byte offset of a value inside a frame, so that problems can
name a column.

The shape language (:class:`Issue`, :class:`Spec` and its kinds) lives in ``_spec``, the schema
loading and :class:`SchemaChecker` in ``_schema_check``, :func:`locate` in ``_offsets``; their names
are imported here, where ``acp-fast validate`` and the tests use them.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from ._offsets import locate, members, skip_value
from ._schema_check import SchemaChecker, SchemaUnavailable, load_schema
from ._spec import (
    ANY,
    ARR,
    ARR_N,
    OBJ,
    OBJ_N,
    PROTOCOL_VERSION,
    STR,
    STR_N,
    UINT,
    UINT32_N,
    Arr,
    Base64,
    Enum,
    Issue,
    Obj,
    Path,
    Spec,
    Tagged,
    Type,
    describe,
    opt,
    render_path,
    req,
)

# This module's own names, and those of its parts that callers use through it.
__all__ = [
    "V1_TOOL_KINDS",
    "V1_TOOL_STATUSES",
    "V1_PLAN_STATUSES",
    "PLAN_PRIORITIES",
    "PERMISSION_KINDS",
    "STOP_REASONS",
    "IMPLEMENTATION",
    "IMPLEMENTATION_N",
    "LOCATION",
    "Method",
    "Protocol",
    "protocol",
    "check",
    "SchemaChecker",
    "SchemaUnavailable",
    "load_schema",
    "locate",
    "members",
    "skip_value",
    "ANY",
    "ARR",
    "ARR_N",
    "OBJ",
    "OBJ_N",
    "PROTOCOL_VERSION",
    "STR",
    "STR_N",
    "UINT",
    "UINT32_N",
    "Arr",
    "Base64",
    "Enum",
    "Issue",
    "Obj",
    "Path",
    "Spec",
    "Tagged",
    "Type",
    "describe",
    "opt",
    "render_path",
    "req",
]


# ---------------------------------------------------------------------------------------------
# The hand-written shapes (spec digest §4-§9)

V1_TOOL_KINDS = ("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other")
V1_TOOL_STATUSES = ("pending", "in_progress", "completed", "failed")
V1_PLAN_STATUSES = ("pending", "in_progress", "completed")
PLAN_PRIORITIES = ("high", "medium", "low")
PERMISSION_KINDS = ("allow_once", "allow_always", "reject_once", "reject_always")
STOP_REASONS = ("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled")

IMPLEMENTATION = Obj({"name": req(STR), "title": opt(STR_N), "version": req(STR)})
IMPLEMENTATION_N = Obj(IMPLEMENTATION.fields, nullable=True)


def _content_block(version: int) -> Tagged:
    media = Obj({"data": req(STR), "mimeType": req(STR)})
    return Tagged(
        "type",
        {
            "text": Obj({"text": req(STR)}),
            "image": media,
            "audio": media,
            "resource_link": Obj({"name": req(STR), "uri": req(STR)}),
            "resource": Obj({"resource": req(OBJ)}),
        },
        name="a content block type",
        open=version == 2,
    )


def _tool_content(version: int) -> Tagged:
    block = _content_block(version)
    if version == 1:
        diff = Obj({"path": req(STR), "oldText": opt(STR_N), "newText": req(STR)})
    else:
        change = Tagged(
            "operation",
            {
                "add": Obj({"path": req(STR)}),
                "delete": Obj({"path": req(STR)}),
                "modify": Obj({"path": req(STR)}),
                "move": Obj({"oldPath": req(STR), "path": req(STR)}),
                "copy": Obj({"oldPath": req(STR), "path": req(STR)}),
            },
            name="a diff operation",
            open=True,
        )
        diff = Obj(
            {"changes": req(Arr(change)), "patch": opt(Obj({"format": req(STR), "text": req(STR)}, nullable=True))}
        )
    return Tagged(
        "type",
        {"content": Obj({"content": req(block)}), "diff": diff, "terminal": Obj({"terminalId": req(STR)})},
        name="a tool call content type",
        open=version == 2,
    )


LOCATION = Obj({"path": req(STR), "line": opt(UINT32_N)})


def _tool_fields(version: int, *, create: bool) -> Dict[str, Tuple[bool, Spec]]:
    """Members of a v1 ``tool_call`` (create) or of a v1/v2 ``tool_call_update``."""
    content = _tool_content(version)
    if version == 1 and create:
        return {
            "toolCallId": req(STR),
            "title": req(STR),
            "kind": opt(Enum(V1_TOOL_KINDS)),
            "status": opt(Enum(V1_TOOL_STATUSES)),
            "content": opt(Arr(content)),
            "locations": opt(Arr(LOCATION)),
        }
    if version == 1:
        kind: Spec = Enum(V1_TOOL_KINDS, nullable=True)
        status: Spec = Enum(V1_TOOL_STATUSES, nullable=True)
    else:
        kind = status = STR_N
    return {
        "toolCallId": req(STR),
        "title": opt(STR_N),
        "kind": opt(kind),
        "status": opt(status),
        "content": opt(Arr(content, nullable=True)),
        "locations": opt(Arr(LOCATION, nullable=True)),
    }


def _session_update(version: int, unstable: bool) -> Tagged:
    block = _content_block(version)
    commands = Obj({"availableCommands": req(Arr(Obj({"name": req(STR), "description": req(STR)})))})
    common = {
        "available_commands_update": commands,
        "config_option_update": Obj({"configOptions": req(ARR)}),
        "session_info_update": Obj({"title": opt(STR_N), "updatedAt": opt(STR_N)}),
        "usage_update": Obj({"used": req(UINT), "size": req(UINT), "cost": opt(OBJ_N)}),
    }
    if version == 1:
        chunk = Obj({"content": req(block), "messageId": opt(STR_N)})
        entry = Obj(
            {"content": req(STR), "priority": req(Enum(PLAN_PRIORITIES)), "status": req(Enum(V1_PLAN_STATUSES))}
        )
        branches = {
            "user_message_chunk": chunk,
            "agent_message_chunk": chunk,
            "agent_thought_chunk": chunk,
            "tool_call": Obj(_tool_fields(1, create=True)),
            "tool_call_update": Obj(_tool_fields(1, create=False)),
            "plan": Obj({"entries": req(Arr(entry))}),
            "current_mode_update": Obj({"currentModeId": req(STR)}),
            **common,
        }
        moved = {
            name: "a protocol v2 update"
            for name in (
                "user_message",
                "agent_message",
                "agent_thought",
                "state_update",
                "tool_call_content_chunk",
                "terminal_update",
                "terminal_output_chunk",
                "plan_update",
                "plan_removed",
            )
        }
        if unstable:  # plan_update / plan_removed / notice / compaction_* exist in the v1 unstable schema
            moved = {}
        return Tagged("sessionUpdate", branches, name="a protocol v1 session update", open=unstable, moved=moved)
    chunk = Obj({"messageId": req(STR), "content": req(block)})
    message = Obj({"messageId": req(STR), "content": opt(Arr(block, nullable=True))})
    entry = Obj({"content": req(STR), "priority": req(STR), "status": req(STR)})
    plan = Tagged(
        "type",
        {"items": Obj({"planId": req(STR), "entries": req(Arr(entry))})},
        name="a plan content type",
        open=True,
        other=Obj({"planId": req(STR)}),
    )
    branches = {
        "user_message_chunk": chunk,
        "agent_message_chunk": chunk,
        "agent_thought_chunk": chunk,
        "user_message": message,
        "agent_message": message,
        "agent_thought": message,
        "state_update": Obj({"state": req(STR), "stopReason": opt(STR_N)}),
        "tool_call_update": Obj(_tool_fields(2, create=False)),
        "tool_call_content_chunk": Obj({"toolCallId": req(STR), "content": req(_tool_content(2))}),
        "terminal_update": Obj(
            {
                "terminalId": req(STR),
                "command": opt(STR_N),
                "cwd": opt(STR_N),
                "output": opt(Obj({"data": req(Base64())}, nullable=True)),
                "exitStatus": opt(Obj({"exitCode": opt(UINT32_N), "signal": opt(STR_N)}, nullable=True)),
            }
        ),
        "terminal_output_chunk": Obj({"terminalId": req(STR), "data": req(Base64())}),
        "plan_update": Obj({"plan": req(plan)}),
        **common,
    }
    moved = {
        "tool_call": "a protocol v1 update; v2 creates tool calls with tool_call_update",
        "plan": "a protocol v1 update; v2 uses plan_update",
        "current_mode_update": "a protocol v1 update; v2 uses config options",
    }
    if unstable:
        branches["plan_removed"] = Obj({"planId": req(STR)})
    return Tagged("sessionUpdate", branches, name="a protocol v2 session update", open=True, moved=moved)


def _outcome(version: int) -> Obj:
    return Obj(
        {
            "outcome": req(
                Tagged(
                    "outcome",
                    {"selected": Obj({"optionId": req(STR)}), "cancelled": Obj()},
                    name="a permission outcome",
                    open=version == 2,
                )
            )
        }
    )


def _hand_written(version: int, unstable: bool) -> Dict[str, Tuple[Optional[Spec], Optional[Spec]]]:
    """method -> (params shape, result shape) for the methods the spec digest describes."""
    update = _session_update(version, unstable)
    session = {"sessionId": req(STR)}
    if version == 1:
        option = Obj({"optionId": req(STR), "name": req(STR), "kind": req(Enum(PERMISSION_KINDS))})
        return {
            "initialize": (
                Obj(
                    {
                        "protocolVersion": req(PROTOCOL_VERSION),
                        "clientCapabilities": opt(OBJ),
                        "clientInfo": opt(IMPLEMENTATION_N),
                    }
                ),
                Obj(
                    {
                        "protocolVersion": req(PROTOCOL_VERSION),
                        "agentCapabilities": opt(OBJ),
                        "authMethods": opt(ARR),
                        "agentInfo": opt(IMPLEMENTATION_N),
                    }
                ),
            ),
            "session/new": (Obj({"cwd": req(STR), "mcpServers": req(ARR)}), Obj({"sessionId": req(STR)})),
            "session/prompt": (
                Obj({**session, "prompt": req(Arr(_content_block(1)))}),
                Obj({"stopReason": req(Enum(STOP_REASONS))}),
            ),
            "session/cancel": (Obj(session), None),
            "session/update": (Obj({**session, "update": req(update)}), None),
            "session/request_permission": (
                Obj({**session, "toolCall": req(Obj(_tool_fields(1, create=False))), "options": req(Arr(option))}),
                _outcome(1),
            ),
        }
    option = Obj({"optionId": req(STR), "name": req(STR), "kind": req(STR)})
    subject = Tagged(
        "type",
        {
            "tool_call": Obj({"toolCall": req(Obj(_tool_fields(2, create=False)))}),
            "command": Obj({"command": req(STR), "cwd": req(STR)}),
        },
        name="a permission subject type",
        open=True,
        nullable=True,
    )
    return {
        "initialize": (
            Obj({"protocolVersion": req(PROTOCOL_VERSION), "info": req(IMPLEMENTATION), "capabilities": opt(OBJ)}),
            Obj(
                {
                    "protocolVersion": req(PROTOCOL_VERSION),
                    "info": req(IMPLEMENTATION),
                    "capabilities": opt(OBJ),
                    "authMethods": opt(ARR),
                }
            ),
        ),
        "session/new": (Obj({"cwd": req(STR), "mcpServers": opt(ARR)}), Obj({"sessionId": req(STR)})),
        "session/prompt": (Obj({**session, "prompt": req(Arr(_content_block(2)))}), OBJ),
        "session/cancel": (Obj(session), None),
        "session/update": (Obj({**session, "update": req(update)}), None),
        "session/request_permission": (
            Obj(
                {
                    **session,
                    "title": req(STR),
                    "description": opt(STR_N),
                    "subject": opt(subject),
                    "options": req(Arr(option, min_items=1)),
                }
            ),
            _outcome(2),
        ),
    }


# ---------------------------------------------------------------------------------------------
# The schema-driven part: method tables, generic top-level shapes


def _simple(defs: Dict[str, Any], schema: Any, depth: int = 0) -> Spec:
    """A top-level member's schema as a simple type check, when it is one (else ANY)."""
    if not isinstance(schema, dict) or depth > 4:
        return ANY
    if "$ref" in schema:
        return _simple(defs, defs.get(schema["$ref"].rsplit("/", 1)[-1]), depth + 1)
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return _simple(defs, schema["allOf"][0], depth + 1)
    if "anyOf" in schema and len(schema["anyOf"]) == 2 and {"type": "null"} in schema["anyOf"]:
        inner = _simple(defs, next(s for s in schema["anyOf"] if s != {"type": "null"}), depth + 1)
        if isinstance(inner, Type):
            return Type(inner.name, nullable=True, minimum=inner.minimum, maximum=inner.maximum)
        return ANY
    kind = schema.get("type")
    nullable = False
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        nullable = len(kinds) < len(kind)
        kind = kinds[0] if len(kinds) == 1 else None
    if kind in ("string", "integer", "boolean", "object", "array", "number"):
        if kind == "integer" and ("minimum" in schema or "maximum" in schema):
            return Type(kind, nullable=nullable, minimum=schema.get("minimum"), maximum=schema.get("maximum"))
        return Type(kind, nullable=nullable)
    return ANY


def _generic(defs: Dict[str, Any], name: Optional[str]) -> Optional[Spec]:
    """An object with the definition's required members and the simple types of its members."""
    if name is None:
        return None
    definition = defs.get(name) or {}
    if definition.get("type") != "object":
        return ANY
    properties = definition.get("properties", {})
    required = definition.get("required", [])
    fields: Dict[str, Tuple[bool, Spec]] = {}
    for member in list(properties) + [r for r in required if r not in properties]:
        if member == "_meta":
            continue
        fields[member] = (member in required, _simple(defs, properties.get(member)))
    return Obj(fields)


class Method(NamedTuple):
    name: str
    kind: str  # "request" or "notification"
    sender: Optional[str]  # "client", "agent" or None (either side)
    params_def: Optional[str]
    result_def: Optional[str]
    params: Optional[Spec]
    result: Optional[Spec]


class Protocol:
    """The methods of one protocol version (stable, or with ``unstable`` its unstable surface)."""

    def __init__(self, version: int, unstable: bool = False):
        self.version = version
        self.unstable = unstable
        schema = load_schema(version, unstable)
        defs = schema["$defs"]
        self.defs = defs
        requests: Dict[str, str] = {}
        results: Dict[str, str] = {}
        notifications: Dict[str, str] = {}
        sides: Dict[str, str] = {}
        for def_name, definition in defs.items():
            method = definition.get("x-method")
            if not isinstance(method, str):
                continue
            sides[method] = definition.get("x-side", "")
            if def_name.endswith("Notification"):
                notifications[method] = def_name
            elif def_name.endswith("Request"):
                requests[method] = def_name
            elif def_name.endswith("Response"):
                results[method] = def_name
        hand = _hand_written(version, unstable)
        self.methods: Dict[str, Method] = {}
        for method in list(requests) + list(notifications):
            side = sides.get(method)
            sender = {"agent": "client", "client": "agent"}.get(side or "")
            kind = "request" if method in requests else "notification"
            params_def = requests.get(method) or notifications.get(method)
            result_def = results.get(method) if kind == "request" else None
            params, result = hand.get(method, (None, None))
            if params is None:
                params = _generic(defs, params_def)
            if result is None and kind == "request":
                result = _generic(defs, result_def)
            self.methods[method] = Method(method, kind, sender, params_def, result_def, params, result)

    def get(self, method: str) -> Optional[Method]:
        return self.methods.get(method)

    def initialize_shapes(self) -> Tuple[Spec, Spec]:
        m = self.methods["initialize"]
        assert m.params is not None and m.result is not None
        return m.params, m.result


@cache
def protocol(version: int, unstable: bool = False) -> Protocol:
    return Protocol(version, unstable)


def check(spec: Optional[Spec], value: Any, path: Path) -> List[Issue]:
    """Check ``value`` (found at ``path``) against a shape; returns the issues, in document order."""
    out: List[Issue] = []
    if spec is not None:
        spec.check(value, path, out)
    return out
