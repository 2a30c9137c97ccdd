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
* :class:`SchemaChecker` — validation against the official schema with ``jsonschema``, with the
  failing branch of a discriminated union found and reported (jsonschema alone says only "is not
  valid under any of the given schemas").

Plus :func:`locate`, which finds the byte offset of a value inside a frame, so that problems can
name a column.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any, ClassVar, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union

Path = Tuple[Union[str, int], ...]

# ---------------------------------------------------------------------------------------------
# Paths and values in messages


class Issue(NamedTuple):
    """One problem found in a message: where (a path from the message root) and what."""

    path: Path
    message: str


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def render_path(path: Iterable[Union[str, int]]) -> str:
    """``("params", "update", "content", 0)`` -> ``params.update.content[0]``."""
    out: List[str] = []
    for part in path:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENT.match(part):
            out.append(("." if out else "") + part)
        else:
            out.append("[" + json.dumps(part, ensure_ascii=False) + "]")
    return "".join(out)


def describe(value: Any) -> str:
    """A value as the codec's messages name it (DESIGN §5 ``{value}``)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, (int, float)):
        text = repr(value) if isinstance(value, float) else str(value)
        return f"number {text}" if len(text) <= 32 else "number"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return f"string {text}" if len(text.encode("utf-8", "surrogatepass")) <= 32 else "string"
    return type(value).__name__


def _wrong(path: Path, what: str, value: Any) -> Issue:
    return Issue(path, f'expected "{render_path(path)}" to be {what}, found {describe(value)}')


def _missing(path: Path, what: str) -> Issue:
    return Issue(path, f'expected "{render_path(path)}" to be {what}, found none')


# ---------------------------------------------------------------------------------------------
# Shape descriptions


class Spec:
    """Any JSON value (the base of the shape descriptions)."""

    what = "any value"

    def check(self, value: Any, path: Path, out: List[Issue]) -> None:
        pass


ANY = Spec()


class Type(Spec):
    """A JSON type: ``string``, ``integer`` (with an optional range), ``boolean``, ``object``, ``array``."""

    # For isinstance; Any, not the classes, so that the check leaves the value comparable (range).
    _PY: ClassVar[Dict[str, Any]] = {
        "string": str,
        "integer": int,
        "boolean": bool,
        "object": dict,
        "array": list,
        "number": (int, float),
    }
    _WHAT: ClassVar[Dict[str, str]] = {
        "string": "a string",
        "integer": "an integer",
        "boolean": "a boolean",
        "object": "an object",
        "array": "an array",
        "number": "a number",
    }

    def __init__(
        self, name: str, *, nullable: bool = False, minimum: Optional[int] = None, maximum: Optional[int] = None
    ):
        self.name = name
        self.nullable = nullable
        self.minimum = minimum
        self.maximum = maximum
        what = self._WHAT[name]
        if minimum is not None and maximum is not None:
            what = f"{what} from {minimum} to {maximum}"
        elif minimum is not None:
            what = f"{what} >= {minimum}"
        self.what = what + (" or null" if nullable else "")
        self._py = self._PY[name]

    def check(self, value: Any, path: Path, out: List[Issue]) -> None:
        if value is None and self.nullable:
            return
        if not isinstance(value, self._py) or (isinstance(value, bool) and self.name != "boolean"):
            out.append(_wrong(path, self.what, value))
            return
        if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
            out.append(_wrong(path, self.what, value))


STR = Type("string")
STR_N = Type("string", nullable=True)
OBJ = Type("object")
OBJ_N = Type("object", nullable=True)
ARR = Type("array")
ARR_N = Type("array", nullable=True)
UINT = Type("integer", minimum=0)
UINT32_N = Type("integer", nullable=True, minimum=0, maximum=2**32 - 1)
PROTOCOL_VERSION = Type("integer", minimum=0, maximum=65535)


class Enum(Spec):
    """One of a closed set of strings (the v1 enumerations)."""

    def __init__(self, values: Sequence[str], *, nullable: bool = False):
        self.values = tuple(values)
        self.nullable = nullable
        self.what = "one of " + ", ".join(f'"{v}"' for v in self.values) + (" or null" if nullable else "")

    def check(self, value: Any, path: Path, out: List[Issue]) -> None:
        if value is None and self.nullable:
            return
        if not isinstance(value, str) or value not in self.values:
            out.append(_wrong(path, self.what, value))


class Base64(Spec):
    """RFC 4648 base64 text, standard alphabet, padded (as the state engine reads it)."""

    what = "base64 text"
    _RE = re.compile(r"[A-Za-z0-9+/]*={0,2}\Z")

    def check(self, value: Any, path: Path, out: List[Issue]) -> None:
        if not isinstance(value, str) or len(value) % 4 or not self._RE.match(value):
            out.append(_wrong(path, self.what, value))


class Arr(Spec):
    def __init__(self, item: Spec, *, nullable: bool = False, min_items: int = 0):
        self.item = item
        self.nullable = nullable
        self.min_items = min_items
        self.what = "an array" + (" or null" if nullable else "")

    def check(self, value: Any, path: Path, out: List[Issue]) -> None:
        if value is None and self.nullable:
            return
        if not isinstance(value, list):
            out.append(_wrong(path, self.what, value))
            return
        if len(value) < self.min_items:
            noun = "item" if self.min_items == 1 else "items"
            out.append(
                Issue(
                    path, f'expected "{render_path(path)}" to hold at least {self.min_items} {noun}, found {len(value)}'
                )
            )
        if self.item is not ANY:
            for index, item in enumerate(value):
                self.item.check(item, path + (index,), out)


def req(spec: Spec) -> Tuple[bool, Spec]:
    return (True, spec)


def opt(spec: Spec) -> Tuple[bool, Spec]:
    return (False, spec)


class Obj(Spec):
    """An object with known members (others are allowed: ACP ignores unknown members)."""

    def __init__(self, fields: Optional[Dict[str, Tuple[bool, Spec]]] = None, *, nullable: bool = False):
        self.fields = fields or {}
        self.nullable = nullable
        self.what = "an object" + (" or null" if nullable else "")

    def check(self, value: Any, path: Path, out: List[Issue]) -> None:
        if value is None and self.nullable:
            return
        if not isinstance(value, dict):
            out.append(_wrong(path, self.what, value))
            return
        self.check_members(value, path, out)

    def check_members(self, value: Dict[str, Any], path: Path, out: List[Issue]) -> None:
        for name, (required, spec) in self.fields.items():
            if name in value:
                spec.check(value[name], path + (name,), out)
            elif required:
                out.append(_missing(path + (name,), spec.what))


class Tagged(Spec):
    """An object tagged by ``key`` (``sessionUpdate``, ``type``, ``outcome``...).

    ``open`` ones (v2) accept unknown tags (checked with ``other`` when given); ``moved`` names
    tags that belong to the other protocol version, with a hint.
    """

    def __init__(
        self,
        key: str,
        branches: Dict[str, Obj],
        *,
        name: str,
        open: bool = False,
        other: Optional[Obj] = None,
        moved: Optional[Dict[str, str]] = None,
        nullable: bool = False,
    ):
        self.key = key
        self.branches = branches
        self.name = name
        self.open = open
        self.other = other
        self.moved = moved or {}
        self.nullable = nullable
        self.what = "an object" + (" or null" if nullable else "")

    def check(self, value: Any, path: Path, out: List[Issue]) -> None:
        if value is None and self.nullable:
            return
        if not isinstance(value, dict):
            out.append(_wrong(path, self.what, value))
            return
        tag_path = path + (self.key,)
        if self.key not in value:
            out.append(_missing(tag_path, "a string"))
            return
        tag = value[self.key]
        if not isinstance(tag, str):
            out.append(_wrong(tag_path, "a string", tag))
            return
        branch = self.branches.get(tag)
        if branch is not None:
            branch.check_members(value, path, out)
        elif tag in self.moved:
            out.append(
                Issue(
                    tag_path,
                    f'expected "{render_path(tag_path)}" to be {self.name}, found {describe(tag)} ({self.moved[tag]})',
                )
            )
        elif not self.open:
            names = ", ".join(self.branches)
            out.append(
                Issue(
                    tag_path, f'expected "{render_path(tag_path)}" to be {self.name} ({names}), found {describe(tag)}'
                )
            )
        elif self.other is not None:
            self.other.check_members(value, path, out)


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


def _schema_text(version: int, name: str) -> str:
    return (resources.files("acp_fast") / "schema" / f"v{version}" / name).read_text(encoding="utf-8")


@cache
def load_schema(version: int, unstable: bool = False) -> Dict[str, Any]:
    """The official schema document shipped in the package (``acp_fast/schema/v{N}/``)."""
    schema: Dict[str, Any] = json.loads(_schema_text(version, "schema.unstable.json" if unstable else "schema.json"))
    return schema


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


# ---------------------------------------------------------------------------------------------
# Validation against the official schema (jsonschema)


class SchemaUnavailable(RuntimeError):
    """``jsonschema`` is not installed."""


class SchemaChecker:
    """Validates params / results / errors against the definitions of the official schema."""

    def __init__(self, version: int, unstable: bool = False):
        try:
            from jsonschema import Draft202012Validator
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise SchemaUnavailable(
                "--schema needs the jsonschema package: pip install jsonschema (or pip install 'acp-fast[test]')"
            ) from exc
        self._validator_class = Draft202012Validator
        self.version = version
        self.unstable = unstable
        self._root = load_schema(version, unstable)
        self._validators: Dict[str, Any] = {}

    def _validator(self, def_name: str) -> Any:
        validator = self._validators.get(def_name)
        if validator is None:
            validator = self._validator_class({"$ref": f"#/$defs/{def_name}", "$defs": self._root["$defs"]})
            self._validators[def_name] = validator
        return validator

    def has(self, def_name: str) -> bool:
        return def_name in self._root["$defs"]

    def check(self, def_name: str, value: Any, path: Path) -> List[Issue]:
        """Issues of ``value`` (at ``path``) against ``$defs/def_name``: the first error, explained."""
        errors = list(self._validator(def_name).iter_errors(value))
        if not errors:
            return []
        from jsonschema.exceptions import relevance

        return [_explain(max(errors, key=relevance), path, def_name)]


def _is_tag_mismatch(error: Any) -> bool:
    """A union branch that failed because its tag (``const``) or its exclusion (``not``) did not match."""
    return error.validator in ("const", "not") and len(error.relative_path) <= 1


def _explain(error: Any, path: Path, def_name: str) -> Issue:
    """Descend into oneOf / anyOf failures, keeping the branch whose tag matched, and word the error."""
    from jsonschema.exceptions import relevance

    for _ in range(64):
        if error.validator not in ("oneOf", "anyOf") or not error.context:
            break
        branches: Dict[Any, List[Any]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        candidates = [
            subs
            for subs in branches.values()
            if not any(_is_tag_mismatch(s) for s in subs)
            and not all(s.validator == "type" and s.validator_value == "null" for s in subs)
        ]
        if len(candidates) == 1:
            error = max(candidates[0], key=relevance)
            continue
        # every branch wants the same member (a union whose tag is missing): say so
        required = [next((s for s in subs if s.validator == "required"), None) for subs in candidates]
        if candidates and all(r is not None for r in required):
            names = {tuple(r.validator_value) for r in required if r is not None}
            if len(names) == 1:
                error = required[0]
        break
    return _schema_issue(error, path, def_name)


def _schema_issue(error: Any, base: Path, def_name: str) -> Issue:
    path = base + tuple(error.absolute_path)
    where = render_path(path)
    value = error.instance
    keyword = error.validator
    if keyword == "required":
        missing = [name for name in error.validator_value if not (isinstance(value, dict) and name in value)]
        name = missing[0] if missing else "?"
        return Issue(path + (name,), f'expected "{render_path(path + (name,))}" (required by {def_name}), found none')
    if keyword == "type":
        types = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return Issue(path, f'expected "{where}" to be {" or ".join(types)}, found {describe(value)}')
    if keyword in ("oneOf", "anyOf"):
        consts = [s.get("const") for s in error.validator_value if isinstance(s, dict) and "const" in s]
        if consts and len(consts) == len(error.validator_value):
            names = ", ".join(f'"{c}"' for c in consts)
            return Issue(path, f'expected "{where}" to be one of {names}, found {describe(value)}')
        tags = _union_tags(error)
        if tags is not None:
            key, known = tags
            tag = value.get(key) if isinstance(value, dict) else None
            return Issue(
                path + (key,),
                f'expected "{render_path(path + (key,))}" to be one of {", ".join(known)}, found '
                + (describe(tag) if isinstance(value, dict) and key in value else "none"),
            )
        return Issue(path, f'expected "{where}" to match {def_name} ({keyword}), found {describe(value)}')
    if keyword in ("const", "enum"):
        allowed = [error.validator_value] if keyword == "const" else list(error.validator_value)
        return Issue(
            path,
            f'expected "{where}" to be one of {", ".join(json.dumps(a) for a in allowed)}, found {describe(value)}',
        )
    if keyword == "minItems":
        noun = "item" if error.validator_value == 1 else "items"
        return Issue(path, f'expected "{where}" to hold at least {error.validator_value} {noun}, found {len(value)}')
    if keyword in ("minimum", "maximum"):
        bound = ">=" if keyword == "minimum" else "<="
        return Issue(path, f'expected "{where}" to be {bound} {error.validator_value}, found {describe(value)}')
    message = error.message
    if len(message) > 160:
        message = message[:157] + "..."
    return Issue(path, f'"{where}": {message} ({keyword} in {def_name})')


def _union_tags(error: Any) -> Optional[Tuple[str, List[str]]]:
    """For a discriminated union whose tag matched no branch: (tag member, the known tags)."""
    key = None
    names: List[str] = []
    for branch in error.validator_value:
        if not isinstance(branch, dict):
            return None
        props = branch.get("properties") or {}
        tagged = [(k, v["const"]) for k, v in props.items() if isinstance(v, dict) and "const" in v]
        if len(tagged) != 1:
            if branch.get("not") is not None:  # the open "other" branch of a v2 union
                continue
            return None
        if key is None:
            key = tagged[0][0]
        elif key != tagged[0][0]:
            return None
        names.append(json.dumps(tagged[0][1]))
    if key is None:
        return None
    return key, names


# ---------------------------------------------------------------------------------------------
# Byte offsets of values inside a frame

_WS = re.compile(rb"[ \t\r\n]*")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_SCALAR = re.compile(rb"[^,}\] \t\r\n]*")
_SPECIAL = re.compile(rb'["{}\[\]]')


def _skip_ws(raw: bytes, i: int) -> int:
    """The offset of the first byte from ``i`` that is not whitespace."""
    m = _WS.match(raw, i)
    assert m is not None  # `[ \t\r\n]*` matches everywhere (the empty run)
    return m.end()


def skip_value(raw: bytes, i: int) -> int:
    """The offset just after the JSON value starting at ``i`` (``raw`` is valid JSON)."""
    c = raw[i : i + 1]
    if c == b'"':
        m = _STRING.match(raw, i)
        return m.end() if m else len(raw)
    if c in (b"{", b"["):
        depth = 0
        pos = i
        while True:
            m = _SPECIAL.search(raw, pos)
            if m is None:
                return len(raw)
            ch = raw[m.start() : m.start() + 1]
            if ch == b'"':
                s = _STRING.match(raw, m.start())
                pos = s.end() if s else len(raw)
            elif ch in (b"{", b"["):
                depth += 1
                pos = m.end()
            else:
                depth -= 1
                pos = m.end()
                if depth == 0:
                    return pos
    m = _SCALAR.match(raw, i)
    return m.end() if m else i


def members(raw: bytes, i: int) -> Iterable[Tuple[str, int, int]]:
    """(key, value start, value end) of each member of the object starting at ``i``."""
    j = _skip_ws(raw, i + 1)
    while j < len(raw) and raw[j : j + 1] != b"}":
        m = _STRING.match(raw, j)
        if m is None:
            return
        try:
            key = json.loads(m.group())
        except ValueError:
            return
        j = _skip_ws(raw, m.end()) + 1  # the ':'
        start = _skip_ws(raw, j)
        end = skip_value(raw, start)
        yield key, start, end
        j = _skip_ws(raw, end)
        if raw[j : j + 1] == b",":
            j = _skip_ws(raw, j + 1)


def locate(raw: bytes, path: Sequence[Union[str, int]]) -> int:
    """Byte offset of the value at ``path`` in the JSON text ``raw``.

    When a member on the way is missing, the offset of the object that lacks it (its ``{``); for
    a duplicated key, the last one (its value is the one that counts). Never raises: a path that
    cannot be followed stops at the deepest value found.
    """
    try:
        i = _skip_ws(raw, 0)
        for part in path:
            c = raw[i : i + 1]
            if isinstance(part, str) and c == b"{":
                found = None
                for key, start, _end in members(raw, i):
                    if key == part:
                        found = start
                if found is None:
                    return i
                i = found
            elif isinstance(part, int) and c == b"[":
                j = _skip_ws(raw, i + 1)
                index = 0
                while j < len(raw) and raw[j : j + 1] != b"]" and index < part:
                    j = _skip_ws(raw, skip_value(raw, j))
                    if raw[j : j + 1] == b",":
                        j = _skip_ws(raw, j + 1)
                    index += 1
                if index != part or raw[j : j + 1] == b"]":
                    return i
                i = j
            else:
                return i
        return i
    except (IndexError, TypeError, ValueError):  # pragma: no cover - defensive, raw is valid JSON
        return 0
