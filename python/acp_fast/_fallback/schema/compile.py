"""The compiler: a JSON Schema document (the official ACP ``schema.json``) into a table of
``Node`` objects, one per (sub)schema, that the checks walk.

Mirror of ``rust/schema/compile.rs``: the same keywords (anything else is an error), the same
annotations skipped, the same tags of unions. Differences on purpose: the document comes in as
the dict ``json.loads`` made (Rust: the text, read into a tape), and regular expressions are
Python's ``re`` (Rust: ``regex-lite``), both searching anywhere in the string; the shortcuts of
the Rust verdict (``flags``, ``forward``, ``prop_sigs``, ``required_mask``, ``Union::lits``) are
not here.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Pattern, Tuple, Union

__all__ = [
    "NULL",
    "BOOLEAN",
    "INTEGER",
    "NUMBER",
    "STRING",
    "ARRAY",
    "OBJECT",
    "ANY_TYPE",
    "TYPE_NAMES",
    "Lit",
    "Node",
    "UnionNode",
    "Tag",
    "Compiled",
    "compile_schema",
    "tag_of",
]

NULL = 1
BOOLEAN = 2
INTEGER = 4
NUMBER = 8
STRING = 16
ARRAY = 32
OBJECT = 64
ANY_TYPE = 127

#: The names of the type bits, in the order messages list them.
TYPE_NAMES: Tuple[Tuple[int, str], ...] = (
    (OBJECT, "object"),
    (ARRAY, "array"),
    (STRING, "string"),
    (INTEGER, "integer"),
    (NUMBER, "number"),
    (BOOLEAN, "boolean"),
    (NULL, "null"),
)

#: A ``const`` / ``enum`` value (Rust: ``Lit``): None, bool, int, float or str.
Lit = Union[None, bool, int, float, str]

_ANNOTATIONS = frozenset(
    (
        "$schema",
        "$id",
        "$comment",
        "title",
        "description",
        "default",
        "examples",
        "format",
        "contentEncoding",
        "contentMediaType",
        "discriminator",
        "deprecated",
        "readOnly",
        "writeOnly",
    )
)


class Tag:
    """A union of objects told apart by one member holding a string constant."""

    __slots__ = ("key", "tagged", "untagged")

    def __init__(self) -> None:
        self.key = ""
        self.tagged: List[Tuple[str, int]] = []
        self.untagged: List[int] = []


class UnionNode:
    """The branches of an ``anyOf`` / ``oneOf`` (Rust: ``Union``)."""

    __slots__ = ("branches", "tag")

    def __init__(self, branches: List[int]) -> None:
        self.branches = branches
        self.tag: Optional[Tag] = None


class Node:
    """One (sub)schema; the fields of ``rust/schema/compile.rs``'s ``Node``."""

    __slots__ = (
        "types",
        "never",
        "trivial",
        "lits",
        "minimum",
        "maximum",
        "min_items",
        "min_length",
        "max_length",
        "pattern",
        "properties",
        "required",
        "excluded_keys",
        "additional",
        "items",
        "all_of",
        "any_of",
        "one_of",
        "not_",
        "reference",
        "def_",
        "method",
        "open_prefix",
    )

    def __init__(self) -> None:
        self.types = ANY_TYPE
        self.never = False
        self.trivial = False
        self.lits: List[List[Lit]] = []
        self.minimum: Optional[float] = None
        self.maximum: Optional[float] = None
        self.min_items: Optional[int] = None
        self.min_length: Optional[int] = None
        self.max_length: Optional[int] = None
        self.pattern: Optional[int] = None
        self.properties: Dict[str, int] = {}
        self.required: List[str] = []
        #: ``propertyNames: {"not": {"const" | "enum": ...}}``: the member names not allowed.
        self.excluded_keys: List[str] = []
        self.additional: Optional[int] = None
        self.items: Optional[int] = None
        self.all_of: List[int] = []
        self.any_of: Optional[UnionNode] = None
        self.one_of: Optional[UnionNode] = None
        self.not_: Optional[int] = None
        self.reference: Optional[int] = None
        self.def_: Optional[int] = None
        self.method: Optional[str] = None
        self.open_prefix = False

    def is_trivial_shape(self) -> bool:
        """Asserts nothing by its own keywords."""
        return (
            not self.never
            and self.types == ANY_TYPE
            and not self.lits
            and self.minimum is None
            and self.maximum is None
            and self.min_items is None
            and self.min_length is None
            and self.max_length is None
            and self.pattern is None
            and not self.properties
            and not self.required
            and not self.excluded_keys
            and self.additional is None
            and self.items is None
            and not self.all_of
            and self.any_of is None
            and self.one_of is None
            and self.not_ is None
            and self.reference is None
        )


class Compiled:
    """A compiled schema document."""

    def __init__(self) -> None:
        self.nodes: List[Node] = []
        self.def_names: List[str] = []
        self.defs: Dict[str, int] = {}
        self.patterns: List[Tuple[str, Pattern[str]]] = []

    def push(self, node: Node, label: Optional[str] = None) -> int:
        """Add a node made by hand (the envelopes), labelled ``label`` in problems."""
        node.trivial = node.is_trivial_shape()
        if label is not None:
            node.def_ = len(self.def_names)
            self.def_names.append(label)
        self.nodes.append(node)
        return len(self.nodes) - 1

    def push_union(self, branches: List[int]) -> int:
        """Add a union of ``branches`` (tagged when they are)."""
        node = Node()
        node.any_of = UnionNode(branches)
        node.any_of.tag = _union_tag(self, branches)
        return self.push(node)


def _lit(value: Any) -> Lit:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError("const / enum values must be scalars")


def _number(value: Any, keyword: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{keyword} must be a number")
    return value


def _types(value: Any) -> int:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list):
        raise ValueError("type must be a string or an array")
    bits = 0
    for name in names:
        if name == "number":  # JSON Schema's "number" includes the integers
            bits |= NUMBER | INTEGER
            continue
        found = [bit for bit, known in TYPE_NAMES if known == name]
        if not found:
            raise ValueError(f"unknown type {name!r}")
        bits |= found[0]
    return bits


class _Compiler:
    def __init__(self) -> None:
        self.out = Compiled()

    def add(self, schema: Any) -> int:
        node = self.node(schema)
        self.out.nodes.append(node)
        return len(self.out.nodes) - 1

    def node(self, schema: Any) -> Node:
        n = Node()
        if isinstance(schema, bool):
            n.never = not schema
            return n
        if not isinstance(schema, dict):
            raise ValueError("a schema must be an object or a boolean")
        for key, v in schema.items():
            if key == "type":
                n.types = _types(v)
            elif key == "const":
                n.lits.append([_lit(v)])
            elif key == "enum":
                n.lits.append([_lit(x) for x in v])
            elif key == "minimum":
                n.minimum = _number(v, key)
            elif key == "maximum":
                n.maximum = _number(v, key)
            elif key == "minItems":
                n.min_items = int(_number(v, key))
            elif key == "minLength":
                n.min_length = int(_number(v, key))
            elif key == "maxLength":
                n.max_length = int(_number(v, key))
            elif key == "propertyNames":
                n.excluded_keys = _excluded_keys(v)
            elif key == "pattern":
                n.pattern = len(self.out.patterns)
                self.out.patterns.append((v, re.compile(v)))
            elif key == "properties":
                for name, sub in v.items():
                    n.properties[name] = self.add(sub)
            elif key == "required":
                n.required = list(v)
            elif key == "additionalProperties":
                index = self.add(v)
                if not self.out.nodes[index].is_trivial_shape():
                    n.additional = index
            elif key == "unevaluatedProperties":
                if v is not True:
                    raise ValueError("unevaluatedProperties other than true is not supported")
            elif key == "items":
                n.items = self.add(v)
            elif key == "allOf":
                n.all_of = [self.add(s) for s in v]
            elif key == "anyOf":
                n.any_of = UnionNode([self.add(s) for s in v])
            elif key == "oneOf":
                n.one_of = UnionNode([self.add(s) for s in v])
            elif key == "not":
                n.not_ = self.add(v)
            elif key == "$ref":
                if not v.startswith("#/$defs/"):
                    raise ValueError(f"$ref {v!r}: only #/$defs/... is supported")
                target = self.out.defs.get(v[len("#/$defs/") :])
                if target is None:
                    raise ValueError(f"$ref {v!r}: no such definition")
                n.reference = target
            elif key == "$defs":
                pass
            elif key == "x-method":
                n.method = v
            elif key.startswith("x-") or key in _ANNOTATIONS:
                pass
            else:
                raise ValueError(f"unsupported schema keyword {key!r}")
        return n


def compile_schema(document: Dict[str, Any]) -> Compiled:
    """Compile a schema document (its ``$defs`` become named nodes, reachable by ``$ref``)."""
    c = _Compiler()
    defs = document.get("$defs") or {}
    for name in defs:
        c.out.defs[name] = len(c.out.nodes)
        c.out.nodes.append(Node())
        c.out.def_names.append(name)
    for index, (name, body) in enumerate(defs.items()):
        node = c.node(body)
        node.def_ = index
        c.out.nodes[c.out.defs[name]] = node
    _finish(c.out)
    return c.out


def _finish(c: Compiled) -> None:
    for node in c.nodes:
        node.trivial = node.is_trivial_shape()
    for node in c.nodes:
        for u in (node.any_of, node.one_of):
            if u is not None:
                u.tag = _union_tag(c, u.branches)


def _union_tag(c: Compiled, branches: List[int]) -> Optional[Tag]:
    tag = Tag()
    key: Optional[str] = None
    for index, branch in enumerate(branches):
        found = tag_of(c, branch, 0)
        if found is None:
            tag.untagged.append(index)
            continue
        if key is None:
            key = found[0]
        elif key != found[0]:
            return None
        tag.tagged.append((found[1], index))
    if key is None or len(tag.tagged) < 2:
        return None
    tag.key = key
    return tag


def tag_of(c: Compiled, index: int, depth: int) -> Optional[Tuple[str, str]]:
    """``(key, value)`` when every object valid against the node holds the string ``value`` in
    its required member ``key`` (found in the node, or through ``$ref`` / ``allOf``)."""
    n = c.nodes[index]
    if depth > 8 or not n.types & OBJECT:
        return None
    for key, prop in n.properties.items():
        if key not in n.required:
            continue
        lits = c.nodes[prop].lits
        if len(lits) == 1 and len(lits[0]) == 1 and isinstance(lits[0][0], str):
            return key, lits[0][0]
    if n.reference is not None:
        found = tag_of(c, n.reference, depth + 1)
        if found is not None:
            return found
    for a in n.all_of:
        found = tag_of(c, a, depth + 1)
        if found is not None:
            return found
    return None


def _excluded_keys(schema: Any) -> List[str]:
    """``propertyNames``, which the ACP schemas only use to exclude names: ``{"not": {"const": k}}``
    or ``{"not": {"enum": [k, ...]}}`` (string constants); anything else is an error."""
    unsupported = 'propertyNames other than {"not": {"const" | "enum": names}} is not supported'
    not_ = schema.get("not") if isinstance(schema, dict) and len(schema) == 1 else None
    if not isinstance(not_, dict) or len(not_) != 1:
        raise ValueError(unsupported)
    if "const" in not_:
        names = [not_["const"]]
    elif isinstance(not_.get("enum"), list):
        names = list(not_["enum"])
    else:
        raise ValueError(unsupported)
    if not all(isinstance(name, str) for name in names):
        raise ValueError(unsupported)
    return names
