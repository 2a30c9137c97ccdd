"""The shape description language of ``acp-fast validate`` (private): :class:`Issue`, paths and
value descriptions, and the :class:`Spec` classes that the shapes of :mod:`acp_fast.cli._shapes`
are written in.
"""

from __future__ import annotations

import json
import re
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
