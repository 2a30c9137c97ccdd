"""Strict validation against the official ACP schema (issue 17), pure-Python backend.

Mirror of ``rust/schema/mod.rs`` (its top comment says which definition applies to a message;
the stream check of ``strict_schema`` is ``stream.py``, as ``rust/schema/stream.rs``):
``Schema`` with its envelope nodes, ``validate_schema`` and ``SchemaValidator`` (Rust: the
binding ``rust/python/schema.rs`` over ``Schema::validate`` and ``Conversation``). Differences on
purpose: the verdict on a whole message comes from the ``jsonschema-rs`` package when it is
installed, else from ``jsonschema`` (the extra ``acp-fast[schema]``), given the same envelope as
a JSON Schema; the walks of ``check.py`` / ``explain.py`` / ``rules.py`` then say why, and find
the custom values of the protocol rules. There is no tape (``rust/schema/tape.rs``): messages are
parsed into dicts and lists.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from ...problems import SchemaProblem
from ..encoder import dumps
from ..scanner import loads
from . import rules
from .check import Check
from .compile import ANY_TYPE, OBJECT, STRING, Node, compile_schema
from .explain import PROBLEM_LIMIT, Explain, Found, describe, problem, quote

__all__ = [
    "DRAFTS",
    "MAX_PROBLEMS",
    "PROBLEM_LIMIT",
    "Found",
    "Schema",
    "draft_index",
    "schema",
    "validate_schema",
    "SchemaValidator",
    "engine_name",
]

#: The v2 drafts whose schemas the package holds (``draft=``), newest first, each with the folder
#: of ``acp_fast/schema/`` its files are in (``make schemas`` writes them; v1 has one, ``v1``).
#: Rust: ``schema::DRAFTS``.
DRAFTS = (("latest", "v2"), ("alpha.5", "v2-alpha.5"))


def unknown_draft(found: str) -> str:
    """The message for a ``draft`` that is not one of ``DRAFTS``, ``found`` its repr."""
    names = " or ".join(f"'{name}'" for name, _ in DRAFTS)
    return f"expected draft to be {names}, found {found}"


def draft_index(draft: Any) -> int:
    """The index in ``DRAFTS`` of a ``draft`` argument (None: 0, the newest). Rust: the binding's
    ``Draft``."""
    if draft is None:
        return 0
    for index, (name, _) in enumerate(DRAFTS):
        if isinstance(draft, str) and draft == name:
            return index
    raise ValueError(unknown_draft(repr(draft)))


#: ``loads`` of the fallback (its signature is a comment, for the native one): typed here.
_loads: Callable[[bytes], Any] = loads

PathList = List[Union[str, int]]

#: The most errors the strict check of a stream (``stream.py``) collects in one message (one
#: entry of a batch); at the next error the check of that message stops (Rust: ``MAX_PROBLEMS``,
#: the reasons there). ``validate_schema`` and ``SchemaValidator`` list every problem.
MAX_PROBLEMS = 100

#: The rule of the marker that ends the problems of a message whose check stopped at the limit.


_EXTRA = "pip install jsonschema-rs (or pip install 'acp-fast[schema]', or jsonschema)"


def _engine() -> Tuple[str, Callable[[Dict[str, Any]], Callable[[Any], bool]]]:
    """The package that gives the verdicts: jsonschema-rs when installed, else jsonschema."""
    try:
        import jsonschema_rs

        def rs(document: Dict[str, Any]) -> Callable[[Any], bool]:
            validator = jsonschema_rs.Draft202012Validator(document)

            def is_valid(value: Any) -> bool:
                return bool(validator.is_valid(value))

            return is_valid

        return "jsonschema-rs", rs
    except ImportError:
        pass
    try:
        from jsonschema import Draft202012Validator
    except ImportError as exc:
        raise ImportError(
            f"strict schema validation with the pure-Python backend needs jsonschema-rs or jsonschema: {_EXTRA}"
        ) from exc

    def py(document: Dict[str, Any]) -> Callable[[Any], bool]:
        validator = Draft202012Validator(document)

        def is_valid(value: Any) -> bool:
            return bool(validator.is_valid(value))

        return is_valid

    return "jsonschema", py


@cache
def engine_name() -> str:
    """``"jsonschema-rs"`` or ``"jsonschema"`` (ImportError when neither is installed)."""
    return _engine()[0]


def accepts_empty(compiled: Any, index: int) -> bool:
    """Does the definition accept ``{}`` (then ``params`` may be left out)?"""
    return Check(compiled).valid(index, {})


class Schema:
    """A compiled protocol schema: the definitions, and an envelope node per method."""

    def __init__(self, document: Dict[str, Any], version: int) -> None:
        self.version = version
        self._document = document
        c = compile_schema(document)
        rules.mark(c, version)
        self.compiled = c
        requests: List[Tuple[str, int]] = []
        notifications: List[Tuple[str, int]] = []
        results: Dict[str, int] = {}
        for index, name in enumerate(list(c.def_names)):
            method = c.nodes[index].method
            if method is None:
                continue
            if name.endswith("Notification"):
                notifications.append((method, index))
            elif name.endswith("Request"):
                requests.append((method, index))
            elif name.endswith("Response"):
                results[method] = index
        #: The JSON Schema of each envelope node, for the engine.
        self._documents: Dict[int, Dict[str, Any]] = {}
        self._validators: Dict[int, Callable[[Any], bool]] = {}
        jsonrpc = self._leaf(STRING, ["2.0"])
        request_id = self._leaf(ANY_TYPE, None, reference=c.defs.get("RequestId"))
        method_node = self._leaf(STRING, None)
        never = Node()
        never.never = True
        never_id = c.push(never)
        self._json: Dict[int, Any] = {jsonrpc: {"type": "string", "const": "2.0"}, never_id: False}
        self._json[request_id] = self._ref("RequestId")
        self._json[method_node] = {"type": "string"}
        for index in range(len(c.def_names)):
            self._json[index] = self._ref(c.def_names[index])
        self.methods: Dict[str, Tuple[int, Optional[int]]] = {}
        for request, listed in ((True, requests), (False, notifications)):
            for name, params in listed:
                kind = "request" if request else "notification"
                required = ["jsonrpc", "id", "method"] if request else ["jsonrpc", "method"]
                if not accepts_empty(self.compiled, params):
                    required.append("params")
                props = {
                    "jsonrpc": jsonrpc,
                    "id": request_id if request else never_id,
                    "method": method_node,
                    "params": params,
                }
                call = self._envelope(f"the {kind} {name}", required, props)
                response = None
                if request and name in results:
                    response = self._envelope(
                        f"the response to {name}",
                        ["jsonrpc", "id", "result"],
                        {"jsonrpc": jsonrpc, "id": request_id, "result": results[name], "error": never_id},
                    )
                self.methods[name] = (call, response)
        self.ext_request = self._envelope(
            "an extension request",
            ["jsonrpc", "id", "method"],
            {"jsonrpc": jsonrpc, "id": request_id, "method": method_node},
        )
        self.ext_notification = self._envelope(
            "an extension notification", ["jsonrpc", "method"], {"jsonrpc": jsonrpc, "method": method_node}
        )
        self.ext_response = self._envelope(
            "a response", ["jsonrpc", "id", "result"], {"jsonrpc": jsonrpc, "id": request_id, "error": never_id}
        )
        union = c.push_union(sorted(results.values()))
        self._json[union] = {"anyOf": [self._json[i] for i in sorted(results.values())]}
        self.any_response = self._envelope(
            "a response",
            ["jsonrpc", "id", "result"],
            {"jsonrpc": jsonrpc, "id": request_id, "result": union, "error": never_id},
        )
        error_def = c.defs.get("Error", never_id)
        self.error_response = self._envelope(
            "an error response",
            ["jsonrpc", "id", "error"],
            {"jsonrpc": jsonrpc, "id": request_id, "error": error_def, "result": never_id},
        )

    # -- building the envelopes (nodes for the walks, JSON Schema for the engine) -------------

    @staticmethod
    def _ref(name: str) -> Dict[str, Any]:
        return {"$ref": f"#/$defs/{name}"}

    def _leaf(self, types: int, const: Optional[List[Any]], reference: Optional[int] = None) -> int:
        node = Node()
        node.types = types
        if const is not None:
            node.lits.append(list(const))
        node.reference = reference
        return self.compiled.push(node)

    def _envelope(self, label: str, required: List[str], props: Dict[str, int]) -> int:
        node = Node()
        node.types = OBJECT
        node.required = list(required)
        node.properties = dict(props)
        index = self.compiled.push(node, label)
        self._documents[index] = {
            "type": "object",
            "required": list(required),
            "properties": {key: self._json[value] for key, value in props.items()},
            "$defs": self._document.get("$defs", {}),
        }
        return index

    def is_valid(self, envelope: int, value: Any) -> bool:
        """The engine's verdict on a message against an envelope."""
        validator = self._validators.get(envelope)
        if validator is None:
            validator = _engine()[1](self._documents[envelope])
            self._validators[envelope] = validator
        return validator(value)

    # -- checking ------------------------------------------------------------------------------

    def batches(self) -> bool:
        """Does this protocol version have JSON-RPC batches? v1 does (JSON-RPC 2.0's); v2 removed
        them (its schema has none)."""
        return self.version < 2

    def has_method(self, method: str) -> bool:
        return method in self.methods

    def validate(self, frame: Any, method: Optional[str]) -> List[SchemaProblem]:
        """The problems of one parsed frame (``method``: for a response, the request's method)."""
        out = Found(None, [])
        self.frame(frame, method, out)
        return out.list

    def frame(self, frame: Any, method: Optional[str], out: Found) -> None:
        if isinstance(frame, list) and self.batches():
            if not frame:
                out.push(problem([], "expected the message to hold at least 1 item (a batch), found 0"))
            for i, entry in enumerate(frame):
                self.message(entry, method, [i], out)
            return
        self.message(frame, method, [], out)

    def message(self, msg: Any, method: Optional[str], path: PathList, out: Found) -> None:
        """The problems of one message (``path``: where it is in the frame)."""
        if not isinstance(msg, dict):
            batch = (
                " (batches exist in protocol v1 only)"
                if not self.batches() and isinstance(msg, list) and not path
                else ""
            )
            out.push(problem(path, f"expected {quote(path)} to be an object{batch}, found {describe(msg)}"))
            return
        node = self._select(msg, method, path, out)
        if node is None:
            return
        check = Check(self.compiled)
        valid = self.is_valid(node, msg)
        if not valid:
            Explain(check, out).node(node, msg, path, "the message")
        if self.version >= 2 and not out.stopped():
            rules.custom_values(check, node, msg, path, out)

    def _select(self, msg: Dict[str, Any], hint: Optional[str], path: PathList, out: Found) -> Optional[int]:
        if "method" in msg:
            ext = self.ext_request if "id" in msg else self.ext_notification
            name = msg["method"]
            if not isinstance(name, str):
                return ext
            known = self.methods.get(name)
            if known is not None:
                return known[0]
            if not name.startswith("_"):
                out.push(
                    problem(
                        path + ["method"],
                        f"expected {quote(path + ['method'])} to be a protocol v{self.version} method or an extension "
                        f'method starting with "_", found {describe(name)}',
                    )
                )
            return ext
        if "result" in msg:
            if hint is not None and hint.startswith("_"):
                return self.ext_response
            known = self.methods.get(hint) if hint is not None else None
            return known[1] if known is not None and known[1] is not None else self.any_response
        if "error" in msg:
            return self.error_response
        out.push(
            problem(
                path,
                f'expected {quote(path)} to be a request, a notification or a response ("method", "result" or '
                '"error"), found none of them',
            )
        )
        return None


@cache
def schema(version: int, unstable: bool, draft: int = 0) -> Schema:
    """The compiled schema of protocol v1/v2, stable or unstable, v2 as ``DRAFTS[draft]`` (read
    from ``acp_fast/schema/`` on first use)."""
    folder = "v1" if version == 1 else DRAFTS[draft][1]
    name = "schema.unstable.json" if unstable else "schema.json"
    text = (resources.files("acp_fast") / "schema" / folder / name).read_text(encoding="utf-8")
    return Schema(json.loads(text), version)


def _version(protocol_version: Any) -> int:
    if isinstance(protocol_version, bool) or protocol_version not in (1, 2):
        raise ValueError(f"expected protocol_version to be 1 or 2, found {protocol_version!r}")
    return int(protocol_version)


def _parse(message: Any) -> Any:
    """The frame as dicts and lists: bytes-like and str parsed, a ``Message`` by its bytes,
    anything else as ``acp_fast.dumps`` writes it."""
    raw = getattr(message, "raw", None) if not isinstance(message, (bytes, bytearray, memoryview, str)) else None
    if raw is not None and type(message).__name__ == "Message":
        message = raw
    if isinstance(message, (bytes, bytearray, memoryview, str)):
        data = message.encode("utf-8", "surrogatepass") if isinstance(message, str) else bytes(message)
        if data.endswith(b"\n"):
            data = data[:-1]
            if data.endswith(b"\r"):
                data = data[:-1]
        return _loads(data)
    return _loads(dumps(message))


def validate_schema(
    message: Any,
    *,
    protocol_version: Any = None,
    unstable: bool = False,
    method: Optional[str] = None,
    draft: Optional[str] = None,
) -> List[SchemaProblem]:
    """``acp_fast.validate_schema``: the problems of one message or frame."""
    engine_name()
    version = 1 if protocol_version is None else _version(protocol_version)
    return schema(version, bool(unstable), draft_index(draft)).validate(_parse(message), method)


class SchemaValidator:
    """``acp_fast.SchemaValidator``: a conversation validated message by message."""

    def __init__(self, *, protocol_version: Any = None, unstable: bool = False, draft: Optional[str] = None) -> None:
        engine_name()
        self._version = 1 if protocol_version is None else _version(protocol_version)
        self._unstable = bool(unstable)
        self._draft = draft_index(draft)
        self._schema = schema(self._version, self._unstable, self._draft)
        self._conversation = rules.Conversation()

    @property
    def protocol_version(self) -> int:
        return self._version

    @property
    def unstable(self) -> bool:
        return self._unstable

    @property
    def draft(self) -> str:
        """The v2 draft checked against (under protocol version 2)."""
        return DRAFTS[self._draft][0]

    def validate(self, message: Any, *, sender: Optional[str] = None) -> List[SchemaProblem]:
        """The problems of the next message; ``sender`` names the side it comes from."""
        return self._conversation.check(self._schema, _parse(message), sender)

    def _sizes(self) -> Tuple[int, int, int]:
        """Test-only: (pending request ids, tool call ids remembered, pending requests forgotten)."""
        return self._conversation.sizes()

    def _set_limits(self, pending: int, tool_calls: int) -> None:
        """Test-only: start the conversation afresh with these limits (each at least 1) instead of
        ``MAX_PENDING_IDS`` and ``MAX_TOOL_CALL_IDS``."""
        if pending < 1 or tool_calls < 1:
            raise ValueError("expected limits of at least 1")
        self._conversation = rules.Conversation(pending, tool_calls)
